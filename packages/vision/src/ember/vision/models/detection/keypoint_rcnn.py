"""Keypoint R-CNN (torchvision's ``models.detection.keypoint_rcnn``); module names and
state_dict keys match."""

from __future__ import annotations

from typing import Any

from ember import Tensor, nn
from ember.nn import functional as F

from ...ops import MultiScaleRoIAlign
from .._api import WeightsEnum, register_model
from .._utils import _ovewrite_value_param, handle_legacy_interface
from ..resnet import ResNet50_Weights
from ._utils import (
    _COCO_PERSON_CATEGORIES,
    _COCO_PERSON_KEYPOINT_NAMES,
    _coco_detection_weights,
    _load_weights,
    overwrite_eps,
)
from .backbone_utils import _resnet50_fpn_backbone
from .faster_rcnn import _RECIPE, FasterRCNN, _args_doc

__all__ = [
    "KeypointRCNN",
    "KeypointRCNN_ResNet50_FPN_Weights",
    "keypointrcnn_resnet50_fpn",
]


class KeypointRCNN(FasterRCNN):
    """
    Implements Keypoint R-CNN: :class:`FasterRCNN` with a keypoint head on the detections.

    In training, the targets also hold ``keypoints`` (``FloatTensor[N, K, 3]``): the K
    keypoints ``[x, y, visibility]`` of each instance (visibility=0 means invisible), and the
    losses include ``loss_keypoint``. In eval, each detection dict also holds ``keypoints``
    (``FloatTensor[N, K, 3]``) and ``keypoints_scores`` (``FloatTensor[N, K]``).

    Args:
        (those of :class:`FasterRCNN`, ``min_size`` defaulting to a multi-scale training
        tuple ``(640, 672, 704, 736, 768, 800)``, then)
        keypoint_roi_pool (MultiScaleRoIAlign): crops and resizes the feature maps at the
            boxes, which will be used for the keypoint head.
        keypoint_head (nn.Module): takes the cropped feature maps as input
        keypoint_predictor (nn.Module): takes the output of the keypoint_head and returns the
            heatmap logits
        num_keypoints (int): number of keypoints of each instance (default 17).
    """

    def __init__(
        self,
        backbone: nn.Module,
        num_classes: int | None = None,
        # transform parameters
        min_size: int | tuple[int, ...] | None = None,
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
        # keypoint parameters
        keypoint_roi_pool: MultiScaleRoIAlign | None = None,
        keypoint_head: nn.Module | None = None,
        keypoint_predictor: nn.Module | None = None,
        num_keypoints: int | None = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(keypoint_roi_pool, (MultiScaleRoIAlign, type(None))):
            raise TypeError(
                "keypoint_roi_pool should be of type MultiScaleRoIAlign or None instead of "
                f"{type(keypoint_roi_pool)}"
            )
        if min_size is None:
            min_size = (640, 672, 704, 736, 768, 800)

        if num_keypoints is not None:
            if keypoint_predictor is not None:
                raise ValueError(
                    "num_keypoints should be None when keypoint_predictor is specified"
                )
        else:
            num_keypoints = 17

        out_channels = backbone.out_channels
        if keypoint_roi_pool is None:
            keypoint_roi_pool = MultiScaleRoIAlign(
                featmap_names=["0", "1", "2", "3"], output_size=14, sampling_ratio=2
            )
        if keypoint_head is None:
            keypoint_head = KeypointRCNNHeads(out_channels, tuple(512 for _ in range(8)))
        if keypoint_predictor is None:
            # in_channels == the keypoint head's last layer
            keypoint_predictor = KeypointRCNNPredictor(512, num_keypoints)

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
        self.roi_heads.keypoint_roi_pool = keypoint_roi_pool
        self.roi_heads.keypoint_head = keypoint_head
        self.roi_heads.keypoint_predictor = keypoint_predictor


class KeypointRCNNHeads(nn.Sequential):
    """The keypoint head: a 3x3 conv and ReLU per entry of ``layers``."""

    def __init__(self, in_channels: int, layers: tuple[int, ...] | list[int]) -> None:
        d: list[nn.Module] = []
        next_feature = in_channels
        for out_channels in layers:
            d.append(nn.Conv2d(next_feature, out_channels, 3, stride=1, padding=1))
            d.append(nn.ReLU(inplace=True))
            next_feature = out_channels
        super().__init__(*d)
        for m in self.children():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                nn.init.constant_(m.bias, 0)


class KeypointRCNNPredictor(nn.Module):
    """A 4x4 stride-2 transposed conv to one heatmap per keypoint, upsampled bilinearly by 2."""

    def __init__(self, in_channels: int, num_keypoints: int) -> None:
        super().__init__()
        deconv_kernel = 4
        self.kps_score_lowres = nn.ConvTranspose2d(
            in_channels,
            num_keypoints,
            deconv_kernel,
            stride=2,
            padding=deconv_kernel // 2 - 1,
        )
        nn.init.kaiming_normal_(self.kps_score_lowres.weight, mode="fan_out", nonlinearity="relu")
        nn.init.constant_(self.kps_score_lowres.bias, 0)
        self.up_scale = 2
        self.out_channels = num_keypoints

    def forward(self, x: Tensor) -> Tensor:
        x = self.kps_score_lowres(x)
        return F.interpolate(
            x,
            scale_factor=float(self.up_scale),
            mode="bilinear",
            align_corners=False,
            recompute_scale_factor=False,
        )


_DOCS_LEGACY = """
                These weights were produced by following a similar training recipe as on the paper but use a checkpoint
                from an early epoch.
            """  # noqa: E501

_KEYPOINT_META = {
    "categories": _COCO_PERSON_CATEGORIES,
    "keypoint_names": _COCO_PERSON_KEYPOINT_NAMES,
}


class KeypointRCNN_ResNet50_FPN_Weights(WeightsEnum):
    COCO_LEGACY = _coco_detection_weights(
        "keypointrcnn_resnet50_fpn_coco-9f466800", 59137258, {"box_map": 50.6, "kp_map": 61.1},
        133.924, 226.054, "https://github.com/pytorch/vision/issues/1606",
        _DOCS_LEGACY,
        **_KEYPOINT_META,
    )  # fmt: skip
    COCO_V1 = _coco_detection_weights(
        "keypointrcnn_resnet50_fpn_coco-fc266e95", 59137258, {"box_map": 54.6, "kp_map": 65.0},
        137.42, 226.054, _RECIPE.format("keypoint-r-cnn"), **_KEYPOINT_META,
    )  # fmt: skip
    DEFAULT = COCO_V1


@register_model()
@handle_legacy_interface(
    weights=(
        "pretrained",
        lambda kwargs: (
            KeypointRCNN_ResNet50_FPN_Weights.COCO_LEGACY
            if kwargs["pretrained"] == "legacy"
            else KeypointRCNN_ResNet50_FPN_Weights.COCO_V1
        ),
    ),
    weights_backbone=("pretrained_backbone", ResNet50_Weights.IMAGENET1K_V1),
)
@_args_doc("KeypointRCNN_ResNet50_FPN_Weights", "ResNet50_Weights", "KeypointRCNN")
def keypointrcnn_resnet50_fpn(
    *,
    weights: KeypointRCNN_ResNet50_FPN_Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    num_keypoints: int | None = None,
    weights_backbone: ResNet50_Weights | None = ResNet50_Weights.IMAGENET1K_V1,
    trainable_backbone_layers: int | None = None,
    **kwargs: Any,
) -> KeypointRCNN:
    """Constructs a Keypoint R-CNN model with a ResNet-50-FPN backbone, from the `Mask R-CNN
    <https://arxiv.org/abs/1703.06870>`__ paper (``num_keypoints``: number of keypoints,
    default 17; ``num_classes`` defaults to 2, person and no person).

    See :class:`KeypointRCNN` for the inputs and outputs in training and eval."""
    weights = KeypointRCNN_ResNet50_FPN_Weights.verify(weights)
    weights_backbone = ResNet50_Weights.verify(weights_backbone)

    if weights is not None:
        weights_backbone = None
        num_classes = _ovewrite_value_param(
            "num_classes", num_classes, len(weights.meta["categories"])
        )
        num_keypoints = _ovewrite_value_param(
            "num_keypoints", num_keypoints, len(weights.meta["keypoint_names"])
        )
    else:
        if num_classes is None:
            num_classes = 2
        if num_keypoints is None:
            num_keypoints = 17
    is_trained = weights is not None or weights_backbone is not None

    backbone = _resnet50_fpn_backbone(
        weights_backbone, progress, is_trained, trainable_backbone_layers
    )
    model = KeypointRCNN(backbone, num_classes, num_keypoints=num_keypoints, **kwargs)
    _load_weights(model, weights, progress)
    if weights == KeypointRCNN_ResNet50_FPN_Weights.COCO_V1:
        overwrite_eps(model, 0.0)
    return model
