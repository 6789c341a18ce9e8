"""VGG 11/13/16/19, with and without batch normalisation (torchvision's ``models.vgg``)."""

from collections.abc import Callable
from typing import Any

import ember
from ember import nn

from ._api import Weights, WeightsEnum, _preset, register_model
from ._meta import _IMAGENET_CATEGORIES
from ._utils import _ovewrite_named_param, handle_legacy_interface

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
        if weights.meta["categories"] is not None:
            _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    model = VGG(make_layers(cfgs[cfg], batch_norm=batch_norm), **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model


# Weights: URLs (sha256 prefix in the file name), presets and metadata as torchvision lists them.
_RECIPE_1 = "https://github.com/pytorch/vision/tree/main/references/classification#alexnet-and-vgg"
_DOCS_1 = "These weights were trained from scratch by using a simplified training recipe."


class VGG11_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/vgg11-8a719046.pth",
        transforms=_preset("ImageClassification", crop_size=224),
        meta={
            "min_size": (32, 32),
            "categories": _IMAGENET_CATEGORIES,
            "recipe": _RECIPE_1,
            "_docs": _DOCS_1,
            "num_params": 132863336,
            "_metrics": {"ImageNet-1K": {"acc@1": 69.02, "acc@5": 88.628}},
            "_ops": 7.609,
            "_file_size": 506.84,
        },
    )
    DEFAULT = IMAGENET1K_V1


class VGG11_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/vgg11_bn-6002323d.pth",
        transforms=_preset("ImageClassification", crop_size=224),
        meta={
            "min_size": (32, 32),
            "categories": _IMAGENET_CATEGORIES,
            "recipe": _RECIPE_1,
            "_docs": _DOCS_1,
            "num_params": 132868840,
            "_metrics": {"ImageNet-1K": {"acc@1": 70.37, "acc@5": 89.81}},
            "_ops": 7.609,
            "_file_size": 506.881,
        },
    )
    DEFAULT = IMAGENET1K_V1


class VGG13_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/vgg13-19584684.pth",
        transforms=_preset("ImageClassification", crop_size=224),
        meta={
            "min_size": (32, 32),
            "categories": _IMAGENET_CATEGORIES,
            "recipe": _RECIPE_1,
            "_docs": _DOCS_1,
            "num_params": 133047848,
            "_metrics": {"ImageNet-1K": {"acc@1": 69.928, "acc@5": 89.246}},
            "_ops": 11.308,
            "_file_size": 507.545,
        },
    )
    DEFAULT = IMAGENET1K_V1


class VGG13_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/vgg13_bn-abd245e5.pth",
        transforms=_preset("ImageClassification", crop_size=224),
        meta={
            "min_size": (32, 32),
            "categories": _IMAGENET_CATEGORIES,
            "recipe": _RECIPE_1,
            "_docs": _DOCS_1,
            "num_params": 133053736,
            "_metrics": {"ImageNet-1K": {"acc@1": 71.586, "acc@5": 90.374}},
            "_ops": 11.308,
            "_file_size": 507.59,
        },
    )
    DEFAULT = IMAGENET1K_V1


class VGG16_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/vgg16-397923af.pth",
        transforms=_preset("ImageClassification", crop_size=224),
        meta={
            "min_size": (32, 32),
            "categories": _IMAGENET_CATEGORIES,
            "recipe": _RECIPE_1,
            "_docs": _DOCS_1,
            "num_params": 138357544,
            "_metrics": {"ImageNet-1K": {"acc@1": 71.592, "acc@5": 90.382}},
            "_ops": 15.47,
            "_file_size": 527.796,
        },
    )
    IMAGENET1K_FEATURES = Weights(
        url="https://download.pytorch.org/models/vgg16_features-amdegroot-88682ab5.pth",
        transforms=_preset(
            "ImageClassification",
            crop_size=224,
            mean=(0.48235, 0.45882, 0.40784),
            std=(0.00392156862745098, 0.00392156862745098, 0.00392156862745098),
        ),
        meta={
            "min_size": (32, 32),
            "categories": None,
            "recipe": "https://github.com/amdegroot/ssd.pytorch#training-ssd",
            "_docs": (
                "\n                These weights can't be used for classification because they "
                "are missing values in the `classifier`\n                module. Only the "
                "`features` module has valid values and can be used for feature extraction. "
                "The weights\n                were trained using the original input "
                "standardization method as described in the paper.\n            "
            ),
            "num_params": 138357544,
            "_metrics": {"ImageNet-1K": {"acc@1": float("nan"), "acc@5": float("nan")}},
            "_ops": 15.47,
            "_file_size": 527.802,
        },
    )
    DEFAULT = IMAGENET1K_V1


