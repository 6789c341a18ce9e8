"""Counting and statistics: bincount, histc, histogram and histogramdd (not differentiable),
cov and corrcoef (composed of Tensor ops, so their gradients of every order come from those
ops)."""

from __future__ import annotations

import builtins
import math
import warnings

import numpy as np

from .. import _dtype
from .. import return_types as _return_types
from .._device import check_same_device, refuse_meta, xp_of
from .._dtype import scalar_type_name
from .._format import shape_str
from .._tensor import Tensor, _make
from .._warn import user_stacklevel
from ..autograd.grad_mode import GRAD
from ..autograd.graph import make_node_class, record
from ._inplace import accepts_out
from ._signatures import check_binds
from .registry import register

__all__ = ["bincount", "histc", "histogram", "histogramdd", "cov", "corrcoef"]


@register("bincount", differentiable=False)
def bincount(input, weights=None, minlength=0):
    """Counts of each value of a 1-d non-negative integer tensor (``weights`` summed instead
    when given: float32 weights give float32, any other dtype float64)."""
    d = input._data
    _dtype.check_kernel("bincount", d.dtype)
    refuse_meta(input, "bincount")
    if d.dtype.kind not in "iu":
        raise NotImplementedError(f'"bincount_{_suffix(d)}" not implemented for '
                                  f"'{scalar_type_name(d.dtype)}'")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    xp = xp_of(input)
    if d.ndim != 1 or (d.size and d.min().item() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    w = None
    out_dtype = np.int64
    if weights is not None:
        w = weights._data
        if w.ndim != 1 or w.shape[0] != d.shape[0]:
            raise RuntimeError("weights should be 1-d and have the same length as input")
        out_dtype = np.float32 if w.dtype == np.float32 else np.float64
        w = w.astype(np.float64)
    if d.size == 0:
        return _make(xp.zeros(minlength, dtype=out_dtype), input._device)
    r = xp.bincount(d, weights=w, minlength=minlength)
    return _make(r.astype(out_dtype, copy=False), input._device)


def _suffix(arr) -> str:
    return "cpu" if isinstance(arr, np.ndarray) else "cuda"


@register("histc", out=True, differentiable=False)
def histc(input, bins=100, min=0, max=0):  # PyTorch's names
    """A histogram of ``bins`` equal bins over ``[min, max]`` (the data's range when both are
    0; values outside are ignored, ``max`` goes into the last bin). Floats only."""
    d = input._data
    if bins.__class__ is not int:
        _check_bin_count(bins, 0, "histc")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for "
                           "dimension 0")
    if d.dtype not in _dtype.FLOATING_NP:
        _histc_dtype_error(d, min, max)
    xp = xp_of(input)
    lo, hi = float(min), float(max)
    if lo == hi and d.size:
        lo, hi = float(d.min().item()), float(d.max().item())
        if lo != lo:  # a NaN in the data: its range prints C++'s default NaN, "-nan"
            lo = hi = -math.nan
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{_c_float(lo)}, {_c_float(hi)}] is not "
                           "finite")
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    x = d.reshape(-1)
    if d.dtype in _dtype.OPMATH:  # float16/bfloat16: PyTorch searches the dtype's own edges
        pos = _low_precision_bins(x, lo, hi, bins, xp)
    else:
        x = x[(x >= lo) & (x <= hi)]  # NaN is dropped too
        pos = ((x - x.dtype.type(lo)) / x.dtype.type(hi - lo) * bins).astype(np.int64)
    pos = xp.minimum(pos, bins - 1)
    r = xp.bincount(pos, minlength=bins)[:bins]
    return _make(r.astype(d.dtype), input._device)


