"""ResNet, ResNeXt and Wide ResNet (torchvision's ``models.resnet``)."""

from collections.abc import Callable
from functools import partial
from typing import Any

import ember
from ember import Tensor, nn

from ._api import WeightsEnum
from ._meta import _classification, _imagenet_weights
from ._utils import _build_model, _model_builder, _ovewrite_named_param

__all__ = [
    "ResNet",
    "ResNet18_Weights",
    "ResNet34_Weights",
    "ResNet50_Weights",
    "ResNet101_Weights",
    "ResNet152_Weights",
    "ResNeXt50_32X4D_Weights",
    "ResNeXt101_32X8D_Weights",
    "ResNeXt101_64X4D_Weights",
    "Wide_ResNet50_2_Weights",
    "Wide_ResNet101_2_Weights",
    "resnet18",
    "resnet34",
    "resnet50",
    "resnet101",
    "resnet152",
    "resnext50_32x4d",
    "resnext101_32x8d",
    "resnext101_64x4d",
    "wide_resnet50_2",
    "wide_resnet101_2",
]


def conv3x3(
    in_planes: int, out_planes: int, stride: int = 1, groups: int = 1, dilation: int = 1
) -> nn.Conv2d:
    """3x3 convolution, padded to keep the size at stride 1, without bias."""
    return nn.Conv2d(
        in_planes,
        out_planes,
        kernel_size=3,
        stride=stride,
        padding=dilation,
        groups=groups,
        bias=False,
        dilation=dilation,
    )


