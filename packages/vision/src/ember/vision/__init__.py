"""Computer vision for Ember, mirroring ``torchvision``.

Models, transforms, datasets, ops, io and utils; use it as
``import ember.vision as torchvision``. Installed by the ``ember-vision``
distribution.
"""

__version__ = "0.1.0"
from . import (  # noqa: E402,F401
    datasets,
    io,
    models,  # noqa: E402,F401
    ops,
    transforms,  # noqa: E402,F401
    utils,
)
