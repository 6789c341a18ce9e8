"""Reductions: sum, mean, nansum/nanmean, prod, var/std, max/min and friends, logsumexp, norm,
all/any, count_nonzero, cumulative ops, dist and renorm. Sorting and selection by order (sort,
topk, kthvalue, median, mode, quantile, unique) live in ``ops.sorting``, re-exported here.

Forwards are array code on ``input._data``; backwards are Tensor ops, so they are themselves
differentiable. Ops that pick elements (max with a dim, cummax, ...) route the gradient back
to the picked indices with ``scatter``; full-tensor max/min share the gradient evenly among
tied elements, as PyTorch does (``ops._selection``).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _dtype, _factory, _native
from .. import return_types as _return_types
from .._device import xp_of
from .._dtype import scalar_type_name
from .._sparse_tensor import _SparseData
from .._tensor import Tensor, _make
from .._warn import user_stacklevel
from ..autograd.grad_mode import GRAD
from ..autograd.graph import make_node_class, mark_holomorphic, record, result
from ._casts import cast_to
from ._promotion import broadcast_array, normalize_dims, wrap_dim
from ._selection import (
    along,
    c_order,
    const,
    evenly_bw,
    int_arg,
    keep,
    keep_shape,
    no_complex,
    no_complex_kernel,
    nonempty,
    pick_along,
    picked,
    same_nan,
    select_bw,
)
from ._signatures import check_binds
from .registry import register

# re-exported: the sorting ops were reductions' before ``ops.sorting`` (their old import path
# and reduction.__all__ stay valid)
from .sorting import (
    argsort,
    kthvalue,
    median,
    mode,
    msort,
    nanmedian,
    nanquantile,
    quantile,
    sort,
    topk,
    unique,
    unique_consecutive,
)

__all__ = ["sum", "mean", "nansum", "nanmean", "prod", "var", "std", "var_mean", "std_mean",
           "max", "min", "amax", "amin", "aminmax", "argmax", "argmin", "logsumexp", "norm",
           "all", "any", "count_nonzero", "cumsum", "cumprod", "cummax", "cummin",
           "logcumsumexp", "sort", "argsort", "msort", "topk", "kthvalue", "median",
           "nanmedian", "mode", "quantile", "nanquantile", "unique", "unique_consecutive",
           "return_types", "dist", "renorm"]


# -- named-tuple results (``torch.return_types.max`` and friends) -------------------------------

#: the result types of the multi-output reductions, like ``torch.return_types``
return_types = _return_types


# -- shared helpers -----------------------------------------------------------------------------

def _dims_of(dim, ndim: int):
    """Reduced axes as a sorted tuple, or None for all; an empty list means all (PyTorch)."""
    if dim is None:
        return None
    try:
        dims = normalize_dims(dim, ndim)
    except TypeError:
        if not (isinstance(dim, Tensor) and not dim.ndim):
            raise
        dim = int(dim)  # a 0-dim integer tensor is an int dim, as in PyTorch
        dims = normalize_dims(dim, ndim)
    return None if not dims and ndim and not isinstance(dim, (int, np.integer)) else dims


def _count(shape, dims) -> int:
    """Number of elements reduced into each output element."""
    return math.prod(shape if dims is None else [shape[i] for i in dims])


def _expand_back(g, shape, dims, keepdim):
    """Broadcast a reduced gradient back to the input's ``shape``.

    Without ``create_graph`` nothing is recorded, so the broadcast view is made directly
    (every sum/mean backward passes here; ``expand``'s checks cost more than the view).
    """
    if g.__class__ is Tensor and not (g.requires_grad and GRAD.enabled):
        gd = g._data
        if not keepdim and gd.ndim != len(shape):
            gd = gd.reshape(keep_shape(shape, dims))
        return _make(broadcast_array(gd, shape), g._device)
    return keep(g, shape, dims, keepdim).expand(shape)


def _with_dtype(input, dtype):
    """``input`` cast to ``dtype`` first (``sum(x, dtype=...)``); the grad casts back."""
    if dtype is None:
        return input
    if input._data.__class__ is _SparseData:  # a sparse tensor (ember._sparse_tensor)
        return input.to(_dtype.to_dtype(dtype))
    return cast_to(input, None, _dtype.to_dtype(dtype), False)


#: the dtype a sum or product accumulates in, as in PyTorch, where not the input's own:
#: int64 for integers and bools, float32 for float16 and bfloat16 (rounded once, by
#: :func:`_rounded`). ``_ACC.get(d.dtype)`` costs less than the dtype tests it replaces.
_ACC = {np.dtype(t): np.int64 for t in (np.bool_, np.uint8, np.int8, np.int16, np.int32,
                                         np.uint16, np.uint32, np.uint64)}
_ACC.update((low, np.float32) for low in _dtype.OPMATH)
_CHALF = _dtype.CHALF_NP  # complex32: PyTorch's CPU sums and products have no kernel for it


def _check_acc_kernel(d, dtype, kernel: str) -> None:
    """PyTorch's sum and product kernels have no complex32 case, nor a uint16/32/64 one: those
    accumulate as int64 unless an explicit ``dtype`` keeps them (then its error)."""
    if d.dtype is _CHALF or dtype is not None and d.dtype in _dtype.SHELL_NP:
        raise _dtype.no_kernel(kernel, d.dtype)


def _acc_of(d, dtype):
    """The accumulation dtype of a sum/product of array ``d`` (``_ACC``), except that an
    explicit integer ``dtype`` (``sum(x, dtype=int32)``) sums in that dtype, as PyTorch's
    result does (a float16 one still accumulates in float32). NumPy's own default would
    widen int32 to int64, so the dtype is named."""
    acc = _ACC.get(d.dtype)
    return d.dtype if acc is np.int64 and dtype is not None else acc


def _rounded(r, acc, d):
    """A float16/bfloat16 input's result, accumulated in float32 (``acc``), back in its
    dtype."""
    return r.astype(d.dtype) if acc is np.float32 else r


def _floating_input(input, message: str):
    """PyTorch's error for an integer/bool input; ``{dtype}`` in ``message`` names it."""
    if input._data.dtype not in _dtype.INEXACT_NP:
        raise RuntimeError(message.format(dtype=scalar_type_name(input._data.dtype)))


def _floating_reduction(input, dim, dtype, message: str):
    """``(input, its array, reduced dims)`` of a reduction of floating inputs only (mean,
    nanmean): ``input`` cast to ``dtype`` first, ``message`` the error for any other."""
    input = _with_dtype(input, dtype)
    _floating_input(input, message)
    d = input._data
    return input, d, _dims_of(dim, d.ndim)


#: rows at most this long are summed by ``einsum`` (``_sum_of``)
_SHORT_SUM = 128
_F32_F64 = (np.dtype(np.float32), np.dtype(np.float64))


def _sum_of(d, dims, acc, keepdim):
    """``np.add.reduce`` of ``d`` over ``dims`` accumulating in ``acc``. NumPy's ``sum``
    along a short contiguous last axis runs one row at a time (8192 x 16 float32: 143 us,
    PyTorch 35); ``einsum('...j->...')`` sums the same rows in one vectorised loop (29 us),
    with as many partial sums per row as ``sum``'s blocks of up to 128 hold, so the
    rounding stays that of a short pairwise sum. Every such row is summed so, whatever the
    number of rows (a 1-d tensor is one row): a row's sum does not depend on the batch it
    is in (a sharded batch sums to the bits of the whole one). A sum over every axis but
    the last (a bias's gradient) is NumPy's row-by-row reduction in one native pass
    (``_native.column_sums``: the same bits, 512 x 64 float32 12 -> 2 us)."""
    if (acc is None and d.dtype in _F32_F64 and d.ndim and 1 < d.shape[-1] <= _SHORT_SUM
            and (dims == (d.ndim - 1,) or dims is None and d.ndim == 1)
            and d.flags.c_contiguous):
        r = np.einsum("...j->...", d)
        return r[..., None] if keepdim else r
    if (acc is None and dims is not None and d.ndim >= 2 and len(dims) == d.ndim - 1
            and dims[-1] == d.ndim - 2 and d.size and d.dtype in _F32_F64
            and d.flags.c_contiguous):
        # over every leading axis (a bias's gradient): column sums, one pass
        r = _native.column_sums(d.reshape(-1, d.shape[-1]))
        if r is not None:
            return r.reshape((1,) * len(dims) + r.shape) if keepdim else r
    return _add_reduce(d, dims, acc, None, keepdim)


def _mean_array(d, dims, keepdim, n):
    """``d.mean`` without NumPy's Python-level overhead (float16 and bfloat16 accumulate in
    float32, rounded once)."""
    acc = _dtype.OPMATH.get(d.dtype)
    r = _sum_of(d, dims, acc, keepdim) if d.__class__ is np.ndarray else \
        d.sum(axis=dims, dtype=acc, keepdims=keepdim)
    r = r / n if n else r * np.nan  # the mean of nothing is NaN (without NumPy's warning)
    return c_order(r.astype(d.dtype) if acc is not None else r)


def _as_float(input):
    """Integer/bool inputs promoted to the default float (``logsumexp`` of an int tensor);
    floating and complex ones kept."""
    if input._data.dtype in _dtype.INEXACT_NP:
        return input
    return cast_to(input, None, _dtype.get_default_dtype(), False)


def _reverse_cumsum(t, dim):
    return t.flip(dim).cumsum(dim).flip(dim)


# -- sum, mean, nansum, nanmean -----------------------------------------------------------------

def _sum_bw(node, g):
    shape, dims, keepdim = node.ctx
    return (_expand_back(g, shape, dims, keepdim),)


SumBackward0 = make_node_class("SumBackward0", _sum_bw)
SumBackward1 = make_node_class("SumBackward1", _sum_bw)


@register("sum", out="any")
def sum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum over ``dim`` (all dims when None); integers and bools sum as int64, float16
    accumulates in float32 (rounded once), as in PyTorch."""
    input = _with_dtype(input, dtype)
    d = input._data
    if d.dtype is _CHALF or dtype is not None and d.dtype in _dtype.SHELL_NP:
        raise _dtype.no_kernel("sum_cpu", d.dtype)
    dims = None if dim is None else _dims_of(dim, d.ndim)
    acc = _ACC.get(d.dtype) if dtype is None else _acc_of(d, dtype)
    if d.__class__ is np.ndarray:  # the ufunc's reduce skips ndarray.sum's Python wrapper
        r = _sum_of(d, dims, acc, keepdim)
    elif d.__class__ is _SparseData:  # a sparse tensor (ember._sparse_tensor): its own sum
        return input.sum(dim, keepdim)
    else:
        r = d.sum(axis=dims, dtype=acc, keepdims=keepdim)
    if acc is np.float32:
        r = r.astype(d.dtype)
    r = c_order(r)  # PyTorch allocates a reduction's result in C order
    return result(r, input._device, SumBackward0 if dim is None else SumBackward1,
                  (input,), ctx=(d.shape, dims, keepdim))


_add_reduce = np.add.reduce


def _mean_bw(node, g):
    shape, dims, keepdim, n = node.ctx
    return (_expand_back(g / n, shape, dims, keepdim),)


MeanBackward0 = make_node_class("MeanBackward0", _mean_bw)
MeanBackward1 = make_node_class("MeanBackward1", _mean_bw)


_MEAN_DTYPE_MESSAGE = ("mean(): could not infer output dtype. {which} dtype must be either a "
                       "floating point or complex dtype. Got: {dtype}")


@register("mean", out=True)
def mean(input, dim=None, keepdim=False, *, dtype=None):
    """Mean over ``dim``; integer inputs are an error unless ``dtype`` is floating."""
    input, d, dims = _floating_reduction(input, dim, dtype, _MEAN_DTYPE_MESSAGE.format(
        which="Input" if dtype is None else "Optional", dtype="{dtype}"))
    if d.dtype is _CHALF:  # PyTorch's mean is a sum
        raise _dtype.no_chalf_kernel("sum_cpu")
    n = _count(d.shape, dims)
    r = _mean_array(d, dims, keepdim, n)
    return result(r, input._device, MeanBackward0 if dim is None else MeanBackward1,
                  (input,), ctx=(d.shape, dims, keepdim, n))


def _nansum_bw(node, g):
    shape, dims, keepdim, not_nan = node.ctx
    return (_expand_back(g, shape, dims, keepdim) * not_nan,)


NansumBackward0 = make_node_class("NansumBackward0", _nansum_bw)


@register("nansum", out=True)
def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """``sum`` treating NaN as zero."""
    input = _with_dtype(input, dtype)
    d = input._data
    if dtype is not None and d.dtype in _dtype.SHELL_NP:
        raise _dtype.no_kernel("sum_cpu", d.dtype)
    dims = _dims_of(dim, d.ndim)
    if d.dtype.kind == "c":
        raise RuntimeError("nansum on CPU does not support complex inputs")
    xp = xp_of(input)
    acc = _acc_of(d, dtype)
    # NumPy's nansum skips NaN of its own float dtypes only: bfloat16 goes in as float32
    r = _rounded(xp.nansum(d if d.dtype is not _dtype.BFLOAT16_NP else d.astype(acc),
                           axis=dims, dtype=acc, keepdims=keepdim), acc, d)
    r = c_order(r)  # PyTorch's: C order
    ctx = None
    if input.requires_grad and GRAD.enabled:
        ctx = (d.shape, dims, keepdim, const(~xp.isnan(d), input))
    return result(r, input._device, NansumBackward0, (input,), ctx=ctx)


@register("nanmean", out=True)
def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """``mean`` of the elements that are not NaN."""
    # the input's own dtype must be floating, whatever ``dtype`` (unlike mean's)
    _floating_input(input, "nanmean(): expected input to have floating point or complex "
                    "dtype but got {dtype}")
    input, d, dims = _floating_reduction(input, dim, dtype, "nanmean(): expected input to "
                                         "have floating point or complex dtype but got {dtype}")
    if d.dtype.kind == "c":
        raise RuntimeError("nansum on CPU does not support complex inputs")
    counted = (~xp_of(input).isnan(d)).sum(axis=dims, keepdims=keepdim)
    with np.errstate(divide="ignore", invalid="ignore"):  # an all-NaN slice gives NaN
        return nansum(input, dim, keepdim) / const(counted, input)


# -- prod ---------------------------------------------------------------------------------------

def _exclusive_prods(x, dim):
    """``prod_{j != k} x_j`` along ``dim`` for every ``k``: zeros allowed, differentiable."""
    from .. import cat

    n = x._data.shape[dim]
    ones = _factory.ones(keep_shape(x._data.shape, (dim,)), dtype=x.dtype, device=x.device)
    before = cat([ones, x.narrow(dim, 0, n - 1)], dim).cumprod(dim)
    after = cat([ones, x.narrow(dim, 1, n - 1).flip(dim)], dim).cumprod(dim).flip(dim)
    return before * after


def _prod_grad(g, x, out, dim):
    """Gradient of ``prod`` along ``dim`` (``g`` and ``out`` keep the dim as size one)."""
    if not bool((x._data == 0).any()):
        return g * (out / x)
    return g * _exclusive_prods(x, dim)


def _half_prod(d, axis, keepdim):
    """A float16 product as PyTorch's CPU kernel computes it: in float16, rounded after every
    multiplication, in order (unlike sum, PyTorch's prod does not accumulate float16 in
    float32). NumPy's ``prod`` would accumulate contiguous slices in float32; the last running
    product of ``cumprod`` rounds at every step."""
    a, ax = (d.reshape(-1), 0) if axis is None else (d, axis)
    n = a.shape[ax]
    last = a.cumprod(axis=ax)[(slice(None),) * ax + (slice(n - 1, n),)]
    if keepdim:
        return last.reshape(keep_shape(d.shape, None if axis is None else (axis,)))
    return last.reshape(() if axis is None else d.shape[:axis] + d.shape[axis + 1:])


def _prod_bw(node, g):
    (x,) = node.saved
    dim, keepdim = node.ctx
    shape = x._data.shape
    if not shape:
        return (g,)
    if not x._data.size:
        return (_factory.zeros(shape, dtype=g.dtype, device=g.device),)
    out = node.output()
    if dim is None:
        grad = _prod_grad(g.reshape(1), x.reshape(-1), out.reshape(1), 0)
        return (grad.reshape(shape),)
    dims = (dim,)
    return (_prod_grad(keep(g, shape, dims, keepdim), x, keep(out, shape, dims, keepdim),
                       dim),)


ProdBackward0 = make_node_class("ProdBackward0", _prod_bw)
ProdBackward1 = make_node_class("ProdBackward1", _prod_bw)


@register("prod", out="any")
def prod(input, dim=None, keepdim=False, *, dtype=None):
    """Product over one ``dim`` (an int) or of all elements; integers multiply as int64."""
    if dim is not None and not isinstance(dim, (int, np.integer)):
        raise TypeError(f"prod() received an invalid combination of arguments - got (Tensor, "
                        f"{type(dim).__name__}), but expected one of:\n"
                        " * (Tensor input, *, torch.dtype dtype = None)\n"
                        " * (Tensor input, int dim, bool keepdim = False, *, torch.dtype dtype "
                        "= None, Tensor out = None)\n")
    input = _with_dtype(input, dtype)
    d = input._data
    axis = None if dim is None else wrap_dim(dim, d.ndim)
    if d.dtype.char == "e" and d.size:
        r = _half_prod(d, axis if d.ndim else None, keepdim and d.ndim > 0)
    else:
        _check_acc_kernel(d, dtype, "prod_out_cpu")
        acc = _acc_of(d, dtype)
        r = _rounded(d.prod(axis=axis if d.ndim else None, dtype=acc,
                            keepdims=keepdim and d.ndim > 0), acc, d)
    node = ProdBackward0 if dim is None else ProdBackward1
    return result(c_order(r), input._device, node,
                  (input,), (input,), (axis if d.ndim else None, keepdim), True)


# -- var, std -----------------------------------------------------------------------------------

def _correction(name, dim, unbiased, correction):
    """PyTorch's two spellings: ``unbiased`` (positional, old) and ``correction=`` (new)."""
    if isinstance(dim, bool):  # var(x, True): the old (input, unbiased) overload
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{name}() received an invalid combination of arguments - got both "
                        "'unbiased' and 'correction'")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    return dim, correction


