"""SSD (torchvision's ``models.detection.ssd``): the model, its heads, the VGG feature
extractor and ``ssd300_vgg16``; module names, state_dict keys, the hard negative mining and
post-processing match."""

from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import Any

import ember
from ember import Tensor, nn
from ember.nn import functional as F

from ...ops import box_iou
from ...ops import boxes as box_ops
from .._api import WeightsEnum, register_model
from .._utils import handle_legacy_interface
from ..vgg import VGG, VGG16_Weights, vgg16
from ._utils import (
    BoxCoder,
    SSDMatcher,
    _assert,
    _check_degenerate_boxes,
    _check_training_targets,
    _coco_detection_weights,
    _load_weights,
    _original_image_sizes,
    _resolve_weights,
    _topk_min,
    retrieve_out_channels,
)
from .anchor_utils import DefaultBoxGenerator
from .backbone_utils import _validate_trainable_layers
from .retinanet import (
    _backbone_features,
    _flatten_levels,
    _nms_detections,
    _no_matches,
)
from .transform import GeneralizedRCNNTransform

# torchvision's __all__ (the heads and extractors are reached through the module)
__all__ = [
    "SSD300_VGG16_Weights",
    "ssd300_vgg16",
]


class SSD300_VGG16_Weights(WeightsEnum):
    COCO_V1 = _coco_detection_weights(
        "ssd300_vgg16_coco-b556d3b4",
        35641826,
        {"box_map": 25.1},
        34.858,
        135.988,
        "https://github.com/pytorch/vision/tree/main/references/detection#ssd300-vgg16",
    )
    DEFAULT = COCO_V1


def _xavier_init(conv: nn.Module) -> None:
    for layer in conv.modules():
        if isinstance(layer, nn.Conv2d):
            nn.init.xavier_uniform_(layer.weight)
            if layer.bias is not None:
                nn.init.constant_(layer.bias, 0.0)


class SSDHead(nn.Module):
    """The classification and regression heads of SSD (one 3x3 conv per feature map each)."""

    def __init__(self, in_channels: list[int], num_anchors: list[int], num_classes: int) -> None:
        super().__init__()
        self.classification_head = SSDClassificationHead(in_channels, num_anchors, num_classes)
        self.regression_head = SSDRegressionHead(in_channels, num_anchors)

    def forward(self, x: list[Tensor]) -> dict[str, Tensor]:
        return {
            "bbox_regression": self.regression_head(x),
            "cls_logits": self.classification_head(x),
        }


class SSDScoringHead(nn.Module):
    """Runs ``module_list[i]`` on feature map ``i`` and concatenates the results as
    ``(N, sum H_i W_i A_i, num_columns)``."""

    def __init__(self, module_list: nn.ModuleList, num_columns: int) -> None:
        super().__init__()
        self.module_list = module_list
        self.num_columns = num_columns

    def _get_result_from_module_list(self, x: Tensor, idx: int) -> Tensor:
        """``self.module_list[idx](x)`` (torchvision's TorchScript-friendly indexing)."""
        return self.module_list[idx](x)

    def forward(self, x: list[Tensor]) -> Tensor:
        return ember.cat(
            [
                _flatten_levels(self._get_result_from_module_list(f, i), self.num_columns)
                for i, f in enumerate(x)
            ],
            dim=1,
        )


class SSDClassificationHead(SSDScoringHead):
    def __init__(self, in_channels: list[int], num_anchors: list[int], num_classes: int) -> None:
        cls_logits = nn.ModuleList(
            nn.Conv2d(channels, num_classes * anchors, kernel_size=3, padding=1)
            for channels, anchors in zip(in_channels, num_anchors)
        )
        _xavier_init(cls_logits)
        super().__init__(cls_logits, num_classes)


class SSDRegressionHead(SSDScoringHead):
    def __init__(self, in_channels: list[int], num_anchors: list[int]) -> None:
        bbox_reg = nn.ModuleList(
            nn.Conv2d(channels, 4 * anchors, kernel_size=3, padding=1)
            for channels, anchors in zip(in_channels, num_anchors)
        )
        _xavier_init(bbox_reg)
        super().__init__(bbox_reg, 4)