class VGG16_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/vgg16_bn-6c64b313.pth",
        transforms=_preset("ImageClassification", crop_size=224),
        meta={
            "min_size": (32, 32),
            "categories": _IMAGENET_CATEGORIES,
            "recipe": _RECIPE_1,
            "_docs": _DOCS_1,
            "num_params": 138365992,
            "_metrics": {"ImageNet-1K": {"acc@1": 73.36, "acc@5": 91.516}},
            "_ops": 15.47,
            "_file_size": 527.866,
        },
    )
    DEFAULT = IMAGENET1K_V1


class VGG19_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/vgg19-dcbb9e9d.pth",
        transforms=_preset("ImageClassification", crop_size=224),
        meta={
            "min_size": (32, 32),
            "categories": _IMAGENET_CATEGORIES,
            "recipe": _RECIPE_1,
            "_docs": _DOCS_1,
            "num_params": 143667240,
            "_metrics": {"ImageNet-1K": {"acc@1": 72.376, "acc@5": 90.876}},
            "_ops": 19.632,
            "_file_size": 548.051,
        },
    )
    DEFAULT = IMAGENET1K_V1


class VGG19_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/vgg19_bn-c79401a0.pth",
        transforms=_preset("ImageClassification", crop_size=224),
        meta={
            "min_size": (32, 32),
            "categories": _IMAGENET_CATEGORIES,
            "recipe": _RECIPE_1,
            "_docs": _DOCS_1,
            "num_params": 143678248,
            "_metrics": {"ImageNet-1K": {"acc@1": 74.218, "acc@5": 91.842}},
            "_ops": 19.632,
            "_file_size": 548.143,
        },
    )
    DEFAULT = IMAGENET1K_V1


def _builder(
    name: str, enum: type[WeightsEnum], cfg: str, batch_norm: bool, doc: str
) -> Callable[..., VGG]:
    """Make the registered builder ``name`` of VGG configuration ``cfg``."""

    def builder(*, weights: enum | None = None, progress: bool = True, **kwargs: Any) -> VGG:
        weights = enum.verify(weights)
        return _vgg(cfg, batch_norm, weights, progress, **kwargs)

    builder.__name__ = builder.__qualname__ = name
    builder.__module__ = __name__
    builder.__doc__ = (
        f"{doc} from `Very Deep Convolutional Networks for Large-Scale Image Recognition\n"
        "    <https://arxiv.org/abs/1409.1556>`__.\n\n    Args:\n"
        f"        weights (:class:`~ember.vision.models.{enum.__name__}`, optional): the\n"
        "            pretrained weights to use; ``None`` (default) for random initialisation.\n"
        "        progress (bool, optional): show a download progress bar. Default: True.\n"
        "        **kwargs: passed to :class:`ember.vision.models.vgg.VGG`.\n"
    )
    return register_model()(
        handle_legacy_interface(weights=("pretrained", enum.IMAGENET1K_V1))(builder)
    )


vgg11 = _builder("vgg11", VGG11_Weights, "A", False, "VGG-11")
vgg11_bn = _builder("vgg11_bn", VGG11_BN_Weights, "A", True, "VGG-11-BN")
vgg13 = _builder("vgg13", VGG13_Weights, "B", False, "VGG-13")
vgg13_bn = _builder("vgg13_bn", VGG13_BN_Weights, "B", True, "VGG-13-BN")
vgg16 = _builder("vgg16", VGG16_Weights, "D", False, "VGG-16")
vgg16_bn = _builder("vgg16_bn", VGG16_BN_Weights, "D", True, "VGG-16-BN")
vgg19 = _builder("vgg19", VGG19_Weights, "E", False, "VGG-19")
vgg19_bn = _builder("vgg19_bn", VGG19_BN_Weights, "E", True, "VGG-19_BN")
