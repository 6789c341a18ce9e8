"""PyTorch's ``torch._foreach_*`` functions: one op applied across lists of tensors.

Optimizers and EMA code call them (``torch._foreach_mul_(params, 0.9)``,
``torch._foreach_lerp_(ema, params, 0.1)``). Each is the per-tensor op in a loop, with the
checks PyTorch does on the lists first: at least one tensor, lists of one length, a scalar list
as long as the tensor list. Out-of-place variants return a tuple of new tensors (as PyTorch
2.13 does), differentiable through the per-tensor ops; in-place ones (``_`` suffix) write each
tensor of ``self``, bump its version and return ``self``.

The in-place arithmetic that optimizers run (``add_``, ``sub_``, ``mul_``, ``div_``, ``lerp_``,
``addcmul_``, ``addcdiv_``, ``zero_``, and the unary ops that are one ufunc, ``sqrt_``...)
writes the arrays directly when nothing else has to see the update: plain float32/float64
tensors of one dtype, device and shape per pair, no autograd recording (grad mode off or
nothing requires grad), no forward AD, no ``__torch_function__`` subclass. Everything else
takes the per-tensor ops, with their promotion and errors.
"""

from __future__ import annotations

import functools
import inspect
import numbers

import numpy as np

import ember as _ember

from ._device import xp_of
from ._tensor import Tensor
from .autograd import graph as _graph
from .autograd.grad_mode import GRAD
from .ops._inplace import make_inplace, writable

# -- argument kinds and PyTorch's list checks ----------------------------------------------------

_SCALAR = "Number scalar"
_SCALARS = "tuple of Scalars scalars"
_TENSOR = "Tensor other"
_TENSORS = "tuple of Tensors other"


def _kind(x) -> str | None:
    """Which overload an argument selects: a Tensor, a list of tensors, a list of numbers, a
    number; None for anything else."""
    if isinstance(x, Tensor):
        return _TENSOR
    if isinstance(x, (list, tuple)):
        if x and isinstance(x[0], Tensor):
            return _TENSORS
        if all(isinstance(e, numbers.Number) for e in x):
            return _SCALARS
        return _TENSORS if any(isinstance(e, Tensor) for e in x) else None
    if isinstance(x, numbers.Number):
        return _SCALAR
    return None


def _type_str(x) -> str:
    return "Tensor" if isinstance(x, Tensor) else type(x).__name__


def _invalid(name: str, args: tuple, kwargs: dict, overloads) -> TypeError:
    """PyTorch's error when no overload takes these arguments."""
    got = [_type_str(a) for a in args] + [f"{k}={_type_str(v)}" for k, v in kwargs.items()]
    lines = "".join(f" * ({o})\n" for o in overloads)
    return TypeError(f"{name}() received an invalid combination of arguments - got "
                     f"({', '.join(got)}), but expected one of:\n{lines}")


_UNSET = object()


def _argument(name: str, lists: tuple, args: tuple, kwargs: dict, keywords: dict, overloads,
              default=_UNSET):
    """The one argument after the tensor lists: positional, or by one of PyTorch's keyword
    names (``keywords``: name -> the kinds of argument it names, None for any), else
    ``default``."""
    if len(args) + len(kwargs) > 1 or (not args and not kwargs and default is _UNSET):
        raise _invalid(name, lists + args, kwargs, overloads)
    if args:
        return args[0]
    if not kwargs:
        return default
    ((key, value),) = kwargs.items()
    if key not in keywords or (keywords[key] is not None and _kind(value) not in keywords[key]):
        raise _invalid(name, lists, kwargs, overloads)
    return value


def _tensor_list(x, name: str, position: int = 0) -> list:
    """``x`` as a non-empty list of tensors, with PyTorch's errors."""
    if not isinstance(x, (list, tuple)):
        raise TypeError(f"{name}(): argument 'self' (position 1) must be tuple of Tensors, not "
                        f"{type(x).__name__}")
    for i, t in enumerate(x):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument {position}, but got "
                            f"{type(t).__name__}")
    if not x:
        raise RuntimeError("Tensor list must have at least one tensor.")
    return x


def _same_length(tensors, *others) -> None:
    for other in others:
        if len(other) != len(tensors):
            raise RuntimeError("Tensor lists must have the same number of tensors, got "
                               f"{len(tensors)} and {len(other)}")


