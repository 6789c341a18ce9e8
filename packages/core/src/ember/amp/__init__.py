"""``ember.amp``: mixed-precision training tools (``torch.amp``)."""

from __future__ import annotations

from .grad_scaler import GradScaler

__all__ = ["GradScaler"]
