"""Distance IoU loss, as in ``torchvision.ops.diou_loss``."""

from __future__ import annotations

import ember
from ember import Tensor

from ._utils import _loss_inter_union, _reduce_loss, _upcast_non_float

__all__ = ["distance_box_iou_loss"]


def distance_box_iou_loss(
    boxes1: Tensor, boxes2: Tensor, reduction: str = "none", eps: float = 1e-7
) -> Tensor:
    """``1 - DIoU`` of matched ``xyxy`` boxes (``Tensor[N, 4]``): the IoU loss plus the squared
    distance of the boxes' centres over the squared diagonal of their enclosing box
    (https://arxiv.org/abs/1911.08287). Symmetric in its two arguments.
    ``reduction``: ``'none'`` | ``'mean'`` | ``'sum'``; ``eps`` keeps divisions finite."""
    boxes1 = _upcast_non_float(boxes1)
    boxes2 = _upcast_non_float(boxes2)
    loss, _ = _diou_iou_loss(boxes1, boxes2, eps)
    return _reduce_loss(loss, reduction)


def _diou_iou_loss(boxes1: Tensor, boxes2: Tensor, eps: float = 1e-7) -> tuple[Tensor, Tensor]:
    """The unreduced distance IoU loss and the IoU of matched boxes."""
    intsct, union = _loss_inter_union(boxes1, boxes2)
    iou = intsct / (union + eps)
    x1, y1, x2, y2 = boxes1.unbind(dim=-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(dim=-1)
    # the squared diagonal of the smallest enclosing box
    xc1 = ember.min(x1, x1g)
    yc1 = ember.min(y1, y1g)
    xc2 = ember.max(x2, x2g)
    yc2 = ember.max(y2, y2g)
    diagonal_distance_squared = ((xc2 - xc1) ** 2) + ((yc2 - yc1) ** 2) + eps
    # the squared distance of the centres
    x_p = (x2 + x1) / 2
    y_p = (y2 + y1) / 2
    x_g = (x1g + x2g) / 2
    y_g = (y1g + y2g) / 2
    centers_distance_squared = ((x_p - x_g) ** 2) + ((y_p - y_g) ** 2)
    loss = 1 - iou + (centers_distance_squared / diagonal_distance_squared)
    return loss, iou
