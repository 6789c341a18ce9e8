"""Faster R-CNN (torchvision's ``models.detection.faster_rcnn``); module names and state_dict
keys match."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember import Tensor, nn
from ember.nn import functional as F

from ...ops import MultiScaleRoIAlign
from ...ops import misc as misc_nn_ops
from .._api import WeightsEnum, register_model
from .._utils import handle_legacy_interface
from ..mobilenetv3 import MobileNet_V3_Large_Weights, mobilenet_v3_large
from ..resnet import ResNet50_Weights
from ._utils import (
    _DOCS_ENHANCED_RECIPE,
    _assert,
    _coco_detection_weights,
    _load_weights,
    _resolve_weights,
    overwrite_eps,
)
from .anchor_utils import AnchorGenerator
from .backbone_utils import _mobilenet_extractor, _resnet50_fpn_backbone, _validate_trainable_layers
from .generalized_rcnn import GeneralizedRCNN
from .roi_heads import RoIHeads
from .rpn import RegionProposalNetwork, RPNHead
from .transform import GeneralizedRCNNTransform

__all__ = [
    "FasterRCNN",
    "FasterRCNN_ResNet50_FPN_Weights",
    "FasterRCNN_ResNet50_FPN_V2_Weights",
    "FasterRCNN_MobileNet_V3_Large_FPN_Weights",
    "FasterRCNN_MobileNet_V3_Large_320_FPN_Weights",
    "fasterrcnn_resnet50_fpn",
    "fasterrcnn_resnet50_fpn_v2",
    "fasterrcnn_mobilenet_v3_large_fpn",
    "fasterrcnn_mobilenet_v3_large_320_fpn",
]


def _default_anchorgen() -> AnchorGenerator:
    """One anchor size per FPN level (32 ... 512), three aspect ratios each."""
    anchor_sizes = ((32,), (64,), (128,), (256,), (512,))
    aspect_ratios = ((0.5, 1.0, 2.0),) * len(anchor_sizes)
    return AnchorGenerator(anchor_sizes, aspect_ratios)


class FasterRCNN(GeneralizedRCNN):
    """
    Implements Faster R-CNN.

    The input to the model is a list of tensors, each of shape [C, H, W], one per image, in
    the 0-1 range; the images may have different sizes.

    In training, the model takes the images and the targets (a list of dicts) with:
        - boxes (``FloatTensor[N, 4]``): the ground-truth boxes in ``[x1, y1, x2, y2]`` format,
          with ``0 <= x1 < x2 <= W`` and ``0 <= y1 < y2 <= H``.
        - labels (Int64Tensor[N]): the class label for each ground-truth box
    and returns a Dict[Tensor] of the classification and regression losses of the RPN and
    the R-CNN.

    In eval, it takes the images only and returns one dict per image with:
        - boxes (``FloatTensor[N, 4]``): the predicted boxes in ``[x1, y1, x2, y2]`` format.
        - labels (Int64Tensor[N]): the predicted labels for each image
        - scores (Tensor[N]): the scores or each prediction

    Args:
        backbone (nn.Module): the network used to compute the features for the model. It
            should have an ``out_channels`` attribute (the same for all feature maps) and
            return a single Tensor or an OrderedDict[Tensor].
        num_classes (int): number of output classes of the model (including the background).
            If box_predictor is specified, num_classes should be None.
        min_size (int): the shorter edge the images are rescaled to (unless the longer edge
            would then exceed ``max_size``).
        max_size (int): See ``min_size``.
        image_mean (Tuple[float, float, float]): mean values used for input normalization.
        image_std (Tuple[float, float, float]): std values used for input normalization.
        rpn_anchor_generator (AnchorGenerator): generates the anchors of the feature maps.
        rpn_head (nn.Module): computes the objectness and regression deltas of the RPN
        rpn_pre_nms_top_n_train (int): proposals kept before NMS during training
        rpn_pre_nms_top_n_test (int): proposals kept before NMS during testing
        rpn_post_nms_top_n_train (int): proposals kept after NMS during training
        rpn_post_nms_top_n_test (int): proposals kept after NMS during testing
        rpn_nms_thresh (float): NMS threshold used for postprocessing the RPN proposals
        rpn_fg_iou_thresh (float): minimum anchor / GT IoU of a positive anchor
        rpn_bg_iou_thresh (float): maximum anchor / GT IoU of a negative anchor
        rpn_batch_size_per_image (int): anchors sampled per image for the RPN's loss
        rpn_positive_fraction (float): proportion of positive anchors in that sample
        rpn_score_thresh (float): only return proposals with an objectness score greater
            than rpn_score_thresh
        box_roi_pool (MultiScaleRoIAlign): crops and resizes the feature maps at the boxes
        box_head (nn.Module): takes the cropped feature maps
        box_predictor (nn.Module): takes the output of box_head and returns the
            classification logits and box regression deltas.
        box_score_thresh (float): during inference, only return proposals with a
            classification score greater than box_score_thresh
        box_nms_thresh (float): NMS threshold for the prediction head, in inference
        box_detections_per_img (int): maximum number of detections per image, for all classes.
        box_fg_iou_thresh (float): minimum proposal / GT IoU of a positive proposal
        box_bg_iou_thresh (float): maximum proposal / GT IoU of a negative proposal
        box_batch_size_per_image (int): proposals sampled per image for the head's loss
        box_positive_fraction (float): proportion of positive proposals in that sample
        bbox_reg_weights (Tuple[float, float, float, float]): weights for the encoding /
            decoding of the bounding boxes
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
        rpn_anchor_generator: AnchorGenerator | None = None,
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
        **kwargs: Any,
    ) -> None:
        if not hasattr(backbone, "out_channels"):
            raise ValueError(
                "backbone should contain an attribute out_channels "
                "specifying the number of output channels (assumed to be the "
                "same for all the levels)"
            )
        if not isinstance(rpn_anchor_generator, (AnchorGenerator, type(None))):
            raise TypeError(
                "rpn_anchor_generator should be of type AnchorGenerator or None instead of "
                f"{type(rpn_anchor_generator)}"
            )
        if not isinstance(box_roi_pool, (MultiScaleRoIAlign, type(None))):
            raise TypeError(
                "box_roi_pool should be of type MultiScaleRoIAlign or None instead of "
                f"{type(box_roi_pool)}"
            )
        if num_classes is not None:
            if box_predictor is not None:
                raise ValueError("num_classes should be None when box_predictor is specified")
        elif box_predictor is None:
            raise ValueError("num_classes should not be None when box_predictor is not specified")

        out_channels = backbone.out_channels

        if rpn_anchor_generator is None:
            rpn_anchor_generator = _default_anchorgen()
        if rpn_head is None:
            rpn_head = RPNHead(out_channels, rpn_anchor_generator.num_anchors_per_location()[0])
        rpn = RegionProposalNetwork(
            rpn_anchor_generator,
            rpn_head,
            rpn_fg_iou_thresh,
            rpn_bg_iou_thresh,
            rpn_batch_size_per_image,
            rpn_positive_fraction,
            {"training": rpn_pre_nms_top_n_train, "testing": rpn_pre_nms_top_n_test},
            {"training": rpn_post_nms_top_n_train, "testing": rpn_post_nms_top_n_test},
            rpn_nms_thresh,
            score_thresh=rpn_score_thresh,
        )

        if box_roi_pool is None:
            box_roi_pool = MultiScaleRoIAlign(
                featmap_names=["0", "1", "2", "3"], output_size=7, sampling_ratio=2
            )
        if box_head is None:
            resolution = box_roi_pool.output_size[0]
            box_head = TwoMLPHead(out_channels * resolution**2, 1024)
        if box_predictor is None:
            box_predictor = FastRCNNPredictor(1024, num_classes)

        roi_heads = RoIHeads(
            box_roi_pool,
            box_head,
            box_predictor,
            box_fg_iou_thresh,
            box_bg_iou_thresh,
            box_batch_size_per_image,
            box_positive_fraction,
            bbox_reg_weights,
            box_score_thresh,
            box_nms_thresh,
            box_detections_per_img,
        )

        if image_mean is None:
            image_mean = [0.485, 0.456, 0.406]
        if image_std is None:
            image_std = [0.229, 0.224, 0.225]
        transform = GeneralizedRCNNTransform(min_size, max_size, image_mean, image_std, **kwargs)

        super().__init__(backbone, rpn, roi_heads, transform)


