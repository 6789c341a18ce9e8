"""DeepLabV3 (torchvision's ``models.segmentation.deeplabv3``); module names and state_dict keys
match."""

from collections.abc import Sequence
from typing import Any

import ember
from ember import Tensor, nn
from ember.nn import functional as F

from .._api import WeightsEnum, register_model
from .._utils import IntermediateLayerGetter, handle_legacy_interface
from ..mobilenetv3 import MobileNet_V3_Large_Weights, MobileNetV3, mobilenet_v3_large
from ..resnet import ResNet, ResNet50_Weights, ResNet101_Weights, resnet50, resnet101
from ._utils import (
    _args_doc,
    _coco_voc_weights,
    _load_weights,
    _resolve_params,
    _SimpleSegmentationModel,
    _stage_indices,
)
from .fcn import FCNHead

__all__ = [
    "DeepLabV3",
    "DeepLabV3_ResNet50_Weights",
    "DeepLabV3_ResNet101_Weights",
    "DeepLabV3_MobileNet_V3_Large_Weights",
    "deeplabv3_mobilenet_v3_large",
    "deeplabv3_resnet50",
    "deeplabv3_resnet101",
]


class DeepLabV3(_SimpleSegmentationModel):
    """
    Implements DeepLabV3 model from
    `"Rethinking Atrous Convolution for Semantic Image Segmentation"
    <https://arxiv.org/abs/1706.05587>`_.

    Args:
        backbone (nn.Module): the network used to compute the features for the model.
            The backbone should return an OrderedDict[Tensor], with the key being
            "out" for the last feature map used, and "aux" if an auxiliary classifier
            is used.
        classifier (nn.Module): module that takes the "out" element returned from
            the backbone and returns a dense prediction.
        aux_classifier (nn.Module, optional): auxiliary classifier used during training
    """


class DeepLabHead(nn.Sequential):
    """ASPP, a 3x3 conv, BN, ReLU and a 1x1 conv to ``num_classes``."""

    def __init__(
        self, in_channels: int, num_classes: int, atrous_rates: Sequence[int] = (12, 24, 36)
    ) -> None:
        super().__init__(
            ASPP(in_channels, atrous_rates),
            nn.Conv2d(256, 256, 3, padding=1, bias=False),
            nn.BatchNorm2d(256),
            nn.ReLU(),
            nn.Conv2d(256, num_classes, 1),
        )


class ASPPConv(nn.Sequential):
    """A 3x3 conv of dilation ``dilation`` (padded to keep the size), BN and ReLU."""

    def __init__(self, in_channels: int, out_channels: int, dilation: int) -> None:
        super().__init__(
            nn.Conv2d(
                in_channels, out_channels, 3, padding=dilation, dilation=dilation, bias=False
            ),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        )