def _per_tensor(tensors, value, kind) -> list:
    """One scalar per tensor: a scalar list (``kind`` _SCALARS, its length checked) as it is,
    else the one number repeated."""
    if kind != _SCALARS:
        return [value] * len(tensors)
    if len(value) != len(tensors):
        raise RuntimeError("Tensor list must have same number of elements as scalar list.")
    return value


def _scalar_tensor(t: Tensor) -> Tensor:
    """The ``Tensor other`` of add/mul/div: one value, 0-d."""
    if t.dim() != 0:
        raise RuntimeError(f"scalar tensor expected to be 0 dim but it has {t.dim()} dimensions "
                           f"and {t.numel()} elements.")
    return t


def _packed_scalars(tensors, scalars: Tensor) -> list:
    """The ``Tensor scalars`` of addcmul/addcdiv: a 1-d tensor of one value per tensor."""
    if scalars.dim() != 1:
        raise RuntimeError("Expected packed scalar Tensor to be of dimension 1. Got "
                           f"{scalars.dim()} instead.")
    if scalars.numel() != len(tensors):
        raise RuntimeError(f"Expected length of scalars to match input of length {len(tensors)} "
                           f"but got {scalars.numel()} instead.")
    return scalars.tolist()


# -- the array fast path -------------------------------------------------------------------------

_FAST_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


@functools.cache
def _plain_subclass(cls: type) -> bool:
    """A Tensor subclass that takes no part in ``__torch_function__`` (``nn.Parameter``)."""
    return inspect.getattr_static(cls, "__torch_function__", None) is \
        _ember.overrides.disabled_torch_function_impl


def _fast_xp(tensors, *others):
    """The array module when ``tensors`` may be updated in place by array code with the tensor
    lists ``others``; None when the per-tensor ops must run (see the module docstring)."""
    if _graph._FW_HOOK is not None:
        return None
    first = tensors[0]
    dt = first._data.dtype
    if dt not in _FAST_DTYPES:
        return None
    dev = first._device
    grad = GRAD.enabled
    for t in tensors:
        cls = t.__class__
        if ((cls is not Tensor and not _plain_subclass(cls)) or t._data.dtype is not dt
                or (t._device is not dev and t._device != dev) or (grad and t.requires_grad)
                or not writable(t._data)):
            return None
    for other in others:
        for t, s in zip(other, tensors):
            cls = t.__class__
            if ((cls is not Tensor and not _plain_subclass(cls)) or t._data.dtype is not dt
                    or (t._device is not dev and t._device != dev)
                    or (grad and t.requires_grad) or t._data.shape != s._data.shape):
                return None
    return xp_of(first)


def _fast_scalar(s):
    """A Python number as the float the array code takes; None when the per-tensor op must
    decide (a complex, a NumPy scalar, an int out of float range)."""
    if s.__class__ in (float, int, bool):
        try:
            return float(s)
        except OverflowError:
            return None
    return None


def _fast_scalars(scalars):
    values = [_fast_scalar(s) for s in scalars]
    return None if None in values else values


def _bump(tensors) -> None:
    for t in tensors:
        t._bump_version()


# -- binary ops: Tensor list with a scalar, a scalar list, a tensor list or a 0-d tensor --------

def _maximum_scalar(t, s):
    return _ember.clamp_min(t, s)


def _minimum_scalar(t, s):
    return _ember.clamp_max(t, s)


_maximum_ = make_inplace(lambda t, o: _ember.maximum(t, o), "maximum_")
_minimum_ = make_inplace(lambda t, o: _ember.minimum(t, o), "minimum_")

#: op -> (out-of-place with a number, with a tensor; in-place with a number, with a tensor)
_BINARY = {
    "add": ("add", "add", "add_", "add_"),
    "sub": ("sub", "sub", "sub_", "sub_"),
    "mul": ("mul", "mul", "mul_", "mul_"),
    "div": ("div", "div", "div_", "div_"),
    "pow": ("pow", "pow", "pow_", "pow_"),
    "clamp_min": ("clamp_min", "clamp_min", "clamp_min_", "clamp_min_"),
    "clamp_max": ("clamp_max", "clamp_max", "clamp_max_", "clamp_max_"),
    "maximum": (_maximum_scalar, "maximum", "clamp_min_", _maximum_),
    "minimum": (_minimum_scalar, "minimum", "clamp_max_", _minimum_),
}
#: the overloads each binary op has beyond (scalar, scalar list, tensor list)
_WITH_TENSOR = {"add", "mul", "div"}
_WITH_ALPHA = {"add", "sub"}
_NUMPY_UFUNC = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide"}


