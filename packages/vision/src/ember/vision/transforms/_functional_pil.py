"""PIL kernels of ``ember.vision.transforms.functional`` (torchvision's ``_functional_pil``).

These call Pillow exactly as torchvision does, so results are bit-identical to torchvision's.
"""

from __future__ import annotations

import numbers
import sys
from typing import Any

import numpy as np
from PIL import Image, ImageEnhance, ImageOps


def _is_pil_image(img: Any) -> bool:
    return isinstance(img, Image.Image)


def _check(img: Any) -> None:
    if not _is_pil_image(img):
        raise TypeError(f"img should be PIL Image. Got {type(img)}")


def _image_fromarray(obj: np.ndarray, mode: str) -> Image.Image:
    """``Image.fromarray(obj, mode)`` with the pre-11.3 Pillow semantics: ``mode`` reinterprets
    the raw buffer (torchvision relies on this for e.g. ``I;16`` and ``HSV`` images)."""
    obj = np.ascontiguousarray(obj)
    size = (obj.shape[1], obj.shape[0])
    return Image.frombuffer(mode, size, obj.tobytes(), "raw", mode, 0, 1)


def get_dimensions(img: Any) -> list[int]:
    if _is_pil_image(img):
        width, height = img.size
        return [len(img.getbands()), height, width]
    raise TypeError(f"Unexpected type {type(img)}")


def get_image_size(img: Any) -> list[int]:
    if _is_pil_image(img):
        return list(img.size)
    raise TypeError(f"Unexpected type {type(img)}")


def get_image_num_channels(img: Any) -> int:
    if _is_pil_image(img):
        return len(img.getbands())
    raise TypeError(f"Unexpected type {type(img)}")


def hflip(img: Image.Image) -> Image.Image:
    _check(img)
    return img.transpose(Image.FLIP_LEFT_RIGHT)


def vflip(img: Image.Image) -> Image.Image:
    _check(img)
    return img.transpose(Image.FLIP_TOP_BOTTOM)


def _enhance(enhancer, img: Image.Image, factor: float) -> Image.Image:
    _check(img)
    return enhancer(img).enhance(factor)


def adjust_brightness(img: Image.Image, brightness_factor: float) -> Image.Image:
    return _enhance(ImageEnhance.Brightness, img, brightness_factor)


def adjust_contrast(img: Image.Image, contrast_factor: float) -> Image.Image:
    return _enhance(ImageEnhance.Contrast, img, contrast_factor)


def adjust_saturation(img: Image.Image, saturation_factor: float) -> Image.Image:
    return _enhance(ImageEnhance.Color, img, saturation_factor)


def adjust_sharpness(img: Image.Image, sharpness_factor: float) -> Image.Image:
    return _enhance(ImageEnhance.Sharpness, img, sharpness_factor)


def adjust_hue(img: Image.Image, hue_factor: float) -> Image.Image:
    if not -0.5 <= hue_factor <= 0.5:
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    _check(img)
    input_mode = img.mode
    if input_mode in {"L", "1", "I", "F"}:
        return img
    h, s, v = img.convert("HSV").split()
    np_h = np.array(h, dtype=np.uint8)
    np_h += np.int32(hue_factor * 255).astype(np.uint8)
    h = _image_fromarray(np_h, "L")
    return Image.merge("HSV", (h, s, v)).convert(input_mode)


def adjust_gamma(img: Image.Image, gamma: float, gain: float = 1.0) -> Image.Image:
    _check(img)
    if gamma < 0:
        raise ValueError("Gamma should be a non-negative real number")
    input_mode = img.mode
    img = img.convert("RGB")
    gamma_map = [int((255 + 1 - 1e-3) * gain * pow(ele / 255.0, gamma)) for ele in range(256)] * 3
    return img.point(gamma_map).convert(input_mode)


def _parse_fill(fill, img: Image.Image, name: str = "fillcolor") -> dict:
    num_channels = get_image_num_channels(img)
    if fill is None:
        fill = 0
    if isinstance(fill, (int, float)) and num_channels > 1:
        fill = tuple([fill] * num_channels)
    if isinstance(fill, (list, tuple)):
        if len(fill) == 1:
            fill = fill * num_channels
        elif len(fill) != num_channels:
            raise ValueError(
                "The number of elements in 'fill' does not match the number of channels "
                f"of the image ({len(fill)} != {num_channels})"
            )
        fill = tuple(fill)
    if img.mode != "F":
        fill = tuple(int(x) for x in fill) if isinstance(fill, (list, tuple)) else int(fill)
    return {name: fill}


