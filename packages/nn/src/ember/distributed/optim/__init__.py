"""``ember.distributed.optim``: optimizers for data-parallel training (``torch.distributed.optim``).

Shipped by ember-nn (it needs ``ember.optim``); ``ember.distributed`` of ember-core finds this
folder on ``sys.path``. ``ZeroRedundancyOptimizer`` shards an optimizer's state across the
ranks of a process group.
"""

from .zero_redundancy_optimizer import ZeroRedundancyOptimizer

__all__ = ["ZeroRedundancyOptimizer"]
__version__ = "0.1.0"  # ember-nn's
