"""RegNetX and RegNetY (torchvision's ``models.regnet``).

Ported from torchvision (BSD-3-Clause); module names and state_dict keys match.
"""

import math
from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from ember import Tensor, nn

from ..transforms.functional import InterpolationMode
from ._api import WeightsEnum
from ._layers import Conv2dNormActivation, SqueezeExcitation
from ._meta import _classification, _imagenet_weights
from ._utils import _build_model, _make_divisible, _model_builder

__all__ = [
    "RegNet",
    "RegNet_Y_400MF_Weights",
    "RegNet_Y_800MF_Weights",
    "RegNet_Y_1_6GF_Weights",
    "RegNet_Y_3_2GF_Weights",
    "RegNet_Y_8GF_Weights",
    "RegNet_Y_16GF_Weights",
    "RegNet_Y_32GF_Weights",
    "RegNet_Y_128GF_Weights",
    "RegNet_X_400MF_Weights",
    "RegNet_X_800MF_Weights",
    "RegNet_X_1_6GF_Weights",
    "RegNet_X_3_2GF_Weights",
    "RegNet_X_8GF_Weights",
    "RegNet_X_16GF_Weights",
    "RegNet_X_32GF_Weights",
    "regnet_y_400mf",
    "regnet_y_800mf",
    "regnet_y_1_6gf",
    "regnet_y_3_2gf",
    "regnet_y_8gf",
    "regnet_y_16gf",
    "regnet_y_32gf",
    "regnet_y_128gf",
    "regnet_x_400mf",
    "regnet_x_800mf",
    "regnet_x_1_6gf",
    "regnet_x_3_2gf",
    "regnet_x_8gf",
    "regnet_x_16gf",
    "regnet_x_32gf",
]


class SimpleStemIN(Conv2dNormActivation):
    """Simple stem for ImageNet: 3x3, BN, ReLU."""

    def __init__(
        self,
        width_in: int,
        width_out: int,
        norm_layer: Callable[..., nn.Module],
        activation_layer: Callable[..., nn.Module],
    ) -> None:
        super().__init__(
            width_in,
            width_out,
            kernel_size=3,
            stride=2,
            norm_layer=norm_layer,
            activation_layer=activation_layer,
        )


class BottleneckTransform(nn.Sequential):
    """Bottleneck transformation: 1x1, 3x3 [+SE], 1x1."""

    def __init__(
        self,
        width_in: int,
        width_out: int,
        stride: int,
        norm_layer: Callable[..., nn.Module],
        activation_layer: Callable[..., nn.Module],
        group_width: int,
        bottleneck_multiplier: float,
        se_ratio: float | None,
    ) -> None:
        layers: OrderedDict[str, nn.Module] = OrderedDict()
        w_b = int(round(width_out * bottleneck_multiplier))
        g = w_b // group_width

        layers["a"] = Conv2dNormActivation(
            width_in,
            w_b,
            kernel_size=1,
            stride=1,
            norm_layer=norm_layer,
            activation_layer=activation_layer,
        )
        layers["b"] = Conv2dNormActivation(
            w_b,
            w_b,
            kernel_size=3,
            stride=stride,
            groups=g,
            norm_layer=norm_layer,
            activation_layer=activation_layer,
        )

        if se_ratio:
            # The SE reduction ratio is defined with respect to the
            # beginning of the block
            width_se_out = int(round(se_ratio * width_in))
            layers["se"] = SqueezeExcitation(
                input_channels=w_b,
                squeeze_channels=width_se_out,
                activation=activation_layer,
            )

        layers["c"] = Conv2dNormActivation(
            w_b, width_out, kernel_size=1, stride=1, norm_layer=norm_layer, activation_layer=None
        )
        super().__init__(layers)


class ResBottleneckBlock(nn.Module):
    """Residual bottleneck block: x + F(x), F = bottleneck transform."""

    def __init__(
        self,
        width_in: int,
        width_out: int,
        stride: int,
        norm_layer: Callable[..., nn.Module],
        activation_layer: Callable[..., nn.Module],
        group_width: int = 1,
        bottleneck_multiplier: float = 1.0,
        se_ratio: float | None = None,
    ) -> None:
        super().__init__()

        # Use skip connection with projection if shape changes
        self.proj = None
        should_proj = (width_in != width_out) or (stride != 1)
        if should_proj:
            self.proj = Conv2dNormActivation(
                width_in,
                width_out,
                kernel_size=1,
                stride=stride,
                norm_layer=norm_layer,
                activation_layer=None,
            )
        self.f = BottleneckTransform(
            width_in,
            width_out,
            stride,
            norm_layer,
            activation_layer,
            group_width,
            bottleneck_multiplier,
            se_ratio,
        )
        self.activation = activation_layer(inplace=True)

    def forward(self, x: Tensor) -> Tensor:
        if self.proj is not None:
            x = self.proj(x) + self.f(x)
        else:
            x = x + self.f(x)
        return self.activation(x)


