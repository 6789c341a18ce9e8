"""RoIPool (Fast R-CNN's max pooling over quantized bins), as in ``torchvision.ops.roi_pool``."""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np

from ember import Tensor
from ember.ops import api

from .roi_align import (
    Plan,
    _pair,
    _plan,
    _RoIModule,
    gather_table,
    roi_blocks,
    sample_plan,
    table_to_input,
)

__all__ = ["roi_pool", "RoIPool"]


def _c_round(v):
    """C's ``round``: halves away from zero (NumPy rounds them to even)."""
    xp = api.array_module_of(v)  # the rois' own module: NumPy, or CuPy on a GPU
    a = xp.abs(v)
    r = xp.floor(a)
    r = r + (a - r >= 0.5)
    return xp.copysign(r, v).astype(np.int64)


class QuantizedBins(NamedTuple):
    """The pixels of integer bins: roi corners rounded, bin edges floor/ceil, clipped to the
    image. ``extent`` is added to ``end - start`` (1 for ``roi_pool``, 0 for ``ps_roi_pool``)
    and bins are clipped to ``size - last`` (0 and 1 respectively), as in torchvision's
    kernels. Weights are ``1 / bin area`` on a bin's pixels, 0 elsewhere (all 0 when empty)."""

    spatial_scale: float
    out_hw: tuple[int, int]
    extent: int
    last: int

    def _corners(self, rois, dtype):
        return _c_round(rois[:, 1:5].astype(dtype, copy=False) * dtype.type(self.spatial_scale))

    def _axis(self, xp, start, end, n_bins, size, dtype):
        """Per roi and bin: pixel positions ``(K, n_bins, G)``, their mask and the bin length."""
        length = xp.maximum(end - start + self.extent, 1).astype(dtype)
        bin_size = (length / dtype.type(n_bins))[:, None]
        p = xp.arange(n_bins, dtype=dtype)
        lo = xp.floor(p * bin_size).astype(np.int64) + start[:, None]
        hi = xp.ceil((p + 1) * bin_size).astype(np.int64) + start[:, None]
        lo = xp.clip(lo, 0, size - self.last)
        hi = xp.clip(hi, 0, size - self.last)
        count = xp.maximum(hi - lo, 0)
        g = xp.arange(max(int(count.max()) if count.size else 0, 1))
        used = g < count[..., None]
        pos = xp.minimum(lo[..., None] + g, size - 1)
        return pos, used, count

    def plan(self, rois, in_hw, dtype, xp):
        """Gather indices and weights ``(K, PH, PW, GY * GX)`` into an ``(N*H*W, C)`` table."""
        (ph, pw), (height, width) = self.out_hw, in_hw
        x0, y0, x1, y1 = self._corners(rois, dtype).T
        iy, uy, cy = self._axis(xp, y0, y1, ph, height, dtype)
        ix, ux, cx = self._axis(xp, x0, x1, pw, width, dtype)
        base = rois[:, 0].astype(np.int64) * (height * width)
        idx = (
            base[:, None, None, None, None]
            + iy[:, :, None, :, None] * width
            + ix[:, None, :, None, :]
        )
        area = xp.maximum(cy[:, :, None] * cx[:, None, :], 1).astype(dtype)
        used = uy[:, :, None, :, None] & ux[:, None, :, None, :]
        w = used / area[..., None, None]
        k = rois.shape[0]
        return idx.reshape(k, ph, pw, -1), w.astype(dtype).reshape(k, ph, pw, -1)

    def samples(self, rois, xp):
        """Upper bounds ``(K,)`` on the pixels of one bin of each roi."""
        corners = self._corners(rois, np.dtype(np.float64))
        size = corners[:, 2:] - corners[:, :2] + self.extent
        bins_h = xp.maximum(-(-size[:, 1] // self.out_hw[0]) + 1, 1)
        bins_w = xp.maximum(-(-size[:, 0] // self.out_hw[1]) + 1, 1)
        return bins_h * bins_w


def _max_pool(x: Tensor, plan: Plan) -> Tensor:
    """The largest input value in each bin (0 for an empty bin) and, in ``plan``'s ctx, the
    table row it came from (-1 for empty bins) for the backward."""
    xp, xd = api.array_module(x), x._data
    dtype = np.dtype(xd.dtype)
    table = gather_table(xd, plan)
    c = table.shape[1]
    # an extra row of -inf for the padding samples of smaller bins
    table = xp.concatenate((table, xp.full((1, c), -np.inf, dtype=dtype)))
    ph, pw = plan.sampler.out_hw
    k = plan.rois.shape[0]
    out = xp.zeros((k, ph, pw, c), dtype=dtype)
    argmax = xp.full((k, ph, pw, c), -1, dtype=np.int64)
    for blk in roi_blocks(plan, c, xp):
        idx, wt = sample_plan(plan, blk, dtype, xp)
        used = wt > 0
        rows = xp.where(used, idx, table.shape[0] - 1)
        # torchvision's scan: a bin's samples in row-major order, a strictly larger value wins
        # (NaN never does), starting from -FLT_MAX; done in at most ~16 vectorised chunks of
        # sample slots (one slot at a time for small bins)
        best = xp.full(idx.shape[:3] + (c,), np.finfo(np.float32).min, dtype=dtype)
        slot = xp.full(best.shape, -1, dtype=np.int32)  # the winning sample slot
        step = max(1, idx.shape[-1] // 16)
        for s in range(0, idx.shape[-1], step):
            if step == 1:
                vals, pos = table[rows[..., s]], s
            else:
                chunk = table[rows[..., s : s + step]]  # (k', PH, PW, step, C)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices
                    vals = xp.nanmax(chunk, axis=3)
                pos = (chunk == vals[..., None, :]).argmax(axis=3) + s
            better = vals > best
            xp.copyto(best, vals, where=better)
            xp.copyto(slot, pos, where=better)
        found = xp.take_along_axis(idx, xp.maximum(slot, 0).reshape(slot.shape[:3] + (-1,)), 3)
        out[blk] = xp.where(used.any(-1)[..., None], best, 0)
        argmax[blk] = xp.where(slot >= 0, found.reshape(slot.shape), -1)
    result = api.wrap(xp.ascontiguousarray(out.transpose(0, 3, 1, 2)), x._device)
    if api.needs_grad(x):
        api.record(RoiPoolBackward0, result, (x, None), (), (plan, argmax))
    return result


def _max_unpool(g: Tensor, ctx) -> Tensor:
    """``roi_pool``'s input gradient: each output's gradient added to its bin's argmax."""
    plan, argmax = ctx
    xp, gd = api.array_module(g), g._data
    rows = plan.shape[0] * plan.shape[2] * plan.shape[3]
    c = argmax.shape[-1]
    target = argmax * c + xp.arange(c)
    keep = argmax >= 0
    flat = xp.bincount(
        target[keep], weights=gd.transpose(0, 2, 3, 1)[keep], minlength=rows * c
    ).astype(gd.dtype)
    result = api.wrap(table_to_input(flat.reshape(rows, c), plan, xp), g._device)
    if api.needs_grad(g):
        api.record(RoiPoolBackwardBackward0, result, (g,), (), ctx)
    return result


def _max_gather(gg: Tensor, ctx) -> Tensor:
    """The adjoint of :func:`_max_unpool`: each bin reads its argmax of ``gg``."""
    plan, argmax = ctx
    xp = api.array_module(gg)
    table = gather_table(gg._data, plan)
    vals = table[xp.maximum(argmax, 0), xp.arange(argmax.shape[-1])]
    out = xp.where(argmax >= 0, vals, 0).astype(table.dtype)
    result = api.wrap(xp.ascontiguousarray(out.transpose(0, 3, 1, 2)), gg._device)
    if api.needs_grad(gg):
        api.record(RoiPoolBackwardBackwardBackward0, result, (gg,), (), ctx)
    return result


RoiPoolBackward0 = api.node_class(
    "RoiPoolBackward0", lambda node, g: (_max_unpool(g, node.ctx), None)
)
RoiPoolBackwardBackward0 = api.node_class(
    "RoiPoolBackwardBackward0", lambda node, g: (_max_gather(g, node.ctx),)
)
RoiPoolBackwardBackwardBackward0 = api.node_class(
    "RoiPoolBackwardBackwardBackward0", lambda node, g: (_max_unpool(g, node.ctx),)
)


def roi_pool(input: Tensor, boxes, output_size, spatial_scale: float = 1.0) -> Tensor:
    """Max of the input over quantized bins of each region of interest (Fast R-CNN).

    ``boxes`` is a ``Tensor[K, 5]`` of ``(batch_index, x1, y1, x2, y2)`` or a list of
    ``Tensor[L, 4]`` per image; empty bins give 0. Differentiable with respect to ``input``
    (each bin's gradient goes to its argmax).
    """
    sampler = QuantizedBins(spatial_scale, _pair(output_size), 1, 0)
    return _max_pool(input, _plan(input, boxes, "roi_pool", "RoiPool", sampler))


class RoIPool(_RoIModule):
    """Module form of :func:`roi_pool`."""

    _op = staticmethod(roi_pool)
