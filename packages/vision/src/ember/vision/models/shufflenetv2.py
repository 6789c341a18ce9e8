"""ShuffleNet V2 (torchvision's ``models.shufflenetv2``).

Ported from torchvision (BSD-3-Clause); module names and state_dict keys match.
"""

from collections.abc import Callable
from functools import partial
from typing import Any

import ember
from ember import Tensor, nn

from ._api import WeightsEnum
from ._meta import _classification, _imagenet_weights
from ._utils import _build_model, _model_builder

__all__ = [
    "ShuffleNetV2",
    "ShuffleNet_V2_X0_5_Weights",
    "ShuffleNet_V2_X1_0_Weights",
    "ShuffleNet_V2_X1_5_Weights",
    "ShuffleNet_V2_X2_0_Weights",
    "shufflenet_v2_x0_5",
    "shufflenet_v2_x1_0",
    "shufflenet_v2_x1_5",
    "shufflenet_v2_x2_0",
]


def channel_shuffle(x: Tensor, groups: int) -> Tensor:
    """Interleave the channels of ``groups`` equal groups."""
    batchsize, num_channels, height, width = x.size()
    channels_per_group = num_channels // groups

    # reshape
    x = x.view(batchsize, groups, channels_per_group, height, width)

    x = ember.transpose(x, 1, 2).contiguous()

    # flatten
    x = x.view(batchsize, num_channels, height, width)

    return x


class InvertedResidual(nn.Module):
    def __init__(self, inp: int, oup: int, stride: int) -> None:
        super().__init__()

        if not (1 <= stride <= 3):
            raise ValueError("illegal stride value")
        self.stride = stride

        branch_features = oup // 2
        if (self.stride == 1) and (inp != branch_features << 1):
            raise ValueError(
                f"Invalid combination of stride {stride}, inp {inp} and oup {oup} values. If "
                "stride == 1 then inp should be equal to oup // 2 << 1."
            )

        if self.stride > 1:
            self.branch1 = nn.Sequential(
                self.depthwise_conv(inp, inp, kernel_size=3, stride=self.stride, padding=1),
                nn.BatchNorm2d(inp),
                nn.Conv2d(inp, branch_features, kernel_size=1, stride=1, padding=0, bias=False),
                nn.BatchNorm2d(branch_features),
                nn.ReLU(inplace=True),
            )
        else:
            self.branch1 = nn.Sequential()

        self.branch2 = nn.Sequential(
            nn.Conv2d(
                inp if (self.stride > 1) else branch_features,
                branch_features,
                kernel_size=1,
                stride=1,
                padding=0,
                bias=False,
            ),
            nn.BatchNorm2d(branch_features),
            nn.ReLU(inplace=True),
            self.depthwise_conv(
                branch_features, branch_features, kernel_size=3, stride=self.stride, padding=1
            ),
            nn.BatchNorm2d(branch_features),
            nn.Conv2d(
                branch_features, branch_features, kernel_size=1, stride=1, padding=0, bias=False
            ),
            nn.BatchNorm2d(branch_features),
            nn.ReLU(inplace=True),
        )

    @staticmethod
    def depthwise_conv(
        i: int, o: int, kernel_size: int, stride: int = 1, padding: int = 0, bias: bool = False
    ) -> nn.Conv2d:
        return nn.Conv2d(i, o, kernel_size, stride, padding, bias=bias, groups=i)

    def forward(self, x: Tensor) -> Tensor:
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = ember.cat((x1, self.branch2(x2)), dim=1)
        else:
            out = ember.cat((self.branch1(x), self.branch2(x)), dim=1)

        return channel_shuffle(out, 2)


class ShuffleNetV2(nn.Module):
    def __init__(
        self,
        stages_repeats: list[int],
        stages_out_channels: list[int],
        num_classes: int = 1000,
        inverted_residual: Callable[..., nn.Module] = InvertedResidual,
    ) -> None:
        super().__init__()

        if len(stages_repeats) != 3:
            raise ValueError("expected stages_repeats as list of 3 positive ints")
        if len(stages_out_channels) != 5:
            raise ValueError("expected stages_out_channels as list of 5 positive ints")
        self._stage_out_channels = stages_out_channels

        input_channels = 3
        output_channels = self._stage_out_channels[0]
        self.conv1 = nn.Sequential(
            nn.Conv2d(input_channels, output_channels, 3, 2, 1, bias=False),
            nn.BatchNorm2d(output_channels),
            nn.ReLU(inplace=True),
        )
        input_channels = output_channels

        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)

        self.stage2: nn.Sequential
        self.stage3: nn.Sequential
        self.stage4: nn.Sequential
        stage_names = [f"stage{i}" for i in [2, 3, 4]]
        for name, repeats, output_channels in zip(
            stage_names, stages_repeats, self._stage_out_channels[1:]
        ):
            seq = [inverted_residual(input_channels, output_channels, 2)]
            for _ in range(repeats - 1):
                seq.append(inverted_residual(output_channels, output_channels, 1))
            setattr(self, name, nn.Sequential(*seq))
            input_channels = output_channels

        output_channels = self._stage_out_channels[-1]
        self.conv5 = nn.Sequential(
            nn.Conv2d(input_channels, output_channels, 1, 1, 0, bias=False),
            nn.BatchNorm2d(output_channels),
            nn.ReLU(inplace=True),
        )

        self.fc = nn.Linear(output_channels, num_classes)

    def _forward_impl(self, x: Tensor) -> Tensor:
        x = self.conv1(x)
        x = self.maxpool(x)
        x = self.stage2(x)
        x = self.stage3(x)
        x = self.stage4(x)
        x = self.conv5(x)
        x = x.mean([2, 3])  # globalpool
        return self.fc(x)

    def forward(self, x: Tensor) -> Tensor:
        return self._forward_impl(x)


