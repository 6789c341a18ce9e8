"""Sorting and selection by order: sort, argsort, msort, topk, kthvalue, median/nanmedian,
mode, quantile/nanquantile, and unique/unique_consecutive.

The selecting ops return ``(values, indices)`` through ``_selection.pick_along``, whose
backward scatters the gradient to the picked indices; full-tensor median shares it among
ties.

sort/argsort/msort with ``stable=False`` (the default) order tied elements as PyTorch's CPU
kernel does, which programs see through the indices (argsort, ``pack_padded_sequence`` of equal
lengths): that kernel is libstdc++'s ``std::sort`` (an introsort, unstable above 16 elements)
of (key, index) pairs, which ``ember._native`` reproduces move for move (``ember_torch_sort_*``
in kernels.c). Where it leaves ties in their original order anyway (16 elements or fewer: one
insertion sort; a dim of stride 0; a 1-D integer tensor of 32768 elements or more sorted
ascending, which PyTorch hands to FBGEMM's stable radix sort), and where the native library
is unavailable (``ember._native.status()`` says why) or the array is not a NumPy one (CuPy),
they take NumPy's stable sort instead: the same values, ties in their original order.

topk, kthvalue and mode pick tied elements as PyTorch's CPU kernels do, by native kernels
that make the same moves (``ember_torch_topk_*``: ``std::partial_sort`` when ``k * 64 <= n``,
else ``std::nth_element`` and ``std::sort``; ``ember_torch_kthvalue_*``: TH's quickselect;
``ember_torch_mode_*``: ``std::sort`` under a plain ``<``, then the last index of the winning
run). median/nanmedian along a dim order ties by index, as PyTorch's comparator does (a
stable sort), but for nanmedian's all-NaN rows (``ember_torch_nth_element_i64``). Without the
native library or on CuPy these take NumPy's stable sort (same values, ties in their original
order); ``stable=True`` sorts are stable everywhere.
"""

from __future__ import annotations

import functools

import numpy as np

from .. import _dtype, _native
from .._device import refuse_meta, xp_of
from .._tensor import Tensor, _make
from ..autograd.grad_mode import GRAD
from ..autograd.graph import make_node_class, result
from ._promotion import wrap_dim
from ._selection import (
    along,
    const,
    evenly_bw,
    int_arg,
    keep_shape,
    like_layout,
    no_complex,
    no_complex_kernel,
    nonempty,
    not_implemented_for_bool,
    pick_along,
    picked,
    select_bw,
)
from .registry import register

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "mode",
           "quantile", "nanquantile", "unique", "unique_consecutive"]

SortBackward0 = make_node_class("SortBackward0", select_bw)
TopkBackward0 = make_node_class("TopkBackward0", select_bw)
KthvalueBackward0 = make_node_class("KthvalueBackward0", select_bw)
MedianBackward0 = make_node_class("MedianBackward0", evenly_bw)
MedianBackward1 = make_node_class("MedianBackward1", select_bw)
NanmedianBackward0 = make_node_class("NanmedianBackward0", evenly_bw)
NanmedianBackward1 = make_node_class("NanmedianBackward1", select_bw)
ModeBackward0 = make_node_class("ModeBackward0", select_bw)


# -- sort, argsort, msort, topk, kthvalue -------------------------------------------------------

def _keys(a):
    """``a`` as sort keys: bfloat16 as float32 (exact; NumPy's sort places NaN last only for
    its own float dtypes)."""
    return a.astype(np.float32) if a.dtype is _dtype.BFLOAT16_NP else a


def _sort_order(a, axis, descending, xp):
    """Stable argsort; descending keeps equal elements in their original order too."""
    if a.dtype in _dtype.COMPLEX_NP:  # no order (NumPy's lexicographic one is not PyTorch's)
        raise RuntimeError(" Sort does not support complex dtypes on CPU")
    a = _keys(a)
    if not descending:
        return xp.argsort(a, axis=axis, kind="stable")
    flipped = xp.argsort(xp.flip(a, axis), axis=axis, kind="stable")
    return (a.shape[axis] - 1) - xp.flip(flipped, axis)