class AnyStage(nn.Sequential):
    """AnyNet stage (sequence of blocks w/ the same output shape)."""

    def __init__(
        self,
        width_in: int,
        width_out: int,
        stride: int,
        depth: int,
        block_constructor: Callable[..., nn.Module],
        norm_layer: Callable[..., nn.Module],
        activation_layer: Callable[..., nn.Module],
        group_width: int,
        bottleneck_multiplier: float,
        se_ratio: float | None = None,
        stage_index: int = 0,
    ) -> None:
        super().__init__()

        for i in range(depth):
            block = block_constructor(
                width_in if i == 0 else width_out,
                width_out,
                stride if i == 0 else 1,
                norm_layer,
                activation_layer,
                group_width,
                bottleneck_multiplier,
                se_ratio,
            )

            self.add_module(f"block{stage_index}-{i}", block)


class BlockParams:
    def __init__(
        self,
        depths: list[int],
        widths: list[int],
        group_widths: list[int],
        bottleneck_multipliers: list[float],
        strides: list[int],
        se_ratio: float | None = None,
    ) -> None:
        self.depths = depths
        self.widths = widths
        self.group_widths = group_widths
        self.bottleneck_multipliers = bottleneck_multipliers
        self.strides = strides
        self.se_ratio = se_ratio

    @classmethod
    def from_init_params(
        cls,
        depth: int,
        w_0: int,
        w_a: float,
        w_m: float,
        group_width: int,
        bottleneck_multiplier: float = 1.0,
        se_ratio: float | None = None,
        **kwargs: Any,
    ) -> "BlockParams":
        """
        Programmatically compute all the per-block settings,
        given the RegNet parameters.

        The first step is to compute the quantized linear block parameters,
        in log space. Key parameters are:
        - `w_a` is the width progression slope
        - `w_0` is the initial width
        - `w_m` is the width stepping in the log space

        In other terms
        `log(block_width) = log(w_0) + w_m * block_capacity`,
        with `bock_capacity` ramping up following the w_0 and w_a params.
        This block width is finally quantized to multiples of 8.

        The second step is to compute the parameters per stage,
        taking into account the skip connection and the final 1x1 convolutions.
        We use the fact that the output width is constant within a stage.
        """

        QUANT = 8
        STRIDE = 2

        if w_a < 0 or w_0 <= 0 or w_m <= 1 or w_0 % 8 != 0:
            raise ValueError("Invalid RegNet settings")
        # Compute the block widths. Each stage has one unique block width. In float32, as
        # torchvision computes them (with torch's default dtype), so the roundings agree.
        f32 = np.float32
        widths_cont = np.arange(depth, dtype=f32) * f32(w_a) + f32(w_0)
        block_capacity = np.round(np.log(widths_cont / f32(w_0)) / f32(math.log(w_m)))
        block_widths = (
            (np.round(f32(w_0) * np.power(f32(w_m), block_capacity) / f32(QUANT)) * QUANT)
            .astype(np.int32)
            .tolist()
        )
        num_stages = len(set(block_widths))

        # Convert to per stage parameters
        split_helper = zip(
            block_widths + [0],
            [0] + block_widths,
            block_widths + [0],
            [0] + block_widths,
        )
        splits = [w != wp or r != rp for w, wp, r, rp in split_helper]

        stage_widths = [w for w, t in zip(block_widths, splits[:-1]) if t]
        stage_depths = np.diff([d for d, t in enumerate(splits) if t]).tolist()

        strides = [STRIDE] * num_stages
        bottleneck_multipliers = [bottleneck_multiplier] * num_stages
        group_widths = [group_width] * num_stages

        # Adjust the compatibility of stage widths and group widths
        stage_widths, group_widths = cls._adjust_widths_groups_compatibilty(
            stage_widths, bottleneck_multipliers, group_widths
        )

        return cls(
            depths=stage_depths,
            widths=stage_widths,
            group_widths=group_widths,
            bottleneck_multipliers=bottleneck_multipliers,
            strides=strides,
            se_ratio=se_ratio,
        )

    def _get_expanded_params(self):
        return zip(
            self.widths, self.strides, self.depths, self.group_widths, self.bottleneck_multipliers
        )

    @staticmethod
    def _adjust_widths_groups_compatibilty(
        stage_widths: list[int], bottleneck_ratios: list[float], group_widths: list[int]
    ) -> tuple[list[int], list[int]]:
        """
        Adjusts the compatibility of widths and groups,
        depending on the bottleneck ratio.
        """
        # Compute all widths for the current settings
        widths = [int(w * b) for w, b in zip(stage_widths, bottleneck_ratios)]
        group_widths_min = [min(g, w_bot) for g, w_bot in zip(group_widths, widths)]

        # Compute the adjusted widths so that stage and group widths fit
        ws_bot = [_make_divisible(w_bot, g) for w_bot, g in zip(widths, group_widths_min)]
        stage_widths = [int(w_bot / b) for w_bot, b in zip(ws_bot, bottleneck_ratios)]
        return stage_widths, group_widths_min


