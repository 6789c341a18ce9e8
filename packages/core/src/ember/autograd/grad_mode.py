"""Grad mode: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``.

Autograd's modes are per thread, as in PyTorch: ``GRAD`` is a ``threading.local`` whose class
attributes are the values every thread starts with (grad on, inference and anomaly off), so
one thread's ``no_grad`` or ``backward()`` never changes what another thread records.
Every recorded op reads ``GRAD.enabled``; a ``threading.local`` attribute was the cheapest
correct per-thread read measured (benchmarks/RESULTS.md, "Thread-local grad mode"), and ops
test ``requires_grad`` first so that the no-grad path mostly skips it.
"""

from __future__ import annotations

import functools
import inspect
import threading

from .._forksafe import reinit_in_child

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "set_multithreading_enabled",
           "enforce_grad_layout_policy"]


class _GradState(threading.local):
    """Autograd's per-thread modes; the class attributes are a new thread's values."""

    enabled = True  # grad mode
    inference = False  # inference mode
    anomaly = False  # anomaly detection (autograd.detect_anomaly)
    anomaly_check_nan = True
    multithreading = True  # set_multithreading_enabled (recorded; see there)
    grad_layout_enforced = True  # enforce_grad_layout_policy (recorded; see there)


GRAD = _GradState()

#: how many threads have anomaly mode on (``[n]``): recording reads it before the thread's
#: own flag, so that the common case, no thread at all, costs no thread-local read per op
ANOMALY_THREADS = [0]
_ANOMALY_LOCK = reinit_in_child(threading.Lock())


def set_anomaly(mode: bool, check_nan: bool) -> None:
    """Turn anomaly detection on or off in this thread (``autograd.set_detect_anomaly``)."""
    mode = bool(mode)
    with _ANOMALY_LOCK:
        ANOMALY_THREADS[0] += mode - GRAD.anomaly
        GRAD.anomaly = mode
        GRAD.anomaly_check_nan = bool(check_nan)


def is_grad_enabled() -> bool:
    return GRAD.enabled


def is_inference_mode_enabled() -> bool:
    return GRAD.inference


class _DecoratorContextManager:
    """A context manager that also decorates functions (and generator functions)."""

    def __call__(self, func):
        if inspect.isclass(func):
            import warnings

            warnings.warn("Decorating classes is deprecated and will be disabled in future "
                          "versions. You should only decorate functions or methods. To "
                          "preserve the current behavior of class decoration, you can directly "
                          "decorate the `__init__` method and nothing else.", FutureWarning,
                          stacklevel=2)
            cls = func
            func = lambda *args, **kwargs: cls(*args, **kwargs)  # (as PyTorch wraps it)
        if inspect.isgeneratorfunction(func):
            @functools.wraps(func)
            def gen_wrapper(*args, **kwargs):
                gen = func(*args, **kwargs)
                try:  # the wrapped generator's end (StopIteration) ends this one too
                    with self.clone():
                        response = gen.send(None)
                    while True:
                        try:
                            request = yield response
                        except GeneratorExit:
                            gen.close()
                            raise
                        except BaseException as exc:
                            with self.clone():
                                response = gen.throw(exc)
                        else:
                            with self.clone():
                                response = gen.send(request)
                except StopIteration as stop:
                    return stop.value
            return gen_wrapper

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)
        return wrapper

    def clone(self):
        return self.__class__()


#: forward AD's ``enter`` while a dual level is active (``forward_ad``): a block that turns
#: grad mode off calls ``enter()`` and, on leaving, the function it returned, so that ops
#: inside it still compute their outputs' tangents, as PyTorch's forward AD does under
#: ``no_grad``; None outside forward AD (one list read per block)
FW_NOGRAD: list = [None]


class _GradModeBlock(_DecoratorContextManager):
    """Grad mode ``_mode`` inside the block (or the decorated function)."""

    _mode = True

    def __new__(cls, orig_func=None):
        # PyTorch's ``_NoParamDecoratorContextManager``: ``@no_grad`` without parentheses
        # decorates the function it is given
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)

    def __init__(self, orig_func=None):
        self.prev = self._mode
        self._fw = None

    def __enter__(self):
        self.prev = GRAD.enabled
        GRAD.enabled = self._mode
        fw = FW_NOGRAD[0]
        if fw is not None and not self._mode:
            self._fw = fw()

    def __exit__(self, *exc):
        GRAD.enabled = self.prev
        leave, self._fw = self._fw, None
        if leave is not None:
            leave()
        return False


