"""Helpers shared by the box ops and box losses, as in ``torchvision.ops._utils``."""

from __future__ import annotations

import ember
from ember import Tensor


def _upcast(t: Tensor) -> Tensor:
    """Widen float16 to float32 and small integers to int32 so products do not overflow."""
    if t.is_floating_point():
        return t if t.dtype in (ember.float32, ember.float64) else t.float()
    return t if t.dtype in (ember.int32, ember.int64) else t.int()


def _upcast_non_float(t: Tensor) -> Tensor:
    """Anything but float32 and float64 becomes float32."""
    if t.dtype not in (ember.float32, ember.float64):
        return t.float()
    return t


def _loss_inter_union(boxes1: Tensor, boxes2: Tensor) -> tuple[Tensor, Tensor]:
    """Elementwise intersection and union areas of two sets of ``xyxy`` boxes ``[..., 4]``
    (the box losses' form; the intersection is 0 where the boxes do not overlap)."""
    x1, y1, x2, y2 = boxes1.unbind(dim=-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(dim=-1)
    xkis1 = ember.max(x1, x1g)
    ykis1 = ember.max(y1, y1g)
    xkis2 = ember.min(x2, x2g)
    ykis2 = ember.min(y2, y2g)
    intsctk = ember.zeros_like(x1)
    mask = (ykis2 > ykis1) & (xkis2 > xkis1)
    intsctk[mask] = (xkis2[mask] - xkis1[mask]) * (ykis2[mask] - ykis1[mask])
    unionk = (x2 - x1) * (y2 - y1) + (x2g - x1g) * (y2g - y1g) - intsctk
    return intsctk, unionk


def _reduce_loss(loss: Tensor, reduction: str) -> Tensor:
    """The box losses' ``reduction``: ``'none'``, ``'mean'`` (0 for no boxes) or ``'sum'``."""
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean() if loss.numel() > 0 else 0.0 * loss.sum()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(
        f"Invalid Value for arg 'reduction': '{reduction} \n "
        "Supported reduction modes: 'none', 'mean', 'sum'"
    )
