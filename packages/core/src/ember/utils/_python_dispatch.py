"""``ember.utils._python_dispatch``: ``TorchDispatchMode``, PyTorch's modes that see the ATen
ops a region runs (``torch.utils._python_dispatch``).

::

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            print(func)                      # aten.addmm.default, aten.relu.default, ...
            return func(*args, **(kwargs or {}))

    with Log():
        model(x).sum().backward()

``func`` is an ``ember.ops.aten`` overload (``aten.add.Tensor``: ``func.overloadpacket``,
``func._schema``, ``func.name()``, ``func is torch.ops.aten.add.Tensor``), and ``args`` /
``kwargs`` are in its schema's form, as PyTorch passes them: positional arguments up to the
last one not at its default, keyword-only ones only where not at their default, a Python
number given for a Tensor argument as the number (``x + 1`` is ``aten.add.Tensor(x, 1)``).
Calling ``func`` runs the op (inside the handler the mode is off, so the calls the op makes
are not seen); what the handler returns is the op's result. Modes stack; the innermost
handles first, and calling ``func`` in it reaches the next.

How it works. Ember's ops compute and record autograd in one function, so there is no layer
below autograd to hook: a dispatch mode rides on ``ember.overrides``' function dispatch. While
one is entered, an internal ``TorchFunctionMode`` sits at the bottom of this thread's
function-mode stack (below any ``TorchFunctionMode``, as PyTorch's function modes run before
its dispatch modes) and turns each call it gets into its ATen overload with the arguments
bound to the schema. Consequences, where Ember differs from PyTorch:

* Autograd is above the handler in PyTorch and around it here: ``func(*args)`` records the
  op's backward as the Ember op does, and the handler's result carries it, so a handler that
  returns ``func``'s result (or a view or in-place change of it) keeps gradients flowing; a
  tensor the handler makes by other means has no history. Backward formulas run Ember ops,
  which the mode sees: Ember's formulas (``threshold_backward``, ``mul``, ``sum``), not always
  the ``*_backward`` kernels PyTorch's autograd calls.
* The ops are Ember's, one ATen overload each where ATen has that name: PyTorch's composite
  ops reach its dispatch modes decomposed (``linear`` as ``t`` and ``addmm``,
  ``conv2d`` as ``convolution``); here the mode sees ``aten.linear.default`` and
  ``aten.conv2d.default``. The composites whose decomposition a handler is likely to look for
  are lowered as PyTorch's: ``matmul`` of matrices and vectors (``mm``, ``mv``, ``dot``),
  ``reshape``/``flatten`` (``view``, or ``clone`` and ``_unsafe_view``), ``chunk``
  (``split.Tensor``), ``softmax``/``log_softmax`` (``_softmax``/``_log_softmax``), and
  ``2 / x`` (``reciprocal`` then ``mul``). Conversions that do nothing (``x.to``
  its own dtype, ``contiguous()`` of a contiguous tensor) dispatch nothing, as in PyTorch, and
  a conversion that copies is ``aten._to_copy.default``. Indexing is lowered as PyTorch's is:
  ``x[0, 1:]`` is ``aten.select.int`` then ``aten.slice.Tensor``, ``x[i]`` with a tensor
  ``aten.index.Tensor``, and ``x[0] = v`` a ``select`` then ``fill_``/``copy_``.
* An Ember function that ATen has no op for (``F.cross_entropy``, whose ATen op takes its
  reduction as an int) runs with the mode still on, so the Ember ops it calls are seen, as
  PyTorch's composite ops decompose; work it does in NumPy alone is not seen.
* Metadata reads (``size``, ``stride``, ``dim``, ``numel``, ``is_contiguous``, ``tolist``)
  and ``requires_grad_`` are not dispatched, as in PyTorch; neither are ``item`` (PyTorch's
  ``_local_scalar_dense``), ``ember.tensor``'s ``lift_fresh`` nor ``norm`` as
  ``linalg_vector_norm`` (here ``aten.norm.Scalar``).

Tensor subclasses with a ``__torch_dispatch__`` classmethod take the same route when an op
gets one of them (after the modes, as in PyTorch): ``ember.overrides`` sends the call here
and each ATen call goes to ``cls.__torch_dispatch__(func, types, args, kwargs)``, whose
``func(*args)`` on the tensors it unwraps runs the op. ``Tensor._make_wrapper_subclass(cls,
size, strides=..., dtype=..., device=...)`` makes the instances of a wrapper subclass: the
sizes, strides, dtype and device given, over a zero placeholder that the OS allocates lazily
and that no op computes with (``item()`` and ``bool()`` dispatch ``_local_scalar_dense``;
``tolist()``/``numpy()`` raise PyTorch's "doesn't have storage" error; ``repr`` shows the
metadata unless the class defines its own). Where Ember differs: autograd does not record
through a wrapper subclass (PyTorch's autograd sits above its ``__torch_dispatch__``), so
wrapper subclasses serve inference (quantized or logging tensors), not training; and an
Ember function without an ATen op, run as a composite, reaches the subclass only through the
Ember ops it calls: where its kernel computes with the placeholder itself, that raises a
RuntimeError naming the NumPy function (never zeros).
"""

from __future__ import annotations

import inspect
import threading
import warnings

from .. import overrides as _ov
from .._library.ops import OpOverload
from .._library.schema import FunctionSchema
from .._tensor import Tensor
from ..ops._aten import _FACTORY_MODULES, _NUMBERS, NUMBER_AS_TENSOR

