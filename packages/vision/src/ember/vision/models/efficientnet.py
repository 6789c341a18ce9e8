"""Ported from torchvision (BSD-3-Clause); module names and state_dict keys match."""

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from ember import Tensor, nn

from ..transforms.functional import InterpolationMode
from ._api import WeightsEnum
from ._layers import Conv2dNormActivation, PooledClassifier, SqueezeExcitation, StochasticDepth
from ._meta import _DOCS_NEW_RECIPE, _classification, _imagenet_weights
from ._utils import (
    _build_model,
    _check_block_setting,
    _init_conv_norm_linear,
    _make_divisible,
    _model_builder,
)

__all__ = [
    "EfficientNet",
    "EfficientNet_B0_Weights",
    "EfficientNet_B1_Weights",
    "EfficientNet_B2_Weights",
    "EfficientNet_B3_Weights",
    "EfficientNet_B4_Weights",
    "EfficientNet_B5_Weights",
    "EfficientNet_B6_Weights",
    "EfficientNet_B7_Weights",
    "EfficientNet_V2_S_Weights",
    "EfficientNet_V2_M_Weights",
    "EfficientNet_V2_L_Weights",
    "efficientnet_b0",
    "efficientnet_b1",
    "efficientnet_b2",
    "efficientnet_b3",
    "efficientnet_b4",
    "efficientnet_b5",
    "efficientnet_b6",
    "efficientnet_b7",
    "efficientnet_v2_s",
    "efficientnet_v2_m",
    "efficientnet_v2_l",
]


@dataclass
class _MBConvConfig:
    expand_ratio: float
    kernel: int
    stride: int
    input_channels: int
    out_channels: int
    num_layers: int
    block: Callable[..., nn.Module]

    @staticmethod
    def adjust_channels(channels: int, width_mult: float, min_value: int | None = None) -> int:
        return _make_divisible(channels * width_mult, 8, min_value)


class MBConvConfig(_MBConvConfig):
    # Stores information listed at Table 1 of the EfficientNet paper & Table 4 of the EfficientNetV2
    # paper
    def __init__(
        self,
        expand_ratio: float,
        kernel: int,
        stride: int,
        input_channels: int,
        out_channels: int,
        num_layers: int,
        width_mult: float = 1.0,
        depth_mult: float = 1.0,
        block: Callable[..., nn.Module] | None = None,
    ) -> None:
        input_channels = self.adjust_channels(input_channels, width_mult)
        out_channels = self.adjust_channels(out_channels, width_mult)
        num_layers = self.adjust_depth(num_layers, depth_mult)
        if block is None:
            block = MBConv
        super().__init__(
            expand_ratio, kernel, stride, input_channels, out_channels, num_layers, block
        )

    @staticmethod
    def adjust_depth(num_layers: int, depth_mult: float):
        return int(math.ceil(num_layers * depth_mult))


class FusedMBConvConfig(_MBConvConfig):
    # Stores information listed at Table 4 of the EfficientNetV2 paper
    def __init__(
        self,
        expand_ratio: float,
        kernel: int,
        stride: int,
        input_channels: int,
        out_channels: int,
        num_layers: int,
        block: Callable[..., nn.Module] | None = None,
    ) -> None:
        if block is None:
            block = FusedMBConv
        super().__init__(
            expand_ratio, kernel, stride, input_channels, out_channels, num_layers, block
        )


class _StochasticResidual(nn.Module):
    """What MBConv and FusedMBConv share: the stride check, and ``block`` with a residual
    connection through stochastic depth where it keeps the input's shape."""

    def __init__(self, cnf: _MBConvConfig) -> None:
        super().__init__()

        if not (1 <= cnf.stride <= 2):
            raise ValueError("illegal stride value")

        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels

    def _set_block(
        self, layers: list[nn.Module], stochastic_depth_prob: float, out_channels: int
    ) -> None:
        self.block = nn.Sequential(*layers)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.out_channels = out_channels

    def forward(self, input: Tensor) -> Tensor:
        result = self.block(input)
        if self.use_res_connect:
            result = self.stochastic_depth(result)
            result += input
        return result