class no_grad(_GradModeBlock):
    """Disable gradient recording inside the block (or the decorated function)."""

    _mode = False


class enable_grad(_GradModeBlock):
    """Enable gradient recording inside the block, even within ``no_grad``."""

    _mode = True


def _check_bool(value, name: str) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name}(): argument 'enabled' (position 1) must be bool, not "
                        f"{type(value).__name__}")


class _ThreadFlag(_DecoratorContextManager):
    """A per-thread flag, ``GRAD.<_flag>``, set to ``mode`` the moment the object is made (so
    a plain call sets it) and restored on leaving its block; ``_api`` names the function in
    PyTorch's type error. As a decorator, the mode is set when the object is made and the
    decorated function's calls run with it (subclasses may restore it at decoration)."""

    _flag = ""
    _api = ""

    def __init__(self, mode: bool) -> None:
        _check_bool(mode, self._api)
        self.prev = getattr(GRAD, self._flag)
        self.mode = mode
        setattr(GRAD, self._flag, mode)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> bool:
        setattr(GRAD, self._flag, self.prev)
        return False

    def clone(self):
        return self.__class__(self.mode)


class set_grad_enabled(_ThreadFlag):
    """Set grad mode on or off; works as a function call, a context manager or a decorator."""

    _flag = "enabled"
    _api = "set_grad_enabled"

    _fw = None

    def __init__(self, mode: bool) -> None:
        super().__init__(mode)

    def __call__(self, func):
        GRAD.enabled = self.prev  # used as a decorator: the mode applies inside func only
        return super().__call__(func)

    def __enter__(self):
        GRAD.enabled = self.mode
        fw = FW_NOGRAD[0]
        if fw is not None and not self.mode:
            self._fw = fw()

    def __exit__(self, *exc) -> bool:
        GRAD.enabled = self.prev
        leave, self._fw = self._fw, None
        if leave is not None:
            leave()
        return False


class inference_mode(_DecoratorContextManager):
    """Like ``no_grad``; tensors made inside are inference tensors in PyTorch (here: plain)."""

    def __new__(cls, mode=True):
        # as in PyTorch, ``@inference_mode`` without parentheses decorates the function
        if mode is None or isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)
        self.prev = (True, False)

    def __enter__(self):
        self.prev = (GRAD.enabled, GRAD.inference)
        # PyTorch's InferenceMode(enabled): grad mode is ``not enabled`` either way
        GRAD.enabled = not self.mode
        GRAD.inference = self.mode

    def __exit__(self, *exc):
        GRAD.enabled, GRAD.inference = self.prev
        return False

    def clone(self):
        return self.__class__(self.mode)


class set_multithreading_enabled(_ThreadFlag):
    """Enable or disable multithreaded backward in this thread (a function call, a context
    manager or a decorator), like ``torch.autograd.set_multithreading_enabled``.

    PyTorch's engine runs the backward of accelerator devices on per-device worker threads
    unless this is off. Ember's engine always runs a backward on the calling thread, so the
    flag is recorded (and restored on exit, per thread) but changes nothing: with it off,
    Ember does what PyTorch does. As in PyTorch, the mode is set when the object is made
    and a decorated function's calls run with it.
    """

    _flag = "multithreading"
    _api = "set_multithreading_enabled"


class enforce_grad_layout_policy(_ThreadFlag):
    """Whether accumulated gradients must follow the gradient layout contract, in this
    thread (a function call, a context manager or a decorator), like
    ``torch.autograd.enforce_grad_layout_policy``.

    In PyTorch the contract makes a new ``.grad`` take its parameter's strides, and turning
    it off lets the engine adopt an incoming gradient of another layout without a copy (and
    silences the warning about it). Ember's engine gives every new ``.grad`` the row-major
    contiguous layout whatever this says, so the flag is recorded (and restored on exit, per
    thread) but changes no gradient.
    """

    _flag = "grad_layout_enforced"
    _api = "set_grad_layout_enforcement_enabled"

    def __init__(self, enable: bool = True) -> None:
        super().__init__(enable)

    def __call__(self, orig_func):
        GRAD.grad_layout_enforced = self.prev  # used as a decorator: only inside the calls
        return super().__call__(orig_func)
