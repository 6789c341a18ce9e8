"""SSDlite (torchvision's ``models.detection.ssdlite``): depthwise-separable SSD heads, the
MobileNetV3 feature extractor and ``ssdlite320_mobilenet_v3_large``; module names and
state_dict keys match."""

from __future__ import annotations

import warnings
from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from typing import Any

from ember import Tensor, nn

from ...ops.misc import Conv2dNormActivation
from .._api import WeightsEnum, register_model
from .._utils import handle_legacy_interface
from ..mobilenetv3 import MobileNet_V3_Large_Weights, mobilenet_v3_large
from ._utils import _coco_detection_weights, _load_weights, _resolve_weights, retrieve_out_channels
from .anchor_utils import DefaultBoxGenerator
from .backbone_utils import _validate_trainable_layers
from .ssd import SSD, SSDScoringHead

# torchvision's __all__ (the heads and extractors are reached through the module)
__all__ = [
    "SSDLite320_MobileNet_V3_Large_Weights",
    "ssdlite320_mobilenet_v3_large",
]


def _prediction_block(
    in_channels: int, out_channels: int, kernel_size: int, norm_layer: Callable[..., nn.Module]
) -> nn.Sequential:
    """A depthwise conv + norm + ReLU6, then a pointwise conv (with bias) to the outputs."""
    return nn.Sequential(
        Conv2dNormActivation(
            in_channels,
            in_channels,
            kernel_size=kernel_size,
            groups=in_channels,
            norm_layer=norm_layer,
            activation_layer=nn.ReLU6,
        ),
        nn.Conv2d(in_channels, out_channels, 1),
    )


def _extra_block(
    in_channels: int, out_channels: int, norm_layer: Callable[..., nn.Module]
) -> nn.Sequential:
    """1x1 conv to half the outputs, a depthwise 3x3 stride-2 conv, 1x1 conv to the outputs;
    each with norm and ReLU6."""
    mid = out_channels // 2
    block = partial(Conv2dNormActivation, norm_layer=norm_layer, activation_layer=nn.ReLU6)
    return nn.Sequential(
        block(in_channels, mid, kernel_size=1),
        block(mid, mid, kernel_size=3, stride=2, groups=mid),
        block(mid, out_channels, kernel_size=1),
    )


def _normal_init(conv: nn.Module) -> None:
    for layer in conv.modules():
        if isinstance(layer, nn.Conv2d):
            nn.init.normal_(layer.weight, mean=0.0, std=0.03)
            if layer.bias is not None:
                nn.init.constant_(layer.bias, 0.0)


class SSDLiteHead(nn.Module):
    def __init__(
        self,
        in_channels: list[int],
        num_anchors: list[int],
        num_classes: int,
        norm_layer: Callable[..., nn.Module],
    ) -> None:
        super().__init__()
        self.classification_head = SSDLiteClassificationHead(
            in_channels, num_anchors, num_classes, norm_layer
        )
        self.regression_head = SSDLiteRegressionHead(in_channels, num_anchors, norm_layer)

    def forward(self, x: list[Tensor]) -> dict[str, Tensor]:
        return {
            "bbox_regression": self.regression_head(x),
            "cls_logits": self.classification_head(x),
        }


class SSDLiteClassificationHead(SSDScoringHead):
    def __init__(
        self,
        in_channels: list[int],
        num_anchors: list[int],
        num_classes: int,
        norm_layer: Callable[..., nn.Module],
    ) -> None:
        cls_logits = nn.ModuleList(
            _prediction_block(channels, num_classes * anchors, 3, norm_layer)
            for channels, anchors in zip(in_channels, num_anchors)
        )
        _normal_init(cls_logits)
        super().__init__(cls_logits, num_classes)