def _histc_dtype_error(d, lo, hi):
    """PyTorch's error for a histc of a non-floating input: the first of its steps (the
    data's range by aminmax, the edges by linspace, the histogram) without a kernel."""
    from_data = lo == hi and d.size
    if d.dtype in _dtype.SHELL_NP:
        raise _dtype.no_kernel("aminmax_cpu" if from_data else "linspace_cpu", d.dtype)
    if d.dtype in _dtype.COMPLEX_NP and from_data:
        raise _dtype.no_kernel("aminmax_cpu", d.dtype)
    if d.dtype.kind == "b":
        raise _dtype.no_kernel("linspace_cpu", d.dtype)
    if d.dtype == np.uint8 and lo == hi and not d.size and lo - 1 < 0:  # the range widened
        raise RuntimeError("value cannot be converted to type uint8_t without overflow")
    raise NotImplementedError(f'"histogram_{_suffix(d)}" not implemented for '
                              f"'{scalar_type_name(d.dtype)}'")


def _low_precision_bins(x, lo, hi, bins, xp):
    """The bins of a float16/bfloat16 ``x`` as PyTorch's kernel finds them: the edges of the
    range in the input's dtype, ``(x - lo) * bins / (hi - lo)`` with every step rounded to
    it (c10::Half and c10::BFloat16 arithmetic), truncated."""
    dt = x.dtype
    wide = _dtype.widen
    first, last = (xp.asarray(np.asarray(v, np.float32).astype(dt)) for v in (lo, hi))
    x = x[(x >= first) & (x <= last)]  # NaN is dropped too
    step = wide((wide(x) - wide(first)).astype(dt)) * np.float32(np.asarray(bins).astype(dt))
    q = wide(step.astype(dt)) / wide((wide(last) - wide(first)).astype(dt))
    return wide(q.astype(dt)).astype(np.int64)


def _c_float(v: float) -> str:
    """``v`` as C++'s ``<<`` prints a double (``%g``, the sign of a NaN shown)."""
    if v != v:
        return "-nan" if math.copysign(1.0, v) < 0 else "nan"
    return f"{v:g}"


# -- histogram, histogramdd --------------------------------------------------------------------

def _no_derivative_bw(node, grad):
    raise RuntimeError(f"derivative for aten::{node.ctx} is not implemented")


NoDerivative = make_node_class("NotImplemented", _no_derivative_bw)


def record_no_derivative(out: Tensor, inputs, aten_name: str) -> Tensor:
    """PyTorch's ``NotImplemented`` grad_fn: ``out`` requires grad when an input does, and a
    backward through it raises ``derivative for aten::<aten_name> is not implemented``."""
    if GRAD.enabled and any(t is not None and t.requires_grad for t in inputs):
        record(NoDerivative, out, tuple(inputs), (), aten_name)
    return out


def _cpp(arr) -> str:
    """The dtype of ``arr`` as PyTorch's messages print it (``long int``, ``float``)."""
    return _dtype.options_type_name(arr.dtype)


def _check_bin_count(n, dim: int, fname: str = "histogramdd") -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        what = {"histogram": "int or Tensor", "histc": "int"}.get(
            fname, "int, a sequence of ints or a sequence of Tensors")
        raise TypeError(f"{fname}(): argument 'bins' must be {what}, not {type(n).__name__}")
    if n <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {n} for dimension {dim}")
    return int(n)


def _outer_edges(points, n_dims: int, range_):
    """PyTorch's leftmost and rightmost edge per dimension: ``range_`` (2 per dimension), else
    the data's min and max (0 and 1 for no data); an empty range widens by 0.5 each way."""
    if range_ is not None:
        range_ = [float(v) for v in range_]
        if len(range_) != 2 * n_dims:
            raise RuntimeError(f"torch.histogramdd: for a {n_dims}-dimensional histogram range "
                               f"should have {2 * n_dims} elements, but got {len(range_)}")
        lo, hi = range_[0::2], range_[1::2]
    elif points.size:
        lo = [float(v) for v in points.min(0).tolist()]
        hi = [float(v) for v in points.max(0).tolist()]
    else:
        lo, hi = [0.0] * n_dims, [1.0] * n_dims
    for d in range(n_dims):
        if not (np.isfinite(lo[d]) and np.isfinite(hi[d])):
            raise RuntimeError(f"torch.histogramdd: dimension {d}'s range [{lo[d]:g}, "
                               f"{hi[d]:g}] is not finite")
        if lo[d] > hi[d]:
            raise RuntimeError("torch.histogramdd: min should not exceed max, but got min "
                               f"{lo[d]:g} max {hi[d]:g} for dimension {d}")
        if lo[d] == hi[d]:
            lo[d] -= 0.5
            hi[d] += 0.5
    return lo, hi