class TwoMLPHead(nn.Module):
    """
    Standard heads for FPN-based models: two fully connected layers with ReLU.

    Args:
        in_channels (int): number of input channels
        representation_size (int): size of the intermediate representation
    """

    def __init__(self, in_channels: int, representation_size: int) -> None:
        super().__init__()
        self.fc6 = nn.Linear(in_channels, representation_size)
        self.fc7 = nn.Linear(representation_size, representation_size)

    def forward(self, x: Tensor) -> Tensor:
        x = x.flatten(start_dim=1)
        x = F.relu(self.fc6(x))
        return F.relu(self.fc7(x))


class FastRCNNConvFCHead(nn.Sequential):
    """A box head of 3x3 convs (with ``norm_layer`` and ReLU) then fully connected layers
    with ReLU (Faster R-CNN v2's).

    Args:
        input_size (Tuple[int, int, int]): the input size in CHW format.
        conv_layers (list): feature dimensions of each Convolution layer
        fc_layers (list): feature dimensions of each FCN layer
        norm_layer (callable, optional): Module specifying the normalization layer to use.
            Default: None
    """

    def __init__(
        self,
        input_size: tuple[int, int, int],
        conv_layers: list[int],
        fc_layers: list[int],
        norm_layer: Callable[..., nn.Module] | None = None,
    ) -> None:
        in_channels, in_height, in_width = input_size

        blocks: list[nn.Module] = []
        previous_channels = in_channels
        for current_channels in conv_layers:
            blocks.append(
                misc_nn_ops.Conv2dNormActivation(
                    previous_channels, current_channels, norm_layer=norm_layer
                )
            )
            previous_channels = current_channels
        blocks.append(nn.Flatten())
        previous_channels = previous_channels * in_height * in_width
        for current_channels in fc_layers:
            blocks.append(nn.Linear(previous_channels, current_channels))
            blocks.append(nn.ReLU(inplace=True))
            previous_channels = current_channels

        super().__init__(*blocks)
        for layer in self.modules():
            if isinstance(layer, nn.Conv2d):
                nn.init.kaiming_normal_(layer.weight, mode="fan_out", nonlinearity="relu")
                if layer.bias is not None:
                    nn.init.zeros_(layer.bias)