class RegNet(nn.Module):
    def __init__(
        self,
        block_params: BlockParams,
        num_classes: int = 1000,
        stem_width: int = 32,
        stem_type: Callable[..., nn.Module] | None = None,
        block_type: Callable[..., nn.Module] | None = None,
        norm_layer: Callable[..., nn.Module] | None = None,
        activation: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()

        if stem_type is None:
            stem_type = SimpleStemIN
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        if block_type is None:
            block_type = ResBottleneckBlock
        if activation is None:
            activation = nn.ReLU

        # Ad hoc stem
        self.stem = stem_type(
            3,  # width_in
            stem_width,
            norm_layer,
            activation,
        )

        current_width = stem_width

        blocks = []
        for i, (
            width_out,
            stride,
            depth,
            group_width,
            bottleneck_multiplier,
        ) in enumerate(block_params._get_expanded_params()):
            blocks.append(
                (
                    f"block{i + 1}",
                    AnyStage(
                        current_width,
                        width_out,
                        stride,
                        depth,
                        block_type,
                        norm_layer,
                        activation,
                        group_width,
                        bottleneck_multiplier,
                        block_params.se_ratio,
                        stage_index=i + 1,
                    ),
                )
            )

            current_width = width_out

        self.trunk_output = nn.Sequential(OrderedDict(blocks))

        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(in_features=current_width, out_features=num_classes)

        # Performs ResNet-style weight initialization
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                # Note that there is no bias due to BN
                fan_out = m.kernel_size[0] * m.kernel_size[1] * m.out_channels
                nn.init.normal_(m.weight, mean=0.0, std=math.sqrt(2.0 / fan_out))
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, mean=0.0, std=0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x: Tensor) -> Tensor:
        x = self.stem(x)
        x = self.trunk_output(x)

        x = self.avgpool(x)
        x = x.flatten(start_dim=1)
        return self.fc(x)


def _regnet(
    block_params: BlockParams,
    weights: WeightsEnum | None,
    progress: bool,
    **kwargs: Any,
) -> RegNet:
    norm_layer = kwargs.pop("norm_layer", partial(nn.BatchNorm2d, eps=1e-05, momentum=0.1))
    return _build_model(
        partial(RegNet, block_params, norm_layer=norm_layer), weights, progress, kwargs
    )


