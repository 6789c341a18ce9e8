"""The ops of nested tensors: each runs on the components (``__torch_function__``).

``torch_function`` is ``NestedTensor.__torch_function__``: it receives every ember function,
``nn.functional`` function and Tensor method called with a nested tensor, looks the op's name
up in ``RULES`` and runs the rule, which calls the same public function on the components
(plain tensors: no dispatch, autograd as usual) and rebuilds a nested tensor of the results.
An op without a rule raises PyTorch's ``NotImplementedError`` naming the op.

Rules follow PyTorch's nested semantics: dim 0 is the batch and cannot be transposed, reduced
(except with everything) or softmaxed over; ``reshape``'s ``-1`` inherits a component's size;
a regular tensor with as many dims as the nested tensor is indexed by batch (size N or 1), a
shorter one broadcasts against each component.
"""

from __future__ import annotations

import inspect

from .._layout import jagged
from .._tensor import Tensor
from ._tensor import (
    NestedTensor,
    _jagged,
    _strided,
    _unsupported,
    jagged_from_components,
    ragged_dim_of,
)

__all__ = ["torch_function", "RULES"]


# -- helpers -----------------------------------------------------------------------------------

def _op_name(func) -> str:
    """``add`` for ``Tensor.__add__``/``__radd__``/``__iadd__``, else the function's name."""
    name = getattr(func, "__name__", repr(func))
    if name.startswith("__") and name.endswith("__"):
        core = name[2:-2]
        if core in _REFLECTED or core in _INPLACE_DUNDER:
            core = core[1:]
        return {"truediv": "div", "matmul": "matmul"}.get(core, core)
    return name


_REFLECTED = {"radd", "rsub", "rmul", "rtruediv", "rfloordiv", "rpow", "rmatmul", "rmod",
              "rand", "ror", "rxor", "rlshift", "rrshift", "rdiv"}
_INPLACE_DUNDER = {"iadd", "isub", "imul", "itruediv", "ifloordiv", "ipow", "imatmul", "imod",
                   "iand", "ior", "ixor", "ilshift", "irshift", "idiv"}


def _nested_in(args, kwargs) -> list:
    found = []
    for a in (*args, *kwargs.values()):
        if isinstance(a, NestedTensor):
            found.append(a)
        elif type(a) in (list, tuple):
            found.extend(x for x in a if isinstance(x, NestedTensor))
    return found


def _check_same_batch(name: str, nested: list) -> NestedTensor:
    first = nested[0]
    for other in nested[1:]:
        if other._layout is not first._layout:
            raise RuntimeError(f"{name}(): expected nested tensors of one layout, got "
                               f"{first._layout} and {other._layout}")
        if other._batch() != first._batch():
            raise RuntimeError(f"{name}(): expected nested tensors with the same number of "
                               f"components, got {first._batch()} and {other._batch()}")
    return first


def _dense_part(a, i: int, ref: NestedTensor):
    """The part of regular tensor ``a`` that meets component ``i``: ``a[i]`` (or ``a[0]``)
    when ``a`` has the nested tensor's rank, else ``a`` itself (it broadcasts)."""
    if type(a) is Tensor or (isinstance(a, Tensor) and not isinstance(a, NestedTensor)):
        if a.dim() == ref.dim() and a.dim() > 0:
            n = a.shape[0]
            if n == ref._batch():
                return a[i]
            if n == 1:
                return a[0]
            raise RuntimeError(f"the batch size of a regular operand ({n}) does not match the "
                               f"nested tensor's ({ref._batch()})")
    return a


def _component_args(args, kwargs, i: int, ref: NestedTensor, batch_dense: bool):
    def pick(a):
        if isinstance(a, NestedTensor):
            return a._comps[i]
        if type(a) in (list, tuple) and any(isinstance(x, NestedTensor) for x in a):
            return type(a)(pick(x) for x in a)
        return _dense_part(a, i, ref) if batch_dense else a

    return [pick(a) for a in args], {k: pick(v) for k, v in kwargs.items()}


def _per_component(func, args, kwargs, *, batch_dense: bool = True) -> list:
    nested = _nested_in(args, kwargs)
    ref = _check_same_batch(_op_name(func), nested)
    out = []
    for i in range(ref._batch()):
        a, k = _component_args(args, kwargs, i, ref, batch_dense)
        out.append(func(*a, **k))
    return out


