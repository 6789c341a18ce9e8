"""ember-vision's hub entry module (the ``ember.hub`` entry point ``vision``).

Like a torch.hub ``hubconf.py``: a ``dependencies`` list and one public callable per model
builder, here every model registered in :mod:`ember.vision.models` (``resnet18``,
``vgg16_bn``, ``mobilenet_v2``, ...). ``ember.hub.load("resnet18", weights="IMAGENET1K_V1")``
resolves the name here; builders accept ``weights=`` as an enum member or its name.
"""

from ember.vision import models as _models

dependencies = ["ember"]

globals().update({_name: _models.get_model_builder(_name) for _name in _models.list_models()})

__all__ = ["dependencies", *_models.list_models()]
