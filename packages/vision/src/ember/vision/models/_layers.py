"""Building blocks shared by the second half of the model zoo.

PooledClassifier, the features / pooling / classifier skeleton MobileNetV3 and
EfficientNet share; and, re-exported from their home in ``ember.vision.ops``
(as in torchvision), Conv2dNormActivation, SqueezeExcitation, MLP, Permute and
stochastic depth.
"""

from __future__ import annotations

from collections.abc import Callable

import ember
from ember import nn

from ..ops.misc import MLP, Conv2dNormActivation, Permute, SqueezeExcitation
from ..ops.stochastic_depth import StochasticDepth, stochastic_depth

__all__ = [
    "PooledClassifier",
    "Conv2dNormActivation",
    "SqueezeExcitation",
    "MLP",
    "Permute",
    "StochasticDepth",
    "stochastic_depth",
]


class PooledClassifier(nn.Module):
    """Base of the mobile networks whose forward is ``features``, ``avgpool``, flatten and
    ``classifier`` (MobileNetV3, EfficientNet)."""

    def _set_features(
        self,
        layers: list[nn.Module],
        in_channels: int,
        out_channels: int,
        norm_layer: Callable[..., nn.Module],
        activation_layer: Callable[..., nn.Module],
    ) -> None:
        """``features``: ``layers`` closed by a 1x1 conv to ``out_channels``; ``avgpool``: the
        global average pooling after them. The subclass sets ``classifier``."""
        layers.append(
            Conv2dNormActivation(
                in_channels,
                out_channels,
                kernel_size=1,
                norm_layer=norm_layer,
                activation_layer=activation_layer,
            )
        )
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)

    def _forward_impl(self, x):
        x = self.features(x)
        x = self.avgpool(x)
        x = ember.flatten(x, 1)
        return self.classifier(x)

    def forward(self, x):
        return self._forward_impl(x)