class MBConv(_StochasticResidual):
    def __init__(
        self,
        cnf: MBConvConfig,
        stochastic_depth_prob: float,
        norm_layer: Callable[..., nn.Module],
        se_layer: Callable[..., nn.Module] = SqueezeExcitation,
    ) -> None:
        super().__init__(cnf)

        layers: list[nn.Module] = []
        activation_layer = nn.SiLU

        # expand
        expanded_channels = cnf.adjust_channels(cnf.input_channels, cnf.expand_ratio)
        if expanded_channels != cnf.input_channels:
            layers.append(
                Conv2dNormActivation(
                    cnf.input_channels,
                    expanded_channels,
                    kernel_size=1,
                    norm_layer=norm_layer,
                    activation_layer=activation_layer,
                )
            )

        # depthwise
        layers.append(
            Conv2dNormActivation(
                expanded_channels,
                expanded_channels,
                kernel_size=cnf.kernel,
                stride=cnf.stride,
                groups=expanded_channels,
                norm_layer=norm_layer,
                activation_layer=activation_layer,
            )
        )

        # squeeze and excitation
        squeeze_channels = max(1, cnf.input_channels // 4)
        layers.append(
            se_layer(expanded_channels, squeeze_channels, activation=partial(nn.SiLU, inplace=True))
        )

        # project
        layers.append(
            Conv2dNormActivation(
                expanded_channels,
                cnf.out_channels,
                kernel_size=1,
                norm_layer=norm_layer,
                activation_layer=None,
            )
        )

        self._set_block(layers, stochastic_depth_prob, cnf.out_channels)


class FusedMBConv(_StochasticResidual):
    def __init__(
        self,
        cnf: FusedMBConvConfig,
        stochastic_depth_prob: float,
        norm_layer: Callable[..., nn.Module],
    ) -> None:
        super().__init__(cnf)

        layers: list[nn.Module] = []
        activation_layer = nn.SiLU

        expanded_channels = cnf.adjust_channels(cnf.input_channels, cnf.expand_ratio)
        if expanded_channels != cnf.input_channels:
            # fused expand
            layers.append(
                Conv2dNormActivation(
                    cnf.input_channels,
                    expanded_channels,
                    kernel_size=cnf.kernel,
                    stride=cnf.stride,
                    norm_layer=norm_layer,
                    activation_layer=activation_layer,
                )
            )

            # project
            layers.append(
                Conv2dNormActivation(
                    expanded_channels,
                    cnf.out_channels,
                    kernel_size=1,
                    norm_layer=norm_layer,
                    activation_layer=None,
                )
            )
        else:
            layers.append(
                Conv2dNormActivation(
                    cnf.input_channels,
                    cnf.out_channels,
                    kernel_size=cnf.kernel,
                    stride=cnf.stride,
                    norm_layer=norm_layer,
                    activation_layer=activation_layer,
                )
            )

        self._set_block(layers, stochastic_depth_prob, cnf.out_channels)


def _init_linear(m: nn.Linear) -> None:
    init_range = 1.0 / math.sqrt(m.out_features)
    nn.init.uniform_(m.weight, -init_range, init_range)


class EfficientNet(PooledClassifier):
    def __init__(
        self,
        inverted_residual_setting: Sequence[MBConvConfig | FusedMBConvConfig],
        dropout: float,
        stochastic_depth_prob: float = 0.2,
        num_classes: int = 1000,
        norm_layer: Callable[..., nn.Module] | None = None,
        last_channel: int | None = None,
    ) -> None:
        """
        EfficientNet V1 and V2 main class

        Args:
            inverted_residual_setting (Sequence[Union[MBConvConfig, FusedMBConvConfig]]): Network
                structure
            dropout (float): The droupout probability
            stochastic_depth_prob (float): The stochastic depth probability
            num_classes (int): Number of classes
            norm_layer (Optional[Callable[..., nn.Module]]): Module specifying the normalization
                layer to use
            last_channel (int): The number of channels on the penultimate layer
        """
        super().__init__()

        _check_block_setting(
            inverted_residual_setting, "inverted_residual_setting", _MBConvConfig, "MBConvConfig"
        )

        if norm_layer is None:
            norm_layer = nn.BatchNorm2d

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
                activation_layer=nn.SiLU,
            )
        )

        # building inverted residual blocks
        total_stage_blocks = sum(cnf.num_layers for cnf in inverted_residual_setting)
        stage_block_id = 0
        for cnf in inverted_residual_setting:
            stage: list[nn.Module] = []
            for _ in range(cnf.num_layers):
                # copy to avoid modifications. shallow copy is enough
                block_cnf = copy.copy(cnf)

                # overwrite info if not the first conv in the stage
                if stage:
                    block_cnf.input_channels = block_cnf.out_channels
                    block_cnf.stride = 1

                # adjust stochastic depth probability based on the depth of the stage block
                sd_prob = stochastic_depth_prob * float(stage_block_id) / total_stage_blocks

                stage.append(block_cnf.block(block_cnf, sd_prob, norm_layer))
                stage_block_id += 1

            layers.append(nn.Sequential(*stage))

        # building last several layers
        lastconv_input_channels = inverted_residual_setting[-1].out_channels
        lastconv_output_channels = (
            last_channel if last_channel is not None else 4 * lastconv_input_channels
        )
        self._set_features(
            layers, lastconv_input_channels, lastconv_output_channels, norm_layer, nn.SiLU
        )
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout, inplace=True),
            nn.Linear(lastconv_output_channels, num_classes),
        )

        _init_conv_norm_linear(self, _init_linear)