#: the native kernel of each key dtype (bool sorts as uint8, float16/bfloat16 as float32: the
#: same comparisons as PyTorch's, which compares those as float)
_KEY_SUFFIX = {np.dtype(t): s for t, s in (
    (np.float32, "f32"), (np.float64, "f64"), (np.int64, "i64"), (np.int32, "i32"),
    (np.int16, "i16"), (np.int8, "i8"), (np.uint8, "u8"), (np.uint16, "u16"),
    (np.uint32, "u32"), (np.uint64, "u64"))}
_TORCH_SORT = {t: f"ember_torch_sort_{s}" for t, s in _KEY_SUFFIX.items()}
_KEY_AS = {np.dtype(np.bool_): np.dtype(np.uint8), np.dtype(np.float16): np.dtype(np.float32),
           _dtype.BFLOAT16_NP: np.dtype(np.float32)}
#: PyTorch's FBGEMM radix sort takes 1-D integer tensors of at least at::internal::GRAIN_SIZE
_RADIX_MIN = 32768


def _move(a, source, dest):
    """``np.moveaxis`` without its ~2 us of argument handling when ``source`` is already at
    ``dest`` (the last axis: the common call)."""
    n = a.ndim
    if source % n == dest % n:
        return a
    return np.moveaxis(a, source, dest)


def _torch_sort(a, axis, descending, ndim):
    """PyTorch's ``sort(stable=False)`` of a NumPy array along ``axis`` (``ndim``: the input
    tensor's): ``(values or None, indices)``, both C-ordered, by the native ``std::sort``
    kernel; None where the stable order is PyTorch's too (see the module docstring) or the
    kernel is unavailable."""
    n = a.shape[axis]
    if n <= 16 or a.__class__ is not np.ndarray or a.strides[axis] == 0:
        return None  # insertion sort (stable); stride 0: PyTorch keeps the identity
    if ndim == 1 and not descending and a.dtype.kind in "iu" and n >= _RADIX_MIN:
        return None  # FBGEMM's radix sort: stable
    key_dtype = _KEY_AS.get(a.dtype, a.dtype)
    name = _TORCH_SORT.get(key_dtype)
    fn = None if name is None else _native.kernel(name)
    if fn is None:
        return None
    keys = _move(a, axis, -1).astype(key_dtype, order="C", copy=True)  # sorted in place
    index = np.empty(keys.shape, np.int64)
    _native.by_rows(fn, keys.size // n, max(1, _RADIX_MIN // n),
                    [(_native.address(keys), n * key_dtype.itemsize),
                     (_native.address(index), n * 8)], n, int(descending))
    last = axis == a.ndim - 1
    index = index if last else np.ascontiguousarray(np.moveaxis(index, -1, axis))
    if key_dtype != a.dtype:
        return None, index
    return (keys if last else np.ascontiguousarray(np.moveaxis(keys, -1, axis))), index


def _unstable(a, axis, descending, ndim):
    """``_torch_sort`` after sort's own checks (complex has no order)."""
    if a.dtype in _dtype.COMPLEX_NP:
        return None  # _sort_order raises PyTorch's error
    return _torch_sort(a, axis, descending, ndim)


def _slice_along(a, start, stop, axis):
    return a[(slice(None),) * axis + (slice(start, stop),)]


@register("sort", out="same")
def sort(input, dim=-1, descending=False, stable=False):
    """Sorted values along ``dim`` and their indices; ties in PyTorch's CPU order unless
    ``stable`` (see the module docstring)."""
    d = input._data
    xp = xp_of(input)
    a, axis, restore = along(d, dim, "sort")
    done = None if stable else _unstable(a, axis, descending, d.ndim)
    if done is None:
        values, idx = None, _sort_order(a, axis, descending, xp).astype(np.int64, copy=False)
    else:
        values, idx = done
    if values is None:
        values = xp.take_along_axis(a, idx, axis)
    return picked(input, restore(values), restore(idx), "sort", SortBackward0,
                  (axis, True, d.shape), like=d)


