"""What the detection models share (torchvision's ``models.detection._utils``).

:class:`BoxCoder` (and :class:`BoxLinearCoder`, FCOS's) turns boxes into regression targets and
back; :class:`Matcher` / :class:`SSDMatcher` assign ground-truth boxes to anchors or proposals
from an IoU matrix; :class:`BalancedPositiveNegativeSampler` draws the training minibatch of an
image. Also the COCO category names of the detection checkpoints.
"""

from __future__ import annotations

import math
from collections import OrderedDict

import ember
from ember import Tensor, nn
from ember.nn import functional as F

from ...ops import (
    FrozenBatchNorm2d,
    complete_box_iou_loss,
    distance_box_iou_loss,
    generalized_box_iou_loss,
)
from .._api import Weights, WeightsEnum, _preset
from .._meta import _MODELS_URL
from .._utils import _ovewrite_value_param

__all__ = [
    "BalancedPositiveNegativeSampler",
    "BoxCoder",
    "BoxLinearCoder",
    "Matcher",
    "SSDMatcher",
    "overwrite_eps",
    "retrieve_out_channels",
]

#: the 91 COCO category ids of torchvision's detection checkpoints, "N/A" for unused ids
_COCO_CATEGORIES = [
    "__background__", "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train",
    "truck", "boat", "traffic light", "fire hydrant", "N/A", "stop sign", "parking meter",
    "bench", "bird", "cat", "dog", "horse", "sheep", "cow", "elephant", "bear", "zebra",
    "giraffe", "N/A", "backpack", "umbrella", "N/A", "N/A", "handbag", "tie", "suitcase",
    "frisbee", "skis", "snowboard", "sports ball", "kite", "baseball bat", "baseball glove",
    "skateboard", "surfboard", "tennis racket", "bottle", "N/A", "wine glass", "cup", "fork",
    "knife", "spoon", "bowl", "banana", "apple", "sandwich", "orange", "broccoli", "carrot",
    "hot dog", "pizza", "donut", "cake", "chair", "couch", "potted plant", "bed", "N/A",
    "dining table", "N/A", "N/A", "toilet", "N/A", "tv", "laptop", "mouse", "remote",
    "keyboard", "cell phone", "microwave", "oven", "toaster", "sink", "refrigerator", "N/A",
    "book", "clock", "vase", "scissors", "teddy bear", "hair drier", "toothbrush",
]  # fmt: skip

#: the classes of the keypoint checkpoints, and the 17 COCO person keypoints in order
_COCO_PERSON_CATEGORIES = ["no person", "person"]
_COCO_PERSON_KEYPOINT_NAMES = [
    "nose", "left_eye", "right_eye", "left_ear", "right_ear", "left_shoulder", "right_shoulder",
    "left_elbow", "right_elbow", "left_wrist", "right_wrist", "left_hip", "right_hip",
    "left_knee", "right_knee", "left_ankle", "right_ankle",
]  # fmt: skip


_DOCS_PAPER_RECIPE = (
    "These weights were produced by following a similar training recipe as on the paper."
)
_DOCS_ENHANCED_RECIPE = (
    "These weights were produced using an enhanced training recipe to boost the model accuracy."
)


def _coco_detection_weights(
    file: str,
    num_params: int,
    metrics: dict[str, float],
    ops: float,
    file_size: float,
    recipe: str,
    docs: str = _DOCS_PAPER_RECIPE,
    categories: list[str] = _COCO_CATEGORIES,
    **meta: object,
) -> Weights:
    """A COCO checkpoint of ``download.pytorch.org/models/<file>.pth`` for the R-CNN family:
    its parameter count, ``metrics`` on COCO val2017 (``box_map``, ``mask_map``, ``kp_map``),
    GFLOPS (``_ops``), size in MB (``_file_size``), recipe and ``_docs``."""
    return Weights(
        url=_MODELS_URL.format(file),
        transforms=_preset("ObjectDetection"),
        meta={
            "categories": categories,
            "min_size": (1, 1),
            **meta,
            "num_params": num_params,
            "recipe": recipe,
            "_metrics": {"COCO-val2017": metrics},
            "_ops": ops,
            "_file_size": file_size,
            "_docs": docs,
        },
    )


def _assert(condition: bool, message: str) -> None:
    """``torch._assert``: an ``AssertionError`` with ``message`` when ``condition`` is false."""
    if not condition:
        raise AssertionError(message)


