"""``ember.signal``: signal processing, as ``torch.signal`` (its window functions)."""

from . import windows

__all__ = ["windows"]