def _check_edge_tensors(input, edges) -> list:
    d = input._data
    n_dims = d.shape[-1]
    if len(edges) != n_dims:
        raise RuntimeError(f"torch.histogramdd: expected {n_dims} sequences of bin edges for a "
                           f"{n_dims}-dimensional histogram but got {len(edges)}")
    arrays = []
    for k, e in enumerate(edges):
        if not isinstance(e, Tensor):
            raise TypeError("histogramdd(): argument 'bins' must be a sequence of Tensors, but "
                            f"element {k} is {type(e).__name__}")
        check_same_device(input, e)
        a = e._data
        if a.dtype != d.dtype:
            raise RuntimeError("torch.histogramdd: input tensor and bins tensors should have the "
                               f"same dtype, but got input with dtype {_cpp(d)} and bins for "
                               f"dimension {k} with dtype {_cpp(a)}")
        if a.ndim != 1:
            raise RuntimeError("torch.histogramdd: bins tensor should have one dimension, but got "
                               f"{a.ndim} dimensions in the bins tensor for dimension {k}")
        if a.size == 0:
            raise RuntimeError("torch.histogramdd: bins tensor should have at least 1 element, "
                               f"but got 0 elements in the bins tensor for dimension {k}")
        _check_bin_count(a.size - 1, k)
        arrays.append(a.copy())
    return arrays


def _check_hist_weight(points_shape, input, weight):
    if weight is None:
        return None
    if not isinstance(weight, Tensor):
        raise TypeError(f"histogram(): argument 'weight' must be Tensor, not "
                        f"{type(weight).__name__}")
    check_same_device(input, weight)
    w = weight._data
    if w.dtype != input._data.dtype:
        raise RuntimeError("torch.histogramdd: if weight tensor is provided, input tensor and "
                           f"weight tensor should have the same dtype, but got "
                           f"input({_cpp(input._data)}), and weight({_cpp(w)})")
    if (w.shape or (1,)) != points_shape[:-1]:
        raise RuntimeError("torch.histogramdd: if weight tensor is provided it should have the "
                           "same shape as the input tensor excluding its innermost dimension, "
                           f"but got input with shape [{shape_str(points_shape)}] and weight with "
                           f"shape [{shape_str(w.shape)}]")
    return w.reshape(-1)


def _histogramdd_arrays(points, edges, w, density, xp):
    """Counts (or summed weights) of the rows of ``points`` (M, N) in the bins between the
    N 1-D arrays ``edges``: each bin holds its left edge, the last one its right edge too."""
    m, n_dims = points.shape
    counts = [e.shape[0] - 1 for e in edges]
    keep = xp.ones(m, dtype=bool)
    flat = xp.zeros(m, dtype=np.int64)
    for d, e in enumerate(edges):
        col = points[:, d]
        keep &= (col >= e[0]) & (col <= e[-1])  # NaN fails both
        pos = xp.searchsorted(e, col, side="right") - 1
        flat = flat * counts[d] + xp.clip(pos, 0, counts[d] - 1)
    total = int(np.prod(counts))
    weights = None if w is None else w[keep].astype(np.float64)
    hist = xp.bincount(flat[keep], weights=weights, minlength=total)[:total]
    hist = hist.astype(points.dtype).reshape(counts)
    if density:
        with np.errstate(divide="ignore", invalid="ignore"):
            hist = hist / hist.sum()
            for d, e in enumerate(edges):
                shape = [1] * n_dims
                shape[d] = counts[d]
                hist = hist / (e[1:] - e[:-1]).reshape(shape)
    return hist.astype(points.dtype, copy=False)