__all__ = ["TorchDispatchMode", "BaseTorchDispatchMode", "is_in_torch_dispatch_mode",
           "is_traceable_wrapper_subclass", "transform_subclass", "return_and_correct_aliasing",
           "dispatch_subclasses", "_get_current_dispatch_mode",
           "_get_current_dispatch_mode_stack", "_push_mode", "_pop_mode",
           "_pop_mode_temporarily", "_disable_current_modes", "_len_torch_dispatch_stack"]


class _State(threading.local):
    stack: tuple = ()  # TorchDispatchMode stack, innermost last


_STATE = _State()


class TorchDispatchMode:
    """A per-thread handler of the ATen ops a region runs
    (``torch.utils._python_dispatch.TorchDispatchMode``): subclass it and define
    ``__torch_dispatch__(self, func, types, args=(), kwargs=None)``. See the module's
    docstring for what ``func`` and the arguments are, and where Ember differs."""

    def __init__(self, _dispatch_key=None):
        if _dispatch_key is not None:
            raise NotImplementedError("TorchDispatchMode(_dispatch_key=...): Ember has no "
                                      "dispatch keys")

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError(f"{type(self).__name__} must define __torch_dispatch__")

    def __enter__(self):
        _push_mode(self)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        stack = _STATE.stack
        if not stack or stack[-1] is not self:
            raise RuntimeError("TorchDispatchMode exited out of order (modes are a stack)")
        _pop_mode()
        return False

    @classmethod
    def push(cls, *args, **kwargs):
        warnings.warn("`Mode.push()` is no longer necessary and can be replaced with just "
                      "`with Mode()`", stacklevel=2)
        return cls(*args, **kwargs)

    @classmethod
    def is_infra_mode(cls) -> bool:
        return False


class BaseTorchDispatchMode(TorchDispatchMode):
    """A dispatch mode whose handler runs the op: override only what you need."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def is_in_torch_dispatch_mode(include_infra_modes: bool = True) -> bool:
    """Whether a dispatch mode is active on this thread."""
    return bool(_STATE.stack)


def _get_current_dispatch_mode():
    """The innermost dispatch mode of this thread, or None."""
    stack = _STATE.stack
    return stack[-1] if stack else None


def _get_current_dispatch_mode_stack() -> list:
    return list(_STATE.stack)


def _len_torch_dispatch_stack() -> int:
    return len(_STATE.stack)


def _push_mode(mode: TorchDispatchMode, k=None) -> None:
    """Push ``mode`` on this thread's stack (the first one puts the bridge at the bottom of
    the function-mode stack and turns function dispatch on)."""
    if k is not None:
        raise NotImplementedError("_push_mode(k=...): Ember has no dispatch keys")
    if not _STATE.stack:
        _ov._enter_mode_scope()
        fstate = _ov._STATE
        fstate.modes = (_BRIDGE, *fstate.modes)
    _STATE.stack = (*_STATE.stack, mode)


def _pop_mode(k=None):
    """Pop this thread's innermost dispatch mode and return it."""
    stack = _STATE.stack
    if not stack:
        raise RuntimeError("Trying to pop from an empty mode stack")
    _STATE.stack = stack[:-1]
    if len(stack) == 1:
        fstate = _ov._STATE
        fstate.modes = tuple(m for m in fstate.modes if m is not _BRIDGE)
        _ov._exit_mode_scope()
    return stack[-1]


class _PopModeTemporarily:
    def __init__(self, k=None):
        self.k = k

    def __enter__(self):
        self.mode = _pop_mode(self.k)
        return self.mode

    def __exit__(self, *exc):
        _push_mode(self.mode)
        return False


def _pop_mode_temporarily(k=None):
    """``with _pop_mode_temporarily() as mode:`` the innermost mode, off inside the block."""
    return _PopModeTemporarily(k)


class _DisableCurrentModes:
    def __enter__(self):
        modes = []
        while _STATE.stack:
            modes.append(_pop_mode())
        self.modes = modes[::-1]
        return self.modes

    def __exit__(self, *exc):
        for m in self.modes:
            _push_mode(m)
        return False


def _disable_current_modes():
    """``with _disable_current_modes() as modes:`` every dispatch mode of this thread off."""
    return _DisableCurrentModes()


def is_traceable_wrapper_subclass(t) -> bool:
    """Whether ``t`` is a wrapper subclass (``Tensor._make_wrapper_subclass``) whose class
    defines ``__tensor_flatten__`` and ``__tensor_unflatten__``."""
    from .._tensor import _WrapperPlaceholder

    return isinstance(t, Tensor) and t._data.__class__ is _WrapperPlaceholder \
        and hasattr(t, "__tensor_flatten__") and hasattr(type(t), "__tensor_unflatten__")


def transform_subclass(t, callback, outer_size=None, outer_stride=None):
    """A new instance of ``t``'s wrapper subclass with each inner tensor ``x`` named by
    ``__tensor_flatten__`` replaced by ``callback(name, x)``."""
    attrs, ctx = t.__tensor_flatten__()
    inner = {a: callback(a, getattr(t, a)) for a in attrs}
    return type(t).__tensor_unflatten__(inner, ctx, outer_size if outer_size is not None
                                        else t.size(), outer_stride if outer_stride
                                        is not None else t.stride())


def return_and_correct_aliasing(func, args, kwargs, out):
    """``out``: PyTorch makes a wrapper subclass's outputs alias its inputs' storage as the
    op's schema says; a wrapper subclass here has no storage of its own to alias, and an
    in-place op's handler returns the input it changed."""
    return out


# -- the bridge: a function mode that hands each call to the dispatch modes as ATen ----------

