"""RoIAlign (Mask R-CNN's region feature pooling), as in ``torchvision.ops.roi_align``."""

from __future__ import annotations

import math

import numpy as np

import ember
from ember import Tensor, nn
from ember._tensor import _make
from ember.autograd.grad_mode import GRAD
from ember.autograd.graph import make_node_class, record
from ember.ops._core import xp_of

__all__ = ["roi_align", "RoIAlign"]

#: elements of one gathered block (rois x bins x samples x channels); bounds peak memory
_BLOCK_ELEMENTS = 1 << 22


def _pair(v) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else tuple(v)


def _axis_plan(xp, start, bin_size, grid, n_bins, size, dtype):
    """Sample positions along one axis: for each roi, bin and sample, the two neighbouring
    pixel indices and their bilinear weights (zero for masked or out-of-range samples).

    ``grid`` holds each roi's number of samples per bin; shapes ``(K, n_bins, G, 2)``.
    """
    g_max = max(int(grid.max()) if grid.size else 0, 1)
    i = xp.arange(g_max, dtype=dtype)
    p = xp.arange(n_bins, dtype=dtype)
    gridf = grid.astype(dtype)[:, None, None]
    pos = (
        start[:, None, None]
        + p[None, :, None] * bin_size[:, None, None]
        + (i[None, None, :] + dtype.type(0.5)) * bin_size[:, None, None] / xp.maximum(gridf, 1)
    )
    used = (i[None, None, :] < gridf) & (pos >= -1.0) & (pos <= size)
    pos = xp.maximum(pos, 0)
    low = pos.astype(np.int64)
    at_edge = low >= size - 1
    low = xp.where(at_edge, size - 1, low)
    high = xp.where(at_edge, size - 1, low + 1)
    frac = xp.where(at_edge, 0, pos - low).astype(dtype)
    idx = xp.stack((low, high), axis=-1)
    w = xp.stack((1 - frac, frac), axis=-1) * used[..., None]
    return idx, w


def _sampling_plan(rois, spatial_scale, out_hw, sampling_ratio, aligned, in_hw, dtype, xp):
    """Flat gather indices into an ``(N*H*W, C)`` view of the input and weights for ``rois``;
    both ``(K, PH, PW, S)`` with ``S`` the samples of a bin times their four neighbours."""
    (ph, pw), (height, width) = out_hw, in_hw
    rois = rois.astype(dtype, copy=False)
    offset = dtype.type(0.5 if aligned else 0.0)
    scale = dtype.type(spatial_scale)
    x0, y0 = rois[:, 1] * scale - offset, rois[:, 2] * scale - offset
    roi_w, roi_h = rois[:, 3] * scale - offset - x0, rois[:, 4] * scale - offset - y0
    if not aligned:
        roi_w, roi_h = xp.maximum(roi_w, 1), xp.maximum(roi_h, 1)
    bin_h, bin_w = roi_h / dtype.type(ph), roi_w / dtype.type(pw)
    k = rois.shape[0]
    if sampling_ratio > 0:
        grid_h = grid_w = xp.full(k, sampling_ratio, dtype=np.int64)
    else:
        grid_h, grid_w = xp.ceil(roi_h / ph).astype(np.int64), xp.ceil(roi_w / pw).astype(np.int64)
    count = xp.maximum(grid_h * grid_w, 1).astype(dtype)
    iy, wy = _axis_plan(xp, y0, bin_h, grid_h, ph, height, dtype)
    ix, wx = _axis_plan(xp, x0, bin_w, grid_w, pw, width, dtype)
    base = rois[:, 0].astype(np.int64) * (height * width)
    # (K, PH, PW, GY, 2, GX, 2): rows and columns are separable
    idx = (
        base[:, None, None, None, None, None, None]
        + iy[:, :, None, :, :, None, None] * width
        + ix[:, None, :, None, None, :, :]
    )
    w = wy[:, :, None, :, :, None, None] * wx[:, None, :, None, None, :, :]
    w = w / count[:, None, None, None, None, None, None]
    return idx.reshape(k, ph, pw, -1), w.reshape(k, ph, pw, -1)