class SSD(nn.Module):
    """
    Implements SSD architecture from `"SSD: Single Shot MultiBox Detector"
    <https://arxiv.org/abs/1512.02325>`_.

    The input to the model is expected to be a list of tensors, each of shape [C, H, W], one
    for each image, and should be in 0-1 range. Different images can have different sizes,
    but they will be resized to a fixed size before passing it to the backbone.

    During training, the model expects both the input tensors and targets (list of
    dictionary), containing ``boxes`` (``FloatTensor[N, 4]``, ``[x1, y1, x2, y2]``) and
    ``labels`` (``Int64Tensor[N]``), and returns a Dict[Tensor] of the classification and
    regression losses. During inference it returns a List[Dict[Tensor]] with ``boxes``,
    ``labels`` and ``scores`` per image.

    Args:
        backbone (nn.Module): the network used to compute the features for the model. It
            should contain an out_channels attribute with the list of the output channels of
            each feature map. The backbone should return a single Tensor or an
            OrderedDict[Tensor].
        anchor_generator (DefaultBoxGenerator): module that generates the default boxes for a
            set of feature maps.
        size (Tuple[int, int]): the width and height to which images will be rescaled before
            feeding them to the backbone.
        num_classes (int): number of output classes of the model (including the background).
        image_mean (Tuple[float, float, float]): mean values used for input normalization.
        image_std (Tuple[float, float, float]): std values used for input normalization.
        head (nn.Module, optional): Module run on top of the backbone features. Defaults to
            a module containing a classification and regression module.
        score_thresh (float): Score threshold used for postprocessing the detections.
        nms_thresh (float): NMS threshold used for postprocessing the detections.
        detections_per_img (int): Number of best detections to keep after NMS.
        iou_thresh (float): minimum IoU between the anchor and the GT box so that they can be
            considered as positive during training.
        topk_candidates (int): Number of best detections to keep before NMS.
        positive_fraction (float): a number between 0 and 1 which indicates the proportion
            of positive proposals used during the training of the classification head. It is
            used to estimate the negative to positive ratio.
    """

    def __init__(
        self,
        backbone: nn.Module,
        anchor_generator: DefaultBoxGenerator,
        size: tuple[int, int],
        num_classes: int,
        image_mean: list[float] | None = None,
        image_std: list[float] | None = None,
        head: nn.Module | None = None,
        score_thresh: float = 0.01,
        nms_thresh: float = 0.45,
        detections_per_img: int = 200,
        iou_thresh: float = 0.5,
        topk_candidates: int = 400,
        positive_fraction: float = 0.25,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        self.backbone = backbone
        self.anchor_generator = anchor_generator
        self.box_coder = BoxCoder(weights=(10.0, 10.0, 5.0, 5.0))
        if head is None:
            if hasattr(backbone, "out_channels"):
                out_channels = backbone.out_channels
            else:
                out_channels = retrieve_out_channels(backbone, size)
            if len(out_channels) != len(anchor_generator.aspect_ratios):
                raise ValueError(
                    f"The length of the output channels from the backbone ({len(out_channels)}) "
                    "do not match the length of the anchor generator aspect ratios "
                    f"({len(anchor_generator.aspect_ratios)})"
                )
            num_anchors = self.anchor_generator.num_anchors_per_location()
            head = SSDHead(out_channels, num_anchors, num_classes)
        self.head = head
        self.proposal_matcher = SSDMatcher(iou_thresh)
        if image_mean is None:
            image_mean = [0.485, 0.456, 0.406]
        if image_std is None:
            image_std = [0.229, 0.224, 0.225]
        self.transform = GeneralizedRCNNTransform(
            min(size),
            max(size),
            image_mean,
            image_std,
            size_divisible=1,
            fixed_size=size,
            **kwargs,
        )
        self.score_thresh = score_thresh
        self.nms_thresh = nms_thresh
        self.detections_per_img = detections_per_img
        self.topk_candidates = topk_candidates
        self.neg_to_pos_ratio = (1.0 - positive_fraction) / positive_fraction

    def eager_outputs(self, losses: dict[str, Tensor], detections: list[dict[str, Tensor]]) -> Any:
        return losses if self.training else detections

    def compute_loss(
        self,
        targets: list[dict[str, Tensor]],
        head_outputs: dict[str, Tensor],
        anchors: list[Tensor],
        matched_idxs: list[Tensor],
    ) -> dict[str, Tensor]:
        """Smooth L1 over the foreground default boxes; cross-entropy over the foreground and
        the hardest ``neg_to_pos_ratio`` x as many background boxes of each image (hard
        negative mining); both divided by the number of foreground boxes of the batch."""
        bbox_regression = head_outputs["bbox_regression"]
        cls_logits = head_outputs["cls_logits"]

        num_foreground = 0
        bbox_loss, cls_targets = [], []
        for target, regression, logits, anchors_per_image, matched in zip(
            targets, bbox_regression, cls_logits, anchors, matched_idxs
        ):
            foreground = ember.where(matched >= 0)[0]
            foreground_matched = matched[foreground]
            num_foreground += foreground_matched.numel()

            matched_gt_boxes = target["boxes"][foreground_matched]
            target_regression = self.box_coder.encode_single(
                matched_gt_boxes, anchors_per_image[foreground, :]
            )
            bbox_loss.append(
                F.smooth_l1_loss(regression[foreground, :], target_regression, reduction="sum")
            )

            labels = target["labels"]
            gt_classes_target = ember.zeros(
                (logits.size(0),), dtype=labels.dtype, device=labels.device
            )
            gt_classes_target[foreground] = labels[foreground_matched]
            cls_targets.append(gt_classes_target)

        bbox_loss_t = ember.stack(bbox_loss)
        cls_targets_t = ember.stack(cls_targets)

        num_classes = cls_logits.size(-1)
        cls_loss = F.cross_entropy(
            cls_logits.view(-1, num_classes), cls_targets_t.view(-1), reduction="none"
        ).view(cls_targets_t.size())

        # Hard negative mining: rank the background boxes of each image by their loss (the
        # foreground ones last, at -inf) and keep the first neg_to_pos_ratio x #foreground.
        # A box's rank is the position of its index in the descending order; equal losses
        # are the only way the choice can depend on the sort's tie-breaking.
        foreground_idxs = cls_targets_t > 0
        num_negative = self.neg_to_pos_ratio * foreground_idxs.sum(1, keepdim=True)
        negative_loss = cls_loss.clone()
        negative_loss[foreground_idxs] = -float("inf")
        _, idx = negative_loss.sort(1, descending=True)
        background_idxs = idx.sort(1)[1] < num_negative

        n = max(1, num_foreground)
        return {
            "bbox_regression": bbox_loss_t.sum() / n,
            "classification": (cls_loss[foreground_idxs].sum() + cls_loss[background_idxs].sum())
            / n,
        }

    def postprocess_detections(
        self,
        head_outputs: dict[str, Tensor],
        image_anchors: list[Tensor],
        image_shapes: list[tuple[int, int]],
    ) -> list[dict[str, Tensor]]:
        bbox_regression = head_outputs["bbox_regression"]
        pred_scores = F.softmax(head_outputs["cls_logits"], dim=-1)
        num_classes = pred_scores.size(-1)
        device = pred_scores.device

        detections = []
        for boxes, scores, anchors, image_shape in zip(
            bbox_regression, pred_scores, image_anchors, image_shapes
        ):
            boxes = self.box_coder.decode_single(boxes, anchors)
            boxes = box_ops.clip_boxes_to_image(boxes, image_shape)
            image_boxes, image_scores, image_labels = [], [], []
            for label in range(1, num_classes):  # class 0 is the background
                score = scores[:, label]
                keep = score > self.score_thresh
                score, box = score[keep], boxes[keep]
                score, idxs = score.topk(_topk_min(score, self.topk_candidates, 0))
                image_boxes.append(box[idxs])
                image_scores.append(score)
                image_labels.append(
                    ember.full_like(score, fill_value=label, dtype=ember.int64, device=device)
                )
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
        if self.training:
            _check_training_targets(targets, with_details=True)
        original_image_sizes = _original_image_sizes(images)
        images, targets = self.transform(images, targets)
        _check_degenerate_boxes(targets)
        features = _backbone_features(self.backbone, images.tensors)
        head_outputs = self.head(features)
        anchors = self.anchor_generator(images, features)

        if self.training:
            matched_idxs = []
            for anchors_per_image, target in zip(anchors, targets):
                if target["boxes"].numel() == 0:
                    matched_idxs.append(_no_matches(anchors_per_image))
                    continue
                match_quality_matrix = box_iou(target["boxes"], anchors_per_image)
                matched_idxs.append(self.proposal_matcher(match_quality_matrix))
            losses = self.compute_loss(targets, head_outputs, anchors, matched_idxs)
            return self.eager_outputs(losses, [])
        detections = self.postprocess_detections(head_outputs, anchors, images.image_sizes)
        detections = self.transform.postprocess(
            detections, images.image_sizes, original_image_sizes
        )
        return self.eager_outputs({}, detections)


def _relu_conv(
    in_channels: int, mid_channels: int, out_channels: int, **conv: Any
) -> nn.Sequential:
    """A 1x1 conv to ``mid_channels``, then a conv (``conv`` arguments) to ``out_channels``,
    each followed by a ReLU."""
    return nn.Sequential(
        nn.Conv2d(in_channels, mid_channels, kernel_size=1),
        nn.ReLU(inplace=True),
        nn.Conv2d(mid_channels, out_channels, **conv),
        nn.ReLU(inplace=True),
    )


class SSDFeatureExtractorVGG(nn.Module):
    """VGG's features up to conv4_3 (L2-normalised and rescaled by a learned per-channel
    weight), then conv5 with fc6/fc7 as dilated convs, then the extra layers: six feature maps
    (seven when ``highres``)."""

    def __init__(self, backbone: nn.Module, highres: bool) -> None:
        super().__init__()
        _, _, maxpool3_pos, maxpool4_pos, _ = (
            i for i, layer in enumerate(backbone) if isinstance(layer, nn.MaxPool2d)
        )
        # Patch ceil_mode for maxpool3 to get the same WxH output sizes as the paper
        backbone[maxpool3_pos].ceil_mode = True
        # parameters used for L2 regularization + rescaling
        self.scale_weight = nn.Parameter(ember.ones(512) * 20)
        # Multiple Feature maps - page 4, Fig 2 of SSD paper
        self.features = nn.Sequential(*backbone[:maxpool4_pos])  # until conv4_3

        extra = nn.ModuleList(
            [
                _relu_conv(1024, 256, 512, kernel_size=3, padding=1, stride=2),  # conv8_2
                _relu_conv(512, 128, 256, kernel_size=3, padding=1, stride=2),  # conv9_2
                _relu_conv(256, 128, 256, kernel_size=3),  # conv10_2
                _relu_conv(256, 128, 256, kernel_size=3),  # conv11_2
            ]
        )
        if highres:
            extra.append(_relu_conv(256, 128, 256, kernel_size=4))  # conv12_2
        _xavier_init(extra)

        fc = nn.Sequential(
            nn.MaxPool2d(kernel_size=3, stride=1, padding=1, ceil_mode=False),
            nn.Conv2d(in_channels=512, out_channels=1024, kernel_size=3, padding=6, dilation=6),
            nn.ReLU(inplace=True),
            nn.Conv2d(in_channels=1024, out_channels=1024, kernel_size=1),  # FC7
            nn.ReLU(inplace=True),
        )
        _xavier_init(fc)
        extra.insert(0, nn.Sequential(*backbone[maxpool4_pos:-1], fc))  # until conv5_3 + fc7
        self.extra = extra

    def forward(self, x: Tensor) -> dict[str, Tensor]:
        x = self.features(x)
        rescaled = self.scale_weight.view(1, -1, 1, 1) * F.normalize(x)
        output = [rescaled]
        for block in self.extra:
            x = block(x)
            output.append(x)
        return OrderedDict([(str(i), v) for i, v in enumerate(output)])


def _vgg_extractor(backbone: VGG, highres: bool, trainable_layers: int) -> SSDFeatureExtractorVGG:
    features = backbone.features
    # Gather the indices of maxpools: the boundaries of the stages
    stage_indices = [0] + [i for i, b in enumerate(features) if isinstance(b, nn.MaxPool2d)][:-1]
    num_stages = len(stage_indices)
    _assert(
        0 <= trainable_layers <= num_stages,
        f"trainable_layers should be in the range [0, {num_stages}]. "
        f"Instead got {trainable_layers}",
    )
    # find the index of the layer from which we won't freeze
    freeze_before = (
        len(features) if trainable_layers == 0 else stage_indices[num_stages - trainable_layers]
    )
    for b in features[:freeze_before]:
        for parameter in b.parameters():
            parameter.requires_grad_(False)
    return SSDFeatureExtractorVGG(features, highres)


@register_model()
@handle_legacy_interface(
    weights=("pretrained", SSD300_VGG16_Weights.COCO_V1),
    weights_backbone=("pretrained_backbone", VGG16_Weights.IMAGENET1K_FEATURES),
)
def ssd300_vgg16(
    *,
    weights: SSD300_VGG16_Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    weights_backbone: VGG16_Weights | None = VGG16_Weights.IMAGENET1K_FEATURES,
    trainable_backbone_layers: int | None = None,
    **kwargs: Any,
) -> SSD:
    """The SSD300 model from `SSD: Single Shot MultiBox Detector
    <https://arxiv.org/abs/1512.02325>`_ with a VGG-16 backbone; images are resized to
    300x300.

    Args:
        weights (SSD300_VGG16_Weights, optional): The pretrained weights to use.
        progress (bool): If True, displays a progress bar of the download to stderr.
        num_classes (int, optional): number of output classes of the model (including the
            background)
        weights_backbone (VGG16_Weights, optional): The pretrained weights for the backbone.
        trainable_backbone_layers (int, optional): number of trainable (not frozen) layers
            starting from final block, between 0 and 5; 4 when ``None``.
        **kwargs: parameters passed to the :class:`SSD` base class.
    """
    weights = SSD300_VGG16_Weights.verify(weights)
    weights_backbone = VGG16_Weights.verify(weights_backbone)
    if "size" in kwargs:
        warnings.warn(
            "The size of the model is already fixed; ignoring the parameter.", stacklevel=2
        )
        kwargs.pop("size")
    weights_backbone, num_classes, is_trained = _resolve_weights(
        weights, weights_backbone, num_classes
    )
    trainable_backbone_layers = _validate_trainable_layers(
        is_trained, trainable_backbone_layers, 5, 4
    )

    # Use custom backbones more appropriate for SSD
    backbone = _vgg_extractor(
        vgg16(weights=weights_backbone, progress=progress), False, trainable_backbone_layers
    )
    anchor_generator = DefaultBoxGenerator(
        [[2], [2, 3], [2, 3], [2, 3], [2], [2]],
        scales=[0.07, 0.15, 0.33, 0.51, 0.69, 0.87, 1.05],
        steps=[8, 16, 32, 64, 100, 300],
    )
    defaults = {
        # Rescale the input in a way compatible to the backbone
        "image_mean": [0.48235, 0.45882, 0.40784],
        "image_std": [1.0 / 255.0, 1.0 / 255.0, 1.0 / 255.0],  # undo the 0-1 scaling of toTensor
    }
    kwargs = {**defaults, **kwargs}
    model = SSD(backbone, anchor_generator, (300, 300), num_classes, **kwargs)
    return _load_weights(model, weights, progress)
