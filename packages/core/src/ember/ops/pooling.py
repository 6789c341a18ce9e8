"""Pooling in 1, 2 and 3 dims: max, average, adaptive average/max, max unpooling and
power-average pooling on the N-d window machinery of ``ops._conv_kernels``, and fractional
max pooling (2-D and 3-D).

Max pooling picks each window's argmax on a strided view, turns it into PyTorch's indices
(flat positions in each input plane) and gathers the values through ``_plane_gather``, whose
backward scatters to those positions (``_plane_scatter``) and whose double backward gathers
again. Average pooling is a window sum scaled by the divisor; its backward is the window sum's
adjoint (``scatter_windows``), which is differentiable in turn. Fractional max pooling draws
one window start per output position and plane from PyTorch's interval formula and gathers
its maxima like max pooling, through ``_plane_gather``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .. import _dtype, _native
from .._device import check_same_device, xp_of
from .._dtype import scalar_type_name
from .._format import shape_str
from .._memory_format import copy_as, fresh_layout, suggest
from .._tensor import Tensor, _make
from ..autograd.grad_mode import GRAD
from ..autograd.graph import make_node_class, result
from ._conv_kernels import Geom, padded, scatter_windows, span, tap_offsets, windows
from .conv import ntuple
from .registry import register

__all__: list = []  # filled by _define below


# -- layout ----------------------------------------------------------------------------------

def _pool_order(x, n: int, unbatched: bool):
    """The layout of a pooling's output and input gradient, as PyTorch's CPU kernels choose
    it: channels-last when the batched 2-d or 3-d input suggests it
    (``suggest_memory_format``), else ``None`` (contiguous)."""
    return None if n == 1 or unbatched else suggest(x._data)


# -- gather / scatter in input planes ---------------------------------------------------------

def _flat_rows(shape_lead, P, xp):
    M = math.prod(shape_lead)
    return M, xp.arange(M, dtype=np.int64).reshape(shape_lead + (1,)) * P


def _plane_gather(x, idx, n, node_cls, unique=False, values=None, order=None):
    """``out[..., o] = x[..., plane][idx[..., o]]`` for flat indices into the last ``n``
    dims of ``x``; backward scatters to the same positions (accumulating unless the indices
    are known to be ``unique``). ``values``: the gathered array when already at hand;
    ``order``: the layout of the result and of the gradient (``_pool_order``)."""
    xd, id_ = x._data, idx._data
    r = values
    if r is None:
        lead = xd.shape[:-n]
        flat = xd.reshape(lead + (math.prod(xd.shape[-n:]),))
        r = xp_of(x).take_along_axis(flat, id_.reshape(lead + (math.prod(id_.shape[len(lead):]),)),
                                     -1).reshape(id_.shape)
    if order is not None:
        r = fresh_layout(r, order)
    return result(r, x._device, node_cls, (x,), (), (idx, xd.shape[-n:], n, unique, order))


def _plane_scatter(v, idx, plane, accumulate, node_cls, order=None):
    """Zeros of ``(*lead, *plane)`` with ``v`` added (or written) at flat plane indices."""
    vd, id_ = v._data, idx._data
    xp = xp_of(v)
    n = len(plane)
    lead = vd.shape[:vd.ndim - n]
    P = math.prod(plane)
    M, base = _flat_rows(lead, P, xp)
    gidx = (id_.reshape(lead + (math.prod(id_.shape[len(lead):]),)) + base).ravel()
    if accumulate:
        r = xp.bincount(gidx, weights=vd.ravel(), minlength=M * P).astype(vd.dtype, copy=False)
    else:
        r = xp.zeros(M * P, dtype=vd.dtype)
        r[gidx] = vd.ravel()
    r = r.reshape(lead + tuple(plane))
    if order is not None:
        r = copy_as(r, order)
    return result(r, v._device, node_cls, (v,), (), (idx, n, accumulate, order))


def _on_physical(g, fn):
    """``fn(physical, batch shape)`` for a gradient batched by vmap (``jacrev`` of a CNN):
    the pooling kernels run over any leading dims, the batch's included."""
    from .._functorch._batched import on_physical

    return on_physical(g, lambda p, k: fn(p, tuple(p.shape[:k])))


def _tiled(idx, lead):
    """Plane indices repeated over a batch's leading dims."""
    d = idx._data
    return _make(xp_of(idx).broadcast_to(d, lead + d.shape), idx._device)


def _gather_bw(node, g):
    idx, plane, n, unique, order = node.ctx
    if g.__class__ is not Tensor:
        return (_on_physical(g, lambda p, lead: _plane_scatter(
            p, _tiled(idx, lead), plane, not unique, PlaneScatterBackward0)),)
    return (_plane_scatter(g, idx, plane, not unique, PlaneScatterBackward0, order),)


def _scatter_bw(node, g):
    idx, n, accumulate, order = node.ctx
    return (_plane_gather(g, idx, n, PlaneGatherBackward0, not accumulate, order=order),)


PlaneGatherBackward0 = make_node_class("MaxPoolBackwardBackward0", _gather_bw)
PlaneScatterBackward0 = make_node_class("MaxPoolBackwardBackward1", _scatter_bw)
_MAX_NODES = {name: make_node_class(name, _gather_bw) for n in (1, 2, 3) for name in
              (f"MaxPool{n}DWithIndicesBackward0", f"AdaptiveMaxPool{n}DBackward0")}
_UNPOOL_NODES = {n: make_node_class(f"MaxUnpool{n}DBackward0", _scatter_bw) for n in (1, 2, 3)}
_FRACTIONAL_NODES = {n: make_node_class(f"FractionalMaxPool{n}DBackward0", _gather_bw)
                     for n in (2, 3)}


# -- argument handling: PyTorch's checks, in its order and words -----------------------------

def _int_list(value, fname: str, arg: str, pos: int) -> tuple:
    """``value`` (an int or a sequence of ints) as a tuple, or the TypeError of PyTorch's
    argument parser (``int[]`` arguments)."""
    if value.__class__ is int:
        return (value,)
    if value.__class__ is tuple or value.__class__ is list or isinstance(value, (tuple, list)):
        if all(v.__class__ is int for v in value):
            return tuple(value)
        out = []
        for i, v in enumerate(value):
            if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
                out.append(int(v))
            elif isinstance(v, Tensor) and v.ndim == 0 and \
                    v._data.dtype.kind in "iu":
                out.append(int(v.item()))
            else:
                raise TypeError(f"{fname}(): argument '{arg}' (position {pos}) must be tuple of "
                                f"ints, but found element of type {type(v).__name__} at pos {i}")
        return tuple(out)
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return (int(value),)
    if isinstance(value, Tensor) and value.ndim == 0 and value._data.dtype.kind in "iu":
        return (int(value.item()),)
    raise TypeError(f"{fname}(): argument '{arg}' (position {pos}) must be tuple of ints, not "
                    f"{type(value).__name__}")


def _bool_arg(value, fname: str, arg: str, pos: int) -> None:
    """The TypeError of PyTorch's argument parser for a ``bool`` argument given another type."""
    if value.__class__ is not bool and not isinstance(value, np.bool_):
        raise TypeError(f"{fname}(): argument '{arg}' (position {pos}) must be bool, not "
                        f"{type(value).__name__}")


_WORDS = {2: "two", 3: "three"}


