"""The ops of MaskedTensors (``MaskedTensor.__torch_function__``).

``torch_function`` receives every ember function, ``nn.functional`` function and Tensor
method called with a MaskedTensor, names the op (``Tensor.__radd__`` is ``add``,
``Tensor.__iadd__`` is ``add_``) and runs its rule; the rules are PyTorch's
(``torch/masked/maskedtensor/{unary,binary,reductions,passthrough,_ops_refs}.py``):

- unary elementwise ops run on the data and keep the mask (no other tensor arguments);
- binary elementwise ops need the operands' masks to be equal (PyTorch's "Input masks must
  match" error) and keep that mask, broadcast to the result;
- reductions (sum, mean, amin, amax, argmin, argmax, prod, all, norm, var, std) skip the
  masked-out elements (the functions of ``ember.masked``); the result's mask is ``any`` of
  the mask over the reduced dims;
- shape ops (view, reshape, transpose, select, indexing, expand, cat, stack, ...) apply to
  the data and to the mask alike;
- ``where``, ``softmax``/``softmin``, ``clone``/``detach``/``contiguous``, dtype and device
  conversions, ``ones_like`` and ``copy_`` have their own rules.

Every other op raises ``TypeError``, as PyTorch's dispatch does where no rule answers.
Ops compute on the data with its autograd, so gradients reach the data of the inputs.
"""

from __future__ import annotations

import warnings

from ..._tensor import Tensor
from .core import (
    MaskedTensor,
    _masks_match,
    _sparse,
    _tensors_match,
    _wrap,
    _wrap_result,
    is_masked_tensor,
)

__all__ = ["torch_function", "RULES"]

UNARY_NAMES = {
    "abs", "absolute", "acos", "arccos", "acosh", "arccosh", "angle", "asin", "arcsin",
    "asinh", "arcsinh", "atan", "arctan", "atanh", "arctanh", "bitwise_not", "ceil", "clamp",
    "clip", "conj_physical", "cos", "cosh", "deg2rad", "digamma", "erf", "erfc", "erfinv",
    "exp", "exp2", "expm1", "fix", "floor", "frac", "lgamma", "log", "log10", "log1p", "log2",
    "logit", "i0", "isnan", "nan_to_num", "neg", "negative", "positive", "pow", "rad2deg",
    "reciprocal", "round", "rsqrt", "sigmoid", "sign", "sgn", "signbit", "sin", "sinc",
    "sinh", "sqrt", "square", "tan", "tanh", "trunc",
}
INPLACE_UNARY_NAMES = {n + "_" for n in UNARY_NAMES - {"angle", "positive", "signbit", "isnan"}}

BINARY_NAMES = {
    "add", "atan2", "arctan2", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_left_shift", "bitwise_right_shift", "div", "divide", "floor_divide", "fmod",
    "logaddexp", "logaddexp2", "mul", "multiply", "nextafter", "remainder", "sub",
    "subtract", "true_divide", "eq", "ne", "le", "ge", "greater", "greater_equal", "gt",
    "less_equal", "lt", "less", "maximum", "minimum", "fmax", "fmin", "not_equal",
}
INPLACE_BINARY_NAMES = {n + "_" for n in BINARY_NAMES - {"logaddexp", "logaddexp2", "equal",
                                                         "fmin", "minimum", "maximum", "fmax"}}

REDUCE_NAMES = {"sum", "mean", "amin", "amax", "argmin", "argmax", "prod", "all", "norm",
                "var", "std"}

PASSTHROUGH_NAMES = {
    "select", "transpose", "split", "t", "getitem", "expand", "expand_as", "view", "view_as",
    "reshape", "reshape_as", "cat", "concat", "concatenate", "unsqueeze", "unfold", "stack",
    "flatten", "narrow", "chunk",
}

CONVERSION_NAMES = {"to", "double", "float", "half", "bfloat16", "int", "long", "short",
                    "char", "bool", "cpu", "cuda", "type", "type_as"}

# Python operators: the op they are (r-forms run reflected, i-forms in place)
_DUNDER = {"truediv": "div", "floordiv": "floor_divide", "mod": "remainder",
           "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
           "lshift": "bitwise_left_shift", "rshift": "bitwise_right_shift",
           "invert": "bitwise_not", "pos": "positive", "div": "div"}
_REFLECTABLE = {"add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and",
                "or", "xor", "lshift", "rshift", "div"}