@register("argsort", out="same", differentiable=False)
def argsort(input, dim=-1, descending=False, stable=False):
    """Indices that sort ``input`` along ``dim``; ties as ``sort``'s."""
    a, axis, restore = along(input._data, dim, "argsort")
    done = None if stable else _unstable(a, axis, descending, input._data.ndim)
    if done is None:
        idx = _sort_order(a, axis, descending, xp_of(input)).astype(np.int64, copy=False)
    else:
        idx = done[1]
    return _make(like_layout(restore(idx), input._data), input._device)  # sort's layout


@register("msort", out="same")
def msort(input):
    """``sort(input, dim=0).values``."""
    return sort(input, 0).values


def _native_rows(a, axis, prefix):
    """``(kernel, keys, index)`` for the native ``<prefix>_<t>`` kernels of PyTorch's CPU
    selections: ``a`` with ``axis`` last as a C-ordered copy in its key dtype (the kernel
    works on it in place) and room for the indices; None where the kernel is unavailable or
    ``a`` is not a NumPy array (CuPy)."""
    if a.__class__ is not np.ndarray:
        return None
    key_dtype = _KEY_AS.get(a.dtype, a.dtype)
    suffix = _KEY_SUFFIX.get(key_dtype)
    fn = None if suffix is None else _native.kernel(prefix + suffix)
    if fn is None:
        return None
    keys = _move(a, axis, -1).astype(key_dtype, order="C", copy=True)
    return fn, keys, np.empty(keys.shape, np.int64)