def _len_message(kind: str, n: int, arg: str, size: int, impl: bool) -> str:
    """PyTorch's error for a ``kernel_size``/``stride``/``padding``/``dilation`` of the wrong
    length (``impl``: 1-d max pooling without indices, ``check_max_pool1d``)."""
    if impl:
        what = {"kernel_size": "an int, list of ints or tuple of ints",
                "stride": "None, an int, list of ints, or tuple of ints",
                "padding": "an int, list of ints, or tuple of ints",
                "dilation": "an int, list of ints or tuple of ints"}[arg]
        return f"max_pool1d() {arg} must be {what} of size 1 but got size {size}"
    if n == 1:
        return f"{kind}_pool1d() argument '{arg}' should contain one int (got {size})"
    words = _WORDS[n]
    name = f"{kind}_pool{n}d"
    if arg == "dilation":
        return f"{name}: dilation must be either a single int, or a tuple of {words} ints"
    verb = "must be" if kind == "avg" and n == 3 else "must either be"
    if arg == "stride":
        return f"{name}: stride {verb} omitted, a single int, or a tuple of {words} ints"
    return f"{name}: {arg} {verb} a single int, or a tuple of {words} ints"


def _pool_args(kind, n, fname, kernel_size, stride, padding, dilation, impl=False):
    """``(k, s, p, d)`` as n-tuples (stride None or empty: the kernel)."""
    k = _int_list(kernel_size, fname, "kernel_size", 2)
    s = () if stride is None else _int_list(stride, fname, "stride", 3)
    p = _int_list(padding, fname, "padding", 4)
    d = _int_list(dilation, fname, "dilation", 5)
    if len(k) == n and len(s) in (0, n) and len(p) == n and len(d) == n:  # the common case
        return k, (s or k), p, d
    for arg, v, ok in (("kernel_size", k, (1, n)), ("stride", s, (0, 1, n)),
                       ("padding", p, (1, n)), ("dilation", d, (1, n))):
        if len(v) not in ok:
            raise RuntimeError(_len_message(kind, n, arg, len(v), impl))
    k = k * n if len(k) == 1 else k
    s = k if not s else (s * n if len(s) == 1 else s)
    return k, s, p * n if len(p) == 1 else p, d * n if len(d) == 1 else d


def _cdiv(a: int, b: int) -> int:
    """C++'s integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _out_len(x, k, s, p, d, ceil_mode):
    y = (x + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (y - 1) * s >= x + p:
        y -= 1
    return y


def _output_shape_checks(k, s, p, d):
    """``pooling_output_shape``'s checks, per spatial dim in order."""
    for i in range(len(k)):
        if s[i] == 0:
            raise RuntimeError("stride should not be zero")
        if p[i] < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {p[i]}")
        if p[i] > _cdiv((k[i] - 1) * d[i] + 1, 2):
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p[i]}, kernel_size={k[i]} and dilation={d[i]}")


def _check_pool2d(kind, shape, k, s, p, d, ceil_mode):
    """PyTorch's checks of 2-d max/average pooling (1-d pooling with indices and 1-d
    average pooling lifted to 2-d: ``shape`` is the lifted input's)."""
    nd = len(shape)
    if kind == "max" and nd not in (3, 4):
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    if nd < 3:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(nd, 1)}, "
                         f"{max(nd, 1) - 1}], but got -3)")
    _output_shape_checks(k, s, p, d)
    if k[0] <= 0 or k[1] <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kH: {k[0]} "
                           f"kW: {k[1]}")
    if s[0] <= 0 or s[1] <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got dH: {s[0]} dW: {s[1]}")
    if d[0] <= 0 or d[1] <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilationH: {d[0]} "
                           f"dilationW: {d[1]}")
    if nd not in (3, 4) or 0 in shape[nd - 3:]:
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim batch "
                           f"size for input, but got:[{shape_str(shape)}]")
    if p[1] > k[1] // 2 or p[0] > k[0] // 2:
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but "
                           f"got padW = {p[1]}, padH = {p[0]}, kW = {k[1]}, kH = {k[0]}")
    ys = [_out_len(shape[nd - 2 + i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(2)]
    if min(ys) < 1:
        C, H, W = shape[nd - 3:]
        raise RuntimeError(f"Given input size: ({C}x{H}x{W}). Calculated output size: "
                           f"({C}x{ys[0]}x{ys[1]}). Output size is too small")


def _check_pool3d(kind, shape, k, s, p, d, ceil_mode):
    nd = len(shape)
    if nd not in (4, 5):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    _output_shape_checks(k, s, p, d)
    fn = "avg_pool3d()" if kind == "avg" else "max_pool3d_with_indices_out_cpu_template()"
    for i in range(nd == 5, nd):
        if shape[i] <= 0:
            raise RuntimeError(f"{fn}: Expected input's non-batch dimensions to have positive "
                               f"length, but input has a shape of [{shape_str(shape)}] and "
                               f"non-batch dimension {shape[i]} has length zero!")
    if min(k) <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kT: {k[0]} "
                           f"kH: {k[1]} kW: {k[2]}")
    if min(s) <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got dT: {s[0]} dH: {s[1]} "
                           f"dW: {s[2]}")
    if min(d) <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilationT: {d[0]} "
                           f"dilationH: {d[1]} dilationW: {d[2]}")
    xs = shape[-3:]
    if kind == "avg" and any(xs[i] < k[i] for i in range(3)):
        raise RuntimeError(f"input image (T: {xs[0]} H: {xs[1]} W: {xs[2]}) smaller than "
                           f"kernel size (kT: {k[0]} kH: {k[1]} kW: {k[2]})")
    if any(p[i] > k[i] // 2 for i in range(3)):
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got "
                           f"kT: {k[0]} kW: {k[2]} kH: {k[1]} padT: {p[0]} padW: {p[2]} "
                           f"padH: {p[1]}")
    ys = [_out_len(xs[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(3)]
    if min(ys) < 1:
        C = shape[-4]
        raise RuntimeError(f"Given input size: ({shape_str((C,) + tuple(xs), 'x')}). Calculated "
                           f"output size: ({shape_str((C,) + tuple(ys), 'x')}). Output size is "
                           "too small")


def _check_max_pool1d(shape, k, s, p, d, ceil_mode):
    """``max_pool1d`` without indices (``check_max_pool1d``)."""
    if k[0] <= 0:
        raise RuntimeError(f"max_pool1d() kernel_size must be greater than zero, but got {k[0]}")
    if s[0] <= 0:
        raise RuntimeError(f"max_pool1d() stride must be greater than zero, but got {s[0]}")
    if p[0] < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p[0]}")
    if p[0] > k[0] // 2:
        raise RuntimeError(f"max_pool1d() padding should be at most half of kernel size, but "
                           f"got padding={p[0]} and kernel_size={k[0]}")
    if d[0] <= 0:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d[0]}")
    _output_shape_checks(k, s, p, d)
    y = _out_len(shape[-1], k[0], s[0], p[0], d[0], ceil_mode)
    if y <= 0:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {y}")


def _lift1d(shape, k, s, p, d):
    """1-d pooling as PyTorch runs it, 2-d over ``input.unsqueeze(-2)``."""
    return shape[:-1] + (1, shape[-1]), (1,) + k, (1,) + s, (0,) + p, (1,) + d


