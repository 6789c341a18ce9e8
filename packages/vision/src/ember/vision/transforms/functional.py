"""Functional transforms, like ``torchvision.transforms.functional``.

Every function takes a PIL image or an ember tensor image ``(..., C, H, W)`` and dispatches to
the PIL kernels (``_functional_pil``) or the array kernels (``_functional_tensor``).
"""

from __future__ import annotations

import math
import numbers
import warnings
from enum import Enum
from typing import Any

import numpy as np
from PIL import Image

import ember
from ember import Tensor

from . import _functional_pil as F_pil
from . import _functional_tensor as F_t


class InterpolationMode(Enum):
    """Interpolation modes, with torchvision's names and values."""

    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


_MODES_FROM_INT = {
    0: InterpolationMode.NEAREST,
    2: InterpolationMode.BILINEAR,
    3: InterpolationMode.BICUBIC,
    4: InterpolationMode.BOX,
    5: InterpolationMode.HAMMING,
    1: InterpolationMode.LANCZOS,
}

pil_modes_mapping = {
    InterpolationMode.NEAREST: 0,
    InterpolationMode.BILINEAR: 2,
    InterpolationMode.BICUBIC: 3,
    InterpolationMode.NEAREST_EXACT: 0,
    InterpolationMode.BOX: 4,
    InterpolationMode.HAMMING: 5,
    InterpolationMode.LANCZOS: 1,
}

_is_pil_image = F_pil._is_pil_image


def _interpolation_modes_from_int(i: int) -> InterpolationMode:
    return _MODES_FROM_INT[i]


def _check_interpolation(interpolation) -> InterpolationMode:
    if isinstance(interpolation, int):
        return _interpolation_modes_from_int(interpolation)
    if not isinstance(interpolation, InterpolationMode):
        raise TypeError(
            "Argument interpolation should be a InterpolationMode or a corresponding "
            "Pillow integer constant"
        )
    return interpolation


def _is_tensor(img: Any) -> bool:
    return isinstance(img, Tensor)


def get_dimensions(img) -> list[int]:
    """``[channels, height, width]`` of an image."""
    return F_t.get_dimensions(img) if _is_tensor(img) else F_pil.get_dimensions(img)


def get_image_size(img) -> list[int]:
    """``[width, height]`` of an image."""
    return F_t.get_image_size(img) if _is_tensor(img) else F_pil.get_image_size(img)


def get_image_num_channels(img) -> int:
    """Number of channels of an image."""
    return F_t.get_image_num_channels(img) if _is_tensor(img) else F_pil.get_image_num_channels(img)


# -- conversions --------------------------------------------------------------------------


def to_tensor(pic) -> Tensor:
    """PIL image or HWC ndarray to a CHW tensor; uint8 data is scaled to [0, 1]."""
    if not (_is_pil_image(pic) or isinstance(pic, np.ndarray)):
        raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
    if isinstance(pic, np.ndarray) and pic.ndim not in {2, 3}:
        raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
    default = ember.get_default_dtype().np
    if isinstance(pic, np.ndarray):
        if pic.ndim == 2:
            pic = pic[:, :, None]
        arr = np.ascontiguousarray(pic.transpose((2, 0, 1)))
    else:
        nptype = {"I": np.int32, F_pil.INT16_MODE: np.int16, "F": np.float32}.get(
            pic.mode, np.uint8
        )
        arr = np.array(pic, nptype, copy=True)
        if pic.mode == "1":
            arr = (255 * arr).astype(np.uint8)
        arr = arr.reshape(pic.size[1], pic.size[0], F_pil.get_image_num_channels(pic))
        arr = np.ascontiguousarray(arr.transpose((2, 0, 1)))
    if arr.dtype == np.uint8:
        arr = (arr.astype(default) / default.type(255)).astype(default)
    return ember.from_numpy(arr)


def pil_to_tensor(pic) -> Tensor:
    """PIL image to a CHW tensor, keeping its dtype."""
    if not _is_pil_image(pic):
        raise TypeError(f"pic should be PIL Image. Got {type(pic)}")
    arr = np.array(pic, copy=True)
    arr = arr.reshape(pic.size[1], pic.size[0], F_pil.get_image_num_channels(pic))
    # torchvision's torch.as_tensor: on the default device (to_tensor's from_numpy: the CPU)
    return ember.as_tensor(np.ascontiguousarray(arr.transpose((2, 0, 1))))


