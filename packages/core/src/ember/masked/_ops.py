"""The masked reductions and normalizations of ``torch.masked`` (``torch.masked._ops``).

Each function takes a plain tensor with a boolean ``mask`` (True: the element takes part;
broadcastable to the input) or a :class:`~ember.masked.MaskedTensor` (its own mask is used),
fills the masked-out elements with the operation's identity value (``_reduction_identity``:
0 for sum, 1 for prod, -inf for amax/logsumexp, ...) and runs the ordinary op. The result
is a plain tensor; where every element of a slice is masked out, its value is the identity
(or ``nan`` for mean/var/std/median), as in PyTorch. Gradients flow to the masked-in
elements only (the fill is a ``where``).

Only the strided layout is supported: a sparse input raises ``ValueError`` as PyTorch does
for the ops it has no sparse kernel for.
"""

from __future__ import annotations

import builtins
import math

import ember

from .maskedtensor.core import is_masked_tensor

__all__ = ["sum", "prod", "cumsum", "cumprod", "amax", "amin", "argmax", "argmin", "mean",
           "median", "logsumexp", "logaddexp", "norm", "var", "std", "softmax",
           "log_softmax", "softmin", "normalize"]

_INT_TO_INT64 = None  # filled lazily: the dtypes that sum/prod promote to int64


def _small_ints():
    global _INT_TO_INT64
    if _INT_TO_INT64 is None:
        _INT_TO_INT64 = {ember.uint8, ember.bool, ember.int8, ember.int16, ember.int32}
    return _INT_TO_INT64


def _reduction_identity(op_name: str, input, *args):
    """The identity value of a reduction (a 0-dim tensor of ``input``'s dtype and device), or
    None where it is not defined (mean, var, std)."""
    dtype = input.dtype
    device = input.device
    op_name = op_name.rsplit(".", 1)[-1]
    if op_name in {"sum", "cumsum"}:
        return ember.tensor(0, dtype=dtype, device=device)
    if op_name in {"prod", "cumprod"}:
        return ember.tensor(1, dtype=dtype, device=device)
    if op_name in {"amax", "argmax", "logaddexp", "logsumexp"}:
        if dtype.is_floating_point:
            return ember.tensor(-math.inf, dtype=dtype, device=device)
        if dtype.is_complex and op_name == "logsumexp":
            return ember.tensor(complex(-math.inf, 0), dtype=dtype, device=device)
        if dtype.is_signed or dtype == ember.uint8:
            return ember.tensor(ember.iinfo(dtype).min, dtype=dtype, device=device)
    elif op_name in {"amin", "argmin"}:
        if dtype.is_floating_point:
            return ember.tensor(math.inf, dtype=dtype, device=device)
        if dtype.is_signed or dtype == ember.uint8:
            return ember.tensor(ember.iinfo(dtype).max, dtype=dtype, device=device)
    elif op_name == "mean":
        return None
    elif op_name == "norm":
        ord = args[0] if args else 2
        if ord == float("-inf"):
            if not dtype.is_floating_point:
                raise AssertionError(f"input must be floating point, got {dtype}")
            return ember.tensor(math.inf, dtype=dtype, device=device)
        return ember.tensor(0, dtype=dtype, device=device)
    elif op_name == "median":
        dtype = dtype if dtype.is_floating_point else ember.float32
        return ember.tensor(math.nan, dtype=dtype, device=device)
    elif op_name in {"var", "std"}:
        return None
    raise NotImplementedError(f"identity of {op_name} on {dtype} input")


def _canonical_dim(dim, ndim: int) -> tuple:
    """``dim`` as a sorted tuple of non-negative dims (None or ``()``: every dim)."""
    dims: list = []
    if dim == ():
        dim = None
    if dim is None:
        return tuple(range(ndim))
    ndim = builtins.max(ndim, 1)
    dim_ = (dim,) if isinstance(dim, int) else dim
    for d in dim_:
        if d in dims:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        if d >= ndim or d < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, "
                             f"{ndim - 1}], but got {d})")
        dims.append(d % ndim)
    return tuple(sorted(dims))


def _any(input, dim: tuple, keepdim: bool):
    r = input
    for d in reversed(dim):
        r = r.any(dim=d, keepdim=keepdim)
    return r


def _check_strided(t, what: str) -> None:
    if t.layout != ember.strided:
        raise ValueError(f"masked {what} expects strided tensor (got {t.layout} tensor); "
                         "Ember's masked ops support only the strided layout")


def _where(mask, input, fill_value):
    """``ember.where`` (the strided layout only)."""
    if mask.layout != ember.strided:
        raise ValueError(f"_where expects strided tensor but got {mask.layout}; Ember's "
                         "masked ops support only the strided layout")
    return ember.where(mask, input, fill_value)