def _resolve(op, inplace: bool):
    """A per-tensor callable from a ``_BINARY`` entry: an ``ember`` function name, a Tensor
    method name (in-place) or a function."""
    if not isinstance(op, str):
        return op
    return getattr(Tensor, op) if inplace else getattr(_ember, op)


def _overloads(op: str) -> list:
    alpha = ", *, Number alpha = 1" if op in _WITH_ALPHA else ""
    names = [f"tuple of Tensors self, {_SCALAR}", f"tuple of Tensors self, {_SCALARS}"]
    if op in _WITH_TENSOR:
        names.append(f"tuple of Tensors self, {_TENSOR}{alpha if op == 'add' else ''}")
    names.append(f"tuple of Tensors self, {_TENSORS}{alpha}")
    return names


_BINARY_KEYWORDS = {"scalar": (_SCALAR,), "scalars": (_SCALARS,), "other": (_TENSOR, _TENSORS)}


def _binary(op: str, inplace: bool, self, args: tuple, kwargs: dict, alpha):
    name = f"_foreach_{op}{'_' if inplace else ''}"
    keywords = {"exponent": None} if op == "pow" else _BINARY_KEYWORDS
    other = _argument(name, (self,), args, kwargs, keywords, _overloads(op))
    kind = _kind(other)
    alpha_kw = {} if alpha is None else {"alpha": alpha}
    if alpha is not None and kind == _SCALARS and other:  # alpha picks the tensor-list overload
        raise TypeError("expected Tensor as element 0 in argument 1, but got "
                        f"{type(other[0]).__name__}")
    if kind is None or (kind == _TENSOR and op not in _WITH_TENSOR) or (
            alpha is not None and (op not in _WITH_ALPHA or kind in (_SCALAR, _SCALARS)
                                   or (kind == _TENSOR and op != "add"))):
        raise _invalid(name, (self, other), alpha_kw, _overloads(op))
    self = _tensor_list(self, name)
    scalar_fn, tensor_fn, scalar_fn_, tensor_fn_ = _BINARY[op]
    if kind == _TENSORS:
        other = _tensor_list(other, name, 1)
        _same_length(self, other)
        if inplace and op in _NUMPY_UFUNC and _fast_binary(op, self, other, alpha):
            return self
        fn = _resolve(tensor_fn_ if inplace else tensor_fn, inplace)
        pairs = zip(self, other)
    elif kind == _TENSOR:
        other = _scalar_tensor(other)
        fn = _resolve(tensor_fn_ if inplace else tensor_fn, inplace)
        pairs = ((t, other) for t in self)
    else:
        scalars = _per_tensor(self, other, kind)
        if inplace and op in _NUMPY_UFUNC and _fast_binary(op, self, scalars, None):
            return self
        fn = _resolve(scalar_fn_ if inplace else scalar_fn, inplace)
        pairs = zip(self, scalars)
    if inplace:
        for t, o in pairs:
            fn(t, o, **alpha_kw)
        return self
    return tuple(fn(t, o, **alpha_kw) for t, o in pairs)


def _fast_binary(op: str, self, other, alpha) -> bool:
    """``self[i] op= other[i]`` on the arrays (``other``: numbers or tensors); False when the
    per-tensor ops must run instead."""
    tensors = isinstance(other[0], Tensor)
    xp = _fast_xp(self, other) if tensors else _fast_xp(self)
    if xp is None:
        return False
    if tensors:
        values = [t._data for t in other]
        if alpha is not None and alpha != 1:
            a = _fast_scalar(alpha)
            if a is None:
                return False
            values = [xp.multiply(v, a) for v in values]
    else:
        values = _fast_scalars(other)
        if values is None:
            return False
    ufunc = getattr(xp, _NUMPY_UFUNC[op])
    for t, v in zip(self, values):
        ufunc(t._data, v, out=t._data)
    _bump(self)
    return True


def _binary_pair(op: str):
    def out_of_place(self, *args, alpha=None, **kwargs):
        return _binary(op, False, self, args, kwargs, alpha)

    def in_place(self, *args, alpha=None, **kwargs):
        return _binary(op, True, self, args, kwargs, alpha)

    out_of_place.__doc__ = (f"``{op}`` of each tensor with a number, a number each, a tensor "
                            "each" + (" or a 0-d tensor" if op in _WITH_TENSOR else "") +
                            ": a tuple of new tensors.")
    in_place.__doc__ = f"``_foreach_{op}`` written into ``self``."
    return out_of_place, in_place


