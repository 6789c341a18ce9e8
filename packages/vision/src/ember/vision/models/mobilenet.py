"""``torchvision.models.mobilenet``: MobileNetV2 and MobileNetV3 under one module name."""

from .mobilenetv2 import *  # noqa: F403
from .mobilenetv2 import __all__ as _v2_all
from .mobilenetv3 import *  # noqa: F403
from .mobilenetv3 import __all__ as _v3_all

__all__ = _v2_all + _v3_all
