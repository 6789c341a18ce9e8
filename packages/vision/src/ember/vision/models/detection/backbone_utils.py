"""Feature extractors of the detectors (torchvision's ``models.detection.backbone_utils``):
ResNet and MobileNet bodies with a Feature Pyramid Network on top, their first layers frozen."""

from __future__ import annotations

import warnings
from collections.abc import Callable

from ember import Tensor, nn

from ...ops import misc as misc_nn_ops
from ...ops.feature_pyramid_network import ExtraFPNBlock, FeaturePyramidNetwork, LastLevelMaxPool
from .. import mobilenet, resnet
from .._api import WeightsEnum, _get_enum_from_fn
from .._utils import IntermediateLayerGetter, handle_legacy_interface

__all__ = [
    "BackboneWithFPN",
    "mobilenet_backbone",
    "resnet_fpn_backbone",
]


class BackboneWithFPN(nn.Module):
    """A backbone's intermediate feature maps (through
    :class:`~ember.vision.models._utils.IntermediateLayerGetter`, as ``body``) with an
    :class:`~ember.vision.ops.FeaturePyramidNetwork` (``fpn``) on top.

    Args:
        backbone (nn.Module)
        return_layers (Dict[name, new_name]): the modules whose activations are returned, and
            the names they are returned under.
        in_channels_list (List[int]): number of channels of each returned feature map, in order.
        out_channels (int): number of channels in the FPN.
        extra_blocks (ExtraFPNBlock, optional): default :class:`LastLevelMaxPool`.
        norm_layer (callable, optional): normalization layer of the FPN. Default: None

    Attributes:
        out_channels (int): the number of channels in the FPN
    """

    def __init__(
        self,
        backbone: nn.Module,
        return_layers: dict[str, str],
        in_channels_list: list[int],
        out_channels: int,
        extra_blocks: ExtraFPNBlock | None = None,
        norm_layer: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()
        if extra_blocks is None:
            extra_blocks = LastLevelMaxPool()
        self.body = IntermediateLayerGetter(backbone, return_layers=return_layers)
        self.fpn = FeaturePyramidNetwork(
            in_channels_list=in_channels_list,
            out_channels=out_channels,
            extra_blocks=extra_blocks,
            norm_layer=norm_layer,
        )
        self.out_channels = out_channels

    def forward(self, x: Tensor) -> dict[str, Tensor]:
        return self.fpn(self.body(x))


@handle_legacy_interface(
    weights=(
        "pretrained",
        lambda kwargs: _get_enum_from_fn(resnet.__dict__[kwargs["backbone_name"]])["IMAGENET1K_V1"],
    ),
)
def resnet_fpn_backbone(
    *,
    backbone_name: str,
    weights: WeightsEnum | None,
    norm_layer: Callable[..., nn.Module] = misc_nn_ops.FrozenBatchNorm2d,
    trainable_layers: int = 3,
    returned_layers: list[int] | None = None,
    extra_blocks: ExtraFPNBlock | None = None,
) -> BackboneWithFPN:
    """A ResNet (``backbone_name``: ``"resnet18"`` ... ``"wide_resnet101_2"``) with an FPN on
    top, all but its last ``trainable_layers`` (0-5) layers frozen.

    Args:
        backbone_name (string): the resnet architecture.
        weights (WeightsEnum, optional): The pretrained weights for the model
        norm_layer (callable): default :class:`~ember.vision.ops.FrozenBatchNorm2d`.
        trainable_layers (int): number of trainable (not frozen) layers starting from final
            block. Valid values are between 0 and 5, with 5 meaning all backbone layers are
            trainable.
        returned_layers (list of int): The layers of the network to return. Each entry must be
            in ``[1, 4]``. By default, all layers are returned.
        extra_blocks (ExtraFPNBlock or None): default :class:`LastLevelMaxPool`.

    Example::

        >>> backbone = resnet_fpn_backbone(backbone_name="resnet18", weights=None)
        >>> out = backbone(ember.rand(1, 3, 64, 64))
        >>> [(k, tuple(v.shape)) for k, v in out.items()]
        [('0', (1, 256, 16, 16)), ('1', (1, 256, 8, 8)), ('2', (1, 256, 4, 4)), ('3', (1, 256, 2, 2)), ('pool', (1, 256, 1, 1))]
    """  # noqa: E501
    backbone = resnet.__dict__[backbone_name](weights=weights, norm_layer=norm_layer)
    return _resnet_fpn_extractor(backbone, trainable_layers, returned_layers, extra_blocks)


def _resnet_fpn_extractor(
    backbone: resnet.ResNet,
    trainable_layers: int,
    returned_layers: list[int] | None = None,
    extra_blocks: ExtraFPNBlock | None = None,
    norm_layer: Callable[..., nn.Module] | None = None,
) -> BackboneWithFPN:
    if trainable_layers < 0 or trainable_layers > 5:
        raise ValueError(f"Trainable layers should be in the range [0,5], got {trainable_layers}")
    layers_to_train = ["layer4", "layer3", "layer2", "layer1", "conv1"][:trainable_layers]
    if trainable_layers == 5:
        layers_to_train.append("bn1")
    for name, parameter in backbone.named_parameters():
        if not any(name.startswith(layer) for layer in layers_to_train):
            parameter.requires_grad_(False)

    if extra_blocks is None:
        extra_blocks = LastLevelMaxPool()

    if returned_layers is None:
        returned_layers = [1, 2, 3, 4]
    if min(returned_layers) <= 0 or max(returned_layers) >= 5:
        raise ValueError(f"Each returned layer should be in the range [1,4]. Got {returned_layers}")
    return_layers = {f"layer{k}": str(v) for v, k in enumerate(returned_layers)}

    in_channels_stage2 = backbone.inplanes // 8
    in_channels_list = [in_channels_stage2 * 2 ** (i - 1) for i in returned_layers]
    out_channels = 256
    return BackboneWithFPN(
        backbone,
        return_layers,
        in_channels_list,
        out_channels,
        extra_blocks=extra_blocks,
        norm_layer=norm_layer,
    )


def _resnet50_fpn_backbone(
    weights_backbone: WeightsEnum | None,
    progress: bool,
    is_trained: bool,
    trainable_layers: int | None,
    *,
    frozen_bn: bool = True,
    **extractor_kwargs,
) -> BackboneWithFPN:
    """The detection builders' ResNet-50 + FPN: ``trainable_layers`` validated (3 by default),
    FrozenBatchNorm2d in the ResNet when it starts from trained weights and ``frozen_bn`` (the
    v1 models; the v2 ones train BatchNorm), ``extractor_kwargs`` to
    :func:`_resnet_fpn_extractor` (returned layers, extra blocks, the FPN's norm layer)."""
    trainable_layers = _validate_trainable_layers(is_trained, trainable_layers, 5, 3)
    kwargs = {}
    if frozen_bn:
        kwargs["norm_layer"] = misc_nn_ops.FrozenBatchNorm2d if is_trained else nn.BatchNorm2d
    backbone = resnet.resnet50(weights=weights_backbone, progress=progress, **kwargs)
    return _resnet_fpn_extractor(backbone, trainable_layers, **extractor_kwargs)


def _validate_trainable_layers(
    is_trained: bool,
    trainable_backbone_layers: int | None,
    max_value: int,
    default_value: int,
) -> int:
    """The number of trainable backbone layers a builder uses: all of them (``max_value``)
    when nothing pretrained is loaded, else ``trainable_backbone_layers`` (default
    ``default_value``), checked against ``[0, max_value]``."""
    if not is_trained:
        if trainable_backbone_layers is not None:
            warnings.warn(
                "Changing trainable_backbone_layers has no effect if "
                "neither pretrained nor pretrained_backbone have been set to True, "
                f"falling back to trainable_backbone_layers={max_value} so that all layers are "
                "trainable",
                stacklevel=2,
            )
        trainable_backbone_layers = max_value

    if trainable_backbone_layers is None:
        trainable_backbone_layers = default_value
    if trainable_backbone_layers < 0 or trainable_backbone_layers > max_value:
        raise ValueError(
            f"Trainable backbone layers should be in the range [0,{max_value}], "
            f"got {trainable_backbone_layers} "
        )
    return trainable_backbone_layers


@handle_legacy_interface(
    weights=(
        "pretrained",
        lambda kwargs: _get_enum_from_fn(mobilenet.__dict__[kwargs["backbone_name"]])[
            "IMAGENET1K_V1"
        ],
    ),
)
def mobilenet_backbone(
    *,
    backbone_name: str,
    weights: WeightsEnum | None,
    fpn: bool,
    norm_layer: Callable[..., nn.Module] = misc_nn_ops.FrozenBatchNorm2d,
    trainable_layers: int = 2,
    returned_layers: list[int] | None = None,
    extra_blocks: ExtraFPNBlock | None = None,
) -> nn.Module:
    """A MobileNet (``"mobilenet_v2"``, ``"mobilenet_v3_large"``, ``"mobilenet_v3_small"``)
    feature extractor, with an FPN on top when ``fpn`` else a 1x1 conv to 256 channels."""
    backbone = mobilenet.__dict__[backbone_name](weights=weights, norm_layer=norm_layer)
    return _mobilenet_extractor(backbone, fpn, trainable_layers, returned_layers, extra_blocks)


def _mobilenet_extractor(
    backbone: mobilenet.MobileNetV2 | mobilenet.MobileNetV3,
    fpn: bool,
    trainable_layers: int,
    returned_layers: list[int] | None = None,
    extra_blocks: ExtraFPNBlock | None = None,
    norm_layer: Callable[..., nn.Module] | None = None,
) -> nn.Module:
    backbone = backbone.features
    # the stages: the first block (C0), the strided blocks (C1 ... Cn-1) and the last (Cn)
    stage_indices = (
        [0]
        + [i for i, b in enumerate(backbone) if getattr(b, "_is_cn", False)]
        + [len(backbone) - 1]
    )
    num_stages = len(stage_indices)

    if trainable_layers < 0 or trainable_layers > num_stages:
        raise ValueError(
            f"Trainable layers should be in the range [0,{num_stages}], got {trainable_layers} "
        )
    freeze_before = (
        len(backbone) if trainable_layers == 0 else stage_indices[num_stages - trainable_layers]
    )
    for b in backbone[:freeze_before]:
        for parameter in b.parameters():
            parameter.requires_grad_(False)

    out_channels = 256
    if fpn:
        if extra_blocks is None:
            extra_blocks = LastLevelMaxPool()
        if returned_layers is None:
            returned_layers = [num_stages - 2, num_stages - 1]
        if min(returned_layers) < 0 or max(returned_layers) >= num_stages:
            raise ValueError(
                f"Each returned layer should be in the range [0,{num_stages - 1}], "
                f"got {returned_layers} "
            )
        return_layers = {f"{stage_indices[k]}": str(v) for v, k in enumerate(returned_layers)}
        in_channels_list = [backbone[stage_indices[i]].out_channels for i in returned_layers]
        return BackboneWithFPN(
            backbone,
            return_layers,
            in_channels_list,
            out_channels,
            extra_blocks=extra_blocks,
            norm_layer=norm_layer,
        )

    m = nn.Sequential(
        backbone,
        # depthwise linear combination of channels to reduce their size
        nn.Conv2d(backbone[-1].out_channels, out_channels, 1),
    )
    m.out_channels = out_channels
    return m
