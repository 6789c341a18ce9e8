"""Parallel wrappers of ``ember.nn`` (``torch.nn.parallel``).

``DataParallel`` runs its module on one device: Ember does not split a batch across
devices in one process. Multi-device training belongs to ``DistributedDataParallel`` (one
process per device), which comes with ember's distributed package.
"""

from .data_parallel import DataParallel, data_parallel

__all__ = ["DataParallel", "data_parallel"]
