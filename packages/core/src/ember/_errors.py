"""Exception classes of PyTorch's top level: ``ember.AcceleratorError`` and
``ember.OutOfMemoryError`` (both ``RuntimeError`` subclasses, as in PyTorch)."""

from __future__ import annotations

__all__ = ["AcceleratorError", "OutOfMemoryError"]


class AcceleratorError(RuntimeError):
    """An error reported by an accelerator's runtime (``torch.AcceleratorError``)."""


class OutOfMemoryError(RuntimeError):
    """A device ran out of memory (``torch.OutOfMemoryError``, which is also
    ``torch.cuda.OutOfMemoryError``)."""


AcceleratorError.__module__ = OutOfMemoryError.__module__ = "ember"
