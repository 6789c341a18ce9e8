"""``ember.cpu.amp``: PyTorch's older CPU names for autocast and GradScaler (deprecated there
in favour of ``ember.amp.autocast("cpu", ...)`` and ``ember.amp.GradScaler("cpu", ...)``);
each warns as PyTorch does. Laid out as PyTorch's package is (``autocast_mode``,
``grad_scaler``)."""

from .autocast_mode import autocast
from .grad_scaler import GradScaler