def pad(img: Image.Image, padding, fill=0, padding_mode: str = "constant") -> Image.Image:
    _check(img)
    if not isinstance(padding, (numbers.Number, tuple, list)):
        raise TypeError("Got inappropriate padding arg")
    if fill is not None and not isinstance(fill, (numbers.Number, tuple, list)):
        raise TypeError("Got inappropriate fill arg")
    if not isinstance(padding_mode, str):
        raise TypeError("Got inappropriate padding_mode arg")
    if isinstance(padding, list):
        padding = tuple(padding)
    if isinstance(padding, tuple) and len(padding) not in [1, 2, 4]:
        raise ValueError(
            "Padding must be an int or a 1, 2, or 4 element tuple, not a "
            f"{len(padding)} element tuple"
        )
    if isinstance(padding, tuple) and len(padding) == 1:
        padding = padding[0]
    if padding_mode not in ["constant", "edge", "reflect", "symmetric"]:
        raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
    if padding_mode == "constant":
        opts = _parse_fill(fill, img, name="fill")
        if img.mode == "P":
            palette = img.getpalette()
            image = ImageOps.expand(img, border=padding, **opts)
            image.putpalette(palette)
            return image
        return ImageOps.expand(img, border=padding, **opts)
    if isinstance(padding, int):
        p = [padding] * 4
    elif len(padding) == 2:
        p = [padding[0], padding[1], padding[0], padding[1]]
    else:
        p = list(padding)  # left, top, right, bottom
    crop_l, crop_t, crop_r, crop_b = (-min(x, 0) for x in p)
    if crop_l or crop_t or crop_r or crop_b:
        img = img.crop((crop_l, crop_t, img.width - crop_r, img.height - crop_b))
    left, top, right, bottom = (max(x, 0) for x in p)
    palette = img.getpalette() if img.mode == "P" else None
    arr = np.asarray(img)
    widths = [(top, bottom), (left, right)] + [(0, 0)] * (arr.ndim - 2)
    out = Image.fromarray(np.pad(arr, widths, mode=padding_mode))
    if palette is not None:
        out.putpalette(palette)
    return out


def crop(img: Image.Image, top: int, left: int, height: int, width: int) -> Image.Image:
    _check(img)
    return img.crop((left, top, left + width, top + height))


def resize(img: Image.Image, size: list[int], interpolation: int = Image.BILINEAR) -> Image.Image:
    _check(img)
    if not (isinstance(size, list) and len(size) == 2):
        raise TypeError(f"Got inappropriate size arg: {size}")
    return img.resize(tuple(size[::-1]), interpolation)


def _transform(img: Image.Image, method: int, data: list[float], interpolation: int, fill):
    """``img.transform`` onto its own size, with ``fill`` for the pixels mapped from outside."""
    _check(img)
    return img.transform(img.size, method, data, interpolation, **_parse_fill(fill, img))


def affine(
    img: Image.Image, matrix: list[float], interpolation: int = Image.NEAREST, fill=None
) -> Image.Image:
    return _transform(img, Image.AFFINE, matrix, interpolation, fill)


def rotate(
    img: Image.Image,
    angle: float,
    interpolation: int = Image.NEAREST,
    expand: bool = False,
    center=None,
    fill=None,
) -> Image.Image:
    _check(img)
    opts = _parse_fill(fill, img)
    return img.rotate(angle, interpolation, expand, center, **opts)


def perspective(
    img: Image.Image, perspective_coeffs: list[float], interpolation: int = Image.BICUBIC, fill=None
) -> Image.Image:
    return _transform(img, Image.PERSPECTIVE, perspective_coeffs, interpolation, fill)


def to_grayscale(img: Image.Image, num_output_channels: int) -> Image.Image:
    _check(img)
    if num_output_channels == 1:
        return img.convert("L")
    if num_output_channels == 3:
        np_img = np.array(img.convert("L"), dtype=np.uint8)
        return _image_fromarray(np.dstack([np_img, np_img, np_img]), "RGB")
    raise ValueError("num_output_channels should be either 1 or 3")


def invert(img: Image.Image) -> Image.Image:
    _check(img)
    return ImageOps.invert(img)


def posterize(img: Image.Image, bits: int) -> Image.Image:
    _check(img)
    return ImageOps.posterize(img, bits)


def solarize(img: Image.Image, threshold: int) -> Image.Image:
    _check(img)
    return ImageOps.solarize(img, threshold)


def autocontrast(img: Image.Image) -> Image.Image:
    _check(img)
    return ImageOps.autocontrast(img)


def equalize(img: Image.Image) -> Image.Image:
    _check(img)
    return ImageOps.equalize(img)


INT16_MODE = "I;16" if sys.byteorder == "little" else "I;16B"