def _roi_blocks(rois, spatial_scale, out_hw, sampling_ratio, channels):
    """Slices of rois processed together so one gathered block stays near ``_BLOCK_ELEMENTS``."""
    k = rois.shape[0]
    if sampling_ratio > 0 or k == 0:
        grid = max(sampling_ratio, 1) ** 2
    else:  # the largest adaptive grid among these rois
        size = (rois[:, 3:5] - rois[:, 1:3]) * spatial_scale
        grid = (math.ceil(float(size[:, 1].max()) / out_hw[0]) + 1) * (
            math.ceil(float(size[:, 0].max()) / out_hw[1]) + 1
        )
    per_roi = out_hw[0] * out_hw[1] * max(grid, 1) * 4 * max(channels, 1)
    step = max(1, _BLOCK_ELEMENTS // per_roi)
    return [slice(s, min(s + step, k)) for s in range(0, k, step)]


def _pool(x: Tensor, plan) -> Tensor:
    """``roi_align``'s forward on ``x`` ``(N, C, H, W)`` for the rois and settings in ``plan``."""
    rois, shape, spatial_scale, out_hw, sampling_ratio, aligned = plan
    n, c, h, w = shape
    xp, xd = xp_of(x), x._data
    dtype = np.dtype(xd.dtype)
    table = xd.transpose(0, 2, 3, 1).reshape(n * h * w, c)
    out = xp.zeros((rois.shape[0], out_hw[0], out_hw[1], c), dtype=dtype)
    for blk in _roi_blocks(rois, spatial_scale, out_hw, sampling_ratio, c):
        idx, wt = _sampling_plan(
            rois[blk], spatial_scale, out_hw, sampling_ratio, aligned, (h, w), dtype, xp
        )
        if idx.size:
            out[blk] = (wt[..., None, :] @ table[idx])[..., 0, :]
    result = _make(xp.ascontiguousarray(out.transpose(0, 3, 1, 2)), x._device)
    if GRAD.enabled and x.requires_grad:
        record(RoiAlignBackward0, result, (x, None), (), plan)
    return result


def _unpool(g: Tensor, plan) -> Tensor:
    """The adjoint of :func:`_pool`: scatter ``g`` ``(K, C, PH, PW)`` back onto ``(N, C, H, W)``
    with the same bilinear weights (``roi_align``'s input gradient)."""
    rois, shape, spatial_scale, out_hw, sampling_ratio, aligned = plan
    n, c, h, w = shape
    xp, gd = xp_of(g), g._data
    dtype = np.dtype(gd.dtype)
    gt = gd.transpose(0, 2, 3, 1)  # (K, PH, PW, C)
    flat = xp.zeros((n * h * w, c), dtype=dtype)
    for blk in _roi_blocks(rois, spatial_scale, out_hw, sampling_ratio, c):
        idx, wt = _sampling_plan(
            rois[blk], spatial_scale, out_hw, sampling_ratio, aligned, (h, w), dtype, xp
        )
        if idx.size == 0:
            continue
        # segment sums: sort the (sample, neighbour) slots by target pixel, add runs at once
        slots = idx.shape[-1]
        target = idx.reshape(-1)
        order = xp.argsort(target, kind="stable")
        target = target[order]
        starts = xp.flatnonzero(xp.concatenate((xp.ones(1, dtype=bool), target[1:] != target[:-1])))
        rows = gt[blk].reshape(-1, c)[order // slots]
        rows *= wt.reshape(-1)[order][:, None]
        flat[target[starts]] += np.add.reduceat(rows, starts, axis=0)
    out = flat.reshape(n, h, w, c).transpose(0, 3, 1, 2)
    result = _make(xp.ascontiguousarray(out), g._device)
    if GRAD.enabled and g.requires_grad:
        record(RoiAlignBackwardBackward0, result, (g,), (), plan)
    return result


RoiAlignBackward0 = make_node_class(
    "RoiAlignBackward0", lambda node, g: (_unpool(g, node.ctx), None)
)
RoiAlignBackwardBackward0 = make_node_class(
    "RoiAlignBackwardBackward0", lambda node, g: (_pool(g, node.ctx),)
)


def _rois_from(boxes) -> Tensor:
    """``Tensor[K, 5]`` of ``(batch_index, x1, y1, x2, y2)`` from a tensor or per-image boxes."""
    if isinstance(boxes, (list, tuple)):
        for b in boxes:
            if b.size(1) != 4:
                raise AssertionError(
                    "The shape of the tensor in the boxes list is not correct as List[Tensor[L, 4]]"
                )
        concat = ember.cat(list(boxes), dim=0)
        ids = ember.cat(
            [
                ember.full((len(b), 1), i, dtype=concat.dtype, device=concat.device)
                for i, b in enumerate(boxes)
            ],
            dim=0,
        )
        return ember.cat([ids, concat], dim=1)
    if not isinstance(boxes, Tensor) or boxes.dim() != 2 or boxes.size(1) != 5:
        raise AssertionError("The boxes tensor shape is not correct as Tensor[K, 5]")
    return boxes


def roi_align(
    input: Tensor,
    boxes,
    output_size,
    spatial_scale: float = 1.0,
    sampling_ratio: int = -1,
    aligned: bool = False,
) -> Tensor:
    """Average of bilinearly sampled points in each output bin of each region of interest.

    ``boxes`` is a ``Tensor[K, 5]`` of ``(batch_index, x1, y1, x2, y2)`` or a list of
    ``Tensor[L, 4]`` per image; ``sampling_ratio <= 0`` picks ``ceil(roi_size / output_size)``
    samples per bin adaptively. Differentiable with respect to ``input``.
    """
    rois = _rois_from(boxes)
    if input.device != rois.device:
        raise RuntimeError(
            f"Expected all tensors to be on the same device, but found at least two devices, "
            f"{input.device} and {rois.device}!"
        )
    plan = (
        rois._data,
        tuple(input.shape),
        spatial_scale,
        _pair(output_size),
        sampling_ratio,
        aligned,
    )
    return _pool(input, plan)


class RoIAlign(nn.Module):
    """Module form of :func:`roi_align`."""

    def __init__(
        self, output_size, spatial_scale: float, sampling_ratio: int, aligned: bool = False
    ):
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale
        self.sampling_ratio = sampling_ratio
        self.aligned = aligned

    def forward(self, input: Tensor, rois) -> Tensor:
        return roi_align(
            input, rois, self.output_size, self.spatial_scale, self.sampling_ratio, self.aligned
        )

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}(output_size={self.output_size}, "
            f"spatial_scale={self.spatial_scale}, "
            f"sampling_ratio={self.sampling_ratio}, aligned={self.aligned})"
        )