def _rebuild(ref: NestedTensor, results: list, ragged_idx: int | None = None):
    """A nested tensor of ``results`` with ``ref``'s layout (a tuple of them for ops with
    several outputs)."""
    if results and isinstance(results[0], (tuple, list)):
        if len({len(r) for r in results}) > 1:
            raise RuntimeError("the components would split into different numbers of parts")
        return tuple(_rebuild(ref, list(r), ragged_idx) for r in zip(*results))
    if results and not isinstance(results[0], Tensor):
        return results
    if ref._layout is jagged:
        default = ref._ragged_idx if ragged_idx is None else ragged_idx
        return jagged_from_components(results, ragged_dim_of(results, default), like=ref)
    return _strided(results)


def _bind(func, args, kwargs) -> inspect.BoundArguments:
    sig = _SIGNATURES.get(func)
    if sig is None:
        sig = _SIGNATURES[func] = inspect.signature(func)
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    return bound


_SIGNATURES: dict = {}


def _wrap(dim: int, ndim: int) -> int:
    if not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, "
                         f"{ndim - 1}], but got {dim})")
    return dim % ndim


def _call_with(func, bound, **changes):
    args = dict(bound.arguments)
    args.update(changes)
    pos, kw = [], {}
    for name, p in bound.signature.parameters.items():
        if name not in args:
            continue
        if p.kind is p.VAR_POSITIONAL:
            pos.extend(args[name])
        elif p.kind is p.VAR_KEYWORD:
            kw.update(args[name])
        elif p.kind is p.KEYWORD_ONLY:
            kw[name] = args[name]
        else:
            pos.append(args[name])
    return func(*pos, **kw)


def _first_param(bound) -> str:
    return next(iter(bound.signature.parameters))


# -- rules -------------------------------------------------------------------------------------

def _pointwise(func, args, kwargs):
    """Elementwise ops: on ``values`` when every nested operand is jagged with the same
    offsets (and regular ones broadcast within the trailing dims), else per component."""
    name = _op_name(func)
    nested = _nested_in(args, kwargs)
    ref = _check_same_batch(name, nested)
    if len(nested) > 1:
        shapes = [tuple(c.shape) for c in ref._comps]
        for other in nested[1:]:
            if [tuple(c.shape) for c in other._comps] != shapes:
                raise RuntimeError(f"{name} does not support broadcasting when given a "
                                   "NestedTensor")
    if ref._layout is jagged and _values_path_ok(ref, nested, args, kwargs):
        def pick(a):
            return a._values if isinstance(a, NestedTensor) else a
        out = func(*[pick(a) for a in args], **{k: pick(v) for k, v in kwargs.items()})
        if isinstance(out, Tensor):
            return _jagged(out, ref._offsets, ref._lengths, ref._ragged_idx, ref._sym)
    return _rebuild(ref, _per_component(func, args, kwargs))


def _values_path_ok(ref, nested, args, kwargs) -> bool:
    trailing = ref.dim() - 1 - ref._ragged_idx  # component dims after the ragged one
    for other in nested:
        if other._offsets is not ref._offsets or other._ragged_idx != ref._ragged_idx \
                or other._lengths is not ref._lengths:
            return False
    if ref._lengths is not None:  # values holds elements outside the components
        return False
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor) and not isinstance(a, NestedTensor) and a.dim() > trailing:
            return False
        if type(a) in (list, tuple):
            return False
    return True


def _pointwise_inplace(func, args, kwargs):
    nested = _nested_in(args, kwargs)
    target = args[0] if args else None
    if not isinstance(target, NestedTensor):
        raise RuntimeError(f"{_op_name(func)}(): an in-place op cannot write a nested result "
                           "into a regular tensor")
    _check_same_batch(_op_name(func), nested)
    _per_component(func, args, kwargs)
    return target


def _conversion(func, args, kwargs):
    """``to``, ``float``, ``clone``, ``detach``, ...: per component, no batch indexing of
    tensor arguments (``x.to(other)`` takes ``other``'s dtype and device)."""
    nested = _nested_in(args, kwargs)
    ref = nested[0]
    if ref._layout is jagged and len(nested) == 1 and args and args[0] is ref:
        args = [ref._values, *args[1:]]
        out = func(*args, **kwargs)
        if isinstance(out, Tensor):
            return _jagged(out, ref._offsets.to(out.device), None if ref._lengths is None
                           else ref._lengths.to(out.device), ref._ragged_idx, ref._sym)
    return _rebuild(ref, _per_component(func, args, kwargs, batch_dense=False))


