"""Normalisation, blurring, noise, dtype conversion and box / keypoint sanitising."""

from __future__ import annotations

import PIL.Image

import ember
from ember import Tensor
from ember.vision import tv_tensors
from ember.vision.transforms import _functional_tensor as _FT

from ._meta import _convert_bounding_box_format
from ._type_conversion import pil_to_tensor, to_pil_image
from ._utils import _get_kernel, _register_kernel_internal, is_pure_tensor

_MAX = {
    ember.uint8: 255,
    ember.int8: 127,
    ember.int16: 32767,
    ember.int32: 2147483647,
    ember.int64: 9223372036854775807,
}
_BITS = {ember.uint8: 8, ember.int8: 7, ember.int16: 15, ember.int32: 31, ember.int64: 63}
if hasattr(ember, "uint16"):
    _MAX[ember.uint16] = 65535
    _BITS[ember.uint16] = 16


def _max_value(dtype) -> int:
    return _MAX.get(dtype, 1)


def _num_value_bits(dtype) -> int:
    if dtype in _BITS:
        return _BITS[dtype]
    raise TypeError(
        f"Number of value bits is only defined for integer dtypes, but got {dtype}."
    )


# -- normalize ----------------------------------------------------------------------------


def normalize(inpt, mean: list[float], std: list[float], inplace: bool = False):
    """``(x - mean) / std`` per channel of a float image or video."""
    return _get_kernel(normalize, type(inpt))(inpt, mean=mean, std=std, inplace=inplace)


@_register_kernel_internal(normalize, Tensor)
@_register_kernel_internal(normalize, tv_tensors.Image)
def normalize_image(image: Tensor, mean: list[float], std: list[float],
                    inplace: bool = False) -> Tensor:
    if not image.is_floating_point():
        raise TypeError(f"Input tensor should be a float tensor. Got {image.dtype}.")
    if image.ndim < 3:
        raise ValueError(
            f"Expected tensor to be a tensor image of size (..., C, H, W). Got {image.shape}."
        )
    if isinstance(std, (tuple, list)):
        divzero = not all(std)
    elif isinstance(std, (int, float)):
        divzero = std == 0
    else:
        divzero = False
    if divzero:
        raise ValueError("std evaluated to zero, leading to division by zero.")
    mean = ember.as_tensor(mean, dtype=image.dtype, device=image.device)
    std = ember.as_tensor(std, dtype=image.dtype, device=image.device)
    if mean.ndim == 1:
        mean = mean.view(-1, 1, 1)
    if std.ndim == 1:
        std = std.view(-1, 1, 1)
    image = image.sub_(mean) if inplace else image.sub(mean)
    return image.div_(std)


@_register_kernel_internal(normalize, tv_tensors.Video)
def normalize_video(video: Tensor, mean: list[float], std: list[float],
                    inplace: bool = False) -> Tensor:
    return normalize_image(video, mean, std, inplace=inplace)


# -- gaussian blur / noise ----------------------------------------------------------------


def gaussian_blur(inpt, kernel_size: list[int], sigma=None):
    """Gaussian blur with reflect padding."""
    return _get_kernel(gaussian_blur, type(inpt))(inpt, kernel_size=kernel_size, sigma=sigma)


@_register_kernel_internal(gaussian_blur, Tensor)
@_register_kernel_internal(gaussian_blur, tv_tensors.Image)
def gaussian_blur_image(image: Tensor, kernel_size: list[int], sigma=None) -> Tensor:
    if isinstance(kernel_size, int):
        kernel_size = [kernel_size, kernel_size]
    elif len(kernel_size) != 2:
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
    elif isinstance(sigma, (list, tuple)):
        length = len(sigma)
        if length == 1:
            sigma = [sigma[0], sigma[0]]
        elif length != 2:
            raise ValueError(f"If sigma is a sequence, its length should be 2. Got {length}")
    elif isinstance(sigma, (int, float)):
        sigma = [float(sigma), float(sigma)]
    else:
        raise TypeError(f"sigma should be either float or sequence of floats. Got {type(sigma)}")
    for s in sigma:
        if s <= 0.0:
            raise ValueError(f"sigma should have positive values. Got {sigma}")
    if image.numel() == 0:
        return image
    return _FT.gaussian_blur(image, list(kernel_size), [float(s) for s in sigma])


@_register_kernel_internal(gaussian_blur, PIL.Image.Image)
def _gaussian_blur_image_pil(image, kernel_size: list[int], sigma=None):
    output = gaussian_blur_image(pil_to_tensor(image), kernel_size=kernel_size, sigma=sigma)
    return to_pil_image(output, mode=image.mode)


@_register_kernel_internal(gaussian_blur, tv_tensors.Video)
def gaussian_blur_video(video: Tensor, kernel_size: list[int], sigma=None) -> Tensor:
    return gaussian_blur_image(video, kernel_size, sigma)


