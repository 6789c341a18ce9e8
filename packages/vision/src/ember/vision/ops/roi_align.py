"""RoIAlign (Mask R-CNN's region feature pooling), as in ``torchvision.ops.roi_align``."""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

import ember
from ember import Tensor, nn
from ember.ops import api

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
    # clipped in integers before any gather: a NaN (or huge) position casts to an arbitrary
    # integer, and CuPy does not bounds-check indices (its samples are masked off by ``used``)
    low = xp.clip(pos.astype(np.int64), 0, max(size - 1, 0))
    at_edge = low >= size - 1
    low = xp.where(at_edge, max(size - 1, 0), low)
    high = xp.where(at_edge, max(size - 1, 0), low + 1)
    frac = xp.where(at_edge, 0, pos - low).astype(dtype)
    idx = xp.stack((low, high), axis=-1)
    w = xp.stack((1 - frac, frac), axis=-1) * used[..., None]
    return idx, w


def _sampling_plan(
    rois, spatial_scale, out_hw, sampling_ratio, aligned, in_hw, dtype, xp, clamp_count=True
):
    """Flat gather indices into an ``(N*H*W, C)`` view of the input and weights for ``rois``;
    both ``(K, PH, PW, S)`` with ``S`` the samples of a bin times their four neighbours.

    ``clamp_count=False`` is ``ps_roi_align``'s forward: a bin without samples divides by a
    zero count (NaN, as in torchvision's kernel)."""
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
    count = (grid_h * grid_w).astype(dtype)
    if clamp_count:
        count = xp.maximum(count, 1)
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
    with np.errstate(invalid="ignore", divide="ignore"):
        w = w / count[:, None, None, None, None, None, None]
    return idx.reshape(k, ph, pw, -1), w.reshape(k, ph, pw, -1)


class Bilinear(NamedTuple):
    """RoIAlign's sampler: bilinear samples on a regular grid in each bin, averaged."""

    spatial_scale: float
    out_hw: tuple[int, int]
    sampling_ratio: int
    aligned: bool
    clamp_count: bool = True

    def plan(self, rois, in_hw, dtype, xp):
        """Gather indices and weights ``(K, PH, PW, S)`` (see :func:`_sampling_plan`)."""
        return _sampling_plan(
            rois, self.spatial_scale, self.out_hw, self.sampling_ratio, self.aligned, in_hw,
            dtype, xp, self.clamp_count,
        )

    def samples(self, rois, xp):
        """Upper bounds ``(K,)`` on the gathered entries of one bin of each roi."""
        if self.sampling_ratio > 0:
            return xp.full(rois.shape[0], self.sampling_ratio**2 * 4)
        size = (rois[:, 3:5] - rois[:, 1:3]) * self.spatial_scale
        grid_h = xp.maximum(xp.ceil(size[:, 1] / self.out_hw[0]) + 1, 1)
        grid_w = xp.maximum(xp.ceil(size[:, 0] / self.out_hw[1]) + 1, 1)
        return grid_h * grid_w * 4


class Plan(NamedTuple):
    """Everything a roi pooling forward or backward needs besides the data.

    ``name`` names the autograd nodes (``f"{name}Backward0"``); ``sampler`` has
    ``plan(rois, in_hw, dtype, xp) -> (idx, weights)`` and ``samples(rois, xp)``; with
    ``position_sensitive`` output bin ``(i, j)`` of output channel ``c`` reads input channel
    ``(c * PH + i) * PW + j``. ``adjoint`` (when not None) is the sampler the input gradient
    scatters with, where torchvision's backward kernel differs from its forward."""

    name: str
    sampler: object
    rois: object
    shape: tuple
    position_sensitive: bool = False
    adjoint: object = None


