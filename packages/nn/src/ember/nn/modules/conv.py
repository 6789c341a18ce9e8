"""Convolution layers (``torch.nn.modules.conv``): ``Conv1d/2d/3d`` and
``ConvTranspose1d/2d/3d`` over ember-core's convolution kernels."""

from __future__ import annotations

import ember
from ember import Tensor

from .. import functional as F
from ..parameter import Parameter
from .lazy import LazyModuleMixin, _uninitialized_weight_and_bias
from .module import Module
from .utils import (
    _options_repr,
    _pair,
    _parameter_or_none,
    _reset_kaiming_uniform,
    _reverse_repeat_tuple,
    _single,
    _triple,
)

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d"]

_VALID_PADDING_STRINGS = {"same", "valid"}
_VALID_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


class _ConvNd(Module):
    """Parameters, init scheme and repr shared by every convolution layer."""

    __constants__ = ["stride", "padding", "dilation", "groups", "padding_mode",
                     "output_padding", "in_channels", "out_channels", "kernel_size"]

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 transposed, output_padding, groups, bias, padding_mode, device=None,
                 dtype=None) -> None:
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in _VALID_PADDING_STRINGS:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{_VALID_PADDING_STRINGS}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _VALID_PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_VALID_PADDING_MODES}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        if isinstance(self.padding, str):
            pads = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1)):
                    total = d * (k - 1)
                    pads[2 * i] = total // 2
                    pads[2 * i + 1] = total - total // 2
            self._reversed_padding_repeated_twice = pads
        else:
            self._reversed_padding_repeated_twice = _reverse_repeat_tuple(self.padding, 2)
        if transposed:
            shape = (in_channels, out_channels // groups, *kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *kernel_size)
        self.weight = Parameter(ember.empty(shape, device=device, dtype=dtype))
        self.register_parameter("bias", _parameter_or_none(bias, out_channels, device, dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Kaiming-uniform weight (a=sqrt(5)) and U(-1/sqrt(fan_in), 1/sqrt(fan_in)) bias."""
        _reset_kaiming_uniform(self.weight, self.bias, keep_bias_without_fan_in=True)

    def extra_repr(self) -> str:
        return _options_repr(
            self, "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}", (
                (", padding={padding}", self.padding != (0,) * len(self.padding)),
                (", dilation={dilation}", self.dilation != (1,) * len(self.dilation)),
                (", output_padding={output_padding}",
                 self.output_padding != (0,) * len(self.output_padding)),
                (", groups={groups}", self.groups != 1),
                (", bias=False", self.bias is None),
                (", padding_mode={padding_mode}", self.padding_mode != "zeros")))

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        if not hasattr(self, "padding_mode"):
            self.padding_mode = "zeros"


class _ConvForward(_ConvNd):
    """``ConvNd``: the padding modes other than zeros pad explicitly before the kernel."""

    _tuple = staticmethod(_single)
    _fn_name = ""  # the torch.nn.functional function, looked up at each call

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        t = self._tuple
        super().__init__(in_channels, out_channels, t(kernel_size), t(stride),
                         padding if isinstance(padding, str) else t(padding), t(dilation),
                         False, t(0), groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        fn = getattr(F, self._fn_name)
        if self.padding_mode != "zeros":
            return fn(F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode),
                      weight, bias, self.stride, self._tuple(0), self.dilation, self.groups)
        return fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_ConvForward):
    """1-D convolution over an input of shape ``(N, C_in, L)`` or ``(C_in, L)``."""

    _tuple = staticmethod(_single)
    _fn_name = "conv1d"


class Conv2d(_ConvForward):
    """2-D convolution over an input of shape ``(N, C_in, H, W)`` or ``(C_in, H, W)``."""

    _tuple = staticmethod(_pair)
    _fn_name = "conv2d"


class Conv3d(_ConvForward):
    """3-D convolution over an input of shape ``(N, C_in, D, H, W)`` or ``(C_in, D, H, W)``."""

    _tuple = staticmethod(_triple)
    _fn_name = "conv3d"


class _ConvTransposeNd(_ConvNd):
    """``ConvTransposeNd``: ``forward(input, output_size=None)`` picks the output padding."""

    _tuple = staticmethod(_single)
    _fn_name = ""  # the torch.nn.functional function, looked up at each call
    _nd = 1

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 padding_mode: str = "zeros", device=None, dtype=None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f"{self.__class__.__name__}")
        t = self._tuple
        super().__init__(in_channels, out_channels, t(kernel_size), t(stride), t(padding),
                         t(dilation), True, t(output_padding), groups, bias, padding_mode,
                         device, dtype)

    def _output_padding(self, input: Tensor, output_size, stride, padding, kernel_size,
                        num_spatial_dims: int, dilation=None) -> list:
        if output_size is None:
            return self._tuple(self.output_padding)
        has_batch_dim = input.dim() == num_spatial_dims + 2
        num_non_spatial_dims = 2 if has_batch_dim else 1
        # Kept as given (tuple, list or Size): PyTorch's error below prints it as such.
        if len(output_size) == num_non_spatial_dims + num_spatial_dims:
            output_size = output_size[num_non_spatial_dims:]
        if len(output_size) != num_spatial_dims:
            raise ValueError(f"ConvTranspose{num_spatial_dims}D: for {input.dim()}D input, "
                             f"output_size must have {num_spatial_dims} or "
                             f"{num_non_spatial_dims + num_spatial_dims} elements (got "
                             f"{len(output_size)})")
        min_sizes, max_sizes = [], []
        for d in range(num_spatial_dims):
            dim_size = ((input.size(d + num_non_spatial_dims) - 1) * stride[d] - 2 * padding[d]
                        + (dilation[d] if dilation is not None else 1) * (kernel_size[d] - 1)
                        + 1)
            min_sizes.append(dim_size)
            max_sizes.append(dim_size + stride[d] - 1)
        for size, lo, hi in zip(output_size, min_sizes, max_sizes):
            if size < lo or size > hi:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes "
                                 f"range from {min_sizes} to {max_sizes} (for an input of "
                                 f"{input.size()[2:]})")
        return [output_size[d] - min_sizes[d] for d in range(num_spatial_dims)]

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        if self.padding_mode != "zeros":
            raise ValueError(f"Only `zeros` padding mode is supported for "
                             f"{self.__class__.__name__}")
        output_padding = self._output_padding(input, output_size, self.stride, self.padding,
                                              self.kernel_size, self._nd, self.dilation)
        fn = getattr(F, self._fn_name)
        return fn(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                  self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution (the gradient of ``conv1d`` with respect to its input)."""

    _tuple = staticmethod(_single)
    _fn_name = "conv_transpose1d"
    _nd = 1


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution (the gradient of ``conv2d`` with respect to its input)."""

    _tuple = staticmethod(_pair)
    _fn_name = "conv_transpose2d"
    _nd = 2


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution (the gradient of ``conv3d`` with respect to its input)."""

    _tuple = staticmethod(_triple)
    _fn_name = "conv_transpose3d"
    _nd = 3


# -- lazy convolutions: in_channels comes from the first input ---------------------------------

class _LazyConvXdMixin(LazyModuleMixin):
    """What every lazy convolution shares: uninitialized ``weight``/``bias`` replaced, on the
    first ``forward``, by parameters of the shapes the input's channels give."""

    def _make_lazy(self, out_channels: int, bias: bool, device, dtype) -> None:
        self.out_channels = out_channels
        _uninitialized_weight_and_bias(self, bias, device, dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor, *args, **kwargs) -> None:
        """Materialize ``weight`` and ``bias`` from the input's channel count and initialize."""
        if not self.has_uninitialized_params():
            return
        self.in_channels = self._get_in_channels(input)
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if self.transposed:
            shape = (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
        else:
            shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
        with ember.no_grad():
            self.weight.materialize(shape)
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()

    def _get_in_channels(self, input: Tensor) -> int:
        num_dims_no_batch = len(self.kernel_size) + 1
        num_dims_batch = num_dims_no_batch + 1
        if input.dim() not in (num_dims_no_batch, num_dims_batch):
            raise RuntimeError(f"Expected {num_dims_no_batch}D (unbatched) or {num_dims_batch}D "
                               f"(batched) input to {self.__class__.__name__}, but got input of "
                               f"size: {input.shape}")
        return input.shape[1] if input.dim() == num_dims_batch else input.shape[0]


class _LazyConv(_LazyConvXdMixin):
    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False,
                         padding_mode, device, dtype)
        self._make_lazy(out_channels, bias, device, dtype)


class _LazyConvTranspose(_LazyConvXdMixin):
    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False,
                         dilation, padding_mode, device, dtype)
        self._make_lazy(out_channels, bias, device, dtype)


class LazyConv1d(_LazyConv, Conv1d):
    """A ``Conv1d`` whose ``in_channels`` is inferred from the first input."""

    cls_to_become = Conv1d


class LazyConv2d(_LazyConv, Conv2d):
    """A ``Conv2d`` whose ``in_channels`` is inferred from the first input."""

    cls_to_become = Conv2d


class LazyConv3d(_LazyConv, Conv3d):
    """A ``Conv3d`` whose ``in_channels`` is inferred from the first input."""

    cls_to_become = Conv3d


class LazyConvTranspose1d(_LazyConvTranspose, ConvTranspose1d):
    """A ``ConvTranspose1d`` whose ``in_channels`` is inferred from the first input."""

    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTranspose, ConvTranspose2d):
    """A ``ConvTranspose2d`` whose ``in_channels`` is inferred from the first input."""

    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTranspose, ConvTranspose3d):
    """A ``ConvTranspose3d`` whose ``in_channels`` is inferred from the first input."""

    cls_to_become = ConvTranspose3d