# Each builder's BlockParams.from_init_params arguments (RegNetY adds squeeze-excitation).
_ARCHS: dict[str, dict[str, Any]] = {
    "regnet_y_400mf": dict(depth=16, w_0=48, w_a=27.89, w_m=2.09, group_width=8, se_ratio=0.25),
    "regnet_y_800mf": dict(depth=14, w_0=56, w_a=38.84, w_m=2.4, group_width=16, se_ratio=0.25),
    "regnet_y_1_6gf": dict(depth=27, w_0=48, w_a=20.71, w_m=2.65, group_width=24, se_ratio=0.25),
    "regnet_y_3_2gf": dict(depth=21, w_0=80, w_a=42.63, w_m=2.66, group_width=24, se_ratio=0.25),
    "regnet_y_8gf": dict(depth=17, w_0=192, w_a=76.82, w_m=2.19, group_width=56, se_ratio=0.25),
    "regnet_y_16gf": dict(depth=18, w_0=200, w_a=106.23, w_m=2.48, group_width=112, se_ratio=0.25),
    "regnet_y_32gf": dict(depth=20, w_0=232, w_a=115.89, w_m=2.53, group_width=232, se_ratio=0.25),
    "regnet_y_128gf": dict(depth=27, w_0=456, w_a=160.83, w_m=2.52, group_width=264, se_ratio=0.25),
    "regnet_x_400mf": dict(depth=22, w_0=24, w_a=24.48, w_m=2.54, group_width=16),
    "regnet_x_800mf": dict(depth=16, w_0=56, w_a=35.73, w_m=2.28, group_width=16),
    "regnet_x_1_6gf": dict(depth=18, w_0=80, w_a=34.01, w_m=2.25, group_width=24),
    "regnet_x_3_2gf": dict(depth=25, w_0=88, w_a=26.31, w_m=2.25, group_width=48),
    "regnet_x_8gf": dict(depth=23, w_0=80, w_a=49.56, w_m=2.88, group_width=120),
    "regnet_x_16gf": dict(depth=22, w_0=216, w_a=55.59, w_m=2.1, group_width=128),
    "regnet_x_32gf": dict(depth=23, w_0=320, w_a=69.86, w_m=2.0, group_width=168),
}


def _regnet_arch(
    name: str, weights: WeightsEnum | None, progress: bool, kwargs: dict[str, Any]
) -> RegNet:
    """The variant ``name``: its row of :data:`_ARCHS`. As in torchvision, ``kwargs`` go to
    both ``BlockParams.from_init_params`` (which ignores what it does not take) and ``RegNet``."""
    params = BlockParams.from_init_params(**_ARCHS[name], **kwargs)
    return _regnet(params, weights, progress, **kwargs)


# Weights: torchvision's checkpoints, presets and metadata. Rows: file, num_params, acc@1, acc@5,
# GFLOPS, MB. _v1: the original recipe (recipe: the models' size class), _v2: the new recipe,
# _swag_e2e and _swag_linear: SWAG's (https://github.com/facebookresearch/SWAG) fine-tuned end to
# end or with a linear classifier on its frozen trunk.
_RECIPE_V1 = "https://github.com/pytorch/vision/tree/main/references/classification#{}-models"
_RECIPE_V2 = "https://github.com/pytorch/vision/issues/3995#new-recipe"
_RECIPE_V2_FIXRES = "https://github.com/pytorch/vision/issues/3995#new-recipe-with-fixres"
_v1 = partial(
    _imagenet_weights,
    transforms=_classification(224),
    min_size=(1, 1),
    _docs="""These weights reproduce closely the results of the paper using a simple training recipe.""",  # noqa: E501
)
_v2 = partial(
    _imagenet_weights,
    transforms=_classification(224, 232),
    min_size=(1, 1),
    recipe=_RECIPE_V2,
    _docs="""
                These weights improve upon the results of the original paper by using a modified version of TorchVision's
                `new training recipe
                <https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.
            """,  # noqa: E501
)
_swag = partial(
    _imagenet_weights,
    min_size=(1, 1),
    license="https://github.com/facebookresearch/SWAG/blob/main/LICENSE",
)
_swag_e2e = partial(
    _swag,
    transforms=_classification(384, 384, interpolation=InterpolationMode.BICUBIC),
    recipe="https://github.com/facebookresearch/SWAG",
    _docs="""
                These weights are learnt via transfer learning by end-to-end fine-tuning the original
                `SWAG <https://arxiv.org/abs/2201.08371>`_ weights on ImageNet-1K data.
            """,  # noqa: E501
)
_swag_linear = partial(
    _swag,
    transforms=_classification(224, 224, interpolation=InterpolationMode.BICUBIC),
    recipe="https://github.com/pytorch/vision/pull/5793",
    _docs="""
                These weights are composed of the original frozen `SWAG <https://arxiv.org/abs/2201.08371>`_ trunk
                weights and a linear classifier learnt on top of them trained on ImageNet-1K data.
            """,  # noqa: E501
)
_small, _medium, _large = (_RECIPE_V1.format(size) for size in ("small", "medium", "large"))


