"""Position-sensitive RoI pooling (R-FCN, Light-Head R-CNN), as in ``torchvision.ops``'s
``ps_roi_align`` and ``ps_roi_pool``: output bin ``(i, j)`` of output channel ``c`` reads
input channel ``(c * PH + i) * PW + j``, so the input has ``C_out * PH * PW`` channels."""

from __future__ import annotations

from ember import Tensor

from .roi_align import Bilinear, _pair, _plan, _pool, _RoIModule
from .roi_pool import QuantizedBins

__all__ = ["ps_roi_align", "PSRoIAlign", "ps_roi_pool", "PSRoIPool"]


def ps_roi_align(
    input: Tensor,
    boxes,
    output_size,
    spatial_scale: float = 1.0,
    sampling_ratio: int = -1,
) -> Tensor:
    """Position-sensitive RoIAlign: each bin averages bilinear samples of its own channel group
    (half-pixel aligned). Returns ``Tensor[K, C / (PH * PW), PH, PW]``; differentiable.

    As in torchvision, a bin without samples (an empty roi) is NaN and passes no gradient."""
    sampler = Bilinear(spatial_scale, _pair(output_size), sampling_ratio, True)
    forward = sampler._replace(clamp_count=False)
    return _pool(input, _plan(input, boxes, "ps_roi_align", "PsRoiAlign", forward, True, sampler))


def ps_roi_pool(input: Tensor, boxes, output_size, spatial_scale: float = 1.0) -> Tensor:
    """Position-sensitive RoI average pooling over quantized bins of each roi, each bin reading
    its own channel group; empty bins give 0. Returns ``Tensor[K, C / (PH * PW), PH, PW]``.

    As torchvision's kernels do, the forward clips bins to ``[0, H - 1)`` x ``[0, W - 1)`` but
    the gradient spreads each bin over its extent clipped to ``[0, H)`` x ``[0, W)``: for bins
    reaching the last row or column the gradient is not the forward's exact derivative."""
    sampler = QuantizedBins(spatial_scale, _pair(output_size), 0, 1)
    adjoint = sampler._replace(last=0)
    return _pool(input, _plan(input, boxes, "ps_roi_pool", "PsRoiPool", sampler, True, adjoint))


class PSRoIAlign(_RoIModule):
    """Module form of :func:`ps_roi_align`."""

    _args = ("output_size", "spatial_scale", "sampling_ratio")
    _op = staticmethod(ps_roi_align)

    def __init__(self, output_size, spatial_scale: float, sampling_ratio: int):
        super().__init__(output_size, spatial_scale)
        self.sampling_ratio = sampling_ratio


class PSRoIPool(_RoIModule):
    """Module form of :func:`ps_roi_pool`."""

    _op = staticmethod(ps_roi_pool)
