"""``autocast``: ops run in lower precision where that is safe, by the op registry's policy.

Inside ``with ember.autocast("cpu", dtype=ember.bfloat16):`` each op call of this thread is
looked up in the registry (``OpInfo.autocast``, from ``ops/autocast_policy.py``: PyTorch's lists
per device type) and its floating tensor arguments on that device type are cast first:
matmul-like ops to the autocast dtype, range-sensitive ops (losses, reductions, linalg) to
float32, multi-input ops like ``cat`` to their widest input. Casts are ordinary differentiable
ops, so gradients reach the parameters in the parameters' dtype; the casts of leaf tensors
that require grad (the weights) are cached until the outermost autocast region exits.
Float64 tensors are never cast. Nestable, usable as a decorator, and per thread: other
threads never see this thread's autocast. The calls an op makes inside are not cast again.
"""

from __future__ import annotations

import collections.abc
import functools
import threading
import warnings

from .._naming import bare as _bare
from ..overrides import TorchFunctionMode

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available"]

#: PyTorch's autocast device types and their default lower-precision dtypes (the other
#: registered Ember devices, the NumPy-backed test devices, default to float16)
_DEVICE_DEFAULTS = {"cpu": "bfloat16", "cuda": "float16", "xpu": "float16", "mps": "float16",
                    "hpu": "bfloat16", "ipu": "float16", "xla": "bfloat16", "mtia": "float16",
                    "maia": "bfloat16", "privateuseone": "float16"}


class _State(threading.local):
    def __init__(self) -> None:
        self.enabled: dict[str, bool] = {}
        self.dtype: dict[str, object] = {}
        self.cache_enabled = True
        self.nesting = 0
        self.mode: _AutocastMode | None = None
        self.cache: dict = {}


_STATE = _State()


def _dtype_named(name: str):
    from .. import _dtype

    dt = getattr(_dtype, name, None)
    if dt is None:
        raise RuntimeError(f"autocast's default dtype here is {name}, which this Ember build "
                           f"does not have; pass dtype=ember.float16")
    return dt


def _type_of(device_type: str) -> str:
    """The device type named by ``device_type`` (``"cpu:0"`` names the CPU); an unknown name
    raises the device parser's error, as PyTorch's does."""
    if device_type in _DEVICE_DEFAULTS:
        return device_type
    kind = device_type.partition(":")[0]
    if kind in _DEVICE_DEFAULTS:
        return kind
    from .._device import device

    return device(device_type).type


def _autocast_type(device_type: str) -> bool:
    from ..backends import _REGISTRY

    return device_type in _DEVICE_DEFAULTS or (device_type != "meta" and device_type in _REGISTRY)


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast supports ``device_type``: PyTorch's autocast device types (``cpu``,
    ``cuda``, ``xpu``, ``mps``...) and registered Ember devices, not ``meta``."""
    return _autocast_type(_type_of(device_type))


def get_autocast_dtype(device_type: str):
    """The lower-precision dtype autocast uses on ``device_type`` in this thread."""
    device_type = _type_of(device_type)
    dt = _STATE.dtype.get(device_type)
    if dt is not None:
        return dt
    if not _autocast_type(device_type):
        raise RuntimeError("unsupported scalarType")
    return _dtype_named(_DEVICE_DEFAULTS.get(device_type, "float16"))


def set_autocast_dtype(device_type: str, dtype) -> None:
    _STATE.dtype[_type_of(device_type)] = dtype


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on for ``device_type`` (default: CUDA, as PyTorch) in this thread."""
    return _STATE.enabled.get("cuda" if device_type is None else _type_of(device_type), False)


def set_autocast_enabled(device_type, enabled=None) -> None:
    """``set_autocast_enabled(device_type, enabled)`` (or ``(enabled)`` for CUDA)."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    _STATE.enabled[_type_of(device_type)] = bool(enabled)
    _sync_mode()


def is_autocast_cache_enabled() -> bool:
    return _STATE.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    _STATE.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Drop the cached casts of the weights (the outermost region's exit does it)."""
    _STATE.cache.clear()


def autocast_increment_nesting() -> int:
    _STATE.nesting += 1
    return _STATE.nesting


def autocast_decrement_nesting() -> int:
    _STATE.nesting -= 1
    return _STATE.nesting


def _sync_mode() -> None:
    """One mode per thread while any device type has autocast on."""
    on = any(_STATE.enabled.values())
    mode = _STATE.mode
    if on and mode is None:
        mode = _STATE.mode = _AutocastMode()
        mode.__enter__()
    elif not on and mode is not None:
        from ..overrides import _STATE as dispatch

        if dispatch.modes and dispatch.modes[-1] is mode:
            mode.__exit__(None, None, None)
            _STATE.mode = None
        # else: a mode entered after it is still open; it leaves with the region