def gaussian_noise(inpt, mean: float = 0.0, sigma: float = 0.1, clip: bool = True):
    """Add Gaussian noise ``mean + sigma * N(0, 1)`` (scaled by 255 for uint8 images)."""
    return _get_kernel(gaussian_noise, type(inpt))(inpt, mean=mean, sigma=sigma, clip=clip)


@_register_kernel_internal(gaussian_noise, Tensor)
@_register_kernel_internal(gaussian_noise, tv_tensors.Image)
def gaussian_noise_image(image: Tensor, mean: float = 0.0, sigma: float = 0.1,
                         clip: bool = True) -> Tensor:
    if sigma < 0:
        raise ValueError(f"sigma shouldn't be negative. Got {sigma}")
    if image.is_floating_point():
        out = image + (mean + ember.randn_like(image) * sigma)
        return ember.clamp(out, 0, 1) if clip else out
    elif image.dtype == ember.uint8:
        noise = (mean * 255 + ember.randn_like(image, dtype=ember.float32) * (sigma * 255))
        out = image.to(ember.int16) + noise.to(ember.int16)
        if clip:
            out = ember.clamp(out, 0, 255)
        return out.to(ember.uint8)
    raise ValueError(
        f"Input tensor is expected to be in uint8 or float dtype, got dtype={image.dtype}"
    )


@_register_kernel_internal(gaussian_noise, tv_tensors.Video)
def gaussian_noise_video(video: Tensor, mean: float = 0.0, sigma: float = 0.1,
                         clip: bool = True) -> Tensor:
    return gaussian_noise_image(video, mean=mean, sigma=sigma, clip=clip)


@_register_kernel_internal(gaussian_noise, PIL.Image.Image)
def _gaussian_noise_pil(image, mean: float = 0.0, sigma: float = 0.1, clip: bool = True):
    raise ValueError("Gaussian Noise is not implemented for PIL images.")


# -- dtype --------------------------------------------------------------------------------


def to_dtype(inpt, dtype=ember.float32, scale: bool = False):
    """Convert the dtype; with ``scale``, rescale image / video values between the integer
    range and [0, 1] (boxes, masks and keypoints are only cast)."""
    return _get_kernel(to_dtype, type(inpt))(inpt, dtype=dtype, scale=scale)


@_register_kernel_internal(to_dtype, Tensor)
@_register_kernel_internal(to_dtype, tv_tensors.Image)
def to_dtype_image(image: Tensor, dtype=ember.float32, scale: bool = False) -> Tensor:
    if image.dtype == dtype:
        return image
    elif not scale:
        return image.to(dtype)
    float_input = image.is_floating_point()
    float_output = dtype.is_floating_point
    if float_input:
        if float_output:
            return image.to(dtype)
        if (image.dtype == ember.float32 and dtype in (ember.int32, ember.int64)) or (
            image.dtype == ember.float64 and dtype == ember.int64
        ):
            raise RuntimeError(
                f"The conversion from {image.dtype} to {dtype} cannot be performed safely."
            )
        eps = 1e-3
        max_value = float(_max_value(dtype))
        return image.mul(max_value + 1.0 - eps).to(dtype)
    if float_output:
        return image.to(dtype).mul_(1.0 / _max_value(image.dtype))
    bits_in = _num_value_bits(image.dtype)
    bits_out = _num_value_bits(dtype)
    shift_by = abs(bits_in - bits_out)
    if bits_in > bits_out:
        return image.bitwise_right_shift(shift_by).to(dtype)
    return image.to(dtype).bitwise_left_shift(shift_by)


def convert_image_dtype(image: Tensor, dtype=ember.float32) -> Tensor:
    """``to_dtype(image, dtype, scale=True)``."""
    return to_dtype_image(image, dtype=dtype, scale=True)


@_register_kernel_internal(to_dtype, tv_tensors.Video)
def to_dtype_video(video: Tensor, dtype=ember.float32, scale: bool = False) -> Tensor:
    return to_dtype_image(video, dtype, scale=scale)


@_register_kernel_internal(to_dtype, tv_tensors.KeyPoints, tv_tensor_wrapper=False)
@_register_kernel_internal(to_dtype, tv_tensors.BoundingBoxes, tv_tensor_wrapper=False)
@_register_kernel_internal(to_dtype, tv_tensors.Mask, tv_tensor_wrapper=False)
def _to_dtype_tensor_dispatch(inpt, dtype, scale: bool = False):
    return inpt.to(dtype)


# -- sanitize -----------------------------------------------------------------------------


