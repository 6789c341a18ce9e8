"""FCOS (torchvision's ``models.detection.fcos``); module names, state_dict keys, the
centre-sampling assignment, losses and post-processing match."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import ember
from ember import Tensor, nn
from ember.nn import functional as F

from ...ops import boxes as box_ops
from ...ops import generalized_box_iou_loss, sigmoid_focal_loss
from ...ops.feature_pyramid_network import LastLevelP6P7
from .._api import WeightsEnum, register_model
from .._utils import handle_legacy_interface
from ..resnet import ResNet50_Weights
from ._utils import (
    BoxLinearCoder,
    _check_degenerate_boxes,
    _check_training_targets,
    _coco_detection_weights,
    _load_weights,
    _original_image_sizes,
    _resolve_weights,
)
from .anchor_utils import AnchorGenerator
from .backbone_utils import _resnet50_fpn_backbone
from .retinanet import (
    _backbone_features,
    _flatten_levels,
    _nms_detections,
    _no_matches,
    _top_scores,
)
from .transform import GeneralizedRCNNTransform

# torchvision's __all__ (the heads and extractors are reached through the module)
__all__ = [
    "FCOS",
    "FCOS_ResNet50_FPN_Weights",
    "fcos_resnet50_fpn",
]


def _fcos_tower(
    in_channels: int, num_convs: int, norm_layer: Callable[..., nn.Module] | None
) -> nn.Sequential:
    """``num_convs`` x (3x3 conv, norm (GroupNorm(32) by default), ReLU); convs N(0, 0.01)."""
    if norm_layer is None:
        norm_layer = partial(nn.GroupNorm, 32)
    layers: list[nn.Module] = []
    for _ in range(num_convs):
        conv = nn.Conv2d(in_channels, in_channels, kernel_size=3, stride=1, padding=1)
        nn.init.normal_(conv.weight, std=0.01)
        nn.init.constant_(conv.bias, 0)
        layers += [conv, norm_layer(in_channels), nn.ReLU()]
    return nn.Sequential(*layers)


class FCOSHead(nn.Module):
    """
    A regression and classification head for use in FCOS.

    Args:
        in_channels (int): number of channels of the input feature
        num_anchors (int): number of anchors to be predicted
        num_classes (int): number of classes to be predicted
        num_convs (Optional[int]): number of conv layer of head. Default: 4.
    """

    def __init__(
        self, in_channels: int, num_anchors: int, num_classes: int, num_convs: int | None = 4
    ) -> None:
        super().__init__()
        self.box_coder = BoxLinearCoder(normalize_by_size=True)
        self.classification_head = FCOSClassificationHead(
            in_channels, num_anchors, num_classes, num_convs
        )
        self.regression_head = FCOSRegressionHead(in_channels, num_anchors, num_convs)

    def compute_loss(
        self,
        targets: list[dict[str, Tensor]],
        head_outputs: dict[str, Tensor],
        anchors: list[Tensor],
        matched_idxs: list[Tensor],
    ) -> dict[str, Tensor]:
        """Focal loss over all anchors; GIoU and centre-ness (BCE) losses over the
        foreground; each divided by the number of foreground anchors of the batch."""
        cls_logits = head_outputs["cls_logits"]  # (N, HWA, C)
        bbox_regression = head_outputs["bbox_regression"]  # (N, HWA, 4)
        bbox_ctrness = head_outputs["bbox_ctrness"]  # (N, HWA, 1)

        gt_classes, gt_boxes = [], []
        for target, matched in zip(targets, matched_idxs):
            if len(target["labels"]) == 0:
                classes = target["labels"].new_zeros((len(matched),))
                boxes = target["boxes"].new_zeros((len(matched), 4))
            else:
                classes = target["labels"][matched.clip(min=0)]
                boxes = target["boxes"][matched.clip(min=0)]
            classes[matched < 0] = -1  # background
            gt_classes.append(classes)
            gt_boxes.append(boxes)
        gt_boxes_t, gt_classes_t = ember.stack(gt_boxes), ember.stack(gt_classes)
        anchors_t = ember.stack(anchors)

        foreground = gt_classes_t >= 0
        num_foreground = max(1, foreground.sum().item())  # a host sync, as in torchvision

        gt_classes_targets = ember.zeros_like(cls_logits)
        gt_classes_targets[foreground, gt_classes_t[foreground]] = 1.0
        loss_cls = sigmoid_focal_loss(cls_logits, gt_classes_targets, reduction="sum")

        pred_boxes = self.box_coder.decode(bbox_regression, anchors_t)
        loss_bbox_reg = generalized_box_iou_loss(
            pred_boxes[foreground], gt_boxes_t[foreground], reduction="sum"
        )

        bbox_reg_targets = self.box_coder.encode(anchors_t, gt_boxes_t)
        if len(bbox_reg_targets) == 0:
            gt_ctrness = bbox_reg_targets.new_zeros(bbox_reg_targets.size()[:-1])
        else:
            left_right = bbox_reg_targets[:, :, [0, 2]]
            top_bottom = bbox_reg_targets[:, :, [1, 3]]
            gt_ctrness = ember.sqrt(
                (left_right.min(dim=-1)[0] / left_right.max(dim=-1)[0])
                * (top_bottom.min(dim=-1)[0] / top_bottom.max(dim=-1)[0])
            )
        pred_ctrness = bbox_ctrness.squeeze(dim=2)
        loss_ctrness = F.binary_cross_entropy_with_logits(
            pred_ctrness[foreground], gt_ctrness[foreground], reduction="sum"
        )
        return {
            "classification": loss_cls / num_foreground,
            "bbox_regression": loss_bbox_reg / num_foreground,
            "bbox_ctrness": loss_ctrness / num_foreground,
        }

    def forward(self, x: list[Tensor]) -> dict[str, Tensor]:
        cls_logits = self.classification_head(x)
        bbox_regression, bbox_ctrness = self.regression_head(x)
        return {
            "cls_logits": cls_logits,
            "bbox_regression": bbox_regression,
            "bbox_ctrness": bbox_ctrness,
        }


class FCOSClassificationHead(nn.Module):
    """
    A classification head for use in FCOS.

    Args:
        in_channels (int): number of channels of the input feature.
        num_anchors (int): number of anchors to be predicted.
        num_classes (int): number of classes to be predicted.
        num_convs (Optional[int]): number of conv layer. Default: 4.
        prior_probability (Optional[float]): probability of prior. Default: 0.01.
        norm_layer: Module specifying the normalization layer to use.
    """

    def __init__(
        self,
        in_channels: int,
        num_anchors: int,
        num_classes: int,
        num_convs: int = 4,
        prior_probability: float = 0.01,
        norm_layer: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()
        self.num_classes = num_classes
        self.num_anchors = num_anchors
        self.conv = _fcos_tower(in_channels, num_convs, norm_layer)
        self.cls_logits = nn.Conv2d(
            in_channels, num_anchors * num_classes, kernel_size=3, stride=1, padding=1
        )
        nn.init.normal_(self.cls_logits.weight, std=0.01)
        nn.init.constant_(
            self.cls_logits.bias, -math.log((1 - prior_probability) / prior_probability)
        )

    def forward(self, x: list[Tensor]) -> Tensor:
        return ember.cat(
            [_flatten_levels(self.cls_logits(self.conv(f)), self.num_classes) for f in x], dim=1
        )


class FCOSRegressionHead(nn.Module):
    """
    A regression head for use in FCOS, which combines regression branch and center-ness branch.
    This can obtain better performance.

    Reference: `FCOS: A simple and strong anchor-free object detector
    <https://arxiv.org/abs/2006.09214>`_.

    Args:
        in_channels (int): number of channels of the input feature
        num_anchors (int): number of anchors to be predicted
        num_convs (Optional[int]): number of conv layer. Default: 4.
        norm_layer: Module specifying the normalization layer to use.
    """

    def __init__(
        self,
        in_channels: int,
        num_anchors: int,
        num_convs: int = 4,
        norm_layer: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()
        self.conv = _fcos_tower(in_channels, num_convs, norm_layer)
        self.bbox_reg = nn.Conv2d(in_channels, num_anchors * 4, kernel_size=3, stride=1, padding=1)
        self.bbox_ctrness = nn.Conv2d(
            in_channels, num_anchors * 1, kernel_size=3, stride=1, padding=1
        )
        for layer in (self.bbox_reg, self.bbox_ctrness):
            nn.init.normal_(layer.weight, std=0.01)
            nn.init.zeros_(layer.bias)

    def forward(self, x: list[Tensor]) -> tuple[Tensor, Tensor]:
        regressions, ctrness = [], []
        for features in x:
            feature = self.conv(features)
            regressions.append(_flatten_levels(F.relu(self.bbox_reg(feature)), 4))
            ctrness.append(_flatten_levels(self.bbox_ctrness(feature), 1))
        return ember.cat(regressions, dim=1), ember.cat(ctrness, dim=1)


class FCOS(nn.Module):
    """
    Implements FCOS.

    The input to the model is expected to be a list of tensors, each of shape [C, H, W], one
    for each image, and should be in 0-1 range. Different images can have different sizes.

    During training, the model expects both the input tensors and targets (list of
    dictionary), containing ``boxes`` (``FloatTensor[N, 4]``, ``[x1, y1, x2, y2]``) and
    ``labels`` (``Int64Tensor[N]``), and returns a Dict[Tensor] of the classification,
    regression and centre-ness losses. During inference it returns a List[Dict[Tensor]] with
    ``boxes``, ``labels`` and ``scores`` per image.

    Args:
        backbone (nn.Module): the network used to compute the features for the model. It
            should contain an out_channels attribute (the same for all the levels).
        num_classes (int): number of output classes of the model (including the background).
        min_size (int): minimum size of the image to be rescaled before feeding it to the
            backbone
        max_size (int): maximum size of the image to be rescaled before feeding it to the
            backbone
        image_mean (Tuple[float, float, float]): mean values used for input normalization.
        image_std (Tuple[float, float, float]): std values used for input normalization.
        anchor_generator (AnchorGenerator): module that generates the anchors for a set of
            feature maps. For FCOS, only set one anchor for per position of each level, the
            width and height of anchor box should be equal to the stride multiplied by
            ``center_sampling_radius``.
        head (nn.Module): Module run on top of the feature pyramid.
        center_sampling_radius (int): radius of the "center" of a groundtruth box, within
            which all anchor points are labeled positive.
        score_thresh (float): Score threshold used for postprocessing the detections.
        nms_thresh (float): NMS threshold used for postprocessing the detections.
        detections_per_img (int): Number of best detections to keep after NMS.
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
        center_sampling_radius: float = 1.5,
        score_thresh: float = 0.2,
        nms_thresh: float = 0.6,
        detections_per_img: int = 100,
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
                "anchor_generator should be of type AnchorGenerator or None, instead  got "
                f"{type(anchor_generator)}"
            )
        if anchor_generator is None:
            anchor_sizes = ((8,), (16,), (32,), (64,), (128,))  # one anchor per position
            aspect_ratios = ((1.0,),) * len(anchor_sizes)
            anchor_generator = AnchorGenerator(anchor_sizes, aspect_ratios)
        self.anchor_generator = anchor_generator
        if self.anchor_generator.num_anchors_per_location()[0] != 1:
            raise ValueError(
                "anchor_generator.num_anchors_per_location()[0] should be 1 instead of "
                f"{anchor_generator.num_anchors_per_location()[0]}"
            )
        if head is None:
            head = FCOSHead(
                backbone.out_channels, anchor_generator.num_anchors_per_location()[0], num_classes
            )
        self.head = head
        self.box_coder = BoxLinearCoder(normalize_by_size=True)
        if image_mean is None:
            image_mean = [0.485, 0.456, 0.406]
        if image_std is None:
            image_std = [0.229, 0.224, 0.225]
        self.transform = GeneralizedRCNNTransform(
            min_size, max_size, image_mean, image_std, **kwargs
        )
        self.center_sampling_radius = center_sampling_radius
        self.score_thresh = score_thresh
        self.nms_thresh = nms_thresh
        self.detections_per_img = detections_per_img
        self.topk_candidates = topk_candidates

    def eager_outputs(self, losses: dict[str, Tensor], detections: list[dict[str, Tensor]]) -> Any:
        return losses if self.training else detections

    def _match(self, anchors: Tensor, gt_boxes: Tensor, num_anchors_per_level: list[int]) -> Tensor:
        """The ground truth of each anchor point, or -1: the point lies inside the box and
        within ``center_sampling_radius`` strides of its centre, the box's largest distance to
        the point falls in the level's range (``(4, 8)`` anchor sizes), and among several
        candidates the smallest box wins."""
        gt_centers = (gt_boxes[:, :2] + gt_boxes[:, 2:]) / 2
        anchor_centers = (anchors[:, :2] + anchors[:, 2:]) / 2  # (N, 2)
        anchor_sizes = anchors[:, 2] - anchors[:, 0]
        center_dist = (anchor_centers[:, None, :] - gt_centers[None, :, :]).abs_().max(dim=2).values
        pairwise_match = center_dist < self.center_sampling_radius * anchor_sizes[:, None]

        x, y = anchor_centers.unsqueeze(dim=2).unbind(dim=1)
        x0, y0, x1, y1 = gt_boxes.unsqueeze(dim=0).unbind(dim=2)
        pairwise_dist = ember.stack([x - x0, y - y0, x1 - x, y1 - y], dim=2)
        pairwise_match &= pairwise_dist.min(dim=2).values > 0  # inside the box

        lower_bound = anchor_sizes * 4
        lower_bound[: num_anchors_per_level[0]] = 0
        upper_bound = anchor_sizes * 8
        upper_bound[-num_anchors_per_level[-1] :] = float("inf")
        pairwise_dist = pairwise_dist.max(dim=2).values
        pairwise_match &= (pairwise_dist > lower_bound[:, None]) & (
            pairwise_dist < upper_bound[:, None]
        )

        # match the smallest box: the largest of 1e8 - area among the candidates
        gt_areas = (gt_boxes[:, 2] - gt_boxes[:, 0]) * (gt_boxes[:, 3] - gt_boxes[:, 1])
        pairwise_match = pairwise_match.to(ember.float32) * (1e8 - gt_areas[None, :])
        min_values, matched_idx = pairwise_match.max(dim=1)
        matched_idx[min_values < 1e-5] = -1
        return matched_idx

    def compute_loss(
        self,
        targets: list[dict[str, Tensor]],
        head_outputs: dict[str, Tensor],
        anchors: list[Tensor],
        num_anchors_per_level: list[int],
    ) -> dict[str, Tensor]:
        matched_idxs = []
        for anchors_per_image, target in zip(anchors, targets):
            if target["boxes"].numel() == 0:
                matched_idxs.append(_no_matches(anchors_per_image))
            else:
                matched_idxs.append(
                    self._match(anchors_per_image, target["boxes"], num_anchors_per_level)
                )
        return self.head.compute_loss(targets, head_outputs, anchors, matched_idxs)

    def postprocess_detections(
        self,
        head_outputs: dict[str, list[Tensor]],
        anchors: list[list[Tensor]],
        image_shapes: list[tuple[int, int]],
    ) -> list[dict[str, Tensor]]:
        class_logits = head_outputs["cls_logits"]
        box_regression = head_outputs["bbox_regression"]
        box_ctrness = head_outputs["bbox_ctrness"]
        detections = []
        for index, (anchors_per_image, image_shape) in enumerate(zip(anchors, image_shapes)):
            image_boxes, image_scores, image_labels = [], [], []
            for regression, logits, ctrness, anchors_per_level in zip(
                [br[index] for br in box_regression],
                [cl[index] for cl in class_logits],
                [bc[index] for bc in box_ctrness],
                anchors_per_image,
            ):
                num_classes = logits.shape[-1]
                # the geometric mean of the class and centre-ness probabilities
                scores = ember.sqrt(ember.sigmoid(logits) * ember.sigmoid(ctrness)).flatten()
                scores, topk_idxs = _top_scores(scores, self.score_thresh, self.topk_candidates)
                anchor_idxs = ember.div(topk_idxs, num_classes, rounding_mode="floor")
                boxes = self.box_coder.decode(
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
            result (list[BoxList] or dict[Tensor]): the losses in training, the detections
            in evaluation.
        """
        if self.training:
            _check_training_targets(targets, with_details=True)
        original_image_sizes = _original_image_sizes(images)
        images, targets = self.transform(images, targets)
        _check_degenerate_boxes(targets)
        features = _backbone_features(self.backbone, images.tensors)
        head_outputs = self.head(features)
        anchors = self.anchor_generator(images, features)
        num_anchors_per_level = [x.size(2) * x.size(3) for x in features]

        if self.training:
            losses = self.compute_loss(targets, head_outputs, anchors, num_anchors_per_level)
            return self.eager_outputs(losses, [])
        split_outputs = {
            k: list(v.split(num_anchors_per_level, dim=1)) for k, v in head_outputs.items()
        }
        split_anchors = [list(a.split(num_anchors_per_level)) for a in anchors]
        detections = self.postprocess_detections(split_outputs, split_anchors, images.image_sizes)
        detections = self.transform.postprocess(
            detections, images.image_sizes, original_image_sizes
        )
        return self.eager_outputs({}, detections)


class FCOS_ResNet50_FPN_Weights(WeightsEnum):
    COCO_V1 = _coco_detection_weights(
        "fcos_resnet50_fpn_coco-99b0c9b7",
        32269600,
        {"box_map": 39.2},
        128.207,
        123.608,
        "https://github.com/pytorch/vision/tree/main/references/detection#fcos-resnet-50-fpn",
    )
    DEFAULT = COCO_V1


@register_model()
@handle_legacy_interface(
    weights=("pretrained", FCOS_ResNet50_FPN_Weights.COCO_V1),
    weights_backbone=("pretrained_backbone", ResNet50_Weights.IMAGENET1K_V1),
)
def fcos_resnet50_fpn(
    *,
    weights: FCOS_ResNet50_FPN_Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    weights_backbone: ResNet50_Weights | None = ResNet50_Weights.IMAGENET1K_V1,
    trainable_backbone_layers: int | None = None,
    **kwargs: Any,
) -> FCOS:
    """Constructs a FCOS model with a ResNet-50-FPN backbone, from `FCOS: Fully Convolutional
    One-Stage Object Detection <https://arxiv.org/abs/1904.01355>`_ and `FCOS: A simple and
    strong anchor-free object detector <https://arxiv.org/abs/2006.09214>`_.

    Args:
        weights (FCOS_ResNet50_FPN_Weights, optional): The pretrained weights to use.
        progress (bool): If True, displays a progress bar of the download to stderr.
        num_classes (int, optional): number of output classes of the model (including the
            background)
        weights_backbone (ResNet50_Weights, optional): The pretrained weights for the backbone.
        trainable_backbone_layers (int, optional): number of trainable (not frozen) layers
            starting from final block, between 0 and 5; 3 when ``None``.
        **kwargs: parameters passed to the :class:`FCOS` base class.
    """
    weights = FCOS_ResNet50_FPN_Weights.verify(weights)
    weights_backbone = ResNet50_Weights.verify(weights_backbone)
    weights_backbone, num_classes, is_trained = _resolve_weights(
        weights, weights_backbone, num_classes
    )
    backbone = _resnet50_fpn_backbone(
        weights_backbone, progress, is_trained, trainable_backbone_layers,
        returned_layers=[2, 3, 4], extra_blocks=LastLevelP6P7(256, 256),
    )
    return _load_weights(FCOS(backbone, num_classes, **kwargs), weights, progress)