_foreach_add, _foreach_add_ = _binary_pair("add")
_foreach_sub, _foreach_sub_ = _binary_pair("sub")
_foreach_mul, _foreach_mul_ = _binary_pair("mul")
_foreach_div, _foreach_div_ = _binary_pair("div")
_foreach_clamp_min, _foreach_clamp_min_ = _binary_pair("clamp_min")
_foreach_clamp_max, _foreach_clamp_max_ = _binary_pair("clamp_max")
_foreach_maximum, _foreach_maximum_ = _binary_pair("maximum")
_foreach_minimum, _foreach_minimum_ = _binary_pair("minimum")
_foreach_pow_ = _binary_pair("pow")[1]


def _foreach_pow(self, *args, **kwargs):
    """``pow`` of each tensor: by a number, a number each, a tensor each; or a number to the
    power of each tensor (``_foreach_pow(2.0, tensors)``)."""
    if isinstance(self, numbers.Number) and not isinstance(self, Tensor):
        exponent = _argument("_foreach_pow", (self,), args, kwargs, {"exponent": None},
                             _overloads("pow"))
        exponent = _tensor_list(exponent, "_foreach_pow", 1)
        return tuple(_ember.pow(self, t) for t in exponent)
    return _binary("pow", False, self, args, kwargs, None)


# -- addcmul / addcdiv: self + value * tensor1 (* or /) tensor2 --------------------------------

_POINTWISE_OVERLOADS = tuple(
    f"tuple of Tensors self, tuple of Tensors tensor1, tuple of Tensors tensor2, {overload}"
    for overload in ("tuple of Scalars scalars", "Tensor scalars", "Number value = 1"))
_POINTWISE_KEYWORDS = {"value": (_SCALAR,), "scalars": (_SCALARS, _TENSOR)}


def _pointwise(op: str, inplace: bool, self, tensor1, tensor2, args: tuple, kwargs: dict):
    name = f"_foreach_{op}{'_' if inplace else ''}"
    scalars = _argument(name, (self, tensor1, tensor2), args, kwargs, _POINTWISE_KEYWORDS,
                        _POINTWISE_OVERLOADS, 1)
    kind = _kind(scalars)
    if kind not in (_SCALAR, _SCALARS, _TENSOR):
        raise _invalid(name, (self, tensor1, tensor2, scalars), {}, _POINTWISE_OVERLOADS)
    self = _tensor_list(self, name)
    tensor1 = _tensor_list(tensor1, name, 1)
    tensor2 = _tensor_list(tensor2, name, 2)
    _same_length(self, tensor1, tensor2)
    if kind == _TENSOR:
        values = _packed_scalars(self, scalars)
    else:
        values = _per_tensor(self, scalars, kind)
    if inplace:
        if _fast_pointwise(op == "addcdiv", self, tensor1, tensor2, values):
            return self
        method = getattr(Tensor, f"{op}_")
        for t, a, b, v in zip(self, tensor1, tensor2, values):
            method(t, a, b, value=v)
        return self
    fn = getattr(_ember, op)
    return tuple(fn(t, a, b, value=v) for t, a, b, v in zip(self, tensor1, tensor2, values))


def _fast_pointwise(divide: bool, self, tensor1, tensor2, values) -> bool:
    xp = _fast_xp(self, tensor1, tensor2)
    values = None if xp is None else _fast_scalars(values)
    if values is None:
        return False
    combine = xp.divide if divide else xp.multiply
    for t, a, b, v in zip(self, tensor1, tensor2, values):
        d = t._data
        r = combine(a._data, b._data)  # a NumPy scalar for 0-d arrays: no out= on it
        r *= v
        xp.add(d, r, out=d)
    _bump(self)
    return True


def _foreach_addcmul(self, tensor1, tensor2, *args, **kwargs):
    """``self[i] + value[i] * tensor1[i] * tensor2[i]``; the value a number, a number each, or a
    1-d tensor of one value each."""
    return _pointwise("addcmul", False, self, tensor1, tensor2, args, kwargs)


def _foreach_addcmul_(self, tensor1, tensor2, *args, **kwargs):
    """``_foreach_addcmul`` written into ``self``."""
    return _pointwise("addcmul", True, self, tensor1, tensor2, args, kwargs)


