"""Ported from torchvision (BSD-3-Clause); module names and state_dict keys match."""

from collections.abc import Callable
from functools import partial
from typing import Any

import ember
from ember import Tensor, nn
from ember.nn import functional as F

from ._api import WeightsEnum
from ._layers import Conv2dNormActivation, Permute, StochasticDepth
from ._meta import _classification, _imagenet_weights
from ._utils import _build_model, _check_block_setting, _model_builder

__all__ = [
    "ConvNeXt",
    "ConvNeXt_Tiny_Weights",
    "ConvNeXt_Small_Weights",
    "ConvNeXt_Base_Weights",
    "ConvNeXt_Large_Weights",
    "convnext_tiny",
    "convnext_small",
    "convnext_base",
    "convnext_large",
]


class LayerNorm2d(nn.LayerNorm):
    def forward(self, x: Tensor) -> Tensor:
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        x = x.permute(0, 3, 1, 2)
        return x


class CNBlock(nn.Module):
    def __init__(
        self,
        dim,
        layer_scale: float,
        stochastic_depth_prob: float,
        norm_layer: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()
        if norm_layer is None:
            norm_layer = partial(nn.LayerNorm, eps=1e-6)

        self.block = nn.Sequential(
            nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim, bias=True),
            Permute([0, 2, 3, 1]),
            norm_layer(dim),
            nn.Linear(in_features=dim, out_features=4 * dim, bias=True),
            nn.GELU(),
            nn.Linear(in_features=4 * dim, out_features=dim, bias=True),
            Permute([0, 3, 1, 2]),
        )
        self.layer_scale = nn.Parameter(ember.ones(dim, 1, 1) * layer_scale)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")

    def forward(self, input: Tensor) -> Tensor:
        result = self.layer_scale * self.block(input)
        result = self.stochastic_depth(result)
        result += input
        return result


class CNBlockConfig:
    # Stores information listed at Section 3 of the ConvNeXt paper
    def __init__(
        self,
        input_channels: int,
        out_channels: int | None,
        num_layers: int,
    ) -> None:
        self.input_channels = input_channels
        self.out_channels = out_channels
        self.num_layers = num_layers

    def __repr__(self) -> str:
        s = self.__class__.__name__ + "("
        s += "input_channels={input_channels}"
        s += ", out_channels={out_channels}"
        s += ", num_layers={num_layers}"
        s += ")"
        return s.format(**self.__dict__)


class ConvNeXt(nn.Module):
    def __init__(
        self,
        block_setting: list[CNBlockConfig],
        stochastic_depth_prob: float = 0.0,
        layer_scale: float = 1e-6,
        num_classes: int = 1000,
        block: Callable[..., nn.Module] | None = None,
        norm_layer: Callable[..., nn.Module] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__()

        _check_block_setting(block_setting, "block_setting", CNBlockConfig)

        if block is None:
            block = CNBlock

        if norm_layer is None:
            norm_layer = partial(LayerNorm2d, eps=1e-6)

        layers: list[nn.Module] = []

        # Stem
        firstconv_output_channels = block_setting[0].input_channels
        layers.append(
            Conv2dNormActivation(
                3,
                firstconv_output_channels,
                kernel_size=4,
                stride=4,
                padding=0,
                norm_layer=norm_layer,
                activation_layer=None,
                bias=True,
            )
        )

        total_stage_blocks = sum(cnf.num_layers for cnf in block_setting)
        stage_block_id = 0
        for cnf in block_setting:
            # Bottlenecks
            stage: list[nn.Module] = []
            for _ in range(cnf.num_layers):
                # adjust stochastic depth probability based on the depth of the stage block
                sd_prob = stochastic_depth_prob * stage_block_id / (total_stage_blocks - 1.0)
                stage.append(block(cnf.input_channels, layer_scale, sd_prob))
                stage_block_id += 1
            layers.append(nn.Sequential(*stage))
            if cnf.out_channels is not None:
                # Downsampling
                layers.append(
                    nn.Sequential(
                        norm_layer(cnf.input_channels),
                        nn.Conv2d(cnf.input_channels, cnf.out_channels, kernel_size=2, stride=2),
                    )
                )

        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)

        lastblock = block_setting[-1]
        lastconv_output_channels = (
            lastblock.out_channels
            if lastblock.out_channels is not None
            else lastblock.input_channels
        )
        self.classifier = nn.Sequential(
            norm_layer(lastconv_output_channels),
            nn.Flatten(1),
            nn.Linear(lastconv_output_channels, num_classes),
        )

        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def _forward_impl(self, x: Tensor) -> Tensor:
        x = self.features(x)
        x = self.avgpool(x)
        x = self.classifier(x)
        return x

    def forward(self, x: Tensor) -> Tensor:
        return self._forward_impl(x)


