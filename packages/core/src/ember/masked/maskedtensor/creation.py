"""The factories of MaskedTensors, like ``ember.tensor`` and ``ember.as_tensor``."""

from __future__ import annotations

from .core import MaskedTensor

__all__ = ["as_masked_tensor", "masked_tensor"]


def masked_tensor(data, mask, requires_grad: bool = False) -> MaskedTensor:
    """A MaskedTensor over copies of ``data`` and ``mask``: a leaf (``requires_grad``)."""
    return MaskedTensor(data, mask, requires_grad)


def as_masked_tensor(data, mask) -> MaskedTensor:
    """A MaskedTensor whose data keeps ``data``'s autograd history: gradients flow back to
    ``data`` through its specified elements."""
    return MaskedTensor._from_values(data, mask)