def _histogramdd_impl(input, edge_spec, range_, weight, density, points_shape):
    d = input._data
    if d.dtype not in _dtype.FLOATING_NP or d.dtype == np.float16:
        raise NotImplementedError('"histogramdd" not implemented for '
                                  f"'{scalar_type_name(d.dtype)}'")
    points = d.reshape(-1, points_shape[-1])
    n_dims = points.shape[1]
    xp = xp_of(input)
    if not isinstance(edge_spec[0], int):  # arrays of edges, not bin counts
        edges = edge_spec
    else:
        lo, hi = _outer_edges(points, n_dims, range_)
        from .._factory import _spaced

        dt = _dtype.FROM_NP[d.dtype]
        edges = [_spaced(lo[k], hi[k], n + 1, dt, xp).astype(d.dtype, copy=False)
                 for k, n in enumerate(edge_spec)]
    w = _check_hist_weight(points_shape, input, weight)
    hist = _histogramdd_arrays(points, edges, w, density, xp)
    dev = input._device
    return _make(hist, dev), tuple(_make(e, dev) for e in edges)


def _no_histogram_derivative(hist, edges, inputs, hist_name, edges_name):
    return (record_no_derivative(hist, inputs, hist_name),
            tuple(record_no_derivative(e, inputs, edges_name) for e in edges))


def histogram(input, bins=100, *, range=None, weight=None, density=False):
    """A histogram of the values of ``input`` (any shape): ``bins`` equal-width bins over
    ``range`` (default: the data's min and max), or the bin edges given as a 1-D tensor.
    Returns ``(hist, bin_edges)``; with ``density`` the histogram integrates to 1."""
    if isinstance(bins, Tensor):
        if range is not None:
            raise TypeError("histogram() received an invalid combination of arguments - got "
                            "(Tensor, Tensor, range=tuple), but expected one of:\n"
                            " * (Tensor input, Tensor bins, *, Tensor weight = None, bool "
                            "density = False, tuple of Tensors out = None)\n"
                            " * (Tensor input, int bins = 100, *, tuple of floats range = None, "
                            "Tensor weight = None, bool density = False, tuple of Tensors out = "
                            "None)\n")
        spec = bins
    else:
        try:
            spec = [_check_bin_count(bins, 0, "histogram")]
        except TypeError:  # bins no signature takes: PyTorch's parser refuses them
            check_binds("histogram", (input, bins))
            raise
    try:
        points = input.reshape(-1, 1)
    except AttributeError:  # not a tensor
        check_binds("histogram", (input,) if bins.__class__ is int and bins == 100
                    else (input, bins))
        raise
    if isinstance(spec, Tensor):
        spec = _check_edge_tensors(points, [spec])
    if weight is not None and isinstance(weight, Tensor):
        weight = weight.reshape(-1)
    hist, edges = _histogramdd_impl(points, spec, range, weight, density,
                                    points._data.shape)
    inputs = (input, weight, bins if isinstance(bins, Tensor) else None)
    hist, edges = _no_histogram_derivative(hist, edges, inputs, "histogram", "histogram")
    return _return_types.histogram(hist, edges[0])


histogram = register("histogram", differentiable=False)(accepts_out(histogram))


