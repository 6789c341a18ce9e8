"""Pooling layers (``torch.nn.modules.pooling``) over ember-core's pooling kernels."""

from __future__ import annotations

from ember import Tensor

from .. import functional as F
from .module import Module
from .utils import _pair, _single, _triple

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
           "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
           "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d",
           "LPPool1d", "LPPool2d", "LPPool3d", "FractionalMaxPool2d", "FractionalMaxPool3d"]


class _MaxPoolNd(Module):
    """``MaxPool1d/2d/3d``: ``F.<_fn_name>(input, kernel_size, stride, padding, dilation, ...)``."""

    __constants__ = ["kernel_size", "stride", "padding", "dilation", "return_indices",
                     "ceil_mode"]
    _fn_name: str  # the torch.nn.functional function, looked up at each call

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor):
        fn = getattr(F, self._fn_name)
        return fn(input, self.kernel_size, self.stride, self.padding, self.dilation,
                  ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    def extra_repr(self) -> str:
        return ("kernel_size={kernel_size}, stride={stride}, padding={padding}, "
                "dilation={dilation}, ceil_mode={ceil_mode}".format(**self.__dict__))


class MaxPool1d(_MaxPoolNd):
    """1-D max pooling over ``(N, C, L)`` (``return_indices=True`` also gives the argmax)."""

    _fn_name = "max_pool1d"


class MaxPool2d(_MaxPoolNd):
    """2-D max pooling over ``(N, C, H, W)`` (``return_indices=True`` also gives the argmax)."""

    _fn_name = "max_pool2d"


class MaxPool3d(_MaxPoolNd):
    """3-D max pooling over ``(N, C, D, H, W)`` (``return_indices=True`` also gives the
    argmax)."""

    _fn_name = "max_pool3d"


class _AvgPoolNd(Module):
    __constants__ = ["kernel_size", "stride", "padding", "ceil_mode", "count_include_pad"]

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AvgPoolWithDivisor(_AvgPoolNd):
    """``AvgPool2d``/``AvgPool3d``: the arguments of ``AvgPool1d`` and ``divisor_override``,
    all passed to ``_fn``."""

    __constants__ = ["kernel_size", "stride", "padding", "ceil_mode", "count_include_pad",
                     "divisor_override"]
    _fn_name: str  # the torch.nn.functional function, looked up at each call

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override=None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        fn = getattr(F, self._fn_name)
        return fn(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                  self.count_include_pad, self.divisor_override)


class AvgPool1d(_AvgPoolNd):
    """1-D average pooling over ``(N, C, L)``."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class AvgPool2d(_AvgPoolWithDivisor):
    """2-D average pooling over ``(N, C, H, W)`` (``divisor_override`` replaces the count)."""

    _fn_name = "avg_pool2d"


class AvgPool3d(_AvgPoolWithDivisor):
    """3-D average pooling over ``(N, C, D, H, W)`` (``divisor_override`` replaces the
    count)."""

    _fn_name = "avg_pool3d"

    def __setstate__(self, d) -> None:
        super().__setstate__(d)  # checkpoints pickled before these arguments existed
        self.__dict__.setdefault("padding", 0)
        self.__dict__.setdefault("ceil_mode", False)
        self.__dict__.setdefault("count_include_pad", True)


class _AdaptivePoolNd(Module):
    __constants__ = ["output_size"]

    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class _AdaptiveAvgPoolNd(_AdaptivePoolNd):
    """Base of the adaptive average pools (``torch.nn.modules.pooling._AdaptiveAvgPoolNd``):
    ``F.<_fn_name>(input, output_size)``."""

    _fn_name: str  # the torch.nn.functional function, looked up at each call

    def forward(self, input: Tensor) -> Tensor:
        fn = getattr(F, self._fn_name)
        return fn(input, self.output_size)


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed output length."""

    _fn_name = "adaptive_avg_pool1d"


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed ``(H, W)`` (``None`` keeps that input size)."""

    _fn_name = "adaptive_avg_pool2d"


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed ``(D, H, W)`` (``None`` keeps that input size)."""

    _fn_name = "adaptive_avg_pool3d"


class _AdaptiveMaxPoolNd(_AdaptivePoolNd):
    """The adaptive max pools: ``F.<_fn_name>(input, output_size, return_indices)``."""

    __constants__ = ["output_size", "return_indices"]
    _fn_name: str  # the torch.nn.functional function, looked up at each call

    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input: Tensor):
        fn = getattr(F, self._fn_name)
        return fn(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed output length."""

    _fn_name = "adaptive_max_pool1d"


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed ``(H, W)`` (``None`` keeps that input size)."""

    _fn_name = "adaptive_max_pool2d"


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed ``(D, H, W)`` (``None`` keeps that input size)."""

    _fn_name = "adaptive_max_pool3d"


class _MaxUnpoolNd(Module):
    """``MaxUnpool1d/2d/3d``: sizes as ``_tuple``s, ``F.<_fn_name>(input, indices, ...)``."""

    _tuple = staticmethod(_single)
    _fn_name: str  # the torch.nn.functional function, looked up at each call

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        self.kernel_size = self._tuple(kernel_size)
        self.stride = self._tuple(stride if (stride is not None) else kernel_size)
        self.padding = self._tuple(padding)

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:
        fn = getattr(F, self._fn_name)
        return fn(input, indices, self.kernel_size, self.stride, self.padding,
                  output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """Partial inverse of ``MaxPool1d``: scatter values to their ``indices``, zeros elsewhere."""

    _tuple = staticmethod(_single)
    _fn_name = "max_unpool1d"


class MaxUnpool2d(_MaxUnpoolNd):
    """Partial inverse of ``MaxPool2d``: scatter values to their ``indices``, zeros elsewhere."""

    _tuple = staticmethod(_pair)
    _fn_name = "max_unpool2d"


class MaxUnpool3d(_MaxUnpoolNd):
    """Partial inverse of ``MaxPool3d``: scatter values to their ``indices``, zeros elsewhere."""

    _tuple = staticmethod(_triple)
    _fn_name = "max_unpool3d"


class _LPPoolNd(Module):
    """``LPPool1d/2d/3d``: ``F.<_fn_name>(input, norm_type, kernel_size, stride, ceil_mode)``."""

    __constants__ = ["norm_type", "kernel_size", "stride", "ceil_mode"]
    _fn_name: str  # the torch.nn.functional function, looked up at each call

    def __init__(self, norm_type: float, kernel_size, stride=None,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        fn = getattr(F, self._fn_name)
        return fn(input, float(self.norm_type), self.kernel_size, self.stride,
                  self.ceil_mode)

    def extra_repr(self) -> str:
        return ("norm_type={norm_type}, kernel_size={kernel_size}, stride={stride}, "
                "ceil_mode={ceil_mode}".format(**self.__dict__))


class LPPool1d(_LPPoolNd):
    """Power-average pooling ``(sum x^p)^(1/p)`` over ``(N, C, L)``."""

    _fn_name = "lp_pool1d"


class LPPool2d(_LPPoolNd):
    """Power-average pooling ``(sum x^p)^(1/p)`` over ``(N, C, H, W)``."""

    _fn_name = "lp_pool2d"


class LPPool3d(_LPPoolNd):
    """Power-average pooling ``(sum x^p)^(1/p)`` over ``(N, C, D, H, W)``."""

    _fn_name = "lp_pool3d"


class _FractionalMaxPoolNd(Module):
    """Fractional max pooling (Graham, 2014): max over ``kernel_size`` windows at
    pseudo-random steps that give ``output_size``, or ``output_ratio`` (in (0, 1)) times the
    input size. ``_random_samples`` (``(N, C, n)`` in ``[0, 1)``), when given, is a buffer that
    fixes the steps; else each call draws them from the default generator."""

    __constants__ = ["kernel_size", "return_indices", "output_size", "output_ratio"]
    _dims = 2
    _fn_name: str  # the torch.nn.functional function, looked up at each call

    def __init__(self, kernel_size, output_size=None, output_ratio=None,
                 return_indices: bool = False, _random_samples=None) -> None:
        super().__init__()
        name = type(self).__name__
        tup = _pair if self._dims == 2 else _triple
        if self._dims == 3 and any(k <= 0 for k in tup(kernel_size)):
            raise ValueError(f"kernel_size must be greater than 0, but got {kernel_size}")
        self.kernel_size = tup(kernel_size)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = tup(output_size) if output_size is not None else None
        self.output_ratio = tup(output_ratio) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling "
                             "ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input: Tensor):
        fn = getattr(F, self._fn_name)
        return fn(input, self.kernel_size, self.output_size, self.output_ratio,
                  self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """2-D fractional max pooling over ``(N, C, H, W)`` or ``(C, H, W)``: max over
    ``kernel_size`` windows at pseudo-random steps that give ``output_size`` or
    ``output_ratio`` times the input size; ``_random_samples`` (``(N, C, 2)``) fixes the steps.
    """

    _fn_name = "fractional_max_pool2d"


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """3-D fractional max pooling over ``(N, C, D, H, W)`` or ``(C, D, H, W)``: max over
    ``kernel_size`` windows at pseudo-random steps that give ``output_size`` or
    ``output_ratio`` times the input size; ``_random_samples`` (``(N, C, 3)``) fixes the
    steps."""

    _dims = 3
    _fn_name = "fractional_max_pool3d"