class FastRCNNPredictor(nn.Module):
    """
    Standard classification + bounding box regression layers for Fast R-CNN.

    Args:
        in_channels (int): number of input channels
        num_classes (int): number of output classes (including background)
    """

    def __init__(self, in_channels: int, num_classes: int) -> None:
        super().__init__()
        self.cls_score = nn.Linear(in_channels, num_classes)
        self.bbox_pred = nn.Linear(in_channels, num_classes * 4)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        if x.dim() == 4:
            _assert(
                list(x.shape[2:]) == [1, 1],
                "x has the wrong shape, expecting the last two dimensions to be [1,1] instead "
                f"of {list(x.shape[2:])}",
            )
        x = x.flatten(start_dim=1)
        return self.cls_score(x), self.bbox_pred(x)


_RECIPE = "https://github.com/pytorch/vision/tree/main/references/detection#{}"


class FasterRCNN_ResNet50_FPN_Weights(WeightsEnum):
    COCO_V1 = _coco_detection_weights(
        "fasterrcnn_resnet50_fpn_coco-258fb6c6", 41755286, {"box_map": 37.0}, 134.38, 159.743,
        _RECIPE.format("faster-r-cnn-resnet-50-fpn"),
    )  # fmt: skip
    DEFAULT = COCO_V1


class FasterRCNN_ResNet50_FPN_V2_Weights(WeightsEnum):
    COCO_V1 = _coco_detection_weights(
        "fasterrcnn_resnet50_fpn_v2_coco-dd69338a", 43712278, {"box_map": 46.7}, 280.371,
        167.104, "https://github.com/pytorch/vision/pull/5763", _DOCS_ENHANCED_RECIPE,
    )  # fmt: skip
    DEFAULT = COCO_V1


class FasterRCNN_MobileNet_V3_Large_FPN_Weights(WeightsEnum):
    COCO_V1 = _coco_detection_weights(
        "fasterrcnn_mobilenet_v3_large_fpn-fb6a3cc7", 19386354, {"box_map": 32.8}, 4.494,
        74.239, _RECIPE.format("faster-r-cnn-mobilenetv3-large-fpn"),
    )  # fmt: skip
    DEFAULT = COCO_V1


class FasterRCNN_MobileNet_V3_Large_320_FPN_Weights(WeightsEnum):
    COCO_V1 = _coco_detection_weights(
        "fasterrcnn_mobilenet_v3_large_320_fpn-907ea3f9", 19386354, {"box_map": 22.8}, 0.719,
        74.239, _RECIPE.format("faster-r-cnn-mobilenetv3-large-320-fpn"),
    )  # fmt: skip
    DEFAULT = COCO_V1