@register("histogramdd", method=False, differentiable=False)
def histogramdd(input, bins, *, range=None, weight=None, density=False):
    """A histogram of the N-dimensional points in the rows of ``input`` (``(..., N)``).
    ``bins``: an int for every dimension, N ints, or N 1-D tensors of bin edges. Returns
    ``(hist, bin_edges)`` with an N-dimensional ``hist`` and a tuple of N edge tensors."""
    d = input._data
    if d.ndim < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    n_dims = d.shape[-1]
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        spec = [_check_bin_count(bins, k) for k in builtins.range(n_dims)]
    elif isinstance(bins, Tensor):
        raise TypeError("histogramdd(): argument 'bins' must be int, a sequence of ints or a "
                        "sequence of Tensors, not Tensor")
    else:
        bins = list(bins)
        if bins and all(isinstance(b, Tensor) for b in bins):
            spec = _check_edge_tensors(input, bins)
        else:
            if len(bins) != n_dims:
                raise RuntimeError("histogramdd: The size of bins must be equal to the innermost "
                                   "dimension of the input.")
            spec = [_check_bin_count(b, k) for k, b in enumerate(bins)]
    if n_dims == 0:
        return _return_types.histogramdd(_make(xp_of(input).zeros((), dtype=d.dtype),
                                               input._device), ())
    hist, edges = _histogramdd_impl(input, spec, range, weight, density, d.shape)
    if isinstance(spec[0], int):
        names = ("_histogramdd_from_bin_cts", "_histogramdd_bin_edges")
        inputs = (input, weight)
    else:
        names = ("_histogramdd_from_bin_tensors", "_histogramdd_from_bin_tensors")
        inputs = (input, weight, *bins)
    hist, edges = _no_histogram_derivative(hist, edges, inputs, *names)
    return _return_types.histogramdd(hist, edges)



def _check_weights(w, label, integral, n):
    if not isinstance(w, Tensor):
        raise TypeError(f"cov(): argument '{label}' must be Tensor, not {type(w).__name__}")
    a = w._data
    if a.ndim > 1:
        raise RuntimeError(f"cov(): expected {label} to have one or fewer dimensions but got "
                           f"{label} with {a.ndim} dimensions")
    if a.size != n:
        raise RuntimeError(f"cov(): expected {label} to have the same numel as there are "
                           f"observations in the input but got {a.size} != {n}")
    if integral and a.dtype.kind not in "iu":
        raise RuntimeError(f"cov(): expected {label} to have integral dtype but got {label} "
                           f"with {scalar_type_name(a.dtype)} dtype")
    if not integral and a.dtype not in _dtype.FLOATING_NP:
        raise RuntimeError(f"cov(): expected {label} to have floating point dtype but got "
                           f"{label} with {scalar_type_name(a.dtype)} dtype")
    if a.size and (a < 0).any().item():
        raise RuntimeError(f"cov(): {label} cannot be negative")


@register("cov")
def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in the rows of ``input`` (observations in the
    columns), with frequency weights ``fweights`` and observation weights ``aweights``."""
    d = input._data
    if d.ndim > 2:
        raise RuntimeError("cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {d.ndim} dimensions")
    if d.dtype.kind == "b":
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = input if d.ndim == 2 else input.reshape(1, -1)
    if d.dtype not in _dtype.INEXACT_NP:
        x = x.to(_dtype.get_default_dtype())
    n = x.shape[1]
    w = None
    if fweights is not None:
        _check_weights(fweights, "fweights", True, n)
        w = fweights
    if aweights is not None:
        _check_weights(aweights, "aweights", False, n)
        w = aweights if w is None else w * aweights
    if w is None:
        w_sum = n
        avg = x.mean(1)
    else:
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
    if aweights is not None and correction != 0:
        norm = w_sum - correction * (w * aweights).sum() / w_sum
    else:
        norm = w_sum - correction
    if not (isinstance(norm, Tensor) and norm.is_meta) and \
            (norm.item() if isinstance(norm, Tensor) else norm) <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=user_stacklevel())
        norm = norm * 0 if isinstance(norm, Tensor) else 0
    xc = x - avg.unsqueeze(1)
    other = (xc if w is None else xc * w).t()
    c = xc.mm(other.conj() if other.is_complex() else other)
    return (c / norm).squeeze()


@register("corrcoef")
def corrcoef(input):
    """Pearson correlation coefficients of the rows of ``input`` (``cov`` normalised by the
    standard deviations, clipped to ``[-1, 1]``)."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = c.diagonal()
    std = (d.real if d.is_complex() else d).sqrt()
    c = c / std.reshape(-1, 1)
    c = c / std.reshape(1, -1)
    if c.is_complex():  # the real and imaginary parts clipped apart, as PyTorch's
        from .. import complex as _complex

        return _complex(c.real.clamp(-1, 1), c.imag.clamp(-1, 1))
    return c.clamp(-1, 1)
