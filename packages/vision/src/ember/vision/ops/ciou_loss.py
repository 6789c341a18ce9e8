"""Complete IoU loss, as in ``torchvision.ops.ciou_loss``."""

from __future__ import annotations

import math

import ember
from ember import Tensor

from ._utils import _reduce_loss, _upcast_non_float
from .diou_loss import _diou_iou_loss

__all__ = ["complete_box_iou_loss"]


def complete_box_iou_loss(
    boxes1: Tensor, boxes2: Tensor, reduction: str = "none", eps: float = 1e-7
) -> Tensor:
    """``1 - CIoU`` of matched ``xyxy`` boxes (``Tensor[N, 4]`` or ``Tensor[4]``): the distance
    IoU loss plus an aspect-ratio penalty ``alpha * v`` (``alpha`` is not differentiated;
    https://arxiv.org/abs/1911.08287). Symmetric in its two arguments.
    ``reduction``: ``'none'`` | ``'mean'`` | ``'sum'``; ``eps`` keeps divisions finite."""
    boxes1 = _upcast_non_float(boxes1)
    boxes2 = _upcast_non_float(boxes2)
    diou_loss, iou = _diou_iou_loss(boxes1, boxes2)
    x1, y1, x2, y2 = boxes1.unbind(dim=-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(dim=-1)
    w_pred = x2 - x1
    h_pred = y2 - y1
    w_gt = x2g - x1g
    h_gt = y2g - y1g
    v = (4 / (math.pi**2)) * ember.pow((ember.atan(w_gt / h_gt) - ember.atan(w_pred / h_pred)), 2)
    with ember.no_grad():
        alpha = v / (1 - iou + v + eps)
    return _reduce_loss(diou_loss + alpha * v, reduction)
