"""Parallel wrappers and helpers of ``ember.nn`` (``torch.nn.parallel``).

``DataParallel`` runs its module on one device: Ember does not split a batch across
devices in one process. Multi-device training belongs to ``DistributedDataParallel`` (one
process per device), which comes with ember's distributed package. The building blocks of
PyTorch's ``DataParallel`` are here too, with PyTorch's semantics on accelerator devices:
``scatter``/``scatter_kwargs`` and ``gather`` (``scatter_gather``), ``replicate`` and
``parallel_apply``.
"""

from . import scatter_gather
from .data_parallel import DataParallel, data_parallel
from .parallel_apply import parallel_apply
from .replicate import replicate
from .scatter_gather import gather, scatter

__all__ = ["replicate", "scatter", "parallel_apply", "gather", "data_parallel", "DataParallel"]
