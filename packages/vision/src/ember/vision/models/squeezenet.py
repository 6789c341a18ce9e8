"""SqueezeNet 1.0 and 1.1 (torchvision's ``models.squeezenet``)."""

from typing import Any

import ember
from ember import nn
from ember.nn import init

from ._api import Weights, WeightsEnum, _preset, register_model
from ._meta import _IMAGENET_CATEGORIES
from ._utils import _ovewrite_named_param, handle_legacy_interface

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


class SqueezeNet(nn.Module):
    """SqueezeNet ``version`` "1_0" or "1_1"; the classifier is a 1x1 conv and global pooling."""

    def __init__(self, version: str = "1_0", num_classes: int = 1000, dropout: float = 0.5) -> None:
        super().__init__()
        self.num_classes = num_classes
        pool = lambda: nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True)
        if version == "1_0":
            self.features = nn.Sequential(
                nn.Conv2d(3, 96, kernel_size=7, stride=2),
                nn.ReLU(inplace=True),
                pool(),
                Fire(96, 16, 64, 64),
                Fire(128, 16, 64, 64),
                Fire(128, 32, 128, 128),
                pool(),
                Fire(256, 32, 128, 128),
                Fire(256, 48, 192, 192),
                Fire(384, 48, 192, 192),
                Fire(384, 64, 256, 256),
                pool(),
                Fire(512, 64, 256, 256),
            )
        elif version == "1_1":
            self.features = nn.Sequential(
                nn.Conv2d(3, 64, kernel_size=3, stride=2),
                nn.ReLU(inplace=True),
                pool(),
                Fire(64, 16, 64, 64),
                Fire(128, 16, 64, 64),
                pool(),
                Fire(128, 32, 128, 128),
                Fire(256, 32, 128, 128),
                pool(),
                Fire(256, 48, 192, 192),
                Fire(384, 48, 192, 192),
                Fire(384, 64, 256, 256),
                Fire(512, 64, 256, 256),
            )
        else:
            # Only the two versions of the paper's reference implementation exist.
            raise ValueError(f"Unsupported SqueezeNet version {version}: 1_0 or 1_1 expected")

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
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    model = SqueezeNet(version, **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model


# Weights: URLs (sha256 prefix in the file name), presets and metadata as torchvision lists them.
_RECIPE_1 = "https://github.com/pytorch/vision/pull/49#issuecomment-277560717"
_DOCS_1 = "These weights reproduce closely the results of the paper using a simple training recipe."


class SqueezeNet1_0_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/squeezenet1_0-b66bff10.pth",
        transforms=_preset("ImageClassification", crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "recipe": _RECIPE_1,
            "_docs": _DOCS_1,
            "min_size": (21, 21),
            "num_params": 1248424,
            "_metrics": {"ImageNet-1K": {"acc@1": 58.092, "acc@5": 80.42}},
            "_ops": 0.819,
            "_file_size": 4.778,
        },
    )
    DEFAULT = IMAGENET1K_V1


class SqueezeNet1_1_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/squeezenet1_1-b8a52dc0.pth",
        transforms=_preset("ImageClassification", crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "recipe": _RECIPE_1,
            "_docs": _DOCS_1,
            "min_size": (17, 17),
            "num_params": 1235496,
            "_metrics": {"ImageNet-1K": {"acc@1": 58.178, "acc@5": 80.624}},
            "_ops": 0.349,
            "_file_size": 4.729,
        },
    )
    DEFAULT = IMAGENET1K_V1


_ARGS = """

    Args:
        weights (:class:`~ember.vision.models.{}`, optional): the pretrained
            weights to use; ``None`` (default) for random initialisation.
        progress (bool, optional): show a download progress bar. Default: True.
        **kwargs: passed to :class:`ember.vision.models.squeezenet.SqueezeNet`.
"""


@register_model()
@handle_legacy_interface(weights=("pretrained", SqueezeNet1_0_Weights.IMAGENET1K_V1))
def squeezenet1_0(
    *, weights: SqueezeNet1_0_Weights | None = None, progress: bool = True, **kwargs: Any
) -> SqueezeNet:
    weights = SqueezeNet1_0_Weights.verify(weights)
    return _squeezenet("1_0", weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", SqueezeNet1_1_Weights.IMAGENET1K_V1))
def squeezenet1_1(
    *, weights: SqueezeNet1_1_Weights | None = None, progress: bool = True, **kwargs: Any
) -> SqueezeNet:
    weights = SqueezeNet1_1_Weights.verify(weights)
    return _squeezenet("1_1", weights, progress, **kwargs)


squeezenet1_0.__doc__ = (
    "SqueezeNet from `SqueezeNet: AlexNet-level accuracy with 50x fewer parameters and <0.5MB\n"
    "    model size <https://arxiv.org/abs/1602.07360>`_." + _ARGS.format("SqueezeNet1_0_Weights")
)
squeezenet1_1.__doc__ = (
    "SqueezeNet 1.1 from the `official SqueezeNet repo\n"
    "    <https://github.com/DeepScale/SqueezeNet/tree/master/SqueezeNet_v1.1>`_: 2.4x less\n"
    "    computation than 1.0 for the same accuracy." + _ARGS.format("SqueezeNet1_1_Weights")
)
