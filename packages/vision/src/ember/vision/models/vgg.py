"""VGG 11/13/16/19, with and without batch normalisation (torchvision's ``models.vgg``)."""

from functools import partial
from typing import Any

import ember
from ember import nn

from ._api import WeightsEnum
from ._meta import _classification, _imagenet_weights
from ._utils import _build_model, _model_builder

__all__ = [
    "VGG",
    "VGG11_Weights",
    "VGG11_BN_Weights",
    "VGG13_Weights",
    "VGG13_BN_Weights",
    "VGG16_Weights",
    "VGG16_BN_Weights",
    "VGG19_Weights",
    "VGG19_BN_Weights",
    "vgg11",
    "vgg11_bn",
    "vgg13",
    "vgg13_bn",
    "vgg16",
    "vgg16_bn",
    "vgg19",
    "vgg19_bn",
]


class VGG(nn.Module):
    """VGG: a convolutional ``features`` stack, 7x7 adaptive pooling and a 3-layer classifier."""

    def __init__(
        self,
        features: nn.Module,
        num_classes: int = 1000,
        init_weights: bool = True,
        dropout: float = 0.5,
    ) -> None:
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096),
            nn.ReLU(True),
            nn.Dropout(p=dropout),
            nn.Linear(4096, 4096),
            nn.ReLU(True),
            nn.Dropout(p=dropout),
            nn.Linear(4096, num_classes),
        )
        if init_weights:
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                    if m.bias is not None:
                        nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, 0, 0.01)
                    nn.init.constant_(m.bias, 0)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = self.avgpool(self.features(x))
        x = ember.flatten(x, 1)
        return self.classifier(x)


def make_layers(cfg: list[str | int], batch_norm: bool = False) -> nn.Sequential:
    """The ``features`` stack of a configuration: ints are 3x3 convs, ``"M"`` 2x2 max pools."""
    layers: list[nn.Module] = []
    in_channels = 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
            continue
        layers.append(nn.Conv2d(in_channels, v, kernel_size=3, padding=1))
        if batch_norm:
            layers.append(nn.BatchNorm2d(v))
        layers.append(nn.ReLU(inplace=True))
        in_channels = v
    return nn.Sequential(*layers)


