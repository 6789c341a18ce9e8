"""Image, Video and Mask tv_tensors."""

from __future__ import annotations

from typing import Any

import PIL.Image

from ._tv_tensor import TVTensor

__all__ = ["Image", "Video", "Mask"]


def _from_pil(data):
    if isinstance(data, PIL.Image.Image):
        from ember.vision.transforms import functional as F

        data = F.pil_to_tensor(data)
    return data


class Image(TVTensor):
    """An image ``(..., C, H, W)`` (a 2-D input gets a channel dimension; PIL images are
    converted with ``pil_to_tensor``)."""

    def __new__(cls, data: Any, *, dtype=None, device=None, requires_grad: bool | None = None):
        data = _from_pil(data)
        tensor = cls._to_tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)
        if tensor.ndim < 2:
            raise ValueError(f"Tensor must be 2D or higher, got {tensor.ndim}D tensor.")
        elif tensor.ndim == 2:
            tensor = tensor.unsqueeze(0)
        return tensor.as_subclass(cls)

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        return self._make_repr()


class Video(TVTensor):
    """A video ``(..., T, C, H, W)``."""

    def __new__(cls, data: Any, *, dtype=None, device=None, requires_grad: bool | None = None):
        tensor = cls._to_tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)
        if tensor.ndim < 4:
            raise ValueError(f"Video must have at least 4 dimensions, got {tensor.ndim}")
        return tensor.as_subclass(cls)

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        return self._make_repr()


class Mask(TVTensor):
    """A segmentation or detection mask ``(..., H, W)``."""

    def __new__(cls, data: Any, *, dtype=None, device=None, requires_grad: bool | None = None):
        data = _from_pil(data)
        tensor = cls._to_tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)
        return tensor.as_subclass(cls)

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        return self._make_repr()
