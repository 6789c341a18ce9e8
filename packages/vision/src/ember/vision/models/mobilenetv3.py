"""Ported from torchvision (BSD-3-Clause); module names and state_dict keys match."""

from collections.abc import Callable
from functools import partial
from typing import Any

from ember import Tensor, nn

from ._api import WeightsEnum
from ._layers import Conv2dNormActivation, PooledClassifier
from ._layers import SqueezeExcitation as SElayer
from ._meta import _classification, _imagenet_weights
from ._utils import (
    _build_model,
    _check_block_setting,
    _init_conv_norm_linear,
    _make_divisible,
    _model_builder,
)

__all__ = [
    "MobileNetV3",
    "MobileNet_V3_Large_Weights",
    "MobileNet_V3_Small_Weights",
    "mobilenet_v3_large",
    "mobilenet_v3_small",
]


class InvertedResidualConfig:
    # Stores information listed at Tables 1 and 2 of the MobileNetV3 paper
    def __init__(
        self,
        input_channels: int,
        kernel: int,
        expanded_channels: int,
        out_channels: int,
        use_se: bool,
        activation: str,
        stride: int,
        dilation: int,
        width_mult: float,
    ):
        self.input_channels = self.adjust_channels(input_channels, width_mult)
        self.kernel = kernel
        self.expanded_channels = self.adjust_channels(expanded_channels, width_mult)
        self.out_channels = self.adjust_channels(out_channels, width_mult)
        self.use_se = use_se
        self.use_hs = activation == "HS"
        self.stride = stride
        self.dilation = dilation

    @staticmethod
    def adjust_channels(channels: int, width_mult: float):
        return _make_divisible(channels * width_mult, 8)