def _foreach_addcdiv(self, tensor1, tensor2, *args, **kwargs):
    """``self[i] + value[i] * tensor1[i] / tensor2[i]``; the value a number, a number each, or a
    1-d tensor of one value each."""
    return _pointwise("addcdiv", False, self, tensor1, tensor2, args, kwargs)


def _foreach_addcdiv_(self, tensor1, tensor2, *args, **kwargs):
    """``_foreach_addcdiv`` written into ``self``."""
    return _pointwise("addcdiv", True, self, tensor1, tensor2, args, kwargs)


# -- lerp -----------------------------------------------------------------------------------------

_LERP_OVERLOADS = tuple(
    f"tuple of Tensors self, tuple of Tensors tensors1, {overload}" for overload in (
        "Number weight", "tuple of Scalars weight", "tuple of Tensors weights"))
_LERP_KEYWORDS = {"weight": (_SCALAR, _SCALARS), "weights": (_TENSORS,)}


def _lerp(inplace: bool, self, tensors1, args: tuple, kwargs: dict):
    name = f"_foreach_lerp{'_' if inplace else ''}"
    weight = _argument(name, (self, tensors1), args, kwargs, _LERP_KEYWORDS, _LERP_OVERLOADS)
    kind = _kind(weight)
    if kind not in (_SCALAR, _SCALARS, _TENSORS):
        raise _invalid(name, (self, tensors1, weight), {}, _LERP_OVERLOADS)
    self = _tensor_list(self, name)
    tensors1 = _tensor_list(tensors1, name, 1)
    _same_length(self, tensors1)
    if kind == _TENSORS:
        weights = _tensor_list(weight, name, 2)
        _same_length(self, weights)
    else:
        weights = _per_tensor(self, weight, kind)
    if inplace:
        if kind != _TENSORS and _fast_lerp(self, tensors1, weights):
            return self
        for t, e, w in zip(self, tensors1, weights):
            t.lerp_(e, w)
        return self
    return tuple(_ember.lerp(t, e, w) for t, e, w in zip(self, tensors1, weights))


def _fast_lerp(self, tensors1, weights) -> bool:
    xp = _fast_xp(self, tensors1)
    weights = None if xp is None else _fast_scalars(weights)
    if weights is None:
        return False
    for t, e, w in zip(self, tensors1, weights):
        d, end = t._data, e._data
        diff = xp.subtract(end, d)  # a NumPy scalar for 0-d arrays: no out= on it
        if abs(w) < 0.5:  # PyTorch's two formulas, exact at both ends
            diff *= w
            xp.add(d, diff, out=d)
        else:
            diff *= 1 - w
            xp.subtract(end, diff, out=d)
    _bump(self)
    return True


def _foreach_lerp(self, tensors1, *args, **kwargs):
    """``self[i] + weight[i] * (tensors1[i] - self[i])``; the weight a number, a number each, or
    a tensor each."""
    return _lerp(False, self, tensors1, args, kwargs)


def _foreach_lerp_(self, tensors1, *args, **kwargs):
    """``_foreach_lerp`` written into ``self``."""
    return _lerp(True, self, tensors1, args, kwargs)


# -- unary ops -----------------------------------------------------------------------------------

_UNARY = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1",
          "floor", "frac", "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal",
          "round", "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc")


#: the unary ops whose array-module ufunc is PyTorch's op on float32/float64 arrays
_UNARY_UFUNCS = {
    "abs": "absolute", "acos": "arccos", "asin": "arcsin", "atan": "arctan", "ceil": "ceil",
    "cos": "cos", "cosh": "cosh", "exp": "exp", "expm1": "expm1", "floor": "floor", "log": "log",
    "log10": "log10", "log1p": "log1p", "log2": "log2", "neg": "negative",
    "reciprocal": "reciprocal", "sin": "sin", "sinh": "sinh", "sqrt": "sqrt", "tan": "tan",
    "tanh": "tanh", "trunc": "trunc"}


