"""``__torch_function__``: Tensor subclasses override ember functions and Tensor methods.

The protocol is PyTorch's (``torch.overrides``): when an argument of an ember function or
Tensor method is an instance of a Tensor subclass that defines ``__torch_function__``, the call
goes to ``type(arg).__torch_function__(func, types, args, kwargs)`` instead, subclasses before
their bases, the first result that is not ``NotImplemented`` winning. ``Tensor``'s own
``__torch_function__`` runs the function with dispatch disabled and turns Tensor results into
the subclass, so ``MyTensor + 1`` is a ``MyTensor``.

Cost: none until such a subclass exists (or an ``ember.fx`` Proxy is built by hand, outside
a trace, which needs the same dispatch). The ops are plain functions on the hot path; the
first subclass that overrides ``__torch_function__`` (``Parameter`` does not: it disables it,
as in PyTorch) makes :func:`activate` turn dispatch on: every registered function of the
namespaces that exported them (``ember``, ``ember.nn.functional``, ``ember.linalg``, ...) and
every Tensor method gets a dispatching check as its code, in place (the function object
stays the same, so ``func is torch.mean``, ``func in {torch.add: ...}`` and a name bound by
``from ember import add`` behave as in PyTorch; ``Tensor.add`` is a function of its own, not
``ember.add``, so a handler tells the two calls apart). The few callables that are not
Python functions (the tensor properties ``T``, ``mT``, ``H``, ``mH``) are swapped for
dispatching wrappers instead.

Modes (PyTorch's ``TorchFunctionMode``): ``with mode:`` sends every dispatching call of this
thread (factories too, which have no tensor argument) to ``mode.__torch_function__`` first;
inside that handler the mode is off, so the calls an op makes are not seen. Dispatch is on
while a mode is entered anywhere and goes off again after the last one (unless a subclass
turned it on for good), so a process pays nothing once its captures (``ember.export``,
``ember.jit.trace``) are done. It goes off ``_LINGER_CALLS`` plain calls after that exit,
not at it: switching costs ~80 us each way, so a loop of ``vmap`` calls (each enters a mode)
with a few ops between them switches once; the calls in between run through the check
(~0.5 us each) as if dispatch were off. A mode entered while dispatch lingers compares the
names with a copy taken when it went on (~17 us) and switches off and on again if one was
replaced or added meanwhile, so a patched function dispatches as it would after a switch.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import inspect
import itertools
import threading
from collections.abc import Callable

from ._forksafe import reinit_in_child
from ._tensor import Tensor

__all__ = ["disabled_torch_function_impl", "has_torch_function", "handle_torch_function",
           "is_tensor_like", "get_ignored_functions", "get_overridable_functions",
           "get_testing_overrides", "resolve_name", "is_tensor_method_or_property",
           "wrap_torch_function", "enable_reentrant_dispatch", "redispatch_function",
           "activate", "is_active", "mode_wants",
           "DisableTorchFunctionSubclass", "DisableTorchFunction", "register_namespace",
           "TorchFunctionMode"]


def _run_undispatched(cls, func, types, args=(), kwargs=None):
    return func(*args, **(kwargs or {}))


#: ``__torch_function__ = disabled_torch_function_impl`` opts a Tensor subclass out of dispatch
#: (``nn.Parameter`` does); ``ember._C._disabled_torch_function_impl`` does the same and can
#: also be called directly
disabled_torch_function_impl = classmethod(_run_undispatched)


def _disabled_torch_function_impl(func, types, args=(), kwargs=None):
    """PyTorch's ``torch._C._disabled_torch_function_impl``: as a class's
    ``__torch_function__`` it opts the class out of dispatch (a plain function, so the class
    attribute is this very object, as identity checks expect); called directly it runs
    ``func`` with subclass dispatch off, so the results are plain tensors."""
    with DisableTorchFunctionSubclass():
        return func(*args, **(kwargs or {}))


class _SkipOneHop:
    """``_DispatchState.all_disabled`` while a :func:`redispatch_function` call's skip is
    pending: truthy, so the dispatching wrappers take their disabled branch (no cost on
    their usual path), and the first dispatch check (a wrapper, ``has_torch_function*``)
    clears it and does not dispatch, as PyTorch's ``_skip_one_hop_torch_function``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<skip one hop>"


_SKIP_ONE_HOP = _SkipOneHop()


class _DispatchState(threading.local):
    subclass_disabled = False  # DisableTorchFunctionSubclass (Tensor's default impl uses it)
    all_disabled = False  # DisableTorchFunction (True) or a pending skip (_SKIP_ONE_HOP)
    modes: tuple = ()  # TorchFunctionMode stack, innermost last


_STATE = _DispatchState()
_ACTIVE = [False]
_KEEP_ACTIVE = [False]  # a subclass (or activate()) wants dispatch on for good
_MODE_SCOPES = [0]  # modes entered, all threads
#: plain calls left before dispatch goes off after the last mode's exit (0: none pending).
#: Switching dispatch on or off sets ~1,300 codes (~80 us each way); a call through the
#: check with no mode and no overriding argument costs ~0.5 us more than a plain one. So the
#: last exit leaves dispatch on for about as many calls as one switch costs, and a loop of
#: ``vmap``/``jacrev``/profiled calls with a few ops between them switches once, not twice
#: per call (ski rental: never more than twice the cost of switching at once)
_LINGER = [0]
_LINGER_CALLS = 300
_LOCK = reinit_in_child(threading.RLock())
#: modules whose public functions are wrapped on activation (``ember``, ``ember.linalg``, ...)
_NAMESPACES: list = []


class _Disabling:
    """Sets one of this thread's dispatch flags inside the block."""

    _flag = ""

    def __enter__(self):
        self.prev = getattr(_STATE, self._flag)
        setattr(_STATE, self._flag, True)

    def __exit__(self, *exc):
        setattr(_STATE, self._flag, self.prev)
        return False


class DisableTorchFunctionSubclass(_Disabling):
    """Inside the block, Tensor subclasses' ``__torch_function__`` is not called (this thread).

    ``Tensor.__torch_function__`` runs the function in it, so the call reaches the kernel."""

    _flag = "subclass_disabled"


class DisableTorchFunction(_Disabling):
    """Inside the block, no ``__torch_function__`` is called at all (this thread)."""

    _flag = "all_disabled"