class SSDLiteRegressionHead(SSDScoringHead):
    def __init__(
        self, in_channels: list[int], num_anchors: list[int], norm_layer: Callable[..., nn.Module]
    ) -> None:
        bbox_reg = nn.ModuleList(
            _prediction_block(channels, 4 * anchors, 3, norm_layer)
            for channels, anchors in zip(in_channels, num_anchors)
        )
        _normal_init(bbox_reg)
        super().__init__(bbox_reg, 4)


class SSDLiteFeatureExtractorMobileNet(nn.Module):
    """MobileNet's features split inside block ``c4_pos`` (after its expansion, the C4
    output), then to the end (C5), then four extra blocks: six feature maps."""

    def __init__(
        self,
        backbone: nn.Module,
        c4_pos: int,
        norm_layer: Callable[..., nn.Module],
        width_mult: float = 1.0,
        min_depth: int = 16,
    ) -> None:
        super().__init__()
        if backbone[c4_pos].use_res_connect:
            raise ValueError("backbone[c4_pos].use_res_connect should be False")
        self.features = nn.Sequential(
            # the first, expansion layer of the C4 block is the output of C4
            nn.Sequential(*backbone[:c4_pos], backbone[c4_pos].block[0]),
            nn.Sequential(backbone[c4_pos].block[1:], *backbone[c4_pos + 1 :]),  # C5
        )

        def get_depth(d: int) -> int:
            return max(min_depth, int(d * width_mult))

        extra = nn.ModuleList(
            [
                _extra_block(backbone[-1].out_channels, get_depth(512), norm_layer),
                _extra_block(get_depth(512), get_depth(256), norm_layer),
                _extra_block(get_depth(256), get_depth(256), norm_layer),
                _extra_block(get_depth(256), get_depth(128), norm_layer),
            ]
        )
        _normal_init(extra)
        self.extra = extra

    def forward(self, x: Tensor) -> dict[str, Tensor]:
        # no ``out_channels`` attribute: SSD finds them with retrieve_out_channels
        output = []
        for block in self.features:
            x = block(x)
            output.append(x)
        for block in self.extra:
            x = block(x)
            output.append(x)
        return OrderedDict([(str(i), v) for i, v in enumerate(output)])


def _mobilenet_extractor(
    backbone: nn.Module, trainable_layers: int, norm_layer: Callable[..., nn.Module]
) -> SSDLiteFeatureExtractorMobileNet:
    features = backbone.features
    # the first and last blocks, and the blocks that reduce resolution, bound the stages
    stage_indices = (
        [0]
        + [i for i, b in enumerate(features) if getattr(b, "_is_cn", False)]
        + [len(features) - 1]
    )
    num_stages = len(stage_indices)
    if not 0 <= trainable_layers <= num_stages:
        # torchvision's words (its message forgets the f of its f-string)
        raise ValueError(
            f"trainable_layers should be in the range [0, {num_stages}], "
            f"instead got {trainable_layers}"
        )
    freeze_before = (
        len(features) if trainable_layers == 0 else stage_indices[num_stages - trainable_layers]
    )
    for b in features[:freeze_before]:
        for parameter in b.parameters():
            parameter.requires_grad_(False)
    return SSDLiteFeatureExtractorMobileNet(features, stage_indices[-2], norm_layer)


class SSDLite320_MobileNet_V3_Large_Weights(WeightsEnum):
    COCO_V1 = _coco_detection_weights(
        "ssdlite320_mobilenet_v3_large_coco-a79551df",
        3440060,
        {"box_map": 21.3},
        0.583,
        13.418,
        "https://github.com/pytorch/vision/tree/main/references/detection"
        "#ssdlite320-mobilenetv3-large",
    )
    DEFAULT = COCO_V1


