"""``ember.cuda.amp``: PyTorch's older CUDA names for autocast, GradScaler and the custom
autograd Function decorators (deprecated there in favour of ``ember.amp.autocast("cuda",
...)``, ``ember.amp.GradScaler("cuda", ...)`` and ``ember.amp.custom_fwd(...,
device_type="cuda")``); each warns as PyTorch does. Laid out as PyTorch's package is
(``autocast_mode``, ``grad_scaler``, ``common``), so that imports of its submodules work."""

from .autocast_mode import autocast, custom_bwd, custom_fwd
from .common import amp_definitely_not_available
from .grad_scaler import GradScaler

__all__ = ["amp_definitely_not_available", "autocast", "custom_bwd", "custom_fwd", "GradScaler"]
