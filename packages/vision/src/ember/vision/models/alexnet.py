"""AlexNet (torchvision's ``models.alexnet``, the "One weird trick" variant)."""

from typing import Any

import ember
from ember import nn

from ._api import WeightsEnum
from ._meta import _classification, _imagenet_weights
from ._utils import _build_model, _model_builder

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


# Weights: torchvision's checkpoint, preset and metadata. Row: file, num_params, acc@1, acc@5,
# GFLOPS, MB.
class AlexNet_Weights(WeightsEnum):
    IMAGENET1K_V1 = _imagenet_weights(
        "alexnet-owt-7be5be79",
        61100840,
        56.522,
        79.066,
        0.714,
        233.087,
        transforms=_classification(224),
        min_size=(63, 63),
        recipe="https://github.com/pytorch/vision/tree/main/references/classification#alexnet-and-vgg",
        _docs=(
            "\n                These weights reproduce closely the results of the paper "
            "using a simplified training recipe.\n            "
        ),
    )
    DEFAULT = IMAGENET1K_V1


@_model_builder()
def alexnet(
    *, weights: AlexNet_Weights | None = None, progress: bool = True, **kwargs: Any
) -> AlexNet:
    """AlexNet from `One weird trick for parallelizing convolutional neural networks
    <https://arxiv.org/abs/1404.5997>`__."""
    return _build_model(AlexNet, weights, progress, kwargs)
