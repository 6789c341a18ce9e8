"""``ember.backends.mkldnn``: oneDNN (formerly MKL-DNN). Ember does not use it."""

from __future__ import annotations

__all__ = ["is_available", "is_acl_available"]


def is_available() -> bool:
    """Whether Ember uses oneDNN: False. Its CPU kernels are NumPy and NumPy's BLAS; oneDNN
    is PyTorch's library for CPU convolutions, which Ember computes as matrix products."""
    return False


def is_acl_available() -> bool:
    """Whether Ember uses oneDNN with the Arm Compute Library: False (no oneDNN at all)."""
    return False