def convert_image_dtype(image: Tensor, dtype=None) -> Tensor:
    """Convert a tensor image to ``dtype``, rescaling values."""
    if not _is_tensor(image):
        raise TypeError("Input img should be Tensor Image")
    return F_t.convert_image_dtype(image, ember.float32 if dtype is None else dtype)


_PERMITTED = {2: ["LA"], 4: ["RGBA", "CMYK", "RGBX"], 3: ["RGB", "YCbCr", "HSV"]}
_DEFAULT_MODE = {2: "LA", 4: "RGBA", 3: "RGB"}
_ONE_CHANNEL_MODE = {
    np.dtype(np.uint8): "L",
    np.dtype(np.int16): F_pil.INT16_MODE,
    np.dtype(np.int32): "I",
    np.dtype(np.float32): "F",
}


def to_pil_image(pic, mode=None) -> Image.Image:
    """CHW tensor or HWC ndarray to a PIL image of ``mode`` (inferred when None)."""
    if _is_tensor(pic):
        npimg = pic.detach().cpu().numpy()
        if npimg.ndim == 3:
            npimg = npimg.transpose((1, 2, 0))
    elif isinstance(pic, np.ndarray):
        npimg = pic
    else:
        raise TypeError(f"pic should be Tensor or ndarray. Got {type(pic)}.")
    if npimg.ndim == 2:
        npimg = np.expand_dims(npimg, 2)
    if npimg.ndim != 3:
        raise ValueError(f"pic should be 2/3 dimensional. Got {npimg.ndim} dimensions.")
    if npimg.shape[-1] > 4:
        raise ValueError(f"pic should not have > 4 channels. Got {npimg.shape[-1]} channels.")
    if np.issubdtype(npimg.dtype, np.floating) and mode != "F":
        npimg = (npimg * 255).astype(np.uint8)
    channels = npimg.shape[2]
    if channels == 1:
        npimg = npimg[:, :, 0]
        expected_mode = _ONE_CHANNEL_MODE.get(npimg.dtype)
        if mode is not None and mode != expected_mode:
            raise ValueError(
                f"Incorrect mode ({mode}) supplied for input type {np.dtype}. "
                f"Should be {expected_mode}"
            )
        mode = expected_mode
    else:
        permitted = _PERMITTED[channels]
        if mode is not None and mode not in permitted:
            dims = {2: "2D", 3: "3D", 4: "4D"}[channels]
            raise ValueError(f"Only modes {permitted} are supported for {dims} inputs")
        if mode is None and npimg.dtype == np.uint8:
            mode = _DEFAULT_MODE[channels]
    if mode is None:
        raise TypeError(f"Input type {npimg.dtype} is not supported")
    return F_pil._image_fromarray(npimg, mode)


def normalize(tensor: Tensor, mean, std, inplace: bool = False) -> Tensor:
    """Normalise a float tensor image channel-wise: ``(x - mean) / std``."""
    if not _is_tensor(tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(tensor)}")
    return F_t.normalize(tensor, mean=mean, std=std, inplace=inplace)


# -- geometry -----------------------------------------------------------------------------


def _compute_resized_output_size(image_size, size, max_size=None) -> list[int]:
    h, w = image_size
    short, long = (w, h) if w <= h else (h, w)
    if len(size) == 1:
        requested_new_short = size[0]
        new_short, new_long = requested_new_short, int(requested_new_short * long / short)
        if max_size is not None:
            if max_size <= requested_new_short:
                raise ValueError(
                    f"max_size = {max_size} must be strictly greater than the requested "
                    f"size for the smaller edge size = {size}"
                )
            if new_long > max_size:
                new_short, new_long = int(max_size * new_short / new_long), max_size
        new_w, new_h = (new_short, new_long) if w <= h else (new_long, new_short)
    else:
        new_w, new_h = size[1], size[0]
    return [new_h, new_w]


