"""Neural-network building blocks for Ember, mirroring ``torch.nn``.

Modules, layers, the functional API (``ember.nn.functional``), parameter
initialisation and utilities live here. Installed by the ``ember-nn``
distribution.
"""

import ember  # noqa: F401  (ember.nn builds on ember-core)

__version__ = "0.1.0"