def _var_array(d, dims, correction, keepdim, name):
    n = _count(d.shape, dims)
    dof = n - correction
    # PyTorch's reduction factor is input numel over output numel: 0 for an empty input,
    # whatever the dims (an empty result warns too)
    if dof <= 0 or not d.size and correction >= 0:
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly "
                      "less than the reduction factor (input numel divided by output numel).",
                      UserWarning, stacklevel=user_stacklevel())
    if not n:
        return d.sum(axis=dims, keepdims=keepdim) * np.nan, dof
    centered = d - _mean_array(d, dims, True, n)
    if centered.dtype.kind == "c":  # |z - mean|^2: a real variance in the real dtype
        ss = (centered.real * centered.real + centered.imag * centered.imag).sum(
            axis=dims, keepdims=keepdim)
    else:
        ss = (centered * centered).sum(axis=dims, keepdims=keepdim)
    if dof > 0:
        return ss / dof, dof
    with np.errstate(divide="ignore", invalid="ignore"):  # PyTorch: inf or NaN, no error
        return ss / 0, dof


def _chalf_var(d, dims, correction, keepdim, name):
    """The variance of a complex32 array as PyTorch computes it: the float16 variances of
    the real and the imaginary parts (each in float32, rounded once), added in float16."""
    xp = xp_of(d)
    parts = xp.moveaxis(d[..., None].view(np.float16), -1, 0).astype(np.float32)
    axes = tuple(range(1, d.ndim + 1)) if dims is None else tuple(i + 1 for i in dims)
    r, dof = _var_array(parts, axes, correction, keepdim, name)
    r = r.astype(np.float16)
    return r[0] + r[1], dof