def _run_rows(fn, keys, index, *scalars, out=None):
    """``fn`` over the rows of ``keys``/``index`` (and one int64 per row of ``out``), split
    over Ember's intra-op threads as PyTorch splits its loop (``GRAIN_SIZE`` elements)."""
    n = keys.shape[-1]
    pointers = [(_native.address(keys), n * keys.itemsize), (_native.address(index), n * 8)]
    if out is not None:
        pointers.append((_native.address(out), 8))
    _native.by_rows(fn, keys.size // n, max(1, _RADIX_MIN // n), pointers, n, *scalars)


def _torch_topk(a, axis, k, largest, sorted):
    """PyTorch's CPU topk of a NumPy array (``topk_impl_loop``, by the native kernel):
    ``(values or None, indices)`` along ``axis``, or None where the kernel is unavailable."""
    if not k:
        return None
    rows = _native_rows(a, axis, "ember_torch_topk_")
    if rows is None:
        return None
    fn, keys, index = rows
    _run_rows(fn, keys, index, k, int(largest), int(sorted))
    index = _move(index[..., :k], -1, axis)
    if keys.dtype != a.dtype:
        return None, index
    return _move(keys[..., :k], -1, axis), index


@register("topk", out="same")
def topk(input, k, dim=-1, largest=True, sorted=True):  # PyTorch's name
    """The ``k`` largest (or smallest) elements along ``dim``: ``(values, indices)``. Tied
    elements come as PyTorch's CPU kernel leaves them (see the module docstring)."""
    d = input._data
    if k.__class__ is not int:
        int_arg(k, "topk", 2, "k")
    a, axis, restore = along(d, dim, "topk", 3)
    if not 0 <= k <= a.shape[axis]:  # PyTorch checks the dim and k before the dtype
        raise RuntimeError("selected index k out of range")
    if d.dtype.kind == "b":
        raise RuntimeError("topk does not support bool dtypes on CPU")
    no_complex(input, " topk does not support complex dtypes on CPU")
    _dtype.check_kernel("topk", d.dtype)
    xp = xp_of(input)
    if not d.ndim:  # the one element, even for k = 0 (PyTorch's)
        k = 1
    done = _torch_topk(a, axis, k, largest, sorted)
    if done is None:
        values, idx = None, _slice_along(_sort_order(a, axis, largest, xp), 0, k, axis)
        idx = idx.astype(np.int64, copy=False)
    else:
        values, idx = done
    if values is None:
        values = xp.take_along_axis(a, idx, axis)
    return picked(input, restore(values), restore(idx), "topk", TopkBackward0,
                   (axis, True, d.shape))


def _torch_kth(a, axis, k):
    """Positions of PyTorch's CPU kthvalue (TH's quickselect, by the native kernel) with
    ``axis`` kept as size one, or None where the kernel is unavailable."""
    rows = _native_rows(a, axis, "ember_torch_kthvalue_")
    if rows is None:
        return None
    fn, keys, index = rows
    _run_rows(fn, keys, index, k - 1)
    return _move(index[..., k - 1:k], -1, axis)


@register("kthvalue", out="same")
def kthvalue(input, k, dim=-1, keepdim=False):
    """The ``k``-th smallest element along ``dim`` (1-based): ``(values, indices)``; of tied
    elements the one PyTorch's CPU kernel picks."""
    if k.__class__ is not int:
        int_arg(k, "kthvalue", 2, "k")
    d = input._data
    a, axis, _ = along(d, dim, "kthvalue", 3)
    nonempty("kthvalue", a, axis)
    if not 1 <= k <= a.shape[axis]:  # PyTorch checks the dim and k before the dtype
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {axis}")
    not_implemented_for_bool(input, "kthvalue_cpu")
    no_complex_kernel(input, "kthvalue_cpu")
    _dtype.check_kernel("kthvalue", d.dtype)

    def index_of(a, axis, xp):
        done = _torch_kth(a, axis, k) if a.size else None
        if done is not None:
            return done
        return _slice_along(_sort_order(a, axis, False, xp), k - 1, k, axis)

    return pick_along(input, dim, keepdim, "kthvalue", index_of, KthvalueBackward0, 3)


# -- median, mode, quantile ---------------------------------------------------------------------

def _nan_count(a, axis, xp):
    if a.dtype not in _dtype.FLOATING_NP:
        return xp.zeros(keep_shape(a.shape, (axis,)), dtype=np.int64)
    return xp.isnan(a).sum(axis=axis, keepdims=True)


def _median_index(ignore_nan):
    """Lower median position; NaN wins (its first occurrence) unless ``ignore_nan``."""

    def index_of(a, axis, xp):
        order = xp.argsort(_keys(a), axis=axis, kind="stable")  # NaN sorts last
        n = a.shape[axis]
        nans = _nan_count(a, axis, xp)
        if ignore_nan:
            pos = xp.maximum(n - nans - 1, 0) // 2
        else:
            pos = xp.where(nans > 0, n - nans, (n - 1) // 2)
        chosen = xp.take_along_axis(order, pos, axis)
        if ignore_nan and a.dtype in _dtype.FLOATING_NP:
            first = _nth_of_equal(n)  # a row of NaNs: where nth_element leaves them
            if first:
                chosen = xp.where(nans == n, first, chosen)
        return chosen

    return index_of


@functools.lru_cache(maxsize=64)
def _nth_of_equal(n):
    """The index ``std::nth_element`` leaves first of ``n`` equal elements (all-NaN rows of
    nanmedian); 0 (the stable order) where the native kernel is unavailable."""
    fn = _native.kernel("ember_torch_nth_element_i64")
    if fn is None or n < 2:
        return 0
    keys, index = np.zeros(n, np.int64), np.empty(n, np.int64)
    fn(_native.address(keys), _native.address(index), 1, n, 0)
    return int(index[0])


def _full_median(input, ignore_nan, node_cls):
    d = input._data
    xp = xp_of(input)
    flat = d.reshape(-1)
    if d.dtype in _dtype.FLOATING_NP:
        nan = xp.isnan(flat)
        if ignore_nan:
            flat = flat[~nan]
        elif nan.any():
            flat = flat[:0]
    if flat.size:
        k = (flat.size - 1) // 2  # a slice, not [k]: that would give a host NumPy scalar
        r = xp.partition(_keys(flat), k)[k:k + 1].reshape(()).astype(d.dtype, copy=False)
    else:  # empty (or a NaN): NaN, like PyTorch; integers have no NaN
        r = xp.asarray(np.nan if d.dtype in _dtype.FLOATING_NP else np.iinfo(d.dtype).min,
                       dtype=d.dtype)
    return result(r, input._device, node_cls, (input,), (input,), (None, False), True)


@register("median", out="same")
def median(input, dim=None, keepdim=False):
    """``median(input)``: the lower median of all elements (NaN if any is NaN);
    ``median(input, dim)``: ``(values, indices)`` of the lower median along ``dim``."""
    if dim is not None:
        along(input._data, dim, "median")  # PyTorch checks the dim before the dtype
    not_implemented_for_bool(input, "median_cpu" if dim is None else "median_out")
    no_complex_kernel(input, "median_cpu" if dim is None else "median_out")
    if input._data.dtype in _dtype.SHELL_NP:  # PyTorch's median kernels lack them
        raise _dtype.no_kernel("median_cpu" if dim is None else "median_out",
                               input._data.dtype)
    if dim is None:
        return _full_median(input, False, MedianBackward0)
    return pick_along(input, dim, keepdim, "median", _median_index(False), MedianBackward1)


@register("nanmedian", out="same")
def nanmedian(input, dim=None, keepdim=False):
    """``median`` ignoring NaN (NaN only where a slice is all NaN)."""
    if dim is not None:
        along(input._data, dim, "nanmedian")  # PyTorch checks the dim before the dtype
    not_implemented_for_bool(input, "median_cpu" if dim is None else "median_out")
    no_complex_kernel(input, "median_cpu" if dim is None else "median_out")
    if input._data.dtype in _dtype.SHELL_NP:  # PyTorch's median kernels lack them
        raise _dtype.no_kernel("median_cpu" if dim is None else "median_out",
                               input._data.dtype)
    if dim is None:
        return _full_median(input, True, NanmedianBackward0)
    return pick_along(input, dim, keepdim, "nanmedian", _median_index(True),
                      NanmedianBackward1, empty_name="median")


def _mode_index(a, axis, xp):
    """Position of the most frequent value (the smallest among equally frequent ones), as
    PyTorch's CPU kernel picks it: the last of its run after an unstable ``std::sort`` (the
    native kernel); NumPy's stable sort where that is unavailable, which gives the last
    occurrence (PyTorch's too along 16 elements or fewer, where its sort is stable)."""
    native = _native_rows(a, axis, "ember_torch_mode_") if a.size else None
    if native is not None:
        fn, keys, index = native
        out = np.empty(keys.shape[:-1], np.int64)
        _run_rows(fn, keys, index, out=out)
        return _move(out[..., None], -1, axis)
    rows = xp.moveaxis(a, axis, -1)
    lead, n = rows.shape[:-1], rows.shape[-1]
    rows = rows.reshape(-1, n)
    s = xp.sort(rows, axis=-1)
    starts = xp.ones(s.shape, dtype=bool)
    starts[:, 1:] = s[:, 1:] != s[:, :-1]
    run = xp.cumsum(starts, axis=-1) - 1
    offsets = xp.arange(rows.shape[0])[:, None] * n
    counts = xp.bincount((run + offsets).reshape(-1), minlength=rows.size).reshape(-1, n)
    best = counts.argmax(axis=-1)[:, None]
    value = xp.take_along_axis(s, (run == best).argmax(axis=-1)[:, None], -1)
    last = (n - 1) - xp.flip(rows == value, -1).argmax(axis=-1)
    return xp.moveaxis(last.reshape(lead + (1,)), -1, axis)


@register("mode", out="same")
def mode(input, dim=-1, keepdim=False):
    """The most frequent value along ``dim`` (the smallest of equally frequent ones) and an
    index of it: PyTorch's CPU choice, the last of its run after an unstable sort (its last
    occurrence along 16 elements or fewer)."""
    d = input._data
    if d.dtype in _dtype.COMPLEX_NP or d.dtype in _dtype.SHELL_NP:
        along(d, dim, "mode")  # PyTorch checks the dim before the dtype
        no_complex_kernel(input, "mode_cpu")
        _dtype.check_kernel("mode", d.dtype)
    return pick_along(input, dim, keepdim, "mode", _mode_index, ModeBackward0)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input, q, dim, keepdim, interpolation, name, ignore_nan):
    """PyTorch's ``quantile_compute``: ranks ``q * (count - 1)`` in the input's dtype, the
    sorted values at ``floor``/``ceil`` of them, ``lerp`` between (differentiable in a tensor
    ``q`` too, for linear interpolation, as in PyTorch)."""
    d = input._data
    xp = xp_of(input)
    q_tensor = isinstance(q, Tensor)
    if not q_tensor and not 0 <= q <= 1:  # the float overload checks q first
        raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {float(q):g}")
    if d.dtype not in _dtype.FLOATING_NP or d.dtype in _dtype.OPMATH:  # as PyTorch's kernel
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    qd = q._data if q_tensor else xp.asarray(q, dtype=d.dtype)
    if qd.ndim > 1:
        raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
    if q_tensor and qd.dtype != d.dtype:
        raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
    if not bool(((qd >= 0) & (qd <= 1)).all()):  # NaN is out of range too
        raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    if not d.size:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    flat = dim is None or not d.ndim
    x = input.reshape(-1) if flat else input
    axis = 0 if flat else wrap_dim(dim, d.ndim)
    xd = x._data
    xs = x.sort(axis).values.unsqueeze(0)  # a leading dim of size one meets the q's
    nans = _nan_count(xd, axis, xp)[None]
    n = xd.shape[axis]
    valid = n - nans if ignore_nan else xp.full(nans.shape, n)
    scale = xp.maximum(valid - 1, 0).astype(d.dtype)
    q_col = (qd.size,) + (1,) * xd.ndim
    ranks = qd.reshape(q_col) * scale
    if interpolation == "nearest":
        ranks = xp.round(ranks)  # half to even, as PyTorch
    lo = xp.floor(ranks).astype(np.int64)
    hi = lo if interpolation in ("lower", "nearest") else xp.ceil(ranks).astype(np.int64)
    if interpolation == "higher":
        lo = hi
    picks = xs.expand((qd.size,) + xd.shape)
    r = picks.gather(axis + 1, const(lo, input))
    if interpolation == "midpoint":
        r = r.lerp(picks.gather(axis + 1, const(hi, input)), 0.5)
    elif interpolation == "linear":
        if q_tensor and q.requires_grad and GRAD.enabled:  # d/dq: (above - below) * scale
            weight = q.reshape(q_col) * const(scale, input) - const(lo.astype(d.dtype), input)
        else:
            weight = const((ranks - lo).astype(d.dtype), input)
        r = r.lerp(picks.gather(axis + 1, const(hi, input)), weight)
    undefined = valid == 0 if ignore_nan else nans > 0
    if bool(undefined.any()):
        r = r.masked_fill(const(undefined, input), np.nan)
    if dim is None:
        shape = (1,) * d.ndim if keepdim else ()
    else:
        shape = keep_shape(d.shape, (axis,)) if keepdim else \
            tuple(s for i, s in enumerate(d.shape) if i != axis)
    return r.reshape(((qd.size,) if qd.ndim else ()) + shape)


@register("quantile", out="same")
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The ``q``-quantiles (a float or 1-D tensor in [0, 1]) along ``dim`` (all when None);
    any NaN in a slice makes its quantiles NaN."""
    return _quantile(input, q, dim, keepdim, interpolation, "quantile", False)


@register("nanquantile", out="same")
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """``quantile`` ignoring NaN."""
    return _quantile(input, q, dim, keepdim, interpolation, "quantile", True)  # its words


# -- unique -------------------------------------------------------------------------------------

def _unique_result(input, values, inverse, counts, return_inverse, return_counts):
    dev = input._device
    out = [_make(values, dev)]
    if return_inverse:
        out.append(_make(inverse.astype(np.int64, copy=False), dev))
    if return_counts:
        out.append(_make(counts.astype(np.int64, copy=False), dev))
    return out[0] if len(out) == 1 else tuple(out)


def _unique_axis(d, dim) -> int:
    """``dim`` of unique/unique_consecutive wrapped, with PyTorch's errors: no dim of a 0-dim
    input, and none of another empty dim (unique compares whole slices)."""
    if not d.ndim:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    axis = wrap_dim(dim, d.ndim)
    if d.size == 0 and d.shape[axis]:
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique "
                           "cannot be applied")
    return axis


@register("unique", differentiable=False)
def unique(input, sorted=True, return_inverse=False, return_counts=False,
           dim=None):
    """The distinct elements (or slices along ``dim``), sorted; optionally the inverse
    indices and the counts. Every NaN counts as distinct, as in PyTorch."""
    d = input._data
    _dtype.check_kernel("unique" if dim is None else "unique_dim", d.dtype)
    no_complex_kernel(input, "unique" if dim is None else "unique_dim")
    refuse_meta(input, "unique")
    xp = xp_of(input)
    if dim is not None:
        axis = _unique_axis(d, int_arg(dim, "unique_dim"))
        if not d.shape[axis]:  # nothing to compare: the empty input, its inverse and counts
            return _unique_result(input, d.copy(), xp.zeros(0, np.int64), xp.zeros(0, np.int64),
                                  return_inverse, return_counts)
    if dim is None:
        values, inverse, counts = xp.unique(d.reshape(-1), return_inverse=True,
                                            return_counts=True, equal_nan=False)
        inverse = inverse.reshape(d.shape)
    else:
        values, inverse, counts = xp.unique(d, return_inverse=True, return_counts=True,
                                            axis=axis, equal_nan=False)
        inverse = inverse.reshape(-1)
    return _unique_result(input, values, inverse, counts, return_inverse, return_counts)


@register("unique_consecutive", differentiable=False)
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse runs of equal consecutive elements (or slices along ``dim``)."""
    refuse_meta(input, "unique_consecutive")
    d = input._data
    _dtype.check_kernel("unique", d.dtype)
    no_complex_kernel(input, "unique")
    xp = xp_of(input)
    axis = None if dim is None else _unique_axis(d, dim)
    if axis is not None and not d.shape[axis]:  # nothing to collapse
        return _unique_result(input, d.copy(), xp.zeros(0, np.int64), xp.zeros(0, np.int64),
                              return_inverse, return_counts)
    rows = d.reshape(-1, 1) if axis is None else xp.moveaxis(d, axis, 0).reshape(d.shape[axis], -1)
    n = rows.shape[0]
    starts = xp.ones(n, dtype=bool)
    starts[1:] = (rows[1:] != rows[:-1]).any(axis=1)
    values = d.reshape(-1)[starts] if axis is None else xp.compress(starts, d, axis=axis)
    inverse = xp.cumsum(starts) - 1
    if axis is None:
        inverse = inverse.reshape(d.shape)
    counts = xp.diff(xp.append(xp.flatnonzero(starts), n))
    return _unique_result(input, values, inverse, counts, return_inverse, return_counts)
