"""``ember.cpu.amp.autocast``: ``ember.amp.autocast("cpu", ...)`` under PyTorch's deprecated
name (with its FutureWarning)."""

from __future__ import annotations

import warnings

from ... import _dtype
from ...amp import autocast as _autocast

__all__ = ["autocast"]


class autocast(_autocast):
    """``ember.amp.autocast("cpu", ...)`` (with PyTorch's deprecation warning); its dtype
    defaults to bfloat16 whatever ``set_autocast_dtype("cpu", ...)`` says, as PyTorch's."""

    def __init__(self, enabled: bool = True, dtype=_dtype.bfloat16,
                 cache_enabled: bool = True) -> None:
        warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cpu', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)