def _op_name(func) -> str:
    """The op's name: ``add`` for ``__add__``/``__radd__``, ``add_`` for ``__iadd__``."""
    name = getattr(func, "__name__", repr(func))
    if not (name.startswith("__") and name.endswith("__")):
        return name
    core = name[2:-2]
    suffix = ""
    if core.startswith("r") and core[1:] in _REFLECTABLE:
        core = core[1:]
    elif core.startswith("i") and core[1:] in _REFLECTABLE:
        core, suffix = core[1:], "_"
    return _DUNDER.get(core, core) + suffix


def _map(args, kwargs, fn):
    """``args`` and ``kwargs`` with each MaskedTensor (also inside lists and tuples) mapped."""
    def one(a):
        if is_masked_tensor(a):
            return fn(a)
        if type(a) in (list, tuple):
            return type(a)(one(x) for x in a)
        return a

    return [one(a) for a in args], {k: one(v) for k, v in kwargs.items()}


def _data_of(mt):
    return mt._masked_data


def _mask_of(mt):
    return mt._masked_mask


def _not_supported(name: str) -> TypeError:
    warnings.warn(
        f"{name} is not implemented in __torch_function__ for MaskedTensor.\nIf you would like "
        "this operator to be supported, please file an issue for a feature request at "
        "https://github.com/pytorch/maskedtensor/issues with a minimal reproducible code "
        "snippet.\nIn the case that the semantics for the operator are not trivial, it would be "
        "appreciated to also include a proposal for the semantics.", stacklevel=4)
    return TypeError(f"Multiple dispatch failed for '{name}'; all __torch_function__ handlers "
                     f"returned NotImplemented:\n\n  - tensor subclass {MaskedTensor}")


# -- unary and binary --------------------------------------------------------------------------

def _sparse_like(data, values):
    """A sparse tensor with ``data``'s layout, indices and size holding ``values``."""
    import ember

    if data.layout == ember.sparse_coo:
        return ember.sparse_coo_tensor(data.indices(), values, data.size(), is_coalesced=True)
    return ember.sparse_csr_tensor(data.crow_indices(), data.col_indices(), values, data.size())


def _unary(func, name, args, kwargs):
    for a in args[1:]:
        if isinstance(a, Tensor):
            raise TypeError("MaskedTensor unary ops do not support additional Tensor arguments")
    self = args[0]
    data = self._masked_data
    if _sparse(data):  # the op on the stored values
        result = _sparse_like(data, func(data.values(), *args[1:], **kwargs))
        if name.endswith("_"):
            self._set_data_mask(result, self._masked_mask)
            return self
        return _wrap(result, self._masked_mask)
    result = func(data, *args[1:], **kwargs)
    if name.endswith("_"):
        return self
    return _wrap(result, self._masked_mask)


def _binary_sparse(func, name, args, kwargs, data_args, data_kwargs):
    """A binary op whose left operand's data is sparse: on the stored values (a sparse right
    operand must store the same elements)."""
    import ember

    lhs, rhs = data_args[0], data_args[1]
    if isinstance(rhs, Tensor) and rhs.layout == lhs.layout:
        if lhs.layout == ember.sparse_coo:
            if not _tensors_match(lhs.indices(), rhs.indices()):
                raise ValueError("sparse_coo indices must match. If you need support for this, "
                                 "please open an issue on Github.")
            if lhs.size() != rhs.size():
                raise ValueError("input1 and input2 must have the same size for binary "
                                 "functions.")
        else:
            if not (_tensors_match(lhs.crow_indices(), rhs.crow_indices())
                    and _tensors_match(lhs.col_indices(), rhs.col_indices())):
                raise ValueError("sparse_csr indices must match. If you need support for this, "
                                 "please open an issue on Github.")
        rhs = rhs.values()
    result = _sparse_like(lhs, func(lhs.values(), rhs, *data_args[2:], **data_kwargs))
    if name.endswith("_"):
        args[0]._set_data_mask(result, args[0]._masked_mask)
        return args[0]
    mask = args[0]._masked_mask if is_masked_tensor(args[0]) else args[1]._masked_mask
    return _wrap(result, mask)