def _var_grad(g_keep, x, dims, dof):
    """d var / d x times ``g_keep`` (the gradient with the reduced dims kept)."""
    scale = 2.0 / dof if dof > 0 else math.inf
    return g_keep * (x - x.mean(dims, keepdim=True)) * scale


def _var_bw(node, g):
    (x,) = node.saved
    dims, keepdim, dof = node.ctx
    return (_var_grad(keep(g, x._data.shape, dims, keepdim), x, dims, dof),)


def _std_bw(node, g):
    (x,) = node.saved
    dims, keepdim, dof = node.ctx
    shape = x._data.shape
    std = keep(node.output(), shape, dims, keepdim)
    with np.errstate(divide="ignore", invalid="ignore"):  # masked out where std == 0
        g_var = (keep(g, shape, dims, keepdim) / (std * 2)).masked_fill(std == 0, 0)
    return (_var_grad(g_var, x, dims, dof),)


VarBackward0 = make_node_class("VarBackward0", _var_bw)
StdBackward0 = make_node_class("StdBackward0", _std_bw)
# complex input, real output: the gradient 2 (z - mean) / dof (times the real g) is already
# PyTorch's conjugate Wirtinger one
VarBackward0._complex = StdBackward0._complex = "own"


def _var_std(input, dim, keepdim, correction, name, take_sqrt, label):
    _floating_input(input, f"{label} only support floating point and complex dtypes")
    d = input._data
    dims = _dims_of(dim, d.ndim)
    if d.dtype is _dtype.CHALF_NP:
        r, dof = _chalf_var(d, dims, correction, keepdim, name)
        if take_sqrt:
            r = xp_of(input).sqrt(r.astype(np.float32)).astype(r.dtype)
        return result(r, input._device, StdBackward0 if take_sqrt else VarBackward0,
                      (input,), (input,), (dims, keepdim, dof), take_sqrt)
    half = d.dtype in _dtype.OPMATH  # float16/bfloat16 compute in float32, rounded once
    r, dof = _var_array(_dtype.widen(d), dims, correction, keepdim, name)
    if take_sqrt:
        r = xp_of(input).sqrt(r)
    if half:
        r = r.astype(d.dtype)
    return result(r, input._device, StdBackward0 if take_sqrt else VarBackward0,
                  (input,), (input,), (dims, keepdim, dof), take_sqrt)