def _shufflenetv2(
    weights: WeightsEnum | None, progress: bool, *args: Any, **kwargs: Any
) -> ShuffleNetV2:
    return _build_model(partial(ShuffleNetV2, *args), weights, progress, kwargs)


# Weights: torchvision's checkpoints, presets and metadata. Rows: file, num_params, acc@1, acc@5,
# GFLOPS, MB; _ported for the checkpoints ported from
# https://github.com/ericsun99/Shufflenet-v2-Pytorch, _new for those trained with torchvision's
# new recipe.
_ported = partial(
    _imagenet_weights,
    transforms=_classification(224),
    min_size=(1, 1),
    recipe="https://github.com/ericsun99/Shufflenet-v2-Pytorch",
    _docs="""These weights were trained from scratch to reproduce closely the results of the paper.""",  # noqa: E501
)
_new = partial(
    _imagenet_weights,
    transforms=_classification(224, 232),
    min_size=(1, 1),
    recipe="https://github.com/pytorch/vision/pull/5906",
    _docs="""
                These weights were trained from scratch by using TorchVision's `new training recipe
                <https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.
            """,
)


class ShuffleNet_V2_X0_5_Weights(WeightsEnum):
    IMAGENET1K_V1 = _ported("shufflenetv2_x0.5-f707e7126e", 1366792, 60.552, 81.746, 0.04, 5.282)
    DEFAULT = IMAGENET1K_V1


class ShuffleNet_V2_X1_0_Weights(WeightsEnum):
    IMAGENET1K_V1 = _ported("shufflenetv2_x1-5666bf0f80", 2278604, 69.362, 88.316, 0.145, 8.791)
    DEFAULT = IMAGENET1K_V1


class ShuffleNet_V2_X1_5_Weights(WeightsEnum):
    IMAGENET1K_V1 = _new("shufflenetv2_x1_5-3c479a10", 3503624, 72.996, 91.086, 0.296, 13.557)
    DEFAULT = IMAGENET1K_V1


class ShuffleNet_V2_X2_0_Weights(WeightsEnum):
    IMAGENET1K_V1 = _new("shufflenetv2_x2_0-8be3c8ee", 7393996, 76.230, 93.006, 0.583, 28.433)
    DEFAULT = IMAGENET1K_V1


@_model_builder()
def shufflenet_v2_x0_5(
    *, weights: ShuffleNet_V2_X0_5_Weights | None = None, progress: bool = True, **kwargs: Any
) -> ShuffleNetV2:
    """Constructs a ShuffleNetV2 architecture with 0.5x output channels, as described in
    `ShuffleNet V2: Practical Guidelines for Efficient CNN Architecture Design
    <https://arxiv.org/abs/1807.11164>`__."""
    return _shufflenetv2(weights, progress, [4, 8, 4], [24, 48, 96, 192, 1024], **kwargs)


@_model_builder()
def shufflenet_v2_x1_0(
    *, weights: ShuffleNet_V2_X1_0_Weights | None = None, progress: bool = True, **kwargs: Any
) -> ShuffleNetV2:
    """Constructs a ShuffleNetV2 architecture with 1.0x output channels, as described in
    `ShuffleNet V2: Practical Guidelines for Efficient CNN Architecture Design
    <https://arxiv.org/abs/1807.11164>`__."""
    return _shufflenetv2(weights, progress, [4, 8, 4], [24, 116, 232, 464, 1024], **kwargs)


@_model_builder()
def shufflenet_v2_x1_5(
    *, weights: ShuffleNet_V2_X1_5_Weights | None = None, progress: bool = True, **kwargs: Any
) -> ShuffleNetV2:
    """Constructs a ShuffleNetV2 architecture with 1.5x output channels, as described in
    `ShuffleNet V2: Practical Guidelines for Efficient CNN Architecture Design
    <https://arxiv.org/abs/1807.11164>`__."""
    return _shufflenetv2(weights, progress, [4, 8, 4], [24, 176, 352, 704, 1024], **kwargs)


@_model_builder()
def shufflenet_v2_x2_0(
    *, weights: ShuffleNet_V2_X2_0_Weights | None = None, progress: bool = True, **kwargs: Any
) -> ShuffleNetV2:
    """Constructs a ShuffleNetV2 architecture with 2.0x output channels, as described in
    `ShuffleNet V2: Practical Guidelines for Efficient CNN Architecture Design
    <https://arxiv.org/abs/1807.11164>`__."""
    return _shufflenetv2(weights, progress, [4, 8, 4], [24, 244, 488, 976, 2048], **kwargs)