def resize(img, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
    """Resize to ``size`` ((h, w), or the smaller edge when an int)."""
    interpolation = _check_interpolation(interpolation)
    if isinstance(size, (list, tuple)):
        if len(size) not in [1, 2]:
            raise ValueError(
                "Size must be an int or a 1 or 2 element tuple/list, not a "
                f"{len(size)} element tuple/list"
            )
        if max_size is not None and len(size) != 1:
            raise ValueError(
                "max_size should only be passed if size specifies the length of the smaller "
                "edge, i.e. size should be an int or a sequence of length 1 in torchscript "
                "mode."
            )
    _, image_height, image_width = get_dimensions(img)
    if isinstance(size, int):
        size = [size]
    output_size = _compute_resized_output_size((image_height, image_width), size, max_size)
    if [image_height, image_width] == output_size:
        return img
    if not _is_tensor(img):
        if antialias is False:
            warnings.warn(
                "Anti-alias option is always applied for PIL Image input. Argument antialias "
                "is ignored.",
                stacklevel=2,
            )
        return F_pil.resize(img, size=output_size, interpolation=pil_modes_mapping[interpolation])
    return F_t.resize(img, size=output_size, interpolation=interpolation.value, antialias=antialias)


def pad(img, padding, fill=0, padding_mode: str = "constant"):
    """Pad all sides (constant, edge, reflect or symmetric)."""
    if not _is_tensor(img):
        return F_pil.pad(img, padding=padding, fill=fill, padding_mode=padding_mode)
    return F_t.pad(img, padding=padding, fill=fill, padding_mode=padding_mode)


def crop(img, top: int, left: int, height: int, width: int):
    """Crop the box at (top, left) of size (height, width); zero-padded outside the image."""
    if not _is_tensor(img):
        return F_pil.crop(img, top, left, height, width)
    return F_t.crop(img, top, left, height, width)


def _pair(size):
    if isinstance(size, numbers.Number):
        return (int(size), int(size))
    if isinstance(size, (tuple, list)) and len(size) == 1:
        return (size[0], size[0])
    return size


def center_crop(img, output_size):
    """Crop the centre; pads with zeros when the crop is larger than the image."""
    output_size = _pair(output_size)
    _, image_height, image_width = get_dimensions(img)
    crop_height, crop_width = output_size
    if crop_width > image_width or crop_height > image_height:
        padding_ltrb = [
            (crop_width - image_width) // 2 if crop_width > image_width else 0,
            (crop_height - image_height) // 2 if crop_height > image_height else 0,
            (crop_width - image_width + 1) // 2 if crop_width > image_width else 0,
            (crop_height - image_height + 1) // 2 if crop_height > image_height else 0,
        ]
        img = pad(img, padding_ltrb, fill=0)
        _, image_height, image_width = get_dimensions(img)
        if crop_width == image_width and crop_height == image_height:
            return img
    crop_top = int(round((image_height - crop_height) / 2.0))
    crop_left = int(round((image_width - crop_width) / 2.0))
    return crop(img, crop_top, crop_left, crop_height, crop_width)


def resized_crop(
    img,
    top: int,
    left: int,
    height: int,
    width: int,
    size,
    interpolation=InterpolationMode.BILINEAR,
    antialias=True,
):
    """Crop then resize."""
    img = crop(img, top, left, height, width)
    return resize(img, size, interpolation, antialias=antialias)


def hflip(img):
    """Flip horizontally."""
    return F_t.hflip(img) if _is_tensor(img) else F_pil.hflip(img)


def vflip(img):
    """Flip vertically."""
    return F_t.vflip(img) if _is_tensor(img) else F_pil.vflip(img)


def five_crop(img, size):
    """The four corner crops and the central crop."""
    size = _pair(size)
    if len(size) != 2:
        raise ValueError("Please provide only two dimensions (h, w) for size.")
    _, image_height, image_width = get_dimensions(img)
    crop_height, crop_width = size
    if crop_width > image_width or crop_height > image_height:
        raise ValueError(
            f"Requested crop size {size} is bigger than input size {(image_height, image_width)}"
        )
    tl = crop(img, 0, 0, crop_height, crop_width)
    tr = crop(img, 0, image_width - crop_width, crop_height, crop_width)
    bl = crop(img, image_height - crop_height, 0, crop_height, crop_width)
    br = crop(img, image_height - crop_height, image_width - crop_width, crop_height, crop_width)
    return tl, tr, bl, br, center_crop(img, [crop_height, crop_width])


def ten_crop(img, size, vertical_flip: bool = False):
    """``five_crop`` of the image and of its flipped version."""
    size = _pair(size)
    if len(size) != 2:
        raise ValueError("Please provide only two dimensions (h, w) for size.")
    first_five = five_crop(img, size)
    img = vflip(img) if vertical_flip else hflip(img)
    return first_five + five_crop(img, size)


def _get_inverse_affine_matrix(
    center, angle: float, translate, scale: float, shear, inverted: bool = True
) -> list[float]:
    """The (inverse) affine matrix of rotation about ``center`` + translation + scale + shear."""
    rot = math.radians(angle)
    sx = math.radians(shear[0])
    sy = math.radians(shear[1])
    cx, cy = center
    tx, ty = translate
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    if inverted:
        matrix = [x / scale for x in [d, -b, 0.0, -c, a, 0.0]]
        matrix[2] += matrix[0] * (-cx - tx) + matrix[1] * (-cy - ty)
        matrix[5] += matrix[3] * (-cx - tx) + matrix[4] * (-cy - ty)
        matrix[2] += cx
        matrix[5] += cy
    else:
        matrix = [x * scale for x in [a, b, 0.0, c, d, 0.0]]
        matrix[2] += matrix[0] * -cx + matrix[1] * -cy
        matrix[5] += matrix[3] * -cx + matrix[4] * -cy
        matrix[2] += cx + tx
        matrix[5] += cy + ty
    return matrix


def _tensor_center(img, center) -> list[float]:
    if center is None:
        return [0.0, 0.0]
    _, height, width = get_dimensions(img)
    return [1.0 * (c - s * 0.5) for c, s in zip(center, [width, height])]


def rotate(
    img,
    angle: float,
    interpolation=InterpolationMode.NEAREST,
    expand: bool = False,
    center=None,
    fill=None,
):
    """Rotate by ``angle`` degrees counter-clockwise."""
    interpolation = _check_interpolation(interpolation)
    if not isinstance(angle, (int, float)):
        raise TypeError("Argument angle should be int or float")
    if center is not None and not isinstance(center, (list, tuple)):
        raise TypeError("Argument center should be a sequence")
    if not _is_tensor(img):
        return F_pil.rotate(
            img,
            angle=angle,
            interpolation=pil_modes_mapping[interpolation],
            expand=expand,
            center=center,
            fill=fill,
        )
    matrix = _get_inverse_affine_matrix(
        _tensor_center(img, center), -angle, [0.0, 0.0], 1.0, [0.0, 0.0]
    )
    return F_t.rotate(
        img, matrix=matrix, interpolation=interpolation.value, expand=expand, fill=fill
    )


def affine(
    img,
    angle: float,
    translate,
    scale: float,
    shear,
    interpolation=InterpolationMode.NEAREST,
    fill=None,
    center=None,
):
    """Affine transform keeping the image centre invariant."""
    interpolation = _check_interpolation(interpolation)
    if not isinstance(angle, (int, float)):
        raise TypeError("Argument angle should be int or float")
    if not isinstance(translate, (list, tuple)):
        raise TypeError("Argument translate should be a sequence")
    if len(translate) != 2:
        raise ValueError("Argument translate should be a sequence of length 2")
    if scale <= 0.0:
        raise ValueError("Argument scale should be positive")
    if not isinstance(shear, (numbers.Number, (list, tuple))):
        raise TypeError("Shear should be either a single value or a sequence of two values")
    angle = float(angle)
    translate = list(translate)
    if isinstance(shear, numbers.Number):
        shear = [shear, 0.0]
    shear = list(shear)
    if len(shear) == 1:
        shear = [shear[0], shear[0]]
    if len(shear) != 2:
        raise ValueError(f"Shear should be a sequence containing two values. Got {shear}")
    if center is not None and not isinstance(center, (list, tuple)):
        raise TypeError("Argument center should be a sequence")
    _, height, width = get_dimensions(img)
    if not _is_tensor(img):
        if center is None:
            center = [width * 0.5, height * 0.5]
        matrix = _get_inverse_affine_matrix(center, angle, translate, scale, shear)
        return F_pil.affine(
            img, matrix=matrix, interpolation=pil_modes_mapping[interpolation], fill=fill
        )
    translate_f = [1.0 * t for t in translate]
    matrix = _get_inverse_affine_matrix(
        _tensor_center(img, center), angle, translate_f, scale, shear
    )
    return F_t.affine(img, matrix=matrix, interpolation=interpolation.value, fill=fill)


def _get_perspective_coeffs(startpoints, endpoints) -> list[float]:
    """The coefficients ``(a, b, c, d, e, f, g, h)`` mapping each output pixel ``(x, y)`` to
    ``((ax + by + c) / (gx + hy + 1), (dx + ey + f) / (gx + hy + 1))`` in the input, solved by
    least squares in float64 and rounded to float32 like torchvision."""
    if len(startpoints) != 4 or len(endpoints) != 4:
        raise ValueError(
            f"Please provide exactly four corners, got {len(startpoints)} startpoints and "
            f"{len(endpoints)} endpoints."
        )
    a_matrix = np.zeros((8, 8), dtype=np.float64)
    for i, (p1, p2) in enumerate(zip(endpoints, startpoints)):
        a_matrix[2 * i] = [p1[0], p1[1], 1, 0, 0, 0, -p2[0] * p1[0], -p2[0] * p1[1]]
        a_matrix[2 * i + 1] = [0, 0, 0, p1[0], p1[1], 1, -p2[1] * p1[0], -p2[1] * p1[1]]
    b_matrix = np.asarray(startpoints, dtype=np.float64).reshape(8)
    res = np.linalg.lstsq(a_matrix, b_matrix, rcond=None)[0].astype(np.float32)
    return res.tolist()


def perspective(img, startpoints, endpoints, interpolation=InterpolationMode.BILINEAR, fill=None):
    """Perspective transform mapping the four ``startpoints`` corners onto ``endpoints``."""
    coeffs = _get_perspective_coeffs(startpoints, endpoints)
    interpolation = _check_interpolation(interpolation)
    if not _is_tensor(img):
        return F_pil.perspective(
            img, coeffs, interpolation=pil_modes_mapping[interpolation], fill=fill
        )
    return F_t.perspective(img, coeffs, interpolation=interpolation.value, fill=fill)


def elastic_transform(img, displacement, interpolation=InterpolationMode.BILINEAR, fill=None):
    """Warp by a displacement field ``(1, H, W, 2)`` (normalised coordinates) added to the
    identity sampling grid; PIL images go through the tensor kernel."""
    if isinstance(interpolation, int):
        warnings.warn(
            "Argument interpolation should be of type InterpolationMode instead of int. "
            "Please, use InterpolationMode enum.",
            stacklevel=2,
        )
        interpolation = _interpolation_modes_from_int(interpolation)
    if not _is_tensor(displacement):
        raise TypeError("Argument displacement should be a Tensor")
    t_img = img
    if not _is_tensor(img):
        if not _is_pil_image(img):
            raise TypeError(f"img should be PIL Image or Tensor. Got {type(img)}")
        t_img = pil_to_tensor(img)
    shape = (1,) + tuple(t_img.shape[-2:]) + (2,)
    if shape != tuple(displacement.shape):
        raise ValueError(
            f"Argument displacement shape should be {ember.Size(shape)}, but given "
            f"{displacement.shape}"
        )
    output = F_t.elastic_transform(
        t_img, displacement, interpolation=interpolation.value, fill=fill
    )
    if not _is_tensor(img):
        output = to_pil_image(output, mode=img.mode)
    return output


# -- colour -------------------------------------------------------------------------------


def _dispatch(name: str, img, *args):
    return getattr(F_t if _is_tensor(img) else F_pil, name)(img, *args)


def adjust_brightness(img, brightness_factor: float):
    """Scale brightness (0 gives black, 1 the original)."""
    return _dispatch("adjust_brightness", img, brightness_factor)


def adjust_contrast(img, contrast_factor: float):
    """Blend with the mean grey level."""
    return _dispatch("adjust_contrast", img, contrast_factor)


def adjust_saturation(img, saturation_factor: float):
    """Blend with the greyscale image."""
    return _dispatch("adjust_saturation", img, saturation_factor)


def adjust_hue(img, hue_factor: float):
    """Shift the hue by ``hue_factor`` (in [-0.5, 0.5]) of the colour wheel."""
    return _dispatch("adjust_hue", img, hue_factor)


def adjust_gamma(img, gamma: float, gain: float = 1):
    """Gamma correction ``gain * I ** gamma``."""
    return _dispatch("adjust_gamma", img, gamma, gain)


def adjust_sharpness(img, sharpness_factor: float):
    """Blend with a smoothed image."""
    return _dispatch("adjust_sharpness", img, sharpness_factor)


def to_grayscale(img, num_output_channels: int = 1):
    """Greyscale version of a PIL image."""
    if isinstance(img, Image.Image):
        return F_pil.to_grayscale(img, num_output_channels)
    raise TypeError("Input should be PIL Image")


def rgb_to_grayscale(img, num_output_channels: int = 1):
    """Greyscale (ITU-R 601-2 luma) version of an image, 1 or 3 channels."""
    if not _is_tensor(img):
        return F_pil.to_grayscale(img, num_output_channels)
    return F_t.rgb_to_grayscale(img, num_output_channels)


def invert(img):
    """Invert colours."""
    return _dispatch("invert", img)


def posterize(img, bits: int):
    """Keep the ``bits`` most significant bits of each channel."""
    if not 0 <= bits <= 8:
        raise ValueError(f"The number if bits should be between 0 and 8. Got {bits}")
    return _dispatch("posterize", img, bits)


def solarize(img, threshold: float):
    """Invert pixels at or above ``threshold``."""
    return _dispatch("solarize", img, threshold)


def autocontrast(img):
    """Stretch each channel to the full range."""
    return _dispatch("autocontrast", img)


def equalize(img):
    """Histogram equalisation."""
    return _dispatch("equalize", img)


# -- filters and erasing ------------------------------------------------------------------


def erase(img: Tensor, i: int, j: int, h: int, w: int, v, inplace: bool = False) -> Tensor:
    """Set the box (i, j, h, w) of a tensor image to ``v``."""
    if not _is_tensor(img):
        raise TypeError(f"img should be Tensor Image. Got {type(img)}")
    return F_t.erase(img, i, j, h, w, v, inplace=inplace)


def gaussian_blur(img, kernel_size, sigma=None):
    """Gaussian blur with reflect padding (PIL images go through the tensor kernel)."""
    if not isinstance(kernel_size, (int, list, tuple)):
        raise TypeError(
            f"kernel_size should be int or a sequence of integers. Got {type(kernel_size)}"
        )
    if isinstance(kernel_size, int):
        kernel_size = [kernel_size, kernel_size]
    if len(kernel_size) != 2:
        raise ValueError(
            f"If kernel_size is a sequence its length should be 2. Got {len(kernel_size)}"
        )
    for ksize in kernel_size:
        if ksize % 2 == 0 or ksize < 0:
            raise ValueError(
                f"kernel_size should have odd and positive integers. Got {kernel_size}"
            )
    if sigma is None:
        sigma = [ksize * 0.15 + 0.35 for ksize in kernel_size]
    if not isinstance(sigma, (int, float, list, tuple)):
        raise TypeError(f"sigma should be either float or sequence of floats. Got {type(sigma)}")
    if isinstance(sigma, (int, float)):
        sigma = [float(sigma), float(sigma)]
    if isinstance(sigma, (list, tuple)) and len(sigma) == 1:
        sigma = [sigma[0], sigma[0]]
    if len(sigma) != 2:
        raise ValueError(f"If sigma is a sequence, its length should be 2. Got {len(sigma)}")
    for s in sigma:
        if s <= 0.0:
            raise ValueError(f"sigma should have positive values. Got {sigma}")
    t_img = img
    if not _is_tensor(img):
        if not _is_pil_image(img):
            raise TypeError(f"img should be PIL Image or Tensor. Got {type(img)}")
        t_img = pil_to_tensor(img)
    output = F_t.gaussian_blur(t_img, list(kernel_size), list(sigma))
    if not _is_tensor(img):
        output = to_pil_image(output, mode=img.mode)
    return output
