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


def __getattr__(name: str):
    # tv_tensors loads lazily: its Tensor subclasses turn __torch_function__ dispatch on
    if name == "tv_tensors":
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
