"""Erasing and JPEG re-encoding functionals."""

from __future__ import annotations

import io

import PIL.Image

import ember
from ember import Tensor
from ember.vision import tv_tensors

from ._type_conversion import pil_to_tensor, to_pil_image
from ._utils import _get_kernel, _register_kernel_internal


def erase(inpt, i: int, j: int, h: int, w: int, v: Tensor, inplace: bool = False):
    """Set the box (i, j, h, w) to ``v``."""
    return _get_kernel(erase, type(inpt))(inpt, i=i, j=j, h=h, w=w, v=v, inplace=inplace)


@_register_kernel_internal(erase, Tensor)
@_register_kernel_internal(erase, tv_tensors.Image)
def erase_image(image: Tensor, i: int, j: int, h: int, w: int, v: Tensor,
                inplace: bool = False) -> Tensor:
    if not inplace:
        image = image.clone()
    if isinstance(v, Tensor) and v.device != image.device:
        v = v.to(image.device)  # a CPU value (RandomErasing's) into an image elsewhere
    image[..., i : i + h, j : j + w] = v
    return image


@_register_kernel_internal(erase, PIL.Image.Image)
def _erase_image_pil(image, i: int, j: int, h: int, w: int, v: Tensor, inplace: bool = False):
    output = erase_image(pil_to_tensor(image), i=i, j=j, h=h, w=w, v=v, inplace=inplace)
    return to_pil_image(output, mode=image.mode)


@_register_kernel_internal(erase, tv_tensors.Video)
def erase_video(video: Tensor, i: int, j: int, h: int, w: int, v: Tensor,
                inplace: bool = False) -> Tensor:
    return erase_image(video, i=i, j=j, h=h, w=w, v=v, inplace=inplace)


def jpeg(image, quality: int):
    """Encode to JPEG at ``quality`` and decode again (a compression-artefact augmentation)."""
    return _get_kernel(jpeg, type(image))(image, quality=quality)


@_register_kernel_internal(jpeg, PIL.Image.Image)
def _jpeg_image_pil(image, quality: int):
    raw_jpeg = io.BytesIO()
    image.save(raw_jpeg, format="JPEG", quality=quality)
    return PIL.Image.open(raw_jpeg).copy()


@_register_kernel_internal(jpeg, Tensor)
@_register_kernel_internal(jpeg, tv_tensors.Image)
def jpeg_image(image: Tensor, quality: int) -> Tensor:
    if image.dtype != ember.uint8:
        raise TypeError(f"Input tensor dtype should be uint8, got {image.dtype}.")
    original_shape = image.shape
    image = image.reshape((-1,) + tuple(image.shape[-3:]))
    if image.shape[0] == 0:
        return image.reshape(original_shape).clone()
    images = [pil_to_tensor(_jpeg_image_pil(to_pil_image(img), quality)).to(image.device)
              for img in image]
    return ember.stack(images, dim=0).view(original_shape)


@_register_kernel_internal(jpeg, tv_tensors.Video)
def jpeg_video(video: Tensor, quality: int) -> Tensor:
    return jpeg_image(video, quality=quality)