def _regular_args(func, args, kwargs):
    """``linear``, ``layer_norm``, ...: the nested input per component, the other arguments
    (weights) as they are."""
    ref = _nested_in(args, kwargs)[0]
    return _rebuild(ref, _per_component(func, args, kwargs, batch_dense=False))


def _batched(func, args, kwargs):
    """``matmul``, ``bmm``, ``scaled_dot_product_attention``: component by component, a
    regular operand of the nested rank indexed by batch."""
    ref = _nested_in(args, kwargs)[0]
    return _rebuild(ref, _per_component(func, args, kwargs))


def _bmm(func, args, kwargs):
    """``bmm``: the batch is the nested dim, so each component pair is a matrix product."""
    import ember

    ref = _nested_in(args, kwargs)[0]
    return _rebuild(ref, _per_component(ember.mm, args, kwargs))


def _softmax(func, args, kwargs):
    bound = _bind(func, args, kwargs)
    nt = bound.arguments[_first_param(bound)]
    dim = bound.arguments.get("dim")
    if dim is None:
        raise RuntimeError(f"{func.__name__}(): an explicit dim is required for nested tensors")
    d = _wrap(dim, nt.dim())
    if d == 0:
        if nt._layout is jagged:
            raise RuntimeError(f"{func.__name__}(): not supported when reducing across the "
                               "batch dimension for NestedTensor")
        raise RuntimeError("Cannot apply softmax across nested dimension 0")
    first = _first_param(bound)
    return _rebuild(nt, [_call_with(func, bound, **{first: c, "dim": d - 1})
                         for c in nt._comps])


def _transpose(func, args, kwargs):
    bound = _bind(func, args, kwargs)
    first = _first_param(bound)
    nt = bound.arguments[first]
    names = [n for n in bound.signature.parameters if n != first][:2]
    d0, d1 = (_wrap(bound.arguments[n], nt.dim()) for n in names)
    if 0 in (d0, d1) and d0 != d1:
        if nt._layout is jagged:
            raise ValueError("Transpose is not supported on the batch dimension for jagged NT")
        raise RuntimeError("Nested tensor dimension 0 cannot be transposed")
    hint = None
    if nt._layout is jagged:
        r = nt._ragged_idx
        hint = d1 if r == d0 else d0 if r == d1 else r
    comps = [_call_with(func, bound, **{first: c, names[0]: d0 - 1, names[1]: d1 - 1})
             for c in nt._comps]
    return _rebuild(nt, comps, hint)


def _permute(func, args, kwargs):
    nt = args[0]
    dims = args[1:] if len(args) > 2 or (len(args) == 2 and isinstance(args[1], int)) \
        else tuple(args[1] if len(args) > 1 else kwargs["dims"])
    dims = [_wrap(d, nt.dim()) for d in dims]
    if len(dims) != nt.dim() or dims[0] != 0:
        raise RuntimeError("permute(): the batch dim 0 of a nested tensor must stay first")
    hint = dims.index(nt._ragged_idx) if nt._layout is jagged else None
    return _rebuild(nt, [c.permute(*[d - 1 for d in dims[1:]]) for c in nt._comps], hint)


def _shape_arg(args, kwargs) -> list:
    rest = args[1:]
    if not rest:
        rest = (kwargs.get("shape", kwargs.get("size")),)
    if len(rest) == 1 and not isinstance(rest[0], int):
        rest = tuple(rest[0])
    return [int(s) for s in rest]


def _reshape(func, args, kwargs):
    """``reshape``/``view``: the first size is the batch (its size or -1); each later ``-1``
    takes the component's old size in that dim (PyTorch's rule: it does not infer)."""
    nt = args[0]
    shape = _shape_arg(args, kwargs)
    if not shape or shape[0] not in (-1, nt._batch()):
        raise RuntimeError("reshape: For now nested reshape cannot change or infer the "
                           "implicit batch dimension")
    method = getattr(Tensor, func.__name__)
    comps = []
    for c in nt._comps:
        new = [c.shape[k] if s == -1 and k < c.dim() else s for k, s in enumerate(shape[1:])]
        comps.append(method(c, new))
    hint = None
    if nt._layout is jagged:
        hint = nt._ragged_idx if shape[nt._ragged_idx:nt._ragged_idx + 1] == [-1] else None
    return _rebuild(nt, comps, hint)


