"""Semantic segmentation models (torchvision's ``models.segmentation``): FCN, DeepLabV3 and
Lite R-ASPP, with their weights enums; the builders register in the model registry."""

from .deeplabv3 import *  # noqa: F403
from .fcn import *  # noqa: F403
from .lraspp import *  # noqa: F403
