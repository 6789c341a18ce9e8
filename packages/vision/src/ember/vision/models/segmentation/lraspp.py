"""Lite R-ASPP (torchvision's ``models.segmentation.lraspp``); module names and state_dict keys
match."""

from collections import OrderedDict
from typing import Any

from ember import Tensor, nn
from ember.nn import functional as F

from .._api import WeightsEnum, register_model
from .._utils import IntermediateLayerGetter, handle_legacy_interface
from ..mobilenetv3 import MobileNet_V3_Large_Weights, MobileNetV3, mobilenet_v3_large
from ._utils import _args_doc, _coco_voc_weights, _load_weights, _resolve_params, _stage_indices

__all__ = ["LRASPP", "LRASPP_MobileNet_V3_Large_Weights", "lraspp_mobilenet_v3_large"]


class LRASPP(nn.Module):
    """
    Implements a Lite R-ASPP Network for semantic segmentation from
    `"Searching for MobileNetV3"
    <https://arxiv.org/abs/1905.02244>`_.

    Args:
        backbone (nn.Module): the network used to compute the features for the model.
            The backbone should return an OrderedDict[Tensor], with the key being
            "high" for the high level feature map and "low" for the low level feature map.
        low_channels (int): the number of channels of the low level features.
        high_channels (int): the number of channels of the high level features.
        num_classes (int, optional): number of output classes of the model (including the
            background).
        inter_channels (int, optional): the number of channels for intermediate computations.
    """

    def __init__(
        self,
        backbone: nn.Module,
        low_channels: int,
        high_channels: int,
        num_classes: int,
        inter_channels: int = 128,
    ) -> None:
        super().__init__()
        self.backbone = backbone
        self.classifier = LRASPPHead(low_channels, high_channels, num_classes, inter_channels)

    def forward(self, input: Tensor) -> dict[str, Tensor]:
        features = self.backbone(input)
        out = self.classifier(features)
        out = F.interpolate(out, size=input.shape[-2:], mode="bilinear", align_corners=False)

        result = OrderedDict()
        result["out"] = out
        return result


class LRASPPHead(nn.Module):
    """The high-level features, reduced by a 1x1 conv and gated by their pooled sigmoid
    attention, upsampled to the low-level features; both classified by 1x1 convs and summed."""

    def __init__(
        self, low_channels: int, high_channels: int, num_classes: int, inter_channels: int
    ) -> None:
        super().__init__()
        self.cbr = nn.Sequential(
            nn.Conv2d(high_channels, inter_channels, 1, bias=False),
            nn.BatchNorm2d(inter_channels),
            nn.ReLU(inplace=True),
        )
        self.scale = nn.Sequential(
            nn.AdaptiveAvgPool2d(1),
            nn.Conv2d(high_channels, inter_channels, 1, bias=False),
            nn.Sigmoid(),
        )
        self.low_classifier = nn.Conv2d(low_channels, num_classes, 1)
        self.high_classifier = nn.Conv2d(inter_channels, num_classes, 1)

    def forward(self, input: dict[str, Tensor]) -> Tensor:
        low = input["low"]
        high = input["high"]

        x = self.cbr(high)
        s = self.scale(high)
        x = x * s
        x = F.interpolate(x, size=low.shape[-2:], mode="bilinear", align_corners=False)

        return self.low_classifier(low) + self.high_classifier(x)


def _lraspp_mobilenetv3(backbone: MobileNetV3, num_classes: int) -> LRASPP:
    features = backbone.features
    stage_indices = _stage_indices(features)
    low_pos = stage_indices[-4]  # C2, at output stride 8
    high_pos = stage_indices[-1]  # C5, at output stride 16
    low_channels = features[low_pos].out_channels
    high_channels = features[high_pos].out_channels
    features = IntermediateLayerGetter(
        features, return_layers={str(low_pos): "low", str(high_pos): "high"}
    )
    return LRASPP(features, low_channels, high_channels, num_classes)


class LRASPP_MobileNet_V3_Large_Weights(WeightsEnum):
    COCO_WITH_VOC_LABELS_V1 = _coco_voc_weights(
        "lraspp_mobilenet_v3_large-d234d4ea", 3221538, 57.9, 91.2, 2.086, 12.49,
        "lraspp_mobilenet_v3_large",
        _docs="""
                These weights were trained on a subset of COCO, using only the 20 categories that are present in the
                Pascal VOC dataset.
            """,  # noqa: E501
    )  # fmt: skip
    DEFAULT = COCO_WITH_VOC_LABELS_V1


@register_model()
@handle_legacy_interface(
    weights=("pretrained", LRASPP_MobileNet_V3_Large_Weights.COCO_WITH_VOC_LABELS_V1),
    weights_backbone=("pretrained_backbone", MobileNet_V3_Large_Weights.IMAGENET1K_V1),
)
@_args_doc("LRASPP_MobileNet_V3_Large_Weights", "MobileNet_V3_Large_Weights", aux_loss=False)
def lraspp_mobilenet_v3_large(
    *,
    weights: LRASPP_MobileNet_V3_Large_Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    weights_backbone: MobileNet_V3_Large_Weights | None = MobileNet_V3_Large_Weights.IMAGENET1K_V1,
    **kwargs: Any,
) -> LRASPP:
    """Constructs a Lite R-ASPP Network model with a MobileNetV3-Large backbone from
    `Searching for MobileNetV3 <https://arxiv.org/abs/1905.02244>`_ paper.

    It has no auxiliary classifier: ``aux_loss=True`` raises ``NotImplementedError``."""
    if kwargs.pop("aux_loss", False):
        raise NotImplementedError("This model does not use auxiliary loss")

    weights = LRASPP_MobileNet_V3_Large_Weights.verify(weights)
    weights_backbone = MobileNet_V3_Large_Weights.verify(weights_backbone)
    weights_backbone, num_classes, _ = _resolve_params(
        weights, weights_backbone, num_classes, None, has_aux=False
    )
    backbone = mobilenet_v3_large(weights=weights_backbone, dilated=True)
    return _load_weights(_lraspp_mobilenetv3(backbone, num_classes), weights, progress)