def _input_mask(input, *args, **kwargs):
    """The canonical mask: ``mask`` broadcast to ``input``'s shape, as bool."""
    if input.layout not in {ember.strided, ember.sparse_coo, ember.sparse_csr}:
        raise ValueError("_input_mask expects strided or sparse COO or sparse CSR tensor but "
                         f"got {input.layout}")
    mask = kwargs.get("mask")
    if mask is None:
        raise ValueError("_input_mask requires explicit mask")
    if is_masked_tensor(mask):
        raise TypeError("mask must be a Tensor, not a MaskedTensor")
    if mask.shape != input.shape:
        if mask.ndim > input.ndim:
            raise IndexError("_input_mask expected broadcastable mask (got mask dimensionality "
                             "higher than of the input)")
        if mask.layout != ember.strided:
            raise ValueError("Ember's masked ops support only strided masks")
        mask = ember.broadcast_to(mask.clone(), input.shape).to(dtype=ember.bool)
    if mask.layout != input.layout:
        if input.layout == ember.strided:
            mask = mask.to_dense()
        else:
            raise ValueError("Ember's masked ops support only the strided layout")
    return mask.to(dtype=ember.bool)


_REDUCTIONS = {"sum", "prod", "amax", "amin", "argmax", "argmin", "mean", "median", "norm",
               "var", "std", "logsumexp"}
_NORMALIZATIONS = {"softmax", "log_softmax", "softmin", "normalize", "cumsum", "cumprod"}


def _output_mask(op, input, *args, **kwargs):
    """The mask of the result of masked operation ``op`` on these arguments."""
    if not callable(op):
        raise ValueError(f"_output_mask expected masked operation (got {type(op).__name__} "
                         "object)")
    if op.__name__ in _REDUCTIONS:
        if op.__name__ == "norm" and args:
            args = args[1:]
        dim = args[0] if args else kwargs.get("dim")
        outmask = _input_mask(input, *args, **kwargs)
        keepdim = kwargs.get("keepdim", False)
        return _any(outmask, _canonical_dim(dim, input.ndim), bool(keepdim))
    if op.__name__ in _NORMALIZATIONS:
        return _input_mask(input, *args, **kwargs)
    raise ValueError(f"_output_mask expected masked operation (got callable {op.__module__}."
                     f"{op.__name__})")


def _combine_input_and_mask(op, input, mask, *args):
    """``input`` with its masked-out elements replaced by ``op``'s identity (a plain tensor).
    A MaskedTensor ``input`` uses its own mask (``mask`` is then ignored, as in PyTorch)."""
    if is_masked_tensor(input):
        data, mask = input._masked_data, input._masked_mask
    else:
        data = input
    if mask is None:
        return data
    canonical_mask = _input_mask(data, mask=mask)
    fill_value = _reduction_identity(op.__name__, data, *args)
    return _where(canonical_mask, data, fill_value)


def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Masked sum of ``input`` over ``dim`` (None: all dims); identity 0. Small integer and
    bool inputs sum to int64 unless ``dtype`` is given."""
    if dtype is None:
        dtype = input.dtype
        if dtype in _small_ints():
            dtype = ember.int64
    dim_ = _canonical_dim(dim, input.ndim)
    mask_input = _combine_input_and_mask(sum, input, mask)
    _check_strided(mask_input, "sum")
    return ember.sum(mask_input, dim_, bool(keepdim), dtype=dtype)


def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Masked product of ``input`` over ``dim``; identity 1."""
    if dtype is None:
        dtype = input.dtype
        if dtype in _small_ints():
            dtype = ember.int64
    dim_ = _canonical_dim(dim, input.ndim)
    mask_input = _combine_input_and_mask(prod, input, mask)
    _check_strided(mask_input, "prod")
    result = mask_input.to(dtype=dtype)
    for d in reversed(dim_):
        result = result.prod(dim=d, keepdim=bool(keepdim))
    return result


def cumsum(input, dim, *, dtype=None, mask=None):
    """Masked cumulative sum along ``dim`` (masked-out elements count as 0)."""
    if dtype is None:
        dtype = input.dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    mask_input = _combine_input_and_mask(sum, input, mask)
    _check_strided(mask_input, "cumsum")
    return ember.cumsum(mask_input, dim_, dtype=dtype).to(dtype=dtype)


def cumprod(input, dim, *, dtype=None, mask=None):
    """Masked cumulative product along ``dim`` (masked-out elements count as 1)."""
    if dtype is None:
        dtype = input.dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    mask_input = _combine_input_and_mask(prod, input, mask)
    _check_strided(mask_input, "cumprod")
    return ember.cumprod(mask_input, dim_, dtype=dtype).to(dtype=dtype)