def _pool_geom(kind, n, input, k, s, p, d, ceil_mode, with_indices=False):
    """The geometry of ``kind`` (``"max"``, ``"avg"``) pooling over the batched or unbatched
    ``input``: a fast test of the usual case, PyTorch's checks in its order where it fails."""
    shape = input._data.shape
    nd = len(shape)
    xs = shape[nd - n:]
    ok = nd in (n + 1, n + 2) and 0 not in shape[nd - n - 1:] and \
        min(k) > 0 and min(s) > 0 and min(d) > 0 and min(p) >= 0
    if ok:
        ys = tuple(_out_len(xs[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(n))
        ok = min(ys) >= 1 and all(p[i] <= k[i] // 2 for i in range(n)) and \
            all(p[i] <= ((k[i] - 1) * d[i] + 1) // 2 for i in range(n)) and \
            (kind != "avg" or n != 3 or all(xs[i] >= k[i] for i in range(3)))
    if not ok:
        if n == 3:
            _check_pool3d(kind, shape, k, s, p, d, ceil_mode)
        elif n == 2:
            _check_pool2d(kind, shape, k, s, p, d, ceil_mode)
        elif kind == "max" and not with_indices:
            _check_max_pool1d(shape, k, s, p, d, ceil_mode)
        else:
            _check_pool2d(kind, *_lift1d(shape, k, s, p, d), ceil_mode)
        ys = tuple(_out_len(xs[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(n))
    return Geom(k, s, d, p, tuple(xs), ys)


def _lowest(dtype):
    return -np.inf if dtype in _dtype.FLOATING_NP else np.iinfo(dtype).min


def _indices_from_argmax(kf, tables, xs, xp):
    """Flat plane indices from window-local argmaxes ``kf`` (``(*lead, *y)``) and per-dim
    position tables ``tables[i][o, j]`` (input position of kernel offset ``j`` at ``o``)."""
    n = len(tables)
    ks = tuple(t.shape[1] for t in tables)
    rest = kf
    flat = 0
    for i in range(n - 1, -1, -1):
        j = rest % ks[i]
        rest = rest // ks[i]
        shape = [1] * kf.ndim
        shape[kf.ndim - n + i] = tables[i].shape[0]
        o = xp.arange(tables[i].shape[0]).reshape(shape)
        flat = flat + xp.asarray(tables[i])[o, j] * math.prod(xs[i + 1:])
    return flat.astype(np.int64, copy=False)


def _max_over(x, win, tables, xs, n, node_name, return_indices, unbatched):
    """Max over the windows ``win`` (``(*lead, *y, K)``) of ``x``, PyTorch's indices, laid out
    as ``_pool_order`` says (2-d only: PyTorch's 3-d adaptive max pooling is contiguous
    whatever the input's layout)."""
    order = _pool_order(x, n, unbatched) if n == 2 else None
    xp = xp_of(x)
    kf = win.argmax(-1)
    if win.dtype in _dtype.FLOATING_NP:
        nan = win != win
        if bool(nan.any()):  # like PyTorch: the last NaN of a window (argmax: the first)
            last = (win.shape[-1] - 1) - nan[..., ::-1].argmax(-1)
            kf = xp.where(nan.any(-1), last, kf)
    need_grad = GRAD.enabled and x.requires_grad
    if need_grad or return_indices:
        ia = _indices_from_argmax(kf, tables, xs, xp)
        idx = _make(ia if order is None else copy_as(ia, order), x._device)
    if need_grad:
        out = _plane_gather(x, idx, n, _MAX_NODES[node_name], order=order)
    else:
        r = xp.take_along_axis(win, kf[..., None], -1)[..., 0]
        out = _make(r if order is None else copy_as(r, order), x._device)
    if unbatched:
        out = out.squeeze(0)
        if return_indices:
            idx = idx.squeeze(0)
    return (out, idx) if return_indices else out


def _window_max(win, g, want_index, nan_aware=True):
    """Max over the kernel offsets of ``win`` (``windows()``: ``(*lead, *y, *k)``), one
    strided slice per offset (no im2col copy). With ``want_index`` also the flat offset
    (``sum k_i * d_i * R_i``) of the winner: the first maximum, or, like PyTorch, the last
    NaN (``nan_aware``: the input has NaNs)."""
    n = len(g.k)
    R = [math.prod(g.x[i + 1:]) for i in range(n)]
    offs = _offsets(g)
    flat = [sum(off[i] * g.d[i] * R[i] for i in range(n)) for off in offs]
    best = win[(Ellipsis,) + offs[0]].copy()
    xp = xp_of(best)
    if nan_aware and want_index:
        where = xp.full(best.shape, flat[0], dtype=np.int64)
        for off, f in zip(offs[1:], flat[1:]):
            cand = win[(Ellipsis,) + off]
            mask = (cand > best) | (cand != cand)
            xp.copyto(best, cand, where=mask)
            xp.copyto(where, f, where=mask)
        return best, where
    for off in offs[1:]:
        np.maximum(best, win[(Ellipsis,) + off], out=best)
    if not want_index:
        return best, None
    where = xp.full(best.shape, flat[-1], dtype=np.int64)
    for off, f in zip(offs[-2::-1], flat[-2::-1]):  # backwards: the first maximum wins
        where = xp.where(win[(Ellipsis,) + off] == best, f, where)
    return best, where


# -- window argmax by kernel offset (the training fast path) ------------------------------------

def _offsets(g: Geom):
    return list(tap_offsets(g))


def _window_argmax(xd, g: Geom):
    """Max over the kernel offsets of the windows of ``xd`` (no padding, no NaN) and, per
    window, the index (uint8) of the first offset that holds it. A contiguous float32 2x2
    stride-2 pool (LeNet's, VGG's) runs the native kernel (7x faster); otherwise arithmetic on
    uint8 (wrapping), not masked writes: NumPy's ``where=`` loops run element by element
    (10x slower here)."""
    if g.k == (2, 2) and g.s == (2, 2) and g.d == (1, 1):
        args = _native_pool_args(xd, g)
        fn = _native.kernel("ember_max_pool2x2_forward_f32") if args is not None else None
        if fn is not None:
            best = np.empty(xd.shape[:-2] + g.y, dtype=np.float32)
            which = np.empty(best.shape, dtype=np.uint8)
            planes, H, W, OH, OW = args[:5]
            _native.by_rows(fn, planes, _pool_grain(H * W),
                            [(_native.address(xd), 4 * H * W), (_native.address(best), 4 * OH * OW),
                             (_native.address(which), OH * OW)], H, W, OH, OW)
            return best, which
    win = windows(xd, g)
    offs = _offsets(g)
    best = win[(Ellipsis,) + offs[0]].copy()
    for off in offs[1:]:
        np.maximum(best, win[(Ellipsis,) + off], out=best)
    which = xp_of(best).zeros(best.shape, dtype=np.uint8)
    for j in range(len(offs) - 1, -1, -1):  # backwards: the first maximum wins
        hit = (win[(Ellipsis,) + offs[j]] == best).view(np.uint8)
        which += hit * (j - which)  # j where hit, else unchanged
    return best, which


def _pool_grain(plane: int) -> int:
    """Planes of ``plane`` input elements per thread at least when the native max-pool
    kernels split a batch (``_native.by_rows``): ~64K elements."""
    return max(1, (1 << 16) // max(1, plane))


def _native_pool_args(a, g: Geom):
    """``(kernel args after the arrays)`` for the native 2-d max-pool backward over the planes
    of ``a`` (a C-contiguous float32 NumPy array whose last ``len(g.k)`` dims are the input's
    or output's spatial dims; 1-d pooling as 2-d with one row), or None where they do not
    apply (another dtype or device, 3-d, padding, a non-contiguous array, no kernels)."""
    n = len(g.k)
    if n > 2 or any(g.lo) or a.__class__ is not np.ndarray or a.dtype != np.float32 \
            or not a.flags.c_contiguous:
        return None
    k, s, d, x, y = ((1,) * (2 - n) + tuple(t) for t in (g.k, g.s, g.d, g.x, g.y))
    planes = math.prod(a.shape[:a.ndim - n])
    return (planes, x[0], x[1], y[0], y[1], k[0], k[1], s[0], s[1], d[0], d[1])


def _window_scatter(gy, which, g: Geom, order=None):
    """The adjoint of picking offset ``which`` in each window: zeros of the input's shape with
    ``gy`` added at each window's picked position, one strided product per kernel offset (a
    fixed offset maps windows to distinct positions, so overlapping windows sum right).
    ``order``: the gradient's layout (``_pool_order``)."""
    gd = gy._data
    n = len(g.k)
    if gd.__class__ is np.ndarray and not gd.flags.c_contiguous:
        gd = np.ascontiguousarray(gd)  # e.g. a sum's broadcast gradient: one small copy
    args = _native_pool_args(gd, g)
    fn = None
    if args is not None and which.__class__ is np.ndarray and which.flags.c_contiguous:
        fn = _native.kernel("ember_max_pool2d_backward_f32")
    if fn is not None:
        buf = np.empty(gd.shape[:-n] + g.x, dtype=gd.dtype)
        planes, H, W, OH, OW = args[:5]
        _native.by_rows(fn, planes, _pool_grain(H * W),
                        [(gd.ctypes.data, 4 * OH * OW), (which.ctypes.data, OH * OW),
                         (buf.ctypes.data, 4 * H * W)], *args[1:])
        if order is not None:
            buf = copy_as(buf, order)
        return result(buf, gy._device, WindowScatterBackward0, (gy,), (), (which, g, order))
    xp = xp_of(gy)
    buf = xp.zeros(gd.shape[:-n] + g.x, dtype=gd.dtype)
    win = windows(buf, g)  # unpadded geometry: a writable view of buf
    disjoint = all(g.s[i] >= g.d[i] * (g.k[i] - 1) + 1 for i in range(n))
    finite = bool(xp.isfinite(gd).all())  # inf * 0 would leak NaN into other positions
    for j, off in enumerate(_offsets(g)):
        view = win[(Ellipsis,) + off]
        if not finite:
            view += xp.where(which == j, gd, 0)
        elif disjoint:
            np.multiply(gd, which == j, out=view)
        else:
            view += gd * (which == j)
    if order is not None:
        buf = copy_as(buf, order)
    return result(buf, gy._device, WindowScatterBackward0, (gy,), (), (which, g, order))


def _window_pick(x, which, g: Geom, order=None):
    """Each window's value at offset ``which``: the adjoint of ``_window_scatter``."""
    win = windows(x._data, g)
    offs = _offsets(g)
    xp = xp_of(x)
    r = win[(Ellipsis,) + offs[0]]
    for j in range(1, len(offs)):
        r = xp.where(which == j, win[(Ellipsis,) + offs[j]], r)
    return result(fresh_layout(r, order), x._device, WindowPickBackward0, (x,), (),
                  (which, g, order))


def _window_scatter_bw(node, g):
    which, geom, order = node.ctx
    if g.__class__ is not Tensor:  # batched by vmap: the offsets repeated over the batch
        xp = xp_of(g)
        return (_on_physical(g, lambda p, lead: _window_scatter(
            p, xp.ascontiguousarray(xp.broadcast_to(which, lead + which.shape)), geom)),)
    return (_window_scatter(g, which, geom, order),)


WindowScatterBackward0 = make_node_class(
    "MaxPoolBackwardBackward0", lambda node, g: (_window_pick(g, *node.ctx),))
WindowPickBackward0 = make_node_class("MaxPoolBackwardBackward1", _window_scatter_bw)
_PICK_NODES = {n: make_node_class(f"MaxPool{n}DWithIndicesBackward0", _window_scatter_bw)
               for n in (1, 2, 3)}


def _separable_max(pd, g: Geom):
    """Window maxima of the padded array ``pd``, one spatial dim at a time: ``sum(k)``
    strided maxima, the later ones on reduced arrays, instead of ``prod(k)`` on the full
    windows (resnet18's 3x3/2 pool on 8x64x112x112: 26 ms -> 9 ms; PyTorch 25 ms)."""
    n = len(g.k)
    lead = pd.ndim - n
    r = pd
    for i in reversed(range(n)):
        pre = (slice(None),) * (lead + i)
        step, dil, size = g.s[i], g.d[i], g.y[i]
        acc = None
        for j in range(g.k[i]):
            sl = r[pre + (slice(j * dil, j * dil + (size - 1) * step + 1, step),)]
            acc = sl.copy() if acc is None else np.maximum(acc, sl, out=acc)
        r = acc
    return r


def _fix_all_lowest(where, best, g, xp):
    """Where a window's maximum is the padding fill (-inf, an integer dtype's minimum: 0 for
    uint8), PyTorch keeps its first in-bounds position (our search may have stopped on
    padding); windows with no in-bounds element at all get their position clipped into the
    plane."""
    if not any(g.lo) and all(span(g, i) <= g.x[i] for i in range(len(g.k))):
        return where  # no padding: every position searched is in bounds
    low = best == _lowest(best.dtype)
    if not bool(low.any()):
        return where
    first = 0
    for i in range(len(g.k)):
        start = xp.arange(g.y[i]) * g.s[i] - g.lo[i]
        f = xp.where(start < 0, start + g.d[i] * (-(start // g.d[i])), start)
        f = np.minimum(f, g.x[i] - 1) * math.prod(g.x[i + 1:])
        first = first[..., None] + f if i else f
    return xp.where(low, first, where)


def _max_poolnd(n, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    impl = n == 1 and not return_indices  # PyTorch's max_pool1d without indices
    fname = f"max_pool{n}d_with_indices" if return_indices else f"max_pool{n}d"
    shape = input._data.shape
    if impl and (len(shape) not in (2, 3) or 0 in shape[len(shape) - 2:]):
        raise RuntimeError(f"max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 "
                           f"dim batch size for input, but got:[{shape_str(shape)}]")
    if n == 1 and not impl and len(shape) not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {len(shape)}-dimensional "
                           "tensor for argument #1 'self' (while checking arguments for "
                           "max_pool1d)")
    k, s, p, d = _pool_args("max", n, fname, kernel_size, stride, padding, dilation, impl)
    if ceil_mode.__class__ is not bool:
        _bool_arg(ceil_mode, fname, "ceil_mode", 6)
    g = _pool_geom("max", n, input, k, s, p, d, ceil_mode, return_indices)
    dt = input._data.dtype
    if dt.kind in "bc" or (impl and dt not in _dtype.FLOATING_NP):
        name = "max_pool1d_impl" if impl else f"max_pool{max(n, 2)}d"
        raise NotImplementedError(f"\"{name}\" not implemented for '{scalar_type_name(dt)}'")
    unbatched = len(shape) == n + 1
    x = input.unsqueeze(0) if unbatched else input
    need_grad = GRAD.enabled and x.requires_grad
    xd = x._data
    order = _pool_order(x, n, unbatched)
    if need_grad and not return_indices and xd.dtype in _dtype.FLOATING_NP and \
            math.prod(g.k) < 256 and \
            all(span(g, i) <= g.x[i] for i in range(n)) and not any(g.lo) and \
            not bool(xp_of(x).isnan(xd).any()):
        # training without indices, no padding, no NaN: keep each window's offset (uint8)
        # instead of PyTorch's int64 flat indices (LeNet's pools: 0.9 ms -> 0.2 ms forward)
        best, which = _window_argmax(xd, g)
        if order is not None:
            best = copy_as(best, order)
        out = result(best, x._device, _PICK_NODES[n], (x,), (), (which, g, order))
        return out.squeeze(0) if unbatched else out
    want = need_grad or return_indices
    if not want:
        out = _make(fresh_layout(_separable_max(padded(xd, g, _lowest(xd.dtype)), g), order),
                    x._device)
        return out.squeeze(0) if unbatched else out
    best, where = _window_max(windows(xd, g, _lowest(xd.dtype)), g, want,
                              want and xd.dtype in _dtype.FLOATING_NP and
                              bool(xp_of(x).isnan(xd).any()))
    best = fresh_layout(best, order)
    if where is None:
        out = _make(best, x._device)
    else:
        xp = xp_of(x)
        base = 0  # flat index of each window's origin: sum (o_i * s_i - p_i) * R_i
        for i in range(n):
            o = (xp.arange(g.y[i]) * g.s[i] - g.lo[i]) * math.prod(g.x[i + 1:])
            base = base[..., None] + o if i else o
        where += base
        if xd.dtype.kind != "b":
            where = _fix_all_lowest(where, best, g, xp)
        idx = _make(fresh_layout(where, order), x._device)
        unique = all(g.s[i] >= g.d[i] * (g.k[i] - 1) + 1 for i in range(n))
        out = _plane_gather(x, idx, n, _MAX_NODES[f"MaxPool{n}DWithIndicesBackward0"],
                            unique, best, order) if need_grad else _make(best, x._device)
    if unbatched:
        out = out.squeeze(0)
        if return_indices:
            idx = idx.squeeze(0)
    return (out, idx) if return_indices else out


# -- average pooling --------------------------------------------------------------------------

def _window_sum(x, g, div, node_cls, order=None):
    """Sum over each window (zero padding) divided by ``div``; a linear op, laid out (and its
    gradient) as ``order`` says (``_pool_order``)."""
    xd = x._data
    win = windows(xd, g, 0)
    offs = _offsets(g)
    # float16 and bfloat16 sum in float32 and round once, as PyTorch's kernels
    acc = _dtype.opmath_np(xd.dtype) if xd.dtype in _dtype.FLOATING_NP else np.int64
    r = win[(Ellipsis,) + offs[0]].astype(acc)
    for off in offs[1:]:  # one strided slice per kernel offset: no im2col copy
        r += win[(Ellipsis,) + off]
    if xd.dtype in _dtype.FLOATING_NP:
        r /= div
        if r.dtype != xd.dtype:
            r = r.astype(xd.dtype)
    else:  # integer average truncates toward zero, as PyTorch's kernel
        r = (r / div).astype(xd.dtype)
    return result(fresh_layout(r, order), x._device, node_cls, (x,), (), (g, div, node_cls, order))


def _window_sum_t(gy, g, div, fwd_cls, order=None):
    """The adjoint of ``_window_sum``: spread ``gy / div`` over each window."""
    gd = gy._data
    xp = xp_of(gy)
    gs = _dtype.widen(gd) / div  # float16/bfloat16 summed in float32, rounded once
    n = len(g.k)
    r = _dtype.narrow(scatter_windows(gd.shape[:-n], g, _dtype.opmath_np(gd.dtype), xp,
                                      lambda off: gs), gd.dtype)
    return result(fresh_layout(r, order), gy._device, WindowSumTBackward0, (gy,), (),
                  (g, div, fwd_cls, order))


def _window_sum_bw(node, gy):
    g, div, cls, order = node.ctx
    if gy.__class__ is not Tensor:
        return (_on_physical(gy, lambda p, lead: _window_sum_t(p, g, div, cls)),)
    return (_window_sum_t(gy, g, div, cls, order),)


def _window_sum_t_bw(node, gg):
    g, div, cls, order = node.ctx
    return (_window_sum(gg, g, div, cls, order),)


WindowSumTBackward0 = make_node_class("AvgPoolBackwardBackward0", _window_sum_t_bw)
_AVG_NODES = {n: make_node_class(f"AvgPool{n}DBackward0", _window_sum_bw) for n in (1, 2, 3)}


def _divisor(g, count_include_pad, xp):
    """Per-output divisor (outer product over dims) for average pooling."""
    div = None
    for i in range(len(g.k)):
        start = xp.arange(g.y[i]) * g.s[i] - g.lo[i]
        end = np.minimum(start + g.k[i], g.x[i] + g.lo[i])
        if count_include_pad:
            size = end - start
        else:
            size = np.minimum(end, g.x[i]) - np.maximum(start, 0)
        div = size if div is None else div[..., None] * size
    return div


def _avg_poolnd(n, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                divisor_override):
    shape = input._data.shape
    nd = len(shape)
    if n == 1 and nd not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {nd}-dimensional tensor for "
                           "argument #1 'self' (while checking arguments for avg_pool1d)")
    k, s, p, _ = _pool_args("avg", n, f"avg_pool{n}d", kernel_size, stride, padding, 1)
    if ceil_mode.__class__ is not bool or count_include_pad.__class__ is not bool:
        _bool_arg(ceil_mode, f"avg_pool{n}d", "ceil_mode", 5)
        _bool_arg(count_include_pad, f"avg_pool{n}d", "count_include_pad", 6)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    g = _pool_geom("avg", n, input, k, s, p, (1,) * n, ceil_mode)
    dt = input._data.dtype
    if dt not in _dtype.FLOATING_NP and dt != np.int64:
        name = "avg_pool3d_out_frame" if n == 3 else "avg_pool2d"
        raise NotImplementedError(f"\"{name}\" not implemented for '{scalar_type_name(dt)}'")
    unbatched = nd == n + 1
    x = input.unsqueeze(0) if unbatched else input
    if divisor_override is not None:
        div = divisor_override
    else:
        div = _divisor(g, count_include_pad, xp_of(x))
        if x._data.dtype in _dtype.FLOATING_NP:
            div = div.astype(_dtype.opmath_np(x._data.dtype))
    # PyTorch's 3-d average pooling is contiguous whatever the input's layout
    out = _window_sum(x, g, div, _AVG_NODES[n], _pool_order(x, n, unbatched) if n == 2 else None)
    return out.squeeze(0) if unbatched else out


# -- adaptive pooling -------------------------------------------------------------------------

def _adaptive_sizes(kind, n, input, output_size):
    """The output size of adaptive pooling after PyTorch's checks, in its order and words
    (its Python ``_list_with_default``, then its kernels' checks; 1-d pooling runs as 2-d
    over ``input.unsqueeze(-2)``). ``None`` when PyTorch takes its ``mean`` path (a global
    average pool) with an input the pooling kernels would refuse."""
    shape = input._data.shape
    nd = len(shape)
    name = f"adaptive_{kind}_pool{n}d"
    if n == 1:
        o = _int_list(output_size, name, "output_size", 2)
        if nd not in (2, 3):
            raise RuntimeError(f"Expected 2 to 3 dimensions, but got {nd}-dimensional tensor "
                               f"for argument #1 'self' (while checking arguments for {name})")
        if kind == "max" and 0 in shape[1:]:
            _nonzero_check(name, shape, 1, False)
        if len(o) != 1:
            raise RuntimeError(f"{name}() argument 'output_size' should contain one int "
                               f"(got {len(o)})")
        ys = _adaptive_checks(kind, 2, shape[:-1] + (1, shape[-1]), (1, o[0]),
                              input._data.dtype)
        return None if ys is None else ys[1:]
    if isinstance(output_size, (int, np.integer)) and not isinstance(output_size, bool):
        o = (int(output_size),) * n
    else:
        if not hasattr(output_size, "__len__"):
            raise TypeError(f"object of type '{type(output_size).__name__}' has no len()")
        if nd <= len(output_size):
            raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")
        o = _int_list([shape[nd - len(output_size) + i] if v is None else v
                       for i, v in enumerate(output_size)], name, "output_size", 2)
    return _adaptive_checks(kind, n, shape, o, input._data.dtype)


def _nonzero_check(name, shape, first, negative_index):
    nd = len(shape)
    for i in range(first, nd) if first >= 0 else range(nd + first, nd):
        if shape[i] <= 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes [{shape_str(shape)}] with "
                               f"dimension {i} being empty")


def _adaptive_checks(kind, n, shape, o, dtype):
    nd = len(shape)
    name = f"adaptive_{kind}_pool{n}d"
    if kind == "avg":
        if len(o) != n:
            raise RuntimeError(f"{name}: output_size must be {n}")
        if min(o) < 0:
            got = ", ".join(str(v) for v in o[:2]) + (f",{o[2]}" if n == 3 else "")
            raise RuntimeError(f"{name}: elements of output_size must be greater than or equal "
                               f"to 0 but received {{{got}}}")
        if all(v == 1 for v in o) and (nd not in (n + 1, n + 2) or
                                       dtype not in _dtype.FLOATING_NP):
            return None  # PyTorch's mean over the last n dims
        if n == 2:
            if nd not in (3, 4):
                raise RuntimeError(f"{name}(): Expected 3D or 4D tensor, but got "
                                   f"[{shape_str(shape)}]")
            _nonzero_check(name, shape, -2, True)
        else:
            _nonzero_check(name, shape, 1, False)
            if nd not in (4, 5):
                raise RuntimeError(f"{name}(): Expected 4D or 5D tensor, but got "
                                   f"[{shape_str(shape)}]")
        if dtype not in _dtype.FLOATING_NP:
            impl = "adaptive_avg_pool3d_cpu" if n == 3 else name
            raise NotImplementedError(f"\"{impl}\" not implemented for "
                                      f"'{scalar_type_name(dtype)}'")
        return tuple(o)
    if nd not in (n + 1, n + 2):
        raise RuntimeError(f"{name}(): Expected {n + 1}D or {n + 2}D tensor, but got: "
                           f"[{shape_str(shape)}]")
    _nonzero_check(name, shape, 1, False)
    if len(o) != n:
        raise RuntimeError(f"{name}(): internal error: output_size.size() must be {n}")
    if min(o) < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(o)}: "
                           f"[{shape_str(shape[:nd - n] + tuple(o))}]")
    if dtype not in _dtype.FLOATING_NP:
        impl = "adaptive_max_pool3d_cpu" if n == 3 else name
        raise NotImplementedError(f"\"{impl}\" not implemented for '{scalar_type_name(dtype)}'")
    return tuple(o)


def _bounds(X, Y, xp=np):
    i = xp.arange(Y)
    return (i * X) // Y, -((-(i + 1) * X) // Y)


def _avg_matrices(xs, ys, xp, dtype):
    """Per spatial dim, the ``(X, Y)`` matrix that averages each adaptive window."""
    mats = []
    for X, Y in zip(xs, ys):
        start, end = _bounds(X, Y, xp)
        cols = xp.arange(X)
        a = ((cols >= start[:, None]) & (cols < end[:, None])) / (end - start)[:, None]
        mats.append(a.T.astype(dtype))
    return mats


def _adaptive_avg_apply(x, mats, adjoint, order, back_order):
    """``x`` with its spatial dims multiplied by ``mats`` (or their transposes: the adjoint),
    laid out in ``order``; its gradient (the other one) in ``back_order``. Separable: one
    matrix product per spatial dim."""
    xd = x._data
    xp = xp_of(x)
    half = xd.dtype in _dtype.OPMATH  # averaged in float32, rounded once, as PyTorch
    r = xd.astype(np.float32) if half else xd
    lead = r.ndim - len(mats)
    if adjoint and all(m.shape[1] == 1 for m in mats):
        # a global average's gradient: each value times 1/X per dim (the products that the
        # matrices below make, in their order), written out once (ResNet's pool on
        # 32x16x32x32: 0.8 -> 0.15 ms)
        for m in mats:
            r = r * m[:1, :1].reshape((1,) * r.ndim)
        full = xp.empty(r.shape[:lead] + tuple(m.shape[0] for m in mats), dtype=r.dtype)
        full[...] = r
        r = full
    else:
        for i, m in enumerate(mats):
            ax = lead + i
            r = xp.moveaxis(xp.matmul(xp.moveaxis(r, ax, -1), m.T if adjoint else m), -1, ax)
    if half:
        r = r.astype(xd.dtype)
    n = len(mats)
    cls = (_ADAPTIVE_AVG_BW if adjoint else _ADAPTIVE_AVG_NODES)[n]
    return result(fresh_layout(r, order), x._device, cls, (x,), (),
                  (mats, adjoint, order, back_order))


def _adaptive_avg_bw(node, g):
    mats, adjoint, order, back_order = node.ctx
    if g.__class__ is not Tensor:
        return (_on_physical(g, lambda p, lead: _adaptive_avg_apply(p, mats, not adjoint, None,
                                                                    None)),)
    return (_adaptive_avg_apply(g, mats, not adjoint, back_order, order),)


_ADAPTIVE_AVG_NODES = {n: make_node_class(f"AdaptiveAvgPool{n}DBackward0", _adaptive_avg_bw)
                       for n in (1, 2, 3)}
_ADAPTIVE_AVG_BW = {n: make_node_class(f"AdaptiveAvgPool{n}DBackwardBackward0",
                                       _adaptive_avg_bw) for n in (1, 2, 3)}


def _adaptive_avg(n, input, output_size):
    ys = _adaptive_sizes("avg", n, input, output_size)
    if ys is None:
        return input.mean(tuple(range(-n, 0)), keepdim=True)
    unbatched = input._data.ndim == n + 1
    x = input.unsqueeze(0) if unbatched else input
    xs = x._data.shape[2:]
    dtype = np.float32 if x._data.dtype in _dtype.OPMATH else x._data.dtype
    order = _pool_order(x, n, unbatched)
    # a global average is PyTorch's mean (keeps the layout; its gradient is contiguous); the
    # 3-d kernel is contiguous whatever the input's layout
    mean = all(y == 1 for y in ys)
    if n == 3 and not mean:
        order = None
    back = None if mean else order
    out = _adaptive_avg_apply(x, _avg_matrices(xs, ys, xp_of(x), dtype), False, order, back)
    return out.squeeze(0) if unbatched else out


def _adaptive_max(n, input, output_size, return_indices):
    ys = _adaptive_sizes("max", n, input, output_size)
    unbatched = input._data.ndim == n + 1
    x = input.unsqueeze(0) if unbatched else input
    xs = x._data.shape[2:]
    xd = x._data
    if 0 in ys:  # an empty output (PyTorch allows it)
        xp = xp_of(x)
        out = _make(xp.empty(xd.shape[:2] + ys, dtype=xd.dtype), x._device)
        idx = _make(xp.empty(xd.shape[:2] + ys, dtype=np.int64), x._device)
        if unbatched:
            out, idx = out.squeeze(0), idx.squeeze(0)
        return (out, idx) if return_indices else out
    xp = xp_of(x)
    tables, index = [], []
    lead = xd.ndim - n
    for i in range(n):
        start, end = _bounds(xs[i], ys[i])
        kmax = int((end - start).max())
        t = np.minimum(start[:, None] + np.arange(kmax), end[:, None] - 1)
        tables.append(t)
        shape = [1] * (2 * n)
        shape[i], shape[n + i] = ys[i], kmax
        index.append(xp.asarray(t.reshape(shape)))
    win = xd[(Ellipsis,) + tuple(index)]  # (*lead, *y, *k): repeats of a window's last element
    win = win.reshape(xd.shape[:lead] + ys + (math.prod(win.shape[xd.ndim:]),))
    return _max_over(x, win, tables, xs, n, f"AdaptiveMaxPool{n}DBackward0", return_indices,
                     unbatched)


# -- unpooling and power-average pooling ------------------------------------------------------

def _py_ntuple(value, n: int) -> tuple:
    """``torch.nn.modules.utils._ntuple``: an iterable as a tuple, anything else repeated."""
    return tuple(value) if hasattr(value, "__iter__") else (value,) * n


def _unpool_output_size(input, k, s, p, output_size):
    """PyTorch's Python ``_unpool_output_size``, its checks and words."""
    shape = input._data.shape
    default = [(shape[-len(k) + d] - 1) * s[d] + k[d] - 2 * p[d] for d in range(len(k))]
    if output_size is None:
        ret = default
    else:
        if len(output_size) == len(k) + 2:
            output_size = output_size[2:]
        if len(output_size) != len(k):
            raise ValueError(f"output_size should be a sequence containing {len(k)} or "
                             f"{len(k) + 2} elements, but it has a length of "
                             f"'{len(output_size)}'")
        for d in range(len(k)):
            lo, hi = default[d] - s[d], default[d] + s[d]
            if not lo < output_size[d] < hi:
                raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between '
                                 f'{lo} and {hi})')
        ret = output_size
    for d in range(len(k)):
        if ret[d] < 0:
            raise ValueError("max_unpooling: output_size must contain non-negative spatial "
                             f"dimensions, but got output_size[{d}]={ret[d]}")
    return ret


def _max_unpoolnd(n, input, indices, kernel_size, stride, padding, output_size):
    k = _py_ntuple(kernel_size, n)
    s = k if stride is None else _py_ntuple(stride, n)
    p = _py_ntuple(padding, n)
    ret = _unpool_output_size(input, k, s, p, output_size)
    m = max(n, 2)  # 1-d unpooling runs as 2-d over ``input.unsqueeze(-1)``
    xs = _int_list(list(ret) + [1] * (n == 1), f"max_unpool{m}d", "output_size", 3)
    if n == 3:
        s = _int_list(s, "max_unpool3d", "stride", 4)
        p = _int_list(p, "max_unpool3d", "padding", 5)
    shape, ishape = input._data.shape, indices._data.shape
    if n == 1:
        shape, ishape = shape + (1,), ishape + (1,)
    nd = len(shape)
    if indices._data.dtype != np.int64:
        raise RuntimeError("elements in indices should be type int64" + (
            "" if n == 3 else f" but got: {scalar_type_name(indices._data.dtype)}"))
    names = {2: "two elements (height, width)", 3: "three elements (depth, height, width)"}
    if len(xs) != m:
        raise RuntimeError(f"There should be exactly {names[m]} in output_size, but got "
                           f"{len(xs)} elements.")
    if nd not in (m + 1, m + 2):
        raise RuntimeError(f"Input to max_unpooling{m}d should be a {m + 1}d or {m + 2}d Tensor, "
                           f"but got a tensor with {nd} dimensions.")
    if n == 3:
        for what, v in (("stride", s), ("padding", p)):
            if len(v) != 3:
                raise RuntimeError(f"There should be exactly {names[3]} in {what}, but got: "
                                   f"{len(v)} elements.")
    if shape != ishape:
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"([{shape_str(shape)}]) but got indices tensor with shape: "
                           f"[{shape_str(ishape)}]")
    for i in range(1, nd):
        if shape[i] <= 0:
            raise RuntimeError(f"max_unpooling{m}d_forward_out_cpu(): Expected input to have "
                               f"non-zero size for non-batch dimensions, but got "
                               f"[{shape_str(shape)}] with dimension {i} being empty.")
    if n == 3 and min(s) <= 0:
        raise RuntimeError(f"strides should be greater than zero, but got stride: "
                           f"[{shape_str(s)}]")
    if input._data.dtype not in _dtype.FLOATING_NP:
        raise NotImplementedError(f"\"max_unpool{m}d\" not implemented for "
                                  f"'{scalar_type_name(input._data.dtype)}'")
    xs = xs[:n]
    P = math.prod(xs)
    idd = indices._data
    if idd.size and (int(idd.min()) < 0 or int(idd.max()) >= P):
        bad = int(idd.max()) if int(idd.max()) >= P else int(idd.min())
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                           f"{shape_str(xs + (1,) * (n == 1), 'x')})")
    return _plane_scatter(input, indices, xs, False, _UNPOOL_NODES[n])


def _lp_pool(n, input, norm_type, kernel_size, stride, ceil_mode):
    """PyTorch's Python ``lp_pool{n}d``: ``(sum x**p)**(1/p)`` through average pooling; an
    infinite ``norm_type`` is max pooling of ``|x|`` (minus that of ``-|x|`` for ``-inf``)."""
    if isinstance(norm_type, (int, float)) and math.isinf(norm_type):
        if norm_type > 0:
            return _max_poolnd(n, input.abs(), kernel_size, stride, 0, 1, ceil_mode, False)
        return -_max_poolnd(n, -input.abs(), kernel_size, stride, 0, 1, ceil_mode, False)
    k = kernel_size if n == 1 else math.prod(ntuple(kernel_size, n, "kernel_size", "pooling"))
    out = _avg_poolnd(n, input.pow(norm_type), kernel_size, stride, 0, ceil_mode, True, None)
    return (out.sign() * out.abs().relu()).mul(k).pow(1.0 / norm_type)


# -- fractional max pooling -------------------------------------------------------------------

#: which of a plane's random samples drives each spatial dim (PyTorch's kernels: W then H in
#: 2-D, T, H, W in 3-D)
_SAMPLE_OF_DIM = {2: (1, 0), 3: (0, 1, 2)}
_DIM_NAMES = {2: ("height", "width"), 3: ("time", "height", "width")}
_FRACTIONAL_PREFIX = {2: "fractional_max_pool2d()", 3: "fractional_max_pool3d_out()"}


def _fractional_starts(samples, in_size: int, out_size: int, pool: int):
    """Window starts along one dim for every plane (``samples``: ``(N, C)``): PyTorch's
    ``generate_intervals``, computed in the input's dtype as its kernel does."""
    xp = xp_of(samples)
    starts = xp.full(samples.shape + (out_size,), in_size - pool, dtype=np.int64)
    if out_size > 1:
        ftype = samples.dtype.type
        alpha = ftype(in_size - pool) / ftype(out_size - 1)
        u = samples[..., None]
        i = xp.arange(out_size - 1, dtype=samples.dtype)
        starts[..., :-1] = ((i + u) * alpha).astype(np.int64) - (u * alpha).astype(np.int64)
    return starts


def _int_tuple(value, n: int, what: str, name: str) -> tuple:
    vals = (value,) * n if isinstance(value, (int, np.integer)) else tuple(value)
    if len(vals) == 1:
        vals = vals * n
    if len(vals) != n:
        ints = "tuple of Ints" if n == 2 else "tuple of three Ints"
        raise RuntimeError(f"{name}: {what} must either be a single Int or {ints}")
    return tuple(int(v) for v in vals)


def _fractional_sizes(n, input, kernel_size, output_size, output_ratio):
    """Kernel and output sizes from ``output_size`` or ``output_ratio`` (PyTorch's Python)."""
    name = f"fractional_max_pool{n}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an "
                         "output_ratio")
    if output_size is None:
        ratio = (output_ratio,) * n if isinstance(output_ratio, (int, float)) else \
            tuple(output_ratio)
        if len(ratio) > n:
            raise ValueError(f"{name} requires output_ratio to either be a single Int or "
                             "tuple of Ints.")
        ratio = ratio * n if len(ratio) == 1 else ratio
        spatial = input._data.shape[-n:]
        output_size = [int(spatial[i] * ratio[i]) for i in range(n)]
    return (_int_tuple(kernel_size, n, "kernel_size", name),
            _int_tuple(output_size, n, "output_size", name))


def _check_fractional(n, input, k, ys, samples):
    """PyTorch's checks of ``fractional_max_pool{2,3}d``, in its order and words."""
    prefix = _FRACTIONAL_PREFIX[n]
    shape = input._data.shape
    if len(shape) not in (n + 1, n + 2):
        raise RuntimeError(f"{prefix}: Expected {n + 1}D or {n + 2}D tensor, but got: "
                           f"[{shape_str(shape)}]")
    for i in range(1, len(shape)):
        if shape[i] <= 0:
            raise RuntimeError(f"{prefix}: Expected input to have non-zero size for non-batch "
                               f"dimensions, but got[{shape_str(shape)}] with dimension {i} "
                               "being empty.")
    if any(v <= 0 for v in k):
        raise RuntimeError(f"{prefix}: kernel_size must be greater than zero, but got {k}")
    xs = shape[-n:]
    for i in range(n):  # PyTorch's 3-D kernel demands one more input element than its 2-D one
        if ys[i] + k[i] - 1 > xs[i] - (n == 3):
            what = _DIM_NAMES[n][i]
            raise RuntimeError(f"{prefix}: pool {what} {k[i]} too large relative to input "
                               f"{what} {xs[i]}")
    if any(v < 0 for v in ys):
        bad = min(ys)
        raise RuntimeError(f"Trying to create tensor with negative dimension {bad}: "
                           f"[{shape_str(shape[:-n] + tuple(ys))}]")
    if samples._data.dtype != input._data.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    sd = samples._data.shape
    if len(sd) != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {len(sd)}")
    N, C = (1, shape[0]) if len(shape) == n + 1 else shape[:2]
    if sd[0] < N:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if sd[1] != C:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if sd[2] != n:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {n}; got {sd[2]}.")


def _fractional_max(n, input, kernel_size, output_size, output_ratio, return_indices,
                    _random_samples):
    """Fractional max pooling (Graham, 2014): max over ``kernel_size`` windows whose starts
    follow a pseudo-random sequence per plane, drawn from ``_random_samples`` in ``[0, 1)``
    (``(N, C, n)``; from the default generator when None)."""
    from .._random import rand

    k, ys = _fractional_sizes(n, input, kernel_size, output_size, output_ratio)
    unbatched = input._data.ndim == n + 1
    samples = _random_samples
    if samples is None:
        lead = (1, input.shape[-n - 1]) if unbatched else input.shape[:2]
        samples = rand(*lead, n, dtype=input.dtype, device=input.device)
    check_same_device(input, samples)
    _check_fractional(n, input, k, ys, samples)
    x = input.unsqueeze(0) if unbatched else input
    xd = x._data
    N, C = xd.shape[:2]
    if xd.dtype not in _dtype.FLOATING_NP:
        raise NotImplementedError(f"\"fractional_max_pool{n}d_out_frame\" not implemented for "
                                  f"'{scalar_type_name(xd.dtype)}'")
    xp = xp_of(x)
    xs = xd.shape[2:]
    strides = [math.prod(xs[i + 1:]) for i in range(n)]
    origin = 0  # flat index of each window's first element, (N, C, *ys)
    for i in range(n):
        s = _fractional_starts(samples._data[:N, :, _SAMPLE_OF_DIM[n][i]], xs[i], ys[i], k[i])
        origin = origin + s.reshape((N, C) + (1,) * i + (ys[i],) + (1,) * (n - 1 - i)) * \
            strides[i]
    flat = xd.reshape(N, C, math.prod(xs))
    best = xp.full((N, C) + tuple(ys), -np.inf, dtype=xd.dtype)
    where = origin.copy()
    for off in itertools.product(*(range(v) for v in k)):  # PyTorch's scan: the first
        pos = origin + sum(o * r for o, r in zip(off, strides))  # maximum, or the last NaN
        cand = xp.take_along_axis(flat, pos.reshape(N, C, math.prod(ys)), -1).reshape(best.shape)
        take = (cand > best) | (cand != cand)
        xp.copyto(best, cand, where=take)
        xp.copyto(where, pos, where=take)
    idx = _make(where, x._device)
    out = _plane_gather(x, idx, n, _FRACTIONAL_NODES[n], False, best)
    if unbatched:
        out, idx = out.squeeze(0), idx.squeeze(0)
    return (out, idx) if return_indices else out


# -- the public functions, one family per dimensionality ---------------------------------------

#: the ones PyTorch also has as ``torch.<name>`` (the rest live in ``nn.functional`` only)
_TORCH_FUNCTIONS = {"max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d",
                    "adaptive_avg_pool1d", "adaptive_max_pool1d", "max_pool1d_with_indices"}

#: the ones whose PyTorch binding takes ``out=``
_OUT = {"avg_pool2d", "avg_pool3d"}


def _publish(fn, name: str, doc: str) -> None:
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    fn.__module__ = __name__
    register(name, function=name in _TORCH_FUNCTIONS, method=False, out=name in _OUT)(fn)
    globals()[name] = fn
    __all__.append(name)


def _define(n: int) -> None:
    d = f"{n}d"

    def max_pool(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                 return_indices=False):
        return _max_poolnd(n, input, kernel_size, stride, padding, dilation, ceil_mode,
                           return_indices)

    def max_pool_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                              ceil_mode=False, return_indices=False):
        return _max_poolnd(n, input, kernel_size, stride, padding, dilation, ceil_mode, True)

    if n == 1:  # PyTorch's avg_pool1d has no divisor_override (its 2-d and 3-d ones do)
        def avg_pool(input, kernel_size, stride=None, padding=0, ceil_mode=False,
                     count_include_pad=True):
            return _avg_poolnd(n, input, kernel_size, stride, padding, ceil_mode,
                               count_include_pad, None)
    else:
        def avg_pool(input, kernel_size, stride=None, padding=0, ceil_mode=False,
                     count_include_pad=True, divisor_override=None):
            return _avg_poolnd(n, input, kernel_size, stride, padding, ceil_mode,
                               count_include_pad, divisor_override)

    def adaptive_avg_pool(input, output_size):
        return _adaptive_avg(n, input, output_size)

    def adaptive_max_pool(input, output_size, return_indices=False):
        return _adaptive_max(n, input, output_size, return_indices)

    def adaptive_max_pool_with_indices(input, output_size, return_indices=False):
        return _adaptive_max(n, input, output_size, True)

    def max_unpool(input, indices, kernel_size, stride=None, padding=0, output_size=None):
        return _max_unpoolnd(n, input, indices, kernel_size, stride, padding, output_size)

    def lp_pool(input, norm_type, kernel_size, stride=None, ceil_mode=False):
        return _lp_pool(n, input, norm_type, kernel_size, stride, ceil_mode)

    for fn, name, doc in (
            (max_pool, f"max_pool{d}", f"{n}-D max pooling; ``return_indices`` also gives "
                                       "each maximum's flat index in its input plane."),
            (max_pool_with_indices, f"max_pool{d}_with_indices",
             f"{n}-D max pooling returning ``(values, indices)``."),
            (avg_pool, f"avg_pool{d}", f"{n}-D average pooling."),
            (adaptive_avg_pool, f"adaptive_avg_pool{d}",
             f"{n}-D adaptive average pooling to ``output_size`` (None keeps a size)."),
            (adaptive_max_pool, f"adaptive_max_pool{d}", f"{n}-D adaptive max pooling."),
            (adaptive_max_pool_with_indices, f"adaptive_max_pool{d}_with_indices",
             f"{n}-D adaptive max pooling returning ``(values, indices)``."),
            (max_unpool, f"max_unpool{d}", f"Partial inverse of ``max_pool{d}``: values "
                                           "put back at ``indices``, zeros elsewhere."),
            (lp_pool, f"lp_pool{d}", f"{n}-D power-average pooling: ``(sum x**p)**(1/p)`` "
                                     "over each window.")):
        _publish(fn, name, doc)


def _define_fractional(n: int) -> None:
    d = f"{n}d"

    def fractional_max_pool(input, kernel_size, output_size=None, output_ratio=None,
                            return_indices=False, _random_samples=None):
        return _fractional_max(n, input, kernel_size, output_size, output_ratio,
                               return_indices, _random_samples)

    def fractional_max_pool_with_indices(input, kernel_size, output_size=None,
                                         output_ratio=None, return_indices=False,
                                         _random_samples=None):
        return _fractional_max(n, input, kernel_size, output_size, output_ratio, True,
                               _random_samples)

    doc = (f"{n}-D fractional max pooling: max over ``kernel_size`` windows at pseudo-random "
           "steps that give ``output_size`` (or ``output_ratio`` times the input size); "
           "``_random_samples`` (``(N, C, {n})`` in ``[0, 1)``, else drawn from the default "
           "generator) fix the steps.").replace("{n}", str(n))
    _publish(fractional_max_pool, f"fractional_max_pool{d}",
             doc + " ``return_indices`` also gives each maximum's flat index in its plane.")
    _publish(fractional_max_pool_with_indices, f"fractional_max_pool{d}_with_indices",
             doc + " Returns ``(values, indices)``.")


for _n in (1, 2, 3):
    _define(_n)
for _n in (2, 3):
    _define_fractional(_n)
del _n