def _binary(func, name, args, kwargs):
    for a in args[2:]:
        if isinstance(a, Tensor):
            raise TypeError("MaskedTensor binary ops do not support Tensor arguments aside from "
                            "the lhs and rhs")
    if len(args) < 2:
        raise TypeError(f"{name}() expects two operands")
    if not _masks_match(args[0], args[1]):
        raise ValueError("Input masks must match. If you need support for this, please open an "
                         "issue on Github.")
    if name.endswith("_") and not is_masked_tensor(args[0]):
        raise TypeError(f"{name}(): an in-place op on a plain tensor cannot take a "
                        "MaskedTensor operand (its result is a MaskedTensor)")
    data_args, data_kwargs = _map(args, kwargs, _data_of)
    if isinstance(data_args[0], Tensor) and _sparse(data_args[0]):
        return _binary_sparse(func, name, args, kwargs, data_args, data_kwargs)
    if not name.endswith("_") and _plain_operand_needs_grad(args):
        return _binary_masked_grad(func, args, kwargs, data_args, data_kwargs)
    result = func(*data_args, **data_kwargs)
    if name.endswith("_"):
        return args[0]
    mask = args[0]._masked_mask if is_masked_tensor(args[0]) else args[1]._masked_mask
    if not isinstance(result, Tensor):
        return result
    return _wrap(result, mask.expand_as(result))


def _plain_operand_needs_grad(args) -> bool:
    import ember

    return ember.is_grad_enabled() and any(
        isinstance(a, Tensor) and not is_masked_tensor(a) and a.requires_grad for a in args[:2])


def _binary_masked_grad(func, args, kwargs, data_args, data_kwargs):
    """A binary op with a plain operand that requires grad: that operand's gradient is
    summed over the specified elements only. The op runs on the data with its unspecified
    elements set to 1 for the gradient, and on the data as it is for the values there, so
    a nan or inf under the mask reaches neither the values nor the gradient (PyTorch gets
    this by passing masked gradients)."""
    import ember

    mt = args[0] if is_masked_tensor(args[0]) else args[1]
    mask = mt._masked_mask

    def safe(a):
        return ember.where(a._masked_mask, a._masked_data, 1)

    safe_args, safe_kwargs = _map(args, kwargs, safe)
    graded = func(*safe_args, **safe_kwargs)
    with ember.no_grad():
        full = func(*data_args, **data_kwargs)
    if not isinstance(graded, Tensor):
        return graded
    mask = mask.expand_as(graded)
    return _wrap(ember.where(mask, graded, full), mask)


def _lt_method(func, name, args, kwargs):
    """``MaskedTensor.__lt__``: PyTorch defines it on the class, keeping the left mask and
    not checking the right one."""
    self, other = args[0], args[1]
    if not is_masked_tensor(self):  # reflected: other < self
        return _binary(func, "lt", args, kwargs)
    other = other._masked_data if is_masked_tensor(other) else other
    return _wrap(self._masked_data < other, self._masked_mask)


# -- reductions --------------------------------------------------------------------------------

def _masked_all(data, dim=None, keepdim=False, mask=None):
    import ember

    filled = data if mask is None else data.masked_fill(~mask, True)
    if dim is None:
        return filled.all()
    return ember.all(filled, dim=dim, keepdim=keepdim)


def _multidim_any(mask, dim, keepdim):
    import ember

    if isinstance(dim, int):
        return _multidim_any(mask, [dim], keepdim)
    for d in sorted(dim, reverse=True):
        mask = ember.any(mask, dim=d, keepdim=keepdim)
    return mask


def _masked_fn(name):
    from ... import masked

    return getattr(masked, name)


def _reduce_all(name, self):
    import ember

    data, mask = self._masked_data, self._masked_mask
    if _sparse(data):  # over the stored values
        mask = mask.values()
        if name in ("argmin", "argmax") and data.layout == ember.sparse_coo:
            # the flat index of the element the values' arg-reduction picks (PyTorch's)
            pick = _masked_fn(name)(data.values(), mask=mask).to(dtype=ember.int64)
            idx = data.indices()[:, pick]
            size = ember.tensor(list(data.size()), device=data.device)
            stride = data.numel() / size.cumprod(0)
            result = ember.sum(idx * stride)
        elif name == "all":
            result = _masked_all(data.values(), mask=mask)
        else:
            result = _masked_fn(name)(_wrap(data.values(), mask))
        return _wrap(result, ember.any(mask))
    if name == "all":
        result = _masked_all(data, mask=mask)
    else:
        result = _masked_fn(name)(self, mask=mask)
    return _wrap(result, ember.any(mask))


def _reduce_dim_args(input, dim, keepdim=False, dtype=None):
    return input, dim, keepdim, dtype


