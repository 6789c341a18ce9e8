"""Image transforms, like ``torchvision.transforms`` (v1)."""

from . import functional
from ._presets import ImageClassification
from .autoaugment import AugMix, AutoAugment, AutoAugmentPolicy, RandAugment, TrivialAugmentWide
from .transforms import *  # noqa: F403
from .transforms import __all__ as _transforms_all

__all__ = [
    "functional",
    "ImageClassification",
    "AutoAugment",
    "AutoAugmentPolicy",
    "RandAugment",
    "TrivialAugmentWide",
    "AugMix",
    *_transforms_all,
]