def _overrides(tp) -> bool:
    """Whether instances of ``tp`` take part in dispatch (a Tensor itself does not): it
    overrides ``__torch_function__``, or it is a Tensor subclass with a
    ``__torch_dispatch__`` (``ember.utils._python_dispatch``)."""
    impl = getattr(tp, "__torch_function__", None)
    if impl is None:
        return False
    func = getattr(impl, "__func__", impl)
    return (func is not _run_undispatched and func is not _disabled_torch_function_impl
            or has_torch_dispatch(tp)) and tp is not Tensor


def _disabled_torch_dispatch_impl(func, types, args=(), kwargs=None):
    """PyTorch's ``torch._C._disabled_torch_dispatch_impl``: as a class's
    ``__torch_dispatch__`` it opts the class out of it (its ops run on its own data); called
    directly it runs ``func``."""
    return func(*args, **(kwargs or {}))


def has_torch_dispatch(tp) -> bool:
    """Whether Tensor subclass ``tp`` defines a ``__torch_dispatch__`` of its own."""
    impl = getattr(tp, "__torch_dispatch__", None)
    return impl is not None and getattr(impl, "__func__", impl) \
        is not _disabled_torch_dispatch_impl


def _dispatch_only(tp) -> bool:
    """Whether ``tp`` takes part through ``__torch_dispatch__`` alone: its
    ``__torch_function__`` is disabled or Tensor's default (which would run the op)."""
    if not has_torch_dispatch(tp):
        return False
    func = getattr(tp.__torch_function__, "__func__", tp.__torch_function__)
    return func is _run_undispatched or func is _disabled_torch_function_impl \
        or func is _TENSOR_TORCH_FUNCTION


_TENSOR_TORCH_FUNCTION = Tensor.__torch_function__.__func__


def _is_relevant(x) -> bool:
    tp = type(x)
    if tp is Tensor or tp in _PLAIN:
        return False
    if _STATE.subclass_disabled:  # every overriding type, Tensor or not, as in PyTorch;
        return has_torch_dispatch(tp)  # __torch_dispatch__ is below __torch_function__
    return _overrides(tp)


_PLAIN = frozenset({int, float, bool, str, type(None), slice, type(Ellipsis)})


def _relevant_args(args, kwargs) -> list:
    """The arguments (and the items of list/tuple arguments) that take part in dispatch.
    Plain tensors and numbers, what nearly every call passes, are skipped inline (this runs
    on every call while dispatch is on)."""
    found = []
    for a in (*args, *kwargs.values()) if kwargs else args:
        tp = type(a)
        if tp is Tensor or tp in _PLAIN:
            continue
        if tp is list or tp is tuple:
            for x in a:
                tx = type(x)
                if tx is not Tensor and tx not in _PLAIN and _is_relevant(x):
                    found.append(x)
        elif _is_relevant(a):
            found.append(a)
    return found


def has_torch_function(relevant_args) -> bool:
    """Whether any of ``relevant_args`` overrides ``__torch_function__`` (or a mode is on).
    Only the items of ``relevant_args`` are looked at, not the items of a list among them."""
    disabled = _STATE.all_disabled
    if disabled:
        if disabled is _SKIP_ONE_HOP:  # redispatch_function: this check is the hop skipped
            _STATE.all_disabled = False
        return False
    return bool(_STATE.modes) or any(_is_relevant(a) for a in relevant_args)


def has_torch_function_unary(obj) -> bool:
    """``has_torch_function((obj,))`` for one argument (PyTorch's fast path for unary
    functions)."""
    disabled = _STATE.all_disabled
    if disabled:
        if disabled is _SKIP_ONE_HOP:
            _STATE.all_disabled = False
        return False
    return bool(_STATE.modes) or _is_relevant(obj)


def has_torch_function_variadic(*args) -> bool:
    """``has_torch_function(args)`` with the arguments passed separately."""
    return has_torch_function(args)


def _dispatch_types(relevant) -> list:
    """Distinct types in order of appearance, each subclass before its bases."""
    types: list = []
    for a in relevant:
        tp = type(a)
        if tp in types:
            continue
        at = next((i for i, t in enumerate(types) if issubclass(tp, t)), len(types))
        types.insert(at, tp)
    return types


def handle_torch_function(public_api: Callable, relevant_args, *args, **kwargs):
    """Call the ``__torch_function__`` of the overriding types among ``relevant_args``."""
    if _STATE.modes:
        return _call_mode(public_api, args, kwargs)
    types = _dispatch_types([a for a in relevant_args if _is_relevant(a)])
    for tp in types:
        if _dispatch_only(tp) or _STATE.subclass_disabled:  # its ops go to the
            # __torch_dispatch__ of the subclasses (inside DisableTorchFunctionSubclass too)
            from .utils._python_dispatch import dispatch_subclasses

            result = dispatch_subclasses(public_api, args, kwargs)
            if getattr(tp.__torch_function__, "__func__", None) is _TENSOR_TORCH_FUNCTION:
                from ._tensor import _as_cls  # Tensor's default converts results, as in

                result = _as_cls(result, tp)  # PyTorch
            return result
        result = tp.__torch_function__(public_api, tuple(types), args, kwargs)
        if result is not NotImplemented:
            return result
    name = getattr(public_api, "__qualname__", repr(public_api))
    raise TypeError(f"no implementation found for '{name}' on types that implement "
                    f"__torch_function__: {[t for t in types]}")


def is_tensor_like(inp) -> bool:
    """A Tensor, or an object whose type defines ``__torch_function__``."""
    return isinstance(inp, Tensor) or hasattr(type(inp), "__torch_function__")


