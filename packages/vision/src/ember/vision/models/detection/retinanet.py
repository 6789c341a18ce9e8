"""RetinaNet (torchvision's ``models.detection.retinanet``); module names, state_dict keys,
losses and post-processing match.

Also the pieces the single-stage detectors (RetinaNet, FCOS, SSD) share: the checks of their
inputs, the per-level top-k selection and the final NMS.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from typing import Any

import ember
from ember import Tensor, nn

from ...ops import box_iou, sigmoid_focal_loss
from ...ops import boxes as box_ops
from ...ops.feature_pyramid_network import LastLevelP6P7
from ...ops.misc import Conv2dNormActivation
from .._api import WeightsEnum, register_model
from .._utils import handle_legacy_interface
from ..resnet import ResNet50_Weights
from ._utils import (
    _DOCS_ENHANCED_RECIPE,
    BoxCoder,
    Matcher,
    _box_loss,
    _check_degenerate_boxes,
    _check_training_targets,
    _coco_detection_weights,
    _load_weights,
    _original_image_sizes,
    _resolve_weights,
    _topk_min,
    overwrite_eps,
)
from .anchor_utils import AnchorGenerator
from .backbone_utils import _resnet50_fpn_backbone
from .transform import GeneralizedRCNNTransform

# torchvision's __all__ (the heads and extractors are reached through the module)
__all__ = [
    "RetinaNet",
    "RetinaNet_ResNet50_FPN_Weights",
    "RetinaNet_ResNet50_FPN_V2_Weights",
    "retinanet_resnet50_fpn",
    "retinanet_resnet50_fpn_v2",
]


# --- shared by the single-stage detectors ---------------------------------------------------


def _backbone_features(backbone: nn.Module, images: Tensor) -> list[Tensor]:
    features = backbone(images)
    if isinstance(features, Tensor):
        features = OrderedDict([("0", features)])
    return list(features.values())


def _no_matches(anchors_per_image: Tensor) -> Tensor:
    """The matches of an image without ground-truth boxes: every anchor is background."""
    return ember.full(
        (anchors_per_image.size(0),), -1, dtype=ember.int64, device=anchors_per_image.device
    )


def _top_scores(scores: Tensor, score_thresh: float, topk: int) -> tuple[Tensor, Tensor]:
    """The (at most ``topk``) highest of the flat ``scores`` above ``score_thresh``, and
    their flat indices."""
    keep = scores > score_thresh
    scores = scores[keep]
    idxs = ember.where(keep)[0]
    scores, order = scores.topk(_topk_min(idxs, topk, 0))
    return scores, idxs[order]


def _nms_detections(
    boxes: list[Tensor],
    scores: list[Tensor],
    labels: list[Tensor],
    nms_thresh: float,
    detections_per_img: int,
) -> dict[str, Tensor]:
    boxes, scores, labels = (
        ember.cat(boxes, dim=0),
        ember.cat(scores, dim=0),
        ember.cat(labels, dim=0),
    )
    keep = box_ops.batched_nms(boxes, scores, labels, nms_thresh)[:detections_per_img]
    return {"boxes": boxes[keep], "scores": scores[keep], "labels": labels[keep]}


def _sum(x: list[Tensor]) -> Tensor:
    res = x[0]
    for i in x[1:]:
        res = res + i
    return res


def _flatten_levels(outputs: Tensor, num_columns: int) -> Tensor:
    """``(N, A * C, H, W)`` -> ``(N, H * W * A, C)``: anchors of a position, then positions."""
    n, _, h, w = outputs.shape
    return outputs.view(n, -1, num_columns, h, w).permute(0, 3, 4, 1, 2).reshape(n, -1, num_columns)


# --- RetinaNet ---------------------------------------------------------------------------------


def _v1_to_v2_weights(state_dict: dict, prefix: str) -> None:
    """Checkpoints of version 1 named the convs ``conv.{0,2,4,6}``; now ``conv.{i}.0``."""
    for i in range(4):
        for kind in ("weight", "bias"):
            old_key, new_key = f"{prefix}conv.{2 * i}.{kind}", f"{prefix}conv.{i}.0.{kind}"
            if old_key in state_dict:
                state_dict[new_key] = state_dict.pop(old_key)


def _default_anchorgen() -> AnchorGenerator:
    anchor_sizes = tuple(
        (x, int(x * 2 ** (1.0 / 3)), int(x * 2 ** (2.0 / 3))) for x in [32, 64, 128, 256, 512]
    )
    aspect_ratios = ((0.5, 1.0, 2.0),) * len(anchor_sizes)
    return AnchorGenerator(anchor_sizes, aspect_ratios)


def _conv_tower(in_channels: int, norm_layer: Callable[..., nn.Module] | None) -> nn.Sequential:
    """Four 3x3 conv (+ norm) + ReLU blocks, convs drawn from N(0, 0.01) with zero bias."""
    tower = nn.Sequential(
        *(Conv2dNormActivation(in_channels, in_channels, norm_layer=norm_layer) for _ in range(4))
    )
    for layer in tower.modules():
        if isinstance(layer, nn.Conv2d):
            nn.init.normal_(layer.weight, std=0.01)
            if layer.bias is not None:
                nn.init.constant_(layer.bias, 0)
    return tower


class _V2Checkpoints(nn.Module):
    """Loads version-1 checkpoints of the heads (see :func:`_v1_to_v2_weights`)."""

    _version = 2

    def _load_from_state_dict(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ):
        version = local_metadata.get("version", None)
        if version is None or version < 2:
            _v1_to_v2_weights(state_dict, prefix)
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )


class RetinaNetHead(nn.Module):
    """
    A regression and classification head for use in RetinaNet.

    Args:
        in_channels (int): number of channels of the input feature
        num_anchors (int): number of anchors to be predicted
        num_classes (int): number of classes to be predicted
        norm_layer (callable, optional): Module specifying the normalization layer to use.
            Default: None
    """

    def __init__(
        self,
        in_channels: int,
        num_anchors: int,
        num_classes: int,
        norm_layer: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()
        self.classification_head = RetinaNetClassificationHead(
            in_channels, num_anchors, num_classes, norm_layer=norm_layer
        )
        self.regression_head = RetinaNetRegressionHead(
            in_channels, num_anchors, norm_layer=norm_layer
        )

    def compute_loss(
        self,
        targets: list[dict[str, Tensor]],
        head_outputs: dict[str, Tensor],
        anchors: list[Tensor],
        matched_idxs: list[Tensor],
    ) -> dict[str, Tensor]:
        return {
            "classification": self.classification_head.compute_loss(
                targets, head_outputs, matched_idxs
            ),
            "bbox_regression": self.regression_head.compute_loss(
                targets, head_outputs, anchors, matched_idxs
            ),
        }

    def forward(self, x: list[Tensor]) -> dict[str, Tensor]:
        return {
            "cls_logits": self.classification_head(x),
            "bbox_regression": self.regression_head(x),
        }


class RetinaNetClassificationHead(_V2Checkpoints):
    """
    A classification head for use in RetinaNet.

    Args:
        in_channels (int): number of channels of the input feature
        num_anchors (int): number of anchors to be predicted
        num_classes (int): number of classes to be predicted
        prior_probability (float): the initial foreground probability of every logit
        norm_layer (callable, optional): Module specifying the normalization layer to use.
            Default: None
    """

    def __init__(
        self,
        in_channels: int,
        num_anchors: int,
        num_classes: int,
        prior_probability: float = 0.01,
        norm_layer: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()
        self.conv = _conv_tower(in_channels, norm_layer)
        self.cls_logits = nn.Conv2d(
            in_channels, num_anchors * num_classes, kernel_size=3, stride=1, padding=1
        )
        nn.init.normal_(self.cls_logits.weight, std=0.01)
        nn.init.constant_(
            self.cls_logits.bias, -math.log((1 - prior_probability) / prior_probability)
        )
        self.num_classes = num_classes
        self.num_anchors = num_anchors
        self.BETWEEN_THRESHOLDS = Matcher.BETWEEN_THRESHOLDS

    def compute_loss(
        self,
        targets: list[dict[str, Tensor]],
        head_outputs: dict[str, Tensor],
        matched_idxs: list[Tensor],
    ) -> Tensor:
        """Sigmoid focal loss over the anchors that are not between the IoU thresholds,
        divided by the number of foreground anchors, averaged over the images."""
        losses = []
        cls_logits = head_outputs["cls_logits"]
        for target, logits, matched in zip(targets, cls_logits, matched_idxs):
            foreground = matched >= 0
            num_foreground = foreground.sum()
            gt_classes_target = ember.zeros_like(logits)
            gt_classes_target[foreground, target["labels"][matched[foreground]]] = 1.0
            valid = matched != self.BETWEEN_THRESHOLDS
            loss = sigmoid_focal_loss(logits[valid], gt_classes_target[valid], reduction="sum")
            # max(1, num_foreground) on the device, without torchvision's host sync
            losses.append(loss / num_foreground.clamp(min=1))
        return _sum(losses) / len(targets)

    def forward(self, x: list[Tensor]) -> Tensor:
        return ember.cat(
            [_flatten_levels(self.cls_logits(self.conv(f)), self.num_classes) for f in x], dim=1
        )


class RetinaNetRegressionHead(_V2Checkpoints):
    """
    A regression head for use in RetinaNet.

    Args:
        in_channels (int): number of channels of the input feature
        num_anchors (int): number of anchors to be predicted
        norm_layer (callable, optional): Module specifying the normalization layer to use.
            Default: None
    """

    def __init__(
        self, in_channels: int, num_anchors: int, norm_layer: Callable[..., nn.Module] | None = None
    ) -> None:
        super().__init__()
        self.conv = _conv_tower(in_channels, norm_layer)
        self.bbox_reg = nn.Conv2d(in_channels, num_anchors * 4, kernel_size=3, stride=1, padding=1)
        nn.init.normal_(self.bbox_reg.weight, std=0.01)
        nn.init.zeros_(self.bbox_reg.bias)
        self.box_coder = BoxCoder(weights=(1.0, 1.0, 1.0, 1.0))
        self._loss_type = "l1"

    def compute_loss(
        self,
        targets: list[dict[str, Tensor]],
        head_outputs: dict[str, Tensor],
        anchors: list[Tensor],
        matched_idxs: list[Tensor],
    ) -> Tensor:
        """The box loss (``_loss_type``) of the foreground anchors, divided by their number,
        averaged over the images."""
        losses = []
        bbox_regression = head_outputs["bbox_regression"]
        for target, regression, anchors_per_image, matched in zip(
            targets, bbox_regression, anchors, matched_idxs
        ):
            foreground = ember.where(matched >= 0)[0]
            num_foreground = foreground.numel()
            matched_gt_boxes = target["boxes"][matched[foreground]]
            loss = _box_loss(
                self._loss_type,
                self.box_coder,
                anchors_per_image[foreground, :],
                matched_gt_boxes,
                regression[foreground, :],
            )
            losses.append(loss / max(1, num_foreground))
        return _sum(losses) / max(1, len(targets))

    def forward(self, x: list[Tensor]) -> Tensor:
        return ember.cat([_flatten_levels(self.bbox_reg(self.conv(f)), 4) for f in x], dim=1)


class RetinaNet(nn.Module):
    """
    Implements RetinaNet.

    The input to the model is expected to be a list of tensors, each of shape [C, H, W], one
    for each image, and should be in 0-1 range. Different images can have different sizes.

    The behavior of the model changes depending on if it is in training or evaluation mode.

    During training, the model expects both the input tensors and targets (list of
    dictionary), containing:
        - boxes (``FloatTensor[N, 4]``): the ground-truth boxes in ``[x1, y1, x2, y2]``
          format, with ``0 <= x1 < x2 <= W`` and ``0 <= y1 < y2 <= H``.
        - labels (Int64Tensor[N]): the class label for each ground-truth box

    The model returns a Dict[Tensor] during training, containing the classification and
    regression losses.

    During inference, the model requires only the input tensors, and returns the
    post-processed predictions as a List[Dict[Tensor]], one for each input image. The fields
    of the Dict are as follows:
        - boxes (``FloatTensor[N, 4]``): the predicted boxes in ``[x1, y1, x2, y2]`` format.
        - labels (Int64Tensor[N]): the predicted labels for each image
        - scores (Tensor[N]): the scores for each prediction

    Args:
        backbone (nn.Module): the network used to compute the features for the model. It
            should contain an out_channels attribute (the same for all the levels) and return
            a single Tensor or an OrderedDict[Tensor].
        num_classes (int): number of output classes of the model (including the background).
        min_size (int): minimum size of the image to be rescaled before feeding it to the
            backbone
        max_size (int): maximum size of the image to be rescaled before feeding it to the
            backbone
        image_mean (Tuple[float, float, float]): mean values used for input normalization.
        image_std (Tuple[float, float, float]): std values used for input normalization.
        anchor_generator (AnchorGenerator): module that generates the anchors for a set of
            feature maps.
        head (nn.Module): Module run on top of the feature pyramid. Defaults to a module
            containing a classification and regression module.
        proposal_matcher (Matcher, optional): matches anchors to ground-truth boxes.
        score_thresh (float): Score threshold used for postprocessing the detections.
        nms_thresh (float): NMS threshold used for postprocessing the detections.
        detections_per_img (int): Number of best detections to keep after NMS.
        fg_iou_thresh (float): minimum IoU between the anchor and the GT box so that they can
            be considered as positive during training.
        bg_iou_thresh (float): maximum IoU between the anchor and the GT box so that they can
            be considered as negative during training.
        topk_candidates (int): Number of best detections to keep before NMS.
    """

    def __init__(
        self,
        backbone: nn.Module,
        num_classes: int,
        min_size: int = 800,
        max_size: int = 1333,
        image_mean: list[float] | None = None,
        image_std: list[float] | None = None,
        anchor_generator: AnchorGenerator | None = None,
        head: nn.Module | None = None,
        proposal_matcher: Matcher | None = None,
        score_thresh: float = 0.05,
        nms_thresh: float = 0.5,
        detections_per_img: int = 300,
        fg_iou_thresh: float = 0.5,
        bg_iou_thresh: float = 0.4,
        topk_candidates: int = 1000,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        if not hasattr(backbone, "out_channels"):
            raise ValueError(
                "backbone should contain an attribute out_channels "
                "specifying the number of output channels (assumed to be the "
                "same for all the levels)"
            )
        self.backbone = backbone
        if not isinstance(anchor_generator, (AnchorGenerator, type(None))):
            raise TypeError(
                "anchor_generator should be of type AnchorGenerator or None instead of "
                f"{type(anchor_generator)}"
            )
        if anchor_generator is None:
            anchor_generator = _default_anchorgen()
        self.anchor_generator = anchor_generator
        if head is None:
            head = RetinaNetHead(
                backbone.out_channels, anchor_generator.num_anchors_per_location()[0], num_classes
            )
        self.head = head
        if proposal_matcher is None:
            proposal_matcher = Matcher(fg_iou_thresh, bg_iou_thresh, allow_low_quality_matches=True)
        self.proposal_matcher = proposal_matcher
        self.box_coder = BoxCoder(weights=(1.0, 1.0, 1.0, 1.0))
        if image_mean is None:
            image_mean = [0.485, 0.456, 0.406]
        if image_std is None:
            image_std = [0.229, 0.224, 0.225]
        self.transform = GeneralizedRCNNTransform(
            min_size, max_size, image_mean, image_std, **kwargs
        )
        self.score_thresh = score_thresh
        self.nms_thresh = nms_thresh
        self.detections_per_img = detections_per_img
        self.topk_candidates = topk_candidates

    def eager_outputs(self, losses: dict[str, Tensor], detections: list[dict[str, Tensor]]) -> Any:
        return losses if self.training else detections

    def compute_loss(
        self,
        targets: list[dict[str, Tensor]],
        head_outputs: dict[str, Tensor],
        anchors: list[Tensor],
    ) -> dict[str, Tensor]:
        matched_idxs = []
        for anchors_per_image, target in zip(anchors, targets):
            if target["boxes"].numel() == 0:
                matched_idxs.append(_no_matches(anchors_per_image))
                continue
            match_quality_matrix = box_iou(target["boxes"], anchors_per_image)
            matched_idxs.append(self.proposal_matcher(match_quality_matrix))
        return self.head.compute_loss(targets, head_outputs, anchors, matched_idxs)

    def postprocess_detections(
        self,
        head_outputs: dict[str, list[Tensor]],
        anchors: list[list[Tensor]],
        image_shapes: list[tuple[int, int]],
    ) -> list[dict[str, Tensor]]:
        class_logits = head_outputs["cls_logits"]
        box_regression = head_outputs["bbox_regression"]
        detections = []
        for index, (anchors_per_image, image_shape) in enumerate(zip(anchors, image_shapes)):
            image_boxes, image_scores, image_labels = [], [], []
            for regression, logits, anchors_per_level in zip(
                [br[index] for br in box_regression],
                [cl[index] for cl in class_logits],
                anchors_per_image,
            ):
                num_classes = logits.shape[-1]
                scores, topk_idxs = _top_scores(
                    ember.sigmoid(logits).flatten(), self.score_thresh, self.topk_candidates
                )
                anchor_idxs = ember.div(topk_idxs, num_classes, rounding_mode="floor")
                boxes = self.box_coder.decode_single(
                    regression[anchor_idxs], anchors_per_level[anchor_idxs]
                )
                image_boxes.append(box_ops.clip_boxes_to_image(boxes, image_shape))
                image_scores.append(scores)
                image_labels.append(topk_idxs % num_classes)
            detections.append(
                _nms_detections(
                    image_boxes,
                    image_scores,
                    image_labels,
                    self.nms_thresh,
                    self.detections_per_img,
                )
            )
        return detections

    def forward(self, images: list[Tensor], targets: list[dict[str, Tensor]] | None = None) -> Any:
        """
        Args:
            images (list[Tensor]): images to be processed
            targets (list[Dict[Tensor]]): ground-truth boxes present in the image (optional)

        Returns:
            result (list[BoxList] or dict[Tensor]): the output from the model. During
            training, a dict[Tensor] of the losses; during testing, a list of dicts with
            ``boxes``, ``scores`` and ``labels``.
        """
        if self.training:
            _check_training_targets(targets, with_details=False)
        original_image_sizes = _original_image_sizes(images)
        images, targets = self.transform(images, targets)
        _check_degenerate_boxes(targets)
        features = _backbone_features(self.backbone, images.tensors)
        head_outputs = self.head(features)
        anchors = self.anchor_generator(images, features)

        if self.training:
            return self.eager_outputs(self.compute_loss(targets, head_outputs, anchors), [])
        # the number of anchors per level: H * W positions times A anchors each
        hw = [x.size(2) * x.size(3) for x in features]
        num_anchors = head_outputs["cls_logits"].size(1) // sum(hw)
        per_level = [n * num_anchors for n in hw]
        split_outputs = {k: list(v.split(per_level, dim=1)) for k, v in head_outputs.items()}
        split_anchors = [list(a.split(per_level)) for a in anchors]
        detections = self.postprocess_detections(split_outputs, split_anchors, images.image_sizes)
        detections = self.transform.postprocess(
            detections, images.image_sizes, original_image_sizes
        )
        return self.eager_outputs({}, detections)


class RetinaNet_ResNet50_FPN_Weights(WeightsEnum):
    COCO_V1 = _coco_detection_weights(
        "retinanet_resnet50_fpn_coco-eeacb38b",
        34014999,
        {"box_map": 36.4},
        151.54,
        130.267,
        "https://github.com/pytorch/vision/tree/main/references/detection#retinanet",
    )
    DEFAULT = COCO_V1


class RetinaNet_ResNet50_FPN_V2_Weights(WeightsEnum):
    COCO_V1 = _coco_detection_weights(
        "retinanet_resnet50_fpn_v2_coco-5905b1c5",
        38198935,
        {"box_map": 41.5},
        152.238,
        146.037,
        "https://github.com/pytorch/vision/pull/5756",
        _DOCS_ENHANCED_RECIPE,
    )
    DEFAULT = COCO_V1


@register_model()
@handle_legacy_interface(
    weights=("pretrained", RetinaNet_ResNet50_FPN_Weights.COCO_V1),
    weights_backbone=("pretrained_backbone", ResNet50_Weights.IMAGENET1K_V1),
)
def retinanet_resnet50_fpn(
    *,
    weights: RetinaNet_ResNet50_FPN_Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    weights_backbone: ResNet50_Weights | None = ResNet50_Weights.IMAGENET1K_V1,
    trainable_backbone_layers: int | None = None,
    **kwargs: Any,
) -> RetinaNet:
    """Constructs a RetinaNet model with a ResNet-50-FPN backbone, from `Focal Loss for Dense
    Object Detection <https://arxiv.org/abs/1708.02002>`_.

    Args:
        weights (RetinaNet_ResNet50_FPN_Weights, optional): The pretrained weights to use.
        progress (bool): If True, displays a progress bar of the download to stderr.
        num_classes (int, optional): number of output classes of the model (including the
            background)
        weights_backbone (ResNet50_Weights, optional): The pretrained weights for the backbone.
        trainable_backbone_layers (int, optional): number of trainable (not frozen) layers
            starting from final block, between 0 and 5; 3 when ``None``.
        **kwargs: parameters passed to the :class:`RetinaNet` base class.
    """
    weights = RetinaNet_ResNet50_FPN_Weights.verify(weights)
    weights_backbone = ResNet50_Weights.verify(weights_backbone)
    weights_backbone, num_classes, is_trained = _resolve_weights(
        weights, weights_backbone, num_classes
    )
    # skip P2 because it generates too many anchors (according to their paper)
    backbone = _resnet50_fpn_backbone(
        weights_backbone, progress, is_trained, trainable_backbone_layers,
        returned_layers=[2, 3, 4], extra_blocks=LastLevelP6P7(256, 256),
    )
    model = _load_weights(RetinaNet(backbone, num_classes, **kwargs), weights, progress)
    if weights == RetinaNet_ResNet50_FPN_Weights.COCO_V1:
        overwrite_eps(model, 0.0)
    return model


@register_model()
@handle_legacy_interface(
    weights=("pretrained", RetinaNet_ResNet50_FPN_V2_Weights.COCO_V1),
    weights_backbone=("pretrained_backbone", ResNet50_Weights.IMAGENET1K_V1),
)
def retinanet_resnet50_fpn_v2(
    *,
    weights: RetinaNet_ResNet50_FPN_V2_Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    weights_backbone: ResNet50_Weights | None = None,
    trainable_backbone_layers: int | None = None,
    **kwargs: Any,
) -> RetinaNet:
    """Constructs an improved RetinaNet model with a ResNet-50-FPN backbone, from `Bridging the
    Gap Between Anchor-based and Anchor-free Detection via Adaptive Training Sample Selection
    <https://arxiv.org/abs/1912.02424>`_: GroupNorm heads, a GIoU box loss and P6 from C5.

    Args: as :func:`retinanet_resnet50_fpn`.
    """
    weights = RetinaNet_ResNet50_FPN_V2_Weights.verify(weights)
    weights_backbone = ResNet50_Weights.verify(weights_backbone)
    weights_backbone, num_classes, is_trained = _resolve_weights(
        weights, weights_backbone, num_classes
    )
    backbone = _resnet50_fpn_backbone(
        weights_backbone, progress, is_trained, trainable_backbone_layers, frozen_bn=False,
        returned_layers=[2, 3, 4], extra_blocks=LastLevelP6P7(2048, 256),
    )
    anchor_generator = _default_anchorgen()
    head = RetinaNetHead(
        backbone.out_channels,
        anchor_generator.num_anchors_per_location()[0],
        num_classes,
        norm_layer=partial(nn.GroupNorm, 32),
    )
    head.regression_head._loss_type = "giou"
    model = RetinaNet(backbone, num_classes, anchor_generator=anchor_generator, head=head, **kwargs)
    return _load_weights(model, weights, progress)