def _unsqueeze(func, args, kwargs):
    bound = _bind(func, args, kwargs)
    first = _first_param(bound)
    nt = bound.arguments[first]
    d = _wrap(bound.arguments["dim"], nt.dim() + 1)
    if d == 0:
        raise RuntimeError("unsqueeze(): cannot add a dim before the batch dim of a nested "
                           "tensor")
    hint = None
    if nt._layout is jagged:
        hint = nt._ragged_idx + (1 if d <= nt._ragged_idx else 0)
    return _rebuild(nt, [c.unsqueeze(d - 1) for c in nt._comps], hint)


def _along_dim(func, args, kwargs):
    """``chunk``, ``split``, ``unflatten``, ``squeeze``: along one non-batch dim of each
    component (a tuple of nested tensors for ``chunk``/``split``)."""
    name = func.__name__
    bound = _bind(func, args, kwargs)
    first = _first_param(bound)
    nt = bound.arguments[first]
    dim = bound.arguments.get("dim")
    if dim is None:
        raise RuntimeError(f"{name}(): a nested tensor needs an explicit dim")
    d = _wrap(dim, nt.dim())
    if d == 0:
        raise RuntimeError(f"{name}(): not supported for NestedTensor on dim=0")
    hint = None
    if nt._layout is jagged:
        r = hint = nt._ragged_idx
        if d == r:
            raise RuntimeError(f"{name}(): not supported for NestedTensor on the ragged dim")
        if name == "unflatten" and d < r:
            hint = r + len(bound.arguments["sizes"]) - 1
        elif name == "squeeze" and d < r and all(c.shape[d - 1] == 1 for c in nt._comps):
            hint = r - 1
    comps = [_call_with(func, bound, **{first: c, "dim": d - 1}) for c in nt._comps]
    return _rebuild(nt, comps, hint)


def _flatten(func, args, kwargs):
    bound = _bind(func, args, kwargs)
    first = _first_param(bound)
    nt = bound.arguments[first]
    start = _wrap(bound.arguments["start_dim"], nt.dim())
    end = _wrap(bound.arguments["end_dim"], nt.dim())
    if start == 0:
        raise RuntimeError("flatten(): cannot flatten the batch dim 0 of a nested tensor")
    hint = None
    if nt._layout is jagged:
        r = nt._ragged_idx
        hint = start if start <= r <= end else r - (end - start) if r > end else r
    comps = [_call_with(func, bound, **{first: c, "start_dim": start - 1, "end_dim": end - 1})
             for c in nt._comps]
    return _rebuild(nt, comps, hint)


def _reduce(func, args, kwargs):
    """``sum``/``mean``: over everything (a regular scalar), or over non-batch dims per
    component; reducing a jagged tensor's ragged dim gives a regular tensor."""
    import ember

    name = func.__name__
    bound = _bind(func, args, kwargs)
    first = _first_param(bound)
    nt = bound.arguments[first]
    dim = bound.arguments.get("dim")
    keepdim = bound.arguments.get("keepdim", False)
    dtype = bound.arguments.get("dtype")
    extra = {} if dtype is None else {"dtype": dtype}
    if dim is None or (isinstance(dim, (list, tuple)) and not dim):
        total = ember.stack([c.sum(**extra) for c in nt._comps]).sum()
        if name == "mean":
            total = total / nt.numel()
        return total
    dims = [dim] if isinstance(dim, int) else list(dim)
    dims = sorted({_wrap(d, nt.dim()) for d in dims})
    if 0 in dims:
        raise RuntimeError(f"{name}(): reducing along the batch dimension but not the ragged "
                           "dimension is not supported for nested tensors")
    comps = [getattr(c, name)([d - 1 for d in dims], keepdim=keepdim, **extra)
             for c in nt._comps]
    if nt._layout is jagged:
        r = nt._ragged_idx
        if r in dims:
            return ember.stack(comps)
        hint = r if keepdim else r - sum(1 for d in dims if d < r)
        return _rebuild(nt, comps, hint)
    return _rebuild(nt, comps)


def _unbind(func, args, kwargs):
    bound = _bind(func, args, kwargs)
    return bound.arguments[_first_param(bound)].unbind(bound.arguments.get("dim", 0))