def conv1x1(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    """1x1 convolution without bias."""
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with a residual connection (ResNet-18/34)."""

    expansion: int = 1

    def __init__(
        self,
        inplanes: int,
        planes: int,
        stride: int = 1,
        downsample: nn.Module | None = None,
        groups: int = 1,
        base_width: int = 64,
        dilation: int = 1,
        norm_layer: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        if groups != 1 or base_width != 64:
            raise ValueError("BasicBlock only supports groups=1 and base_width=64")
        if dilation > 1:
            raise NotImplementedError("Dilation > 1 not supported in BasicBlock")
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        # the shortcut after the main branch, as torchvision orders it (fx graphs, profiles)
        out += x if self.downsample is None else self.downsample(x)
        return self.relu(out)


class Bottleneck(nn.Module):
    """1x1 - 3x3 - 1x1 convolutions with a residual connection (ResNet-50 and deeper).

    The stride sits on the 3x3 convolution (ResNet V1.5), as in torchvision.
    """

    expansion: int = 4

    def __init__(
        self,
        inplanes: int,
        planes: int,
        stride: int = 1,
        downsample: nn.Module | None = None,
        groups: int = 1,
        base_width: int = 64,
        dilation: int = 1,
        norm_layer: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = conv1x1(inplanes, width)
        self.bn1 = norm_layer(width)
        self.conv2 = conv3x3(width, width, stride, groups, dilation)
        self.bn2 = norm_layer(width)
        self.conv3 = conv1x1(width, planes * self.expansion)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        out += x if self.downsample is None else self.downsample(x)
        return self.relu(out)


class ResNet(nn.Module):
    """Residual network of ``block`` s stacked ``layers`` times in four stages."""

    def __init__(
        self,
        block: type[BasicBlock | Bottleneck],
        layers: list[int],
        num_classes: int = 1000,
        zero_init_residual: bool = False,
        groups: int = 1,
        width_per_group: int = 64,
        replace_stride_with_dilation: list[bool] | None = None,
        norm_layer: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        self._norm_layer = norm_layer

        self.inplanes = 64
        self.dilation = 1
        if replace_stride_with_dilation is None:
            replace_stride_with_dilation = [False, False, False]
        if len(replace_stride_with_dilation) != 3:
            raise ValueError(
                "replace_stride_with_dilation should be None "
                f"or a 3-element tuple, got {replace_stride_with_dilation}"
            )
        self.groups = groups
        self.base_width = width_per_group
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = norm_layer(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        dilate = replace_stride_with_dilation
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2, dilate=dilate[0])
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2, dilate=dilate[1])
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2, dilate=dilate[2])
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

        # Zero the last BN of each residual branch so that every block starts as the identity
        # (https://arxiv.org/abs/1706.02677).
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, Bottleneck) and m.bn3.weight is not None:
                    nn.init.constant_(m.bn3.weight, 0)
                elif isinstance(m, BasicBlock) and m.bn2.weight is not None:
                    nn.init.constant_(m.bn2.weight, 0)

    def _make_layer(
        self,
        block: type[BasicBlock | Bottleneck],
        planes: int,
        blocks: int,
        stride: int = 1,
        dilate: bool = False,
    ) -> nn.Sequential:
        norm_layer = self._norm_layer
        downsample = None
        previous_dilation = self.dilation
        if dilate:
            self.dilation *= stride
            stride = 1
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                conv1x1(self.inplanes, planes * block.expansion, stride),
                norm_layer(planes * block.expansion),
            )
        layers = [
            block(
                self.inplanes,
                planes,
                stride,
                downsample,
                self.groups,
                self.base_width,
                previous_dilation,
                norm_layer,
            )
        ]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(
                block(
                    self.inplanes,
                    planes,
                    groups=self.groups,
                    base_width=self.base_width,
                    dilation=self.dilation,
                    norm_layer=norm_layer,
                )
            )
        return nn.Sequential(*layers)

    def _forward_impl(self, x: Tensor) -> Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        x = self.avgpool(x)
        x = ember.flatten(x, 1)
        return self.fc(x)

    def forward(self, x: Tensor) -> Tensor:
        return self._forward_impl(x)


def _resnet(
    block: type[BasicBlock | Bottleneck],
    layers: list[int],
    weights: WeightsEnum | None,
    progress: bool,
    **kwargs: Any,
) -> ResNet:
    return _build_model(partial(ResNet, block, layers), weights, progress, kwargs)


# Each builder's architecture: its block, blocks per stage and the constructor arguments it fixes.
_ARCHS: dict[str, tuple[type[BasicBlock | Bottleneck], list[int], dict[str, int]]] = {
    "resnet18": (BasicBlock, [2, 2, 2, 2], {}),
    "resnet34": (BasicBlock, [3, 4, 6, 3], {}),
    "resnet50": (Bottleneck, [3, 4, 6, 3], {}),
    "resnet101": (Bottleneck, [3, 4, 23, 3], {}),
    "resnet152": (Bottleneck, [3, 8, 36, 3], {}),
    "resnext50_32x4d": (Bottleneck, [3, 4, 6, 3], {"groups": 32, "width_per_group": 4}),
    "resnext101_32x8d": (Bottleneck, [3, 4, 23, 3], {"groups": 32, "width_per_group": 8}),
    "resnext101_64x4d": (Bottleneck, [3, 4, 23, 3], {"groups": 64, "width_per_group": 4}),
    "wide_resnet50_2": (Bottleneck, [3, 4, 6, 3], {"width_per_group": 64 * 2}),
    "wide_resnet101_2": (Bottleneck, [3, 4, 23, 3], {"width_per_group": 64 * 2}),
}


def _resnet_arch(
    name: str, weights: WeightsEnum | None, progress: bool, kwargs: dict[str, Any]
) -> ResNet:
    """The variant ``name``, built from its row of :data:`_ARCHS`."""
    block, layers, fixed = _ARCHS[name]
    for param, value in fixed.items():
        _ovewrite_named_param(kwargs, param, value)
    return _resnet(block, layers, weights, progress, **kwargs)


# Weights: torchvision's checkpoints, presets and metadata. Rows: file, num_params, acc@1, acc@5,
# GFLOPS, MB; _v1/_v2 hold what the original-recipe and the new-recipe checkpoints share.
_DOCS_2 = (
    "\n                These weights improve upon the results of the original paper by using "
    "TorchVision's `new training recipe\n                "
    "<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.\n            "  # noqa: E501
)
_RECIPE_2 = "https://github.com/pytorch/vision/issues/3995#new-recipe"
_RECIPE_3 = "https://github.com/pytorch/vision/tree/main/references/classification#resnext"
_RECIPE_4 = "https://github.com/pytorch/vision/issues/3995#new-recipe-with-fixres"
_RECIPE_5 = "https://github.com/pytorch/vision/pull/912#issue-445437439"
_RECIPE_50_V2 = "https://github.com/pytorch/vision/issues/3995#issuecomment-1013906621"
_v1 = partial(
    _imagenet_weights,
    transforms=_classification(224),
    min_size=(1, 1),
    recipe="https://github.com/pytorch/vision/tree/main/references/classification#resnet",
    _docs="These weights reproduce closely the results of the paper using a simple training "
    "recipe.",
)
_v2 = partial(
    _imagenet_weights,
    transforms=_classification(224, 232),
    min_size=(1, 1),
    recipe=_RECIPE_2,
    _docs=_DOCS_2,
)


class ResNet18_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("resnet18-f37072fd", 11689512, 69.758, 89.078, 1.814, 44.661)
    DEFAULT = IMAGENET1K_V1


class ResNet34_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("resnet34-b627a593", 21797672, 73.314, 91.42, 3.664, 83.275)
    DEFAULT = IMAGENET1K_V1


class ResNet50_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("resnet50-0676ba61", 25557032, 76.13, 92.862, 4.089, 97.781)
    IMAGENET1K_V2 = _v2(
        "resnet50-11ad3fa6", 25557032, 80.858, 95.434, 4.089, 97.79, recipe=_RECIPE_50_V2
    )
    DEFAULT = IMAGENET1K_V2


class ResNet101_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("resnet101-63fe2227", 44549160, 77.374, 93.546, 7.801, 170.511)
    IMAGENET1K_V2 = _v2("resnet101-cd907fc2", 44549160, 81.886, 95.78, 7.801, 170.53)
    DEFAULT = IMAGENET1K_V2


class ResNet152_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("resnet152-394f9c45", 60192808, 78.312, 94.046, 11.514, 230.434)
    IMAGENET1K_V2 = _v2("resnet152-f82ba261", 60192808, 82.284, 96.002, 11.514, 230.474)
    DEFAULT = IMAGENET1K_V2


class ResNeXt50_32X4D_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "resnext50_32x4d-7cdf4587", 25028904, 77.618, 93.698, 4.23, 95.789, recipe=_RECIPE_3
    )
    IMAGENET1K_V2 = _v2("resnext50_32x4d-1a0047aa", 25028904, 81.198, 95.34, 4.23, 95.833)
    DEFAULT = IMAGENET1K_V2


class ResNeXt101_32X8D_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "resnext101_32x8d-8ba56ff5", 88791336, 79.312, 94.526, 16.414, 339.586, recipe=_RECIPE_3
    )
    IMAGENET1K_V2 = _v2(
        "resnext101_32x8d-110c445d", 88791336, 82.834, 96.228, 16.414, 339.673, recipe=_RECIPE_4
    )
    DEFAULT = IMAGENET1K_V2


class ResNeXt101_64X4D_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v2(
        "resnext101_64x4d-173b62eb",
        83455272,
        83.246,
        96.454,
        15.46,
        319.318,
        recipe="https://github.com/pytorch/vision/pull/5935",
        _docs=(
            "\n                These weights were trained from scratch by using "
            "TorchVision's `new training recipe\n                "
            "<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.\n            "  # noqa: E501
        ),
    )
    DEFAULT = IMAGENET1K_V1


class Wide_ResNet50_2_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "wide_resnet50_2-95faca4d", 68883240, 78.468, 94.086, 11.398, 131.82, recipe=_RECIPE_5
    )
    IMAGENET1K_V2 = _v2(
        "wide_resnet50_2-9ba9bcbe", 68883240, 81.602, 95.758, 11.398, 263.124, recipe=_RECIPE_4
    )
    DEFAULT = IMAGENET1K_V2


class Wide_ResNet101_2_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "wide_resnet101_2-32ee1156", 126886696, 78.848, 94.284, 22.753, 242.896, recipe=_RECIPE_5
    )
    IMAGENET1K_V2 = _v2("wide_resnet101_2-d733dc28", 126886696, 82.51, 96.02, 22.753, 484.747)
    DEFAULT = IMAGENET1K_V2


# Builders: one row of _ARCHS each.


@_model_builder()
def resnet18(
    *, weights: ResNet18_Weights | None = None, progress: bool = True, **kwargs: Any
) -> ResNet:
    """ResNet-18 from the `ResNet paper <https://arxiv.org/abs/1512.03385>`__."""
    return _resnet_arch("resnet18", weights, progress, kwargs)


@_model_builder()
def resnet34(
    *, weights: ResNet34_Weights | None = None, progress: bool = True, **kwargs: Any
) -> ResNet:
    """ResNet-34 from the `ResNet paper <https://arxiv.org/abs/1512.03385>`__."""
    return _resnet_arch("resnet34", weights, progress, kwargs)


@_model_builder()
def resnet50(
    *, weights: ResNet50_Weights | None = None, progress: bool = True, **kwargs: Any
) -> ResNet:
    """ResNet-50 (V1.5) from the `ResNet paper <https://arxiv.org/abs/1512.03385>`__."""
    return _resnet_arch("resnet50", weights, progress, kwargs)


@_model_builder()
def resnet101(
    *, weights: ResNet101_Weights | None = None, progress: bool = True, **kwargs: Any
) -> ResNet:
    """ResNet-101 (V1.5) from the `ResNet paper <https://arxiv.org/abs/1512.03385>`__."""
    return _resnet_arch("resnet101", weights, progress, kwargs)


@_model_builder()
def resnet152(
    *, weights: ResNet152_Weights | None = None, progress: bool = True, **kwargs: Any
) -> ResNet:
    """ResNet-152 (V1.5) from the `ResNet paper <https://arxiv.org/abs/1512.03385>`__."""
    return _resnet_arch("resnet152", weights, progress, kwargs)


@_model_builder()
def resnext50_32x4d(
    *, weights: ResNeXt50_32X4D_Weights | None = None, progress: bool = True, **kwargs: Any
) -> ResNet:
    """ResNeXt-50 32x4d from the `ResNeXt paper <https://arxiv.org/abs/1611.05431>`_."""
    return _resnet_arch("resnext50_32x4d", weights, progress, kwargs)


@_model_builder()
def resnext101_32x8d(
    *, weights: ResNeXt101_32X8D_Weights | None = None, progress: bool = True, **kwargs: Any
) -> ResNet:
    """ResNeXt-101 32x8d from the `ResNeXt paper <https://arxiv.org/abs/1611.05431>`_."""
    return _resnet_arch("resnext101_32x8d", weights, progress, kwargs)


@_model_builder()
def resnext101_64x4d(
    *, weights: ResNeXt101_64X4D_Weights | None = None, progress: bool = True, **kwargs: Any
) -> ResNet:
    """ResNeXt-101 64x4d from the `ResNeXt paper <https://arxiv.org/abs/1611.05431>`_."""
    return _resnet_arch("resnext101_64x4d", weights, progress, kwargs)


@_model_builder()
def wide_resnet50_2(
    *, weights: Wide_ResNet50_2_Weights | None = None, progress: bool = True, **kwargs: Any
) -> ResNet:
    """Wide ResNet-50-2 from the `Wide ResNet paper <https://arxiv.org/abs/1605.07146>`_."""
    return _resnet_arch("wide_resnet50_2", weights, progress, kwargs)


@_model_builder()
def wide_resnet101_2(
    *, weights: Wide_ResNet101_2_Weights | None = None, progress: bool = True, **kwargs: Any
) -> ResNet:
    """Wide ResNet-101-2 from the `Wide ResNet paper <https://arxiv.org/abs/1605.07146>`_."""
    return _resnet_arch("wide_resnet101_2", weights, progress, kwargs)