def _unary_pair(op: str):
    def out_of_place(self):
        fn = getattr(_ember, op)
        return tuple(fn(t) for t in _tensor_list(self, f"_foreach_{op}"))

    def in_place(self):
        tensors = _tensor_list(self, f"_foreach_{op}_")
        ufunc = _UNARY_UFUNCS.get(op)
        xp = None if ufunc is None else _fast_xp(tensors)
        if xp is not None:
            ufunc = getattr(xp, ufunc)
            for t in tensors:
                ufunc(t._data, out=t._data)
            _bump(tensors)
            return self
        method = getattr(Tensor, f"{op}_")
        for t in tensors:
            method(t)
        return self

    out_of_place.__name__ = out_of_place.__qualname__ = f"_foreach_{op}"
    out_of_place.__doc__ = f"``{op}`` of each tensor: a tuple of new tensors."
    in_place.__name__ = in_place.__qualname__ = f"_foreach_{op}_"
    in_place.__doc__ = f"``{op}_`` on each tensor, in place."
    return out_of_place, in_place


for _op in _UNARY:
    globals()[f"_foreach_{_op}"], globals()[f"_foreach_{_op}_"] = _unary_pair(_op)
del _op


# -- the rest: zero_, copy_, clone, norm, powsum, max, mm ---------------------------------------

def _foreach_zero_(self):
    """Fill each tensor with zeros, in place."""
    self = _tensor_list(self, "_foreach_zero_")
    if _fast_xp(self) is not None:
        for t in self:
            t._data.fill(0)
        _bump(self)
        return self
    for t in self:
        t.zero_()
    return self


def _foreach_copy_(self, src, non_blocking=False):
    """Copy ``src[i]`` into ``self[i]`` (broadcast, cast), in place."""
    self = _tensor_list(self, "_foreach_copy_")
    src = _tensor_list(src, "_foreach_copy_", 1)
    _same_length(self, src)
    for t, s in zip(self, src):
        t.copy_(s, non_blocking)
    return self


def _foreach_clone(self, *, memory_format=None):
    """A copy of each tensor."""
    self = _tensor_list(self, "_foreach_clone")
    if memory_format is None:
        return tuple(t.clone() for t in self)
    return tuple(t.clone(memory_format=memory_format) for t in self)


def _foreach_norm(self, ord=2, dtype=None):
    """The ``ord``-norm of each tensor over all its elements (``linalg.vector_norm``)."""
    self = _tensor_list(self, "_foreach_norm")
    norm = _ember.linalg.vector_norm
    return tuple(norm(t, ord, dtype=dtype) for t in self)


def _foreach_powsum(self, ord=2, dtype=None):
    """``sum(|x| ** ord)`` of each tensor: the norm before its root."""
    self = _tensor_list(self, "_foreach_powsum")
    return tuple(_powsum(t, ord, dtype) for t in self)


def _powsum(t: Tensor, ord, dtype) -> Tensor:
    if dtype is not None:
        t = t.to(dtype)
    if not (t.is_floating_point() or t.is_complex()):
        from ._dtype import scalar_type_name

        suffix = "cpu" if t._data.__class__ is np.ndarray else "cuda"  # as the kernels name it
        raise NotImplementedError(f'"powsum_{suffix}" not implemented for '
                                  f"'{scalar_type_name(t._data.dtype)}'")
    magnitude = t.abs()
    if magnitude.dtype in (_ember.float16, _ember.bfloat16):  # summed in float32, as PyTorch
        return magnitude.float().pow(ord).sum().to(magnitude.dtype)
    return magnitude.pow(ord).sum()


def _foreach_max(self):
    """The largest element of each tensor."""
    self = _tensor_list(self, "_foreach_max")
    for t in self:
        if t.numel() == 0:
            raise RuntimeError("_foreach_max cannot compute the maximum of an empty tensor; max "
                               "over zero elements is undefined.")
    return tuple(t.max() for t in self)


def _foreach_mm(self, mat2):
    """``self[i] @ mat2[i]`` for 2-d tensors."""
    if not self or not mat2:
        raise RuntimeError("_foreach_mm requires non-empty tensor lists")
    self = _tensor_list(self, "_foreach_mm")
    mat2 = _tensor_list(mat2, "_foreach_mm", 1)
    if len(self) != len(mat2):
        raise RuntimeError("_foreach_mm: self and mat2 must have the same number of tensors")
    return tuple(_ember.mm(a, b) for a, b in zip(self, mat2))


def _named(fn, name: str):
    fn.__name__ = fn.__qualname__ = name
    return fn


for _name, _fn in list(globals().items()):
    if _name.startswith("_foreach_") and callable(_fn) and _fn.__name__ != _name:
        _named(_fn, _name)
del _name, _fn

#: every ``_foreach_*`` function, as ``ember._foreach_<name>``
NAMES = tuple(sorted(n for n in globals() if n.startswith("_foreach_")))
