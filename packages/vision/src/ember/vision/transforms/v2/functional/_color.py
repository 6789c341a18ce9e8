"""Colour functionals of the v2 API (images and videos; PIL images through the PIL kernels)."""

from __future__ import annotations

import numpy as np
import PIL.Image

import ember
from ember import Tensor
from ember.ops import api
from ember.vision import tv_tensors
from ember.vision.transforms import _functional_pil as _FP
from ember.vision.transforms import _functional_tensor as _FT

from ._misc import _max_value, _num_value_bits, to_dtype_image
from ._type_conversion import pil_to_tensor, to_pil_image
from ._utils import _get_kernel, _register_kernel_internal


def _check_channels(image: Tensor) -> None:
    c = image.shape[-3]
    if c not in [1, 3]:
        raise TypeError(f"Input image tensor permitted channel values are 1 or 3, but found {c}")


def _image_video_functional(name: str, image_kernel, pil_kernel=None, doc: str = ""):
    """A functional ``name`` dispatching to ``image_kernel`` for tensors, images and videos
    (and ``pil_kernel`` for PIL images)."""

    def functional(inpt, *args, **kwargs):
        return _get_kernel(functional, type(inpt))(inpt, *args, **kwargs)

    functional.__name__ = functional.__qualname__ = name
    functional.__doc__ = doc
    functional.__module__ = __name__
    _register_kernel_internal(functional, Tensor)(image_kernel)
    _register_kernel_internal(functional, tv_tensors.Image)(image_kernel)
    _register_kernel_internal(functional, tv_tensors.Video)(image_kernel)
    if pil_kernel is not None:
        _register_kernel_internal(functional, PIL.Image.Image)(pil_kernel)
    return functional


def _rgb_to_grayscale_image(image: Tensor, num_output_channels: int = 1,
                            preserve_dtype: bool = True) -> Tensor:
    if image.shape[-3] == 1 and num_output_channels == 1:
        return image.clone()
    if image.shape[-3] == 1 and num_output_channels == 3:
        s = [1] * len(image.shape)
        s[-3] = 3
        return image.repeat(s)
    r, g, b = image.unbind(dim=-3)
    w = (lambda t: t) if image.is_floating_point() else (lambda t: t.float())
    l_img = (w(r) * 0.2989 + w(g) * 0.587 + w(b) * 0.114).unsqueeze(dim=-3)
    if preserve_dtype:
        l_img = l_img.to(image.dtype)
    if num_output_channels == 3:
        l_img = l_img.expand(image.shape)
    return l_img


def rgb_to_grayscale_image(image: Tensor, num_output_channels: int = 1) -> Tensor:
    if num_output_channels not in (1, 3):
        raise ValueError(f"num_output_channels must be 1 or 3, got {num_output_channels}.")
    return _rgb_to_grayscale_image(image, num_output_channels=num_output_channels)


def _rgb_to_grayscale_image_pil(image, num_output_channels: int = 1):
    if num_output_channels not in (1, 3):
        raise ValueError(f"num_output_channels must be 1 or 3, got {num_output_channels}.")
    return _FP.to_grayscale(image, num_output_channels=num_output_channels)


def rgb_to_grayscale(inpt, num_output_channels: int = 1):
    """Greyscale (ITU-R 601-2 luma), 1 or 3 output channels."""
    return _get_kernel(rgb_to_grayscale, type(inpt))(inpt, num_output_channels=num_output_channels)


_register_kernel_internal(rgb_to_grayscale, Tensor)(rgb_to_grayscale_image)
_register_kernel_internal(rgb_to_grayscale, tv_tensors.Image)(rgb_to_grayscale_image)
_register_kernel_internal(rgb_to_grayscale, PIL.Image.Image)(_rgb_to_grayscale_image_pil)
to_grayscale = rgb_to_grayscale


def grayscale_to_rgb_image(image: Tensor) -> Tensor:
    if image.shape[-3] >= 3:
        return image
    return _rgb_to_grayscale_image(image, num_output_channels=3)


def grayscale_to_rgb(inpt):
    """A 1-channel image repeated to 3 channels (3-channel inputs are returned as they are)."""
    return _get_kernel(grayscale_to_rgb, type(inpt))(inpt)