def _efficientnet(
    inverted_residual_setting: Sequence[MBConvConfig | FusedMBConvConfig],
    dropout: float,
    last_channel: int | None,
    weights: WeightsEnum | None,
    progress: bool,
    **kwargs: Any,
) -> EfficientNet:
    model_fn = partial(EfficientNet, inverted_residual_setting, dropout, last_channel=last_channel)
    return _build_model(model_fn, weights, progress, kwargs)


# Stages: block config, expand_ratio, kernel, stride, input_channels, out_channels, num_layers.
# EfficientNet-B0's (Table 1 of the paper) are scaled by each B variant's width and depth;
# EfficientNetV2's are Table 4 of its paper (S) and torchvision's M and L.
_Stage = tuple[type[_MBConvConfig], int, int, int, int, int, int]
_B0_STAGES: list[_Stage] = [
    (MBConvConfig, 1, 3, 1, 32, 16, 1),
    (MBConvConfig, 6, 3, 2, 16, 24, 2),
    (MBConvConfig, 6, 5, 2, 24, 40, 2),
    (MBConvConfig, 6, 3, 2, 40, 80, 3),
    (MBConvConfig, 6, 5, 1, 80, 112, 3),
    (MBConvConfig, 6, 5, 2, 112, 192, 4),
    (MBConvConfig, 6, 3, 1, 192, 320, 1),
]
_V2_STAGES: dict[str, list[_Stage]] = {
    "efficientnet_v2_s": [
        (FusedMBConvConfig, 1, 3, 1, 24, 24, 2),
        (FusedMBConvConfig, 4, 3, 2, 24, 48, 4),
        (FusedMBConvConfig, 4, 3, 2, 48, 64, 4),
        (MBConvConfig, 4, 3, 2, 64, 128, 6),
        (MBConvConfig, 6, 3, 1, 128, 160, 9),
        (MBConvConfig, 6, 3, 2, 160, 256, 15),
    ],
    "efficientnet_v2_m": [
        (FusedMBConvConfig, 1, 3, 1, 24, 24, 3),
        (FusedMBConvConfig, 4, 3, 2, 24, 48, 5),
        (FusedMBConvConfig, 4, 3, 2, 48, 80, 5),
        (MBConvConfig, 4, 3, 2, 80, 160, 7),
        (MBConvConfig, 6, 3, 1, 160, 176, 14),
        (MBConvConfig, 6, 3, 2, 176, 304, 18),
        (MBConvConfig, 6, 3, 1, 304, 512, 5),
    ],
    "efficientnet_v2_l": [
        (FusedMBConvConfig, 1, 3, 1, 32, 32, 4),
        (FusedMBConvConfig, 4, 3, 2, 32, 64, 7),
        (FusedMBConvConfig, 4, 3, 2, 64, 96, 7),
        (MBConvConfig, 4, 3, 2, 96, 192, 10),
        (MBConvConfig, 6, 3, 1, 192, 224, 19),
        (MBConvConfig, 6, 3, 2, 224, 384, 25),
        (MBConvConfig, 6, 3, 1, 384, 640, 7),
    ],
}


