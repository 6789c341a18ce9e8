"""Generalized IoU loss, as in ``torchvision.ops.giou_loss``."""

from __future__ import annotations

import ember
from ember import Tensor

from ._utils import _loss_inter_union, _reduce_loss, _upcast_non_float

__all__ = ["generalized_box_iou_loss"]


def generalized_box_iou_loss(
    boxes1: Tensor, boxes2: Tensor, reduction: str = "none", eps: float = 1e-7
) -> Tensor:
    """``1 - GIoU`` of matched ``xyxy`` boxes (``Tensor[N, 4]`` or ``Tensor[4]``): the IoU loss
    plus a penalty, non-zero when the boxes do not overlap, that grows with their smallest
    enclosing box (https://arxiv.org/abs/1902.09630). Symmetric in its two arguments.
    ``reduction``: ``'none'`` | ``'mean'`` | ``'sum'``; ``eps`` keeps divisions finite."""
    boxes1 = _upcast_non_float(boxes1)
    boxes2 = _upcast_non_float(boxes2)
    intsctk, unionk = _loss_inter_union(boxes1, boxes2)
    iouk = intsctk / (unionk + eps)
    x1, y1, x2, y2 = boxes1.unbind(dim=-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(dim=-1)
    # smallest enclosing box
    xc1 = ember.min(x1, x1g)
    yc1 = ember.min(y1, y1g)
    xc2 = ember.max(x2, x2g)
    yc2 = ember.max(y2, y2g)
    area_c = (xc2 - xc1) * (yc2 - yc1)
    miouk = iouk - ((area_c - unionk) / (area_c + eps))
    return _reduce_loss(1 - miouk, reduction)