@register("var", out=True)
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance over ``dim`` with Bessel's ``correction`` (``unbiased=False`` means 0)."""
    dim, correction = _correction("var", dim, unbiased, correction)
    return _var_std(input, dim, keepdim, correction, "var", False, "std and var")


@register("std", out=True)
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Standard deviation over ``dim`` (see ``var`` for ``unbiased`` / ``correction``)."""
    dim, correction = _correction("std", dim, unbiased, correction)
    return _var_std(input, dim, keepdim, correction, "std", True, "std and var")


@register("var_mean", method=False)
def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(var, mean)`` over ``dim``."""
    dim, correction = _correction("var_mean", dim, unbiased, correction)
    return (_var_std(input, dim, keepdim, correction, "var_mean", False, "var_mean"),
            _mean_of(input, dim, keepdim))


@register("std_mean", method=False)
def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(std, mean)`` over ``dim``."""
    dim, correction = _correction("std_mean", dim, unbiased, correction)
    return (_var_std(input, dim, keepdim, correction, "std_mean", True, "std_mean"),
            _mean_of(input, dim, keepdim))


def _mean_of(input, dim, keepdim):
    """The mean ``var_mean``/``std_mean`` return: for complex32 (which ``mean`` refuses, as in
    PyTorch) the complex64 mean rounded once, as PyTorch's fused kernel computes it."""
    if input._data.dtype is not _CHALF:
        return mean(input, dim, keepdim)
    return mean(input.to(_dtype.complex64), dim, keepdim).to(_dtype.complex32)


# -- max, min, amax, amin, aminmax, argmax, argmin --------------------------------------------

def _scatter_add_bw(node, g):
    """cummax/cummin: one input element can feed several outputs."""
    (indices,) = node.saved
    dim, shape = node.ctx
    if not shape:
        return (g,)
    return (_factory.zeros(shape, dtype=g.dtype, device=g.device).scatter_add(dim, indices, g),)


MaxBackward1 = make_node_class("MaxBackward1", evenly_bw)
MinBackward1 = make_node_class("MinBackward1", evenly_bw)
AmaxBackward0 = make_node_class("AmaxBackward0", evenly_bw)
AminBackward0 = make_node_class("AminBackward0", evenly_bw)
MaxBackward0 = make_node_class("MaxBackward0", select_bw)
MinBackward0 = make_node_class("MinBackward0", select_bw)
CummaxBackward0 = make_node_class("CummaxBackward0", _scatter_add_bw)
CumminBackward0 = make_node_class("CumminBackward0", _scatter_add_bw)


def _empty_full_reduction(name):
    return RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == "
                        "0. Specify the reduction dim with the 'dim' argument.")


#: rows this short or shorter are reduced column by column (``_extreme_of``)
_SHORT_ROW = 32


def _extreme_of(d, dims, keepdims, largest):
    """``d.max``/``d.min`` over ``dims`` (None: all). NumPy reduces a C-contiguous array along
    a short last axis one row at a time (~80 ns a row: attention's 16-wide rows took 640 us
    for 131k elements against PyTorch's 100 us); transposed into a contiguous copy, the same
    reduction runs down its columns in vector passes (66 us there, 6 us instead of 31 for
    (512, 27)), with the same values (a maximum does not depend on its order; NaN
    propagates either way)."""
    if (d.__class__ is np.ndarray and dims is not None and d.ndim >= 2
            and len(dims) == 1 and dims[0] == d.ndim - 1 and 1 < d.shape[-1] <= _SHORT_ROW
            and d.size >= 4 * _SHORT_ROW and d.flags.c_contiguous):
        n = d.shape[-1]
        columns = np.ascontiguousarray(d.reshape(-1, n).T)
        r = columns.max(axis=0) if largest else columns.min(axis=0)
        return r.reshape(d.shape[:-1] + ((1,) if keepdims else ()))
    return (d.max if largest else d.min)(axis=dims, keepdims=keepdims)