def _efficientnet_conf(
    arch: str,
    **kwargs: Any,
) -> tuple[Sequence[MBConvConfig | FusedMBConvConfig], int | None]:
    if arch.startswith("efficientnet_b"):
        scaling = {"width_mult": kwargs.pop("width_mult"), "depth_mult": kwargs.pop("depth_mult")}
        return [config(*stage, **scaling) for config, *stage in _B0_STAGES], None
    for name, stages in _V2_STAGES.items():
        if arch.startswith(name):
            return [config(*stage) for config, *stage in stages], 1280
    raise ValueError(f"Unsupported model type {arch}")


# Each builder's architecture: width and depth multipliers (V1's compound scaling of B0),
# default dropout, and the norm layer it fixes (None: BatchNorm2d's defaults, a caller's own).
_TF_BATCHNORM = partial(nn.BatchNorm2d, eps=0.001, momentum=0.01)
_V2_BATCHNORM = partial(nn.BatchNorm2d, eps=1e-03)
_ARCHS: dict[str, tuple[float | None, float | None, float, Callable[..., nn.Module] | None]] = {
    "efficientnet_b0": (1.0, 1.0, 0.2, None),
    "efficientnet_b1": (1.0, 1.1, 0.2, None),
    "efficientnet_b2": (1.1, 1.2, 0.3, None),
    "efficientnet_b3": (1.2, 1.4, 0.3, None),
    "efficientnet_b4": (1.4, 1.8, 0.4, None),
    "efficientnet_b5": (1.6, 2.2, 0.4, _TF_BATCHNORM),
    "efficientnet_b6": (1.8, 2.6, 0.5, _TF_BATCHNORM),
    "efficientnet_b7": (2.0, 3.1, 0.5, _TF_BATCHNORM),
    "efficientnet_v2_s": (None, None, 0.2, _V2_BATCHNORM),
    "efficientnet_v2_m": (None, None, 0.3, _V2_BATCHNORM),
    "efficientnet_v2_l": (None, None, 0.4, _V2_BATCHNORM),
}


def _efficientnet_arch(
    name: str, weights: WeightsEnum | None, progress: bool, kwargs: dict[str, Any]
) -> EfficientNet:
    """The variant ``name``, built from its row of :data:`_ARCHS`."""
    width_mult, depth_mult, dropout, norm_layer = _ARCHS[name]
    scaling = {} if width_mult is None else {"width_mult": width_mult, "depth_mult": depth_mult}
    inverted_residual_setting, last_channel = _efficientnet_conf(name, **scaling)
    fixed = {} if norm_layer is None else {"norm_layer": norm_layer}
    return _efficientnet(
        inverted_residual_setting,
        kwargs.pop("dropout", dropout),
        last_channel,
        weights,
        progress,
        **fixed,
        **kwargs,
    )


# Weights: torchvision's checkpoints, presets and metadata. Rows: file, num_params, acc@1, acc@5,
# GFLOPS, MB, preset's crop and resize sizes. B0-B4 are ported from
# https://github.com/rwightman/pytorch-image-models/, B5-B7 from
# https://github.com/lukemelas/EfficientNet-PyTorch/, V2-L from
# https://github.com/google/automl/tree/master/efficientnetv2.
_bicubic = partial(_classification, interpolation=InterpolationMode.BICUBIC)
_bilinear = partial(_classification, interpolation=InterpolationMode.BILINEAR)
_RECIPE = "https://github.com/pytorch/vision/tree/main/references/classification#efficientnet-{}"
_DOCS_PORTED = """These weights are ported from the original paper."""
_v1 = partial(_imagenet_weights, min_size=(1, 1), recipe=_RECIPE.format("v1"), _docs=_DOCS_PORTED)
_v2 = partial(
    _imagenet_weights, min_size=(33, 33), recipe=_RECIPE.format("v2"), _docs=_DOCS_NEW_RECIPE
)


