"""AlexNet (torchvision's ``models.alexnet``, the "One weird trick" variant)."""

from typing import Any

import ember
from ember import nn

from ._api import Weights, WeightsEnum, _preset, register_model
from ._meta import _IMAGENET_CATEGORIES
from ._utils import _ovewrite_named_param, handle_legacy_interface

__all__ = ["AlexNet", "AlexNet_Weights", "alexnet"]


class AlexNet(nn.Module):
    """AlexNet: five convolutions, 6x6 adaptive pooling and a 3-layer classifier."""

    def __init__(self, num_classes: int = 1000, dropout: float = 0.5) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=11, stride=4, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(64, 192, kernel_size=5, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(192, 384, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
        )
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout),
            nn.Linear(256 * 6 * 6, 4096),
            nn.ReLU(inplace=True),
            nn.Dropout(p=dropout),
            nn.Linear(4096, 4096),
            nn.ReLU(inplace=True),
            nn.Linear(4096, num_classes),
        )

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = self.avgpool(self.features(x))
        x = ember.flatten(x, 1)
        return self.classifier(x)


# Weights: URLs (sha256 prefix in the file name), presets and metadata as torchvision lists them.
class AlexNet_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/alexnet-owt-7be5be79.pth",
        transforms=_preset("ImageClassification", crop_size=224),
        meta={
            "num_params": 61100840,
            "min_size": (63, 63),
            "categories": _IMAGENET_CATEGORIES,
            "recipe": (
                "https://github.com/pytorch/vision/tree/main/references/classification#alexnet-and-vgg"
            ),
            "_metrics": {"ImageNet-1K": {"acc@1": 56.522, "acc@5": 79.066}},
            "_ops": 0.714,
            "_file_size": 233.087,
            "_docs": (
                "\n                These weights reproduce closely the results of the paper "
                "using a simplified training recipe.\n            "
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


@register_model()
@handle_legacy_interface(weights=("pretrained", AlexNet_Weights.IMAGENET1K_V1))
def alexnet(
    *, weights: AlexNet_Weights | None = None, progress: bool = True, **kwargs: Any
) -> AlexNet:
    """AlexNet from `One weird trick for parallelizing convolutional neural networks
    <https://arxiv.org/abs/1404.5997>`__.

    Args:
        weights (:class:`~ember.vision.models.AlexNet_Weights`, optional): the pretrained
            weights to use; ``None`` (default) for random initialisation.
        progress (bool, optional): show a download progress bar. Default: True.
        **kwargs: passed to :class:`ember.vision.models.alexnet.AlexNet`.
    """
    weights = AlexNet_Weights.verify(weights)
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    model = AlexNet(**kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model