class RegNet_Y_400MF_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "regnet_y_400mf-c65dace8", 4344144, 74.046, 91.716, 0.402, 16.806, recipe=_small
    )
    IMAGENET1K_V2 = _v2("regnet_y_400mf-e6988f5f", 4344144, 75.804, 92.742, 0.402, 16.806)
    DEFAULT = IMAGENET1K_V2


class RegNet_Y_800MF_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "regnet_y_800mf-1b27b58c", 6432512, 76.420, 93.136, 0.834, 24.774, recipe=_small
    )
    IMAGENET1K_V2 = _v2("regnet_y_800mf-58fc7688", 6432512, 78.828, 94.502, 0.834, 24.774)
    DEFAULT = IMAGENET1K_V2


class RegNet_Y_1_6GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "regnet_y_1_6gf-b11a554e", 11202430, 77.950, 93.966, 1.612, 43.152, recipe=_small
    )
    IMAGENET1K_V2 = _v2("regnet_y_1_6gf-0d7bc02a", 11202430, 80.876, 95.444, 1.612, 43.152)
    DEFAULT = IMAGENET1K_V2


class RegNet_Y_3_2GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "regnet_y_3_2gf-b5a9779c", 19436338, 78.948, 94.576, 3.176, 74.567, recipe=_medium
    )
    IMAGENET1K_V2 = _v2("regnet_y_3_2gf-9180c971", 19436338, 81.982, 95.972, 3.176, 74.567)
    DEFAULT = IMAGENET1K_V2


class RegNet_Y_8GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "regnet_y_8gf-d0d0e4a8", 39381472, 80.032, 95.048, 8.473, 150.701, recipe=_medium
    )
    IMAGENET1K_V2 = _v2("regnet_y_8gf-dc2b1b54", 39381472, 82.828, 96.330, 8.473, 150.701)
    DEFAULT = IMAGENET1K_V2


class RegNet_Y_16GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "regnet_y_16gf-9e6ed7dd", 83590140, 80.424, 95.240, 15.912, 319.49, recipe=_large
    )
    IMAGENET1K_V2 = _v2("regnet_y_16gf-3e4a00f9", 83590140, 82.886, 96.328, 15.912, 319.49)
    IMAGENET1K_SWAG_E2E_V1 = _swag_e2e(
        "regnet_y_16gf_swag-43afe44d", 83590140, 86.012, 98.054, 46.735, 319.49
    )
    IMAGENET1K_SWAG_LINEAR_V1 = _swag_linear(
        "regnet_y_16gf_lc_swag-f3ec0043", 83590140, 83.976, 97.244, 15.912, 319.49
    )
    DEFAULT = IMAGENET1K_V2


class RegNet_Y_32GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "regnet_y_32gf-4dee3f7a", 145046770, 80.878, 95.340, 32.28, 554.076, recipe=_large
    )
    IMAGENET1K_V2 = _v2("regnet_y_32gf-8db6d4b5", 145046770, 83.368, 96.498, 32.28, 554.076)
    IMAGENET1K_SWAG_E2E_V1 = _swag_e2e(
        "regnet_y_32gf_swag-04fdfa75", 145046770, 86.838, 98.362, 94.826, 554.076
    )
    IMAGENET1K_SWAG_LINEAR_V1 = _swag_linear(
        "regnet_y_32gf_lc_swag-e1583746", 145046770, 84.622, 97.480, 32.28, 554.076
    )
    DEFAULT = IMAGENET1K_V2


class RegNet_Y_128GF_Weights(WeightsEnum):
    IMAGENET1K_SWAG_E2E_V1 = _swag_e2e(
        "regnet_y_128gf_swag-c8ce3e52", 644812894, 88.228, 98.682, 374.57, 2461.564
    )
    IMAGENET1K_SWAG_LINEAR_V1 = _swag_linear(
        "regnet_y_128gf_lc_swag-cbe8ce12", 644812894, 86.068, 97.844, 127.518, 2461.564
    )
    DEFAULT = IMAGENET1K_SWAG_E2E_V1


class RegNet_X_400MF_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "regnet_x_400mf-adf1edd5", 5495976, 72.834, 90.950, 0.414, 21.258, recipe=_small
    )
    IMAGENET1K_V2 = _v2(
        "regnet_x_400mf-62229a5f", 5495976, 74.864, 92.322, 0.414, 21.257,
        recipe=_RECIPE_V2_FIXRES,
    )  # fmt: skip
    DEFAULT = IMAGENET1K_V2