class EfficientNet_B0_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "efficientnet_b0_rwightman-7f5810bc", 5288548, 77.692, 93.532, 0.386, 20.451,
        transforms=_bicubic(224, 256),
    )  # fmt: skip
    DEFAULT = IMAGENET1K_V1


class EfficientNet_B1_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "efficientnet_b1_rwightman-bac287d4", 7794184, 78.642, 94.186, 0.687, 30.134,
        transforms=_bicubic(240, 256),
    )  # fmt: skip
    IMAGENET1K_V2 = _v1(
        "efficientnet_b1-c27df63c", 7794184, 79.838, 94.934, 0.687, 30.136,
        transforms=_bilinear(240, 255),
        recipe="https://github.com/pytorch/vision/issues/3995#new-recipe-with-lr-wd-crop-tuning",
        _docs=_DOCS_NEW_RECIPE,
    )  # fmt: skip
    DEFAULT = IMAGENET1K_V2


class EfficientNet_B2_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "efficientnet_b2_rwightman-c35c1473", 9109994, 80.608, 95.310, 1.088, 35.174,
        transforms=_bicubic(288, 288),
    )  # fmt: skip
    DEFAULT = IMAGENET1K_V1


class EfficientNet_B3_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "efficientnet_b3_rwightman-b3899882", 12233232, 82.008, 96.054, 1.827, 47.184,
        transforms=_bicubic(300, 320),
    )  # fmt: skip
    DEFAULT = IMAGENET1K_V1


class EfficientNet_B4_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "efficientnet_b4_rwightman-23ab8bcd", 19341616, 83.384, 96.594, 4.394, 74.489,
        transforms=_bicubic(380, 384),
    )  # fmt: skip
    DEFAULT = IMAGENET1K_V1


class EfficientNet_B5_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "efficientnet_b5_lukemelas-1a07897c", 30389784, 83.444, 96.628, 10.266, 116.864,
        transforms=_bicubic(456, 456),
    )  # fmt: skip
    DEFAULT = IMAGENET1K_V1


class EfficientNet_B6_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "efficientnet_b6_lukemelas-24a108a5", 43040704, 84.008, 96.916, 19.068, 165.362,
        transforms=_bicubic(528, 528),
    )  # fmt: skip
    DEFAULT = IMAGENET1K_V1


class EfficientNet_B7_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "efficientnet_b7_lukemelas-c5b4e57e", 66347960, 84.122, 96.908, 37.746, 254.675,
        transforms=_bicubic(600, 600),
    )  # fmt: skip
    DEFAULT = IMAGENET1K_V1


class EfficientNet_V2_S_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v2(
        "efficientnet_v2_s-dd5fe13b", 21458488, 84.228, 96.878, 8.366, 82.704,
        transforms=_bilinear(384, 384),
    )  # fmt: skip
    DEFAULT = IMAGENET1K_V1


class EfficientNet_V2_M_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v2(
        "efficientnet_v2_m-dc08266a", 54139356, 85.112, 97.156, 24.582, 208.01,
        transforms=_bilinear(480, 480),
    )  # fmt: skip
    DEFAULT = IMAGENET1K_V1


class EfficientNet_V2_L_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v2(
        "efficientnet_v2_l-59c71312", 118515272, 85.808, 97.788, 56.08, 454.573,
        transforms=_bicubic(480, 480, mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5)),
        _docs=_DOCS_PORTED,
    )  # fmt: skip
    DEFAULT = IMAGENET1K_V1


# Builders: one row of _ARCHS each.