def _empty_dim_first(d, dim, name) -> None:
    """amax/amin of an empty input: PyTorch checks the dims in the order given, each for its
    range and then its size, before any duplicate, and names an empty one as given."""
    for i in ((dim,) if isinstance(dim, (int, np.integer)) else dim):
        if d.ndim and not d.shape[wrap_dim(i, d.ndim)]:
            raise IndexError(f"{name}(): Expected reduction dim {i} to have non-zero size.")


def _extreme(input, dims, keepdim, name, node_cls, dim=None):
    """max/min/amax/amin over ``dims`` (None: all); NaN propagates. ``dim``: the dims as
    given (amax/amin), for the error of an empty one."""
    d = input._data
    if d.dtype in _dtype.COMPLEX_NP:
        no_complex_kernel(input, _EXTREME_KERNELS[name])
    _dtype.check_kernel(name, d.dtype)
    if not d.size and (dims is None or not _count(d.shape, dims)):
        if dims is None or not d.ndim:
            raise _empty_full_reduction(name)
        if dim is not None:
            _empty_dim_first(d, dim, name)
        nonempty(name, d, next(i for i in dims if not d.shape[i]))
    r = c_order(_extreme_of(d, dims, keepdim, name.endswith("max")))
    return result(r, input._device, node_cls, (input,), (input,), (dims, keepdim), True)


#: PyTorch's kernels of ``_extreme``, named by its error for complex input
_EXTREME_KERNELS = {"max": "max_all", "min": "min_all", "amax": "max_values_cpu",
                    "amin": "min_values_cpu"}


def _argmax_keep(a, axis, xp):
    return a.argmax(axis=axis, keepdims=True)


def _argmin_keep(a, axis, xp):
    return a.argmin(axis=axis, keepdims=True)