class RegNet_X_800MF_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "regnet_x_800mf-ad17e45c", 7259656, 75.212, 92.348, 0.8, 27.945, recipe=_small
    )
    IMAGENET1K_V2 = _v2(
        "regnet_x_800mf-94a99ebd", 7259656, 77.522, 93.826, 0.8, 27.945,
        recipe=_RECIPE_V2_FIXRES,
    )  # fmt: skip
    DEFAULT = IMAGENET1K_V2


class RegNet_X_1_6GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "regnet_x_1_6gf-e3633e7f", 9190136, 77.040, 93.440, 1.603, 35.339, recipe=_small
    )
    IMAGENET1K_V2 = _v2(
        "regnet_x_1_6gf-a12f2b72", 9190136, 79.668, 94.922, 1.603, 35.339,
        recipe=_RECIPE_V2_FIXRES,
    )  # fmt: skip
    DEFAULT = IMAGENET1K_V2


class RegNet_X_3_2GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "regnet_x_3_2gf-f342aeae", 15296552, 78.364, 93.992, 3.177, 58.756, recipe=_medium
    )
    IMAGENET1K_V2 = _v2("regnet_x_3_2gf-7071aa85", 15296552, 81.196, 95.430, 3.177, 58.756)
    DEFAULT = IMAGENET1K_V2


class RegNet_X_8GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "regnet_x_8gf-03ceed89", 39572648, 79.344, 94.686, 7.995, 151.456, recipe=_medium
    )
    IMAGENET1K_V2 = _v2("regnet_x_8gf-2b70d774", 39572648, 81.682, 95.678, 7.995, 151.456)
    DEFAULT = IMAGENET1K_V2


class RegNet_X_16GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "regnet_x_16gf-2007eb11", 54278536, 80.058, 94.944, 15.941, 207.627, recipe=_medium
    )
    IMAGENET1K_V2 = _v2("regnet_x_16gf-ba3796d7", 54278536, 82.716, 96.196, 15.941, 207.627)
    DEFAULT = IMAGENET1K_V2


class RegNet_X_32GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "regnet_x_32gf-9d47f8d0", 107811560, 80.622, 95.248, 31.736, 412.039, recipe=_large
    )
    IMAGENET1K_V2 = _v2("regnet_x_32gf-6eb8fdc6", 107811560, 83.014, 96.288, 31.736, 412.039)
    DEFAULT = IMAGENET1K_V2


# Builders: one row of _ARCHS each.


@_model_builder()
def regnet_y_400mf(
    *, weights: RegNet_Y_400MF_Weights | None = None, progress: bool = True, **kwargs: Any
) -> RegNet:
    """Constructs a RegNetY_400MF architecture from
    `Designing Network Design Spaces <https://arxiv.org/abs/2003.13678>`_."""
    return _regnet_arch("regnet_y_400mf", weights, progress, kwargs)


@_model_builder()
def regnet_y_800mf(
    *, weights: RegNet_Y_800MF_Weights | None = None, progress: bool = True, **kwargs: Any
) -> RegNet:
    """Constructs a RegNetY_800MF architecture from
    `Designing Network Design Spaces <https://arxiv.org/abs/2003.13678>`_."""
    return _regnet_arch("regnet_y_800mf", weights, progress, kwargs)


@_model_builder()
def regnet_y_1_6gf(
    *, weights: RegNet_Y_1_6GF_Weights | None = None, progress: bool = True, **kwargs: Any
) -> RegNet:
    """Constructs a RegNetY_1.6GF architecture from
    `Designing Network Design Spaces <https://arxiv.org/abs/2003.13678>`_."""
    return _regnet_arch("regnet_y_1_6gf", weights, progress, kwargs)


@_model_builder()
def regnet_y_3_2gf(
    *, weights: RegNet_Y_3_2GF_Weights | None = None, progress: bool = True, **kwargs: Any
) -> RegNet:
    """Constructs a RegNetY_3.2GF architecture from
    `Designing Network Design Spaces <https://arxiv.org/abs/2003.13678>`_."""
    return _regnet_arch("regnet_y_3_2gf", weights, progress, kwargs)