class ASPPPooling(nn.Sequential):
    """Global average pooling, a 1x1 conv, BN and ReLU, upsampled back to the input's size."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__(
            nn.AdaptiveAvgPool2d(1),
            nn.Conv2d(in_channels, out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        )

    def forward(self, x: Tensor) -> Tensor:
        size = x.shape[-2:]
        for mod in self:
            x = mod(x)
        return F.interpolate(x, size=size, mode="bilinear", align_corners=False)


class ASPP(nn.Module):
    """Atrous Spatial Pyramid Pooling: a 1x1 conv, one :class:`ASPPConv` per rate and an
    :class:`ASPPPooling` side by side, concatenated and projected to ``out_channels``."""

    def __init__(
        self, in_channels: int, atrous_rates: Sequence[int], out_channels: int = 256
    ) -> None:
        super().__init__()
        modules: list[nn.Module] = [
            nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, bias=False),
                nn.BatchNorm2d(out_channels),
                nn.ReLU(),
            )
        ]
        for rate in tuple(atrous_rates):
            modules.append(ASPPConv(in_channels, out_channels, rate))
        modules.append(ASPPPooling(in_channels, out_channels))
        self.convs = nn.ModuleList(modules)

        self.project = nn.Sequential(
            nn.Conv2d(len(self.convs) * out_channels, out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
            nn.Dropout(0.5),
        )

    def forward(self, x: Tensor) -> Tensor:
        res = ember.cat([conv(x) for conv in self.convs], dim=1)
        return self.project(res)


def _deeplabv3_resnet(backbone: ResNet, num_classes: int, aux: bool | None) -> DeepLabV3:
    return_layers = {"layer4": "out"}
    if aux:
        return_layers["layer3"] = "aux"
    backbone = IntermediateLayerGetter(backbone, return_layers=return_layers)

    aux_classifier = FCNHead(1024, num_classes) if aux else None
    classifier = DeepLabHead(2048, num_classes)
    return DeepLabV3(backbone, classifier, aux_classifier)


class DeepLabV3_ResNet50_Weights(WeightsEnum):
    COCO_WITH_VOC_LABELS_V1 = _coco_voc_weights(
        "deeplabv3_resnet50_coco-cd0a2569", 42004074, 66.4, 92.4, 178.722, 160.515,
        "deeplabv3_resnet50",
    )  # fmt: skip
    DEFAULT = COCO_WITH_VOC_LABELS_V1


class DeepLabV3_ResNet101_Weights(WeightsEnum):
    # torchvision's recipe link for this checkpoint names fcn_resnet101
    COCO_WITH_VOC_LABELS_V1 = _coco_voc_weights(
        "deeplabv3_resnet101_coco-586e9e4e", 60996202, 67.4, 92.4, 258.743, 233.217,
        "fcn_resnet101",
    )  # fmt: skip
    DEFAULT = COCO_WITH_VOC_LABELS_V1


class DeepLabV3_MobileNet_V3_Large_Weights(WeightsEnum):
    COCO_WITH_VOC_LABELS_V1 = _coco_voc_weights(
        "deeplabv3_mobilenet_v3_large-fc3c493d", 11029328, 60.3, 91.2, 10.452, 42.301,
        "deeplabv3_mobilenet_v3_large",
    )  # fmt: skip
    DEFAULT = COCO_WITH_VOC_LABELS_V1


def _deeplabv3_mobilenetv3(backbone: MobileNetV3, num_classes: int, aux: bool | None) -> DeepLabV3:
    features = backbone.features
    stage_indices = _stage_indices(features)
    out_pos = stage_indices[-1]  # C5, at output stride 16
    out_inplanes = features[out_pos].out_channels
    aux_pos = stage_indices[-4]  # C2, at output stride 8
    aux_inplanes = features[aux_pos].out_channels
    return_layers = {str(out_pos): "out"}
    if aux:
        return_layers[str(aux_pos)] = "aux"
    features = IntermediateLayerGetter(features, return_layers=return_layers)

    aux_classifier = FCNHead(aux_inplanes, num_classes) if aux else None
    classifier = DeepLabHead(out_inplanes, num_classes)
    return DeepLabV3(features, classifier, aux_classifier)


@register_model()
@handle_legacy_interface(
    weights=("pretrained", DeepLabV3_ResNet50_Weights.COCO_WITH_VOC_LABELS_V1),
    weights_backbone=("pretrained_backbone", ResNet50_Weights.IMAGENET1K_V1),
)
@_args_doc("DeepLabV3_ResNet50_Weights", "ResNet50_Weights")
def deeplabv3_resnet50(
    *,
    weights: DeepLabV3_ResNet50_Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    aux_loss: bool | None = None,
    weights_backbone: ResNet50_Weights | None = ResNet50_Weights.IMAGENET1K_V1,
    **kwargs: Any,
) -> DeepLabV3:
    """Constructs a DeepLabV3 model with a ResNet-50 backbone.

    Reference: `Rethinking Atrous Convolution for Semantic Image Segmentation
    <https://arxiv.org/abs/1706.05587>`__."""
    weights = DeepLabV3_ResNet50_Weights.verify(weights)
    weights_backbone = ResNet50_Weights.verify(weights_backbone)
    weights_backbone, num_classes, aux_loss = _resolve_params(
        weights, weights_backbone, num_classes, aux_loss
    )
    backbone = resnet50(weights=weights_backbone, replace_stride_with_dilation=[False, True, True])
    return _load_weights(_deeplabv3_resnet(backbone, num_classes, aux_loss), weights, progress)


@register_model()
@handle_legacy_interface(
    weights=("pretrained", DeepLabV3_ResNet101_Weights.COCO_WITH_VOC_LABELS_V1),
    weights_backbone=("pretrained_backbone", ResNet101_Weights.IMAGENET1K_V1),
)
@_args_doc("DeepLabV3_ResNet101_Weights", "ResNet101_Weights")
def deeplabv3_resnet101(
    *,
    weights: DeepLabV3_ResNet101_Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    aux_loss: bool | None = None,
    weights_backbone: ResNet101_Weights | None = ResNet101_Weights.IMAGENET1K_V1,
    **kwargs: Any,
) -> DeepLabV3:
    """Constructs a DeepLabV3 model with a ResNet-101 backbone.

    Reference: `Rethinking Atrous Convolution for Semantic Image Segmentation
    <https://arxiv.org/abs/1706.05587>`__."""
    weights = DeepLabV3_ResNet101_Weights.verify(weights)
    weights_backbone = ResNet101_Weights.verify(weights_backbone)
    weights_backbone, num_classes, aux_loss = _resolve_params(
        weights, weights_backbone, num_classes, aux_loss
    )
    backbone = resnet101(weights=weights_backbone, replace_stride_with_dilation=[False, True, True])
    return _load_weights(_deeplabv3_resnet(backbone, num_classes, aux_loss), weights, progress)


@register_model()
@handle_legacy_interface(
    weights=("pretrained", DeepLabV3_MobileNet_V3_Large_Weights.COCO_WITH_VOC_LABELS_V1),
    weights_backbone=("pretrained_backbone", MobileNet_V3_Large_Weights.IMAGENET1K_V1),
)
@_args_doc("DeepLabV3_MobileNet_V3_Large_Weights", "MobileNet_V3_Large_Weights")
def deeplabv3_mobilenet_v3_large(
    *,
    weights: DeepLabV3_MobileNet_V3_Large_Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    aux_loss: bool | None = None,
    weights_backbone: MobileNet_V3_Large_Weights | None = MobileNet_V3_Large_Weights.IMAGENET1K_V1,
    **kwargs: Any,
) -> DeepLabV3:
    """Constructs a DeepLabV3 model with a MobileNetV3-Large backbone.

    Reference: `Rethinking Atrous Convolution for Semantic Image Segmentation
    <https://arxiv.org/abs/1706.05587>`__."""
    weights = DeepLabV3_MobileNet_V3_Large_Weights.verify(weights)
    weights_backbone = MobileNet_V3_Large_Weights.verify(weights_backbone)
    weights_backbone, num_classes, aux_loss = _resolve_params(
        weights, weights_backbone, num_classes, aux_loss
    )
    backbone = mobilenet_v3_large(weights=weights_backbone, dilated=True)
    model = _deeplabv3_mobilenetv3(backbone, num_classes, aux_loss)
    return _load_weights(model, weights, progress)
