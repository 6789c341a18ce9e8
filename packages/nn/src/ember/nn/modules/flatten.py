"""``Flatten`` and ``Unflatten`` (``torch.nn.modules.flatten``)."""

from __future__ import annotations

from ember import Tensor

from .module import Module

__all__ = ["Flatten", "Unflatten"]


def _check_sizes(input, containers: tuple, element: type, what: str) -> None:
    """PyTorch's check that ``unflattened_size`` is a ``containers`` of ``element`` s (named
    ``what``)."""
    if not isinstance(input, containers):
        raise TypeError(f"unflattened_size must be a tuple of {what}, but found type "
                        f"{type(input).__name__}")
    for idx, elem in enumerate(input):
        if not isinstance(elem, element):
            raise TypeError(f"unflattened_size must be tuple of {what}, but found element of "
                            f"type {type(elem).__name__} at pos {idx}")


class Flatten(Module):
    """Flatten dims ``start_dim``..``end_dim`` into one (the batch dim is kept by default)."""

    __constants__ = ["start_dim", "end_dim"]

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Expand dim ``dim`` into the shape ``unflattened_size``."""

    __constants__ = ["dim", "unflattened_size"]

    def __init__(self, dim: int, unflattened_size) -> None:
        super().__init__()
        # PyTorch 2.13 dropped named-tensor dims here: ``dim`` is not checked, and the sizes
        # must always be ints.
        self._require_tuple_int(unflattened_size)
        self.dim = dim
        self.unflattened_size = unflattened_size

    def _require_tuple_int(self, input) -> None:
        _check_sizes(input, (tuple, list), int, "ints")

    def forward(self, input: Tensor) -> Tensor:
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