def _reduce_dim(name, self, dim, keepdim=False, dtype=None):
    mask = self._masked_mask
    if name == "all":
        result = _masked_all(self._masked_data, dim=dim, keepdim=keepdim, mask=mask)
    else:
        result = _masked_fn(name)(self, dim=dim, keepdim=keepdim, dtype=dtype, mask=mask)
    return _wrap(result, _multidim_any(mask, dim, keepdim))


def _reduction(func, name, args, kwargs):
    if not is_masked_tensor(args[0] if args else kwargs.get("input")):
        raise TypeError("Input to reduce_dim must be a MaskedTensor")
    if len(args) == 1 and not kwargs:
        return _reduce_all(name, args[0])
    if args[0].is_sparse:
        warnings.warn(
            f"The sparse version of {name} is not implemented in reductions.\nIf you would "
            "like this operator to be supported, please file an issue for a feature request at "
            "https://github.com/pytorch/maskedtensor/issues with a minimal reproducible code "
            "snippet.\nIn the case that the semantics for the operator are not trivial, it "
            "would be appreciated to also include a proposal for the semantics.", stacklevel=4)
        raise TypeError(f"Multiple dispatch failed for '{name}'; all __torch_function__ "
                        f"handlers returned NotImplemented:\n\n  - tensor subclass "
                        f"{MaskedTensor}")
    kwargs = dict(kwargs)
    if "axis" in kwargs:
        kwargs["dim"] = kwargs.pop("axis")
    input, dim, keepdim, dtype = _reduce_dim_args(*args, **kwargs)
    if dim is None:
        if keepdim:
            dim = tuple(range(input.dim()))
        else:
            return _reduce_all(name, input)
    return _reduce_dim(name, input, dim, keepdim, dtype)


# -- shape ops and the rest --------------------------------------------------------------------

def _passthrough(func, name, args, kwargs):
    data_args, data_kwargs = _map(args, kwargs, _data_of)
    result_data = func(*data_args, **data_kwargs)
    mask_args, mask_kwargs = _map(args, kwargs, _mask_of)
    result_mask = func(*mask_args, **mask_kwargs)
    return _wrap_result(result_data, result_mask)


def _on_data(func, name, args, kwargs):
    """clone, detach: the op on the data, the mask kept."""
    self = args[0]
    return _wrap(func(self._masked_data, *args[1:], **kwargs), self._masked_mask)


def _contiguous(func, name, args, kwargs):
    self = args[0]
    if _sparse(self._masked_data):
        raise ValueError("MaskedTensors with sparse data do not have is_contiguous")
    if self._masked_data.is_contiguous():
        return self
    return _wrap(self._masked_data.contiguous(), self._masked_mask.contiguous())


def _conversion(func, name, args, kwargs):
    """dtype and device conversions: the data converted, the mask moved (still bool)."""
    import ember

    data_args, data_kwargs = _map(args, kwargs, _data_of)
    data = func(*data_args, **data_kwargs)
    if not isinstance(data, Tensor):  # mt.type() with no dtype: the type's name
        return data
    mask = args[0]._masked_mask
    if mask.device != data.device:
        mask = mask.to(device=data.device)
    if data is args[0]._masked_data:
        return args[0]
    if mask.dtype != ember.bool:
        mask = mask.bool()
    return _wrap(data, mask)


def _where(func, name, args, kwargs):
    """``where(cond, x, y)``: an operand that is a plain tensor counts as fully specified;
    the result's mask is ``where(cond, x's mask, y's mask)``."""
    import ember

    if kwargs:
        raise ValueError(f"__torch_function__, torch.where: len(kwargs) must be 0 but got "
                         f"{len(kwargs)}")
    if len(args) != 3:
        raise ValueError(f"__torch_function__, torch.where: len(args) must be 3 but got "
                         f"{len(args)}")
    if getattr(func, "_ember_namespace", "") == "Tensor" or func is Tensor.where:
        x, cond, y = args  # Tensor.where(self, condition, other)
    else:
        cond, x, y = args
    if is_masked_tensor(cond):
        raise TypeError("where(): the condition must be a plain boolean tensor, not a "
                        "MaskedTensor")

    def parts(v):
        if is_masked_tensor(v):
            return v._masked_data, v._masked_mask
        if not isinstance(v, Tensor):
            v = ember.tensor(v, dtype=(x if isinstance(x, Tensor) else y).dtype)
        return v, ember.ones_like(v, dtype=ember.bool)

    dx, mx = parts(x)
    dy, my = parts(y)
    return _wrap(ember.where(cond, dx, dy), ember.where(cond, mx, my))


