"""``ember.cuda.amp.common``: ``amp_definitely_not_available``."""

from __future__ import annotations

from importlib.util import find_spec

__all__ = ["amp_definitely_not_available"]


def amp_definitely_not_available() -> bool:
    """True when neither CUDA nor torch_xla is there (CUDA autocast would be a no-op)."""
    from ... import cuda

    return not (cuda.is_available() or find_spec("torch_xla"))