class InvertedResidual(nn.Module):
    # Implemented as described at section 5 of MobileNetV3 paper
    def __init__(
        self,
        cnf: InvertedResidualConfig,
        norm_layer: Callable[..., nn.Module],
        se_layer: Callable[..., nn.Module] = partial(SElayer, scale_activation=nn.Hardsigmoid),
    ):
        super().__init__()
        if not (1 <= cnf.stride <= 2):
            raise ValueError("illegal stride value")

        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels

        layers: list[nn.Module] = []
        activation_layer = nn.Hardswish if cnf.use_hs else nn.ReLU

        # expand
        if cnf.expanded_channels != cnf.input_channels:
            layers.append(
                Conv2dNormActivation(
                    cnf.input_channels,
                    cnf.expanded_channels,
                    kernel_size=1,
                    norm_layer=norm_layer,
                    activation_layer=activation_layer,
                )
            )

        # depthwise
        stride = 1 if cnf.dilation > 1 else cnf.stride
        layers.append(
            Conv2dNormActivation(
                cnf.expanded_channels,
                cnf.expanded_channels,
                kernel_size=cnf.kernel,
                stride=stride,
                dilation=cnf.dilation,
                groups=cnf.expanded_channels,
                norm_layer=norm_layer,
                activation_layer=activation_layer,
            )
        )
        if cnf.use_se:
            squeeze_channels = _make_divisible(cnf.expanded_channels // 4, 8)
            layers.append(se_layer(cnf.expanded_channels, squeeze_channels))

        # project
        layers.append(
            Conv2dNormActivation(
                cnf.expanded_channels,
                cnf.out_channels,
                kernel_size=1,
                norm_layer=norm_layer,
                activation_layer=None,
            )
        )

        self.block = nn.Sequential(*layers)
        self.out_channels = cnf.out_channels
        self._is_cn = cnf.stride > 1

    def forward(self, input: Tensor) -> Tensor:
        result = self.block(input)
        if self.use_res_connect:
            result += input
        return result


class MobileNetV3(PooledClassifier):
    def __init__(
        self,
        inverted_residual_setting: list[InvertedResidualConfig],
        last_channel: int,
        num_classes: int = 1000,
        block: Callable[..., nn.Module] | None = None,
        norm_layer: Callable[..., nn.Module] | None = None,
        dropout: float = 0.2,
        **kwargs: Any,
    ) -> None:
        """
        MobileNet V3 main class

        Args:
            inverted_residual_setting (List[InvertedResidualConfig]): Network structure
            last_channel (int): The number of channels on the penultimate layer
            num_classes (int): Number of classes
            block (Optional[Callable[..., nn.Module]]): Module specifying inverted residual building
                block for mobilenet
            norm_layer (Optional[Callable[..., nn.Module]]): Module specifying the normalization
                layer to use
            dropout (float): The droupout probability
        """
        super().__init__()

        _check_block_setting(
            inverted_residual_setting, "inverted_residual_setting", InvertedResidualConfig
        )

        if block is None:
            block = InvertedResidual

        if norm_layer is None:
            norm_layer = partial(nn.BatchNorm2d, eps=0.001, momentum=0.01)

        layers: list[nn.Module] = []

        # building first layer
        firstconv_output_channels = inverted_residual_setting[0].input_channels
        layers.append(
            Conv2dNormActivation(
                3,
                firstconv_output_channels,
                kernel_size=3,
                stride=2,
                norm_layer=norm_layer,
                activation_layer=nn.Hardswish,
            )
        )

        # building inverted residual blocks
        for cnf in inverted_residual_setting:
            layers.append(block(cnf, norm_layer))

        # building last several layers
        lastconv_input_channels = inverted_residual_setting[-1].out_channels
        lastconv_output_channels = 6 * lastconv_input_channels
        self._set_features(
            layers, lastconv_input_channels, lastconv_output_channels, norm_layer, nn.Hardswish
        )
        self.classifier = nn.Sequential(
            nn.Linear(lastconv_output_channels, last_channel),
            nn.Hardswish(inplace=True),
            nn.Dropout(p=dropout, inplace=True),
            nn.Linear(last_channel, num_classes),
        )

        _init_conv_norm_linear(self)


def _mobilenet_v3_conf(
    arch: str,
    width_mult: float = 1.0,
    reduced_tail: bool = False,
    dilated: bool = False,
    **kwargs: Any,
):
    reduce_divider = 2 if reduced_tail else 1
    dilation = 2 if dilated else 1

    bneck_conf = partial(InvertedResidualConfig, width_mult=width_mult)
    adjust_channels = partial(InvertedResidualConfig.adjust_channels, width_mult=width_mult)

    # C4 on: output and expanded channels of the last stage (halved by reduced_tail).
    if arch == "mobilenet_v3_large":
        c4, e4 = 160 // reduce_divider, 960 // reduce_divider
        inverted_residual_setting = [
            bneck_conf(16, 3, 16, 16, False, "RE", 1, 1),
            bneck_conf(16, 3, 64, 24, False, "RE", 2, 1),  # C1
            bneck_conf(24, 3, 72, 24, False, "RE", 1, 1),
            bneck_conf(24, 5, 72, 40, True, "RE", 2, 1),  # C2
            bneck_conf(40, 5, 120, 40, True, "RE", 1, 1),
            bneck_conf(40, 5, 120, 40, True, "RE", 1, 1),
            bneck_conf(40, 3, 240, 80, False, "HS", 2, 1),  # C3
            bneck_conf(80, 3, 200, 80, False, "HS", 1, 1),
            bneck_conf(80, 3, 184, 80, False, "HS", 1, 1),
            bneck_conf(80, 3, 184, 80, False, "HS", 1, 1),
            bneck_conf(80, 3, 480, 112, True, "HS", 1, 1),
            bneck_conf(112, 3, 672, 112, True, "HS", 1, 1),
            bneck_conf(112, 5, 672, c4, True, "HS", 2, dilation),  # C4
            bneck_conf(c4, 5, e4, c4, True, "HS", 1, dilation),
            bneck_conf(c4, 5, e4, c4, True, "HS", 1, dilation),
        ]
        last_channel = adjust_channels(1280 // reduce_divider)  # C5
    elif arch == "mobilenet_v3_small":
        c4, e4 = 96 // reduce_divider, 576 // reduce_divider
        inverted_residual_setting = [
            bneck_conf(16, 3, 16, 16, True, "RE", 2, 1),  # C1
            bneck_conf(16, 3, 72, 24, False, "RE", 2, 1),  # C2
            bneck_conf(24, 3, 88, 24, False, "RE", 1, 1),
            bneck_conf(24, 5, 96, 40, True, "HS", 2, 1),  # C3
            bneck_conf(40, 5, 240, 40, True, "HS", 1, 1),
            bneck_conf(40, 5, 240, 40, True, "HS", 1, 1),
            bneck_conf(40, 5, 120, 48, True, "HS", 1, 1),
            bneck_conf(48, 5, 144, 48, True, "HS", 1, 1),
            bneck_conf(48, 5, 288, c4, True, "HS", 2, dilation),  # C4
            bneck_conf(c4, 5, e4, c4, True, "HS", 1, dilation),
            bneck_conf(c4, 5, e4, c4, True, "HS", 1, dilation),
        ]
        last_channel = adjust_channels(1024 // reduce_divider)  # C5
    else:
        raise ValueError(f"Unsupported model type {arch}")

    return inverted_residual_setting, last_channel


def _mobilenet_v3(
    inverted_residual_setting: list[InvertedResidualConfig],
    last_channel: int,
    weights: WeightsEnum | None,
    progress: bool,
    **kwargs: Any,
) -> MobileNetV3:
    model_fn = partial(MobileNetV3, inverted_residual_setting, last_channel)
    return _build_model(model_fn, weights, progress, kwargs)


def _mobilenet_v3_arch(
    arch: str, weights: WeightsEnum | None, progress: bool, kwargs: dict[str, Any]
) -> MobileNetV3:
    inverted_residual_setting, last_channel = _mobilenet_v3_conf(arch, **kwargs)
    return _mobilenet_v3(inverted_residual_setting, last_channel, weights, progress, **kwargs)


# Weights: torchvision's checkpoints, presets and metadata. Rows: file, num_params, acc@1, acc@5,
# GFLOPS, MB.
_v1 = partial(
    _imagenet_weights,
    transforms=_classification(224),
    min_size=(1, 1),
    recipe="https://github.com/pytorch/vision/tree/main/references/classification#mobilenetv3-large--small",
)


class MobileNet_V3_Large_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "mobilenet_v3_large-8738ca79", 5483032, 74.042, 91.340, 0.217, 21.114,
        _docs="""These weights were trained from scratch by using a simple training
            recipe.""",
    )  # fmt: skip
    IMAGENET1K_V2 = _v1(
        "mobilenet_v3_large-5c1a4163", 5483032, 75.274, 92.566, 0.217, 21.107,
        transforms=_classification(224, 232),
        recipe="https://github.com/pytorch/vision/issues/3995#new-recipe-with-reg-tuning",
        _docs="""
                These weights improve marginally upon the results of the original paper by using a
                modified version of
                TorchVision's `new training recipe
                <https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.
            """,
    )  # fmt: skip
    DEFAULT = IMAGENET1K_V2


class MobileNet_V3_Small_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "mobilenet_v3_small-047dcff4", 2542856, 67.668, 87.402, 0.057, 9.829,
        _docs="""
                These weights improve upon the results of the original paper by using a simple
                training recipe.
            """,
    )  # fmt: skip
    DEFAULT = IMAGENET1K_V1


@_model_builder()
def mobilenet_v3_large(
    *, weights: MobileNet_V3_Large_Weights | None = None, progress: bool = True, **kwargs: Any
) -> MobileNetV3:
    """MobileNetV3-Large from the `MobileNetV3 paper <https://arxiv.org/abs/1905.02244>`__."""
    return _mobilenet_v3_arch("mobilenet_v3_large", weights, progress, kwargs)


@_model_builder()
def mobilenet_v3_small(
    *, weights: MobileNet_V3_Small_Weights | None = None, progress: bool = True, **kwargs: Any
) -> MobileNetV3:
    """MobileNetV3-Small from the `MobileNetV3 paper <https://arxiv.org/abs/1905.02244>`__."""
    return _mobilenet_v3_arch("mobilenet_v3_small", weights, progress, kwargs)
