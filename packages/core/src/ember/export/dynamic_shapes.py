"""``torch.export.dynamic_shapes``: where ``Dim`` and ``dims`` live in PyTorch
(``from torch.export.dynamic_shapes import Dim`` imports them here too)."""

from ._symbolic import Dim, dims

__all__ = ["Dim", "dims"]
