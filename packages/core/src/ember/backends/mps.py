"""``ember.backends.mps``: Apple's Metal (MPS) backend. Ember has none, on any machine."""

from __future__ import annotations

__all__ = ["is_built", "is_available", "is_macos_or_newer", "is_macos13_or_newer"]


def is_built() -> bool:
    """Whether Ember has an MPS backend: it does not (its GPU backend is CuPy, for CUDA)."""
    return False


def is_available() -> bool:
    """Whether MPS can be used here: never, as Ember is not built with it."""
    return False


def is_macos_or_newer(major: int, minor: int) -> bool:
    """Whether MPS runs on macOS ``major.minor`` or newer; without MPS, PyTorch's error."""
    raise RuntimeError("Cannot execute isOnMacOSorNewer() without MPS backend.")


def is_macos13_or_newer(minor: int = 0) -> bool:
    """``is_macos_or_newer(13, minor)``."""
    return is_macos_or_newer(13, minor)