def _call_handler(func, args: tuple, kwargs: dict):
    """Hand one ATen call to the innermost dispatch mode, with that mode off inside (the
    next one, if any, then sees what its handler calls); with no mode, to the
    ``__torch_dispatch__`` of the Tensor subclasses among the arguments; with neither, run
    it."""
    stack = _STATE.stack
    if not stack:
        return _call_subclasses(func, args, kwargs)
    mode = stack[-1]
    fstate = _ov._STATE
    saved = fstate.modes
    _STATE.stack = stack[:-1]
    fstate.modes = (_BRIDGE,) if len(stack) > 1 else ()
    try:
        types = tuple(dict.fromkeys(type(a) for a in _tensors(args, kwargs)
                                    if type(a) is not Tensor))
        result = mode.__torch_dispatch__(func, types, args, kwargs)
        if result is NotImplemented:
            result = func(*args, **kwargs)
        return result
    finally:
        _STATE.stack = stack
        fstate.modes = saved


def _call_subclasses(func, args: tuple, kwargs: dict):
    types = _ov._dispatch_types([a for a in _tensors(args, kwargs)
                                 if _ov.has_torch_dispatch(type(a))])
    if not types:
        return func(*args, **kwargs)
    for tp in types:
        result = tp.__torch_dispatch__(func, tuple(types), args, kwargs)
        if result is not NotImplemented:
            return result
    raise TypeError(f"Multiple dispatch failed for '{func}'; all __torch_dispatch__ handlers "
                    f"returned NotImplemented:\n\n  - tensor subclass "
                    + "\n  - tensor subclass ".join(str(t) for t in types))


def dispatch_subclasses(func, args: tuple, kwargs: dict):
    """Run a call of an Ember function whose arguments include Tensor subclasses with a
    ``__torch_dispatch__`` (``ember.overrides.handle_torch_function`` sends them here): as
    the ATen calls a dispatch mode would see, each handed to their ``__torch_dispatch__``."""
    return _route(func, args, kwargs or {})


def _tensors(args, kwargs):
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from (x for x in a if isinstance(x, Tensor))


class _Bridge(_ov.TorchFunctionMode):
    """The function mode under every ``TorchFunctionMode`` while a dispatch mode is on (an
    internal mode: ``torch._C._len_torch_function_stack`` does not count it)."""

    _ember_reads_types = False
    _ember_internal = True

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not _STATE.stack:
            return func(*args, **kwargs)
        return _route(func, args, kwargs)


_BRIDGE = _Bridge()


def _route(func, args: tuple, kwargs: dict):
    """An Ember function's call as ATen calls, each handed to ``_call_handler``."""
    if isinstance(func, OpOverload):  # ``aten.add.Tensor(x, y)`` (or a library op) called
        return _call_handler(func, args, kwargs)  # itself: in its schema's form already
    name = getattr(func, "__name__", "")
    if name in _NOT_DISPATCHED:
        if not any(_ov.has_torch_dispatch(type(a)) for a in _tensors(args, kwargs)):
            return func(*args, **kwargs)
        with _ov.DisableTorchFunction():  # (a __torch_dispatch__ subclass: its own metadata)
            return func(*args, **kwargs)
    lower = _LOWERINGS.get(name)
    if lower is not None:
        return lower(func, args, kwargs)
    call = _aten_call(func, _ALIASES.get(name, name), args, kwargs)
    if call is None:
        return _composite(func, args, kwargs)
    overload, a, kw = call
    return _ember_result(name, _call_handler(overload, a, kw))


def _composite(func, args, kwargs):
    """Run ``func`` with the bridge on, so that the Ember ops it calls are seen (PyTorch's
    composite ops decompose into the ops they call)."""
    fstate = _ov._STATE
    saved = fstate.modes
    fstate.modes = (_BRIDGE,) if _STATE.stack else ()
    try:
        return _ov._skip_one_hop_torch_function(func, (), args, kwargs)
    finally:
        fstate.modes = saved


#: the function names that PyTorch does not hand to a dispatch mode (metadata; a flag)
_NOT_DISPATCHED = frozenset((
    "size", "stride", "dim", "ndimension", "numel", "nelement", "is_contiguous",
    "storage_offset", "element_size", "is_floating_point", "is_complex", "is_signed",
    "requires_grad_", "retain_grad", "register_hook", "data_ptr", "get_device", "tolist",
    "numpy", "untyped_storage", "__len__", "__repr__", "__format__", "__bool__",
    "__index__", "__int__", "__float__", "__hash__", "__reduce_ex__", "__deepcopy__"))

#: Ember function names that are another ATen op's
_ALIASES = {"__iadd__": "add_", "__isub__": "sub_", "__imul__": "mul_",
            "__itruediv__": "div_", "__radd__": "add", "__rmul__": "mul", "__rsub__": "rsub",
            "__and__": "bitwise_and", "__or__": "bitwise_or", "__xor__": "bitwise_xor",
            "__iand__": "bitwise_and_", "__ior__": "bitwise_or_", "__ixor__": "bitwise_xor_",
            "__floordiv__": "floor_divide", "__mod__": "remainder", "__pow__": "pow",
            "__truediv__": "div", "__matmul__": "matmul", "__lshift__": "bitwise_left_shift",
            "__rshift__": "bitwise_right_shift", "__invert__": "bitwise_not",
            "__neg__": "neg", "__abs__": "abs", "__eq__": "eq", "__ne__": "ne", "__lt__": "lt",
            "__le__": "le", "__gt__": "gt", "__ge__": "ge"}

#: function -> the signatures its arguments are bound with (cached: binding runs per call)
_SIGNATURES: dict = {}


