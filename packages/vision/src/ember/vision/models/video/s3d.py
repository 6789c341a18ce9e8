"""S3D, the separable 3D Inception network (torchvision's ``models.video.s3d``).

From `Rethinking Spatiotemporal Feature Learning <https://arxiv.org/abs/1712.04851>`__. Module
names, state_dict keys, default initialisation and constructor arguments follow torchvision's.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import ember
from ember import Tensor, nn

from ...ops.misc import Conv3dNormActivation
from .._api import WeightsEnum
from .._utils import _build_model, _model_builder
from ._meta import _kinetics400_weights, _video_classification

__all__ = [
    "S3D",
    "S3D_Weights",
    "s3d",
]


class TemporalSeparableConv(nn.Sequential):
    """A ``k x k x k`` convolution factored into a spatial ``1 x k x k`` and a temporal
    ``k x 1 x 1`` one, each followed by the norm and a ReLU."""

    def __init__(
        self,
        in_planes: int,
        out_planes: int,
        kernel_size: int,
        stride: int,
        padding: int,
        norm_layer: Callable[..., nn.Module],
    ):
        super().__init__(
            Conv3dNormActivation(
                in_planes,
                out_planes,
                kernel_size=(1, kernel_size, kernel_size),
                stride=(1, stride, stride),
                padding=(0, padding, padding),
                bias=False,
                norm_layer=norm_layer,
            ),
            Conv3dNormActivation(
                out_planes,
                out_planes,
                kernel_size=(kernel_size, 1, 1),
                stride=(stride, 1, 1),
                padding=(padding, 0, 0),
                bias=False,
                norm_layer=norm_layer,
            ),
        )


class SepInceptionBlock3D(nn.Module):
    """An Inception block with separable 3x3x3 convolutions; its four branches (1x1x1,
    1x1x1 -> separable, 1x1x1 -> separable, max pool -> 1x1x1) concatenated along channels."""

    def __init__(
        self,
        in_planes: int,
        b0_out: int,
        b1_mid: int,
        b1_out: int,
        b2_mid: int,
        b2_out: int,
        b3_out: int,
        norm_layer: Callable[..., nn.Module],
    ):
        super().__init__()

        self.branch0 = Conv3dNormActivation(
            in_planes, b0_out, kernel_size=1, stride=1, norm_layer=norm_layer
        )
        self.branch1 = nn.Sequential(
            Conv3dNormActivation(in_planes, b1_mid, kernel_size=1, stride=1, norm_layer=norm_layer),
            TemporalSeparableConv(
                b1_mid, b1_out, kernel_size=3, stride=1, padding=1, norm_layer=norm_layer
            ),
        )
        self.branch2 = nn.Sequential(
            Conv3dNormActivation(in_planes, b2_mid, kernel_size=1, stride=1, norm_layer=norm_layer),
            TemporalSeparableConv(
                b2_mid, b2_out, kernel_size=3, stride=1, padding=1, norm_layer=norm_layer
            ),
        )
        self.branch3 = nn.Sequential(
            nn.MaxPool3d(kernel_size=(3, 3, 3), stride=1, padding=1),
            Conv3dNormActivation(in_planes, b3_out, kernel_size=1, stride=1, norm_layer=norm_layer),
        )

    def forward(self, x: Tensor) -> Tensor:
        x0 = self.branch0(x)
        x1 = self.branch1(x)
        x2 = self.branch2(x)
        x3 = self.branch3(x)
        return ember.cat((x0, x1, x2, x3), 1)


class S3D(nn.Module):
    """S3D main class.

    Args:
        num_class (int): number of classes for the classification task.
        dropout (float): dropout probability.
        norm_layer (Optional[Callable]): Module specifying the normalization layer to use.

    Inputs:
        x (Tensor): batch of videos with dimensions (batch, channel, time, height, width);
        the final 2x7x7 average pool needs at least 13 frames of 209x209 pixels.
    """

    def __init__(
        self,
        num_classes: int = 400,
        dropout: float = 0.2,
        norm_layer: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()

        if norm_layer is None:
            norm_layer = partial(nn.BatchNorm3d, eps=0.001, momentum=0.001)

        def pool(kernel: int, stride: tuple[int, int, int], padding: tuple[int, int, int]):
            return nn.MaxPool3d(kernel_size=kernel, stride=stride, padding=padding)

        inception = partial(SepInceptionBlock3D, norm_layer=norm_layer)
        self.features = nn.Sequential(
            TemporalSeparableConv(3, 64, 7, 2, 3, norm_layer),
            pool((1, 3, 3), (1, 2, 2), (0, 1, 1)),
            Conv3dNormActivation(64, 64, kernel_size=1, stride=1, norm_layer=norm_layer),
            TemporalSeparableConv(64, 192, 3, 1, 1, norm_layer),
            pool((1, 3, 3), (1, 2, 2), (0, 1, 1)),
            inception(192, 64, 96, 128, 16, 32, 32),
            inception(256, 128, 128, 192, 32, 96, 64),
            pool((3, 3, 3), (2, 2, 2), (1, 1, 1)),
            inception(480, 192, 96, 208, 16, 48, 64),
            inception(512, 160, 112, 224, 24, 64, 64),
            inception(512, 128, 128, 256, 24, 64, 64),
            inception(512, 112, 144, 288, 32, 64, 64),
            inception(528, 256, 160, 320, 32, 128, 128),
            pool((2, 2, 2), (2, 2, 2), (0, 0, 0)),
            inception(832, 256, 160, 320, 32, 128, 128),
            inception(832, 384, 192, 384, 48, 128, 128),
        )
        self.avgpool = nn.AvgPool3d(kernel_size=(2, 7, 7), stride=1)
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout),
            nn.Conv3d(1024, num_classes, kernel_size=1, stride=1, bias=True),
        )

    def forward(self, x: Tensor) -> Tensor:
        x = self.features(x)
        x = self.avgpool(x)
        x = self.classifier(x)
        return ember.mean(x, dim=(2, 3, 4))


class S3D_Weights(WeightsEnum):
    KINETICS400_V1 = _kinetics400_weights(
        "s3d-d76dad2f", 8320048, 68.368, 88.050, 17.979, 31.972,
        transforms=_video_classification(crop_size=(224, 224), resize_size=(256, 256)),
        min_size=(224, 224),
        min_temporal_size=14,
        recipe="https://github.com/pytorch/vision/tree/main/references/video_classification#s3d",
        _docs=(
            "The weights aim to approximate the accuracy of the paper. The accuracies are "
            "estimated on clip-level with parameters `frame_rate=15`, `clips_per_video=1`, and "
            "`clip_len=128`."
        ),
    )  # fmt: skip
    DEFAULT = KINETICS400_V1


@_model_builder("KINETICS400_V1")
def s3d(*, weights: S3D_Weights | None = None, progress: bool = True, **kwargs: Any) -> S3D:
    """Construct Separable 3D CNN model.

    Reference: `Rethinking Spatiotemporal Feature Learning <https://arxiv.org/abs/1712.04851>`__.
    """
    return _build_model(S3D, weights, progress, kwargs)
