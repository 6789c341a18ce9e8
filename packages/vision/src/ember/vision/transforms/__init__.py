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


def __getattr__(name: str):
    # v2 loads lazily: it imports tv_tensors, whose Tensor subclasses turn dispatch on
    if name == "v2":
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