class _AllDims:
    """``max``/``min``'s ``dim`` when none is given: the whole tensor. PyTorch's parser takes
    no ``dim=None`` (no signature has an optional dim), so an explicit None must be told
    apart from the default and refused."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "None"  # how signatures show it: PyTorch documents dim as optional


ALL_DIMS = _AllDims()


def _max_or_min(input, dim, keepdim, other, name):
    if isinstance(dim, Tensor) or other is not None:
        other = dim if other is None else other
        try:
            return input.maximum(other) if name == "max" else input.minimum(other)
        except AttributeError:  # not a tensor first: PyTorch's parser refuses it
            check_binds(name, (input, other))
            raise
    if dim is ALL_DIMS:
        if keepdim is False:
            try:
                return _extreme(input, None, False, name,
                                MaxBackward1 if name == "max" else MinBackward1)
            except AttributeError:
                check_binds(name, (input,))
                raise
        check_binds(name, (input,), {"keepdim": keepdim})  # no signature takes keepdim alone
    if dim is None or dim is ALL_DIMS:
        check_binds(name, (input, None) if keepdim is False else (input, None, keepdim))
    if dim.__class__ is not int:
        int_arg(dim, name)
    try:
        d = input._data
    except AttributeError:
        check_binds(name, (input, dim) if keepdim is False else (input, dim, keepdim))
        raise
    if d.dtype in _dtype.COMPLEX_NP or d.dtype in _dtype.SHELL_NP:
        wrap_dim(dim, d.ndim)  # PyTorch checks the dim first
        no_complex(input, f"{name}(): does not support complex input")
        _dtype.check_kernel(name + "_dim", d.dtype)
    if name == "max":
        return pick_along(input, dim, keepdim, "max", _argmax_keep, MaxBackward0)
    return pick_along(input, dim, keepdim, "min", _argmin_keep, MinBackward0)


@register("max", out=True)
def max(input, dim=ALL_DIMS, keepdim=False, *, other=None):  # PyTorch's name
    """``max(input)``: the largest element; ``max(input, dim)``: ``(values, indices)``;
    ``max(input, other)``: the elementwise ``maximum``."""
    return _max_or_min(input, dim, keepdim, other, "max")


@register("min", out=True)
def min(input, dim=ALL_DIMS, keepdim=False, *, other=None):  # PyTorch's name
    """``min(input)``, ``min(input, dim)`` -> ``(values, indices)``, or ``minimum``."""
    return _max_or_min(input, dim, keepdim, other, "min")


@register("amax", out="same")
def amax(input, dim=(), keepdim=False):
    """Largest values over ``dim`` (all dims by default); ties share the gradient evenly."""
    return _amax_or_amin(input, dim, keepdim, "amax", AmaxBackward0)


@register("amin", out="same")
def amin(input, dim=(), keepdim=False):
    """Smallest values over ``dim`` (all dims by default); ties share the gradient evenly."""
    return _amax_or_amin(input, dim, keepdim, "amin", AminBackward0)


def _amax_or_amin(input, dim, keepdim, name, node):
    try:
        dims = _dims_of(dim, input._data.ndim)
    except (RuntimeError, IndexError):  # an empty dim named before a bad one is the error
        if not input._data.size:
            _empty_dim_first(input._data, dim, name)
        raise
    return _extreme(input, dims, keepdim, name, node, dim)


@register("aminmax", out="same")
def aminmax(input, *, dim=None, keepdim=False):
    """``(min, max)`` over ``dim`` (all dims when None)."""
    d = input._data
    if dim is not None and dim.__class__ is not int:
        int_arg(dim, "aminmax", None)
    no_complex_kernel(input, "aminmax_cpu")
    _dtype.check_kernel("aminmax", d.dtype)
    if not d.size:
        if dim is None or not d.ndim:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as "
                               "the operation has no identity.")
        axis = wrap_dim(dim, d.ndim)
        if not d.shape[axis]:
            raise IndexError(f"aminmax: Expected reduction dim {axis} to have non-zero size.")
    dims = () if dim is None else dim
    return return_types.aminmax(amin(input, dims, keepdim), amax(input, dims, keepdim))


def _arg_extreme(input, dim, keepdim, name):
    d = input._data
    if dim is not None and dim.__class__ is not int:
        int_arg(dim, name)
    if d.dtype.kind == "b" or d.dtype in _dtype.COMPLEX_NP:
        kind = "bool" if d.dtype.kind == "b" else "complex"
        raise RuntimeError(f"{name}(): does not support {kind} input")
    _dtype.check_kernel(name, d.dtype)
    if dim is None:
        if not d.size:
            raise IndexError(f"{name}(): Expected reduction dim to be specified for "
                             "input.numel() == 0.")
        r = getattr(d, name)().astype(np.int64)
        return _make(r.reshape((1,) * d.ndim) if keepdim else r, input._device)
    a, axis, restore = along(d, dim)
    nonempty(name, a, axis)
    r = getattr(a, name)(axis=axis, keepdims=keepdim).astype(np.int64, copy=False)
    return _make(restore(r), input._device)


@register("argmax", out="same", differentiable=False)
def argmax(input, dim=None, keepdim=False):
    """Index of the (first) largest element, of the flattened input when ``dim`` is None."""
    return _arg_extreme(input, dim, keepdim, "argmax")


@register("argmin", out="same", differentiable=False)
def argmin(input, dim=None, keepdim=False):
    """Index of the (first) smallest element, of the flattened input when ``dim`` is None."""
    return _arg_extreme(input, dim, keepdim, "argmin")


# -- logsumexp, norm ----------------------------------------------------------------------------

def _squeeze_dims(r, dims):
    return r.reshape(()) if dims is None else r.squeeze(axis=dims)


def _logsumexp_bw(node, g):
    (x,) = node.saved
    dims, keepdim = node.ctx
    shape = x._data.shape
    out = keep(node.output(), shape, dims, keepdim)
    return (keep(g, shape, dims, keepdim) * (x - out).exp(),)


LogsumexpBackward0 = make_node_class("LogsumexpBackward0", _logsumexp_bw)
mark_holomorphic(LogsumexpBackward0)  # complex: g * conj(exp(x - out)), as PyTorch's


@register("logsumexp", out=True)
def logsumexp(input, dim, keepdim=False):
    """``log(sum(exp(input), dim))``, computed without overflow (shifted by the max)."""
    input = _as_float(input)
    d = input._data
    xp = xp_of(input)
    dims = _dims_of(dim, d.ndim)
    if not keepdim and d.ndim and d.size and isinstance(dim, (tuple, list)) and not dim:
        # dim=() reduces all (as sum's), into a result PyTorch then cannot broadcast
        raise RuntimeError("output with shape [] doesn't match the broadcast shape "
                           f"[{', '.join('1' * d.ndim)}]")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # NaN rows shift by 0
        # PyTorch's steps: exp in the input's dtype, the sum accumulated as sum's (float16 in
        # float32, rounded once), log and the shift back in the input's dtype; a complex
        # input shifts by the largest real part
        acc = _ACC.get(d.dtype)
        if _count(d.shape, dims):
            m = _extreme_of(d if d.dtype.kind != "c" else d.real, dims, True, True)
            m = xp.where(xp.isfinite(m), m, 0)
            r = xp.log(_rounded(xp.exp(d - m).sum(axis=dims, dtype=acc, keepdims=True), acc,
                                d)) + m
        else:  # an empty sum: log(0) = -inf
            r = xp.log(xp.exp(d).sum(axis=dims, keepdims=True))
    if not keepdim:
        r = _squeeze_dims(r, dims)
    return result(c_order(r), input._device, LogsumexpBackward0, (input,), (input,),
                  (dims, keepdim), True)


@register("norm")
def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """``torch.norm``: the vector ``p``-norm over ``dim`` (all elements when None), with
    ``'fro'`` the 2-norm; ``'nuc'`` is the matrix nuclear norm. Computed by
    ``ember.linalg.vector_norm`` / ``matrix_norm``."""
    from ..linalg import matrix_norm, vector_norm

    if input._data.__class__ is _SparseData:  # ember._sparse_tensor: its own kernel
        return input.norm(p, dim, keepdim, dtype=dtype)
    if isinstance(p, str):
        if p == "fro" and (dim is None or isinstance(dim, (int, np.integer)) or len(dim) <= 2):
            return vector_norm(input, 2, dim, keepdim, dtype=dtype, out=out)
        dims = tuple(range(input._data.ndim)) if dim is None else dim
        return matrix_norm(input, p, dims, keepdim, dtype=dtype, out=out)
    return vector_norm(input, 2.0 if p is None else p, dim, keepdim, dtype=dtype, out=out)


# -- all, any, count_nonzero --------------------------------------------------------------------

def _truth_reduction(input, dim, keepdim, how):
    d = input._data
    if d.dtype is _CHALF:  # nonzero real or imaginary part (NumPy's cast looks at the real)
        d = _dtype.astype(d, np.bool_)
    if isinstance(dim, (tuple, list)) and not dim:  # dim=(): no dim reduced (unlike sum's)
        r = d != 0
    else:
        r = getattr(d, how)(axis=_dims_of(dim, d.ndim), keepdims=keepdim)
    return _make(c_order(r.astype(np.uint8) if d.dtype == np.uint8 else r), input._device)


@register("all", out="any", differentiable=False)
def all(input, dim=None, keepdim=False):  # PyTorch's name
    """Whether every element (over ``dim``) is non-zero; bool (uint8 for uint8 input)."""
    return _truth_reduction(input, dim, keepdim, "all")


@register("any", out="any", differentiable=False)
def any(input, dim=None, keepdim=False):  # PyTorch's name
    """Whether some element (over ``dim``) is non-zero; bool (uint8 for uint8 input)."""
    return _truth_reduction(input, dim, keepdim, "any")


@register("count_nonzero", out=True, differentiable=False, varargs=True)
def count_nonzero(input, dim=None):
    """Number of non-zero elements over ``dim`` (int64)."""
    d = input._data
    _dtype.check_kernel("count_nonzero", d.dtype)
    return _make(c_order((d != 0).sum(axis=_dims_of(dim, d.ndim), dtype=np.int64)),
                 input._device)


# -- cumulative ops -----------------------------------------------------------------------------

def _running(input, dim, kernel, node_cls, saves: bool, dtype=None):
    """A cumulative op along ``dim``: ``kernel(array, axis, acc)`` accumulating in ``acc``
    (``_ACC``: int64 for integers, float32 for float16, rounded back once). ``saves``: the
    backward reads the input and the output (cumprod, logcumsumexp); ``dtype``: the one the
    caller asked for (see :func:`_acc_of`)."""
    a, axis, restore = along(input._data, dim, kernel.__name__[1:])
    _check_acc_kernel(a, dtype, f"{kernel.__name__[1:]}_out_cpu")
    acc = _acc_of(a, dtype)
    if isinstance(acc, np.dtype) and acc.kind == "b":
        raise NotImplementedError(f'"{kernel.__name__[1:]}_out_cpu" not implemented for '
                                  "'Bool'")  # PyTorch's dispatch error for dtype=bool
    r = c_order(restore(_rounded(kernel(a, axis, acc), acc, a)))  # PyTorch's: C order
    if saves:
        return result(r, input._device, node_cls, (input,), (input,), axis, True)
    return result(r, input._device, node_cls, (input,), ctx=axis)


def _cumsum(a, axis, acc):
    return a.cumsum(axis=axis, dtype=acc)


def _cumprod(a, axis, acc):
    return a.cumprod(axis=axis, dtype=acc)


def _accumulate(xp, name, a, axis, dtype=None):
    """``xp.<name>.accumulate(a, axis=axis, dtype=dtype)``. CuPy's ``accumulate`` covers only
    add and multiply, so another array module scans in ceil(log2(n)) doubling steps
    (Hillis-Steele): exact for maximum and minimum (NaN propagates as in the sequential fold),
    within rounding of the sequential fold for logaddexp."""
    ufunc = getattr(xp, name)
    if xp is np:
        return ufunc.accumulate(a, axis=axis, dtype=dtype)
    return _scan(ufunc, a, axis, dtype)


def _scan(fn, a, axis, dtype=None):
    """The running ``fn`` (associative, elementwise on arrays) of ``a`` along ``axis``, in
    ceil(log2(n)) doubling steps (Hillis-Steele)."""
    out = a.astype(dtype) if dtype is not None and a.dtype != dtype else a.copy()
    n = out.shape[axis]
    head = (slice(None),) * axis
    k = 1
    while k < n:
        # the right-hand side is a new array, so the overlapping write is safe
        out[head + (slice(k, None),)] = fn(out[head + (slice(None, n - k),)],
                                           out[head + (slice(k, None),)])
        k *= 2
    return out


def _logcumsumexp(a, axis, acc):
    if a.dtype.kind == "c":  # NumPy's logaddexp has no complex loop
        return _scan(_complex_logaddexp, a, axis)
    return _accumulate(xp_of(a), "logaddexp", a, axis, acc)


def _complex_logaddexp(a, b):
    """``log(exp(a) + exp(b))`` of complex arrays, shifted by the one of larger real part
    (PyTorch's ``_log_add_exp_helper``); a real part of -inf adds nothing."""
    xp = xp_of(a)
    first = a.real >= b.real
    big, small = xp.where(first, a, b), xp.where(first, b, a)
    with np.errstate(invalid="ignore", over="ignore"):
        r = big + xp.log1p(xp.exp(small - big))
    return xp.where(small.real == -np.inf, big, r)


def _cumsum_bw(node, g):
    dim = node.ctx
    return (_reverse_cumsum(g, dim) if g.dim() else g,)


CumsumBackward0 = make_node_class("CumsumBackward0", _cumsum_bw)


@register("cumsum", out="any", inplace=True)
def cumsum(input, dim, *, dtype=None):
    """Running sums along ``dim``; integers accumulate as int64 (or in ``dtype``)."""
    return _running(_with_dtype(input, dtype), dim, _cumsum, CumsumBackward0, False, dtype)


def _cumprod_grad_with_zeros(g, x, out, dim):
    """First-order gradient of cumprod when ``x`` has zeros, in O(n).

    With ``z`` the first zero of a slice: inputs before ``z`` get the usual
    ``reverse_cumsum(g * out) / x``; the input at ``z`` gets ``prod(x[:z]) *
    sum_{i>=z} g_i prod(x[z+1:i+1])``; inputs after ``z`` only feed zeros.
    """
    zero = x._data == 0
    zeros_so_far = zero.cumsum(axis=dim)
    before = zeros_so_far == 0
    after = zeros_so_far - zero > 0
    grad = _reverse_cumsum(g * out, dim) / (x + const(zero, x)) * const(before, x)
    head = (x * const(before, x) + const(~before, x)).prod(dim, keepdim=True)
    tail = (x * const(after, x) + const(~after, x)).cumprod(dim)
    first_zero = const(zero & (zeros_so_far == 1), x)
    return grad + first_zero * head * (g * tail * const(~before, x)).sum(dim, keepdim=True)


def _cumprod_grad_quadratic(g, x, dim):
    """Gradient of cumprod as Tensor ops valid at zeros (for higher-order gradients).

    ``P[..., k, j]`` is ``x_j`` with ``x_k`` replaced by one; its cumprod along ``j`` holds
    ``prod_{j<=i, j!=k} x_j``, the derivative of ``out_i`` by ``x_k`` (for ``i >= k``).
    """
    xp = xp_of(x)
    n = x._data.shape[dim]
    eye = xp.eye(n, dtype=bool)
    upper = const(xp.triu(xp.ones((n, n), dtype=bool)), x)
    xt = x.transpose(dim, -1).unsqueeze(-2)
    partial = (xt * const(~eye, x) + const(eye, x)).cumprod(-1)
    grad = (partial * upper * g.transpose(dim, -1).unsqueeze(-2)).sum(-1)
    return grad.transpose(dim, -1)


def _cumprod_bw(node, g):
    (x,) = node.saved
    dim = node.ctx
    if x._data.size <= 1 or not x._data.ndim or x._data.shape[dim] == 1:
        return (g,)
    out = node.output()
    if not bool((x._data == 0).any()):
        return (_reverse_cumsum(g * out, dim) / x,)
    if GRAD.enabled:  # create_graph: every path must stay differentiable
        return (_cumprod_grad_quadratic(g, x, dim),)
    return (_cumprod_grad_with_zeros(g, x, out, dim),)


CumprodBackward0 = make_node_class("CumprodBackward0", _cumprod_bw)


@register("cumprod", out="any", inplace=True)
def cumprod(input, dim, *, dtype=None):
    """Running products along ``dim``; integers accumulate as int64 (or in ``dtype``)."""
    return _running(_with_dtype(input, dtype), dim, _cumprod, CumprodBackward0, True, dtype)


def _cum_extreme(input, dim, name, node_cls):
    d = input._data
    a, axis, restore = along(d, dim, name)
    _dtype.check_kernel(name, d.dtype)
    no_complex_kernel(input, f"{name}_cpu")
    xp = xp_of(input)
    values = _accumulate(xp, "maximum" if name == "cummax" else "minimum", a, axis)
    # the index moves to every element that equals the running value (ties: the last one)
    pos = xp.arange(a.shape[axis]).reshape([-1 if i == axis else 1 for i in range(a.ndim)])
    hit = same_nan(a, values, xp)
    idx = _accumulate(xp, "maximum", xp.where(hit, pos, 0), axis).astype(np.int64)
    return picked(input, restore(values), restore(idx), name, node_cls, (axis, d.shape))


@register("cummax", out="same")
def cummax(input, dim):
    """Running maximum along ``dim``: ``(values, indices)``."""
    return _cum_extreme(input, dim, "cummax", CummaxBackward0)


@register("cummin", out="same")
def cummin(input, dim):
    """Running minimum along ``dim``: ``(values, indices)``."""
    return _cum_extreme(input, dim, "cummin", CumminBackward0)


def _reverse_logcumsumexp(t, dim):
    return t.flip(dim).logcumsumexp(dim).flip(dim)


def _logcumsumexp_bw(node, g):
    from .pointwise import where

    (x,) = node.saved
    dim = node.ctx
    if not g._data.ndim or not g._data.size:
        return (g,)
    out = node.output()
    if g._data.dtype.kind == "c":  # PyTorch's complex formula: no split by sign needed
        with np.errstate(divide="ignore", invalid="ignore"):
            log_g = g.conj().log()
        return ((_reverse_logcumsumexp(log_g - out, dim) + x).exp().conj(),)
    # sum_{i>=k} g_i exp(x_k - out_i), in log space for the positive and negative parts of g
    # (PyTorch's logcumsumexp_backward): log|g| where g has that sign, else the dtype's lowest
    # finite value, picked by ``where`` so that the second derivative stays finite
    lowest = float(_dtype.np_finfo(g._data.dtype).min)
    with np.errstate(divide="ignore"):
        log_abs = g.abs().log()
    log_pos = where(g > 0, log_abs, lowest)
    log_neg = where(g < 0, log_abs, lowest)
    pos = (_reverse_logcumsumexp(log_pos - out, dim) + x).exp()
    neg = (_reverse_logcumsumexp(log_neg - out, dim) + x).exp()
    return (pos - neg,)


LogcumsumexpBackward0 = make_node_class("LogcumsumexpBackward0", _logcumsumexp_bw)
LogcumsumexpBackward0._complex = "own"  # conjugate Wirtinger, as PyTorch's formula


@register("logcumsumexp", out="same")
def logcumsumexp(input, dim):
    """``log(cumsum(exp(input), dim))`` computed stably."""
    if input._data.dtype not in _dtype.INEXACT_NP or input._data.dtype is _CHALF:
        along(input._data, dim, "logcumsumexp")  # PyTorch checks the dim first
        raise NotImplementedError('"logcumsumexp_out_cpu" not implemented for '
                                  f"'{scalar_type_name(input._data.dtype)}'")
    return _running(input, dim, _logcumsumexp, LogcumsumexpBackward0, True)


# -- dist, renorm -------------------------------------------------------------------------------

class _NormOfDifference:
    """What ``_vector_norm_bw`` reads of a node (the normed value, the norm's arguments, its
    output), for ``dist``'s backward: the difference, recomputed, and dist's own output."""

    __slots__ = ("saved", "ctx", "node")

    def __init__(self, node, diff, p):
        self.saved, self.ctx, self.node = (diff,), (p, None, False), node

    def output(self, requires_grad_graph: bool = True):
        return self.node.output(requires_grad_graph)


def _dist_bw(node, g):
    from ._factories import sum_to_size
    from .linalg_norms import _vector_norm_bw

    a, b = node.saved
    (gd,) = _vector_norm_bw(_NormOfDifference(node, a - b, node.ctx), g)
    if gd is None:  # p = 0: piecewise constant
        return None, None
    return (sum_to_size(gd, a._data.shape) if node.needs_grad(0) else None,
            sum_to_size(-gd, b._data.shape) if node.needs_grad(1) else None)


DistBackward0 = make_node_class("DistBackward0", _dist_bw)


@register("dist")
def dist(input, other, p=2):
    """The ``p``-norm of ``input - other`` (broadcast; floating dtypes only), recorded as
    PyTorch's ``DistBackward0`` (its gradient is the norm's, through the difference)."""
    from ..linalg import vector_norm

    if input.__class__ is not Tensor and not isinstance(input, Tensor) \
            or other.__class__ is not Tensor and not isinstance(other, Tensor):
        check_binds("dist", (input, other) if p == 2 else (input, other, p))
    prev = GRAD.enabled
    GRAD.enabled = False
    try:
        diff = input - other
        if diff._data.dtype not in _dtype.INEXACT_NP:
            raise RuntimeError("norm(): input dtype should be either floating point or "
                               f"complex. Got {scalar_type_name(diff._data.dtype)} instead.")
        out = vector_norm(diff, p)
    finally:
        GRAD.enabled = prev
    if prev and (input.requires_grad or other.requires_grad):
        record(DistBackward0, out, (input, other), (input, other), float(p), save_output=True)
    return out


@register("renorm", out=True, inplace=True)
def renorm(input, p, dim, maxnorm):
    """Each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled down to norm
    ``maxnorm`` (PyTorch's ``maxnorm / (norm + 1e-7)``)."""
    from ..linalg import vector_norm
    from .pointwise import where

    for what, pos, v in (("p", 2, p), ("maxnorm", 4, maxnorm)):
        if not isinstance(v, (int, float, np.number, Tensor)):
            raise TypeError(f"renorm(): argument '{what}' (position {pos}) must be Number, not "
                            f"{type(v).__name__}")
    ndim = input._data.ndim
    if ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {ndim} dimensions")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    d = wrap_dim(dim, ndim)
    if input._data.dtype not in _dtype.FLOATING_NP:
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {scalar_type_name(input._data.dtype)}")
    # float16/bfloat16: the norms and the scale in float32, the scale rounded once (PyTorch's)
    acc = _dtype.float32 if input._data.dtype in _dtype.OPMATH else None
    norms = vector_norm(input, p, tuple(i for i in range(ndim) if i != d), keepdim=True,
                        dtype=acc)
    big = norms > maxnorm
    factor = where(big, maxnorm / (norms + 1e-7), 1.0)
    out = input * factor.to(input.dtype)
    out._data = c_order(out._data)  # a fresh result, in C order as PyTorch's (not input's)
    return out