_ARGS_DOC = """

    Args:
        weights (:class:`~ember.vision.models.detection.{weights}`, optional): The pretrained
            weights to use. By default, no pre-trained weights are used.
        progress (bool, optional): If True, displays a progress bar of the download to stderr.
            Default is True.
        num_classes (int, optional): number of output classes of the model (including the
            background)
        weights_backbone (:class:`~ember.vision.models.{backbone}`, optional): The pretrained
            weights for the backbone.
        trainable_backbone_layers (int, optional): number of trainable (not frozen) layers
            starting from final block. Valid values are between 0 and {max_layers}, with
            {max_layers} meaning all backbone layers are trainable. If ``None`` is passed (the
            default) this value is set to 3.
        **kwargs: parameters passed to the ``{model}`` base class.

    .. autoclass:: ember.vision.models.detection.{weights}
        :members:
"""


def _args_doc(weights: str, backbone: str, model: str, max_layers: int = 5) -> Callable:
    """Complete a detection builder's docstring with the ``Args`` the builders share."""

    def decorate(fn: Callable) -> Callable:
        fn.__doc__ = (fn.__doc__ or "") + _ARGS_DOC.format(
            weights=weights, backbone=backbone, model=model, max_layers=max_layers
        )
        return fn

    return decorate


@register_model()
@handle_legacy_interface(
    weights=("pretrained", FasterRCNN_ResNet50_FPN_Weights.COCO_V1),
    weights_backbone=("pretrained_backbone", ResNet50_Weights.IMAGENET1K_V1),
)
@_args_doc("FasterRCNN_ResNet50_FPN_Weights", "ResNet50_Weights", "FasterRCNN")
def fasterrcnn_resnet50_fpn(
    *,
    weights: FasterRCNN_ResNet50_FPN_Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    weights_backbone: ResNet50_Weights | None = ResNet50_Weights.IMAGENET1K_V1,
    trainable_backbone_layers: int | None = None,
    **kwargs: Any,
) -> FasterRCNN:
    """Faster R-CNN model with a ResNet-50-FPN backbone from the `Faster R-CNN: Towards
    Real-Time Object Detection with Region Proposal Networks
    <https://arxiv.org/abs/1506.01497>`__ paper.

    See :class:`FasterRCNN` for the inputs and outputs in training and eval."""
    weights = FasterRCNN_ResNet50_FPN_Weights.verify(weights)
    weights_backbone = ResNet50_Weights.verify(weights_backbone)
    weights_backbone, num_classes, is_trained = _resolve_weights(
        weights, weights_backbone, num_classes
    )

    backbone = _resnet50_fpn_backbone(
        weights_backbone, progress, is_trained, trainable_backbone_layers
    )
    model = FasterRCNN(backbone, num_classes=num_classes, **kwargs)
    _load_weights(model, weights, progress)
    if weights == FasterRCNN_ResNet50_FPN_Weights.COCO_V1:
        overwrite_eps(model, 0.0)
    return model


@register_model()
@handle_legacy_interface(
    weights=("pretrained", FasterRCNN_ResNet50_FPN_V2_Weights.COCO_V1),
    weights_backbone=("pretrained_backbone", ResNet50_Weights.IMAGENET1K_V1),
)
@_args_doc("FasterRCNN_ResNet50_FPN_V2_Weights", "ResNet50_Weights", "FasterRCNN")
def fasterrcnn_resnet50_fpn_v2(
    *,
    weights: FasterRCNN_ResNet50_FPN_V2_Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    weights_backbone: ResNet50_Weights | None = None,
    trainable_backbone_layers: int | None = None,
    **kwargs: Any,
) -> FasterRCNN:
    """An improved Faster R-CNN model with a ResNet-50-FPN backbone from the `Benchmarking
    Detection Transfer Learning with Vision Transformers <https://arxiv.org/abs/2111.11429>`__
    paper."""
    weights = FasterRCNN_ResNet50_FPN_V2_Weights.verify(weights)
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
    model = FasterRCNN(
        backbone,
        num_classes=num_classes,
        rpn_anchor_generator=rpn_anchor_generator,
        rpn_head=rpn_head,
        box_head=box_head,
        **kwargs,
    )
    _load_weights(model, weights, progress)
    return model


