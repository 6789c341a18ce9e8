"""Video ResNets: R3D, MC3 and R(2+1)D (torchvision's ``models.video.resnet``).

From `A Closer Look at Spatiotemporal Convolutions for Action Recognition
<https://arxiv.org/abs/1711.11248>`__. Module names, state_dict keys, default initialisation and
constructor arguments follow torchvision's, so its Kinetics-400 checkpoints load unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ember import Tensor, nn

from .._api import WeightsEnum
from .._utils import _build_model, _model_builder
from ._meta import _kinetics400_weights, _video_classification

__all__ = [
    "VideoResNet",
    "R3D_18_Weights",
    "MC3_18_Weights",
    "R2Plus1D_18_Weights",
    "r3d_18",
    "mc3_18",
    "r2plus1d_18",
]


class Conv3DSimple(nn.Conv3d):
    """A full 3x3x3 convolution (R3D); ``midplanes`` is accepted for a common signature."""

    def __init__(
        self,
        in_planes: int,
        out_planes: int,
        midplanes: int | None = None,
        stride: int = 1,
        padding: int = 1,
    ) -> None:
        super().__init__(
            in_channels=in_planes,
            out_channels=out_planes,
            kernel_size=(3, 3, 3),
            stride=stride,
            padding=padding,
            bias=False,
        )

    @staticmethod
    def get_downsample_stride(stride: int) -> tuple[int, int, int]:
        return stride, stride, stride


class Conv2Plus1D(nn.Sequential):
    """A 3x3x3 convolution factored into a spatial 1x3x3 one to ``midplanes`` channels, batch
    norm, ReLU and a temporal 3x1x1 one (R(2+1)D)."""

    def __init__(
        self, in_planes: int, out_planes: int, midplanes: int, stride: int = 1, padding: int = 1
    ) -> None:
        super().__init__(
            nn.Conv3d(
                in_planes,
                midplanes,
                kernel_size=(1, 3, 3),
                stride=(1, stride, stride),
                padding=(0, padding, padding),
                bias=False,
            ),
            nn.BatchNorm3d(midplanes),
            nn.ReLU(inplace=True),
            nn.Conv3d(
                midplanes,
                out_planes,
                kernel_size=(3, 1, 1),
                stride=(stride, 1, 1),
                padding=(padding, 0, 0),
                bias=False,
            ),
        )

    @staticmethod
    def get_downsample_stride(stride: int) -> tuple[int, int, int]:
        return stride, stride, stride


class Conv3DNoTemporal(nn.Conv3d):
    """A spatial-only 1x3x3 convolution (the upper layers of MC3); strides only in space."""

    def __init__(
        self,
        in_planes: int,
        out_planes: int,
        midplanes: int | None = None,
        stride: int = 1,
        padding: int = 1,
    ) -> None:
        super().__init__(
            in_channels=in_planes,
            out_channels=out_planes,
            kernel_size=(1, 3, 3),
            stride=(1, stride, stride),
            padding=(0, padding, padding),
            bias=False,
        )

    @staticmethod
    def get_downsample_stride(stride: int) -> tuple[int, int, int]:
        return 1, stride, stride


def _midplanes(inplanes: int, planes: int) -> int:
    # R(2+1)D's intermediate width: as many parameters as the full 3x3x3 convolution it replaces.
    return (inplanes * planes * 3 * 3 * 3) // (inplanes * 3 * 3 + 3 * planes)


class BasicBlock(nn.Module):
    """Two ``conv_builder`` convolutions (each with batch norm) and a residual connection."""

    expansion = 1

    def __init__(
        self,
        inplanes: int,
        planes: int,
        conv_builder: Callable[..., nn.Module],
        stride: int = 1,
        downsample: nn.Module | None = None,
    ) -> None:
        midplanes = _midplanes(inplanes, planes)
        super().__init__()
        self.conv1 = nn.Sequential(
            conv_builder(inplanes, planes, midplanes, stride),
            nn.BatchNorm3d(planes),
            nn.ReLU(inplace=True),
        )
        self.conv2 = nn.Sequential(conv_builder(planes, planes, midplanes), nn.BatchNorm3d(planes))
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        out = self.conv2(self.conv1(x))
        out += x if self.downsample is None else self.downsample(x)
        return self.relu(out)


class Bottleneck(nn.Module):
    """1x1x1 reduction, a ``conv_builder`` convolution, 1x1x1 expansion (x4), with a residual."""

    expansion = 4

    def __init__(
        self,
        inplanes: int,
        planes: int,
        conv_builder: Callable[..., nn.Module],
        stride: int = 1,
        downsample: nn.Module | None = None,
    ) -> None:
        super().__init__()
        midplanes = _midplanes(inplanes, planes)
        self.conv1 = nn.Sequential(
            nn.Conv3d(inplanes, planes, kernel_size=1, bias=False),
            nn.BatchNorm3d(planes),
            nn.ReLU(inplace=True),
        )
        self.conv2 = nn.Sequential(
            conv_builder(planes, planes, midplanes, stride),
            nn.BatchNorm3d(planes),
            nn.ReLU(inplace=True),
        )
        self.conv3 = nn.Sequential(
            nn.Conv3d(planes, planes * self.expansion, kernel_size=1, bias=False),
            nn.BatchNorm3d(planes * self.expansion),
        )
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        out = self.conv3(self.conv2(self.conv1(x)))
        out += x if self.downsample is None else self.downsample(x)
        return self.relu(out)


class BasicStem(nn.Sequential):
    """The default conv-batchnorm-relu stem"""

    def __init__(self) -> None:
        super().__init__(
            nn.Conv3d(
                3, 64, kernel_size=(3, 7, 7), stride=(1, 2, 2), padding=(1, 3, 3), bias=False
            ),
            nn.BatchNorm3d(64),
            nn.ReLU(inplace=True),
        )


class R2Plus1dStem(nn.Sequential):
    """R(2+1)D stem is different than the default one as it uses separated 3D convolution"""

    def __init__(self) -> None:
        super().__init__(
            nn.Conv3d(
                3, 45, kernel_size=(1, 7, 7), stride=(1, 2, 2), padding=(0, 3, 3), bias=False
            ),
            nn.BatchNorm3d(45),
            nn.ReLU(inplace=True),
            nn.Conv3d(
                45, 64, kernel_size=(3, 1, 1), stride=(1, 1, 1), padding=(1, 0, 0), bias=False
            ),
            nn.BatchNorm3d(64),
            nn.ReLU(inplace=True),
        )


_ConvBuilder = type[Conv3DSimple] | type[Conv3DNoTemporal] | type[Conv2Plus1D]


class VideoResNet(nn.Module):
    """Generic resnet video generator.

    Args:
        block (Type[Union[BasicBlock, Bottleneck]]): resnet building block
        conv_makers (List[Type[Union[Conv3DSimple, Conv3DNoTemporal, Conv2Plus1D]]]): generator
            function for each layer
        layers (List[int]): number of blocks per layer
        stem (Callable[..., nn.Module]): module specifying the ResNet stem.
        num_classes (int, optional): Dimension of the final FC layer. Defaults to 400.
        zero_init_residual (bool, optional): Zero init bottleneck residual BN. Defaults to False.

    Input: ``(N, 3, T, H, W)`` clips; output: ``(N, num_classes)`` logits.
    """

    def __init__(
        self,
        block: type[BasicBlock] | type[Bottleneck],
        conv_makers: Sequence[_ConvBuilder],
        layers: list[int],
        stem: Callable[..., nn.Module],
        num_classes: int = 400,
        zero_init_residual: bool = False,
    ) -> None:
        super().__init__()
        self.inplanes = 64

        self.stem = stem()

        self.layer1 = self._make_layer(block, conv_makers[0], 64, layers[0], stride=1)
        self.layer2 = self._make_layer(block, conv_makers[1], 128, layers[1], stride=2)
        self.layer3 = self._make_layer(block, conv_makers[2], 256, layers[2], stride=2)
        self.layer4 = self._make_layer(block, conv_makers[3], 512, layers[3], stride=2)

        self.avgpool = nn.AdaptiveAvgPool3d((1, 1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Conv3d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.BatchNorm3d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.constant_(m.bias, 0)

        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, Bottleneck):
                    # As torchvision: Bottleneck has no ``bn3`` (its last norm is conv3[1]),
                    # so this raises the AttributeError torchvision raises.
                    nn.init.constant_(m.bn3.weight, 0)

    def forward(self, x: Tensor) -> Tensor:
        x = self.stem(x)

        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)

        x = self.avgpool(x)
        x = x.flatten(1)
        return self.fc(x)

    def _make_layer(
        self,
        block: type[BasicBlock] | type[Bottleneck],
        conv_builder: _ConvBuilder,
        planes: int,
        blocks: int,
        stride: int = 1,
    ) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            ds_stride = conv_builder.get_downsample_stride(stride)
            downsample = nn.Sequential(
                nn.Conv3d(
                    self.inplanes,
                    planes * block.expansion,
                    kernel_size=1,
                    stride=ds_stride,
                    bias=False,
                ),
                nn.BatchNorm3d(planes * block.expansion),
            )
        layers = [block(self.inplanes, planes, conv_builder, stride, downsample)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, conv_builder))
        return nn.Sequential(*layers)


def _video_resnet(
    block: type[BasicBlock] | type[Bottleneck],
    conv_makers: Sequence[_ConvBuilder],
    layers: list[int],
    stem: Callable[..., nn.Module],
    weights: WeightsEnum | None,
    progress: bool,
    **kwargs: Any,
) -> VideoResNet:
    def model_fn(**kw: Any) -> VideoResNet:
        return VideoResNet(block, conv_makers, layers, stem, **kw)

    return _build_model(model_fn, weights, progress, kwargs)


# Weights: torchvision's checkpoints. Rows: file, num_params, acc@1, acc@5, GFLOPS, MB.
def _kinetics(*row: Any) -> Any:
    return _kinetics400_weights(
        *row,
        transforms=_video_classification(crop_size=(112, 112), resize_size=(128, 171)),
        min_size=(1, 1),
        recipe="https://github.com/pytorch/vision/tree/main/references/video_classification",
        _docs=(
            "The weights reproduce closely the accuracy of the paper. The accuracies are "
            "estimated on video-level with parameters `frame_rate=15`, `clips_per_video=5`, and "
            "`clip_len=16`."
        ),
    )


class R3D_18_Weights(WeightsEnum):
    KINETICS400_V1 = _kinetics("r3d_18-b3b3357e", 33371472, 63.200, 83.479, 40.697, 127.359)
    DEFAULT = KINETICS400_V1


class MC3_18_Weights(WeightsEnum):
    KINETICS400_V1 = _kinetics("mc3_18-a90a0ba3", 11695440, 63.960, 84.130, 43.343, 44.672)
    DEFAULT = KINETICS400_V1


class R2Plus1D_18_Weights(WeightsEnum):
    KINETICS400_V1 = _kinetics("r2plus1d_18-91a641e6", 31505325, 67.463, 86.175, 40.519, 120.318)
    DEFAULT = KINETICS400_V1


@_model_builder("KINETICS400_V1")
def r3d_18(
    *, weights: R3D_18_Weights | None = None, progress: bool = True, **kwargs: Any
) -> VideoResNet:
    """Construct 18 layer Resnet3D model.

    Reference: `A Closer Look at Spatiotemporal Convolutions for Action Recognition
    <https://arxiv.org/abs/1711.11248>`__.
    """
    return _video_resnet(
        BasicBlock, [Conv3DSimple] * 4, [2, 2, 2, 2], BasicStem, weights, progress, **kwargs
    )


@_model_builder("KINETICS400_V1")
def mc3_18(
    *, weights: MC3_18_Weights | None = None, progress: bool = True, **kwargs: Any
) -> VideoResNet:
    """Construct 18 layer Mixed Convolution network: full 3D convolutions in the first layer,
    spatial-only ones above it.

    Reference: `A Closer Look at Spatiotemporal Convolutions for Action Recognition
    <https://arxiv.org/abs/1711.11248>`__.
    """
    conv_makers: list[_ConvBuilder] = [Conv3DSimple] + [Conv3DNoTemporal] * 3
    return _video_resnet(
        BasicBlock, conv_makers, [2, 2, 2, 2], BasicStem, weights, progress, **kwargs
    )


@_model_builder("KINETICS400_V1")
def r2plus1d_18(
    *, weights: R2Plus1D_18_Weights | None = None, progress: bool = True, **kwargs: Any
) -> VideoResNet:
    """Construct 18 layer deep R(2+1)D network: every 3D convolution factored into a spatial
    and a temporal one.

    Reference: `A Closer Look at Spatiotemporal Convolutions for Action Recognition
    <https://arxiv.org/abs/1711.11248>`__.
    """
    return _video_resnet(
        BasicBlock, [Conv2Plus1D] * 4, [2, 2, 2, 2], R2Plus1dStem, weights, progress, **kwargs
    )
