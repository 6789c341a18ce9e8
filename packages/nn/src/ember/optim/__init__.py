"""Optimizers and learning-rate schedulers for Ember, mirroring ``torch.optim``.

Installed by the ``ember-nn`` distribution.
"""

import ember  # noqa: F401  (ember.optim builds on ember-core)

__version__ = "0.1.0"