def _signatures(func, name: str) -> tuple:
    """The signatures a call of ``func`` is bound with, in order: the one it declares
    (``inspect.signature``), the one its body has (``x.view(2, 3)``'s ``*shape``), and for
    an in-place variant made from its op (``add_(self, *args, **kwargs)``), the op's."""
    sigs = _SIGNATURES.get(func)
    if sigs is None:
        sigs = []
        candidates = [func, _ov.undispatched(func)]
        if name.endswith("_") and not name.endswith("__"):
            from ..ops.registry import OPS

            info = OPS.get(name[:-1])
            if info is not None:
                candidates.append(info.fn)
        for c in candidates:
            if c is None:
                continue
            try:
                sig = inspect.signature(c)
            except (TypeError, ValueError):
                continue
            kinds = [p.kind for p in sig.parameters.values()]
            if inspect.Parameter.VAR_KEYWORD in kinds and inspect.Parameter.VAR_POSITIONAL \
                    in kinds:
                continue  # a wrapper's (*args, **kwargs): binds anything, names nothing
            if sig not in sigs:
                sigs.append(sig)
        sigs = _SIGNATURES[func] = tuple(sigs)
    return sigs


def _packet(name: str):
    from ..ops import _aten

    if name not in _aten._index():
        return None
    from ..ops import aten

    return getattr(aten, name)


def _aten_call(func, name: str, args: tuple, kwargs: dict):
    """``(overload, args, kwargs)``: the ATen overload of ``name`` that takes the call's
    arguments, and the arguments in its schema's form; None where none does."""
    packet = _packet(name)
    if packet is None:
        return None
    sigs = _signatures(func, name)
    tries = [args]
    if len(args) > 2 and all(a.__class__ is int for a in args[1:]):
        tries.append((args[0], list(args[1:])))  # x.expand(2, 4, 3): ``size`` as numbers
    overloads = sorted(packet._overloads.values(), key=lambda o: o.overload_name != "")
    preferred = _PREFERRED.get(name)
    if preferred:
        overloads.sort(key=lambda o: o.overload_name != preferred)
    fill = None
    if name.startswith("new_"):  # PyTorch's parser fills these
        fill = {"pin_memory": False}
    elif getattr(func, "__module__", None) in _FACTORY_MODULES:
        from .. import get_default_device

        fill = {"device": get_default_device(), "pin_memory": False}
    for sig, a in ((sig, a) for a in tries for sig in sigs):
        try:
            bound = sig.bind(*a, **kwargs).arguments
        except TypeError:
            continue
        call = _pick(overloads, sig, bound, name, fill)
        if call is not None:
            return call
    if not sigs:  # ``x.uniform_(-b, b)``: a method taking ``*args``, in the schema's order
        for op in overloads:
            params = [p for p in op.schema.arguments if not p.kwarg_only]
            if len(args) > len(params) or any(k not in {p.name for p in op.schema.arguments}
                                               for k in kwargs):
                continue
            bound = {**{p.name: v for p, v in zip(params, args)}, **kwargs}
            for wrap in (False, True):
                fitted = _fit(op.schema, bound, None, wrap, fill)
                if fitted is not None:
                    return (op.overload, *fitted)
    return None


def _pick(overloads, sig, bound: dict, name: str, fill):
    varargs = None
    for key, value in list(bound.items()):
        kind = sig.parameters[key].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            varargs = key
            if len(value) == 1 and not isinstance(value[0], int):  # x.view((2, 3))
                value = value[0]
            bound[key] = list(value) if isinstance(value, tuple) else value
        elif kind is inspect.Parameter.VAR_KEYWORD:
            del bound[key]
            bound.update(value)
    from ..ops._deprecated import NO_ARG

    # (Ember's private parameters, ``_stacklevel`` and the deprecated overloads', are not
    # ATen's: left out when unset or at their defaults)
    bound = {k: v for k, v in bound.items()
             if v is not NO_ARG and not (k.startswith("_") and k in sig.parameters
                                         and sig.parameters[k].default == v)
             and k != "_stacklevel"}
    # a number for a Tensor argument only where no overload takes it as a Scalar, except
    # for the ops whose Python binding has no Scalar overload (``x + 1`` is ``add.Tensor``)
    wrapped = overloads and overloads[0].schema.name in NUMBER_AS_TENSOR
    for wrap in ((True,) if wrapped else (False, True)):
        for op in overloads:
            fitted = _fit(op.schema, bound, varargs, wrap, fill)
            if fitted is not None:
                return (op.overload, *fitted)
    return None


#: the overload PyTorch's binding picks where several take the arguments
_PREFERRED = {"var": "correction", "std": "correction", "var_mean": "correction",
              "std_mean": "correction"}
_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}
#: ATen argument name -> the names Ember's functions (as PyTorch's Python API) give it
_ALT_NAMES = {"self": ("input", "tensor"), "input": ("self",),
              "split_size": ("split_size_or_sections",),
              "split_sizes": ("split_size_or_sections",)}


