"""PyTorch's module path ``torch.nn.modules.batchnorm``: the batch normalization layers.

They are defined in ``normalization.py`` (the lazy ones in ``lazy.py``); this module
re-exports them, with their private bases, so that pickled class paths and checks such as
``isinstance(m, nn.modules.batchnorm._BatchNorm)`` written against PyTorch's full paths work.
"""

from .lazy import LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d
from .lazy import _LazyNormBase as _LazyNormBase
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .normalization import _BatchNorm as _BatchNorm
from .normalization import _NormBase as _NormBase

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d"]