def wrap_torch_function(dispatcher: Callable):
    """Decorator for a Python function that should dispatch on the tensors
    ``dispatcher(*args, **kwargs)`` returns (PyTorch's ``torch.overrides.wrap_torch_function``)."""

    def decorator(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            relevant = dispatcher(*args, **kwargs)
            if has_torch_function(relevant):
                return handle_torch_function(wrapped, relevant, *args, **kwargs)
            return func(*args, **kwargs)
        return wrapped

    return decorator


# -- activation ------------------------------------------------------------------------------

#: Tensor operator dunders that PyTorch's ``__torch_function__`` reports as the named method
#: (``x + 1`` and ``1 + x`` arrive as ``Tensor.add`` with ``(x, 1)``, ``-x`` as
#: ``Tensor.neg``), so that a mode or subclass testing ``func is torch.Tensor.add`` sees them;
#: the others (``__rsub__``, ``__floordiv__``, ``__eq__``, ``__and__``, ...) arrive as
#: themselves, as in PyTorch 2.13
_DUNDER_AS_METHOD = {
    "__add__": "add", "__radd__": "add", "__sub__": "sub", "__mul__": "mul",
    "__rmul__": "mul", "__truediv__": "div", "__mod__": "remainder", "__pow__": "pow",
    "__neg__": "neg", "__abs__": "abs", "__matmul__": "matmul", "__ne__": "ne",
    "__lt__": "lt", "__le__": "le", "__gt__": "gt", "__ge__": "ge",
}


def _dispatching(fn: Callable, name: str, alias: str | None = None) -> Callable:
    """``fn`` behind a check for overriding arguments, as a new function: the public API
    that ``__torch_function__`` receives where ``fn`` itself cannot dispatch (a property's
    getter, a generator, a callable that is not a Python function, an ``aten`` op's
    wrapper; ember's Python functions dispatch in place, see :func:`_register_swap`). For
    the operator dunders of ``_DUNDER_AS_METHOD``, ``alias``: the Tensor method PyTorch
    reports. The wrapper runs ``fn``'s body, never ``fn`` (which may dispatch itself)."""
    # the check that functions dispatching in place run (_DISPATCH_SOURCE), as a function
    public = _FUNCTION(_dispatch_code(0), globals(), name)
    functools.update_wrapper(public, fn)
    public.__kwdefaults__ = {_STATE_KW: _dispatch_state(
        public, _body(fn), (Tensor, alias) if alias is not None else None)}
    public.__name__ = name
    public._ember_original = fn
    public._ember_wrapper = True
    return public


# -- dispatch in place ---------------------------------------------------------------------------
#
# A Python function's behaviour lives in its code object, and ``__code__`` can be assigned.
# While dispatch is on, each ember function (``ember.add``, ``Tensor.add``, ``F.relu``, ...)
# gets the code of a dispatching check in place of its own, whose last step calls a copy
# of the function (its "body": the original code, defaults and closure); dispatch off puts
# the code back. The function object stays the one every name, table and ``from ember
# import add`` holds, so ``func is torch.mean`` and ``func in {torch.add: ...}`` hold in a
# mode as in PyTorch, and a name bound before dispatch went on dispatches too (the earlier
# design swapped the namespaces' attributes for wrappers: identity changed with the mode).
# The check's state rides in a keyword-only default (a function's globals and closure
# cannot be replaced; its code must keep the closure's size, so one code per size).

#: the code flags of functions that are not plain calls (their body is a frame to resume)
_NOT_PLAIN = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR \
    | inspect.CO_ITERABLE_COROUTINE
#: the keyword-only default that carries a function's dispatch state
_STATE_KW = "_ember_dispatch_"
_FUNCTION = type(_run_undispatched)


#: function -> its body, for every function that dispatches in place (registration is for
#: good): the body is a copy with the function's own code, what the check calls
_SWAPS: dict = {}
#: the registered functions and their two codes, in order (one C-level pass sets them all:
#: switching dispatch on or off sets ~1,300 codes: see ``_LINGER``)
_SWAP_FNS: list = []
_SWAP_ON: list = []
_SWAP_OFF: list = []
#: function -> its body, for those and for the functions behind dispatching wrappers
_BODIES: dict = {}
#: closure size -> the dispatching code
_DISPATCH_CODES: dict = {}


#: the check every dispatching function runs as its code (compiled at the lines it has in
#: this file, so a traceback through it shows these lines). It runs with the function's
#: globals: what it reads of this module travels in its keyword-only state
_DISPATCH_SOURCE = """\
    def public(*args, _ember_dispatch_=None, **kwargs):
        fn, body, alias, state, skip, call_mode, relevant_args, handle, linger, linger_call = \
            _ember_dispatch_
        if not state.all_disabled:
            func = fn if alias is None else getattr(alias[0], alias[1])
            if state.modes:
                return call_mode(func, args, kwargs)
            relevant = relevant_args(args, kwargs)
            if relevant:
                return handle(func, relevant, *args, **kwargs)
            if linger[0]:  # the last mode has exited: dispatch goes off after a few calls
                linger_call()
        elif state.all_disabled is skip:  # redispatch_function: the hop skipped
            state.all_disabled = False
        return body(*args, **kwargs)
"""


def _dispatch_code(nfree: int):
    code = _DISPATCH_CODES.get(nfree)
    if code is None:
        cells = ", ".join(f"_c{i}" for i in range(nfree))
        # the closure's cells are named only in dead code: free variables of the code
        # (their number must match the function's closure), never read (one may be empty)
        keep = f"        return\n        {cells}\n" if nfree else ""
        if not _SOURCE_LINE[0]:
            _SOURCE_LINE[0] = _source_line()
        line = _SOURCE_LINE[0]
        src = "\n" * (line - 2) + f"def _outer({cells}):\n" + _DISPATCH_SOURCE + keep \
            + "    return public\n"
        namespace: dict = {}
        exec(compile(src, __file__, "exec"), namespace)  # fixed text, made here
        code = namespace["_outer"](*range(nfree)).__code__
        _DISPATCH_CODES[nfree] = code
    return code


def _source_line() -> int:
    """The line of this file where ``_DISPATCH_SOURCE``'s text begins."""
    with open(__file__, encoding="utf-8") as f:
        for i, text in enumerate(f, 1):
            if text.startswith("_DISPATCH_SOURCE = "):
                return i + 1
    return 2


_SOURCE_LINE = [0]


def _dispatch_state(func, body, alias) -> tuple:
    """What the check reads (``_DISPATCH_SOURCE``'s first line): the function handlers
    receive, the body to run, ``(Tensor, method name)`` for an operator dunder reported as
    its method, and this module's state and helpers. A function whose PyTorch counterpart
    looks for overriding arguments its own way names that search in its attribute
    ``_ember_relevant_args`` (``ember.einsum``: see ``ops/linalg.py``)."""
    relevant = getattr(func, "_ember_relevant_args", _relevant_args)
    return (func, body, alias, _STATE, _SKIP_ONE_HOP, _call_mode, relevant,
            handle_torch_function, _LINGER, _linger_call)


def _swappable(fn) -> bool:
    return type(fn) is _FUNCTION and not fn.__code__.co_flags & _NOT_PLAIN \
        and _STATE_KW not in fn.__code__.co_varnames


def _body(fn):
    """A copy of the Python function ``fn`` with its own code, made once (what its check
    or a wrapper calls, so as never to reach ``fn``, which may dispatch); ``fn`` itself for
    a callable that is not a Python function."""
    if type(fn) is not _FUNCTION:
        return fn
    body = _BODIES.get(fn)
    if body is None:
        code = fn.__code__ if fn not in _SWAPS else _SWAPS[fn].__code__
        body = _FUNCTION(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
        kw = fn.__kwdefaults__
        if kw is not None:
            kw = {k: v for k, v in kw.items() if k != _STATE_KW}
        body.__kwdefaults__ = kw or None
        body.__qualname__ = fn.__qualname__
        body.__module__ = fn.__module__
        body.__doc__ = fn.__doc__
        _BODIES[fn] = body
    return body


def _register_swap(fn, owner, name: str) -> None:
    """Make ``fn`` (found as ``owner.name``) dispatch in place while dispatch is on."""
    if fn not in _SWAPS:
        body = _body(fn)
        code = _dispatch_code(len(fn.__closure__ or ()))
        code = code.replace(co_name=fn.__code__.co_name, co_qualname=fn.__code__.co_qualname)
        # an operator dunder reports the Tensor method PyTorch names (x + 1: Tensor.add)
        alias = (Tensor, _DUNDER_AS_METHOD[name]) if owner is Tensor \
            and name in _DUNDER_AS_METHOD else None
        fn.__kwdefaults__ = {**(fn.__kwdefaults__ or {}),
                             _STATE_KW: _dispatch_state(fn, body, alias)}
        if "__wrapped__" not in fn.__dict__:
            # inspect.signature follows __wrapped__: while the code is the check, the body's
            # signature is the function's (one with its own __wrapped__ keeps it)
            fn.__wrapped__ = body
        _SWAPS[fn] = body
        _SWAP_FNS.append(fn)
        _SWAP_ON.append(code)
        _SWAP_OFF.append(body.__code__)
        if _ACTIVE[0]:
            fn.__code__ = code
    # where it was found and under which name (ember.batch_norm's function is
    # aten_batch_norm), a namespace before Tensor and the function's own name before an
    # alias's: what the profiler and autocast key the op by (ember.linalg.inv is
    # linalg_inv) and resolve_name reports
    rank = (owner is Tensor, name != fn.__name__)
    known = fn.__dict__.get("_ember_op_rank")
    if known is None or rank < known:
        fn._ember_namespace = _owner_name(owner)
        fn._ember_op_name = name
        fn._ember_op_rank = rank
    if (owner is Tensor or _owner_name(owner) == "ember") and fn.__name__ != name \
            and getattr(owner, fn.__name__, None) is not fn:
        # PyTorch's builtins are named as they are found (torch.batch_norm, Tensor.where,
        # Tensor.__getitem__); an alias keeps the function's name (ember.absolute is
        # ember.abs), and the other namespaces keep theirs (torch.fft.fft is fft_fft)
        fn.__name__ = name


def _swaps(on: bool) -> None:
    collections.deque(map(setattr, _SWAP_FNS, itertools.repeat("__code__"),
                          _SWAP_ON if on else _SWAP_OFF), maxlen=0)


def undispatched(func):
    """What ``func`` runs once its ``__torch_function__`` check has passed: the body of an
    ember function (or of a dispatching wrapper's function), else None for a function
    that makes no such check."""
    if type(func) is _FUNCTION and func in _SWAPS:
        return _SWAPS[func]
    if not _is_wrapper(func):
        return None
    return plain(func._ember_original)


def plain(fn):
    """``fn`` without its ``__torch_function__`` check: the body of an ember function that
    dispatches in place (what a capture calls once it has recorded the op), else ``fn``."""
    return _BODIES.get(fn, fn) if type(fn) is _FUNCTION else fn


def code_of(fn):
    """``fn``'s own code object, while dispatch has put the check's code in its place too."""
    return plain(fn).__code__


def is_dispatching(value) -> bool:
    """Whether ``value`` (a function, method or property) makes the ``__torch_function__``
    check now: an ember function while dispatch is on, or a dispatching wrapper."""
    if type(value) is _FUNCTION and value in _SWAPS:
        return value.__code__ is not _SWAPS[value].__code__
    if isinstance(value, property):
        value = value.fget
    return _is_wrapper(value)


#: ``ember`` functions that are no ops: PyTorch's modes never see them (state, settings and
#: helpers without tensors; PyTorch's pybind and Python helpers without a dispatch check)
_NEVER_DISPATCH = frozenset({
    "is_grad_enabled", "is_inference_mode_enabled", "is_anomaly_enabled",
    "is_anomaly_check_nan_enabled", "set_anomaly_enabled", "get_default_dtype",
    "set_default_dtype", "get_default_device", "set_default_device", "set_default_tensor_type",
    "is_tensor", "is_storage", "is_warn_always_enabled", "set_warn_always",
    "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
    "use_deterministic_algorithms", "get_deterministic_debug_mode",
    "set_deterministic_debug_mode", "get_float32_matmul_precision",
    "set_float32_matmul_precision", "get_num_threads", "set_num_threads",
    "get_num_interop_threads", "set_num_interop_threads", "init_num_threads",
    "set_flush_denormal", "set_printoptions", "broadcast_shapes", "get_device_module",
    "manual_seed", "seed", "initial_seed", "compile", "save", "load",
})


def _wrap_attr(owner, name: str) -> None:
    if name in _NEVER_DISPATCH and _owner_name(owner) == "ember":
        return
    fn = owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name, None)
    if isinstance(fn, property):
        if name in _TENSOR_PROPERTIES and not _is_wrapper(fn.fget):
            setattr(owner, name, property(_dispatching(fn.fget, name), fn.fset, fn.fdel,
                                          fn.__doc__))
        return
    if not callable(fn) or isinstance(fn, (type, staticmethod, classmethod)) \
            or _is_wrapper(fn):
        return
    if _swappable(fn) and fn not in _SHARED_EXCLUDED[0]:
        _register_swap(fn, owner, name)
        return
    # made once per (function, namespace, name) and kept: a mode entered and left in a loop
    # (vmap, a capture) re-wraps its attributes each time, and making the wrappers was
    # most of that cost
    key = (fn, _owner_name(owner), name)
    public = _WRAPPERS.get(key)
    if public is None:
        public = _dispatching(fn, name, _DUNDER_AS_METHOD.get(name) if owner is Tensor
                              else None)
        # where it was found: what the profiler and autocast key the op by
        public._ember_namespace = _owner_name(owner)
        _WRAPPERS[key] = public
    setattr(owner, name, public)


#: the dispatching wrappers made so far (``_wrap_attr``)
_WRAPPERS: dict = {}


#: properties that return tensors and dispatch (the others, shape, dtype, grad, ..., do not)
_TENSOR_PROPERTIES = frozenset({"T", "mT", "H", "mH"})


#: Tensor methods that are not ops (dispatch would recurse or make no sense)
_METHOD_EXCLUDE = frozenset({
    "__new__", "__init__", "__init_subclass__", "__torch_function__", "__repr__", "__str__",
    "__format__", "__getattribute__", "__getattr__", "__setattr__", "__delattr__", "__hash__",
    "__reduce__", "__reduce_ex__", "__getstate__", "__setstate__", "__dir__", "__sizeof__",
    "__class_getitem__", "__subclasshook__", "__array__", "__array_wrap__", "__dlpack__",
    "__dlpack_device__", "__deepcopy__", "__copy__", "__len__", "__iter__", "__bool__",
    "__index__", "__int__", "__float__", "__complex__", "as_subclass", "_make_subclass",
    "dim", "size", "numel", "element_size", "is_floating_point", "data_ptr", "stride",
    "is_contiguous", "tolist", "item", "numpy", "register_hook", "backward", "retain_grad",
})


def activate() -> None:
    """Turn dispatch on for good: wrap the public functions and the Tensor methods."""
    with _LOCK:
        _KEEP_ACTIVE[0] = True
        _LINGER[0] = 0
        _wrap_all()


def _wrap_all() -> None:
    with _LOCK:
        if _ACTIVE[0]:
            return
        fresh = True
        for owner in (Tensor, *_NAMESPACES):
            plan = _PLANS.get(owner)
            d = _names_of(owner)
            if plan is None or plan.size != len(d) or not d.items() >= plan.original_items:
                if fresh:
                    _SHARED_EXCLUDED[0] = _shared_excluded()
                    fresh = False
                _full_wrap(owner)  # first time, or names added or replaced since
            elif plan.wrapped:
                _replay(owner, plan, plan.wrapped)
        _swaps(True)
        _ACTIVE[0] = True
        _SNAPSHOTS.clear()
        _SNAPSHOTS.update((owner, dict(_names_of(owner))) for owner in (Tensor, *_NAMESPACES))


#: the functions :func:`_shared_excluded` found at the last activation
_SHARED_EXCLUDED: list = [frozenset()]


def _replay(owner, plan, values) -> None:
    """Set ``owner``'s names to ``values`` (the plan's ``wrapped`` or ``originals``: name ->
    value).

    A module is one dict update. A class takes one ``setattr`` per name where the names need
    it (a ``setattr`` on a class also re-resolves its slots and clears the method caches of
    the class and its subclasses: 1,200 of them for Tensor's ~600 names were most of a
    mode's enter/exit); where every name swaps a plain function for another plain function
    (or a property for a property) under a non-special name or a dunder whose slot looks the
    name up anyway, the class's own dict takes one update and one ``setattr`` then clears
    the caches (``plan.direct``, checked when the plan was made)."""
    if not isinstance(owner, type):
        vars(owner).update(values)
        return
    d = _class_dict(owner) if plan.direct else None
    if d is None:
        for name, value in values.items():
            setattr(owner, name, value)
        return
    d.update(values)
    setattr(owner, _SWAP_FLAG, values is plan.wrapped)  # the caches: PyType_Modified


def _names_of(owner):
    """``vars(owner)``, for a class the dict behind its proxy where reachable (what the
    plan checks read: the dict itself is read faster than through the proxy)."""
    if isinstance(owner, type) and owner in _CLASS_DICTS:
        return _CLASS_DICTS[owner] or vars(owner)
    return vars(owner)


#: a class attribute set after a direct dict update of the class (invalidates its caches)
_SWAP_FLAG = "_ember_dispatching"
#: the dict behind each class's ``__dict__`` proxy, or None where that cannot be reached
_CLASS_DICTS: dict = {}


def _class_dict(cls):
    """The dict that ``cls.__dict__`` (a read-only proxy) shows, on CPython; None elsewhere.
    Checked once per class: a ``setattr`` must show in it."""
    if cls in _CLASS_DICTS:
        return _CLASS_DICTS[cls]
    import gc
    import sys

    d = None
    # CPython with its GIL: one dict update is atomic to other threads (a free-threaded
    # build takes the setattr per name)
    gil = getattr(sys, "_is_gil_enabled", None)
    if sys.implementation.name == "cpython" and (gil is None or gil()):
        refs = gc.get_referents(vars(cls))
        if len(refs) == 1 and type(refs[0]) is dict:
            probe = object()
            setattr(cls, _SWAP_FLAG, probe)
            if refs[0].get(_SWAP_FLAG) is probe:
                d = refs[0]
            setattr(cls, _SWAP_FLAG, _ACTIVE[0])
    _CLASS_DICTS[cls] = d
    return d


def _direct_swap_ok(names, originals, wrapped) -> bool:
    """Whether a class's names can be swapped in its dict without ``setattr``: each pair is
    two Python functions, or two properties under a name that is not a dunder (a Python
    function's dunder has a slot that looks the name up on each call, so it needs no
    re-resolving; anything else might)."""
    for name, a, b in zip(names, originals, wrapped):
        ta, tb = type(a), type(b)
        if ta is _FUNCTION and tb is _FUNCTION:
            continue
        if ta is property and tb is property and not name.startswith("__"):
            continue
        return False
    return True


class _Plan:
    """What wrapping changed on one owner (Tensor or a namespace): the original and the
    wrapped value of each name that a wrapper replaces (dicts, name -> value, for one
    C-level update; the few callables that cannot dispatch in place), the same as sets of
    ``(name, value)`` items with the names whose functions dispatch in place (an owner's
    ``vars().items() >= items`` checks in one C-level pass that nothing was replaced since),
    and how many names the owner had."""

    __slots__ = ("size", "originals", "wrapped", "original_items", "wrapped_items",
                 "direct")

    def __init__(self, size, names, originals, wrapped, direct=False, in_place=()):
        self.size = size
        self.originals = dict(zip(names, originals))
        self.wrapped = dict(zip(names, wrapped))
        self.original_items = frozenset(self.originals.items()) | frozenset(in_place)
        self.wrapped_items = frozenset(self.wrapped.items()) | frozenset(in_place)
        self.direct = direct  # a class whose names _replay may swap in its dict


#: the last full wrap's plan per owner
_PLANS: dict = {}


def _is_wrapper(value) -> bool:
    """Whether ``value`` is a dispatching wrapper (:func:`_dispatching`) in place of a
    function (a Tensor method's own copy of an ``ember`` function carries
    ``_ember_original`` too: it is not a wrapper)."""
    return getattr(value, "_ember_wrapper", False) is True


def _original(value):
    """The unwrapped value behind a dispatching wrapper (function or property), else None."""
    if isinstance(value, property):
        if not _is_wrapper(value.fget):
            return None
        return property(value.fget._ember_original, value.fset, value.fdel, value.__doc__)
    return value._ember_original if _is_wrapper(value) else None


def _full_wrap(owner) -> None:
    """Wrap ``owner``'s dispatching attributes, deciding each afresh, and record the plan."""
    if isinstance(owner, type):
        _class_dict(owner)  # its probe attribute is there before the plan counts the names
    before = dict(vars(owner))
    if owner is Tensor:
        for name in list(before):
            if not _private_method(name):
                _wrap_attr(Tensor, name)
    else:
        _wrap_namespace(owner)
    after = vars(owner)
    rows = []
    in_place = []
    for name, value in after.items():
        if name in before and value is not before[name]:
            rows.append((name, before[name], value))
        elif type(value) is _FUNCTION and value in _SWAPS:
            in_place.append((name, value))
        else:  # wrapped before this call (register_namespace), or a name that came meanwhile
            original = _original(value)
            if original is not None:
                rows.append((name, original, value))
    names, originals, wrapped = (tuple(c) for c in zip(*rows)) if rows else ((), (), ())
    direct = isinstance(owner, type) and _direct_swap_ok(names, originals, wrapped)
    _PLANS[owner] = _Plan(len(after), names, originals, wrapped, direct, in_place)


def _private_method(name: str) -> bool:
    """A Tensor name that does not dispatch (not an op, or private)."""
    return name in _METHOD_EXCLUDE or name.startswith("_") and not name.startswith("__")


def _shared_excluded() -> frozenset:
    """Functions that a Tensor name which must not dispatch holds too (``x.numel()`` is
    ``ember.numel``): they dispatch by wrapper, not in place."""
    found = set()
    for name, value in vars(Tensor).items():
        if type(value) is _FUNCTION and _private_method(name):
            found.add(value)
    return frozenset(found)


def _deactivate() -> None:
    """Undo :func:`activate` (tests only: dispatch otherwise stays on for the process)."""
    with _LOCK:
        if _MODE_SCOPES[0]:  # a mode is entered (another thread's capture): it needs dispatch
            _KEEP_ACTIVE[0] = False
            return
        for owner in (Tensor, *_NAMESPACES):
            d = _names_of(owner)
            plan = _PLANS.get(owner)
            if plan is not None and plan.size == len(d) and d.items() >= plan.wrapped_items:
                if plan.originals:
                    _replay(owner, plan, plan.originals)
                continue
            _PLANS.pop(owner, None)
            for name, value in list(d.items()):
                original = _original(value)
                if original is not None:
                    setattr(owner, name, original)
        _swaps(False)
        _ACTIVE[0] = False
        _KEEP_ACTIVE[0] = False
        _LINGER[0] = 0


def mode_wants(flag: str) -> bool:
    """Whether a ``TorchFunctionMode`` active on this thread sets the class attribute
    ``flag`` (an Ember extension): fused kernels of other distributions that no mode needs to
    see, such as ember-nn's recurrent layer (``"_ember_sees_fused_layers"``), go through
    dispatch only for the modes that ask (``ember.utils.flop_counter`` counts them)."""
    modes = _STATE.modes
    return bool(modes) and any(getattr(m, flag, False) for m in modes)


def is_active() -> bool:
    """Whether dispatch is in effect: a class overriding ``__torch_function__`` (or
    :func:`activate`) turned it on, or a mode is entered. False while it only lingers after
    the last mode's exit (its check then runs the function as if it were off)."""
    return _ACTIVE[0] and not _LINGER[0]


def _linger_call() -> None:
    """A plain call through the check after the last mode's exit: the last of them turns
    dispatch off."""
    left = _LINGER[0] - 1
    _LINGER[0] = left
    if left <= 0:
        _settle()


def _settle() -> None:
    """Turn dispatch off now if it only lingers after the last mode's exit (what the
    ``_LINGER_CALLS``-th plain call does)."""
    with _LOCK:
        _LINGER[0] = 0
        if not _MODE_SCOPES[0] and not _KEEP_ACTIVE[0] and _ACTIVE[0]:
            _deactivate()


def _wrap_namespace(module) -> None:
    for name in getattr(module, "__all__", None) or [n for n in vars(module)
                                                     if not n.startswith("_")]:
        fn = getattr(module, name, None)
        if callable(fn) and not isinstance(fn, type) and getattr(fn, "__module__", "") \
                and fn.__module__.startswith("ember"):
            _wrap_attr(module, name)


def _owner_name(owner) -> str:
    """A namespace's Ember name: a module's import name (``ember``, which ``ember.as_torch``
    renames ``torch`` while it is installed), ``Tensor`` for the class."""
    spec = getattr(owner, "__spec__", None)
    return spec.name if spec is not None and not isinstance(owner, type) else owner.__name__


def register_namespace(module) -> None:
    """Have ``module``'s public functions dispatch ``__torch_function__`` once it is active
    (``ember.nn.functional`` registers itself; ``ember`` and ``ember.linalg`` are built in)."""
    with _LOCK:
        if module not in _NAMESPACES:
            _NAMESPACES.append(module)
        if _ACTIVE[0]:
            _wrap_namespace(module)


def on_subclass(cls) -> None:
    """Called by ``Tensor.__init_subclass__``: a subclass that overrides activates dispatch."""
    if _overrides(cls):
        activate()


# -- modes -------------------------------------------------------------------------------------

class TorchFunctionMode:
    """A per-thread handler of every dispatching call (``torch.overrides.TorchFunctionMode``).

    Subclass it and define ``__torch_function__(self, func, types, args=(), kwargs=None)``;
    ``with mode:`` routes this thread's calls of ember functions and Tensor methods (factories
    included) to it, innermost mode first. Inside the handler the mode is off: calling
    ``func(*args, **kwargs)`` runs the function (or the next mode); returning
    ``NotImplemented`` hands the call on. Other threads never see the mode.
    """

    #: False in a mode whose handler never reads ``types`` (vmap's): each call it sees then
    #: skips collecting the overriding types of its arguments (``()`` is passed)
    _ember_reads_types = True

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError(f"{type(self).__name__} must define __torch_function__")

    def __enter__(self):
        _enter_mode_scope()
        _STATE.modes = (*_STATE.modes, self)
        return self

    def __exit__(self, *exc):
        modes = _STATE.modes
        if not modes or modes[-1] is not self:
            raise RuntimeError("TorchFunctionMode exited out of order (modes are a stack)")
        _STATE.modes = modes[:-1]
        _exit_mode_scope()
        return False


def remove_mode(mode: TorchFunctionMode) -> None:
    """Take ``mode`` off this thread's stack wherever it is (a mode whose lifetime is not a
    ``with`` block: forward AD's under ``no_grad``); nothing when it is not there."""
    modes = _STATE.modes
    if mode not in modes:
        return
    if modes[-1] is mode:
        mode.__exit__(None, None, None)
        return
    _STATE.modes = tuple(m for m in modes if m is not mode)
    _exit_mode_scope()


class BaseTorchFunctionMode(TorchFunctionMode):
    """A mode whose handler runs the function: subclass it and override only what you need
    (``torch.overrides.BaseTorchFunctionMode``)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        return func(*args, **kwargs)


def _call_mode(public, args, kwargs):
    """Hand a call to this thread's innermost mode, with that mode off inside."""
    modes = _STATE.modes
    _STATE.modes = modes[:-1]
    try:
        mode = modes[-1]
        types = tuple(_dispatch_types(_relevant_args(args, kwargs))) \
            if mode._ember_reads_types else ()
        result = mode.__torch_function__(public, types, args, kwargs)
        if result is NotImplemented:
            result = public(*args, **kwargs)  # the next mode, or the subclasses
        return result
    finally:
        _STATE.modes = modes


def _enter_mode_scope() -> None:
    with _LOCK:
        if _LINGER[0]:
            _LINGER[0] = 0
            if not _MODE_SCOPES[0] and not _plans_current():
                # a name was replaced or added while dispatch lingered (a monkeypatch
                # between two modes): switch off and on again, which wraps it
                _deactivate()
        _MODE_SCOPES[0] += 1
        _wrap_all()


def _plans_current() -> bool:
    """Whether every owner's names are what they were when dispatch went on (one C-level
    dict comparison each, identity first: ~17 us for the ~1,800 names)."""
    for owner in (Tensor, *_NAMESPACES):
        snapshot = _SNAPSHOTS.get(owner)
        try:
            if snapshot is None or _names_of(owner) != snapshot:
                return False
        except Exception:  # a replaced value whose __eq__ refuses: replaced all the same
            return False
    return True


#: owner -> a copy of its names just after dispatch went on (what a mode entered while
#: dispatch lingers compares with: was anything patched since?)
_SNAPSHOTS: dict = {}


def _exit_mode_scope() -> None:
    with _LOCK:
        _MODE_SCOPES[0] -= 1
        if not _MODE_SCOPES[0] and not _KEEP_ACTIVE[0] and _ACTIVE[0]:
            _LINGER[0] = _LINGER_CALLS  # off after a few plain calls (see _LINGER)


# -- redispatch ----------------------------------------------------------------------------------

def _skip_one_hop_torch_function(func, types, args, kwargs):
    """Call ``func`` with its own ``__torch_function__`` check skipped: the calls it makes
    dispatch as usual (PyTorch's ``torch._C._skip_one_hop_torch_function``).

    An ember function's dispatching wrapper is skipped by calling the function behind it;
    any other function runs with a one-shot skip that the first dispatch check inside it
    (``has_torch_function*``, an ember function or Tensor method) takes. PyTorch raises
    ``RuntimeError`` when ``func`` makes no such check; Ember does not (some Tensor methods
    that dispatch in PyTorch, ``dim`` for one, make no check here), and drops the skip."""
    if kwargs is None:
        kwargs = {}
    original = undispatched(func)
    if original is not None and is_dispatching(func):
        return original(*args, **kwargs)
    state = _STATE
    if state.all_disabled:  # nothing dispatches inside anyway (or a skip is pending)
        return func(*args, **kwargs)
    state.all_disabled = _SKIP_ONE_HOP
    try:
        return func(*args, **kwargs)
    finally:
        if state.all_disabled is _SKIP_ONE_HOP:  # func made no dispatch check
            state.all_disabled = False


def redispatch_function(func, types, args, kwargs):
    """Skip one level of ``__torch_function__`` dispatch and call the function.

    For a Tensor subclass (or a mode) that wants to run a function's implementation while
    still intercepting the ember operations inside it: from ``__torch_function__``,
    ``redispatch_function(func, types, args, kwargs)`` calls ``func`` without calling the
    handler for ``func`` itself again. An ember function or Tensor method then returns plain
    tensors, so later operations on its results are not intercepted by a subclass; a mode
    that wants to see the inner calls enters itself again around the call
    (``with self: redispatch_function(...)``), as in PyTorch's examples."""
    return _skip_one_hop_torch_function(func, types, args, kwargs)


@contextlib.contextmanager
def enable_reentrant_dispatch():
    """PyTorch restores the ``__torch_dispatch__`` state saved on entering a
    ``__torch_dispatch__`` handler here. Ember has no ``__torch_dispatch__`` (its modes and
    subclasses work at the ``__torch_function__`` level), so there is no such state to
    restore and this context manager does nothing."""
    yield


# -- listings (torch.overrides' introspection helpers) -----------------------------------------

def get_ignored_functions() -> set:
    """Public callables that never dispatch (factories and helpers without tensor inputs)."""
    import ember

    names = ("tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "arange",
             "linspace", "logspace", "eye", "rand", "randn", "randint", "randperm",
             "manual_seed", "is_tensor", "get_default_dtype", "set_default_dtype",
             "is_grad_enabled", "no_grad", "enable_grad", "set_grad_enabled")
    return {getattr(ember, n) for n in names if hasattr(ember, n)}


def get_overridable_functions() -> dict:
    """``{namespace: [functions]}`` of everything that dispatches once active."""
    ignored = {getattr(f, "_ember_original", f) for f in get_ignored_functions()}
    out: dict = {}
    for module in _NAMESPACES:
        fns = [getattr(module, n) for n in (getattr(module, "__all__", None) or dir(module))
               if not n.startswith("_") and callable(getattr(module, n, None))
               and not isinstance(getattr(module, n), type)]
        out[module] = [f for f in fns if getattr(f, "_ember_original", f) not in ignored]
    out[Tensor] = [getattr(Tensor, n) for n in dir(Tensor)
                   if n not in _METHOD_EXCLUDE and callable(getattr(Tensor, n, None))
                   and not (n.startswith("_") and not n.startswith("__"))]
    return out


@functools.cache
def get_default_nowrap_functions() -> set:
    """Functions that ``Tensor.__torch_function__`` does not turn into the subclass: field
    accesses whose result keeps its identity (``a.grad is a.grad``). The getters of the
    Tensor properties among PyTorch's ``_base``, ``grad`` and ``_grad`` (Ember has
    ``grad``; ``_base`` is a plain attribute; none of them dispatches today)."""
    out = set()
    for name in ("_base", "grad", "_grad"):
        prop = inspect.getattr_static(Tensor, name, None)
        if isinstance(prop, property):
            out.add(prop.__get__)
    return out


def resolve_name(f) -> str | None:
    """The public name of a function passed to ``__torch_function__`` (``"ember.add"``,
    ``"ember.Tensor.add"``, ``"ember.nn.functional.relu"``, ``"ember.Tensor.T.__get__"``
    for a property getter, an op overload's ``str``), or None for a function Ember does not
    list. PyTorch's names start with ``torch``; these with ``ember``."""
    from ._library.ops import OpOverload

    if isinstance(f, OpOverload):
        return str(f)
    namespace = getattr(f, "_ember_namespace", None)  # where dispatch found it (_wrap_attr)
    if namespace is not None:
        name = getattr(f, "_ember_op_name", None) or getattr(f, "__name__", None)
        if namespace == Tensor.__name__:
            prop = inspect.getattr_static(Tensor, name, None)
            if isinstance(prop, property):
                return f"ember.Tensor.{name}.__get__"
            return f"ember.Tensor.{name}"
        return f"{namespace}.{name}"
    try:
        return _public_names().get(f)
    except TypeError:  # unhashable
        return None


#: function -> public name, and the namespaces it was built from (rebuilt when they change).
#: One function under several names (an alias, ``ember.absolute`` of ``ember.abs``; an
#: in-place op that is both ``ember.relu_`` and ``F.relu_``) gets the namespace's name.
_NAME_TABLE: list = [None, None]


def _public_names() -> dict:
    key = (len(_NAMESPACES), _ACTIVE[0])
    if _NAME_TABLE[1] == key:
        return _NAME_TABLE[0]
    table: dict = {}

    def add(value, name):  # a later name wins, as in PyTorch's table (F.conv2d is conv2d)
        # (but an alias, Tensor.ndimension = Tensor.dim, keeps the function's own name)
        original = _original(value)
        if isinstance(original, property):
            original = original.fget
        for f in (value, original) if original is not None else (value,):
            try:
                known = table.get(f)
                if known is None or not _named_as(known, f) or _named_as(name, f):
                    table[f] = name
            except TypeError:  # unhashable
                pass

    for name, value in vars(Tensor).items():
        if isinstance(value, property):
            add(value.__get__, f"ember.Tensor.{name}.__get__")
            add(value.fget, f"ember.Tensor.{name}.__get__")
        elif callable(value) and not isinstance(value, type):
            add(value, f"ember.Tensor.{name}")
    for module in _NAMESPACES:
        for name in getattr(module, "__all__", None) or dir(module):
            value = getattr(module, name, None)
            if not name.startswith("_") and callable(value) and not isinstance(value, type):
                add(value, f"{_owner_name(module)}.{name}")
    _NAME_TABLE[:] = [table, key]
    return table


def _named_as(name: str, f) -> bool:
    return name.rsplit(".", 1)[-1] == getattr(f, "__name__", None)


def get_testing_overrides() -> dict:
    """``{function: override}`` for every function :func:`get_overridable_functions` lists,
    each override taking the function's arguments (its ``inspect`` signature, checked on each
    call where there is one) and returning ``-1``.

    PyTorch writes its table by hand; Ember's is generated from the listing, so it covers
    exactly what dispatches (the functions as currently bound: the dispatching wrappers once
    dispatch is active)."""
    out: dict = {}
    for functions in get_overridable_functions().values():
        for f in functions:
            if f not in out:
                out[f] = _returns_minus_one(f)
    return out


def _returns_minus_one(f) -> Callable:
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):
        sig = None

    def override(*args, **kwargs):
        if sig is not None:
            sig.bind(*args, **kwargs)  # TypeError for arguments the function would refuse
        return -1

    name = getattr(f, "__name__", "override")
    override.__name__ = override.__qualname__ = name
    if sig is not None:
        override.__signature__ = sig
    return override


def is_tensor_method_or_property(func: Callable) -> bool:
    """Whether ``func`` is a method or property of ``Tensor`` (the ``func`` a
    ``__torch_function__`` receives for ``t.add(1)`` is ``Tensor.add``)."""
    name = getattr(func, "__name__", None)
    return name is not None and getattr(Tensor, name, None) is func