def _convnext(
    block_setting: list[CNBlockConfig],
    stochastic_depth_prob: float,
    weights: WeightsEnum | None,
    progress: bool,
    **kwargs: Any,
) -> ConvNeXt:
    model_fn = partial(ConvNeXt, block_setting, stochastic_depth_prob=stochastic_depth_prob)
    return _build_model(model_fn, weights, progress, kwargs)


# Each builder's architecture: (input channels, layers) of its four stages, and its default
# stochastic depth probability.
_ARCHS: dict[str, tuple[list[tuple[int, int]], float]] = {
    "convnext_tiny": ([(96, 3), (192, 3), (384, 9), (768, 3)], 0.1),
    "convnext_small": ([(96, 3), (192, 3), (384, 27), (768, 3)], 0.4),
    "convnext_base": ([(128, 3), (256, 3), (512, 27), (1024, 3)], 0.5),
    "convnext_large": ([(192, 3), (384, 3), (768, 27), (1536, 3)], 0.5),
}


def _convnext_arch(
    name: str, weights: WeightsEnum | None, progress: bool, kwargs: dict[str, Any]
) -> ConvNeXt:
    """The variant ``name``, built from its row of :data:`_ARCHS`: each stage downsamples to the
    next one's channels, the last one does not."""
    stages, stochastic_depth_prob = _ARCHS[name]
    outs = [channels for channels, _ in stages[1:]] + [None]
    block_setting = [CNBlockConfig(c, out, n) for (c, n), out in zip(stages, outs)]
    stochastic_depth_prob = kwargs.pop("stochastic_depth_prob", stochastic_depth_prob)
    return _convnext(block_setting, stochastic_depth_prob, weights, progress, **kwargs)


# Weights: torchvision's checkpoints, presets and metadata. Rows: file, num_params, acc@1, acc@5,
# GFLOPS, MB, resize size of the preset.
_v1 = partial(
    _imagenet_weights,
    min_size=(32, 32),
    recipe="https://github.com/pytorch/vision/tree/main/references/classification#convnext",
    _docs="""
        These weights improve upon the results of the original paper by using a modified version of
        TorchVision's
        `new training recipe
        <https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.
    """,
)


class ConvNeXt_Tiny_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "convnext_tiny-983f1562", 28589128, 82.520, 96.146, 4.456, 109.119,
        transforms=_classification(224, 236),
    )  # fmt: skip
    DEFAULT = IMAGENET1K_V1


class ConvNeXt_Small_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "convnext_small-0c510722", 50223688, 83.616, 96.650, 8.684, 191.703,
        transforms=_classification(224, 230),
    )  # fmt: skip
    DEFAULT = IMAGENET1K_V1


class ConvNeXt_Base_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "convnext_base-6075fbad", 88591464, 84.062, 96.870, 15.355, 338.064,
        transforms=_classification(224, 232),
    )  # fmt: skip
    DEFAULT = IMAGENET1K_V1


class ConvNeXt_Large_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "convnext_large-ea097f82", 197767336, 84.414, 96.976, 34.361, 754.537,
        transforms=_classification(224, 232),
    )  # fmt: skip
    DEFAULT = IMAGENET1K_V1


@_model_builder()
def convnext_tiny(
    *, weights: ConvNeXt_Tiny_Weights | None = None, progress: bool = True, **kwargs: Any
) -> ConvNeXt:
    """ConvNeXt Tiny from the `ConvNeXt paper <https://arxiv.org/abs/2201.03545>`_."""
    return _convnext_arch("convnext_tiny", weights, progress, kwargs)


@_model_builder()
def convnext_small(
    *, weights: ConvNeXt_Small_Weights | None = None, progress: bool = True, **kwargs: Any
) -> ConvNeXt:
    """ConvNeXt Small from the `ConvNeXt paper <https://arxiv.org/abs/2201.03545>`_."""
    return _convnext_arch("convnext_small", weights, progress, kwargs)


@_model_builder()
def convnext_base(
    *, weights: ConvNeXt_Base_Weights | None = None, progress: bool = True, **kwargs: Any
) -> ConvNeXt:
    """ConvNeXt Base from the `ConvNeXt paper <https://arxiv.org/abs/2201.03545>`_."""
    return _convnext_arch("convnext_base", weights, progress, kwargs)


@_model_builder()
def convnext_large(
    *, weights: ConvNeXt_Large_Weights | None = None, progress: bool = True, **kwargs: Any
) -> ConvNeXt:
    """ConvNeXt Large from the `ConvNeXt paper <https://arxiv.org/abs/2201.03545>`_."""
    return _convnext_arch("convnext_large", weights, progress, kwargs)