def _fit(schema, bound: dict, varargs, wrap: bool, fill: dict | None):
    """The call's arguments in ``schema``'s form (PyTorch's: trailing positional arguments
    and keyword-only ones at their defaults left out), or None where they do not fit.
    ``varargs``: the name of the Ember function's ``*args`` parameter, if any; ``wrap``:
    whether a number may stand for a Tensor; ``fill``: values for arguments not given
    (PyTorch's parser gives a factory's ``device`` and ``pin_memory``)."""
    from ..ops._aten import _at_default

    used = set()
    pos: list = []
    kw: dict = {}
    pending: list = []
    leftover = [k for k in bound]
    names = {a.name for a in schema.arguments}
    for i, a in enumerate(schema.arguments):
        key = a.name if a.name in bound else None
        if key is None:  # Ember's (PyTorch's Python) name for it: ``input`` for ``self``
            key = next((k for k in _ALT_NAMES.get(a.name, ()) if k in bound and k not in names
                        and k not in used), None)
        if key is None:
            if not a.has_default:
                # a method's ``*shape``/``*dims`` for ATen's ``size``/``dims``
                if varargs is None or varargs not in leftover:
                    return None
                key = varargs
            elif fill and a.name in fill:
                value, given = fill[a.name], True
            else:
                value, given = a.default, False
        if key is not None:
            value, given = bound[key], True
            used.add(key)
            if key in leftover:
                leftover.remove(key)
            t = a.type
            if a.name == "reduction" and t.base == "int" and isinstance(value, str) \
                    and value in _REDUCTIONS:
                value = _REDUCTIONS[value]  # F's string as ATen's ``at::Reduction``
            if t.is_list and value.__class__ is int and t.base in ("int", "SymInt"):
                value = [value] * (t.list_size or 1)  # x.view(12), x.sum(0), kernel_size=2
            if not (wrap and t.base == "Tensor" and not t.is_list
                    and value.__class__ in _NUMBERS):
                try:  # (the base class's: ``AtenSchema`` lets a number stand for a Tensor)
                    value = FunctionSchema._convert(schema, a, value, i)
                except RuntimeError:
                    return None
        at_default = not given or (key is not None and _at_default(a, value))
        if a.kwarg_only:
            if not at_default:
                kw[a.name] = value
        elif at_default:
            pending.append(value)
        else:
            pos += pending
            pending.clear()
            pos.append(value)
    if leftover:
        return None  # an argument the overload does not take
    return tuple(pos), kw


def _ember_result(name: str, result):
    """An ATen result in the form the Ember function returns: a named tuple where it has one
    (``max``'s values and indices), a tuple for ATen's ``Tensor[]``."""
    if isinstance(result, list):
        return tuple(result)
    if isinstance(result, tuple) and result.__class__ is tuple:
        from .. import return_types

        cls = getattr(return_types, name, None)
        if cls is not None and len(getattr(cls, "_fields", ())) == len(result):
            return cls(*result)
    return result


# -- lowerings: Ember calls that reach PyTorch's dispatch as other ATen calls ----------------

def _op(name: str, overload: str = "default"):
    return getattr(_packet(name), overload)


_INT64_MAX = 2 ** 63 - 1


def _basic_index(index) -> tuple | None:
    """``index`` as a tuple of ints, slices, None and Ellipsis, or None where it is not a
    basic index."""
    if not isinstance(index, tuple):
        index = (index,)
    for i in index:
        if not (i is None or i is Ellipsis or isinstance(i, slice)
                or (isinstance(i, int) and not isinstance(i, bool))):
            return None
    return index


def _lowered_view(x, index: tuple, lone: bool = False):
    """PyTorch's lowering of a basic index: ``select.int``, ``slice.Tensor``,
    ``unsqueeze.default`` in order, each handed to the dispatch mode; ``alias`` where none
    is needed. ``lone``: the index is one slice, not a tuple (PyTorch slices even ``x[:]``)."""
    n_real = sum(1 for i in index if i is not None and i is not Ellipsis)
    if n_real > x.dim() or any(isinstance(i, slice) and i.step is not None and i.step <= 0
                               for i in index):
        return None  # the Ember op raises PyTorch's error
    dim, out = 0, x
    for item in index:
        if item is Ellipsis:
            dim += x.dim() - n_real
        elif item is None:
            out = _call_handler(_op("unsqueeze"), (out, dim), {})
            dim += 1
        elif isinstance(item, int):
            out = _call_handler(_op("select", "int"), (out, dim, item), {})
        else:
            start, stop, step = item.start, item.stop, item.step
            if start is None and stop is None and step in (None, 1) and not lone:
                dim += 1  # a whole dimension in a tuple: PyTorch skips it
                continue
            args = (out, dim, 0 if start is None else start,
                    _INT64_MAX if stop is None else stop)
            out = _call_handler(_op("slice", "Tensor"),
                                args + ((step,) if step not in (None, 1) else ()), {})
            dim += 1
    if out is x:
        out = _call_handler(_op("alias"), (x,), {})
    return out


def _tensor_index(index):
    """``[i, j, ...]`` for an index of tensors only (``aten.index.Tensor``), else None."""
    items = index if isinstance(index, tuple) else (index,)
    if items and all(isinstance(i, Tensor) for i in items):
        return list(items)
    return None


def _getitem(func, args, kwargs):
    x, index = args
    if isinstance(x, Tensor):
        basic = _basic_index(index)
        if basic is not None:
            out = _lowered_view(x, basic, isinstance(index, slice))
            if out is not None:
                return out
        tensors = _tensor_index(index)
        if tensors is not None:
            return _call_handler(_op("index", "Tensor"), (x, tensors), {})
    return _composite(func, args, kwargs)


def _setitem(func, args, kwargs):
    x, index, value = args
    if isinstance(x, Tensor):
        basic = _basic_index(index)
        if basic is not None and (isinstance(value, (*_NUMBERS, Tensor))):
            view = _lowered_view(x, basic)
            if view is not None:
                if isinstance(value, Tensor):
                    _call_handler(_op("copy_"), (view, value), {})
                else:
                    _call_handler(_op("fill_", "Scalar"), (view, value), {})
                return None
        tensors = _tensor_index(index)
        if tensors is not None and isinstance(value, Tensor):
            _call_handler(_op("index_put_"), (x, tensors, value), {})
            return None
    return _composite(func, args, kwargs)