def _fasterrcnn_mobilenet_v3_large_fpn(
    *,
    weights: FasterRCNN_MobileNet_V3_Large_FPN_Weights
    | FasterRCNN_MobileNet_V3_Large_320_FPN_Weights
    | None,
    progress: bool,
    num_classes: int | None,
    weights_backbone: MobileNet_V3_Large_Weights | None,
    trainable_backbone_layers: int | None,
    **kwargs: Any,
) -> FasterRCNN:
    weights_backbone, num_classes, is_trained = _resolve_weights(
        weights, weights_backbone, num_classes
    )
    trainable_backbone_layers = _validate_trainable_layers(
        is_trained, trainable_backbone_layers, 6, 3
    )
    norm_layer = misc_nn_ops.FrozenBatchNorm2d if is_trained else nn.BatchNorm2d

    backbone = mobilenet_v3_large(
        weights=weights_backbone, progress=progress, norm_layer=norm_layer
    )
    backbone = _mobilenet_extractor(backbone, True, trainable_backbone_layers)
    # all five anchor sizes on each of the three levels
    anchor_sizes = ((32, 64, 128, 256, 512),) * 3
    aspect_ratios = ((0.5, 1.0, 2.0),) * len(anchor_sizes)
    model = FasterRCNN(
        backbone,
        num_classes,
        rpn_anchor_generator=AnchorGenerator(anchor_sizes, aspect_ratios),
        **kwargs,
    )
    _load_weights(model, weights, progress)
    return model


@register_model()
@handle_legacy_interface(
    weights=("pretrained", FasterRCNN_MobileNet_V3_Large_320_FPN_Weights.COCO_V1),
    weights_backbone=("pretrained_backbone", MobileNet_V3_Large_Weights.IMAGENET1K_V1),
)
@_args_doc(
    "FasterRCNN_MobileNet_V3_Large_320_FPN_Weights", "MobileNet_V3_Large_Weights", "FasterRCNN",
    max_layers=6,
)  # fmt: skip
def fasterrcnn_mobilenet_v3_large_320_fpn(
    *,
    weights: FasterRCNN_MobileNet_V3_Large_320_FPN_Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    weights_backbone: MobileNet_V3_Large_Weights | None = MobileNet_V3_Large_Weights.IMAGENET1K_V1,
    trainable_backbone_layers: int | None = None,
    **kwargs: Any,
) -> FasterRCNN:
    """Low resolution Faster R-CNN model with a MobileNetV3-Large backbone tuned for mobile
    use cases (images resized to 320 on their shorter side)."""
    weights = FasterRCNN_MobileNet_V3_Large_320_FPN_Weights.verify(weights)
    weights_backbone = MobileNet_V3_Large_Weights.verify(weights_backbone)
    defaults = {
        "min_size": 320,
        "max_size": 640,
        "rpn_pre_nms_top_n_test": 150,
        "rpn_post_nms_top_n_test": 150,
        "rpn_score_thresh": 0.05,
    }
    return _fasterrcnn_mobilenet_v3_large_fpn(
        weights=weights,
        progress=progress,
        num_classes=num_classes,
        weights_backbone=weights_backbone,
        trainable_backbone_layers=trainable_backbone_layers,
        **{**defaults, **kwargs},
    )


@register_model()
@handle_legacy_interface(
    weights=("pretrained", FasterRCNN_MobileNet_V3_Large_FPN_Weights.COCO_V1),
    weights_backbone=("pretrained_backbone", MobileNet_V3_Large_Weights.IMAGENET1K_V1),
)
@_args_doc(
    "FasterRCNN_MobileNet_V3_Large_FPN_Weights", "MobileNet_V3_Large_Weights", "FasterRCNN",
    max_layers=6,
)  # fmt: skip
def fasterrcnn_mobilenet_v3_large_fpn(
    *,
    weights: FasterRCNN_MobileNet_V3_Large_FPN_Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    weights_backbone: MobileNet_V3_Large_Weights | None = MobileNet_V3_Large_Weights.IMAGENET1K_V1,
    trainable_backbone_layers: int | None = None,
    **kwargs: Any,
) -> FasterRCNN:
    """Constructs a high resolution Faster R-CNN model with a MobileNetV3-Large FPN backbone."""
    weights = FasterRCNN_MobileNet_V3_Large_FPN_Weights.verify(weights)
    weights_backbone = MobileNet_V3_Large_Weights.verify(weights_backbone)
    defaults = {"rpn_score_thresh": 0.05}
    return _fasterrcnn_mobilenet_v3_large_fpn(
        weights=weights,
        progress=progress,
        num_classes=num_classes,
        weights_backbone=weights_backbone,
        trainable_backbone_layers=trainable_backbone_layers,
        **{**defaults, **kwargs},
    )
