"""SqueezeNet 1.0 and 1.1 (torchvision's ``models.squeezenet``)."""

from functools import partial
from typing import Any

import ember
from ember import nn
from ember.nn import init

from ._api import WeightsEnum
from ._meta import _classification, _imagenet_weights
from ._utils import _build_model, _model_builder

__all__ = [
    "SqueezeNet",
    "SqueezeNet1_0_Weights",
    "SqueezeNet1_1_Weights",
    "squeezenet1_0",
    "squeezenet1_1",
]


class Fire(nn.Module):
    """A 1x1 squeeze convolution feeding concatenated 1x1 and 3x3 expand convolutions."""

    def __init__(
        self, inplanes: int, squeeze_planes: int, expand1x1_planes: int, expand3x3_planes: int
    ) -> None:
        super().__init__()
        self.inplanes = inplanes
        self.squeeze = nn.Conv2d(inplanes, squeeze_planes, kernel_size=1)
        self.squeeze_activation = nn.ReLU(inplace=True)
        self.expand1x1 = nn.Conv2d(squeeze_planes, expand1x1_planes, kernel_size=1)
        self.expand1x1_activation = nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze_planes, expand3x3_planes, kernel_size=3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = self.squeeze_activation(self.squeeze(x))
        return ember.cat(
            [
                self.expand1x1_activation(self.expand1x1(x)),
                self.expand3x3_activation(self.expand3x3(x)),
            ],
            1,
        )


# Each version's stem conv (out channels, kernel; stride 2) and the layers after it: "M" a 3x3
# max pool of stride 2, (in, squeeze, expand) a Fire module with 1x1 and 3x3 expand convolutions.
_CFGS: dict[str, tuple[int, int, list[str | tuple[int, int, int]]]] = {
    "1_0": (
        96,
        7,
        ["M", (96, 16, 64), (128, 16, 64), (128, 32, 128), "M", (256, 32, 128), (256, 48, 192),
         (384, 48, 192), (384, 64, 256), "M", (512, 64, 256)],
    ),
    "1_1": (
        64,
        3,
        ["M", (64, 16, 64), (128, 16, 64), "M", (128, 32, 128), (256, 32, 128), "M",
         (256, 48, 192), (384, 48, 192), (384, 64, 256), (512, 64, 256)],
    ),
}  # fmt: skip


class SqueezeNet(nn.Module):
    """SqueezeNet ``version`` "1_0" or "1_1"; the classifier is a 1x1 conv and global pooling."""

    def __init__(self, version: str = "1_0", num_classes: int = 1000, dropout: float = 0.5) -> None:
        super().__init__()
        self.num_classes = num_classes
        if version not in _CFGS:
            # Only the two versions of the paper's reference implementation exist.
            raise ValueError(f"Unsupported SqueezeNet version {version}: 1_0 or 1_1 expected")
        stem_channels, stem_kernel, cfg = _CFGS[version]
        layers: list[nn.Module] = [
            nn.Conv2d(3, stem_channels, kernel_size=stem_kernel, stride=2),
            nn.ReLU(inplace=True),
        ]
        for v in cfg:
            if v == "M":
                layers.append(nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True))
            else:
                inplanes, squeeze, expand = v
                layers.append(Fire(inplanes, squeeze, expand, expand))
        self.features = nn.Sequential(*layers)

        final_conv = nn.Conv2d(512, self.num_classes, kernel_size=1)
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout), final_conv, nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d((1, 1))
        )
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                if m is final_conv:
                    init.normal_(m.weight, mean=0.0, std=0.01)
                else:
                    init.kaiming_uniform_(m.weight)
                if m.bias is not None:
                    init.constant_(m.bias, 0)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = self.classifier(self.features(x))
        return ember.flatten(x, 1)


def _squeezenet(
    version: str, weights: WeightsEnum | None, progress: bool, **kwargs: Any
) -> SqueezeNet:
    return _build_model(partial(SqueezeNet, version), weights, progress, kwargs)


# Weights: torchvision's checkpoints, presets and metadata. Rows: file, num_params, acc@1, acc@5,
# GFLOPS, MB.
_v1 = partial(
    _imagenet_weights,
    transforms=_classification(224),
    recipe="https://github.com/pytorch/vision/pull/49#issuecomment-277560717",
    _docs="These weights reproduce closely the results of the paper using a simple training "
    "recipe.",
)


class SqueezeNet1_0_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "squeezenet1_0-b66bff10", 1248424, 58.092, 80.42, 0.819, 4.778, min_size=(21, 21)
    )
    DEFAULT = IMAGENET1K_V1


class SqueezeNet1_1_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "squeezenet1_1-b8a52dc0", 1235496, 58.178, 80.624, 0.349, 4.729, min_size=(17, 17)
    )
    DEFAULT = IMAGENET1K_V1


@_model_builder()
def squeezenet1_0(
    *, weights: SqueezeNet1_0_Weights | None = None, progress: bool = True, **kwargs: Any
) -> SqueezeNet:
    """SqueezeNet from `SqueezeNet: AlexNet-level accuracy with 50x fewer parameters and <0.5MB
    model size <https://arxiv.org/abs/1602.07360>`_."""
    return _squeezenet("1_0", weights, progress, **kwargs)


@_model_builder()
def squeezenet1_1(
    *, weights: SqueezeNet1_1_Weights | None = None, progress: bool = True, **kwargs: Any
) -> SqueezeNet:
    """SqueezeNet 1.1 from the `official SqueezeNet repo
    <https://github.com/DeepScale/SqueezeNet/tree/master/SqueezeNet_v1.1>`_: 2.4x less
    computation than 1.0 for the same accuracy."""
    return _squeezenet("1_1", weights, progress, **kwargs)