_register_kernel_internal(grayscale_to_rgb, Tensor)(grayscale_to_rgb_image)
_register_kernel_internal(grayscale_to_rgb, tv_tensors.Image)(grayscale_to_rgb_image)
_register_kernel_internal(grayscale_to_rgb, PIL.Image.Image)(
    lambda image: image.convert(mode="RGB")
)


def adjust_brightness_image(image: Tensor, brightness_factor: float) -> Tensor:
    if brightness_factor < 0:
        raise ValueError(f"brightness_factor ({brightness_factor}) is not non-negative.")
    _check_channels(image)
    return _FT.adjust_brightness(image, brightness_factor)


def adjust_contrast_image(image: Tensor, contrast_factor: float) -> Tensor:
    if contrast_factor < 0:
        raise ValueError(f"contrast_factor ({contrast_factor}) is not non-negative.")
    _check_channels(image)
    return _FT.adjust_contrast(image, contrast_factor)


def adjust_saturation_image(image: Tensor, saturation_factor: float) -> Tensor:
    if saturation_factor < 0:
        raise ValueError(f"saturation_factor ({saturation_factor}) is not non-negative.")
    _check_channels(image)
    if image.shape[-3] == 1:
        return image
    gray = _rgb_to_grayscale_image(image, num_output_channels=1, preserve_dtype=False)
    if not image.is_floating_point():
        gray = gray.floor()
    return _blend(image, gray, saturation_factor)


def _blend(image1: Tensor, image2: Tensor, ratio: float) -> Tensor:
    """``image1 * ratio + image2 * (1 - ratio)``, clamped, in torchvision v2's rounding: the
    second term is added by a fused multiply-add (``add_(image2, alpha=1 - ratio)``)."""
    a1, a2 = api.array(image1), api.array(image2)
    work = a1.dtype if _FT._is_float(a1.dtype) else np.dtype(np.float32)
    t = work.type
    scaled = a1.astype(work) * t(ratio)
    if work == np.float32:
        out = (a2.astype(np.float64) * np.float64(t(1.0 - ratio))
               + scaled.astype(np.float64)).astype(np.float32)
    else:
        out = scaled + a2.astype(work) * t(1.0 - ratio)
    out = out.clip(0, _max_value(image1.dtype))
    return api.wrap(out.astype(a1.dtype), image1.device)


def adjust_sharpness_image(image: Tensor, sharpness_factor: float) -> Tensor:
    num_channels, height, width = image.shape[-3:]
    if num_channels not in (1, 3):
        raise TypeError(f"Input image tensor can have 1 or 3 channels, but found {num_channels}")
    if sharpness_factor < 0:
        raise ValueError(f"sharpness_factor ({sharpness_factor}) is not non-negative.")
    if image.numel() == 0 or height <= 2 or width <= 2:
        return image
    return _FT.adjust_sharpness(image, sharpness_factor)


def adjust_hue_image(image: Tensor, hue_factor: float) -> Tensor:
    if not (-0.5 <= hue_factor <= 0.5):
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    _check_channels(image)
    if image.shape[-3] == 1 or image.numel() == 0:
        return image
    return _FT.adjust_hue(image, hue_factor)


def adjust_gamma_image(image: Tensor, gamma: float, gain: float = 1.0) -> Tensor:
    if gamma < 0:
        raise ValueError("Gamma should be a non-negative real number")
    output = (to_dtype_image(image, ember.float32, scale=True)
              if not image.is_floating_point() else image) ** gamma
    if gain != 1.0:
        output = (output * gain).clamp(0.0, 1.0)
    return to_dtype_image(output, image.dtype, scale=True)


def posterize_image(image: Tensor, bits: int) -> Tensor:
    if not isinstance(bits, int) or not 0 <= bits <= 8:
        raise TypeError(
            f"bits must be a positive integer in the range [0, 8], got {bits} instead."
        )
    if image.is_floating_point():
        levels = 1 << bits
        return (image * levels).floor().clamp(0, levels - 1) * (1.0 / levels)
    num_value_bits = _num_value_bits(image.dtype)
    if bits >= num_value_bits:
        return image
    mask = ((1 << bits) - 1) << (num_value_bits - bits)
    return image & mask


def invert_image(image: Tensor) -> Tensor:
    if image.is_floating_point():
        return 1.0 - image
    elif image.dtype == ember.uint8:
        return image.bitwise_not()
    return image.bitwise_xor((1 << _num_value_bits(image.dtype)) - 1)


