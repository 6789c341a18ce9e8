"""FCN (torchvision's ``models.segmentation.fcn``); module names and state_dict keys match."""

from typing import Any

from ember import nn

from .._api import WeightsEnum, register_model
from .._utils import IntermediateLayerGetter, handle_legacy_interface
from ..resnet import ResNet, ResNet50_Weights, ResNet101_Weights, resnet50, resnet101
from ._utils import (
    _args_doc,
    _coco_voc_weights,
    _load_weights,
    _resolve_params,
    _SimpleSegmentationModel,
)

__all__ = ["FCN", "FCN_ResNet50_Weights", "FCN_ResNet101_Weights", "fcn_resnet50", "fcn_resnet101"]


class FCN(_SimpleSegmentationModel):
    """
    Implements FCN model from
    `"Fully Convolutional Networks for Semantic Segmentation"
    <https://arxiv.org/abs/1411.4038>`_.

    Args:
        backbone (nn.Module): the network used to compute the features for the model.
            The backbone should return an OrderedDict[Tensor], with the key being
            "out" for the last feature map used, and "aux" if an auxiliary classifier
            is used.
        classifier (nn.Module): module that takes the "out" element returned from
            the backbone and returns a dense prediction.
        aux_classifier (nn.Module, optional): auxiliary classifier used during training
    """


class FCNHead(nn.Sequential):
    """3x3 conv to ``in_channels // 4``, BN, ReLU, dropout and a 1x1 conv to ``channels``."""

    def __init__(self, in_channels: int, channels: int) -> None:
        inter_channels = in_channels // 4
        super().__init__(
            nn.Conv2d(in_channels, inter_channels, 3, padding=1, bias=False),
            nn.BatchNorm2d(inter_channels),
            nn.ReLU(),
            nn.Dropout(0.1),
            nn.Conv2d(inter_channels, channels, 1),
        )


class FCN_ResNet50_Weights(WeightsEnum):
    COCO_WITH_VOC_LABELS_V1 = _coco_voc_weights(
        "fcn_resnet50_coco-1167a1af", 35322218, 60.5, 91.4, 152.717, 135.009, "fcn_resnet50"
    )
    DEFAULT = COCO_WITH_VOC_LABELS_V1


class FCN_ResNet101_Weights(WeightsEnum):
    # torchvision's recipe link for this checkpoint names deeplabv3_resnet101
    COCO_WITH_VOC_LABELS_V1 = _coco_voc_weights(
        "fcn_resnet101_coco-7ecb50ca", 54314346, 63.7, 91.9, 232.738, 207.711,
        "deeplabv3_resnet101",
    )  # fmt: skip
    DEFAULT = COCO_WITH_VOC_LABELS_V1


def _fcn_resnet(backbone: ResNet, num_classes: int, aux: bool | None) -> FCN:
    return_layers = {"layer4": "out"}
    if aux:
        return_layers["layer3"] = "aux"
    backbone = IntermediateLayerGetter(backbone, return_layers=return_layers)

    aux_classifier = FCNHead(1024, num_classes) if aux else None
    classifier = FCNHead(2048, num_classes)
    return FCN(backbone, classifier, aux_classifier)


@register_model()
@handle_legacy_interface(
    weights=("pretrained", FCN_ResNet50_Weights.COCO_WITH_VOC_LABELS_V1),
    weights_backbone=("pretrained_backbone", ResNet50_Weights.IMAGENET1K_V1),
)
@_args_doc("FCN_ResNet50_Weights", "ResNet50_Weights")
def fcn_resnet50(
    *,
    weights: FCN_ResNet50_Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    aux_loss: bool | None = None,
    weights_backbone: ResNet50_Weights | None = ResNet50_Weights.IMAGENET1K_V1,
    **kwargs: Any,
) -> FCN:
    """Fully-Convolutional Network model with a ResNet-50 backbone from the `Fully Convolutional
    Networks for Semantic Segmentation <https://arxiv.org/abs/1411.4038>`_ paper."""
    weights = FCN_ResNet50_Weights.verify(weights)
    weights_backbone = ResNet50_Weights.verify(weights_backbone)
    weights_backbone, num_classes, aux_loss = _resolve_params(
        weights, weights_backbone, num_classes, aux_loss
    )
    backbone = resnet50(weights=weights_backbone, replace_stride_with_dilation=[False, True, True])
    return _load_weights(_fcn_resnet(backbone, num_classes, aux_loss), weights, progress)


@register_model()
@handle_legacy_interface(
    weights=("pretrained", FCN_ResNet101_Weights.COCO_WITH_VOC_LABELS_V1),
    weights_backbone=("pretrained_backbone", ResNet101_Weights.IMAGENET1K_V1),
)
@_args_doc("FCN_ResNet101_Weights", "ResNet101_Weights")
def fcn_resnet101(
    *,
    weights: FCN_ResNet101_Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    aux_loss: bool | None = None,
    weights_backbone: ResNet101_Weights | None = ResNet101_Weights.IMAGENET1K_V1,
    **kwargs: Any,
) -> FCN:
    """Fully-Convolutional Network model with a ResNet-101 backbone from the `Fully
    Convolutional Networks for Semantic Segmentation <https://arxiv.org/abs/1411.4038>`_
    paper."""
    weights = FCN_ResNet101_Weights.verify(weights)
    weights_backbone = ResNet101_Weights.verify(weights_backbone)
    weights_backbone, num_classes, aux_loss = _resolve_params(
        weights, weights_backbone, num_classes, aux_loss
    )
    backbone = resnet101(weights=weights_backbone, replace_stride_with_dilation=[False, True, True])
    return _load_weights(_fcn_resnet(backbone, num_classes, aux_loss), weights, progress)