cfgs: dict[str, list[str | int]] = {
    "A": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "B": [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "D": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "E": [
        64,
        64,
        "M",
        128,
        128,
        "M",
        256,
        256,
        256,
        256,
        "M",
        512,
        512,
        512,
        512,
        "M",
        512,
        512,
        512,
        512,
        "M",
    ],
}


def _vgg(
    cfg: str, batch_norm: bool, weights: WeightsEnum | None, progress: bool, **kwargs: Any
) -> VGG:
    if weights is not None:
        kwargs["init_weights"] = False
    return _build_model(
        partial(VGG, make_layers(cfgs[cfg], batch_norm=batch_norm)), weights, progress, kwargs
    )


# Weights: torchvision's checkpoints, presets and metadata. Rows: file, num_params, acc@1, acc@5,
# GFLOPS, MB.
_v1 = partial(
    _imagenet_weights,
    transforms=_classification(224),
    min_size=(32, 32),
    recipe="https://github.com/pytorch/vision/tree/main/references/classification#alexnet-and-vgg",
    _docs="These weights were trained from scratch by using a simplified training recipe.",
)


class VGG11_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("vgg11-8a719046", 132863336, 69.02, 88.628, 7.609, 506.84)
    DEFAULT = IMAGENET1K_V1


class VGG11_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("vgg11_bn-6002323d", 132868840, 70.37, 89.81, 7.609, 506.881)
    DEFAULT = IMAGENET1K_V1


class VGG13_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("vgg13-19584684", 133047848, 69.928, 89.246, 11.308, 507.545)
    DEFAULT = IMAGENET1K_V1


class VGG13_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("vgg13_bn-abd245e5", 133053736, 71.586, 90.374, 11.308, 507.59)
    DEFAULT = IMAGENET1K_V1


class VGG16_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("vgg16-397923af", 138357544, 71.592, 90.382, 15.47, 527.796)
    # The SSD backbone's weights: only ``features`` holds trained values.
    IMAGENET1K_FEATURES = _v1(
        "vgg16_features-amdegroot-88682ab5",
        138357544,
        float("nan"),
        float("nan"),
        15.47,
        527.802,
        categories=None,
        transforms=_classification(
            224,
            mean=(0.48235, 0.45882, 0.40784),
            std=(0.00392156862745098, 0.00392156862745098, 0.00392156862745098),
        ),
        recipe="https://github.com/amdegroot/ssd.pytorch#training-ssd",
        _docs=(
            "\n                These weights can't be used for classification because they "
            "are missing values in the `classifier`\n                module. Only the "
            "`features` module has valid values and can be used for feature extraction. "
            "The weights\n                were trained using the original input "
            "standardization method as described in the paper.\n            "
        ),
    )
    DEFAULT = IMAGENET1K_V1


class VGG16_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("vgg16_bn-6c64b313", 138365992, 73.36, 91.516, 15.47, 527.866)
    DEFAULT = IMAGENET1K_V1


class VGG19_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("vgg19-dcbb9e9d", 143667240, 72.376, 90.876, 19.632, 548.051)
    DEFAULT = IMAGENET1K_V1


class VGG19_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("vgg19_bn-c79401a0", 143678248, 74.218, 91.842, 19.632, 548.143)
    DEFAULT = IMAGENET1K_V1


# Builders: the configuration of cfgs each one uses, with or without batch normalisation.


@_model_builder()
def vgg11(*, weights: VGG11_Weights | None = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-11 from the `VGG paper <https://arxiv.org/abs/1409.1556>`__."""
    return _vgg("A", False, weights, progress, **kwargs)


@_model_builder()
def vgg11_bn(
    *, weights: VGG11_BN_Weights | None = None, progress: bool = True, **kwargs: Any
) -> VGG:
    """VGG-11 with batch normalization from the `VGG paper <https://arxiv.org/abs/1409.1556>`__."""
    return _vgg("A", True, weights, progress, **kwargs)


@_model_builder()
def vgg13(*, weights: VGG13_Weights | None = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-13 from the `VGG paper <https://arxiv.org/abs/1409.1556>`__."""
    return _vgg("B", False, weights, progress, **kwargs)


@_model_builder()
def vgg13_bn(
    *, weights: VGG13_BN_Weights | None = None, progress: bool = True, **kwargs: Any
) -> VGG:
    """VGG-13 with batch normalization from the `VGG paper <https://arxiv.org/abs/1409.1556>`__."""
    return _vgg("B", True, weights, progress, **kwargs)


@_model_builder()
def vgg16(*, weights: VGG16_Weights | None = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-16 from the `VGG paper <https://arxiv.org/abs/1409.1556>`__."""
    return _vgg("D", False, weights, progress, **kwargs)


@_model_builder()
def vgg16_bn(
    *, weights: VGG16_BN_Weights | None = None, progress: bool = True, **kwargs: Any
) -> VGG:
    """VGG-16 with batch normalization from the `VGG paper <https://arxiv.org/abs/1409.1556>`__."""
    return _vgg("D", True, weights, progress, **kwargs)


@_model_builder()
def vgg19(*, weights: VGG19_Weights | None = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-19 from the `VGG paper <https://arxiv.org/abs/1409.1556>`__."""
    return _vgg("E", False, weights, progress, **kwargs)


@_model_builder()
def vgg19_bn(
    *, weights: VGG19_BN_Weights | None = None, progress: bool = True, **kwargs: Any
) -> VGG:
    """VGG-19 with batch normalization from the `VGG paper <https://arxiv.org/abs/1409.1556>`__."""
    return _vgg("E", True, weights, progress, **kwargs)