def solarize_image(image: Tensor, threshold: float) -> Tensor:
    if threshold > _max_value(image.dtype):
        raise TypeError(
            "Threshold should be less or equal the maximum value of the dtype, but got "
            f"{threshold}"
        )
    return ember.where(image >= threshold, invert_image(image), image)


def autocontrast_image(image: Tensor) -> Tensor:
    _check_channels(image)
    if image.numel() == 0:
        return image
    bound = _max_value(image.dtype)
    float_image = image if image.is_floating_point() else image.to(ember.float32)
    minimum = float_image.amin(dim=(-2, -1), keepdim=True)
    maximum = float_image.amax(dim=(-2, -1), keepdim=True)
    eq_idxs = maximum == minimum
    inv_scale = (maximum - minimum) * (1.0 / bound)
    minimum = ember.where(eq_idxs, ember.zeros_like(minimum), minimum)
    inv_scale = ember.where(eq_idxs, ember.ones_like(inv_scale), inv_scale)
    return ((float_image - minimum) / inv_scale).clamp(0, bound).to(image.dtype)


def equalize_image(image: Tensor) -> Tensor:
    if image.numel() == 0:
        return image
    output_dtype = image.dtype
    u8 = to_dtype_image(image, ember.uint8, scale=True)
    shape = u8.shape
    flat = u8.reshape((-1, 1) + tuple(shape[-2:])) if u8.ndim >= 3 else u8.reshape(1, 1, *shape)
    out = ember.stack([_FT.equalize(f) for f in flat]).reshape(shape)
    return to_dtype_image(out, output_dtype, scale=True)


def permute_channels_image(image: Tensor, permutation: list[int]) -> Tensor:
    shape = image.shape
    num_channels, height, width = shape[-3:]
    if len(permutation) != num_channels:
        raise ValueError(
            "Length of permutation does not match number of channels: "
            f"{len(permutation)} != {num_channels}"
        )
    if image.numel() == 0:
        return image
    image = image.reshape(-1, num_channels, height, width)
    return image[:, list(permutation), :, :].reshape(shape)


def _permute_channels_image_pil(image, permutation: list[int]):
    return to_pil_image(permute_channels_image(pil_to_tensor(image), permutation=permutation))


adjust_brightness = _image_video_functional(
    "adjust_brightness", adjust_brightness_image, _FP.adjust_brightness,
    "Scale brightness (0 gives black, 1 the original).")
adjust_contrast = _image_video_functional(
    "adjust_contrast", adjust_contrast_image, _FP.adjust_contrast,
    "Blend with the mean grey level.")
adjust_saturation = _image_video_functional(
    "adjust_saturation", adjust_saturation_image, _FP.adjust_saturation,
    "Blend with the greyscale image.")
adjust_sharpness = _image_video_functional(
    "adjust_sharpness", adjust_sharpness_image, _FP.adjust_sharpness,
    "Blend with a smoothed image.")
adjust_hue = _image_video_functional(
    "adjust_hue", adjust_hue_image, _FP.adjust_hue, "Shift the hue by ``hue_factor``.")
adjust_gamma = _image_video_functional(
    "adjust_gamma", adjust_gamma_image, _FP.adjust_gamma, "Gamma correction.")
posterize = _image_video_functional(
    "posterize", posterize_image, _FP.posterize, "Keep the ``bits`` most significant bits.")
solarize = _image_video_functional(
    "solarize", solarize_image, _FP.solarize, "Invert pixels at or above ``threshold``.")
autocontrast = _image_video_functional(
    "autocontrast", autocontrast_image, _FP.autocontrast, "Stretch each channel to the range.")
equalize = _image_video_functional(
    "equalize", equalize_image, _FP.equalize, "Histogram equalisation.")
invert = _image_video_functional("invert", invert_image, _FP.invert, "Invert colours.")
permute_channels = _image_video_functional(
    "permute_channels", permute_channels_image, _permute_channels_image_pil,
    "Reorder the channels by ``permutation``.")

adjust_brightness_video = adjust_brightness_image
adjust_contrast_video = adjust_contrast_image
adjust_saturation_video = adjust_saturation_image
adjust_sharpness_video = adjust_sharpness_image
adjust_hue_video = adjust_hue_image
adjust_gamma_video = adjust_gamma_image
posterize_video = posterize_image
solarize_video = solarize_image
autocontrast_video = autocontrast_image
equalize_video = equalize_image
invert_video = invert_image
permute_channels_video = permute_channels_image