def roi_blocks(plan: Plan, channels: int, xp):
    """Index arrays of rois processed together: rois of one size class (samples per bin within
    a factor of two, so little padding), few enough that a gathered block stays near
    ``_BLOCK_ELEMENTS``."""
    rois, (ph, pw) = plan.rois, plan.sampler.out_hw
    if rois.shape[0] == 0:
        return []
    size_class = xp.ceil(xp.log2(xp.maximum(plan.sampler.samples(rois, xp), 1))).astype(np.int64)
    blocks = []
    for cls in range(int(size_class.max()) + 1):
        members = xp.flatnonzero(size_class == cls)
        step = max(1, _BLOCK_ELEMENTS // (ph * pw * (1 << cls) * max(channels, 1)))
        blocks += [members[s : s + step] for s in range(0, int(members.size), step)]
    return blocks


def gather_table(data, plan: Plan):
    """``data`` ``(N, C, H, W)`` as the 2-D table the sampler's indices address: rows are
    pixels (times bins when position-sensitive), columns the (output) channels."""
    n, c, h, w = data.shape
    if not plan.position_sensitive:
        return data.transpose(0, 2, 3, 1).reshape(n * h * w, c)
    bins = plan.sampler.out_hw[0] * plan.sampler.out_hw[1]
    return data.reshape(n, c // bins, bins, h, w).transpose(0, 3, 4, 2, 1).reshape(-1, c // bins)


def table_to_input(table, plan: Plan, xp):
    """The inverse of :func:`gather_table`: ``(N, C, H, W)`` from the table layout."""
    n, c, h, w = plan.shape
    if not plan.position_sensitive:
        out = table.reshape(n, h, w, c).transpose(0, 3, 1, 2)
    else:
        bins = plan.sampler.out_hw[0] * plan.sampler.out_hw[1]
        out = table.reshape(n, h, w, bins, c // bins).transpose(0, 4, 3, 1, 2).reshape(n, c, h, w)
    return xp.ascontiguousarray(out)


def sample_plan(plan: Plan, blk, dtype, xp):
    """The sampler's ``(idx, weights)`` for the rois in ``blk``, indices into the table of
    :func:`gather_table` (position-sensitive rows pick each bin's own channel group)."""
    idx, wt = plan.sampler.plan(plan.rois[blk], plan.shape[2:], dtype, xp)
    if plan.position_sensitive:
        ph, pw = plan.sampler.out_hw
        idx = idx * (ph * pw) + xp.arange(ph * pw).reshape(1, ph, pw, 1)
    return idx, wt


def _pool(x: Tensor, plan: Plan) -> Tensor:
    """Weighted sums of the sampled pixels of ``x`` ``(N, C, H, W)`` in each bin of each roi:
    ``(K, C', PH, PW)`` (the forward of ``roi_align``, ``ps_roi_align`` and ``ps_roi_pool``)."""
    xp, xd = api.array_module(x), x._data
    dtype = np.dtype(xd.dtype)
    table = gather_table(xd, plan)
    c = table.shape[1]
    ph, pw = plan.sampler.out_hw
    out = xp.zeros((plan.rois.shape[0], ph, pw, c), dtype=dtype)
    for blk in roi_blocks(plan, c, xp):
        idx, wt = sample_plan(plan, blk, dtype, xp)
        if idx.size:
            out[blk] = (wt[..., None, :] @ table[idx])[..., 0, :]
    result = api.wrap(xp.ascontiguousarray(out.transpose(0, 3, 1, 2)), x._device)
    if api.needs_grad(x):
        api.record(_linear_nodes(plan.name)[0], result, (x, None), (), plan)
    return result


def _unpool(g: Tensor, plan: Plan) -> Tensor:
    """The adjoint of :func:`_pool`: scatter ``g`` ``(K, C', PH, PW)`` back onto
    ``(N, C, H, W)`` with the same weights (the input gradient)."""
    if plan.adjoint is not None:
        plan = plan._replace(sampler=plan.adjoint, adjoint=None)
    xp, gd = api.array_module(g), g._data
    dtype = np.dtype(gd.dtype)
    c = gd.shape[1]
    rows = plan.shape[0] * plan.shape[2] * plan.shape[3] * (plan.shape[1] // c)
    flat = xp.zeros((rows, c), dtype=dtype)
    for blk in roi_blocks(plan, c, xp):
        idx, wt = sample_plan(plan, blk, dtype, xp)
        if idx.size == 0:
            continue
        # segment sums: sort the (sample, neighbour) slots by target pixel, add runs at once.
        # Channels first: NumPy's reduceat along the last axis of (C', slots) ran 3-5x faster
        # than along the first of (slots, C') (fasterrcnn's backward spent seconds there)
        gc = xp.ascontiguousarray(gd[blk].transpose(1, 0, 2, 3)).reshape(c, -1)
        slots = idx.shape[-1]
        target = idx.reshape(-1)
        order = xp.argsort(target, kind="stable")
        target = target[order]
        starts = xp.flatnonzero(xp.concatenate((xp.ones(1, dtype=bool), target[1:] != target[:-1])))
        vals = xp.take(gc, order // slots, axis=1)
        vals *= wt.reshape(-1)[order]
        flat[target[starts]] += xp.add.reduceat(vals, starts, axis=1).T
    result = api.wrap(table_to_input(flat, plan, xp), g._device)
    if api.needs_grad(g):
        api.record(_linear_nodes(plan.name)[1], result, (g,), (), plan)
    return result


@functools.cache
def _linear_nodes(name: str):
    """The backward node classes of a linear roi pooling op and of its backward."""
    return (
        api.node_class(f"{name}Backward0", lambda node, g: (_unpool(g, node.ctx), None)),
        api.node_class(f"{name}BackwardBackward0", lambda node, g: (_pool(g, node.ctx),)),
    )


def check_rois(input: Tensor, rois: Tensor, op: str, position_sensitive=False, out_hw=None):
    """torchvision's kernel checks: same device, same dtype, 4-d input, channel groups."""
    if input.device != rois.device:
        raise RuntimeError(
            f"Expected all tensors to be on the same device, but found at least two devices, "
            f"{input.device} and {rois.device}!"
        )
    if input.dtype != rois.dtype:
        raise RuntimeError(f"{op}_forward_kernel: input should have the same type as rois")
    if input.dim() < 4:
        raise RuntimeError(
            f"Dimension out of range (expected to be in range of "
            f"[{-input.dim()}, {input.dim() - 1}], but got 3)"
        )
    if input.dim() > 4:
        raise RuntimeError(f"{op}: expected a 4-D input (N, C, H, W), got {input.dim()}-D")
    if position_sensitive and input.shape[1] % (out_hw[0] * out_hw[1]):
        raise RuntimeError(
            f"{op}_forward_kernel: input channels must be a multiple of pooling height * "
            "pooling width"
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


def _plan(input: Tensor, boxes, op: str, name: str, sampler, ps: bool = False, adjoint=None):
    """The :class:`Plan` of ``sampler`` over ``boxes`` (checked as torchvision's ``op`` kernel
    checks them against ``input``); ``ps`` for the position-sensitive ops."""
    rois = _rois_from(boxes)
    check_rois(input, rois, op, position_sensitive=ps, out_hw=sampler.out_hw)
    return Plan(name, sampler, rois._data, tuple(input.shape), ps, adjoint)


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
    sampler = Bilinear(spatial_scale, _pair(output_size), sampling_ratio, bool(aligned))
    return _pool(input, _plan(input, boxes, "roi_align", "RoiAlign", sampler))


class _RoIModule(nn.Module):
    """The module form of a roi op: the op's arguments after ``(input, rois)`` are attributes
    named by ``_args``, passed in that order; the repr lists them as torchvision's does. The
    ops all take ``(output_size, spatial_scale)`` first; subclasses store any others."""

    _args: tuple = ("output_size", "spatial_scale")

    def __init__(self, output_size, spatial_scale: float):
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale

    def forward(self, input: Tensor, rois) -> Tensor:
        return type(self)._op(input, rois, *(getattr(self, a) for a in self._args))

    def __repr__(self) -> str:
        args = ", ".join(f"{a}={getattr(self, a)}" for a in self._args)
        return f"{self.__class__.__name__}({args})"


class RoIAlign(_RoIModule):
    """Module form of :func:`roi_align`."""

    _args = ("output_size", "spatial_scale", "sampling_ratio", "aligned")
    _op = staticmethod(roi_align)

    def __init__(
        self, output_size, spatial_scale: float, sampling_ratio: int, aligned: bool = False
    ):
        super().__init__(output_size, spatial_scale)
        self.sampling_ratio = sampling_ratio
        self.aligned = aligned
