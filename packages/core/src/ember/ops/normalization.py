"""Normalization kernels: batch, layer, group, instance, RMS and local response norms.

Batch, layer, group and instance norm share one kernel: normalize over some axes of the
input (statistics ``mean``/``invstd`` kept with ``keepdims``), then scale and shift by an
affine weight/bias that broadcasts against the input. Its forward is a handful of NumPy
reductions; its backward (``_norm_backward``) is the fused formula written with Tensor ops.
With ``create_graph`` the statistics are recomputed from the input with Tensor ops, so the
double backward sees their dependence on the input.

``ember.batch_norm`` and ``ember.instance_norm`` take ``torch.batch_norm``'s argument order
(weight and bias before the running statistics); this module's ``batch_norm`` and
``instance_norm`` are the ``torch.nn.functional`` ones, which ``ember.nn.functional``
re-exports.
"""

from __future__ import annotations

import math
import numbers
import operator
import warnings

import numpy as np

from .. import _dtype, _native
from .._device import check_same_device, fused_kernel, xp_of
from .._dtype import scalar_type_name
from .._format import shape_str
from .._native import address as _address
from .._parallel import native_threads, parallel_for
from .._size import Size
from .._tensor import Tensor, _make
from .._warn import user_stacklevel
from ..autograd.grad_mode import GRAD
from ..autograd.graph import make_node_class, record
from ._factories import sum_to_size
from .registry import register

__all__ = ["batch_norm", "instance_norm", "layer_norm", "group_norm", "rms_norm",
           "local_response_norm"]


# -- the shared kernel --------------------------------------------------------------------------

