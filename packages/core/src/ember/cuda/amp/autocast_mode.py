"""``ember.cuda.amp.autocast``, ``custom_fwd`` and ``custom_bwd``: ``ember.amp``'s, for CUDA,
under PyTorch's deprecated names (with its FutureWarnings)."""

from __future__ import annotations

import functools
import warnings

from ... import _dtype
from ...amp import autocast_mode as _amp

__all__ = ["autocast", "custom_fwd", "custom_bwd"]


class autocast(_amp.autocast):
    """``ember.amp.autocast("cuda", ...)`` (with PyTorch's deprecation warning)."""

    def __init__(self, enabled: bool = True, dtype=_dtype.float16,
                 cache_enabled: bool = True) -> None:
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


def _cast(value, dtype):
    """Deprecated: ``ember.amp.autocast_mode._cast(value, "cuda", dtype)``."""
    warnings.warn("`torch.cuda.amp.autocast_mode._cast(value, dtype)` is deprecated. Please use "
                  "`torch.amp.autocast_mode._cast(value, 'cuda', dtype)` instead.",
                  FutureWarning, stacklevel=2)
    return _amp._cast(value, "cuda", dtype)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """Deprecated: ``ember.amp.custom_fwd(fwd, device_type="cuda", cast_inputs=...)``."""
    warnings.warn("`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_fwd(args..., device_type='cuda')` instead.",
                  FutureWarning, stacklevel=2)
    return functools.partial(_amp.custom_fwd, device_type="cuda")(fwd=fwd,
                                                                   cast_inputs=cast_inputs)


def custom_bwd(bwd):
    """Deprecated: ``ember.amp.custom_bwd(bwd, device_type="cuda")``."""
    warnings.warn("`torch.cuda.amp.custom_bwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_bwd(args..., device_type='cuda')` instead.",
                  FutureWarning, stacklevel=2)
    return functools.partial(_amp.custom_bwd, device_type="cuda")(bwd)