def _conversion(func, args, kwargs):
    """``to``, ``float``, ``cpu``, ...: nothing where the result is the tensor itself (as in
    PyTorch, whose ``to`` returns ``self`` before any kernel), else ``aten._to_copy``."""
    x = args[0] if args else None
    with _disable_bridge():
        out = func(*args, **kwargs)
    if not isinstance(x, Tensor) or out is x or not isinstance(out, Tensor):
        return out
    kw = {}
    if out.dtype != x.dtype:
        kw["dtype"] = out.dtype
    if out.device != x.device:
        kw["device"] = out.device
    return _call_handler(_op("_to_copy"), (x,), kw)


def _contiguous(func, args, kwargs):
    x = args[0]
    with _disable_bridge():
        out = func(*args, **kwargs)
    if out is x:
        return out
    from .. import contiguous_format

    return _call_handler(_op("clone"), (x,), {"memory_format": contiguous_format})


class _disable_bridge:
    """Run a call with no function dispatch at all (no mode of this thread's stack, no
    subclass): the lowerings' probes of what a call would give (the bridge is at the
    stack's bottom, under every user mode: inside a handler the stack above is off)."""

    def __enter__(self):
        from .._tensor import PLACEHOLDER_PROBE

        fstate = _ov._STATE
        self.saved = fstate.modes, fstate.all_disabled, PLACEHOLDER_PROBE.on
        fstate.modes = ()
        fstate.all_disabled = True  # (and no subclass's dispatch: the call is a probe)
        PLACEHOLDER_PROBE.on = True  # (a wrapper subclass's placeholder may be computed)

    def __exit__(self, *exc):
        from .._tensor import PLACEHOLDER_PROBE

        _ov._STATE.modes, _ov._STATE.all_disabled, PLACEHOLDER_PROBE.on = self.saved
        return False


def _rpow(func, args, kwargs):
    x, other = args
    if isinstance(x, Tensor) and other.__class__ in _NUMBERS:
        return _call_handler(_op("pow", "Scalar"), (other, x), {})
    return _composite(func, args, kwargs)


def _rtruediv(func, args, kwargs):
    x, other = args
    if isinstance(x, Tensor) and other.__class__ in _NUMBERS:  # PyTorch's ``reciprocal() * other``
        r = _call_handler(_op("reciprocal"), (x,), {})
        return _call_handler(_op("mul", "Tensor"), (r, other), {})
    return _composite(func, args, kwargs)


def _reshape(func, args, kwargs):
    """``reshape``/``flatten`` as PyTorch's composites run them: nothing where the result is
    the tensor itself, ``view`` where it can be one, else a contiguous ``clone`` and
    ``_unsafe_view``."""
    x = args[0] if args else None
    with _disable_bridge():
        out = func(*args, **kwargs)
    if not isinstance(x, Tensor) or out is x or not isinstance(out, Tensor):
        return out
    shape = list(out.shape)
    if out._base is not None:
        return _call_handler(_op("view"), (x, shape), {})
    from .. import contiguous_format

    c = _call_handler(_op("clone"), (x,), {"memory_format": contiguous_format})
    return _call_handler(_op("_unsafe_view"), (c, shape), {})


def _softmax(func, args, kwargs):
    """``softmax``/``log_softmax`` as ``_softmax``/``_log_softmax`` (their composites) where
    no dtype is asked for."""
    name = getattr(func, "__name__", "")
    call = _aten_call(func, name, args, kwargs)
    if call is not None:
        overload, a, kw = call
        if overload.overloadpacket is _packet(name) and len(a) == 2 and not kw:
            x, dim = a
            return _call_handler(_op("_" + name), (x, dim, False), {})
        return _call_handler(overload, a, kw)
    return _composite(func, args, kwargs)


