"""Box utilities and non-maximum suppression, as in ``torchvision.ops.boxes``."""

from __future__ import annotations

import math

import numpy as np

import ember
from ember import Tensor
from ember.ops import api

from ._utils import _upcast

__all__ = [
    "box_area",
    "box_iou",
    "generalized_box_iou",
    "complete_box_iou",
    "distance_box_iou",
    "masks_to_boxes",
    "box_convert",
    "clip_boxes_to_image",
    "remove_small_boxes",
    "nms",
    "batched_nms",
]

_FMTS = ("xyxy", "xywh", "cxcywh")
_ROTATED_FMTS = ("cxcywhr", "xywhr", "xyxyxyxy")
_NMS_BLOCK = 128


def _to_xyxy(boxes: Tensor, fmt: str) -> Tensor:
    a, b, c, d = boxes.unbind(-1)
    if fmt == "xywh":
        return ember.stack((a, b, a + c, b + d), dim=-1)
    if fmt == "cxcywh":
        return ember.stack((a - 0.5 * c, b - 0.5 * d, a + 0.5 * c, b + 0.5 * d), dim=-1)
    return boxes


def _from_xyxy(boxes: Tensor, fmt: str) -> Tensor:
    x1, y1, x2, y2 = boxes.unbind(-1)
    if fmt == "xywh":
        return ember.stack((x1, y1, x2 - x1, y2 - y1), dim=-1)
    if fmt == "cxcywh":
        return ember.stack(((x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1), dim=-1)
    return boxes


def box_convert(boxes: Tensor, in_fmt: str, out_fmt: str) -> Tensor:
    """Convert boxes between ``'xyxy'``, ``'xywh'`` and ``'cxcywh'``."""
    if in_fmt not in _FMTS or out_fmt not in _FMTS:
        raise ValueError(
            f"Unsupported Bounding Box Conversions for given in_fmt {in_fmt} and out_fmt {out_fmt}"
        )
    if in_fmt == out_fmt:
        return boxes.clone()
    return _from_xyxy(_to_xyxy(boxes, in_fmt), out_fmt)


def box_area(boxes: Tensor, fmt: str = "xyxy") -> Tensor:
    """Area of each box of ``boxes[..., 4]``."""
    if fmt not in _FMTS:
        raise ValueError(f"Unsupported Bounding Box area for given format {fmt}")
    boxes = _upcast(boxes)
    if fmt == "xyxy":
        return (boxes[..., 2] - boxes[..., 0]) * (boxes[..., 3] - boxes[..., 1])
    return boxes[..., 2] * boxes[..., 3]


def _box_inter_union(boxes1: Tensor, boxes2: Tensor, fmt: str = "xyxy") -> tuple[Tensor, Tensor]:
    """Pairwise intersection and union areas ``[..., N, M]`` of two sets of boxes."""
    area1, area2 = box_area(boxes1, fmt=fmt), box_area(boxes2, fmt=fmt)
    b1, b2 = _to_xyxy(boxes1, fmt), _to_xyxy(boxes2, fmt)
    lt = ember.maximum(b1[..., None, :2], b2[..., None, :, :2])
    rb = ember.minimum(b1[..., None, 2:], b2[..., None, :, 2:])
    wh = _upcast(rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    return inter, area1[..., None] + area2[..., None, :] - inter


def box_iou(boxes1: Tensor, boxes2: Tensor, fmt: str = "xyxy") -> Tensor:
    """Pairwise intersection-over-union ``[..., N, M]`` of two sets of boxes in ``fmt``:
    ``'xyxy'``, ``'xywh'`` or ``'cxcywh'``."""
    if fmt in _ROTATED_FMTS:
        raise NotImplementedError(
            f"box_iou: the rotated box format '{fmt}' is not supported by Ember yet"
        )
    if fmt not in _FMTS:
        raise ValueError(
            f"Unsupported format '{fmt}'. Supported axis-aligned formats: {_FMTS}. "
            f"Supported rotated formats: {_ROTATED_FMTS}."
        )
    inter, union = _box_inter_union(boxes1, boxes2, fmt)
    return inter / union


def generalized_box_iou(boxes1: Tensor, boxes2: Tensor) -> Tensor:
    """Pairwise generalized IoU of two sets of ``xyxy`` boxes."""
    inter, union = _box_inter_union(boxes1, boxes2)
    iou = inter / union
    lti = ember.minimum(boxes1[..., None, :2], boxes2[..., None, :, :2])
    rbi = ember.maximum(boxes1[..., None, 2:], boxes2[..., None, :, 2:])
    whi = _upcast(rbi - lti).clamp(min=0)
    areai = whi[..., 0] * whi[..., 1]
    return iou - (areai - union) / areai


def complete_box_iou(boxes1: Tensor, boxes2: Tensor, eps: float = 1e-7) -> Tensor:
    """Pairwise complete IoU ``[..., N, M]`` of two sets of ``xyxy`` boxes: the distance IoU
    less an aspect-ratio penalty ``alpha * v`` (``alpha`` is not differentiated)."""
    boxes1 = _upcast(boxes1)
    boxes2 = _upcast(boxes2)
    diou, iou = _box_diou_iou(boxes1, boxes2, eps)
    w_pred = boxes1[..., None, 2] - boxes1[..., None, 0]
    h_pred = boxes1[..., None, 3] - boxes1[..., None, 1]
    w_gt = boxes2[..., None, :, 2] - boxes2[..., None, :, 0]
    h_gt = boxes2[..., None, :, 3] - boxes2[..., None, :, 1]
    v = (4 / (math.pi**2)) * ember.pow(ember.atan(w_pred / h_pred) - ember.atan(w_gt / h_gt), 2)
    with ember.no_grad():
        alpha = v / (1 - iou + v + eps)
    return diou - alpha * v


def distance_box_iou(boxes1: Tensor, boxes2: Tensor, eps: float = 1e-7) -> Tensor:
    """Pairwise distance IoU ``[..., N, M]`` of two sets of ``xyxy`` boxes: the IoU less the
    squared distance of the centres over the squared diagonal of the enclosing box."""
    boxes1 = _upcast(boxes1)
    boxes2 = _upcast(boxes2)
    diou, _ = _box_diou_iou(boxes1, boxes2, eps=eps)
    return diou


def _box_diou_iou(boxes1: Tensor, boxes2: Tensor, eps: float = 1e-7) -> tuple[Tensor, Tensor]:
    iou = box_iou(boxes1, boxes2)
    lti = ember.minimum(boxes1[..., None, :2], boxes2[..., None, :, :2])
    rbi = ember.maximum(boxes1[..., None, 2:], boxes2[..., None, :, 2:])
    whi = _upcast(rbi - lti).clamp(min=0)
    diagonal_distance_squared = (whi[..., 0] ** 2) + (whi[..., 1] ** 2) + eps
    x_p = (boxes1[..., 0] + boxes1[..., 2]) / 2
    y_p = (boxes1[..., 1] + boxes1[..., 3]) / 2
    x_g = (boxes2[..., 0] + boxes2[..., 2]) / 2
    y_g = (boxes2[..., 1] + boxes2[..., 3]) / 2
    centers_distance_squared = (_upcast(x_p[..., None] - x_g[..., None, :]) ** 2) + (
        _upcast(y_p[..., None] - y_g[..., None, :]) ** 2
    )
    return iou - (centers_distance_squared / diagonal_distance_squared), iou


def masks_to_boxes(masks: Tensor) -> Tensor:
    """The ``xyxy`` bounding boxes ``[N, 4]`` (float32) of masks ``[N, H, W]``; an empty mask
    gives ``[0, 0, 0, 0]``."""
    if masks.numel() == 0:
        return ember.zeros((0, 4), device=masks.device, dtype=ember.float)
    n, h, w = masks.shape
    masks_bool = masks.bool()
    non_zero_rows = ember.any(masks_bool, dim=2)
    non_zero_cols = ember.any(masks_bool, dim=1)
    empty_masks = ~ember.any(non_zero_rows, dim=1)
    non_zero_rows_f = non_zero_rows.float()
    non_zero_cols_f = non_zero_cols.float()
    y1 = non_zero_rows_f.argmax(dim=1)
    x1 = non_zero_cols_f.argmax(dim=1)
    y2 = (h - 1) - non_zero_rows_f.flip(dims=[1]).argmax(dim=1)
    x2 = (w - 1) - non_zero_cols_f.flip(dims=[1]).argmax(dim=1)
    bounding_boxes = ember.stack([x1, y1, x2, y2], dim=1).float()
    bounding_boxes[empty_masks] = 0
    return bounding_boxes


def clip_boxes_to_image(boxes: Tensor, size: tuple[int, int]) -> Tensor:
    """Clip ``xyxy`` boxes to lie inside an image of ``size = (height, width)``."""
    height, width = size
    boxes_x = boxes[..., 0::2].clamp(min=0, max=width)
    boxes_y = boxes[..., 1::2].clamp(min=0, max=height)
    return ember.stack((boxes_x, boxes_y), dim=boxes.dim()).reshape(boxes.shape)


def remove_small_boxes(boxes: Tensor, min_size: float) -> Tensor:
    """Indices of the boxes whose sides are both at least ``min_size``."""
    ws, hs = boxes[..., 2] - boxes[..., 0], boxes[..., 3] - boxes[..., 1]
    keep = (ws >= min_size) & (hs >= min_size)
    return ember.where(keep)[0]


def _iou(coords, rows, cols, areas):
    """IoU of boxes ``rows`` against boxes ``cols`` (array code in the boxes' dtype);
    ``coords`` are the four coordinate columns, each contiguous."""
    x1, y1, x2, y2 = coords
    w = np.minimum(x2[rows, None], x2[None, cols])
    w -= np.maximum(x1[rows, None], x1[None, cols])
    np.maximum(w, 0, out=w)
    h = np.minimum(y2[rows, None], y2[None, cols])
    h -= np.maximum(y1[rows, None], y1[None, cols])
    np.maximum(h, 0, out=h)
    w *= h  # the intersection
    union = areas[rows, None] + areas[None, cols]
    union -= w
    # two zero-area boxes: 0/0 is NaN, which suppresses nothing (as in torchvision), quietly
    with np.errstate(invalid="ignore", divide="ignore"):
        w /= union
    return w


def _threshold_for(dtype, iou_threshold: float):
    """A threshold in ``dtype`` with ``v > t`` exactly when ``v > iou_threshold`` (a double)."""
    t = dtype.type(iou_threshold)
    if float(t) > iou_threshold:
        t = np.nextafter(t, dtype.type(-np.inf))
    return t


def nms(boxes: Tensor, scores: Tensor, iou_threshold: float) -> Tensor:
    """Greedy non-maximum suppression: the kept indices (int64) in decreasing score order.

    Boxes are sorted by score and visited in blocks: the IoU of a block's surviving boxes
    against every surviving later box is one array expression; the greedy pass then loops
    over the block's survivors only, and what they suppress further on is marked at once.
    """
    if boxes.dim() != 2 or boxes.size(1) != 4:
        raise RuntimeError(f"boxes should have 4 elements in dimension 1, got {boxes.size(-1)}")
    if scores.dim() != 1:
        raise RuntimeError(f"scores should be a 1d tensor, got {scores.dim()}D")
    if boxes.size(0) != scores.size(0):
        raise RuntimeError(
            f"boxes and scores should have same number of elements in dimension 0, "
            f"got {boxes.size(0)} and {scores.size(0)}"
        )
    xp = api.array_module(boxes)
    order = xp.argsort(-scores._data, kind="stable")
    b = boxes._data[order]
    n = b.shape[0]
    if b.dtype.kind != "f":
        b = b.astype(np.float64)
    thr = _threshold_for(np.dtype(b.dtype), iou_threshold)
    areas = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    coords = tuple(xp.ascontiguousarray(b[:, i]) for i in range(4))
    suppressed = xp.zeros(n, dtype=bool)
    for start in range(0, n, _NMS_BLOCK):
        stop = min(start + _NMS_BLOCK, n)
        cols = start + xp.flatnonzero(~suppressed[start:])  # survivors from this block on
        r = int((cols < stop).sum())  # the first r of them are this block's
        if r == 0:
            continue
        over = _iou(coords, cols[:r], cols, areas) > thr
        keep = xp.ones(r, dtype=bool)
        local = over[:, :r]
        for j in range(r):  # the greedy pass, inside the block
            if keep[j]:
                keep[j + 1 :] &= ~local[j, j + 1 :]
        suppressed[cols[:r][~keep]] = True
        suppressed[cols[r:][over[keep, r:].any(0)]] = True
    return api.wrap(order[~suppressed].astype(np.int64), boxes._device)


def batched_nms(boxes: Tensor, scores: Tensor, idxs: Tensor, iou_threshold: float) -> Tensor:
    """NMS independently per category ``idxs``, by offsetting each category's boxes apart."""
    if boxes.numel() == 0:
        return ember.empty((0,), dtype=ember.int64, device=boxes.device)
    max_coordinate = boxes.max()
    offsets = idxs.to(boxes.dtype) * (max_coordinate + 1)
    return nms(boxes + offsets[:, None], scores, iou_threshold)