@register_model()
@handle_legacy_interface(
    weights=("pretrained", SSDLite320_MobileNet_V3_Large_Weights.COCO_V1),
    weights_backbone=("pretrained_backbone", MobileNet_V3_Large_Weights.IMAGENET1K_V1),
)
def ssdlite320_mobilenet_v3_large(
    *,
    weights: SSDLite320_MobileNet_V3_Large_Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    weights_backbone: MobileNet_V3_Large_Weights | None = MobileNet_V3_Large_Weights.IMAGENET1K_V1,
    trainable_backbone_layers: int | None = None,
    norm_layer: Callable[..., nn.Module] | None = None,
    **kwargs: Any,
) -> SSD:
    """SSDlite model architecture with input size 320x320 and a MobileNetV3 Large backbone, as
    described at `Searching for MobileNetV3 <https://arxiv.org/abs/1905.02244>`__ and
    `MobileNetV2: Inverted Residuals and Linear Bottlenecks <https://arxiv.org/abs/1801.04381>`__.

    Args:
        weights (SSDLite320_MobileNet_V3_Large_Weights, optional): The pretrained weights to
            use.
        progress (bool): If True, displays a progress bar of the download to stderr.
        num_classes (int, optional): number of output classes of the model (including the
            background)
        weights_backbone (MobileNet_V3_Large_Weights, optional): The pretrained weights for the
            backbone.
        trainable_backbone_layers (int, optional): number of trainable (not frozen) layers
            starting from final block, between 0 and 6; 6 when ``None``.
        norm_layer (callable, optional): Module specifying the normalization layer to use;
            ``BatchNorm2d(eps=0.001, momentum=0.03)`` by default.
        **kwargs: parameters passed to the :class:`SSD` base class (and, as in torchvision,
            to the MobileNetV3 builder).
    """
    weights = SSDLite320_MobileNet_V3_Large_Weights.verify(weights)
    weights_backbone = MobileNet_V3_Large_Weights.verify(weights_backbone)
    if "size" in kwargs:
        warnings.warn(
            "The size of the model is already fixed; ignoring the parameter.", stacklevel=2
        )
        kwargs.pop("size")
    weights_backbone, num_classes, is_trained = _resolve_weights(
        weights, weights_backbone, num_classes
    )
    trainable_backbone_layers = _validate_trainable_layers(
        is_trained, trainable_backbone_layers, 6, 6
    )

    # Enable reduced tail if no pretrained backbone is selected. See Table 6 of MobileNetV3 paper.
    reduce_tail = weights_backbone is None
    if norm_layer is None:
        norm_layer = partial(nn.BatchNorm2d, eps=0.001, momentum=0.03)

    backbone = mobilenet_v3_large(
        weights=weights_backbone,
        progress=progress,
        norm_layer=norm_layer,
        reduced_tail=reduce_tail,
        **kwargs,
    )
    if weights_backbone is None:
        # Change the default initialization scheme if not pretrained
        _normal_init(backbone)
    backbone = _mobilenet_extractor(backbone, trainable_backbone_layers, norm_layer)

    size = (320, 320)
    anchor_generator = DefaultBoxGenerator(
        [[2, 3] for _ in range(6)], min_ratio=0.2, max_ratio=0.95
    )
    out_channels = retrieve_out_channels(backbone, size)
    num_anchors = anchor_generator.num_anchors_per_location()
    if len(out_channels) != len(anchor_generator.aspect_ratios):
        raise ValueError(
            f"The length of the output channels from the backbone {len(out_channels)} do not "
            "match the length of the anchor generator aspect ratios "
            f"{len(anchor_generator.aspect_ratios)}"
        )
    defaults = {
        "score_thresh": 0.001,
        "nms_thresh": 0.55,
        "detections_per_img": 300,
        "topk_candidates": 300,
        # Rescale the input in a way compatible to the backbone:
        # The following mean/std rescale the data from [0, 1] to [-1, 1]
        "image_mean": [0.5, 0.5, 0.5],
        "image_std": [0.5, 0.5, 0.5],
    }
    kwargs = {**defaults, **kwargs}
    head = SSDLiteHead(out_channels, num_anchors, num_classes, norm_layer)
    model = SSD(backbone, anchor_generator, size, num_classes, head=head, **kwargs)
    return _load_weights(model, weights, progress)