def _passthrough(func, args, kwargs):
    """Functions that only ask about the tensor (``ember.is_tensor``, ``ember.numel``)."""
    from ..overrides import DisableTorchFunctionSubclass

    with DisableTorchFunctionSubclass():
        return func(*args, **kwargs)


_POINTWISE = """
abs absolute acos arccos acosh arccosh add addcdiv addcmul angle asin arcsin asinh arcsinh
atan arctan atan2 arctan2 atanh arctanh bitwise_and bitwise_not bitwise_or bitwise_xor
ceil clamp clip clamp_min clamp_max copysign cos cosh deg2rad digamma div divide eq erf erfc
erfinv exp exp2 expm1 float_power floor floor_divide fmax fmin fmod frac ge greater_equal gt
greater hypot i0 isfinite isinf isnan isneginf isposinf le less_equal lerp lgamma log log10
log1p log2 logaddexp logaddexp2 logical_and logical_not logical_or logical_xor logit lt less
masked_fill maximum minimum mul multiply nan_to_num ne not_equal neg negative nextafter pos
positive pow rad2deg reciprocal remainder round rsqrt rsub sgn sigmoid sign signbit sin sinc
sinh sqrt square sub subtract tan tanh true_divide trunc fix where xlogy heaviside
relu relu6 gelu silu mish elu selu celu leaky_relu hardtanh hardsigmoid hardswish logsigmoid
softplus softshrink hardshrink tanhshrink softsign threshold prelu rrelu
dropout alpha_dropout feature_alpha_dropout
mod and or xor invert lshift rshift floordiv
""".split()

_CONVERSIONS = """to float double half bfloat16 int long short bool byte char cpu cuda clone
detach contiguous type_as""".split()

RULES: dict = {}
RULES.update(dict.fromkeys(_POINTWISE, _pointwise))
RULES.update(dict.fromkeys(_CONVERSIONS, _conversion))
RULES.update(dict.fromkeys(["linear", "layer_norm", "rms_norm"], _regular_args))
RULES.update(dict.fromkeys(["matmul", "scaled_dot_product_attention"], _batched))
RULES["bmm"] = _bmm
RULES.update(dict.fromkeys(["softmax", "log_softmax", "softmin"], _softmax))
RULES.update(dict.fromkeys(["transpose", "swapaxes", "swapdims"], _transpose))
RULES.update(dict.fromkeys(["reshape", "view"], _reshape))
RULES.update(dict.fromkeys(["chunk", "split", "unflatten", "squeeze"], _along_dim))
RULES.update({"flatten": _flatten, "permute": _permute, "unsqueeze": _unsqueeze,
              "sum": _reduce, "mean": _reduce, "unbind": _unbind})
RULES.update(dict.fromkeys(["is_tensor", "is_storage", "numel", "is_floating_point",
                            "is_complex", "typename"], _passthrough))


def _inplace_of(name: str, func) -> str | None:
    """The out-of-place op of an in-place one (``add_``, ``__iadd__``), else None."""
    raw = getattr(func, "__name__", "")
    if raw.startswith("__i") and raw[2:-2] in _INPLACE_DUNDER:
        return name
    if name.endswith("_") and not name.startswith("_"):
        return name[:-1]
    return None


def _writes_in_place(func, args, kwargs) -> bool:
    if not kwargs.get("inplace") and len(args) < 2:
        return False
    try:
        bound = _bind(func, args, kwargs)
    except (TypeError, ValueError):
        return False
    return bound.arguments.get("inplace") is True


def torch_function(cls, func, types, args=(), kwargs=None):
    """``NestedTensor.__torch_function__``: the op's rule on the components, or PyTorch's
    NotImplementedError naming the op."""
    kwargs = kwargs or {}
    name = _op_name(func)
    rule = RULES.get(name)
    if rule is not None:
        if rule is _pointwise and _writes_in_place(func, args, kwargs):
            return _pointwise_inplace(func, args, kwargs)  # F.relu(x, inplace=True), ...
        return rule(func, args, kwargs)
    base = _inplace_of(name, func)
    if base is not None and RULES.get(base) is _pointwise:
        return _pointwise_inplace(func, args, kwargs)
    nested = _nested_in(args, kwargs)
    raise _unsupported(name, nested[0]) if nested else NotImplementedError(name)