def _is_float(t) -> bool:
    return t.dtype.is_floating_point


def _cast_arg(t, dtype, device_type: str, to=None):
    """``t`` cast for the op: floating, not float64, on ``device_type``, not already so.
    ``to(t, dtype)``: how to cast (a capture records the cast; no cache then)."""
    from .._dtype import float64
    from .._tensor import Tensor

    if not isinstance(t, Tensor) or t.device.type != device_type or not _is_float(t) \
            or t.dtype == float64 or t.dtype == dtype:
        return t
    if to is not None:
        return to(t, dtype)
    cache = _STATE.cache if _STATE.cache_enabled and t.requires_grad and t.grad_fn is None \
        else None
    if cache is not None:
        hit = cache.get(id(t))
        if hit is not None and hit[0] is t and hit[1] == t._version and hit[2].dtype == dtype:
            return hit[2]
    out = t.to(dtype)
    if cache is not None:
        cache[id(t)] = (t, t._version, out)
    return out


def _map(args, fn):
    if isinstance(args, (list, tuple)) and not hasattr(args, "_fields"):
        return type(args)(_map(a, fn) for a in args)
    return fn(args)


def _tensors(args):
    from .._tensor import Tensor

    for a in args:
        if isinstance(a, Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from _tensors(a)


def _promote_type(args, device_type: str):
    """PyTorch's ``promote_type`` (``at::autocast::prioritize``): float32 when an input on
    ``device_type`` is float32, else autocast's lower dtype; float64 inputs are ignored, and
    a floating input of another dtype is an error."""
    from .._dtype import float32, float64

    lower = current = get_autocast_dtype(device_type)
    for t in _tensors(args):
        if t.device.type != device_type or not _is_float(t):
            continue
        nxt = t.dtype
        if nxt == float64:
            continue
        if current == float32 or nxt == float32:
            current = float32
        elif not (current == lower and nxt == lower):
            raise RuntimeError("Unexpected floating ScalarType in at::autocast::prioritize")
    return current


class _AutocastMode(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        args, kwargs = autocast_args(func, args, kwargs or {})
        return func(*args, **kwargs)


def autocast_args(func, args, kwargs: dict, to=None):
    """``func``'s arguments cast as this thread's autocast casts them for it (unchanged
    when autocast is off or the op has no policy). ``to(t, dtype)`` makes each cast: a
    capture (``jit.trace``, ``export``, ``compile``) passes one that records it, so the
    captured program casts as the eager run did (the autocast mode below the capture then
    finds the arguments cast already)."""
    from ..ops.autocast_policy import BANNED, CONDITIONS, POLICIES
    from ..ops.registry import op_key

    if _STATE.mode is None:
        return args, kwargs
    name = op_key(func)
    policies = POLICIES.get(name)
    if policies:
        if kwargs.get("out") is not None:  # PyTorch's out= variants are on no list
            return args, kwargs
        conditions = CONDITIONS.get(name)
        for device_type, on in list(_STATE.enabled.items()):
            if not on:
                continue
            # other registered devices (the NumPy-backed test devices) follow the CPU's
            key = device_type if device_type in ("cpu", "cuda") else "cpu"
            policy = policies.get(key)
            if policy is None:
                continue
            if conditions is not None and key in conditions \
                    and not conditions[key](args, kwargs):
                continue
            if device_type == "cuda" and name in BANNED:
                raise RuntimeError(BANNED[name])
            args, kwargs = _apply(policy, device_type, args, kwargs, to)
    return args, kwargs


def state_key() -> tuple:
    """This thread's autocast state as a value (``()`` when off): what a compiled entry
    captured under, which its guards compare."""
    if _STATE.mode is None:
        return ()
    return tuple(sorted((d, str(get_autocast_dtype(d))) for d, on in _STATE.enabled.items()
                        if on))


def _apply(policy: str, device_type: str, args, kwargs, to=None):
    from .._dtype import float32

    if policy == "lower":
        target = get_autocast_dtype(device_type)
    elif policy == "fp32":
        target = float32
    elif policy == "fp32_set_dtype":
        if kwargs.get("dtype") is not None:
            return args, kwargs
        target = float32
    else:  # promote
        target = _promote_type((args, tuple(kwargs.values())), device_type)

    def cast(a):
        return _cast_arg(a, target, device_type, to)

    return _map(tuple(args), cast), {k: _map(v, cast) for k, v in kwargs.items()}


class autocast:
    """Run the block's ops in mixed precision (see the module docstring)::

        with ember.autocast("cpu", dtype=ember.bfloat16):
            loss = loss_fn(model(x), y)
        loss.backward()

    ``dtype`` defaults to bfloat16 on the CPU and float16 on CUDA; ``enabled=False`` turns it
    off inside an enclosing region; ``cache_enabled`` caches the weights' casts."""

    def __init__(self, device_type: str, dtype=None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        self._type = _type_of(device_type)
        if not _autocast_type(self._type):
            raise RuntimeError(f"User specified an unsupported autocast device_type "
                               f"'{device_type}'")
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None \
            else cache_enabled
        if enabled:
            if self._type == "cuda":
                if not _cuda_available():
                    warnings.warn("CUDA is not available or torch_xla is imported. Disabling "
                                  "autocast.", stacklevel=2)
                    enabled = False
            elif _bare(self.fast_dtype) not in ("bfloat16", "float16"):
                label = device_type.upper()
                warnings.warn(f"In {label} autocast, but the target dtype is not supported. "
                              f"Disabling autocast.\n{label} Autocast only supports dtypes of "
                              f"torch.bfloat16, torch.float16 currently.", stacklevel=2)
                enabled = False
        self._enabled = enabled

    def __enter__(self):
        s = _STATE
        self._prev = (s.enabled.get(self._type, False), s.dtype.get(self._type),
                      s.cache_enabled)
        s.enabled[self._type] = bool(self._enabled)
        s.dtype[self._type] = self.fast_dtype
        s.cache_enabled = self._cache_enabled
        autocast_increment_nesting()
        _sync_mode()
        return self

    def __exit__(self, *exc) -> bool:
        s = _STATE
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        enabled, dtype, cache = self._prev
        s.enabled[self._type] = enabled
        if dtype is None:
            s.dtype.pop(self._type, None)
        else:
            s.dtype[self._type] = dtype
        s.cache_enabled = cache
        _sync_mode()
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(
                f"autocast()(func) requires a callable, but got {type(func).__name__}. "
                f"Did you mean to use autocast as a context manager? For example:\n"
                f"    with torch.autocast(device_type=...):\n"
                f"        output = model(input)")

        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            # a fresh region per call (the settings checked already): recursion nests cleanly
            region = object.__new__(type(self))
            region.__dict__.update(self.__dict__)
            with region:
                return func(*args, **kwargs)

        return decorate_autocast


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """For an ``autograd.Function.forward``: with ``cast_inputs`` set and autocast on, its
    floating inputs are cast to ``cast_inputs`` and it runs with autocast off; ``custom_bwd``
    then runs the backward with the forward's autocast state."""
    _check_device_type(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        # the forward runs outside autocast, so its backward does too
        ctx._fwd_used_autocast = False
        if not is_autocast_enabled(device_type):
            return fwd(*args, **kwargs)
        with autocast(device_type, enabled=False):
            return fwd(*_cast(args, device_type, cast_inputs),
                       **_cast(kwargs, device_type, cast_inputs))

    return decorate_fwd


def _check_device_type(device_type) -> None:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")


def _cast(value, device_type: str, dtype):
    """``custom_fwd``'s cast (PyTorch's ``torch.amp.autocast_mode._cast``): floating tensors
    on ``device_type`` (not float64) to ``dtype``,
    through lists, tuples, dicts and other iterables (strings and arrays pass)."""
    import numpy as np

    from .._dtype import float64
    from .._tensor import Tensor

    if isinstance(value, Tensor):
        eligible = value.dtype.is_floating_point and value.device.type == device_type \
            and value.dtype != float64
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes, np.ndarray)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype)
                for k, v in value.items()}
    if isinstance(value, collections.abc.Iterable):
        iterable = (_cast(v, device_type, dtype) for v in value)
        return type(value)(iterable) if isinstance(value, (list, tuple)) else iterable
    return value


def custom_bwd(bwd=None, *, device_type: str):
    """For an ``autograd.Function.backward``: run it with the forward's autocast state."""
    _check_device_type(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type, dtype=ctx._dtype, enabled=ctx._fwd_used_autocast):
            return bwd(*args, **kwargs)

    return decorate_bwd


# -- PyTorch's older per-device names (deprecated there, with these warnings) -----------------
def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.",
                  DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled() -> bool:
    _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype():
    _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype) -> None:
    _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    _deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype) -> None:
    _deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)


def _cuda_available() -> bool:
    from .. import cuda

    return cuda.is_available()


#: the names ``ember`` itself exports (torch.autocast, torch.is_autocast_enabled, ...)
TOP_LEVEL = ("autocast", "is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype",
             "set_autocast_dtype", "is_autocast_cpu_enabled", "set_autocast_cpu_enabled",
             "get_autocast_cpu_dtype", "set_autocast_cpu_dtype", "get_autocast_gpu_dtype",
             "set_autocast_gpu_dtype", "is_autocast_cache_enabled",
             "set_autocast_cache_enabled", "clear_autocast_cache",
             "autocast_increment_nesting", "autocast_decrement_nesting")
