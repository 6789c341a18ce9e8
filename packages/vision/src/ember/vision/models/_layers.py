"""Building blocks shared by the second half of the model zoo.

Ports of ``torchvision.ops.misc`` (Conv2dNormActivation, SqueezeExcitation,
MLP, Permute) and ``torchvision.ops.stochastic_depth`` with torchvision's
attribute names, so state_dict keys match; and PooledClassifier, the
features / pooling / classifier skeleton MobileNetV3 and EfficientNet share.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import ember
from ember import nn

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


class Conv2dNormActivation(nn.Sequential):
    """Conv2d, then an optional norm layer, then an optional activation."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | tuple[int, int] = 3,
        stride: int | tuple[int, int] = 1,
        padding: int | tuple[int, int] | str | None = None,
        groups: int = 1,
        norm_layer: Callable[..., nn.Module] | None = nn.BatchNorm2d,
        activation_layer: Callable[..., nn.Module] | None = nn.ReLU,
        dilation: int | tuple[int, int] = 1,
        inplace: bool | None = True,
        bias: bool | None = None,
    ) -> None:
        if padding is None:
            if isinstance(kernel_size, int) and isinstance(dilation, int):
                padding = (kernel_size - 1) // 2 * dilation
            else:
                ks = (kernel_size,) * 2 if isinstance(kernel_size, int) else tuple(kernel_size)
                dl = (dilation,) * 2 if isinstance(dilation, int) else tuple(dilation)
                padding = tuple((k - 1) // 2 * d for k, d in zip(ks, dl))
        if bias is None:
            bias = norm_layer is None
        layers = [
            nn.Conv2d(
                in_channels,
                out_channels,
                kernel_size,
                stride,
                padding,
                dilation=dilation,
                groups=groups,
                bias=bias,
            )
        ]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            params = {} if inplace is None else {"inplace": inplace}
            layers.append(activation_layer(**params))
        super().__init__(*layers)
        self.out_channels = out_channels


class SqueezeExcitation(nn.Module):
    """Squeeze-and-Excitation block (https://arxiv.org/abs/1709.01507)."""

    def __init__(
        self,
        input_channels: int,
        squeeze_channels: int,
        activation: Callable[..., nn.Module] = nn.ReLU,
        scale_activation: Callable[..., nn.Module] = nn.Sigmoid,
    ) -> None:
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(input_channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2d(squeeze_channels, input_channels, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def _scale(self, input):
        scale = self.avgpool(input)
        scale = self.fc1(scale)
        scale = self.activation(scale)
        scale = self.fc2(scale)
        return self.scale_activation(scale)

    def forward(self, input):
        return self._scale(input) * input


class MLP(nn.Sequential):
    """Multi-layer perceptron: (Linear, norm, activation, Dropout)* then Linear, Dropout."""

    def __init__(
        self,
        in_channels: int,
        hidden_channels: Sequence[int],
        norm_layer: Callable[..., nn.Module] | None = None,
        activation_layer: Callable[..., nn.Module] | None = nn.ReLU,
        inplace: bool | None = None,
        bias: bool = True,
        dropout: float = 0.0,
    ) -> None:
        params = {} if inplace is None else {"inplace": inplace}
        layers = []
        in_dim = in_channels
        for hidden_dim in hidden_channels[:-1]:
            layers.append(nn.Linear(in_dim, hidden_dim, bias=bias))
            if norm_layer is not None:
                layers.append(norm_layer(hidden_dim))
            layers.append(activation_layer(**params))
            layers.append(nn.Dropout(dropout, **params))
            in_dim = hidden_dim
        layers.append(nn.Linear(in_dim, hidden_channels[-1], bias=bias))
        layers.append(nn.Dropout(dropout, **params))
        super().__init__(*layers)


class Permute(nn.Module):
    """Permute the dimensions of the input (``torch.permute`` as a module)."""

    def __init__(self, dims: Sequence[int]) -> None:
        super().__init__()
        self.dims = list(dims)

    def forward(self, x):
        return ember.permute(x, self.dims)


def stochastic_depth(input, p: float, mode: str, training: bool = True):
    """Randomly zero whole rows (``"row"``) or the whole input (``"batch"``), scaled by 1/(1-p)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
    if mode not in ("batch", "row"):
        raise ValueError(f"mode has to be either 'batch' or 'row', but got {mode}")
    if not training or p == 0.0:
        return input
    survival_rate = 1.0 - p
    if mode == "row":
        size = [input.shape[0]] + [1] * (input.ndim - 1)
    else:
        size = [1] * input.ndim
    noise = ember.empty(size, dtype=input.dtype, device=input.device)
    noise = noise.bernoulli_(survival_rate)
    if survival_rate > 0.0:
        noise.div_(survival_rate)
    return input * noise


class StochasticDepth(nn.Module):
    """Module form of :func:`stochastic_depth`."""

    def __init__(self, p: float, mode: str) -> None:
        super().__init__()
        self.p = p
        self.mode = mode

    def forward(self, input):
        return stochastic_depth(input, self.p, self.mode, self.training)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(p={self.p}, mode={self.mode})"
