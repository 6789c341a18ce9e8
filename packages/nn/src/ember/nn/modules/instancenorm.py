"""PyTorch's module path ``torch.nn.modules.instancenorm``: the instance normalization layers.

They are defined in ``normalization.py`` (the lazy ones in ``lazy.py``); this module
re-exports them, with their private base, so that pickled class paths and checks such as
``isinstance(m, nn.modules.instancenorm._InstanceNorm)`` written against PyTorch's full
paths work.
"""

from .lazy import LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d
from .normalization import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .normalization import _InstanceNorm as _InstanceNorm

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d"]
