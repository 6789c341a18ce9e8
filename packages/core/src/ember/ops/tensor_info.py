"""Questions about a tensor that PyTorch answers with a constant for Ember's tensors."""

from __future__ import annotations

from .._tensor import Tensor
from .registry import register

__all__ = ["is_distributed"]


@register("is_distributed", differentiable=False)
def is_distributed(input: Tensor) -> bool:
    """Whether ``input`` is a distributed tensor: always False, as in PyTorch (whose dense
    tensors never are; ``ember.distributed`` shards nothing in place)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"is_distributed(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return False
