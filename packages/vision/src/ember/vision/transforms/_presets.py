"""Inference presets that weights enums return from ``transforms()``, like torchvision's."""

from __future__ import annotations

import ember
from ember import Tensor
from ember.nn import Module

from . import functional as F
from .functional import InterpolationMode

__all__ = ["ImageClassification", "ObjectDetection", "SemanticSegmentation"]


class ObjectDetection(Module):
    """Rescale to [0, 1] (a PIL image becomes a tensor first): the detection models' preset;
    they normalise and resize inside (``GeneralizedRCNNTransform``)."""

    def forward(self, img) -> Tensor:
        if not isinstance(img, Tensor):
            img = F.pil_to_tensor(img)
        return F.convert_image_dtype(img, ember.float32)

    def __repr__(self) -> str:
        return self.__class__.__name__ + "()"

    def describe(self) -> str:
        return (
            "Accepts ``PIL.Image``, batched ``(B, C, H, W)`` and single ``(C, H, W)`` image "
            "``torch.Tensor`` objects. The images are rescaled to ``[0.0, 1.0]``."
        )


class ImageClassification(Module):
    """Resize, centre-crop, rescale to [0, 1] and normalise: the ImageNet evaluation preset."""

    def __init__(
        self,
        *,
        crop_size: int,
        resize_size: int = 256,
        mean: tuple[float, ...] = (0.485, 0.456, 0.406),
        std: tuple[float, ...] = (0.229, 0.224, 0.225),
        interpolation: InterpolationMode = InterpolationMode.BILINEAR,
        antialias: bool | None = True,
    ) -> None:
        super().__init__()
        self.crop_size = [crop_size]
        self.resize_size = [resize_size]
        self.mean = list(mean)
        self.std = list(std)
        self.interpolation = interpolation
        self.antialias = antialias

    def forward(self, img) -> Tensor:
        img = F.resize(
            img, self.resize_size, interpolation=self.interpolation, antialias=self.antialias
        )
        img = F.center_crop(img, self.crop_size)
        if not isinstance(img, Tensor):
            img = F.pil_to_tensor(img)
        img = F.convert_image_dtype(img, ember.float32)
        return F.normalize(img, mean=self.mean, std=self.std)

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}(\n    crop_size={self.crop_size}"
            f"\n    resize_size={self.resize_size}"
            f"\n    mean={self.mean}\n    std={self.std}\n    interpolation={self.interpolation}\n)"
        )

    def describe(self) -> str:
        return (
            "Accepts ``PIL.Image``, batched ``(B, C, H, W)`` and single ``(C, H, W)`` image "
            "``torch.Tensor`` objects. The images are resized to "
            f"``resize_size={self.resize_size}`` "
            f"using ``interpolation={self.interpolation}``, followed by a central crop of "
            f"``crop_size={self.crop_size}``. Finally the values are first rescaled to "
            "``[0.0, 1.0]`` "
            f"and then normalized using ``mean={self.mean}`` and ``std={self.std}``."
        )


class SemanticSegmentation(Module):
    """Resize (optionally), rescale to [0, 1] and normalise: the segmentation evaluation preset
    (torchvision's ``transforms._presets.SemanticSegmentation``)."""

    def __init__(
        self,
        *,
        resize_size: int | None,
        mean: tuple[float, ...] = (0.485, 0.456, 0.406),
        std: tuple[float, ...] = (0.229, 0.224, 0.225),
        interpolation: InterpolationMode = InterpolationMode.BILINEAR,
        antialias: bool | None = True,
    ) -> None:
        super().__init__()
        self.resize_size = [resize_size] if resize_size is not None else None
        self.mean = list(mean)
        self.std = list(std)
        self.interpolation = interpolation
        self.antialias = antialias

    def forward(self, img) -> Tensor:
        if isinstance(self.resize_size, list):
            img = F.resize(
                img, self.resize_size, interpolation=self.interpolation, antialias=self.antialias
            )
        if not isinstance(img, Tensor):
            img = F.pil_to_tensor(img)
        img = F.convert_image_dtype(img, ember.float32)
        return F.normalize(img, mean=self.mean, std=self.std)

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}(\n    resize_size={self.resize_size}"
            f"\n    mean={self.mean}\n    std={self.std}\n    interpolation={self.interpolation}\n)"
        )

    def describe(self) -> str:
        return (
            "Accepts ``PIL.Image``, batched ``(B, C, H, W)`` and single ``(C, H, W)`` image "
            "``torch.Tensor`` objects. The images are resized to "
            f"``resize_size={self.resize_size}`` using ``interpolation={self.interpolation}``. "
            "Finally the values are first rescaled to ``[0.0, 1.0]`` and then normalized using "
            f"``mean={self.mean}`` and ``std={self.std}``."
        )
