"""Padding layers (``torch.nn.modules.padding``) over ``F.pad``."""

from __future__ import annotations

from ember import Tensor

from .. import functional as F
from .module import Module
from .utils import _ntuple, _pair, _quadruple

__all__ = ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d",
           "ZeroPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
           "CircularPad2d", "CircularPad3d"]

_sextuple = _ntuple(6, "_sextuple")
_TUPLES = {1: _pair, 2: _quadruple, 3: _sextuple}


class _ConstantPadNd(Module):
    __constants__ = ["padding", "value"]
    _nd = 1

    def __init__(self, padding, value: float) -> None:
        super().__init__()
        self.padding = _TUPLES[self._nd](padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with ``value`` (``padding``: int or ``(left, right)``)."""

    _nd = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last 2 dims with ``value`` (``(left, right, top, bottom)``)."""

    _nd = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last 3 dims with ``value`` (``(left, right, top, bottom, front, back)``)."""

    _nd = 3


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd):
    """Pad the last dim with zeros."""

    _nd = 1


class ZeroPad2d(_ZeroPadNd):
    """Pad the last 2 dims with zeros."""

    _nd = 2


class ZeroPad3d(_ZeroPadNd):
    """Pad the last 3 dims with zeros."""

    _nd = 3


class _ModePadNd(Module):
    """Reflection, replication and circular padding."""

    __constants__ = ["padding"]
    _nd = 1
    _mode = "reflect"
    _dims: tuple = ()

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _TUPLES[self._nd](padding)

    def _check_input_dim(self, input: Tensor) -> None:
        if self._dims and input.dim() not in self._dims:
            a, b = self._dims
            raise ValueError(f"expected {a}D or {b}D input (got {input.dim()}D input)")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad1d(_ModePadNd):
    """Pad the last dim with its reflection (edge not repeated)."""

    _nd, _mode = 1, "reflect"


class ReflectionPad2d(_ModePadNd):
    """Pad the last 2 dims with their reflection."""

    _nd, _mode = 2, "reflect"


class ReflectionPad3d(_ModePadNd):
    """Pad the last 3 dims with their reflection."""

    _nd, _mode = 3, "reflect"


class ReplicationPad1d(_ModePadNd):
    """Pad the last dim by repeating its edge value."""

    _nd, _mode = 1, "replicate"


class ReplicationPad2d(_ModePadNd):
    """Pad the last 2 dims by repeating their edge values."""

    _nd, _mode = 2, "replicate"


class ReplicationPad3d(_ModePadNd):
    """Pad the last 3 dims by repeating their edge values."""

    _nd, _mode = 3, "replicate"


class CircularPad1d(_ModePadNd):
    """Pad the last dim by wrapping around."""

    _nd, _mode, _dims = 1, "circular", (2, 3)


class CircularPad2d(_ModePadNd):
    """Pad the last 2 dims by wrapping around."""

    _nd, _mode, _dims = 2, "circular", (3, 4)


class CircularPad3d(_ModePadNd):
    """Pad the last 3 dims by wrapping around."""

    _nd, _mode, _dims = 3, "circular", (4, 5)
