"""Layers shared by the model zoo and by detection code, as in ``torchvision.ops.misc``
(attribute names as torchvision's, so state_dict keys match)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence

import ember
from ember import Tensor, nn
from ember.nn import functional as F

__all__ = [
    "interpolate",
    "FrozenBatchNorm2d",
    "ConvNormActivation",
    "Conv2dNormActivation",
    "Conv3dNormActivation",
    "SqueezeExcitation",
    "MLP",
    "Permute",
]

interpolate = F.interpolate


def _make_ntuple(x, n: int) -> tuple:
    """``tuple(x)`` for an iterable ``x``, else ``x`` repeated ``n`` times."""
    if isinstance(x, Iterable):
        return tuple(x)
    return (x,) * n


class FrozenBatchNorm2d(nn.Module):
    """BatchNorm2d whose batch statistics and affine parameters are fixed buffers.

    Args:
        num_features: the number of channels ``C`` of an input ``(N, C, H, W)``.
        eps: added to the variance for numerical stability. Default: 1e-5.
    """

    def __init__(self, num_features: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.register_buffer("weight", ember.ones(num_features))
        self.register_buffer("bias", ember.zeros(num_features))
        self.register_buffer("running_mean", ember.zeros(num_features))
        self.register_buffer("running_var", ember.ones(num_features))

    def _load_from_state_dict(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ):
        # a BatchNorm2d checkpoint loads: its step counter has no place here
        num_batches_tracked_key = prefix + "num_batches_tracked"
        if num_batches_tracked_key in state_dict:
            del state_dict[num_batches_tracked_key]
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )

    def forward(self, x: Tensor) -> Tensor:
        w = self.weight.reshape(1, -1, 1, 1)
        b = self.bias.reshape(1, -1, 1, 1)
        rv = self.running_var.reshape(1, -1, 1, 1)
        rm = self.running_mean.reshape(1, -1, 1, 1)
        scale = w * (rv + self.eps).rsqrt()
        bias = b - rm * scale
        return x * scale + bias

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.weight.shape[0]}, eps={self.eps})"


class ConvNormActivation(nn.Sequential):
    """A convolution (``conv_layer``), then an optional norm layer, then an optional
    activation; the base of :class:`Conv2dNormActivation` and :class:`Conv3dNormActivation`,
    which are what to use (a direct use warns, as in torchvision)."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | tuple[int, ...] = 3,
        stride: int | tuple[int, ...] = 1,
        padding: int | tuple[int, ...] | str | None = None,
        groups: int = 1,
        norm_layer: Callable[..., nn.Module] | None = nn.BatchNorm2d,
        activation_layer: Callable[..., nn.Module] | None = nn.ReLU,
        dilation: int | tuple[int, ...] = 1,
        inplace: bool | None = True,
        bias: bool | None = None,
        conv_layer: Callable[..., nn.Module] = nn.Conv2d,
    ) -> None:
        if padding is None:
            if isinstance(kernel_size, int) and isinstance(dilation, int):
                padding = (kernel_size - 1) // 2 * dilation
            else:
                conv_dim = len(kernel_size) if isinstance(kernel_size, Sequence) else len(dilation)
                kernel_size = _make_ntuple(kernel_size, conv_dim)
                dilation = _make_ntuple(dilation, conv_dim)
                padding = tuple((kernel_size[i] - 1) // 2 * dilation[i] for i in range(conv_dim))
        if bias is None:
            bias = norm_layer is None
        layers = [
            conv_layer(
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
        if self.__class__ == ConvNormActivation:
            warnings.warn(
                "Don't use ConvNormActivation directly, please use Conv2dNormActivation and "
                "Conv3dNormActivation instead.",
                stacklevel=2,
            )


class Conv2dNormActivation(ConvNormActivation):
    """Conv2d, then an optional norm layer (default BatchNorm2d), then an optional activation
    (default ReLU). ``padding=None`` keeps the size at stride 1:
    ``(kernel_size - 1) // 2 * dilation``; ``bias=None`` gives the conv a bias only without a
    norm layer; ``inplace`` is passed to the activation (``None``: its default)."""

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
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, groups, norm_layer,
            activation_layer, dilation, inplace, bias, nn.Conv2d,
        )


class Conv3dNormActivation(ConvNormActivation):
    """Conv3d, then an optional norm layer (default BatchNorm3d), then an optional activation
    (default ReLU); the arguments as :class:`Conv2dNormActivation`'s."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | tuple[int, int, int] = 3,
        stride: int | tuple[int, int, int] = 1,
        padding: int | tuple[int, int, int] | str | None = None,
        groups: int = 1,
        norm_layer: Callable[..., nn.Module] | None = nn.BatchNorm3d,
        activation_layer: Callable[..., nn.Module] | None = nn.ReLU,
        dilation: int | tuple[int, int, int] = 1,
        inplace: bool | None = True,
        bias: bool | None = None,
    ) -> None:
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, groups, norm_layer,
            activation_layer, dilation, inplace, bias, nn.Conv3d,
        )


class SqueezeExcitation(nn.Module):
    """Squeeze-and-Excitation block (https://arxiv.org/abs/1709.01507, Fig. 1): the input
    scaled per channel by ``scale_activation(fc2(activation(fc1(avgpool(input)))))``."""

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

    def _scale(self, input: Tensor) -> Tensor:
        scale = self.avgpool(input)
        scale = self.fc1(scale)
        scale = self.activation(scale)
        scale = self.fc2(scale)
        return self.scale_activation(scale)

    def forward(self, input: Tensor) -> Tensor:
        scale = self._scale(input)
        return scale * input


class MLP(nn.Sequential):
    """Multi-layer perceptron: (Linear, optional norm, activation, Dropout) for each hidden
    width but the last, then Linear and Dropout. ``inplace=None`` leaves the activation's and
    Dropout's defaults."""

    def __init__(
        self,
        in_channels: int,
        hidden_channels: list[int],
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
    """The input's dimensions permuted to ``dims`` (``torch.permute`` as a module)."""

    def __init__(self, dims: list[int]) -> None:
        super().__init__()
        self.dims = dims

    def forward(self, x: Tensor) -> Tensor:
        return ember.permute(x, self.dims)