@_model_builder()
def efficientnet_b0(
    *, weights: EfficientNet_B0_Weights | None = None, progress: bool = True, **kwargs: Any
) -> EfficientNet:
    """EfficientNet-B0 from the `EfficientNet paper <https://arxiv.org/abs/1905.11946>`_."""
    return _efficientnet_arch("efficientnet_b0", weights, progress, kwargs)


@_model_builder()
def efficientnet_b1(
    *, weights: EfficientNet_B1_Weights | None = None, progress: bool = True, **kwargs: Any
) -> EfficientNet:
    """EfficientNet-B1 from the `EfficientNet paper <https://arxiv.org/abs/1905.11946>`_."""
    return _efficientnet_arch("efficientnet_b1", weights, progress, kwargs)


@_model_builder()
def efficientnet_b2(
    *, weights: EfficientNet_B2_Weights | None = None, progress: bool = True, **kwargs: Any
) -> EfficientNet:
    """EfficientNet-B2 from the `EfficientNet paper <https://arxiv.org/abs/1905.11946>`_."""
    return _efficientnet_arch("efficientnet_b2", weights, progress, kwargs)


@_model_builder()
def efficientnet_b3(
    *, weights: EfficientNet_B3_Weights | None = None, progress: bool = True, **kwargs: Any
) -> EfficientNet:
    """EfficientNet-B3 from the `EfficientNet paper <https://arxiv.org/abs/1905.11946>`_."""
    return _efficientnet_arch("efficientnet_b3", weights, progress, kwargs)


@_model_builder()
def efficientnet_b4(
    *, weights: EfficientNet_B4_Weights | None = None, progress: bool = True, **kwargs: Any
) -> EfficientNet:
    """EfficientNet-B4 from the `EfficientNet paper <https://arxiv.org/abs/1905.11946>`_."""
    return _efficientnet_arch("efficientnet_b4", weights, progress, kwargs)


@_model_builder()
def efficientnet_b5(
    *, weights: EfficientNet_B5_Weights | None = None, progress: bool = True, **kwargs: Any
) -> EfficientNet:
    """EfficientNet-B5 from the `EfficientNet paper <https://arxiv.org/abs/1905.11946>`_."""
    return _efficientnet_arch("efficientnet_b5", weights, progress, kwargs)


@_model_builder()
def efficientnet_b6(
    *, weights: EfficientNet_B6_Weights | None = None, progress: bool = True, **kwargs: Any
) -> EfficientNet:
    """EfficientNet-B6 from the `EfficientNet paper <https://arxiv.org/abs/1905.11946>`_."""
    return _efficientnet_arch("efficientnet_b6", weights, progress, kwargs)


@_model_builder()
def efficientnet_b7(
    *, weights: EfficientNet_B7_Weights | None = None, progress: bool = True, **kwargs: Any
) -> EfficientNet:
    """EfficientNet-B7 from the `EfficientNet paper <https://arxiv.org/abs/1905.11946>`_."""
    return _efficientnet_arch("efficientnet_b7", weights, progress, kwargs)


@_model_builder()
def efficientnet_v2_s(
    *, weights: EfficientNet_V2_S_Weights | None = None, progress: bool = True, **kwargs: Any
) -> EfficientNet:
    """EfficientNetV2-S from the `EfficientNetV2 paper <https://arxiv.org/abs/2104.00298>`_."""
    return _efficientnet_arch("efficientnet_v2_s", weights, progress, kwargs)


@_model_builder()
def efficientnet_v2_m(
    *, weights: EfficientNet_V2_M_Weights | None = None, progress: bool = True, **kwargs: Any
) -> EfficientNet:
    """EfficientNetV2-M from the `EfficientNetV2 paper <https://arxiv.org/abs/2104.00298>`_."""
    return _efficientnet_arch("efficientnet_v2_m", weights, progress, kwargs)


@_model_builder()
def efficientnet_v2_l(
    *, weights: EfficientNet_V2_L_Weights | None = None, progress: bool = True, **kwargs: Any
) -> EfficientNet:
    """EfficientNetV2-L from the `EfficientNetV2 paper <https://arxiv.org/abs/2104.00298>`_."""
    return _efficientnet_arch("efficientnet_v2_l", weights, progress, kwargs)