class BalancedPositiveNegativeSampler:
    """Draws, per image, up to ``batch_size_per_image`` elements of which at most a
    ``positive_fraction`` are positive.

    Args:
        batch_size_per_image (int): number of elements to be selected per image
        positive_fraction (float): percentage of positive elements per batch
    """

    def __init__(self, batch_size_per_image: int, positive_fraction: float) -> None:
        self.batch_size_per_image = batch_size_per_image
        self.positive_fraction = positive_fraction

    def __call__(self, matched_idxs: list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
        """``matched_idxs``: per image, -1 (ignored), 0 (negative) or >= 1 (positive) per
        element. Returns two lists of uint8 masks per image: the positives and the negatives
        drawn (uniformly at random without replacement, with ``ember.randperm``)."""
        pos_idx = []
        neg_idx = []
        for matched in matched_idxs:
            positive = ember.where(matched >= 1)[0]
            negative = ember.where(matched == 0)[0]

            # protect against too few positives, then too few negatives
            num_pos = min(positive.numel(), int(self.batch_size_per_image * self.positive_fraction))
            num_neg = min(negative.numel(), self.batch_size_per_image - num_pos)

            perm1 = ember.randperm(positive.numel(), device=positive.device)[:num_pos]
            perm2 = ember.randperm(negative.numel(), device=negative.device)[:num_neg]

            pos_mask = ember.zeros_like(matched, dtype=ember.uint8)
            neg_mask = ember.zeros_like(matched, dtype=ember.uint8)
            pos_mask[positive[perm1]] = 1
            neg_mask[negative[perm2]] = 1
            pos_idx.append(pos_mask)
            neg_idx.append(neg_mask)
        return pos_idx, neg_idx


def encode_boxes(reference_boxes: Tensor, proposals: Tensor, weights: Tensor) -> Tensor:
    """The ``(dx, dy, dw, dh)`` targets, weighted by ``weights``, that take each of
    ``proposals`` to the box of ``reference_boxes`` beside it (both ``(N, 4)`` xyxy)."""
    wx, wy, ww, wh = weights[0], weights[1], weights[2], weights[3]

    ex_widths = proposals[:, 2:3] - proposals[:, 0:1]
    ex_heights = proposals[:, 3:4] - proposals[:, 1:2]
    ex_ctr_x = proposals[:, 0:1] + 0.5 * ex_widths
    ex_ctr_y = proposals[:, 1:2] + 0.5 * ex_heights

    gt_widths = reference_boxes[:, 2:3] - reference_boxes[:, 0:1]
    gt_heights = reference_boxes[:, 3:4] - reference_boxes[:, 1:2]
    gt_ctr_x = reference_boxes[:, 0:1] + 0.5 * gt_widths
    gt_ctr_y = reference_boxes[:, 1:2] + 0.5 * gt_heights

    targets_dx = wx * (gt_ctr_x - ex_ctr_x) / ex_widths
    targets_dy = wy * (gt_ctr_y - ex_ctr_y) / ex_heights
    targets_dw = ww * ember.log(gt_widths / ex_widths)
    targets_dh = wh * ember.log(gt_heights / ex_heights)
    return ember.cat((targets_dx, targets_dy, targets_dw, targets_dh), dim=1)


class BoxCoder:
    """Encodes boxes as the regression targets of the detectors' box heads, and decodes them.

    Args:
        weights (4-element tuple): the weights of ``(dx, dy, dw, dh)``
        bbox_xform_clip (float): the largest ``dw``/``dh`` exponentiated when decoding
    """

    def __init__(
        self,
        weights: tuple[float, float, float, float],
        bbox_xform_clip: float = math.log(1000.0 / 16),
    ) -> None:
        self.weights = weights
        self.bbox_xform_clip = bbox_xform_clip

    def encode(self, reference_boxes: list[Tensor], proposals: list[Tensor]) -> list[Tensor]:
        boxes_per_image = [len(b) for b in reference_boxes]
        targets = self.encode_single(ember.cat(reference_boxes, dim=0), ember.cat(proposals, dim=0))
        return targets.split(boxes_per_image, 0)

    def encode_single(self, reference_boxes: Tensor, proposals: Tensor) -> Tensor:
        """Encode ``proposals`` with respect to ``reference_boxes`` (both ``(N, 4)``)."""
        weights = ember.as_tensor(
            self.weights, dtype=reference_boxes.dtype, device=reference_boxes.device
        )
        return encode_boxes(reference_boxes, proposals, weights)

    def decode(self, rel_codes: Tensor, boxes: list[Tensor]) -> Tensor:
        """The boxes ``rel_codes`` (``(sum N_i, K * 4)``) encode relative to the concatenated
        ``boxes``, as ``(sum N_i, K, 4)``."""
        _assert(
            isinstance(boxes, (list, tuple)), "This function expects boxes of type list or tuple."
        )
        _assert(
            isinstance(rel_codes, Tensor), "This function expects rel_codes of type torch.Tensor."
        )
        box_sum = sum(b.size(0) for b in boxes)
        concat_boxes = ember.cat(boxes, dim=0)
        if box_sum > 0:
            rel_codes = rel_codes.reshape(box_sum, -1)
        pred_boxes = self.decode_single(rel_codes, concat_boxes)
        if box_sum > 0:
            pred_boxes = pred_boxes.reshape(box_sum, -1, 4)
        return pred_boxes

    def decode_single(self, rel_codes: Tensor, boxes: Tensor) -> Tensor:
        """The boxes that ``rel_codes`` (``(N, K * 4)``) encode relative to ``boxes``
        (``(N, 4)``), as ``(N, K * 4)``."""
        boxes = boxes.to(rel_codes.dtype)

        widths = boxes[:, 2] - boxes[:, 0]
        heights = boxes[:, 3] - boxes[:, 1]
        ctr_x = boxes[:, 0] + 0.5 * widths
        ctr_y = boxes[:, 1] + 0.5 * heights

        wx, wy, ww, wh = self.weights
        dx = rel_codes[:, 0::4] / wx
        dy = rel_codes[:, 1::4] / wy
        # keep exp() from overflowing
        dw = ember.clamp(rel_codes[:, 2::4] / ww, max=self.bbox_xform_clip)
        dh = ember.clamp(rel_codes[:, 3::4] / wh, max=self.bbox_xform_clip)

        pred_ctr_x = dx * widths[:, None] + ctr_x[:, None]
        pred_ctr_y = dy * heights[:, None] + ctr_y[:, None]
        half_w = 0.5 * (ember.exp(dw) * widths[:, None])
        half_h = 0.5 * (ember.exp(dh) * heights[:, None])

        pred_boxes = ember.stack(
            (pred_ctr_x - half_w, pred_ctr_y - half_h, pred_ctr_x + half_w, pred_ctr_y + half_h),
            dim=2,
        )
        return pred_boxes.flatten(1)


class BoxLinearCoder:
    """FCOS's box coding: the distances from the centre of a (square) reference box to the
    four edges of the target box, divided by the reference box's size when
    ``normalize_by_size``."""

    def __init__(self, normalize_by_size: bool = True) -> None:
        self.normalize_by_size = normalize_by_size

    def _sizes(self, boxes: Tensor) -> Tensor:
        w = boxes[..., 2] - boxes[..., 0]
        h = boxes[..., 3] - boxes[..., 1]
        return ember.stack((w, h, w, h), dim=-1)

    def encode(self, reference_boxes: Tensor, proposals: Tensor) -> Tensor:
        ctr_x = 0.5 * (reference_boxes[..., 0] + reference_boxes[..., 2])
        ctr_y = 0.5 * (reference_boxes[..., 1] + reference_boxes[..., 3])
        targets = ember.stack(
            (
                ctr_x - proposals[..., 0],
                ctr_y - proposals[..., 1],
                proposals[..., 2] - ctr_x,
                proposals[..., 3] - ctr_y,
            ),
            dim=-1,
        )
        if self.normalize_by_size:
            targets = targets / self._sizes(reference_boxes)
        return targets

    def decode(self, rel_codes: Tensor, boxes: Tensor) -> Tensor:
        boxes = boxes.to(dtype=rel_codes.dtype)
        ctr_x = 0.5 * (boxes[..., 0] + boxes[..., 2])
        ctr_y = 0.5 * (boxes[..., 1] + boxes[..., 3])
        if self.normalize_by_size:
            rel_codes = rel_codes * self._sizes(boxes)
        return ember.stack(
            (
                ctr_x - rel_codes[..., 0],
                ctr_y - rel_codes[..., 1],
                ctr_x + rel_codes[..., 2],
                ctr_y + rel_codes[..., 3],
            ),
            dim=-1,
        )


class Matcher:
    """Assigns to each prediction (column of an ``M x N`` quality matrix, e.g. IoUs with the M
    ground-truth boxes) the index of its best ground truth, or ``BELOW_LOW_THRESHOLD`` (-1) /
    ``BETWEEN_THRESHOLDS`` (-2) when that best quality is below ``low_threshold`` / below
    ``high_threshold``.

    Args:
        high_threshold (float): quality values greater than or equal to this value are
            candidate matches.
        low_threshold (float): a lower quality threshold used to stratify matches.
        allow_low_quality_matches (bool): if True, also match each ground truth to the
            predictions of its highest quality (ties included), even when that is low.
    """

    BELOW_LOW_THRESHOLD = -1
    BETWEEN_THRESHOLDS = -2

    def __init__(
        self, high_threshold: float, low_threshold: float, allow_low_quality_matches: bool = False
    ) -> None:
        _assert(low_threshold <= high_threshold, "low_threshold should be <= high_threshold")
        self.high_threshold = high_threshold
        self.low_threshold = low_threshold
        self.allow_low_quality_matches = allow_low_quality_matches

    def __call__(self, match_quality_matrix: Tensor) -> Tensor:
        """The ``(N,)`` int64 matches of the ``(M, N)`` ``match_quality_matrix``."""
        if match_quality_matrix.numel() == 0:
            # empty targets or proposals are not supported during training
            if match_quality_matrix.shape[0] == 0:
                raise ValueError(
                    "No ground-truth boxes available for one of the images during training"
                )
            raise ValueError("No proposal boxes available for one of the images during training")

        matched_vals, matches = match_quality_matrix.max(dim=0)
        all_matches = matches.clone() if self.allow_low_quality_matches else None

        below_low_threshold = matched_vals < self.low_threshold
        between_thresholds = (matched_vals >= self.low_threshold) & (
            matched_vals < self.high_threshold
        )
        matches[below_low_threshold] = self.BELOW_LOW_THRESHOLD
        matches[between_thresholds] = self.BETWEEN_THRESHOLDS

        if all_matches is not None:
            self.set_low_quality_matches_(matches, all_matches, match_quality_matrix)
        return matches

    def set_low_quality_matches_(
        self, matches: Tensor, all_matches: Tensor, match_quality_matrix: Tensor
    ) -> None:
        """Give back to every prediction that has the highest quality of some ground truth
        (ties included) its best ground truth, even if it was below the thresholds."""
        highest_quality_foreach_gt = match_quality_matrix.max(dim=1)[0]
        pairs = ember.where(match_quality_matrix == highest_quality_foreach_gt[:, None])
        pred_inds_to_update = pairs[1]
        matches[pred_inds_to_update] = all_matches[pred_inds_to_update]


class SSDMatcher(Matcher):
    """A :class:`Matcher` with one threshold that also matches each ground truth to its best
    prediction (overriding that prediction's own best match)."""

    def __init__(self, threshold: float) -> None:
        super().__init__(threshold, threshold, allow_low_quality_matches=False)

    def __call__(self, match_quality_matrix: Tensor) -> Tensor:
        matches = super().__call__(match_quality_matrix)
        best_pred_foreach_gt = match_quality_matrix.max(dim=1)[1]
        matches[best_pred_foreach_gt] = ember.arange(
            best_pred_foreach_gt.size(0), dtype=ember.int64, device=best_pred_foreach_gt.device
        )
        return matches


def overwrite_eps(model: nn.Module, eps: float) -> None:
    """Set ``eps`` of every :class:`~ember.vision.ops.FrozenBatchNorm2d` of ``model`` (the
    value older checkpoints were trained with, pytorch/vision#2933)."""
    for module in model.modules():
        if isinstance(module, FrozenBatchNorm2d):
            module.eps = eps


def retrieve_out_channels(model: nn.Module, size: tuple[int, int]) -> list[int]:
    """The numbers of channels of the feature maps ``model`` returns (a tensor or an
    ``OrderedDict``) for a ``(width, height)`` = ``size`` input, found by running it once."""
    in_training = model.training
    model.eval()
    with ember.no_grad():
        device = next(model.parameters()).device
        features = model(ember.zeros((1, 3, size[1], size[0]), device=device))
        if isinstance(features, Tensor):
            features = OrderedDict([("0", features)])
        out_channels = [x.size(1) for x in features.values()]
    if in_training:
        model.train()
    return out_channels


def _topk_min(input: Tensor, orig_kval: int, axis: int) -> int:
    """``min(orig_kval, input.size(axis))``: the k of a top-k along ``axis``."""
    return min(orig_kval, input.size(axis))


def _box_loss(
    type: str,
    box_coder: BoxCoder,
    anchors_per_image: Tensor,
    matched_gt_boxes_per_image: Tensor,
    bbox_regression_per_image: Tensor,
    cnf: dict[str, float] | None = None,
) -> Tensor:
    """The summed box regression loss of one image: ``"l1"`` / ``"smooth_l1"`` on the
    encoded targets, or ``"ciou"`` / ``"diou"`` / ``"giou"`` on the decoded boxes; ``cnf``
    may hold ``beta`` (smooth L1) or ``eps`` (the IoU losses)."""
    _assert(type in ["l1", "smooth_l1", "ciou", "diou", "giou"], f"Unsupported loss: {type}")
    cnf = cnf or {}
    if type in ("l1", "smooth_l1"):
        target = box_coder.encode_single(matched_gt_boxes_per_image, anchors_per_image)
        if type == "l1":
            return F.l1_loss(bbox_regression_per_image, target, reduction="sum")
        beta = cnf.get("beta", 1.0)
        return F.smooth_l1_loss(bbox_regression_per_image, target, reduction="sum", beta=beta)
    boxes = box_coder.decode_single(bbox_regression_per_image, anchors_per_image)
    eps = cnf.get("eps", 1e-7)
    loss = {
        "ciou": complete_box_iou_loss,
        "diou": distance_box_iou_loss,
        "giou": generalized_box_iou_loss,
    }[type]
    return loss(boxes, matched_gt_boxes_per_image, reduction="sum", eps=eps)


def _resolve_weights(
    weights: WeightsEnum | None,
    weights_backbone: WeightsEnum | None,
    num_classes: int | None,
    default_num_classes: int = 91,
) -> tuple[WeightsEnum | None, int, bool]:
    """``(weights_backbone, num_classes, is_trained)`` as torchvision's detection builders
    resolve them: a checkpoint replaces the backbone's weights and fixes ``num_classes`` to
    its categories (a caller's other value is an error)."""
    if weights is not None:
        weights_backbone = None
        num_classes = _ovewrite_value_param(
            "num_classes", num_classes, len(weights.meta["categories"])
        )
    elif num_classes is None:
        num_classes = default_num_classes
    is_trained = weights is not None or weights_backbone is not None
    return weights_backbone, num_classes, is_trained


def _load_weights(model: nn.Module, weights: WeightsEnum | None, progress: bool) -> nn.Module:
    """``model`` with the checkpoint ``weights`` loaded (downloaded and hash-checked once)."""
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model


# --- torchvision's input checks, shared by every detector ------------------------------------


def _check_training_targets(targets: list[dict[str, Tensor]] | None, with_details: bool) -> None:
    """torchvision's checks of the training targets (RetinaNet's messages; FCOS and SSD also
    name the offending shape / type when ``with_details``)."""
    _assert(targets is not None, "targets should not be none when in training mode")
    for target in targets:
        boxes = target["boxes"]
        if not isinstance(boxes, Tensor):
            got = f", got {type(boxes)}." if with_details else "."
            _assert(False, f"Expected target boxes to be of type Tensor{got}")
        got = f", got {boxes.shape}." if with_details else "."
        _assert(
            len(boxes.shape) == 2 and boxes.shape[-1] == 4,
            f"Expected target boxes to be a tensor of shape [N, 4]{got}",
        )


def _original_image_sizes(images: list[Tensor]) -> list[tuple[int, int]]:
    sizes = []
    for img in images:
        val = img.shape[-2:]
        _assert(
            len(val) == 2,
            "expecting the last two dimensions of the Tensor to be H and W instead got "
            f"{img.shape[-2:]}",
        )
        sizes.append((int(val[0]), int(val[1])))
    return sizes


def _check_degenerate_boxes(targets: list[dict[str, Tensor]] | None) -> None:
    """Raise torchvision's error for the first box with ``x2 <= x1`` or ``y2 <= y1`` (one
    host sync per image, as in torchvision)."""
    if targets is None:
        return
    for target_idx, target in enumerate(targets):
        boxes = target["boxes"]
        degenerate = boxes[:, 2:] <= boxes[:, :2]
        if degenerate.any():
            bb_idx = ember.where(degenerate.any(dim=1))[0][0]
            degen_bb = boxes[bb_idx].tolist()
            _assert(
                False,
                "All bounding boxes should have positive height and width."
                f" Found invalid box {degen_bb} for target at index {target_idx}.",
            )
