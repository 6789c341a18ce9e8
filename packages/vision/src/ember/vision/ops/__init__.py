"""Detection operators, mirroring ``torchvision.ops``."""

from .boxes import (
    batched_nms,
    box_area,
    box_convert,
    box_iou,
    clip_boxes_to_image,
    generalized_box_iou,
    nms,
    remove_small_boxes,
)
from .focal_loss import sigmoid_focal_loss
from .ps_roi import PSRoIAlign, PSRoIPool, ps_roi_align, ps_roi_pool
from .roi_align import RoIAlign, roi_align
from .roi_pool import RoIPool, roi_pool

__all__ = [
    "batched_nms",
    "box_area",
    "box_convert",
    "box_iou",
    "clip_boxes_to_image",
    "generalized_box_iou",
    "nms",
    "remove_small_boxes",
    "sigmoid_focal_loss",
    "RoIAlign",
    "roi_align",
    "RoIPool",
    "roi_pool",
    "PSRoIAlign",
    "ps_roi_align",
    "PSRoIPool",
    "ps_roi_pool",
]