def _softmax_args(args, kwargs):
    dim = args[1] if len(args) > 1 else kwargs.get("dim")
    dtype = kwargs.get("dtype", args[3] if len(args) > 3 else None)
    if dim is None:
        raise TypeError("softmax(): a MaskedTensor needs an explicit dim")
    return dim, dtype


def _softmax(func, name, args, kwargs):
    """``softmax``/``softmin`` over the specified elements (PyTorch's ``_masked_softmax``):
    unspecified elements, and slices with none specified, give 0."""
    import ember

    self = args[0]
    dim, dtype = _softmax_args(args, kwargs)
    data, mask = self._masked_data, self._masked_mask
    if dtype is not None:
        data = data.to(dtype)
    if name == "softmin":
        data = -data
    fill = float("-inf")
    out = ember.softmax(data.masked_fill(~mask, fill), dim)
    return _wrap(out.masked_fill(~mask, 0), mask)


def _ones_like(func, name, args, kwargs):
    if len(args) != 1:
        raise ValueError(f"__torch_function__, {name}: len(args) must be 1 but got {len(args)}")
    self = args[0]
    return _wrap(func(self._masked_data, **kwargs), self._masked_mask)


def _copy_(func, name, args, kwargs):
    dst, src = args[0], args[1]
    if not _masks_match(dst, src):
        raise ValueError("args[0] mask and args[1] mask must match but do not")
    src_data = src._masked_data if is_masked_tensor(src) else src
    dst._masked_data.copy_(src_data, *args[2:], **kwargs)
    return dst


def _to_dense(func, name, args, kwargs):
    self = args[0]
    if not _sparse(self._masked_data):
        return self
    return _wrap(self._masked_data.to_dense(), self._masked_mask.to_dense())


def _to_sparse(func, name, args, kwargs):
    """``to_sparse``/``to_sparse_coo``: the specified elements stored (the mask's True
    elements), the rest unspecified."""
    import ember

    self = args[0]
    if self.layout == ember.sparse_coo:
        return self
    data, mask = _to_dense(func, name, args, kwargs)._masked_data, self._masked_mask
    sparse_mask = mask.to_dense().to_sparse_coo().coalesce()
    return _wrap(data.sparse_mask(sparse_mask), sparse_mask)


def _to_sparse_csr(func, name, args, kwargs):
    import ember

    self = args[0]
    if self._masked_data.ndim != 2:
        raise ValueError("Only 2D tensors can be converted to the SparseCsr layout but got "
                         f"shape: {self._masked_data.size()}")
    if self.layout == ember.sparse_csr:
        return self
    data = _to_dense(func, name, args, kwargs)._masked_data
    sparse_mask = self._masked_mask.to_dense().to_sparse_csr()
    return _wrap(data.sparse_mask(sparse_mask), sparse_mask)


def _is_same_size(func, name, args, kwargs):
    a, b = args[0], args[1]
    a = a._masked_data if is_masked_tensor(a) else a
    b = b._masked_data if is_masked_tensor(b) else b
    return a.is_same_size(b)


RULES: dict = {}
for _n in UNARY_NAMES | INPLACE_UNARY_NAMES:
    RULES[_n] = _unary
for _n in BINARY_NAMES | INPLACE_BINARY_NAMES:
    RULES[_n] = _binary
for _n in REDUCE_NAMES:
    RULES[_n] = _reduction
for _n in PASSTHROUGH_NAMES:
    RULES[_n] = _passthrough
for _n in CONVERSION_NAMES:
    RULES[_n] = _conversion
RULES.update({
    "clone": _on_data, "detach": _on_data, "contiguous": _contiguous, "where": _where,
    "softmax": _softmax, "softmin": _softmax, "ones_like": _ones_like, "copy_": _copy_,
    "to_dense": _to_dense, "to_sparse": _to_sparse, "to_sparse_coo": _to_sparse,
    "to_sparse_csr": _to_sparse_csr, "is_same_size": _is_same_size,
})

def torch_function(cls, func, types, args=(), kwargs=None):
    """``MaskedTensor.__torch_function__``: run the op's rule (see the module docstring)."""
    kwargs = kwargs or {}
    if getattr(func, "__name__", "") == "__lt__":
        return _lt_method(func, "lt", args, kwargs)
    name = _op_name(func)
    rule = RULES.get(name)
    if rule is None:
        raise _not_supported(name)
    return rule(func, name, args, kwargs)

