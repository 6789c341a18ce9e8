"""Computer vision for Ember, mirroring ``torchvision``.

Models, transforms, datasets, ops, io and utils; use it as
``import ember.vision as torchvision``. Installed by the ``ember-vision``
distribution.
"""

__version__ = "0.1.0"
from . import (
    datasets,
    io,
    models,
    ops,
    transforms,
    utils,
)