def amax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Masked maximum over ``dim``; identity -inf (the dtype's minimum for integers)."""
    if dtype is None:
        dtype = input.dtype
    mask_input = _combine_input_and_mask(amax, input, mask)
    dim_ = _canonical_dim(dim, mask_input.ndim)
    _check_strided(mask_input, "amax")
    return ember.amax(mask_input, dim_, bool(keepdim)).to(dtype=dtype)


def amin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Masked minimum over ``dim``; identity inf (the dtype's maximum for integers)."""
    if dtype is None:
        dtype = input.dtype
    mask_input = _combine_input_and_mask(amin, input, mask)
    dim_ = _canonical_dim(dim, mask_input.ndim)
    _check_strided(mask_input, "amin")
    return ember.amin(mask_input, dim_, bool(keepdim)).to(dtype=dtype)


def argmax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Index of the masked maximum along ``dim`` (None: of the flattened input). Returned in
    ``dtype`` (default: the input's dtype, as in PyTorch)."""
    if dtype is None:
        dtype = input.dtype
    mask_input = _combine_input_and_mask(argmax, input, mask)
    _check_strided(mask_input, "argmax")
    return ember.argmax(mask_input, dim, bool(keepdim)).to(dtype=dtype)


def argmin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Index of the masked minimum along ``dim`` (None: of the flattened input), in
    ``dtype`` (default: the input's dtype)."""
    if dtype is None:
        dtype = input.dtype
    mask_input = _combine_input_and_mask(argmin, input, mask)
    _check_strided(mask_input, "argmin")
    return ember.argmin(mask_input, dim, bool(keepdim)).to(dtype=dtype)


def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Masked mean over ``dim``: the masked sum over the count of masked-in elements (``nan``
    where there are none). Needs a floating ``dtype``."""
    dtype_source = "Optional"
    if dtype is None:
        dtype = input.dtype
        dtype_source = "Input"
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(f"mean(): Could not infer output dtype. {dtype_source} dtype must be "
                         f"either a floating point or complex dtype. Got: {dtype}")
    if input.layout != ember.strided:
        raise ValueError(f"masked mean expects strided or sparse_csr tensor (got {input.layout}"
                         " tensor); Ember's masked ops support only the strided layout")
    if mask is None:
        count = sum(ember.ones(input.shape, dtype=ember.int64, device=input.device), dim,
                    keepdim=keepdim)
        total = sum(input, dim, keepdim=keepdim, dtype=dtype)
    else:
        inmask = _input_mask(input, mask=mask)
        count = inmask.sum(dim=dim, keepdim=bool(keepdim))
        total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=inmask)
    return total / count


def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None):
    """Masked median along ``dim`` (``nan`` for fully masked-out slices; an integer input
    with one raises ``ValueError``)."""
    if dtype is None:
        dtype = input.dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    is_float = input.dtype.is_floating_point
    if not is_float:
        input = input.to(dtype=ember.float32)
    mask_input = _combine_input_and_mask(median, input, mask)
    _check_strided(mask_input, "median")
    output = ember.nanmedian(mask_input, dim_, keepdim).values
    if is_float:
        return output
    if not ember.isnan(output).any():
        return output.to(dtype=dtype)
    raise ValueError("masked median expects no fully masked out rows if dtype is not floating "
                     "point")


def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Masked log-sum-exp over ``dim`` (-inf for fully masked-out slices)."""
    if dtype is None:
        dtype = input.dtype
    dim_ = _canonical_dim(dim, input.ndim)
    mask_input = _combine_input_and_mask(logsumexp, input, mask)
    _check_strided(mask_input, "logsumexp")
    return ember.logsumexp(mask_input, dim_, keepdim=keepdim).to(dtype=dtype)


def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):
    """``logaddexp(input, other)`` with each operand's masked-out elements taken as -inf.

    Example::

        >>> input = ember.tensor([-100.0, -200, -300])
        >>> other = ember.tensor([-1.0, -2, -3])
        >>> mask = ember.tensor([True, False, True])
        >>> ember.masked.logaddexp(input, other, input_mask=mask, other_mask=mask)
        tensor([-1., -inf, -3.])
    """
    if dtype is None:
        dtype = input.dtype
    if input.layout == ember.strided and other.layout == ember.strided:
        mask_input = _combine_input_and_mask(logaddexp, input, input_mask)
        mask_other = _combine_input_and_mask(logaddexp, other, other_mask)
        return ember.logaddexp(mask_input, mask_other).to(dtype=dtype)
    raise ValueError(f"masked logaddexp expects strided tensors (got {input.layout} tensor for "
                     f"input, {other.layout} for other)")


def norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Masked vector norm of order ``ord`` over ``dim`` (masked-out elements count as 0, or
    as inf for ``ord=-inf``)."""
    if dtype is None:
        dtype = input.dtype
    mask_input = _combine_input_and_mask(norm, input, mask, ord)
    _check_strided(mask_input, "norm")
    dim_ = _canonical_dim(dim, input.ndim)
    return ember.linalg.vector_norm(mask_input, ord, dim_, bool(keepdim), dtype=dtype)


def _std_var(input, dim, unbiased, *, correction_opt, keepdim, dtype, mask, take_sqrt):
    if unbiased is not None and correction_opt is not None:
        raise AssertionError("Only one of unbiased and correction may be given")
    correction = 1.0
    if unbiased is not None:
        correction = 1.0 if unbiased else 0.0
    if correction_opt is not None:
        correction = float(correction_opt)
    if dtype is None:
        dtype = input.dtype
        if not (dtype.is_floating_point or dtype.is_complex):
            dtype = ember.float32
    compute_dtype = dtype
    if not (compute_dtype.is_floating_point or compute_dtype.is_complex):
        compute_dtype = ember.float32
    if input.layout != ember.strided:
        raise ValueError(f"masked std/var expects strided tensor (got {input.layout} tensor)")
    if mask is None:
        count = sum(ember.ones(input.shape, dtype=ember.int64, device=input.device), dim,
                    keepdim=True)
        sample_total = sum(input, dim, keepdim=True, dtype=dtype)
    else:
        inmask = _input_mask(input, mask=mask)
        count = inmask.sum(dim=dim, keepdim=True)
        sample_total = sum(input, dim, keepdim=True, dtype=dtype, mask=inmask)
    sample_mean = ember.divide(sample_total, count)
    x = ember.subtract(input, sample_mean)
    sq = x * x.conj() if x.dtype.is_complex else x * x
    if mask is None:
        total = sum(sq, dim, keepdim=keepdim, dtype=compute_dtype)
    else:
        total = sum(sq, dim, keepdim=keepdim, dtype=compute_dtype, mask=inmask)
    if not keepdim:
        count = count.reshape(total.shape)
    if correction != 0:
        real_dtype = compute_dtype.to_real() if compute_dtype.is_complex else compute_dtype
        count = count.to(real_dtype)
        count = ember.subtract(count, correction)
        count = ember.maximum(count, count.new_zeros([]))
    output = ember.divide(total, count).to(dtype=dtype)
    if take_sqrt:
        output = ember.sqrt(output)
    return output


def var(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None,
        mask=None):
    """Masked variance over ``dim`` (Bessel-corrected unless ``unbiased=False`` or another
    ``correction``; ``nan`` for fully masked-out slices)."""
    return _std_var(input, dim, unbiased, correction_opt=correction, keepdim=keepdim,
                    dtype=dtype, mask=mask, take_sqrt=False)


def std(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None,
        mask=None):
    """Masked standard deviation over ``dim`` (see :func:`var`)."""
    return _std_var(input, dim, unbiased, correction_opt=correction, keepdim=keepdim,
                    dtype=dtype, mask=mask, take_sqrt=True)


def _softmax_like(name, fill_op, fn, input, dim, dtype, mask, negate=False):
    """``fn`` along ``dim`` of ``input`` with its masked-out elements filled by ``fill_op``'s
    identity (``amax``: -inf for softmax; ``amin``: +inf for softmin, then negated)."""
    if dtype is None:
        dtype = input.dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    mask_input = _combine_input_and_mask(fill_op, input, mask)
    _check_strided(mask_input, name)
    return fn(-mask_input if negate else mask_input, dim_, dtype=dtype)


def softmax(input, dim, *, dtype=None, mask=None):
    """Softmax along ``dim`` over the masked-in elements (masked-out ones are 0; a fully
    masked-out slice is ``nan``)."""
    return _softmax_like("softmax", amax, ember.softmax, input, dim, dtype, mask)


def log_softmax(input, dim, *, dtype=None, mask=None):
    """Log-softmax along ``dim`` over the masked-in elements (masked-out ones are -inf)."""
    return _softmax_like("log_softmax", amax, ember.log_softmax, input, dim, dtype, mask)


def softmin(input, dim, *, dtype=None, mask=None):
    """Softmin along ``dim`` over the masked-in elements."""
    return _softmax_like("softmin", amin, ember.softmax, input, dim, dtype, mask, negate=True)


def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None):
    """``x / max(norm(x, ord), eps)`` along ``dim`` over the masked-in elements (masked-out
    ones are 0)."""
    if dtype is None:
        dtype = input.dtype
    mask_input = _combine_input_and_mask(sum, input, mask)
    _check_strided(mask_input, "normalize")
    nrm_ = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    denom = ember.maximum(nrm_, nrm_.new_full([], eps))
    return ember.divide(mask_input, denom)
