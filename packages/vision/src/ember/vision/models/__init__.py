"""torchvision's architectures as ember.nn modules, with their weights enums and registry.

Module names, state_dict keys, shapes, default initialisation and constructor arguments
follow ``torchvision.models``, so torchvision's published checkpoints load unchanged.
"""

import importlib as _importlib
import importlib.util as _importlib_util

from ._api import (
    Weights,
    WeightsEnum,
    get_model,
    get_model_builder,
    get_model_weights,
    get_weight,
    list_models,
)
from .alexnet import *  # noqa: F403
from .resnet import *  # noqa: F403
from .squeezenet import *  # noqa: F403
from .vgg import *  # noqa: F403

# The other architectures register themselves on import and their public names are
# re-exported here. They are written independently of this file: a module not present yet,
# or one whose own ember.vision dependency (e.g. transforms._presets) is not present yet, is
# skipped; any other import error is raised.
for _name in (
    "mobilenetv2",
    "mobilenetv3",
    "mobilenet",
    "densenet",
    "efficientnet",
    "vision_transformer",
    "convnext",
    "_efficientnet_lite",
    "googlenet",
    "inception",
    "mnasnet",
    "regnet",
    "shufflenetv2",
    "swin_transformer",
    "maxvit",
    "segmentation",
    "optical_flow",
    "video",
    "detection",
):
    if _importlib_util.find_spec(f"{__name__}.{_name}") is not None:
        try:
            _module = _importlib.import_module(f"{__name__}.{_name}")
        except ModuleNotFoundError as _e:
            if not (_e.name or "").startswith("ember.vision."):
                raise
            continue
        if _name not in ("segmentation", "optical_flow", "video", "detection"):  # subpackages,
            # as in torchvision: models.segmentation.* (their names are not merged here)
            globals().update({k: getattr(_module, k) for k in getattr(_module, "__all__", ())})
del _name, _importlib, _importlib_util
