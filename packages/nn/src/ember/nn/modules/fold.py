"""``Fold`` (col2im) and ``Unfold`` (im2col) (``torch.nn.modules.fold``)."""

from __future__ import annotations

from ember import Tensor

from .. import functional as F
from .module import Module

__all__ = ["Fold", "Unfold"]


class _SlidingBlocks(Module):
    """The options of the sliding local blocks that ``Fold`` and ``Unfold`` share."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def extra_repr(self) -> str:
        return ("kernel_size={kernel_size}, dilation={dilation}, padding={padding}, "
                "stride={stride}".format(**self.__dict__))


class Fold(_SlidingBlocks):
    """Sum sliding local blocks ``(N, C k, L)`` back into ``(N, C, *output_size)``."""

    __constants__ = ["output_size", "kernel_size", "dilation", "padding", "stride"]

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__(kernel_size, dilation, padding, stride)
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}, {super().extra_repr()}"


class Unfold(_SlidingBlocks):
    """Extract sliding local blocks of ``(N, C, *)`` as columns ``(N, C k, L)``."""

    __constants__ = ["kernel_size", "dilation", "padding", "stride"]

    def forward(self, input: Tensor) -> Tensor:
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)