def _chunk(func, args, kwargs):
    """``chunk`` as PyTorch's composite: ``split.Tensor`` by ``ceil(size / chunks)``."""
    call = _aten_call(func, "chunk", args, kwargs)
    if call is None:
        return _composite(func, args, kwargs)
    x, chunks, dim = (*call[1], 0)[:3] if len(call[1]) < 3 else call[1]
    if not isinstance(x, Tensor) or chunks <= 0 or x.dim() == 0:
        return _call_handler(*call)  # the op raises PyTorch's error
    size = x.shape[dim]
    split_size = max(-(-size // chunks), 1) if size else 0
    return tuple(_call_handler(_op("split", "Tensor"),
                               (x, split_size) + ((dim,) if dim else ()), {}))


def _matmul(func, args, kwargs):
    """``matmul`` as PyTorch's composite calls it: ``mm``, ``mv``, ``dot``, a batch of
    matrices times a matrix folded into one ``mm``; other shapes as ``matmul``."""
    if len(args) == 2 and not kwargs and isinstance(args[0], Tensor) \
            and isinstance(args[1], Tensor):
        out = _matmul_call(*args)
        if out is not None:
            return out
    return _mapped(func, "matmul", args, kwargs)


def _bound(func, args, kwargs) -> dict | None:
    """The call's arguments by the names of ``func``'s signature, defaults filled in."""
    for sig in _signatures(func, getattr(func, "__name__", "")):
        try:
            b = sig.bind(*args, **kwargs)
        except TypeError:
            continue
        b.apply_defaults()
        return b.arguments
    return None


def _ntuple(value, n: int) -> list:
    return [value] * n if isinstance(value, int) else list(value)


def _h(name: str, overload: str, *args, **kwargs):
    return _call_handler(_op(name, overload), args, kwargs)


def _linear(func, args, kwargs):
    """``linear`` as PyTorch's composite: ``t`` and ``addmm``/``mm``, a contiguous input of
    more dims folded into rows with ``view``."""
    b = _bound(func, args, kwargs)
    if b is not None and all(isinstance(b[k], Tensor) for k in ("input", "weight")) \
            and (b["bias"] is None or isinstance(b["bias"], Tensor)) and b["weight"].dim() == 2:
        x, w, bias = b["input"], b["weight"], b["bias"]
        if x.dim() == 2:
            wt = _h("t", "default", w)
            return _h("mm", "default", x, wt) if bias is None \
                else _h("addmm", "default", bias, x, wt)
        if x.dim() > 2 and bias is not None and x.is_contiguous():
            rows = _h("view", "default", x, [-1 if 0 in x.shape else x.numel() // x.shape[-1],
                                             x.shape[-1]])
            out = _h("addmm", "default", bias, rows, _h("t", "default", w))
            return _h("view", "default", out, [*x.shape[:-1], w.shape[0]])
        if x.dim() > 2 and bias is None:
            return _matmul_call(x, _h("t", "default", w))
    return _mapped(func, "linear", args, kwargs)


def _mapped(func, name: str, args, kwargs):
    """The call as its own ATen op (or run as a composite where ATen has none)."""
    call = _aten_call(func, name, args, kwargs)
    return _composite(func, args, kwargs) if call is None else _call_handler(*call)


def _matmul_call(a, b):
    """PyTorch's ``matmul`` of two tensors in ATen calls, None where it has no rule here."""
    op = {(2, 2): "mm", (2, 1): "mv", (1, 1): "dot"}.get((a.dim(), b.dim()))
    if op is not None:
        return _h(op, "default", a, b)
    if a.dim() >= 3 and b.dim() == 2 and a.is_contiguous():  # folded into one ``mm``
        rows = _h("view", "default", a, [a.numel() // a.shape[-1], a.shape[-1]])
        out = _h("mm", "default", rows, b)
        return _h("_unsafe_view", "default", out, [*a.shape[:-1], b.shape[-1]])
    return None


def _conv(func, args, kwargs):
    """``conv1d``/``conv2d``/``conv3d`` with numeric padding as ``aten.convolution``."""
    b = _bound(func, args, kwargs)
    name = getattr(func, "__name__", "")
    if b is not None and isinstance(b["input"], Tensor) and isinstance(b["weight"], Tensor) \
            and not isinstance(b["padding"], str):
        n = int(name[4])
        x = b["input"]
        if x.dim() == n + 2:  # (an unbatched input: the op's own call)
            return _h("convolution", "default", x, b["weight"], b["bias"],
                      _ntuple(b["stride"], n), _ntuple(b["padding"], n),
                      _ntuple(b["dilation"], n), False, [0] * n, b["groups"])
    return _mapped(func, name, args, kwargs)


def _first(name, lowered):
    """A lowering whose ATen op returns several results, of which the call is the first."""
    def lower(f, args, kwargs):
        b = _bound(f, args, kwargs)
        call = lowered(b) if b is not None else None
        if call is None:
            return _mapped(f, name, args, kwargs)
        return _call_handler(_op(*call[0]), call[1], {})[0]
    return lower


def _layer_norm_call(b):
    if isinstance(b["input"], Tensor):
        return (("native_layer_norm", "default"),
                (b["input"], list(b["normalized_shape"]) if not isinstance(
                    b["normalized_shape"], int) else [b["normalized_shape"]],
                 b["weight"], b["bias"], b["eps"]))
    return None


def _batch_norm_call(b):
    if isinstance(b["input"], Tensor) and b["running_mean"] is not None \
            and b["running_var"] is not None:
        return (("native_batch_norm", "default"),
                (b["input"], b["weight"], b["bias"], b["running_mean"], b["running_var"],
                 b["training"], b["momentum"], b["eps"]))
    return None


def _max_pool(n: int):
    def call(b):
        x = b["input"]
        if not isinstance(x, Tensor) or b.get("return_indices") or x.dim() != n + 2:
            return None
        stride = b["stride"]
        stride = [] if stride is None or stride == [] else _ntuple(stride, n)
        a = [x, _ntuple(b["kernel_size"], n), stride, _ntuple(b["padding"], n),
             _ntuple(b["dilation"], n), b["ceil_mode"]]
        defaults = [None, None, [], [0] * n, [1] * n, False]
        while len(a) > 2 and a[-1] == defaults[len(a) - 1]:
            a.pop()
        return ((f"max_pool{n}d_with_indices", "default"), tuple(a))
    return call


def _adaptive_avg_pool2d(func, args, kwargs):
    """Output size 1 as PyTorch's composite: ``mean.dim`` over the last two dims."""
    b = _bound(func, args, kwargs)
    if b is not None and isinstance(b["input"], Tensor) and b["output_size"] in (1, (1, 1), [1, 1]):
        return _h("mean", "dim", b["input"], [-1, -2], True)
    return _mapped(func, "adaptive_avg_pool2d", args, kwargs)


def _embedding(func, args, kwargs):
    """``F.embedding`` (indices first) as ``aten.embedding`` (weight first)."""
    b = _bound(func, args, kwargs)
    if b is not None and isinstance(b["weight"], Tensor) and isinstance(b["input"], Tensor) \
            and b["max_norm"] is None:
        extra = [] if b["padding_idx"] is None else [b["padding_idx"]]
        return _h("embedding", "default", b["weight"], b["input"], *extra)
    return _composite(func, args, kwargs)


def _pad(func, args, kwargs):
    """Constant padding as ``aten.constant_pad_nd``."""
    b = _bound(func, args, kwargs)
    if b is not None and b["mode"] == "constant" and isinstance(b["input"], Tensor):
        value = 0.0 if b["value"] is None else b["value"]
        return _h("constant_pad_nd", "default", b["input"], list(b["pad"]), value)
    return _mapped(func, "pad", args, kwargs)


def _cross_entropy(func, args, kwargs):
    """Class-index ``cross_entropy`` as PyTorch's composite: ``_log_softmax`` then
    ``nll_loss`` (PyTorch's ``nll_loss_forward``, which Ember's ATen table lacks)."""
    b = _bound(func, args, kwargs)
    if b is not None and isinstance(b["input"], Tensor) and isinstance(b["target"], Tensor) \
            and not b["target"].is_floating_point() and not b["label_smoothing"] \
            and b["size_average"] is None and b["reduce"] is None and b["input"].dim():
        x = b["input"]
        lsm = _h("_log_softmax", "default", x, 1 if x.dim() > 1 else 0, False)
        from ..nn import functional as F

        return _mapped(F.nll_loss, "nll_loss", (lsm, b["target"]),
                       {"weight": b["weight"], "ignore_index": b["ignore_index"],
                        "reduction": b["reduction"]})
    return _composite(func, args, kwargs)


def _matrix_transpose(func, args, kwargs):
    """``mT`` (and ``mH``, ``adjoint()`` of a real tensor) as PyTorch's composite:
    ``transpose.int(x, -2, -1)``."""
    x = args[0] if len(args) == 1 and not kwargs else None
    if isinstance(x, Tensor) and x.dim() >= 2 and not x.is_complex():
        return _h("transpose", "int", x, -2, -1)
    return _mapped(func, getattr(func, "__name__", ""), args, kwargs)


def _arange(func, args, kwargs):
    """``arange(end)``, ``arange(start, end)``, ``arange(start, end, step)`` as the ATen
    overload of that form (``default``, ``start``, ``start_step``)."""
    rest = {k: v for k, v in kwargs.items() if k not in ("start", "end", "step")}
    names = {1: ("end",), 2: ("start", "end"), 3: ("start", "end", "step")}.get(len(args))
    if names is None or rest.get("out") is not None or rest.get("requires_grad"):
        return _mapped(func, "arange", args, kwargs)
    bound = dict(zip(names, args))
    bound.update({k: kwargs[k] for k in ("start", "end", "step") if k in kwargs})
    if "end" not in bound:
        return _mapped(func, "arange", args, kwargs)
    if bound.get("step", 1) == 1 and "step" in bound and len(args) < 3:
        del bound["step"]
    overload = ("start_step" if "step" in bound else "start" if "start" in bound
                else "default")
    bound.update({k: v for k, v in rest.items() if k != "requires_grad"})
    from .. import get_default_device

    schema = _op("arange", overload)._schema
    fitted = _fit(schema, bound, None, False, {"device": get_default_device(),
                                               "pin_memory": False})
    if fitted is None:
        return _mapped(func, "arange", args, kwargs)
    return _call_handler(_op("arange", overload), *fitted)


def _tensor_factory(func, args, kwargs):
    """``ember.tensor(data)`` as PyTorch runs it: the tensor made from the data, then
    ``aten.lift_fresh`` handed to the dispatch modes (a fake mode makes it fake there)."""
    with _disable_bridge():
        t = func(*args, **kwargs)
    if not isinstance(t, Tensor):
        return t
    out = _call_handler(_op("lift_fresh"), (t,), {})
    if isinstance(out, Tensor) and t.requires_grad and not out.requires_grad:
        out.requires_grad_(True)
    return out


def _expand_as(func, args, kwargs):
    x, other = (*args, *kwargs.values())[:2]
    if isinstance(x, Tensor) and isinstance(other, Tensor):
        return _h("expand", "default", x, list(other.shape))
    return _composite(func, args, kwargs)


_LOWERINGS = {"linear": _linear, "conv1d": _conv, "conv2d": _conv, "conv3d": _conv,
              "layer_norm": _first("layer_norm", _layer_norm_call),
              "batch_norm": _first("batch_norm", _batch_norm_call),
              "max_pool1d": _first("max_pool1d", _max_pool(1)),
              "max_pool2d": _first("max_pool2d", _max_pool(2)),
              "max_pool3d": _first("max_pool3d", _max_pool(3)),
              "adaptive_avg_pool2d": _adaptive_avg_pool2d, "embedding": _embedding,
              "pad": _pad, "expand_as": _expand_as, "chunk": _chunk,
              "cross_entropy": _cross_entropy, "mT": _matrix_transpose, "arange": _arange,
              "tensor": _tensor_factory,
              "mH": _matrix_transpose, "adjoint": _matrix_transpose, "matmul": _matmul,
              "__matmul__": _matmul,
              "__rtruediv__": _rtruediv, "reshape": _reshape, "flatten": _reshape,
              "softmax": _softmax, "log_softmax": _softmax, "__getitem__": _getitem,
              "__setitem__": _setitem, "__rpow__": _rpow, "contiguous": _contiguous,
              **{n: _conversion for n in ("to", "type", "float", "double", "half", "bfloat16",
                                          "int", "long", "short", "char", "byte", "bool",
                                          "cpu", "cuda", "type_as")}}