def _moments(d, axes):
    """Mean and biased variance of ``d`` over ``axes`` (keepdims), in ``d``'s dtype."""
    with np.errstate(invalid="ignore", divide="ignore"):
        if d.size:
            mean = d.mean(axis=axes, keepdims=True)
        else:  # empty: NaN statistics without NumPy's "Mean of empty slice" warning
            mean = d.sum(axis=axes, keepdims=True) / 0
        xc = d - mean
        var = _sum_of_squares(xc, axes) / (d.size // mean.size) if d.size else mean.copy()
    return mean, var, xc


#: channels per thread at least when the native batch norm splits them: ~64K elements
_BN_GRAIN_ELEMENTS = 1 << 16


def _native_bn(d, axes, *params):
    """Batch norm's native kernels serve ``d``: a C-contiguous float32 NumPy array with
    elements, statistics per channel (dim 1) over every other dim, float32 parameters."""
    return (d.__class__ is np.ndarray and d.dtype == np.float32 and d.ndim >= 2 and d.size
            and d.flags.c_contiguous and axes == (0,) + tuple(range(2, d.ndim))
            and all(p is None or (p.__class__ is np.ndarray and p.dtype == np.float32
                                  and p.flags.c_contiguous) for p in params))


def _over_channels(d, fn, *args) -> None:
    """``fn(*args, c0, c1)`` over blocks of channels of ``d`` in the native kernels' pool."""
    C = d.shape[1]
    per = d.size // C
    _native.by_range(fn, C, max(1, _BN_GRAIN_ELEMENTS // max(1, per)), *args)


def _batch_norm_native(d, weight, bias, eps):
    """``(y, mean, var)`` of batch norm's training forward by ``ember_batch_norm_f32`` (three
    passes where ``_moments`` and ``_normalize`` make five), or None where it cannot run."""
    wd = None if weight is None else weight._data
    bd = None if bias is None else bias._data
    if not _native_bn(d, (0, *range(2, d.ndim)), wd, bd):
        return None
    fn = _native.kernel("ember_batch_norm_f32")
    if fn is None:
        return None
    C = d.shape[1]
    y = np.empty_like(d)
    stat = (1, C) + (1,) * (d.ndim - 2)
    mean, var = np.empty(stat, np.float32), np.empty(stat, np.float32)
    _over_channels(d, fn, _address(d), None if wd is None else _address(wd),
                   None if bd is None else _address(bd), _address(y), _address(mean),
                   _address(var), d.shape[0], C, d.size // (d.shape[0] * C), eps)
    return y, mean, var


def _sum_of_squares(a, axes):
    """``(a * a).sum(axes, keepdims=True)`` without a full-size temporary."""
    return _reduce_over(a, a, axes)


def _tensor_stats(xs, axes, eps):
    """``mean`` and ``invstd`` of ``xs`` as differentiable functions of it (double backward)."""
    mean = xs.mean(axes, keepdim=True)
    xc = xs - mean
    return mean, ((xc * xc).mean(axes, keepdim=True) + eps).rsqrt()


def _norm_backward(node, g):
    """Gradients of ``y = xhat * w + b`` where ``xhat = (x - mean) * invstd`` over ``axes``.

    The input gradient is written as ``A * g + B * x + C`` with per-group ``A, B, C`` built
    from a few reductions, so backward makes few full-size temporaries.
    """
    x, w = node.saved
    axes, wshape, eps, gshape, mean, invstd, batch_stats, bshape, disjoint = node.ctx
    xs = x if gshape is None else x.reshape(gshape)
    if batch_stats and GRAD.enabled:
        mean_t, invstd_t = _tensor_stats(xs, axes, eps)
    else:
        mean_t, invstd_t = _make(mean, x._device), _make(invstd, x._device)
    n = math.prod(xs._data.shape[a] for a in axes)
    need_x, need_w = node.needs_grad(0), w is not None and node.needs_grad(1)
    need_b = bshape is not None and node.needs_grad(2)
    if disjoint and not GRAD.enabled and g.__class__ is Tensor:
        return _disjoint_backward_arrays(node, g, n, need_x, need_w, need_b)
    wb = None if w is None else w.reshape(wshape)
    gx = gw = gb = None
    if disjoint:  # each statistics group sees one weight (batch norm, instance norm)
        sg = g.sum(axes, keepdim=True)
        ghat = invstd_t * ((g * x).sum(axes, keepdim=True) - mean_t * sg)  # sum(g * xhat)
        if need_x:
            a = invstd_t if wb is None else wb * invstd_t
            gx = g * a
            if batch_stats:
                b = -a * invstd_t * ghat / n
                gx = gx + (x * b + (-a * sg / n - b * mean_t))
        if need_w:
            gw = sum_to_size(ghat, wshape).reshape(w._data.shape)
        if need_b:
            gb = sum_to_size(sg, wshape).reshape(bshape)
        return gx, gw, gb
    if need_x:  # layer norm, group norm: the weight varies inside a group
        gxh = g if wb is None else g * wb
        if gshape is not None:
            gxh = gxh.reshape(gshape)
        s1 = gxh.sum(axes, keepdim=True)
        k = invstd_t * ((gxh * xs).sum(axes, keepdim=True) - mean_t * s1)  # sum(gxh * xhat)
        b = -invstd_t * invstd_t * k / n
        gx = gxh * invstd_t + (xs * b + (-invstd_t * s1 / n - b * mean_t))
        if gshape is not None:
            gx = gx.reshape(x._data.shape)
    if need_w:
        xhat = (xs - mean_t) * invstd_t
        if gshape is not None:
            xhat = xhat.reshape(x._data.shape)
        gw = sum_to_size(g * xhat, wshape).reshape(w._data.shape)
    if need_b:
        gb = sum_to_size(g, wshape).reshape(bshape)
    return gx, gw, gb


def _disjoint_backward_arrays(node, g, n, need_x, need_w, need_b):
    """``_norm_backward``'s disjoint case on arrays, for a backward that records no graph:
    two einsum reductions and three full-size passes (batch norm fwd+bwd on 32x16x32x32:
    the Tensor-op form made ten full-size temporaries)."""
    x, w = node.saved
    axes, wshape, eps, gshape, mean, invstd, batch_stats, bshape, disjoint = node.ctx
    dt = g._data.dtype
    xd, gd = _dtype.widen(x._data), _dtype.widen(g._data)  # float16/bfloat16 in float32
    wd = None if w is None else w._data
    fn = _native.kernel("ember_batch_norm_backward_f32") if batch_stats and \
        gd.__class__ is np.ndarray and gd.dtype == np.float32 and \
        _native_bn(xd, axes, wd, mean, invstd) else None
    if fn is not None:
        # two passes (the sums, then the input's gradient) where NumPy makes five
        gd = np.ascontiguousarray(gd)
        sg, ghat = np.empty(mean.shape, np.float32), np.empty(mean.shape, np.float32)
        gx = np.empty_like(xd) if need_x else None
        _over_channels(xd, fn, _address(gd), _address(xd), _address(mean), _address(invstd),
                       None if wd is None else _address(wd),
                       None if gx is None else _address(gx), _address(sg), _address(ghat),
                       xd.shape[0], xd.shape[1], xd.size // (xd.shape[0] * xd.shape[1]))
        if gx is not None:
            gx = _make(_dtype.narrow(gx, dt), x._device)
        need_x = False
    else:
        sg = _reduce_over(gd, None, axes)
        ghat = invstd * (_reduce_over(gd, xd, axes) - mean * sg)  # sum(g * xhat)
        gx = None
    gw = gb = None
    if need_x:
        a = invstd if w is None else w._data.reshape(wshape) * invstd
        gx = gd * a.astype(gd.dtype, copy=False)
        if batch_stats:
            b = -a * invstd * ghat / n
            c = -a * sg / n - b * mean
            t = xd * b.astype(xd.dtype, copy=False)
            t += c.astype(xd.dtype, copy=False)
            gx += t
        gx = _make(_dtype.narrow(gx, dt), x._device)
    # per-statistics-group values summed down to the affine parameters (instance norm: over
    # the batch); no graph is recorded here, so the Tensor reducer costs no nodes
    if need_w:
        gw = sum_to_size(_make(ghat.astype(w._data.dtype, copy=False), x._device),
                         wshape).reshape(w._data.shape)
    if need_b:  # the bias has the weight's dtype (float32 beside a mixed-type input)
        gb = sum_to_size(_make(sg.astype(dt if w is None else w._data.dtype, copy=False),
                               x._device), wshape).reshape(bshape)
    return gx, gw, gb


def _reduce_over(a, b, axes):
    """``a.sum(axes)`` (``b`` None) or ``(a * b).sum(axes)``, keepdims, by einsum: no
    full-size temporary, one pass."""
    letters = "abcdefghijklmnopqrstuvwxyz"[:a.ndim]
    kept = "".join(c for i, c in enumerate(letters) if i not in axes)
    keep_shape = tuple(1 if i in axes else s for i, s in enumerate(a.shape))
    xp = np if a.__class__ is np.ndarray else xp_of(a)
    if b is None:
        return xp.einsum(f"{letters}->{kept}", a).reshape(keep_shape)
    return xp.einsum(f"{letters},{letters}->{kept}", a, b).reshape(keep_shape)


def _make_norm_node(name):
    return make_node_class(name, _norm_backward)


# -- layer norm's own array kernels ------------------------------------------------------------

def _rows(a, n):
    """``a`` (not empty) as ``(rows, n)``: its normalized dims flattened (a view when
    contiguous)."""
    return a.reshape(-1, n)


#: elements per thread at least when layer norm's rows are split over Ember's intra-op threads
_PARALLEL_ELEMENTS = 1 << 17
_F32 = np.dtype(np.float32)


def _layer_norm_arrays(d, w, b, eps, nd):
    """``(y, mean, rstd)`` of layer norm over the last ``nd`` dims of ``d`` (float32 or
    float64, not empty), as PyTorch's ``native_layer_norm``: the statistics keep the input's
    dims (the normalized ones as 1) for the backward. The row sums are ``einsum``s (NumPy's
    ``sum`` along a short last axis loops per row; a product with a vector of ones is as
    fast on one thread but OpenBLAS splits it over two, which costs more than it saves when
    the other core is busy): the mean, then the variance over the centred rows; then three
    more passes make ``y``. On NumPy the rows are split over Ember's intra-op threads."""
    xp = xp_of(d)
    n = math.prod(d.shape[d.ndim - nd:])
    x = _rows(d, n)
    wv = None if w is None else w.reshape(n)
    bv = None if b is None else b.reshape(n)
    y = xp.empty(x.shape, d.dtype)
    mean, rstd = xp.empty((x.shape[0], 1), d.dtype), xp.empty((x.shape[0], 1), d.dtype)

    native = None
    if (x.__class__ is np.ndarray and x.dtype == _F32
            and (wv is None or (wv.__class__ is np.ndarray and wv.dtype == _F32))
            and (bv is None or (bv.__class__ is np.ndarray and bv.dtype == _F32))):
        native = _native.kernel("ember_layer_norm_f32")
    grain = -(-_PARALLEL_ELEMENTS // n)
    if native is not None:  # each row in one fused pass set (kernels.c), in cache
        x = np.ascontiguousarray(x)
        wv = None if wv is None else np.ascontiguousarray(wv)
        bv = None if bv is None else np.ascontiguousarray(bv)
        _native.by_rows(native, x.shape[0], grain,
                        [(_address(x), 4 * n), (None if wv is None else _address(wv), 0),
                         (None if bv is None else _address(bv), 0), (_address(y), 4 * n),
                         (_address(mean), 4), (_address(rstd), 4)], n, eps)
    else:
        def run(r0, r1):
            _layer_norm_rows(x[r0:r1], wv, bv, eps, n, xp, y[r0:r1], mean[r0:r1],
                             rstd[r0:r1])

        if xp is np:
            parallel_for(0, x.shape[0], grain, run)
        else:
            run(0, x.shape[0])
    stat = d.shape[:d.ndim - nd] + (1,) * nd
    return y.reshape(d.shape), mean.reshape(stat), rstd.reshape(stat)


def _layer_norm_rows(x, w, b, eps, n, xp, y, mean, rstd):
    """Layer norm of the rows ``x`` (``(rows, n)``) into ``y``, ``mean`` and ``rstd``."""
    mean[:, 0] = xp.einsum("ij->i", x)
    mean /= n
    xp.subtract(x, mean, out=y)
    # NumPy's vecdot (a BLAS dot per row) measured 2.5x faster than the einsum on 2048 x 384
    var = (np.vecdot(y, y) if xp is np else xp.einsum("ij,ij->i", y, y))[:, None]
    var /= n
    var += eps
    xp.sqrt(var, out=var)
    xp.divide(1.0, var, out=rstd)
    y *= rstd
    if w is not None:
        y *= w
    if b is not None:
        y += b


def _native_layer_norm_backward(g, x, mean, rstd, w, n, need_x, need_w, need_b):
    """``_layer_norm_backward_arrays`` in the fused float32 kernel (kernels.c: two passes
    over each row where NumPy makes seven over the input, and no temporaries), rows split
    over Ember's intra-op threads, each block summing its own ``gw``/``gb`` (added up after);
    None where it does not apply. (512, 64) rows: 106 -> ~20 us."""
    arrays = (g, x, mean, rstd) + (() if w is None else (w,))
    if not all(a.__class__ is np.ndarray and a.dtype == np.float32 for a in arrays):
        return None
    kernel = _native.kernel("ember_layer_norm_backward_f32")
    if kernel is None:
        return None
    g, x = np.ascontiguousarray(g), np.ascontiguousarray(x)
    mean, rstd = np.ascontiguousarray(mean), np.ascontiguousarray(rstd)
    wv = None if w is None else np.ascontiguousarray(w.reshape(n))
    rows = x.size // n
    gx = np.empty(x.shape, np.float32) if need_x else None
    parts: dict = {}
    pg, px, pm, pr = (_address(a) for a in (g, x, mean, rstd))
    pw = None if wv is None else _address(wv)
    pgx = None if gx is None else _address(gx)

    grain = -(-_PARALLEL_ELEMENTS // n)
    threads = native_threads(mind_blas=False) if rows >= 2 * grain else 1
    if threads > 1:  # kernels.c's pool: chunk i sums into row i of gws / gbs (at most threads)
        gws = np.zeros((threads, n), np.float32) if need_w else None
        gbs = np.zeros((threads, n), np.float32) if need_b else None
        pointers = [(pg, 4 * n), (px, 4 * n), (pm, 4), (pr, 4), (pw, 0), (pgx, 4 * n),
                    (None if gws is None else _address(gws), 0),
                    (None if gbs is None else _address(gbs), 0)]
        if _native._native_split(kernel, rows, grain, pointers, (n,), threads,
                                 per_chunk=(0,) * 6 + (4 * n, 4 * n)):
            used = min(threads, rows // grain)  # the chunks pool_for made, in order
            gw = None if gws is None else gws[0]
            gb = None if gbs is None else gbs[0]
            for i in range(1, used):
                if need_w:
                    gw += gws[i]
                if need_b:
                    gb += gbs[i]
            return gx, gw, gb

    def run(r0, r1):
        gw = np.zeros(n, np.float32) if need_w else None
        gb = np.zeros(n, np.float32) if need_b else None
        parts[r0] = (gw, gb)
        at = 4 * r0 * n
        kernel(pg + at, px + at, pm + 4 * r0, pr + 4 * r0, pw, pgx and pgx + at,
               None if gw is None else _address(gw), None if gb is None else _address(gb),
               r1 - r0, n)

    parallel_for(0, rows, grain, run)
    blocks = [parts[k] for k in sorted(parts)]
    gw, gb = blocks[0]
    for more_w, more_b in blocks[1:]:
        if need_w:
            gw += more_w
        if need_b:
            gb += more_b
    return gx, gw, gb


def _layer_norm_backward_arrays(g, x, mean, rstd, w, nd, need_x, need_w, need_b):
    """``(gx, gw, gb)`` arrays (None where not needed) of layer norm, in closed form:
    ``gx = rstd * (g*w - mean(g*w) - xhat * mean(g*w*xhat))``, ``gw = sum(g * xhat)``,
    ``gb = sum(g)`` (sums over the rows), with ``xhat = (x - mean) * rstd``: seven passes
    over the input's size, and products with ``w``, ``rstd`` or a vector of ones for the
    sums (``rstd`` is applied to the sums, not to ``x - mean``)."""
    xp = xp_of(x)
    n = math.prod(x.shape[x.ndim - nd:])
    native = _native_layer_norm_backward(g, x, mean, rstd, w, n, need_x, need_w, need_b)
    if native is not None:
        return native
    gd, m, r = _rows(g, n), mean.reshape(-1, 1), rstd.reshape(-1, 1)
    wv = None if w is None else w.reshape(n)
    gx = gw = gb = None
    if need_b:
        gb = xp.ones(gd.shape[0], gd.dtype) @ gd
    if need_x or need_w:
        xc = _rows(x, n) - m
        gxc = gd * xc  # g * xhat / rstd
        if need_w:
            gw = r.reshape(-1) @ gxc
        if need_x:
            gx = xp.empty(x.shape, gd.dtype)  # owned: a leaf adopts it without a copy
            gxw = _rows(gx, n)
            if wv is None:
                ones = xp.ones(n, gd.dtype)
                s1, s2 = gd @ ones, gxc @ ones
                s1 /= n
                xp.subtract(gd, s1[:, None], out=gxw)
            else:
                s1, s2 = gd @ wv, gxc @ wv
                s1 /= n
                xp.multiply(gd, wv, out=gxw)
                gxw -= s1[:, None]
            s2 = s2[:, None] * (r * r)  # mean(g*w*xhat) * rstd
            s2 /= n
            xc *= s2
            gxw -= xc
            gxw *= r
    return gx, gw, gb


def _layer_norm_bw(node, g):
    """``NativeLayerNormBackward0``: the array kernel; with ``create_graph`` the Tensor-op
    form, whose statistics are functions of the input, so that it is differentiable again."""
    x, w = node.saved
    axes, _, _, _, mean, invstd, _, bshape, _ = node.ctx
    if GRAD.enabled or not x._data.size or g.__class__ is not Tensor:  # (batched by vmap)
        return _norm_backward(node, g)
    need_x, need_w = node.needs_grad(0), w is not None and node.needs_grad(1)
    need_b = bshape is not None and node.needs_grad(2)
    xd, gd, wd = x._data, g._data, None if w is None else w._data
    dt = xd.dtype
    if dt in _dtype.OPMATH:  # float16/bfloat16 in float32, rounded once, as PyTorch's kernels
        xd, gd, mean, invstd, wd = map(_dtype.widen, (xd, gd, mean, invstd, wd))
    grads = _layer_norm_backward_arrays(gd, xd, mean, invstd, wd, len(axes), need_x, need_w,
                                        need_b)
    shapes = (xd.shape, None if w is None else w._data.shape, bshape)
    pdt = dt if w is None else w._data.dtype  # float32 parameters of a mixed-type input
    return tuple(None if a is None else _make(_shaped(a.astype(t, copy=False), shape),
                                              g._device)
                 for a, shape, t in zip(grads, shapes, (dt, pdt, pdt)))


def _shaped(a, shape):
    return a if a.shape == shape else a.reshape(shape)


NativeBatchNormBackward0 = _make_norm_node("NativeBatchNormBackward0")
NativeLayerNormBackward0 = make_node_class("NativeLayerNormBackward0", _layer_norm_bw)
NativeGroupNormBackward0 = _make_norm_node("NativeGroupNormBackward0")


def _normalize(input, axes, weight, bias, wshape, eps, node_cls, *, gshape=None, stats=None):
    """``(x - mean) * invstd * weight + bias``; ``stats`` (mean, invstd) given = fixed stats.

    Returns the output and the batch ``(mean, biased var)`` arrays (None for fixed stats).
    float16 and bfloat16 are normalized in float32 and rounded once, as PyTorch's kernels do.
    """
    d = _dtype.widen(input._data)
    ds = d if gshape is None else d.reshape(gshape)
    moments = None
    if stats is None and gshape is None and axes == (0,) + tuple(range(2, d.ndim)) and \
            (native := _batch_norm_native(d, weight, bias, eps)) is not None:
        y, mean, var = native
        invstd = 1.0 / np.sqrt(var + eps)  # the kernel's, bit for bit (float32 steps)
        return _finish_norm(y, input, weight, bias, axes, wshape, eps, gshape, mean, invstd,
                            stats, node_cls), (mean, var)
    if stats is None:
        mean, var, xc = _moments(ds, axes)
        invstd = 1.0 / np.sqrt(var + eps)
        moments = (mean, var)
        y = xc
    elif gshape is None:
        # fixed statistics (batch norm in eval): x * alpha + beta with per-channel alpha,
        # beta, two passes -- PyTorch's CPU inference kernel computes the same
        mean, invstd = stats
        alpha = invstd if weight is None else invstd * weight._data.reshape(wshape)
        beta = -mean * alpha
        if bias is not None:
            beta = beta + bias._data.reshape(wshape)
        y = ds * alpha.astype(ds.dtype, copy=False)
        y += beta.astype(ds.dtype, copy=False)
        return _finish_norm(y, input, weight, bias, axes, wshape, eps, gshape, mean, invstd,
                            stats, node_cls), None
    else:
        mean, invstd = stats
        y = ds - mean
    w = None if weight is None else weight._data.reshape(wshape)
    if gshape is None and w is not None and invstd.ndim == w.ndim:
        y *= invstd * w  # one pass: the weight folded into the per-group scale
    else:
        y *= invstd
        if gshape is not None:
            y = y.reshape(d.shape)
        if w is not None:
            y *= w
    if bias is not None:
        y += bias._data.reshape(wshape)
    return _finish_norm(y, input, weight, bias, axes, wshape, eps, gshape, mean, invstd, stats,
                        node_cls), moments


def _finish_norm(y, input, weight, bias, axes, wshape, eps, gshape, mean, invstd, stats,
                 node_cls):
    dt = input._data.dtype
    if y.dtype != dt:  # float16/bfloat16 computed in float32: round once (the backward too)
        y = y.astype(dt)
        if weight is None or weight._data.dtype == dt:  # mixed type: float32 statistics kept
            mean, invstd = mean.astype(dt), invstd.astype(dt)
    out = _make(y, input._device)
    inputs = (input, weight, bias)
    if GRAD.enabled and any(t is not None and t.requires_grad for t in inputs):
        wpad = (1,) * (y.ndim - len(wshape)) + tuple(wshape)
        disjoint = gshape is None and all(wpad[a] == 1 for a in axes)
        ctx = (axes, wshape, eps, gshape, mean, invstd, stats is None,
               None if bias is None else bias._data.shape, disjoint)
        record(node_cls, out, inputs, (input, weight), ctx)
    return out


def _check_float(input, kernel):
    if input._data.dtype not in _dtype.FLOATING_NP:
        dt = scalar_type_name(input._data.dtype)
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{dt}'")


def _check_params(input, params):
    """PyTorch's CPU rule: parameters share the input's dtype, except that a float16 or
    bfloat16 input may have float32 parameters (its "mixed type": autocast's bfloat16
    activations meeting a model's float32 norm layers), all of them float32 then."""
    dt = input._data.dtype
    if dt in _REDUCED and any(p is not None and p._data.dtype != dt for p in params):
        if any(p is not None and p._data.dtype != np.float32 for p in params):
            raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
        return
    for p in params:
        if p is not None and p._data.dtype != dt:
            if dt == np.float32:
                raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of "
                                   f"{scalar_type_name(dt)}")
            raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")


_REDUCED = frozenset((np.dtype(np.float16), np.dtype(_dtype.BFLOAT16_NP)))


def _check_numel(name, t, n):
    if t is not None and t._data.size != n:
        raise RuntimeError(f"{name} should contain {n} elements not {t._data.size}")


def _update_running(running, batch_value, momentum):
    """``running = (1 - momentum) * running + momentum * batch_value``, in place."""
    rd = running._data
    rd[...] = ((1.0 - momentum) * rd.astype(np.float64) +
               momentum * batch_value.astype(np.float64)).astype(rd.dtype)
    running._bump_version()


def _check_momentum(momentum, name):
    if not isinstance(momentum, numbers.Real):
        raise TypeError(f"{name}(): argument 'momentum' (position 7) must be float, not "
                        f"{type(momentum).__name__}")
    return float(momentum)


# -- batch norm ---------------------------------------------------------------------------------

def _batch_norm_impl(input, weight, bias, running_mean, running_var, training, momentum, eps):
    return _batch_norm_with_stats(input, weight, bias, running_mean, running_var, training,
                                  momentum, eps, False)[0]


def _batch_norm_with_stats(input, weight, bias, running_mean, running_var, training, momentum,
                           eps, stats=True):
    """``(out, save_mean, save_invstd)`` as PyTorch's ``native_batch_norm``: the batch's
    per-channel mean and 1 / sqrt(biased var + eps) arrays in training, None in evaluation
    (and None without ``stats``: batch_norm's own path does not pay for them)."""
    _check_float(input, "batch_norm")
    momentum = _check_momentum(momentum, "batch_norm")
    d = input._data
    nd = d.ndim
    c = d.shape[1] if nd > 1 else 0
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        _check_numel(name, t, c)
    check_same_device(input, weight, bias, running_mean, running_var)
    _check_params(input, (weight, bias, running_mean, running_var))
    axes = (0,) + tuple(range(2, nd))
    wshape = (1, c) + (1,) * (nd - 2)
    if not training:
        if running_mean is None or running_var is None:
            raise RuntimeError(f"running_{'mean' if running_mean is None else 'var'} must be "
                               "defined in evaluation mode")
        mean = running_mean._data.reshape(wshape).copy()  # later updates must not leak in
        invstd = 1.0 / np.sqrt(running_var._data.reshape(wshape) + eps)
        out, _ = _normalize(input, axes, weight, bias, wshape, eps, NativeBatchNormBackward0,
                            stats=(mean, invstd))
        return out, None, None
    out, (mean, var) = _normalize(input, axes, weight, bias, wshape, eps,
                                  NativeBatchNormBackward0)
    n = d.size // c if c else 0
    if running_mean is not None and n:
        _update_running(running_mean, mean.reshape(c), momentum)
    if running_var is not None and n:
        unbiased = var.reshape(c) * (n / (n - 1) if n > 1 else np.nan)
        _update_running(running_var, unbiased, momentum)
    if not stats:
        return out, None, None
    return out, mean.reshape(c), 1.0 / _xp_sqrt(var.reshape(c) + eps)


def _verify_batch_size(size):
    n = size[0]
    for s in size[2:]:
        n *= s
    if n == 1:
        raise ValueError("Expected more than 1 value per channel when training, got input size "
                         f"{_torch_size(size)}")


def _torch_size(size) -> str:
    """PyTorch's wording of a size in these messages (``torch.Size([1, 3])``)."""
    return f"torch.Size([{shape_str(size)}])"


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Batch normalization over (N, C, *) inputs, as ``torch.nn.functional.batch_norm``.

    In training mode the batch statistics normalize the input and update ``running_mean``
    and ``running_var`` (unbiased) in place with ``momentum``; otherwise the running
    statistics are used.
    """
    if training:
        _verify_batch_size(input._data.shape)
        if eps <= 0.0:
            raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    elif eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    return _batch_norm_impl(input, weight, bias, running_mean, running_var, training, momentum,
                            eps)


@register("batch_norm", method=False)
def aten_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
                    cudnn_enabled=True):
    """``torch.batch_norm``: batch normalization, with weight and bias before the stats."""
    return _batch_norm_impl(input, weight, bias, running_mean, running_var, training, momentum,
                            eps)


# -- instance norm ------------------------------------------------------------------------------

def _instance_norm_impl(input, weight, bias, running_mean, running_var, use_input_stats,
                        momentum, eps):
    _check_float(input, "batch_norm")
    if not input._data.flags.c_contiguous:  # PyTorch normalises input.contiguous() viewed as
        input = input.contiguous()  # (1, N * C, *): the output is contiguous whatever the input
    d = input._data
    nd = d.ndim
    c = d.shape[1] if nd > 1 else 0
    nc = d.shape[0] * c
    # PyTorch repeats the per-channel tensors over the batch and batch-normalizes (1, N * C, *)
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and t._data.size * d.shape[0] != nc:
            raise RuntimeError(f"{name} should contain {nc} elements not "
                               f"{t._data.size * d.shape[0]}")
    check_same_device(input, weight, bias, running_mean, running_var)
    _check_params(input, (weight, bias, running_mean, running_var))
    wshape = (1, c) + (1,) * (nd - 2)
    axes = tuple(range(2, nd))
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise RuntimeError("Expected running_mean and running_var to be defined when "
                               "use_input_stats is false")
        return _batch_norm_impl(input, weight, bias, running_mean, running_var, False, momentum,
                                eps)
    momentum = _check_momentum(momentum, "instance_norm")
    out, (mean, var) = _normalize(input, axes, weight, bias, wshape, eps,
                                  NativeBatchNormBackward0)
    n = math.prod(d.shape[2:])
    if running_mean is not None and d.size:
        _update_running(running_mean, mean.reshape(d.shape[:2]).mean(0), momentum)
    if running_var is not None and d.size:
        unbiased = var * (n / (n - 1) if n > 1 else np.nan)
        _update_running(running_var, unbiased.reshape(d.shape[:2]).mean(0), momentum)
    return out


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Instance normalization (each sample and channel over its spatial dims), as
    ``torch.nn.functional.instance_norm``; running stats average the batch's statistics."""
    shape = input._data.shape
    if use_input_stats and math.prod(shape[2:]) == 1:
        raise ValueError("Expected more than 1 spatial element when training, got input "
                         f"size {_torch_size(shape)}")
    return _instance_norm_impl(input, weight, bias, running_mean, running_var, use_input_stats,
                               momentum, eps)


@register("instance_norm", method=False)
def aten_instance_norm(input, weight, bias, running_mean, running_var, use_input_stats,
                       momentum, eps, cudnn_enabled=True):
    """``torch.instance_norm``: instance normalization, weight and bias before the stats."""
    return _instance_norm_impl(input, weight, bias, running_mean, running_var, use_input_stats,
                               momentum, eps)


# -- layer norm, group norm, RMS norm -----------------------------------------------------------

def _normalized_shape(normalized_shape, fn):
    """``normalized_shape`` as a tuple of ints, refused as PyTorch's argument parser refuses
    it (an int, a float element, anything else)."""
    if type(normalized_shape) in (tuple, list, Size) and \
            all(type(s) is int for s in normalized_shape):
        return tuple(normalized_shape)
    where = f"{fn}(): argument 'normalized_shape' (position 2)"
    if not isinstance(normalized_shape, (tuple, list)):
        raise TypeError(f"{where} must be tuple of ints, not "
                        f"{type(normalized_shape).__name__}")
    shape = []
    for i, s in enumerate(normalized_shape):
        if isinstance(s, (float, np.floating)):
            raise TypeError(f"{where} must be tuple of ints, but found element of type "
                            f"{type(s).__name__} at pos {i}")
        try:
            shape.append(operator.index(s))
        except TypeError:
            raise TypeError(f"{fn}(): argument 'normalized_shape' failed to unpack the object "
                            f"at pos 2 with error \"type must be tuple of ints,but got "
                            f"{type(s).__name__}\"") from None
    return tuple(shape)


def _check_normalized(input, shape, weight, bias, star):
    if not shape:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = []")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t._data.shape != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but "
                               f"got {name} of shape [{shape_str(t._data.shape)}] and "
                               f"normalized_shape = [{shape_str(shape)}]")
    d = input._data
    if d.ndim < len(shape) or d.shape[d.ndim - len(shape):] != shape:
        raise RuntimeError(f"Given normalized_shape=[{shape_str(shape)}], expected input with "
                           f"shape [*{star}{shape_str(shape)}], but got input of size"
                           f"[{shape_str(d.shape)}]")


@register("layer_norm", method=False)
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    """Layer normalization over the trailing ``normalized_shape`` dims of ``input``."""
    shape = _normalized_shape(normalized_shape, "layer_norm")
    _check_normalized(input, shape, weight, bias, ", ")
    _check_float(input, "LayerNormKernelImpl")
    check_same_device(input, weight, bias)
    _check_params(input, (weight, bias))
    return _layer_norm_with_stats(input, shape, weight, bias, eps)[0]


def _layer_norm_with_stats(input, shape, weight, bias, eps):
    """``(out, mean, rstd)`` of a checked layer norm: the output recorded for autograd, the
    statistics as arrays shaped as PyTorch's ``native_layer_norm`` gives them (the input's
    leading dims, then ones), in float32 for a float16/bfloat16 input."""
    nd = input._data.ndim
    axes = tuple(range(nd - len(shape), nd))
    fused = fused_kernel(input._device, "layer_norm") if input._device.type != "cpu" else None
    if fused is not None:  # one kernel per row (CUDA), with the statistics the backward reads
        y, mean, rstd = fused(input._data, None if weight is None else weight._data,
                              None if bias is None else bias._data, eps, len(shape))
        return (_finish_norm(y, input, weight, bias, axes, shape, eps, None, mean, rstd, None,
                             NativeLayerNormBackward0), mean, rstd)
    d = input._data
    if not d.size:  # NaN statistics, as 0 / 0 gives
        out, (mean, var) = _normalize(input, axes, weight, bias, shape, eps,
                                      NativeLayerNormBackward0)
        return out, mean, 1.0 / _xp_sqrt(var + eps)
    d = _dtype.widen(d)  # float16/bfloat16 in float32, rounded once (in _finish_norm), as PyTorch
    y, mean, rstd = _layer_norm_arrays(d, None if weight is None else weight._data,
                                       None if bias is None else bias._data, eps, len(shape))
    return (_finish_norm(y, input, weight, bias, axes, shape, eps, None, mean, rstd, None,
                         NativeLayerNormBackward0), mean, rstd)


def _xp_sqrt(a):
    return xp_of(a).sqrt(a)


@register("group_norm", method=False)
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    """Group normalization: channels split into ``num_groups`` groups, each normalized over
    its channels and spatial dims per sample; checked as ``torch.nn.functional.group_norm``
    checks (one value per group is refused), then as ATen checks."""
    d = input._data
    if d.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{d.ndim}")
    n, c = d.shape[:2]
    if num_groups == 0 or n * c < 2 * num_groups:  # maybe one value per group (F's check)
        size = [n * c // num_groups, num_groups, *d.shape[2:]]  # ZeroDivisionError for 0
        if size[0] * math.prod(size[2:]) == 1:
            raise ValueError("Expected more than 1 value per channel when training, got input "
                             f"size {size}")
    if c % num_groups:
        raise RuntimeError("Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape [{shape_str(d.shape)}] and "
                           f"num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t._data.ndim != 1 or t._data.size != c):
            # PyTorch's bias message prints the weight's shape ([0] without a weight)
            shown = weight._data.shape if weight is not None else (0,)
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape "
                               f"[{shape_str(shown)}] and input of shape "
                               f"[{shape_str(d.shape)}]")
    if num_groups < 0:
        raise RuntimeError(f"Expected num groups to be greater than 0, got {num_groups}")
    _check_float(input, "GroupNormKernelImpl")
    check_same_device(input, weight, bias)
    _check_params(input, (weight, bias))
    return _group_norm_with_stats(input, num_groups, weight, bias, eps, False)[0]


def _group_norm_with_stats(input, num_groups, weight, bias, eps, stats=True):
    """``(out, mean, rstd)`` of a checked group norm, the statistics as arrays of shape
    ``(N, num_groups)`` (PyTorch's ``native_group_norm``; None without ``stats``)."""
    d = input._data
    n, c = d.shape[:2]
    wshape = (1, c) + (1,) * (d.ndim - 2)
    gshape = (n, num_groups, d.size // (n * num_groups) if n * num_groups else 0)
    out, (mean, var) = _normalize(input, (2,), weight, bias, wshape, eps,
                                  NativeGroupNormBackward0, gshape=gshape)
    if not stats:
        return out, None, None
    return out, mean.reshape(n, num_groups), 1.0 / _xp_sqrt(var.reshape(n, num_groups) + eps)


def _c10_name(dt):
    """A dtype as c10 prints it in a warning (``float``, ``double``, ``c10::Half``)."""
    name = scalar_type_name(dt)
    return {"Float": "float", "Double": "double"}.get(name, f"c10::{name}")


_MISMATCH_WARNED = [False]  # PyTorch warns once per process (TORCH_WARN_ONCE)


@register("rms_norm", method=False)
def rms_norm(input, normalized_shape, weight=None, eps=None):
    """Root-mean-square normalization over the trailing ``normalized_shape`` dims (composed
    of Tensor ops, like PyTorch's); the result has the input's dtype."""
    shape = _normalized_shape(normalized_shape, "rms_norm")
    _check_normalized(input, shape, weight, None, "")
    dt = input._data.dtype
    if dt not in _dtype.FLOATING_NP and not input.is_complex():
        raise NotImplementedError(f"\"rms_norm\" not implemented for '{scalar_type_name(dt)}'")
    half = dt in _dtype.OPMATH  # float16/bfloat16 in float32, rounded once (as PyTorch)
    cast = half
    if weight is not None and weight._data.dtype != dt:
        if not _MISMATCH_WARNED[0]:
            _MISMATCH_WARNED[0] = True
            warnings.warn("Mismatch dtype between input and weight: input dtype = "
                          f"{_c10_name(dt)}, weight dtype = {_c10_name(weight._data.dtype)}, "
                          "Cannot dispatch to fused implementation.",
                          stacklevel=user_stacklevel())
        cast = True
    if eps is None:  # the epsilon of the computing type (float32 for float16), as PyTorch
        eps = float(_dtype.np_finfo(_dtype.opmath_np(dt)).eps) \
            if dt in _dtype.FLOATING_NP else 0.0
    dims = tuple(range(-len(shape), 0))
    x = input.float() if half else input
    out = x * (x.pow(2).mean(dims, keepdim=True) + eps).rsqrt()
    if weight is not None:
        out = out * weight
    return out.to(input.dtype) if cast else out


# -- local response norm ------------------------------------------------------------------------

@register("local_response_norm", function=False, method=False)
def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """Local response normalization across channels, as
    ``torch.nn.functional.local_response_norm``: ``x / (k + alpha * avg(x^2))^beta`` with
    the average over a window of ``size`` channels (zero-padded, divided by ``size``)."""
    from .._factory import zeros

    d = input._data
    if d.ndim < 3:
        raise ValueError("Expected 3D or higher dimensionality                          input "
                         f"(got {d.ndim} dimensions)")
    if size <= 0:  # PyTorch's message from the average pooling it runs over the channels
        kernel = f"kH: {size} kW: 1" if d.ndim == 3 else f"kT: {size} kH: 1 kW: 1"
        raise RuntimeError(f"kernel size should be greater than zero, but got {kernel}")
    if input.numel() == 0:
        return input
    c = d.shape[1]
    sq = input * input
    pre, post = size // 2, (size - 1) // 2
    parts = [sq]
    if pre:
        parts.insert(0, zeros((d.shape[0], pre) + d.shape[2:], dtype=input.dtype,
                              device=input.device))
    if post:
        parts.append(zeros((d.shape[0], post) + d.shape[2:], dtype=input.dtype,
                           device=input.device))
    from .shape import cat

    padded = cat(parts, 1) if len(parts) > 1 else sq
    window = padded.narrow(1, 0, c)
    for i in range(1, size):  # a loop over the window's offsets, not over elements
        window = window + padded.narrow(1, i, c)
    if d.dtype.kind in "iu":  # PyTorch's integer average pooling truncates the mean
        div = ((window // size) * alpha + k).pow(beta)
    else:
        div = (window * (alpha / size) + k).pow(beta)
    return input / div
