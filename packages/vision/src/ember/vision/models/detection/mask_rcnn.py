"""Mask R-CNN (torchvision's ``models.detection.mask_rcnn``); module names and state_dict keys
match."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ember import nn

from ...ops import MultiScaleRoIAlign
from ...ops import misc as misc_nn_ops
from .._api import WeightsEnum, register_model
from .._utils import handle_legacy_interface
from ..resnet import ResNet50_Weights
from ._utils import (
    _DOCS_ENHANCED_RECIPE,
    _coco_detection_weights,
    _load_weights,
    _resolve_weights,
    overwrite_eps,
)
from .backbone_utils import _resnet50_fpn_backbone
from .faster_rcnn import (
    _RECIPE,
    FasterRCNN,
    FastRCNNConvFCHead,
    _args_doc,
    _default_anchorgen,
)
from .rpn import RPNHead

__all__ = [
    "MaskRCNN",
    "MaskRCNN_ResNet50_FPN_Weights",
    "MaskRCNN_ResNet50_FPN_V2_Weights",
    "maskrcnn_resnet50_fpn",
    "maskrcnn_resnet50_fpn_v2",
]


class MaskRCNN(FasterRCNN):
    """
    Implements Mask R-CNN: :class:`FasterRCNN` with a mask head on the detections.

    In training, the targets also hold ``masks`` (``UInt8Tensor[N, H, W]``), the segmentation
    binary masks of each instance, and the losses include ``loss_mask``. In eval, each
    detection dict also holds ``masks`` (``FloatTensor[N, 1, H, W]``), the predicted masks
    of each instance in ``0-1`` range (threshold at 0.5 for a binary mask).

    Args:
        (those of :class:`FasterRCNN`, then)
        mask_roi_pool (MultiScaleRoIAlign): crops and resizes the feature maps at the boxes,
            which will be used for the mask head.
        mask_head (nn.Module): takes the cropped feature maps as input
        mask_predictor (nn.Module): takes the output of the mask_head and returns the
            segmentation mask logits
    """

    def __init__(
        self,
        backbone: nn.Module,
        num_classes: int | None = None,
        # transform parameters
        min_size: int = 800,
        max_size: int = 1333,
        image_mean: list[float] | None = None,
        image_std: list[float] | None = None,
        # RPN parameters
        rpn_anchor_generator: Any = None,
        rpn_head: nn.Module | None = None,
        rpn_pre_nms_top_n_train: int = 2000,
        rpn_pre_nms_top_n_test: int = 1000,
        rpn_post_nms_top_n_train: int = 2000,
        rpn_post_nms_top_n_test: int = 1000,
        rpn_nms_thresh: float = 0.7,
        rpn_fg_iou_thresh: float = 0.7,
        rpn_bg_iou_thresh: float = 0.3,
        rpn_batch_size_per_image: int = 256,
        rpn_positive_fraction: float = 0.5,
        rpn_score_thresh: float = 0.0,
        # Box parameters
        box_roi_pool: MultiScaleRoIAlign | None = None,
        box_head: nn.Module | None = None,
        box_predictor: nn.Module | None = None,
        box_score_thresh: float = 0.05,
        box_nms_thresh: float = 0.5,
        box_detections_per_img: int = 100,
        box_fg_iou_thresh: float = 0.5,
        box_bg_iou_thresh: float = 0.5,
        box_batch_size_per_image: int = 512,
        box_positive_fraction: float = 0.25,
        bbox_reg_weights: tuple[float, float, float, float] | None = None,
        # Mask parameters
        mask_roi_pool: MultiScaleRoIAlign | None = None,
        mask_head: nn.Module | None = None,
        mask_predictor: nn.Module | None = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(mask_roi_pool, (MultiScaleRoIAlign, type(None))):
            raise TypeError(
                "mask_roi_pool should be of type MultiScaleRoIAlign or None instead of "
                f"{type(mask_roi_pool)}"
            )
        if num_classes is not None and mask_predictor is not None:
            raise ValueError("num_classes should be None when mask_predictor is specified")

        out_channels = backbone.out_channels
        if mask_roi_pool is None:
            mask_roi_pool = MultiScaleRoIAlign(
                featmap_names=["0", "1", "2", "3"], output_size=14, sampling_ratio=2
            )
        if mask_head is None:
            mask_head = MaskRCNNHeads(out_channels, (256, 256, 256, 256), 1)
        if mask_predictor is None:
            # in_channels == the mask head's last layer
            mask_predictor = MaskRCNNPredictor(256, 256, num_classes)

        super().__init__(
            backbone,
            num_classes,
            min_size,
            max_size,
            image_mean,
            image_std,
            rpn_anchor_generator,
            rpn_head,
            rpn_pre_nms_top_n_train,
            rpn_pre_nms_top_n_test,
            rpn_post_nms_top_n_train,
            rpn_post_nms_top_n_test,
            rpn_nms_thresh,
            rpn_fg_iou_thresh,
            rpn_bg_iou_thresh,
            rpn_batch_size_per_image,
            rpn_positive_fraction,
            rpn_score_thresh,
            box_roi_pool,
            box_head,
            box_predictor,
            box_score_thresh,
            box_nms_thresh,
            box_detections_per_img,
            box_fg_iou_thresh,
            box_bg_iou_thresh,
            box_batch_size_per_image,
            box_positive_fraction,
            bbox_reg_weights,
            **kwargs,
        )
        self.roi_heads.mask_roi_pool = mask_roi_pool
        self.roi_heads.mask_head = mask_head
        self.roi_heads.mask_predictor = mask_predictor


class MaskRCNNHeads(nn.Sequential):
    """The mask head: one 3x3 conv (with ``norm_layer``) and ReLU per entry of ``layers``.

    Args:
        in_channels (int): number of input channels
        layers (list): feature dimensions of each FCN layer
        dilation (int): dilation rate of kernel
        norm_layer (callable, optional): Module specifying the normalization layer to use.
            Default: None
    """

    _version = 2

    def __init__(
        self,
        in_channels: int,
        layers: list[int] | tuple[int, ...],
        dilation: int,
        norm_layer: Callable[..., nn.Module] | None = None,
    ) -> None:
        blocks = []
        next_feature = in_channels
        for layer_features in layers:
            blocks.append(
                misc_nn_ops.Conv2dNormActivation(
                    next_feature,
                    layer_features,
                    kernel_size=3,
                    stride=1,
                    padding=dilation,
                    dilation=dilation,
                    norm_layer=norm_layer,
                )
            )
            next_feature = layer_features
        super().__init__(*blocks)
        for layer in self.modules():
            if isinstance(layer, nn.Conv2d):
                nn.init.kaiming_normal_(layer.weight, mode="fan_out", nonlinearity="relu")
                if layer.bias is not None:
                    nn.init.zeros_(layer.bias)

    def _load_from_state_dict(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ):
        # version 1 checkpoints name the convs "mask_fcn1" ...: now "0.0" ...
        version = local_metadata.get("version", None)
        if version is None or version < 2:
            for i in range(len(self)):
                for kind in ["weight", "bias"]:
                    old_key = f"{prefix}mask_fcn{i + 1}.{kind}"
                    if old_key in state_dict:
                        state_dict[f"{prefix}{i}.0.{kind}"] = state_dict.pop(old_key)
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )


class MaskRCNNPredictor(nn.Sequential):
    """A 2x2 stride-2 transposed conv and ReLU, then a 1x1 conv to one mask logit map per
    class."""

    def __init__(self, in_channels: int, dim_reduced: int, num_classes: int) -> None:
        super().__init__(
            OrderedDict(
                [
                    ("conv5_mask", nn.ConvTranspose2d(in_channels, dim_reduced, 2, 2, 0)),
                    ("relu", nn.ReLU(inplace=True)),
                    ("mask_fcn_logits", nn.Conv2d(dim_reduced, num_classes, 1, 1, 0)),
                ]
            )
        )
        for name, param in self.named_parameters():
            if "weight" in name:
                nn.init.kaiming_normal_(param, mode="fan_out", nonlinearity="relu")


class MaskRCNN_ResNet50_FPN_Weights(WeightsEnum):
    COCO_V1 = _coco_detection_weights(
        "maskrcnn_resnet50_fpn_coco-bf2d0c1e", 44401393, {"box_map": 37.9, "mask_map": 34.6},
        134.38, 169.84, _RECIPE.format("mask-r-cnn"),
    )  # fmt: skip
    DEFAULT = COCO_V1


class MaskRCNN_ResNet50_FPN_V2_Weights(WeightsEnum):
    COCO_V1 = _coco_detection_weights(
        "maskrcnn_resnet50_fpn_v2_coco-73cbd019", 46359409, {"box_map": 47.4, "mask_map": 41.8},
        333.577, 177.219, "https://github.com/pytorch/vision/pull/5773", _DOCS_ENHANCED_RECIPE,
    )  # fmt: skip
    DEFAULT = COCO_V1


@register_model()
@handle_legacy_interface(
    weights=("pretrained", MaskRCNN_ResNet50_FPN_Weights.COCO_V1),
    weights_backbone=("pretrained_backbone", ResNet50_Weights.IMAGENET1K_V1),
)
@_args_doc("MaskRCNN_ResNet50_FPN_Weights", "ResNet50_Weights", "MaskRCNN")
def maskrcnn_resnet50_fpn(
    *,
    weights: MaskRCNN_ResNet50_FPN_Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    weights_backbone: ResNet50_Weights | None = ResNet50_Weights.IMAGENET1K_V1,
    trainable_backbone_layers: int | None = None,
    **kwargs: Any,
) -> MaskRCNN:
    """Mask R-CNN model with a ResNet-50-FPN backbone from the `Mask R-CNN
    <https://arxiv.org/abs/1703.06870>`_ paper.

    See :class:`MaskRCNN` for the inputs and outputs in training and eval."""
    weights = MaskRCNN_ResNet50_FPN_Weights.verify(weights)
    weights_backbone = ResNet50_Weights.verify(weights_backbone)
    weights_backbone, num_classes, is_trained = _resolve_weights(
        weights, weights_backbone, num_classes
    )

    backbone = _resnet50_fpn_backbone(
        weights_backbone, progress, is_trained, trainable_backbone_layers
    )
    model = MaskRCNN(backbone, num_classes=num_classes, **kwargs)
    _load_weights(model, weights, progress)
    if weights == MaskRCNN_ResNet50_FPN_Weights.COCO_V1:
        overwrite_eps(model, 0.0)
    return model


@register_model()
@handle_legacy_interface(
    weights=("pretrained", MaskRCNN_ResNet50_FPN_V2_Weights.COCO_V1),
    weights_backbone=("pretrained_backbone", ResNet50_Weights.IMAGENET1K_V1),
)
@_args_doc("MaskRCNN_ResNet50_FPN_V2_Weights", "ResNet50_Weights", "MaskRCNN")
def maskrcnn_resnet50_fpn_v2(
    *,
    weights: MaskRCNN_ResNet50_FPN_V2_Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    weights_backbone: ResNet50_Weights | None = None,
    trainable_backbone_layers: int | None = None,
    **kwargs: Any,
) -> MaskRCNN:
    """Improved Mask R-CNN model with a ResNet-50-FPN backbone from the `Benchmarking
    Detection Transfer Learning with Vision Transformers <https://arxiv.org/abs/2111.11429>`_
    paper."""
    weights = MaskRCNN_ResNet50_FPN_V2_Weights.verify(weights)
    weights_backbone = ResNet50_Weights.verify(weights_backbone)
    weights_backbone, num_classes, is_trained = _resolve_weights(
        weights, weights_backbone, num_classes
    )

    backbone = _resnet50_fpn_backbone(
        weights_backbone, progress, is_trained, trainable_backbone_layers,
        frozen_bn=False, norm_layer=nn.BatchNorm2d,
    )
    rpn_anchor_generator = _default_anchorgen()
    rpn_head = RPNHead(
        backbone.out_channels, rpn_anchor_generator.num_anchors_per_location()[0], conv_depth=2
    )
    box_head = FastRCNNConvFCHead(
        (backbone.out_channels, 7, 7), [256, 256, 256, 256], [1024], norm_layer=nn.BatchNorm2d
    )
    mask_head = MaskRCNNHeads(
        backbone.out_channels, [256, 256, 256, 256], 1, norm_layer=nn.BatchNorm2d
    )
    model = MaskRCNN(
        backbone,
        num_classes=num_classes,
        rpn_anchor_generator=rpn_anchor_generator,
        rpn_head=rpn_head,
        box_head=box_head,
        mask_head=mask_head,
        **kwargs,
    )
    _load_weights(model, weights, progress)
    return model