def _get_sanitize_bounding_boxes_mask(bounding_boxes: Tensor, format, canvas_size,
                                      min_size: float = 1.0, min_area: float = 1.0) -> Tensor:
    is_rotated = tv_tensors.is_rotated_bounding_format(format)
    inter = (tv_tensors.BoundingBoxFormat.XYXYXYXY if is_rotated
             else tv_tensors.BoundingBoxFormat.XYXY)
    if isinstance(bounding_boxes, tv_tensors.TVTensor):
        bounding_boxes = bounding_boxes.as_subclass(Tensor)
    b = _convert_bounding_box_format(bounding_boxes, new_format=inter, old_format=format)
    image_h, image_w = canvas_size
    if is_rotated:
        ws = ((b[..., 0] - b[..., 2]) ** 2 + (b[..., 1] - b[..., 3]) ** 2).sqrt()
        hs = ((b[..., 3] - b[..., 5]) ** 2 + (b[..., 4] - b[..., 6]) ** 2).sqrt()
    else:
        ws, hs = b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]
    valid = (ws >= min_size) & (hs >= min_size) & (b >= 0).all(dim=-1) & (ws * hs >= min_area)
    valid = valid & (b[:, 0] <= image_w) & (b[:, 2] <= image_w)
    valid = valid & (b[:, 1] <= image_h) & (b[:, 3] <= image_h)
    if is_rotated:
        valid = valid & (b[..., 4] <= image_w) & (b[..., 5] <= image_h)
        valid = valid & (b[..., 6] <= image_w) & (b[..., 7] <= image_h)
    return valid


def sanitize_bounding_boxes(bounding_boxes, format=None, canvas_size=None,
                            min_size: float = 1.0, min_area: float = 1.0):
    """Remove degenerate boxes (smaller than ``min_size`` / ``min_area`` or outside the
    canvas); returns the kept boxes and the boolean mask of them."""
    if is_pure_tensor(bounding_boxes):
        if format is None or canvas_size is None:
            raise ValueError(
                "format and canvas_size cannot be None if bounding_boxes is a pure tensor. "
                f"Got format={format} and canvas_size={canvas_size}.Set those to appropriate "
                "values or pass bounding_boxes as a tv_tensors.BoundingBoxes object."
            )
        if isinstance(format, str):
            format = tv_tensors.BoundingBoxFormat[format.upper()]
        valid = _get_sanitize_bounding_boxes_mask(bounding_boxes, format=format,
                                                  canvas_size=canvas_size, min_size=min_size,
                                                  min_area=min_area)
        return bounding_boxes[valid], valid
    if not isinstance(bounding_boxes, tv_tensors.BoundingBoxes):
        raise ValueError(
            "bounding_boxes must be a tv_tensors.BoundingBoxes instance or a pure tensor."
        )
    if format is not None or canvas_size is not None:
        raise ValueError(
            "format and canvas_size must be None when bounding_boxes is a "
            f"tv_tensors.BoundingBoxes instance. Got format={format} and "
            f"canvas_size={canvas_size}. Leave those to None or pass bounding_boxes as a pure "
            "tensor."
        )
    valid = _get_sanitize_bounding_boxes_mask(bounding_boxes, format=bounding_boxes.format,
                                              canvas_size=bounding_boxes.canvas_size,
                                              min_size=min_size, min_area=min_area)
    return tv_tensors.wrap(bounding_boxes[valid], like=bounding_boxes), valid


def _get_sanitize_keypoints_mask(key_points: Tensor, canvas_size) -> Tensor:
    h, w = canvas_size
    x, y = key_points[..., 0], key_points[..., 1]
    valid = (x >= 0) & (x < w) & (y >= 0) & (y < h)
    return valid.flatten(start_dim=1).all(dim=1) if valid.ndim > 1 else valid


def sanitize_keypoints(key_points, canvas_size=None):
    """Remove keypoints (groups) that fall outside the canvas; returns them and the mask."""
    if is_pure_tensor(key_points):
        if canvas_size is None:
            raise ValueError(
                "canvas_size cannot be None if key_points is a pure tensor. Set it to an "
                "appropriate value or pass key_points as a tv_tensors.KeyPoints object."
            )
        valid = _get_sanitize_keypoints_mask(key_points, canvas_size=canvas_size)
        return key_points[valid], valid
    if not isinstance(key_points, tv_tensors.KeyPoints):
        raise ValueError("key_points must be a tv_tensors.KeyPoints instance or a pure tensor.")
    if canvas_size is not None:
        raise ValueError(
            "canvas_size must be None when key_points is a tv_tensors.KeyPoints instance. Got "
            f"canvas_size={canvas_size}. Leave it to None or pass key_points as a pure tensor."
        )
    valid = _get_sanitize_keypoints_mask(key_points.as_subclass(Tensor),
                                         canvas_size=key_points.canvas_size)
    return tv_tensors.wrap(key_points[valid], like=key_points), valid