@_model_builder()
def regnet_y_8gf(
    *, weights: RegNet_Y_8GF_Weights | None = None, progress: bool = True, **kwargs: Any
) -> RegNet:
    """Constructs a RegNetY_8GF architecture from
    `Designing Network Design Spaces <https://arxiv.org/abs/2003.13678>`_."""
    return _regnet_arch("regnet_y_8gf", weights, progress, kwargs)


@_model_builder()
def regnet_y_16gf(
    *, weights: RegNet_Y_16GF_Weights | None = None, progress: bool = True, **kwargs: Any
) -> RegNet:
    """Constructs a RegNetY_16GF architecture from
    `Designing Network Design Spaces <https://arxiv.org/abs/2003.13678>`_."""
    return _regnet_arch("regnet_y_16gf", weights, progress, kwargs)


@_model_builder()
def regnet_y_32gf(
    *, weights: RegNet_Y_32GF_Weights | None = None, progress: bool = True, **kwargs: Any
) -> RegNet:
    """Constructs a RegNetY_32GF architecture from
    `Designing Network Design Spaces <https://arxiv.org/abs/2003.13678>`_."""
    return _regnet_arch("regnet_y_32gf", weights, progress, kwargs)


@_model_builder(None)
def regnet_y_128gf(
    *, weights: RegNet_Y_128GF_Weights | None = None, progress: bool = True, **kwargs: Any
) -> RegNet:
    """Constructs a RegNetY_128GF architecture from
    `Designing Network Design Spaces <https://arxiv.org/abs/2003.13678>`_."""
    return _regnet_arch("regnet_y_128gf", weights, progress, kwargs)


@_model_builder()
def regnet_x_400mf(
    *, weights: RegNet_X_400MF_Weights | None = None, progress: bool = True, **kwargs: Any
) -> RegNet:
    """Constructs a RegNetX_400MF architecture from
    `Designing Network Design Spaces <https://arxiv.org/abs/2003.13678>`_."""
    return _regnet_arch("regnet_x_400mf", weights, progress, kwargs)


@_model_builder()
def regnet_x_800mf(
    *, weights: RegNet_X_800MF_Weights | None = None, progress: bool = True, **kwargs: Any
) -> RegNet:
    """Constructs a RegNetX_800MF architecture from
    `Designing Network Design Spaces <https://arxiv.org/abs/2003.13678>`_."""
    return _regnet_arch("regnet_x_800mf", weights, progress, kwargs)


@_model_builder()
def regnet_x_1_6gf(
    *, weights: RegNet_X_1_6GF_Weights | None = None, progress: bool = True, **kwargs: Any
) -> RegNet:
    """Constructs a RegNetX_1.6GF architecture from
    `Designing Network Design Spaces <https://arxiv.org/abs/2003.13678>`_."""
    return _regnet_arch("regnet_x_1_6gf", weights, progress, kwargs)


@_model_builder()
def regnet_x_3_2gf(
    *, weights: RegNet_X_3_2GF_Weights | None = None, progress: bool = True, **kwargs: Any
) -> RegNet:
    """Constructs a RegNetX_3.2GF architecture from
    `Designing Network Design Spaces <https://arxiv.org/abs/2003.13678>`_."""
    return _regnet_arch("regnet_x_3_2gf", weights, progress, kwargs)


@_model_builder()
def regnet_x_8gf(
    *, weights: RegNet_X_8GF_Weights | None = None, progress: bool = True, **kwargs: Any
) -> RegNet:
    """Constructs a RegNetX_8GF architecture from
    `Designing Network Design Spaces <https://arxiv.org/abs/2003.13678>`_."""
    return _regnet_arch("regnet_x_8gf", weights, progress, kwargs)


@_model_builder()
def regnet_x_16gf(
    *, weights: RegNet_X_16GF_Weights | None = None, progress: bool = True, **kwargs: Any
) -> RegNet:
    """Constructs a RegNetX_16GF architecture from
    `Designing Network Design Spaces <https://arxiv.org/abs/2003.13678>`_."""
    return _regnet_arch("regnet_x_16gf", weights, progress, kwargs)


@_model_builder()
def regnet_x_32gf(
    *, weights: RegNet_X_32GF_Weights | None = None, progress: bool = True, **kwargs: Any
) -> RegNet:
    """Constructs a RegNetX_32GF architecture from
    `Designing Network Design Spaces <https://arxiv.org/abs/2003.13678>`_."""
    return _regnet_arch("regnet_x_32gf", weights, progress, kwargs)
