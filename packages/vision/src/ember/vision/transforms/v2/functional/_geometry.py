"""Geometry functionals of the v2 API: one kernel per input type.

Image kernels reuse the v1 kernels (``_functional_tensor`` for tensors, ``_functional_pil`` for
PIL images); masks go through the image kernels with nearest interpolation; bounding boxes and
keypoints have their geometry mapped as torchvision's kernels do (corners transformed, then
the enclosing box taken and clamped to the new canvas).
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np
import PIL.Image

import ember
from ember import Tensor
from ember.ops import api
from ember.vision import tv_tensors
from ember.vision.transforms import _functional_pil as _FP
from ember.vision.transforms import _functional_tensor as _FT
from ember.vision.transforms import functional as _F1
from ember.vision.transforms.functional import (
    InterpolationMode,
    _get_inverse_affine_matrix,
    _get_perspective_coeffs,
    _interpolation_modes_from_int,
    pil_modes_mapping,
)
from ember.vision.tv_tensors import BoundingBoxFormat

from ._meta import _get_size_image_pil, clamp_bounding_boxes, convert_bounding_box_format
from ._utils import (
    _get_kernel,
    _register_five_ten_crop_kernel_internal,
    _register_kernel_internal,
)

_XYXY = BoundingBoxFormat.XYXY
_XYXYXYXY = BoundingBoxFormat.XYXYXYXY


def _check_interpolation(interpolation) -> InterpolationMode:
    if isinstance(interpolation, int):
        interpolation = _interpolation_modes_from_int(interpolation)
    elif isinstance(interpolation, str):
        interpolation = InterpolationMode(interpolation.lower())
    elif not isinstance(interpolation, InterpolationMode):
        raise ValueError(
            "Argument interpolation should be an `InterpolationMode` or a corresponding Pillow "
            f"integer constant, but got {interpolation}."
        )
    return interpolation


def _mask_as_image(kernel, mask: Tensor, *args, **kwargs) -> Tensor:
    """Run an image kernel on a mask, adding a channel dimension to a 2-D mask."""
    needs_squeeze = mask.ndim < 3
    if needs_squeeze:
        mask = mask.unsqueeze(0)
    output = kernel(mask, *args, **kwargs)
    if needs_squeeze:
        output = output.squeeze(0)
    return output


def _boxes_dispatch(kernel):
    """Adapt a ``(boxes, format, canvas_size, ..., clamping_mode)`` kernel to BoundingBoxes."""

    def dispatch(inpt, *args, **kwargs):
        output = kernel(inpt.as_subclass(Tensor), *args, format=inpt.format,
                        canvas_size=inpt.canvas_size, clamping_mode=inpt.clamping_mode, **kwargs)
        if isinstance(output, tuple):
            output, canvas_size = output
            return tv_tensors.wrap(output, like=inpt, canvas_size=canvas_size)
        return tv_tensors.wrap(output, like=inpt)

    return dispatch


def _keypoints_dispatch(kernel):
    def dispatch(inpt, *args, **kwargs):
        output = kernel(inpt.as_subclass(Tensor), *args, canvas_size=inpt.canvas_size, **kwargs)
        if isinstance(output, tuple):
            output, canvas_size = output
            return tv_tensors.wrap(output, like=inpt, canvas_size=canvas_size)
        return tv_tensors.wrap(output, like=inpt)

    return dispatch


def _drop(*names):
    """Wrap a kernel to ignore keyword arguments it does not take (e.g. ``fill`` for boxes)."""

    def deco(kernel):
        def wrapper(inpt, *args, **kwargs):
            for n in names:
                kwargs.pop(n, None)
            return kernel(inpt, *args, **kwargs)

        return wrapper

    return deco


# -- points: shared by boxes and keypoints ----------------------------------------------


def _boxes_to_points(boxes: Tensor, format) -> tuple[Tensor, bool, BoundingBoxFormat]:
    """The four corners ``(N, 4, 2)`` of boxes (float), and how to rebuild them."""
    rotated = tv_tensors.is_rotated_bounding_format(format)
    inter = _XYXYXYXY if rotated else _XYXY
    fl = boxes if boxes.is_floating_point() else boxes.float()
    b = convert_bounding_box_format(fl.clone(), old_format=format, new_format=inter)
    if rotated:
        pts = b.reshape(-1, 4, 2)
    else:
        b = b.reshape(-1, 4)
        pts = b[:, [[0, 1], [2, 1], [2, 3], [0, 3]]]
    return pts, rotated, inter


def _points_to_boxes(pts: Tensor, rotated: bool, inter, format, canvas_size, clamping_mode,
                     shape, dtype) -> Tensor:
    if rotated:
        out = _parallelogram_to_bounding_boxes(pts.reshape(-1, 8))
    else:
        out = ember.cat([pts.amin(dim=1), pts.amax(dim=1)], dim=1)
    out = clamp_bounding_boxes(out, format=inter, canvas_size=canvas_size,
                               clamping_mode=clamping_mode)
    out = convert_bounding_box_format(out, old_format=inter, new_format=format)
    return out.reshape(shape).to(dtype)


def _parallelogram_to_bounding_boxes(parallelogram: Tensor) -> Tensor:
    """The rectangle (as 8 coordinates) closest to a parallelogram, like torchvision's."""
    shape, dtype = parallelogram.shape, parallelogram.dtype
    need_cast = dtype not in (ember.float32, ember.float64)
    if need_cast:
        parallelogram = parallelogram.to(ember.float32)
    x1, y1, x2, y2, x3, y3, x4, y4 = parallelogram.unbind(-1)
    cx = (x1 + x3) / 2
    cy = (y1 + y3) / 2
    wp = ((x2 - x1) ** 2 + (y2 - y1) ** 2).sqrt()
    hp = ((x4 - x1) ** 2 + (y4 - y1) ** 2).sqrt()
    r12 = ember.atan2(y1 - y2, x2 - x1)
    r14 = ember.atan2(y1 - y4, x4 - x1)
    r_rad = r12 - r14
    sign = ember.where(r_rad > math.pi / 2, -1.0, 1.0)
    cos, sin = r_rad.cos(), r_rad.sin()
    w = ember.where(wp < hp, wp * sin, wp + hp * cos * sign)
    h = ember.where(wp > hp, hp * sin, hp + wp * cos * sign)
    r_rad = ember.where(hp > wp, r14 + math.pi / 2, r12)
    cos, sin = r_rad.cos(), r_rad.sin()
    out = ember.stack(
        (cx - w / 2 * cos - h / 2 * sin, cy - h / 2 * cos + w / 2 * sin,
         cx + w / 2 * cos - h / 2 * sin, cy - h / 2 * cos - w / 2 * sin,
         cx + w / 2 * cos + h / 2 * sin, cy + h / 2 * cos - w / 2 * sin,
         cx - w / 2 * cos + h / 2 * sin, cy + h / 2 * cos + w / 2 * sin),
        dim=-1,
    ).reshape(shape)
    return out.to(dtype) if need_cast else out


def _box_offsets(format, dx, dy) -> list:
    if format == _XYXYXYXY:
        return [dx, dy] * 4
    if format in (BoundingBoxFormat.XYWHR, BoundingBoxFormat.CXCYWHR):
        return [dx, dy, 0, 0, 0]
    if format == _XYXY:
        return [dx, dy, dx, dy]
    return [dx, dy, 0, 0]


# -- flips --------------------------------------------------------------------------------


def horizontal_flip(inpt):
    """Flip horizontally (images, videos, masks, boxes, keypoints)."""
    return _get_kernel(horizontal_flip, type(inpt))(inpt)


hflip = horizontal_flip


@_register_kernel_internal(horizontal_flip, Tensor)
@_register_kernel_internal(horizontal_flip, tv_tensors.Image)
def horizontal_flip_image(image: Tensor) -> Tensor:
    return _FT.hflip(image)


_register_kernel_internal(horizontal_flip, PIL.Image.Image)(_FP.hflip)


@_register_kernel_internal(horizontal_flip, tv_tensors.Mask)
def horizontal_flip_mask(mask: Tensor) -> Tensor:
    return horizontal_flip_image(mask)


@_register_kernel_internal(horizontal_flip, tv_tensors.Video)
def horizontal_flip_video(video: Tensor) -> Tensor:
    return horizontal_flip_image(video)


def horizontal_flip_keypoints(keypoints: Tensor, canvas_size) -> Tensor:
    shape = keypoints.shape
    keypoints = keypoints.clone().reshape(-1, 2)
    keypoints[..., 0] = -(keypoints[..., 0] - canvas_size[1] + 1)
    return keypoints.reshape(shape)


def horizontal_flip_bounding_boxes(bounding_boxes: Tensor, format, canvas_size) -> Tensor:
    shape = bounding_boxes.shape
    width = canvas_size[1]
    k = {_XYXYXYXY: 8, BoundingBoxFormat.XYWHR: 5, BoundingBoxFormat.CXCYWHR: 5}.get(format, 4)
    b = bounding_boxes.clone().reshape(-1, k)
    if format == _XYXY:
        b[:, [2, 0]] = -(b[:, [0, 2]] - width)
    elif format == BoundingBoxFormat.XYWH:
        b[:, 0] = -(b[:, 0] + b[:, 2] - width)
    elif format == BoundingBoxFormat.CXCYWH:
        b[:, 0] = -(b[:, 0] - width)
    elif format == _XYXYXYXY:
        b[:, 0::2] = -(b[:, 0::2] - width)
        b = b[:, [2, 3, 0, 1, 6, 7, 4, 5]]
    elif format == BoundingBoxFormat.XYWHR:
        angle_rad = b[:, 4] * math.pi / 180
        b[:, 0] = -(b[:, 0] + b[:, 2] * angle_rad.cos() - width)
        b[:, 1] = b[:, 1] - b[:, 2] * angle_rad.sin()
        b[:, 4] = -b[:, 4]
    else:
        b[:, 0] = -(b[:, 0] - width)
        b[:, 4] = -b[:, 4]
    return b.reshape(shape)


@_register_kernel_internal(horizontal_flip, tv_tensors.BoundingBoxes, tv_tensor_wrapper=False)
def _horizontal_flip_bounding_boxes_dispatch(inpt):
    output = horizontal_flip_bounding_boxes(inpt.as_subclass(Tensor), format=inpt.format,
                                            canvas_size=inpt.canvas_size)
    return tv_tensors.wrap(output, like=inpt)


_register_kernel_internal(horizontal_flip, tv_tensors.KeyPoints, tv_tensor_wrapper=False)(
    _keypoints_dispatch(horizontal_flip_keypoints)
)


def vertical_flip(inpt):
    """Flip vertically (images, videos, masks, boxes, keypoints)."""
    return _get_kernel(vertical_flip, type(inpt))(inpt)


vflip = vertical_flip


@_register_kernel_internal(vertical_flip, Tensor)
@_register_kernel_internal(vertical_flip, tv_tensors.Image)
def vertical_flip_image(image: Tensor) -> Tensor:
    return _FT.vflip(image)


_register_kernel_internal(vertical_flip, PIL.Image.Image)(_FP.vflip)


@_register_kernel_internal(vertical_flip, tv_tensors.Mask)
def vertical_flip_mask(mask: Tensor) -> Tensor:
    return vertical_flip_image(mask)


@_register_kernel_internal(vertical_flip, tv_tensors.Video)
def vertical_flip_video(video: Tensor) -> Tensor:
    return vertical_flip_image(video)


def vertical_flip_keypoints(keypoints: Tensor, canvas_size) -> Tensor:
    shape = keypoints.shape
    keypoints = keypoints.clone().reshape(-1, 2)
    keypoints[..., 1] = -(keypoints[..., 1] - canvas_size[0] + 1)
    return keypoints.reshape(shape)


def vertical_flip_bounding_boxes(bounding_boxes: Tensor, format, canvas_size) -> Tensor:
    shape = bounding_boxes.shape
    height = canvas_size[0]
    k = {_XYXYXYXY: 8, BoundingBoxFormat.XYWHR: 5, BoundingBoxFormat.CXCYWHR: 5}.get(format, 4)
    b = bounding_boxes.clone().reshape(-1, k)
    if format == _XYXY:
        b[:, [1, 3]] = -(b[:, [3, 1]] - height)
    elif format == BoundingBoxFormat.XYWH:
        b[:, 1] = -(b[:, 1] + b[:, 3] - height)
    elif format == BoundingBoxFormat.CXCYWH:
        b[:, 1] = -(b[:, 1] - height)
    elif format == _XYXYXYXY:
        b[:, 1::2] = -(b[:, 1::2] - height)
        b = b[:, [2, 3, 0, 1, 6, 7, 4, 5]]
    elif format == BoundingBoxFormat.XYWHR:
        angle_rad = b[:, 4] * math.pi / 180
        b[:, 1] = -(b[:, 1] - b[:, 2] * angle_rad.sin() - height)
        b[:, 0] = b[:, 0] + b[:, 2] * angle_rad.cos()
        b[:, 4] = -b[:, 4] + 180
    else:
        b[:, 1] = -(b[:, 1] - height)
        b[:, 4] = -b[:, 4] + 180
    return b.reshape(shape)


@_register_kernel_internal(vertical_flip, tv_tensors.BoundingBoxes, tv_tensor_wrapper=False)
def _vertical_flip_bounding_boxes_dispatch(inpt):
    output = vertical_flip_bounding_boxes(inpt.as_subclass(Tensor), format=inpt.format,
                                          canvas_size=inpt.canvas_size)
    return tv_tensors.wrap(output, like=inpt)


_register_kernel_internal(vertical_flip, tv_tensors.KeyPoints, tv_tensor_wrapper=False)(
    _keypoints_dispatch(vertical_flip_keypoints)
)


# -- resize -------------------------------------------------------------------------------


def _compute_resized_output_size(canvas_size, size, max_size=None) -> list[int]:
    if isinstance(size, int):
        size = [size]
    elif max_size is not None and size is not None and len(size) != 1:
        raise ValueError(
            "max_size should only be passed if size is None or specifies the length of the "
            "smaller edge, i.e. size should be an int or a sequence of length 1 in torchscript "
            "mode."
        )
    h, w = canvas_size
    if size is None:
        if not isinstance(max_size, int):
            raise ValueError(
                f"max_size must be an integer when size is None, but got {max_size} instead."
            )
        short, long = (w, h) if w <= h else (h, w)
        new_short, new_long = int(max_size * short / long), max_size
        new_w, new_h = (new_short, new_long) if w <= h else (new_long, new_short)
        return [new_h, new_w]
    return _F1._compute_resized_output_size((h, w), list(size), max_size)


def resize(inpt, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
    """Resize to ``size`` ((h, w), or the smaller edge; None with ``max_size`` for the longer)."""
    return _get_kernel(resize, type(inpt))(inpt, size=size, interpolation=interpolation,
                                           max_size=max_size, antialias=antialias)


@_register_kernel_internal(resize, Tensor)
@_register_kernel_internal(resize, tv_tensors.Image)
def resize_image(image: Tensor, size, interpolation=InterpolationMode.BILINEAR, max_size=None,
                 antialias=True) -> Tensor:
    interpolation = _check_interpolation(interpolation)
    antialias = False if antialias is None else antialias
    if interpolation in (InterpolationMode.BILINEAR, InterpolationMode.BICUBIC,
                         InterpolationMode.LANCZOS):
        if interpolation == InterpolationMode.LANCZOS and not antialias:
            raise ValueError("InterpolationMode.LANCZOS requires antialias=True")
    else:  # torchvision: antialias only applies to these modes
        antialias = False
    old_height, old_width = image.shape[-2:]
    new_height, new_width = _compute_resized_output_size((old_height, old_width), size=size,
                                                         max_size=max_size)
    if (new_height, new_width) == (old_height, old_width):
        return image
    if image.numel() == 0:
        return image.new_empty(tuple(image.shape[:-2]) + (new_height, new_width))
    # uint8 is resized natively (fixed point) on the CPU, in float32 on a GPU, as torchvision
    return _FT._interpolate_image(image, [new_height, new_width], interpolation.value,
                                  antialias, native_uint8=image.device.type == "cpu")


def _resize_image_pil(image, size, interpolation=InterpolationMode.BILINEAR, max_size=None):
    new_height, new_width = _compute_resized_output_size((image.height, image.width), size=size,
                                                         max_size=max_size)
    interpolation = _check_interpolation(interpolation)
    if (new_height, new_width) == (image.height, image.width):
        return image
    return image.resize((new_width, new_height), resample=pil_modes_mapping[interpolation])


@_register_kernel_internal(resize, PIL.Image.Image)
def __resize_image_pil_dispatch(image, size, interpolation=InterpolationMode.BILINEAR,
                                max_size=None, antialias=True):
    if antialias is False:
        warnings.warn(
            "Anti-alias option is always applied for PIL Image input. Argument antialias is "
            "ignored.",
            stacklevel=2,
        )
    return _resize_image_pil(image, size=size, interpolation=interpolation, max_size=max_size)


def resize_mask(mask: Tensor, size, interpolation=InterpolationMode.NEAREST,
                max_size=None) -> Tensor:
    interpolation = _check_interpolation(interpolation)
    if interpolation not in (InterpolationMode.NEAREST, InterpolationMode.NEAREST_EXACT):
        interpolation = InterpolationMode.NEAREST
    return _mask_as_image(resize_image, mask, size=size, interpolation=interpolation,
                          max_size=max_size)


@_register_kernel_internal(resize, tv_tensors.Mask, tv_tensor_wrapper=False)
def _resize_mask_dispatch(inpt, size, interpolation=InterpolationMode.NEAREST, max_size=None,
                          **kwargs):
    output = resize_mask(inpt.as_subclass(Tensor), size, interpolation=interpolation,
                         max_size=max_size)
    return tv_tensors.wrap(output, like=inpt)


@_register_kernel_internal(resize, tv_tensors.Video)
def resize_video(video: Tensor, size, interpolation=InterpolationMode.BILINEAR, max_size=None,
                 antialias=True) -> Tensor:
    return resize_image(video, size=size, interpolation=interpolation, max_size=max_size,
                        antialias=antialias)


def resize_keypoints(keypoints: Tensor, size, canvas_size, max_size=None):
    old_height, old_width = canvas_size
    new_height, new_width = _compute_resized_output_size(canvas_size, size=size,
                                                         max_size=max_size)
    if (new_height, new_width) == (old_height, old_width):
        return keypoints, canvas_size
    ratios = ember.tensor([new_width / old_width, new_height / old_height],
                          device=keypoints.device)
    return keypoints.mul(ratios).to(keypoints.dtype), (new_height, new_width)


@_register_kernel_internal(resize, tv_tensors.KeyPoints, tv_tensor_wrapper=False)
def _resize_keypoints_dispatch(inpt, size, max_size=None, **kwargs):
    output, canvas_size = resize_keypoints(inpt.as_subclass(Tensor), size=size,
                                           canvas_size=inpt.canvas_size, max_size=max_size)
    return tv_tensors.wrap(output, like=inpt, canvas_size=canvas_size)


def resize_bounding_boxes(bounding_boxes: Tensor, canvas_size, size, max_size=None,
                          format=_XYXY, clamping_mode="soft"):
    old_height, old_width = canvas_size
    new_height, new_width = _compute_resized_output_size(canvas_size, size=size,
                                                         max_size=max_size)
    if (new_height, new_width) == (old_height, old_width):
        return bounding_boxes, canvas_size
    w_ratio = new_width / old_width
    h_ratio = new_height / old_height
    if tv_tensors.is_rotated_bounding_format(format):
        pts, rotated, inter = _boxes_to_points(bounding_boxes, format)
        pts = pts * ember.tensor([w_ratio, h_ratio], dtype=pts.dtype, device=pts.device)
        out = _points_to_boxes(pts, rotated, inter, format, (new_height, new_width),
                               clamping_mode, bounding_boxes.shape, bounding_boxes.dtype)
        return out, (new_height, new_width)
    ratios = ember.tensor([w_ratio, h_ratio, w_ratio, h_ratio], device=bounding_boxes.device)
    return bounding_boxes.mul(ratios).to(bounding_boxes.dtype), (new_height, new_width)


@_register_kernel_internal(resize, tv_tensors.BoundingBoxes, tv_tensor_wrapper=False)
def _resize_bounding_boxes_dispatch(inpt, size, max_size=None, **kwargs):
    output, canvas_size = resize_bounding_boxes(
        inpt.as_subclass(Tensor), format=inpt.format, canvas_size=inpt.canvas_size, size=size,
        max_size=max_size, clamping_mode=inpt.clamping_mode)
    return tv_tensors.wrap(output, like=inpt, canvas_size=canvas_size)


# -- affine / rotate ----------------------------------------------------------------------


def _affine_parse_args(angle, translate, scale, shear, interpolation=InterpolationMode.NEAREST,
                       center=None):
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
    if not isinstance(interpolation, InterpolationMode):
        raise TypeError("Argument interpolation should be a InterpolationMode")
    angle = float(angle)
    translate = list(translate)
    if isinstance(shear, numbers.Number):
        shear = [shear, 0.0]
    shear = list(shear)
    if len(shear) == 1:
        shear = [shear[0], shear[0]]
    if len(shear) != 2:
        raise ValueError(f"Shear should be a sequence containing two values. Got {shear}")
    if center is not None:
        if not isinstance(center, (list, tuple)):
            raise TypeError("Argument center should be a sequence")
        center = [float(c) for c in center]
    return angle, translate, shear, center


def _fill_list(fill):
    if fill is None or isinstance(fill, (int, float)):
        return fill
    fill = [float(f) for f in fill]
    return fill[0] if len(fill) == 1 else fill


def affine(inpt, angle, translate, scale, shear, interpolation=InterpolationMode.NEAREST,
           fill=None, center=None):
    """Affine transform (rotation, translation, scale, shear) keeping the centre invariant."""
    return _get_kernel(affine, type(inpt))(
        inpt, angle=angle, translate=translate, scale=scale, shear=shear,
        interpolation=interpolation, fill=fill, center=center)


@_register_kernel_internal(affine, Tensor)
@_register_kernel_internal(affine, tv_tensors.Image)
def affine_image(image: Tensor, angle, translate, scale, shear,
                 interpolation=InterpolationMode.NEAREST, fill=None, center=None) -> Tensor:
    interpolation = _check_interpolation(interpolation)
    angle, translate, shear, center = _affine_parse_args(angle, translate, scale, shear,
                                                         interpolation, center)
    height, width = image.shape[-2:]
    center_f = [0.0, 0.0]
    if center is not None:
        center_f = [c - s * 0.5 for c, s in zip(center, [width, height])]
    translate_f = [float(t) for t in translate]
    matrix = _get_inverse_affine_matrix(center_f, angle, translate_f, scale, shear)
    if image.numel() == 0:
        return image.clone()
    return _FT.affine(image, matrix=matrix, interpolation=interpolation.value,
                      fill=_fill_list(fill))


@_register_kernel_internal(affine, PIL.Image.Image)
def _affine_image_pil(image, angle, translate, scale, shear,
                      interpolation=InterpolationMode.NEAREST, fill=None, center=None):
    interpolation = _check_interpolation(interpolation)
    angle, translate, shear, center = _affine_parse_args(angle, translate, scale, shear,
                                                         interpolation, center)
    if center is None:
        height, width = _get_size_image_pil(image)
        center = [width * 0.5, height * 0.5]
    matrix = _get_inverse_affine_matrix(center, angle, translate, scale, shear)
    return _FP.affine(image, matrix, interpolation=pil_modes_mapping[interpolation], fill=fill)


@_register_kernel_internal(affine, tv_tensors.Mask, tv_tensor_wrapper=False)
def _affine_mask_dispatch(inpt, angle, translate, scale, shear, fill=None, center=None,
                          **kwargs):
    output = affine_mask(inpt.as_subclass(Tensor), angle=angle, translate=translate,
                         scale=scale, shear=shear, fill=fill, center=center)
    return tv_tensors.wrap(output, like=inpt)


def affine_mask(mask: Tensor, angle, translate, scale, shear, fill=None, center=None) -> Tensor:
    return _mask_as_image(affine_image, mask, angle=angle, translate=translate, scale=scale,
                          shear=shear, interpolation=InterpolationMode.NEAREST, fill=fill,
                          center=center)


@_register_kernel_internal(affine, tv_tensors.Video)
def affine_video(video: Tensor, angle, translate, scale, shear,
                 interpolation=InterpolationMode.NEAREST, fill=None, center=None) -> Tensor:
    return affine_image(video, angle=angle, translate=translate, scale=scale, shear=shear,
                        interpolation=interpolation, fill=fill, center=center)


def _affine_points(points: Tensor, canvas_size, angle, translate, scale, shear, center, expand):
    """Map float points ``(..., 2)`` by the forward affine matrix; with ``expand``, shift them
    onto the enlarged canvas. Returns the points and the canvas size."""
    angle, translate, shear, center = _affine_parse_args(angle, translate, scale, shear,
                                                         InterpolationMode.NEAREST, center)
    height, width = canvas_size
    if center is None:
        center = [width * 0.5, height * 0.5]
    vec = _get_inverse_affine_matrix(center, angle, translate, scale, shear, inverted=False)
    mat = ember.tensor(vec, dtype=points.dtype, device=points.device).reshape(2, 3)
    out = points @ mat[:, :2].T + mat[:, 2]
    if expand:
        corners = ember.tensor([[0.0, 0.0], [0.0, float(height)], [float(width), float(height)],
                                [float(width), 0.0]], dtype=points.dtype, device=points.device)
        new_corners = corners @ mat[:, :2].T + mat[:, 2]
        out = out - new_corners.amin(dim=0)
        inv = _get_inverse_affine_matrix(center, angle, translate, scale, shear)
        new_width, new_height = _FT._compute_affine_output_size(inv, width, height)
        canvas_size = (new_height, new_width)
    return out, canvas_size


def _affine_bounding_boxes_with_expand(bounding_boxes: Tensor, format, canvas_size, angle,
                                       translate, scale, shear, center=None, expand=False,
                                       clamping_mode="soft"):
    if bounding_boxes.numel() == 0:
        return bounding_boxes, canvas_size
    pts, rotated, inter = _boxes_to_points(bounding_boxes, format)
    pts, canvas_size = _affine_points(pts, canvas_size, angle, translate, scale, shear, center,
                                      expand)
    out = _points_to_boxes(pts, rotated, inter, format, canvas_size, clamping_mode,
                           bounding_boxes.shape, bounding_boxes.dtype)
    return out, canvas_size


def affine_bounding_boxes(bounding_boxes: Tensor, format, canvas_size, angle, translate, scale,
                          shear, center=None, clamping_mode="soft") -> Tensor:
    return _affine_bounding_boxes_with_expand(
        bounding_boxes, format=format, canvas_size=canvas_size, angle=angle,
        translate=translate, scale=scale, shear=shear, center=center, expand=False,
        clamping_mode=clamping_mode)[0]


@_register_kernel_internal(affine, tv_tensors.BoundingBoxes, tv_tensor_wrapper=False)
def _affine_bounding_boxes_dispatch(inpt, angle, translate, scale, shear, center=None,
                                    **kwargs):
    output = affine_bounding_boxes(inpt.as_subclass(Tensor), format=inpt.format,
                                   canvas_size=inpt.canvas_size, angle=angle,
                                   translate=translate, scale=scale, shear=shear, center=center,
                                   clamping_mode=inpt.clamping_mode)
    return tv_tensors.wrap(output, like=inpt)


def _affine_keypoints_with_expand(keypoints: Tensor, canvas_size, angle, translate, scale, shear,
                                  center=None, expand=False):
    if keypoints.numel() == 0:
        return keypoints, canvas_size
    dtype, shape = keypoints.dtype, keypoints.shape
    pts = (keypoints if keypoints.is_floating_point() else keypoints.float()).reshape(-1, 2)
    pts, canvas_size = _affine_points(pts, canvas_size, angle, translate, scale, shear, center,
                                      expand)
    return pts.reshape(shape).to(dtype), canvas_size


def affine_keypoints(keypoints: Tensor, canvas_size, angle, translate, scale, shear,
                     center=None):
    return _affine_keypoints_with_expand(keypoints, canvas_size, angle, translate, scale, shear,
                                         center, expand=False)


@_register_kernel_internal(affine, tv_tensors.KeyPoints, tv_tensor_wrapper=False)
def _affine_keypoints_dispatch(inpt, angle, translate, scale, shear, center=None, **kwargs):
    output, canvas_size = affine_keypoints(inpt.as_subclass(Tensor), inpt.canvas_size, angle,
                                           translate, scale, shear, center)
    return tv_tensors.wrap(output, like=inpt, canvas_size=canvas_size)


def rotate(inpt, angle, interpolation=InterpolationMode.NEAREST, expand=False, center=None,
           fill=None):
    """Rotate by ``angle`` degrees counter-clockwise."""
    return _get_kernel(rotate, type(inpt))(inpt, angle=angle, interpolation=interpolation,
                                           expand=expand, fill=fill, center=center)


@_register_kernel_internal(rotate, Tensor)
@_register_kernel_internal(rotate, tv_tensors.Image)
def rotate_image(image: Tensor, angle, interpolation=InterpolationMode.NEAREST, expand=False,
                 center=None, fill=None) -> Tensor:
    angle = angle % 360
    if center is None:
        if angle == 0:
            return image.clone()
        if angle == 180:
            return ember.rot90(image, k=2, dims=(-2, -1))
        if expand or image.shape[-1] == image.shape[-2]:
            if angle == 90:
                return ember.rot90(image, k=1, dims=(-2, -1))
            if angle == 270:
                return ember.rot90(image, k=3, dims=(-2, -1))
    interpolation = _check_interpolation(interpolation)
    input_height, input_width = image.shape[-2:]
    center_f = [0.0, 0.0]
    if center is not None:
        center_f = [c - s * 0.5 for c, s in zip(center, [input_width, input_height])]
    matrix = _get_inverse_affine_matrix(center_f, -angle, [0.0, 0.0], 1.0, [0.0, 0.0])
    return _FT.rotate(image, matrix=matrix, interpolation=interpolation.value, expand=expand,
                      fill=_fill_list(fill))


@_register_kernel_internal(rotate, PIL.Image.Image)
def _rotate_image_pil(image, angle, interpolation=InterpolationMode.NEAREST, expand=False,
                      center=None, fill=None):
    interpolation = _check_interpolation(interpolation)
    return _FP.rotate(image, angle, interpolation=pil_modes_mapping[interpolation],
                      expand=expand, fill=fill, center=center)


def rotate_mask(mask: Tensor, angle, expand=False, center=None, fill=None) -> Tensor:
    return _mask_as_image(rotate_image, mask, angle=angle, expand=expand,
                          interpolation=InterpolationMode.NEAREST, fill=fill, center=center)


@_register_kernel_internal(rotate, tv_tensors.Mask, tv_tensor_wrapper=False)
def _rotate_mask_dispatch(inpt, angle, expand=False, center=None, fill=None, **kwargs):
    output = rotate_mask(inpt.as_subclass(Tensor), angle=angle, expand=expand, fill=fill,
                         center=center)
    return tv_tensors.wrap(output, like=inpt)


@_register_kernel_internal(rotate, tv_tensors.Video)
def rotate_video(video: Tensor, angle, interpolation=InterpolationMode.NEAREST, expand=False,
                 center=None, fill=None) -> Tensor:
    return rotate_image(video, angle, interpolation=interpolation, expand=expand, fill=fill,
                        center=center)


def rotate_bounding_boxes(bounding_boxes: Tensor, format, canvas_size, angle, expand=False,
                          center=None, clamping_mode="soft"):
    return _affine_bounding_boxes_with_expand(
        bounding_boxes, format=format, canvas_size=canvas_size, angle=-angle,
        translate=[0.0, 0.0], scale=1.0, shear=[0.0, 0.0], center=center, expand=expand,
        clamping_mode=clamping_mode)


@_register_kernel_internal(rotate, tv_tensors.BoundingBoxes, tv_tensor_wrapper=False)
def _rotate_bounding_boxes_dispatch(inpt, angle, expand=False, center=None, **kwargs):
    output, canvas_size = rotate_bounding_boxes(
        inpt.as_subclass(Tensor), format=inpt.format, canvas_size=inpt.canvas_size, angle=angle,
        expand=expand, center=center, clamping_mode=inpt.clamping_mode)
    return tv_tensors.wrap(output, like=inpt, canvas_size=canvas_size)


def rotate_keypoints(keypoints: Tensor, canvas_size, angle, expand=False, center=None):
    return _affine_keypoints_with_expand(keypoints, canvas_size, -angle, [0.0, 0.0], 1.0,
                                         [0.0, 0.0], center, expand)


@_register_kernel_internal(rotate, tv_tensors.KeyPoints, tv_tensor_wrapper=False)
def _rotate_keypoints_dispatch(inpt, angle, expand=False, center=None, **kwargs):
    output, canvas_size = rotate_keypoints(inpt.as_subclass(Tensor), inpt.canvas_size, angle,
                                           expand=expand, center=center)
    return tv_tensors.wrap(output, like=inpt, canvas_size=canvas_size)


# -- pad / crop ---------------------------------------------------------------------------


def _parse_pad_padding(padding) -> list[int]:
    """Padding as ``[left, right, top, bottom]``."""
    if isinstance(padding, int):
        return [padding] * 4
    if isinstance(padding, (tuple, list)):
        if len(padding) == 1:
            return [padding[0]] * 4
        if len(padding) == 2:
            return [padding[0], padding[0], padding[1], padding[1]]
        if len(padding) == 4:
            return [padding[0], padding[2], padding[1], padding[3]]
        raise ValueError(
            "Padding must be an int or a 1, 2, or 4 element tuple or list. Found "
            f"{len(padding)}"
        )
    raise TypeError(
        f"`padding` should be an integer or tuple or list of integers, but got {padding}"
    )


def pad(inpt, padding, fill=None, padding_mode: str = "constant"):
    """Pad the sides (``padding``: int, [lr, tb] or [left, top, right, bottom])."""
    return _get_kernel(pad, type(inpt))(inpt, padding=padding, fill=fill,
                                        padding_mode=padding_mode)


def _pad_array(image: Tensor, lrtb: list[int], fill, padding_mode: str) -> Tensor:
    a = api.array(image)
    squeeze = a.ndim == 2
    if squeeze:
        a = a[None]
    if padding_mode == "constant":
        if isinstance(fill, list):
            xp = api.array_module(image)
            out = _FT._pad_array(a, lrtb, "constant", 0)
            mask = _FT._pad_array(xp.zeros(a.shape[-2:], dtype=bool), lrtb, "constant", True)
            vals = xp.asarray(fill, dtype=np.float64).reshape(-1, 1, 1)
            if not _FT._is_float(a.dtype):
                vals = xp.trunc(vals)
            filled = xp.broadcast_to(vals.astype(a.dtype), out.shape[-3:])
            out = xp.where(mask, filled, out)
        else:
            value = float(fill)
            if not _FT._is_float(a.dtype):
                value = int(value)
            out = _FT._pad_array(a, lrtb, "constant", value)
    else:
        mode = {"edge": "edge", "reflect": "reflect", "symmetric": "symmetric"}[padding_mode]
        out = _FT._pad_array(a, lrtb, mode)
    if squeeze:
        out = out[0]
    return api.wrap(out, image.device)


@_register_kernel_internal(pad, Tensor)
@_register_kernel_internal(pad, tv_tensors.Image)
def pad_image(image: Tensor, padding, fill=None, padding_mode: str = "constant") -> Tensor:
    lrtb = _parse_pad_padding(padding)
    if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError(
            "`padding_mode` should be either `'constant'`, `'edge'`, `'reflect'` or "
            f"`'symmetric'`, but got `'{padding_mode}'`."
        )
    if fill is None:
        fill = 0
    if isinstance(fill, (int, float)):
        return _pad_array(image, lrtb, fill, padding_mode)
    if len(fill) == 1:
        return _pad_array(image, lrtb, fill[0], padding_mode)
    num_channels = image.shape[-3]
    if len(fill) != num_channels:
        raise ValueError(
            f"Expected padding fill to have length {num_channels} (channels), but got "
            f"{len(fill)}"
        )
    return _pad_array(image, lrtb, [float(f) for f in fill], padding_mode)


@_register_kernel_internal(pad, PIL.Image.Image)
def _pad_image_pil(image, padding, fill=0, padding_mode="constant"):
    return _FP.pad(image, padding=padding, fill=0 if fill is None else fill,
                   padding_mode=padding_mode)


@_register_kernel_internal(pad, tv_tensors.Mask)
def pad_mask(mask: Tensor, padding, fill=None, padding_mode: str = "constant") -> Tensor:
    if fill is None:
        fill = 0
    if isinstance(fill, (tuple, list)):
        raise ValueError("Non-scalar fill value is not supported")
    return _mask_as_image(pad_image, mask, padding=padding, fill=fill, padding_mode=padding_mode)


@_register_kernel_internal(pad, tv_tensors.Video)
def pad_video(video: Tensor, padding, fill=None, padding_mode: str = "constant") -> Tensor:
    return pad_image(video, padding, fill=fill, padding_mode=padding_mode)


def pad_keypoints(keypoints: Tensor, canvas_size, padding, padding_mode: str = "constant"):
    if padding_mode not in ["constant"]:
        raise ValueError(
            f"Padding mode '{padding_mode}' is not supported with KeyPoints (supported modes "
            "are constant)"
        )
    left, right, top, bottom = _parse_pad_padding(padding)
    shift = ember.tensor([left, top], dtype=keypoints.dtype, device=keypoints.device)
    canvas_size = (canvas_size[0] + top + bottom, canvas_size[1] + left + right)
    return keypoints + shift, canvas_size


@_register_kernel_internal(pad, tv_tensors.KeyPoints, tv_tensor_wrapper=False)
def _pad_keypoints_dispatch(keypoints, padding, padding_mode="constant", **kwargs):
    output, canvas_size = pad_keypoints(keypoints.as_subclass(Tensor), keypoints.canvas_size,
                                        padding, padding_mode)
    return tv_tensors.wrap(output, like=keypoints, canvas_size=canvas_size)


def pad_bounding_boxes(bounding_boxes: Tensor, format, canvas_size, padding,
                       padding_mode: str = "constant", clamping_mode="soft"):
    if padding_mode not in ["constant"]:
        raise ValueError(f"Padding mode '{padding_mode}' is not supported with bounding boxes")
    left, right, top, bottom = _parse_pad_padding(padding)
    shift = ember.tensor(_box_offsets(format, left, top), dtype=bounding_boxes.dtype,
                         device=bounding_boxes.device)
    bounding_boxes = bounding_boxes + shift
    canvas_size = (canvas_size[0] + top + bottom, canvas_size[1] + left + right)
    return (clamp_bounding_boxes(bounding_boxes, format=format, canvas_size=canvas_size,
                                 clamping_mode=clamping_mode), canvas_size)


@_register_kernel_internal(pad, tv_tensors.BoundingBoxes, tv_tensor_wrapper=False)
def _pad_bounding_boxes_dispatch(inpt, padding, padding_mode="constant", **kwargs):
    output, canvas_size = pad_bounding_boxes(
        inpt.as_subclass(Tensor), format=inpt.format, canvas_size=inpt.canvas_size,
        padding=padding, padding_mode=padding_mode, clamping_mode=inpt.clamping_mode)
    return tv_tensors.wrap(output, like=inpt, canvas_size=canvas_size)


def crop(inpt, top: int, left: int, height: int, width: int):
    """Crop the box at (top, left) of size (height, width); zero-padded outside."""
    return _get_kernel(crop, type(inpt))(inpt, top=top, left=left, height=height, width=width)


@_register_kernel_internal(crop, Tensor)
@_register_kernel_internal(crop, tv_tensors.Image)
def crop_image(image: Tensor, top: int, left: int, height: int, width: int) -> Tensor:
    return _FT.crop(image, top, left, height, width)


_register_kernel_internal(crop, PIL.Image.Image)(_FP.crop)


@_register_kernel_internal(crop, tv_tensors.Mask)
def crop_mask(mask: Tensor, top: int, left: int, height: int, width: int) -> Tensor:
    return _mask_as_image(crop_image, mask, top, left, height, width)


@_register_kernel_internal(crop, tv_tensors.Video)
def crop_video(video: Tensor, top: int, left: int, height: int, width: int) -> Tensor:
    return crop_image(video, top, left, height, width)


def crop_keypoints(keypoints: Tensor, top: int, left: int, height: int, width: int):
    shift = ember.tensor([left, top], dtype=keypoints.dtype, device=keypoints.device)
    return keypoints - shift, (height, width)


@_register_kernel_internal(crop, tv_tensors.KeyPoints, tv_tensor_wrapper=False)
def _crop_keypoints_dispatch(inpt, top: int, left: int, height: int, width: int):
    output, canvas_size = crop_keypoints(inpt.as_subclass(Tensor), top, left, height, width)
    return tv_tensors.wrap(output, like=inpt, canvas_size=canvas_size)


def crop_bounding_boxes(bounding_boxes: Tensor, format, top: int, left: int, height: int,
                        width: int, clamping_mode="soft"):
    shift = ember.tensor(_box_offsets(format, left, top), dtype=bounding_boxes.dtype,
                         device=bounding_boxes.device)
    bounding_boxes = bounding_boxes - shift
    canvas_size = (height, width)
    if format == _XYXYXYXY:
        bounding_boxes = _parallelogram_to_bounding_boxes(bounding_boxes)
    return (clamp_bounding_boxes(bounding_boxes, format=format, canvas_size=canvas_size,
                                 clamping_mode=clamping_mode), canvas_size)


@_register_kernel_internal(crop, tv_tensors.BoundingBoxes, tv_tensor_wrapper=False)
def _crop_bounding_boxes_dispatch(inpt, top: int, left: int, height: int, width: int):
    output, canvas_size = crop_bounding_boxes(inpt.as_subclass(Tensor), format=inpt.format,
                                              top=top, left=left, height=height, width=width,
                                              clamping_mode=inpt.clamping_mode)
    return tv_tensors.wrap(output, like=inpt, canvas_size=canvas_size)


def _center_crop_parse_output_size(output_size) -> list[int]:
    if isinstance(output_size, numbers.Number):
        s = int(output_size)
        return [s, s]
    elif isinstance(output_size, (tuple, list)) and len(output_size) == 1:
        return [output_size[0], output_size[0]]
    return list(output_size)


def _center_crop_compute_crop_anchor(crop_height, crop_width, image_height, image_width):
    crop_top = int(round((image_height - crop_height) / 2.0))
    crop_left = int(round((image_width - crop_width) / 2.0))
    return crop_top, crop_left


def center_crop(inpt, output_size):
    """Crop the centre (zero-padded when larger than the input)."""
    return _get_kernel(center_crop, type(inpt))(inpt, output_size=output_size)


@_register_kernel_internal(center_crop, Tensor)
@_register_kernel_internal(center_crop, tv_tensors.Image)
def center_crop_image(image: Tensor, output_size) -> Tensor:
    crop_height, crop_width = _center_crop_parse_output_size(output_size)
    image_height, image_width = image.shape[-2:]
    if crop_height > image_height or crop_width > image_width:
        padding_ltrb = [
            (crop_width - image_width) // 2 if crop_width > image_width else 0,
            (crop_height - image_height) // 2 if crop_height > image_height else 0,
            (crop_width - image_width + 1) // 2 if crop_width > image_width else 0,
            (crop_height - image_height + 1) // 2 if crop_height > image_height else 0,
        ]
        image = pad_image(image, padding_ltrb, fill=0)
        image_height, image_width = image.shape[-2:]
        if crop_width == image_width and crop_height == image_height:
            return image
    crop_top, crop_left = _center_crop_compute_crop_anchor(crop_height, crop_width,
                                                           image_height, image_width)
    return crop_image(image, crop_top, crop_left, crop_height, crop_width)


@_register_kernel_internal(center_crop, PIL.Image.Image)
def _center_crop_image_pil(image, output_size):
    return _F1.center_crop(image, _center_crop_parse_output_size(output_size))


@_register_kernel_internal(center_crop, tv_tensors.Mask)
def center_crop_mask(mask: Tensor, output_size) -> Tensor:
    return _mask_as_image(center_crop_image, mask, output_size)


@_register_kernel_internal(center_crop, tv_tensors.Video)
def center_crop_video(video: Tensor, output_size) -> Tensor:
    return center_crop_image(video, output_size)


def center_crop_bounding_boxes(bounding_boxes: Tensor, format, canvas_size, output_size,
                               clamping_mode="soft"):
    crop_height, crop_width = _center_crop_parse_output_size(output_size)
    crop_top, crop_left = _center_crop_compute_crop_anchor(crop_height, crop_width, *canvas_size)
    return crop_bounding_boxes(bounding_boxes, format, top=crop_top, left=crop_left,
                               height=crop_height, width=crop_width, clamping_mode=clamping_mode)


_register_kernel_internal(center_crop, tv_tensors.BoundingBoxes, tv_tensor_wrapper=False)(
    _boxes_dispatch(center_crop_bounding_boxes)
)


def center_crop_keypoints(keypoints: Tensor, canvas_size, output_size):
    crop_height, crop_width = _center_crop_parse_output_size(output_size)
    crop_top, crop_left = _center_crop_compute_crop_anchor(crop_height, crop_width, *canvas_size)
    return crop_keypoints(keypoints, top=crop_top, left=crop_left, height=crop_height,
                          width=crop_width)


_register_kernel_internal(center_crop, tv_tensors.KeyPoints, tv_tensor_wrapper=False)(
    _keypoints_dispatch(center_crop_keypoints)
)


def resized_crop(inpt, top: int, left: int, height: int, width: int, size,
                 interpolation=InterpolationMode.BILINEAR, antialias=True):
    """Crop then resize."""
    return _get_kernel(resized_crop, type(inpt))(
        inpt, top=top, left=left, height=height, width=width, size=size,
        interpolation=interpolation, antialias=antialias)


@_register_kernel_internal(resized_crop, Tensor)
@_register_kernel_internal(resized_crop, tv_tensors.Image)
def resized_crop_image(image: Tensor, top, left, height, width, size,
                       interpolation=InterpolationMode.BILINEAR, antialias=True) -> Tensor:
    image = crop_image(image, top, left, height, width)
    return resize_image(image, size, interpolation=interpolation, antialias=antialias)


@_register_kernel_internal(resized_crop, PIL.Image.Image)
def _resized_crop_image_pil_dispatch(image, top, left, height, width, size,
                                     interpolation=InterpolationMode.BILINEAR, antialias=True):
    if antialias is False:
        warnings.warn(
            "Anti-alias option is always applied for PIL Image input. Argument antialias is "
            "ignored.",
            stacklevel=2,
        )
    image = _FP.crop(image, top, left, height, width)
    return _resize_image_pil(image, size, interpolation=interpolation)


def resized_crop_mask(mask: Tensor, top, left, height, width, size) -> Tensor:
    mask = crop_mask(mask, top, left, height, width)
    return resize_mask(mask, size)


@_register_kernel_internal(resized_crop, tv_tensors.Mask, tv_tensor_wrapper=False)
def _resized_crop_mask_dispatch(inpt, top, left, height, width, size, **kwargs):
    output = resized_crop_mask(inpt.as_subclass(Tensor), top, left, height, width, size)
    return tv_tensors.wrap(output, like=inpt)


@_register_kernel_internal(resized_crop, tv_tensors.Video)
def resized_crop_video(video: Tensor, top, left, height, width, size,
                       interpolation=InterpolationMode.BILINEAR, antialias=True) -> Tensor:
    return resized_crop_image(video, top, left, height, width, size, interpolation=interpolation,
                              antialias=antialias)


def resized_crop_bounding_boxes(bounding_boxes: Tensor, format, top, left, height, width, size,
                                clamping_mode="soft"):
    bounding_boxes, canvas_size = crop_bounding_boxes(bounding_boxes, format, top, left, height,
                                                      width, clamping_mode=clamping_mode)
    return resize_bounding_boxes(bounding_boxes, format=format, canvas_size=canvas_size,
                                 size=size, clamping_mode=clamping_mode)


@_register_kernel_internal(resized_crop, tv_tensors.BoundingBoxes, tv_tensor_wrapper=False)
def _resized_crop_bounding_boxes_dispatch(inpt, top, left, height, width, size, **kwargs):
    output, canvas_size = resized_crop_bounding_boxes(
        inpt.as_subclass(Tensor), format=inpt.format, top=top, left=left, height=height,
        width=width, size=size, clamping_mode=inpt.clamping_mode)
    return tv_tensors.wrap(output, like=inpt, canvas_size=canvas_size)


def resized_crop_keypoints(keypoints: Tensor, top, left, height, width, size):
    keypoints, canvas_size = crop_keypoints(keypoints, top, left, height, width)
    return resize_keypoints(keypoints, size=size, canvas_size=canvas_size)


@_register_kernel_internal(resized_crop, tv_tensors.KeyPoints, tv_tensor_wrapper=False)
def _resized_crop_keypoints_dispatch(inpt, top, left, height, width, size, **kwargs):
    output, canvas_size = resized_crop_keypoints(inpt.as_subclass(Tensor), top, left, height,
                                                 width, size)
    return tv_tensors.wrap(output, like=inpt, canvas_size=canvas_size)


# -- five / ten crop ----------------------------------------------------------------------


def _parse_five_crop_size(size) -> list[int]:
    if isinstance(size, numbers.Number):
        s = int(size)
        size = [s, s]
    elif isinstance(size, (tuple, list)) and len(size) == 1:
        size = [size[0], size[0]]
    if len(size) != 2:
        raise ValueError("Please provide only two dimensions (h, w) for size.")
    return list(size)


def five_crop(inpt, size):
    """The four corner crops and the central crop."""
    return _get_kernel(five_crop, type(inpt))(inpt, size=size)


@_register_five_ten_crop_kernel_internal(five_crop, Tensor)
@_register_five_ten_crop_kernel_internal(five_crop, tv_tensors.Image)
def five_crop_image(image: Tensor, size):
    crop_height, crop_width = _parse_five_crop_size(size)
    image_height, image_width = image.shape[-2:]
    if crop_width > image_width or crop_height > image_height:
        raise ValueError(
            f"Requested crop size {size} is bigger than input size "
            f"{(image_height, image_width)}"
        )
    tl = crop_image(image, 0, 0, crop_height, crop_width)
    tr = crop_image(image, 0, image_width - crop_width, crop_height, crop_width)
    bl = crop_image(image, image_height - crop_height, 0, crop_height, crop_width)
    br = crop_image(image, image_height - crop_height, image_width - crop_width, crop_height,
                    crop_width)
    center = center_crop_image(image, [crop_height, crop_width])
    return tl, tr, bl, br, center


@_register_five_ten_crop_kernel_internal(five_crop, PIL.Image.Image)
def _five_crop_image_pil(image, size):
    return _F1.five_crop(image, _parse_five_crop_size(size))


@_register_five_ten_crop_kernel_internal(five_crop, tv_tensors.Video)
def five_crop_video(video: Tensor, size):
    return five_crop_image(video, size)


def ten_crop(inpt, size, vertical_flip: bool = False):
    """``five_crop`` of the input and of its flipped version."""
    return _get_kernel(ten_crop, type(inpt))(inpt, size=size, vertical_flip=vertical_flip)


@_register_five_ten_crop_kernel_internal(ten_crop, Tensor)
@_register_five_ten_crop_kernel_internal(ten_crop, tv_tensors.Image)
def ten_crop_image(image: Tensor, size, vertical_flip: bool = False):
    non_flipped = five_crop_image(image, size)
    flipped_image = vertical_flip_image(image) if vertical_flip else horizontal_flip_image(image)
    return non_flipped + five_crop_image(flipped_image, size)


@_register_five_ten_crop_kernel_internal(ten_crop, PIL.Image.Image)
def _ten_crop_image_pil(image, size, vertical_flip: bool = False):
    return _F1.ten_crop(image, _parse_five_crop_size(size), vertical_flip=vertical_flip)


@_register_five_ten_crop_kernel_internal(ten_crop, tv_tensors.Video)
def ten_crop_video(video: Tensor, size, vertical_flip: bool = False):
    return ten_crop_image(video, size, vertical_flip=vertical_flip)


# -- perspective / elastic ----------------------------------------------------------------


def _perspective_coefficients(startpoints, endpoints, coefficients) -> list[float]:
    if coefficients is not None:
        if startpoints is not None and endpoints is not None:
            raise ValueError(
                "The startpoints/endpoints and the coefficients shouldn't be defined "
                "concurrently."
            )
        elif len(coefficients) != 8:
            raise ValueError("Argument coefficients should have 8 float values")
        return list(coefficients)
    elif startpoints is not None and endpoints is not None:
        return _get_perspective_coeffs(startpoints, endpoints)
    raise ValueError(
        "Either the startpoints/endpoints or the coefficients must have non `None` values."
    )


def perspective(inpt, startpoints, endpoints, interpolation=InterpolationMode.BILINEAR,
                fill=None, coefficients=None):
    """Perspective transform (by corner correspondences or the 8 coefficients)."""
    return _get_kernel(perspective, type(inpt))(
        inpt, startpoints=startpoints, endpoints=endpoints, interpolation=interpolation,
        fill=fill, coefficients=coefficients)


@_register_kernel_internal(perspective, Tensor)
@_register_kernel_internal(perspective, tv_tensors.Image)
def perspective_image(image: Tensor, startpoints, endpoints,
                      interpolation=InterpolationMode.BILINEAR, fill=None,
                      coefficients=None) -> Tensor:
    coeffs = _perspective_coefficients(startpoints, endpoints, coefficients)
    interpolation = _check_interpolation(interpolation)
    if image.numel() == 0:
        return image.clone()
    return _FT.perspective(image, coeffs, interpolation=interpolation.value,
                           fill=_fill_list(fill))


@_register_kernel_internal(perspective, PIL.Image.Image)
def _perspective_image_pil(image, startpoints, endpoints,
                           interpolation=InterpolationMode.BILINEAR, fill=None,
                           coefficients=None):
    coeffs = _perspective_coefficients(startpoints, endpoints, coefficients)
    interpolation = _check_interpolation(interpolation)
    return _FP.perspective(image, coeffs, interpolation=pil_modes_mapping[interpolation],
                           fill=fill)


def perspective_mask(mask: Tensor, startpoints, endpoints, fill=None,
                     coefficients=None) -> Tensor:
    return _mask_as_image(perspective_image, mask, startpoints, endpoints,
                          interpolation=InterpolationMode.NEAREST, fill=fill,
                          coefficients=coefficients)


@_register_kernel_internal(perspective, tv_tensors.Mask, tv_tensor_wrapper=False)
def _perspective_mask_dispatch(inpt, startpoints, endpoints, fill=None, coefficients=None,
                               **kwargs):
    output = perspective_mask(inpt.as_subclass(Tensor), startpoints, endpoints, fill=fill,
                              coefficients=coefficients)
    return tv_tensors.wrap(output, like=inpt)


@_register_kernel_internal(perspective, tv_tensors.Video)
def perspective_video(video: Tensor, startpoints, endpoints,
                      interpolation=InterpolationMode.BILINEAR, fill=None,
                      coefficients=None) -> Tensor:
    return perspective_image(video, startpoints, endpoints, interpolation=interpolation,
                             fill=fill, coefficients=coefficients)


def _perspective_points(points: Tensor, coeffs: list[float], what: str) -> Tensor:
    """Map points ``(M, 2)`` forward through the perspective (the inverse of the coeffs)."""
    c = coeffs
    denom = c[0] * c[4] - c[1] * c[3]
    if denom == 0:
        raise RuntimeError(
            f"Provided perspective_coeffs {coeffs} can not be inverted to transform {what}. "
            f"Denominator is zero, denom={denom}"
        )
    inv = [
        (c[4] - c[5] * c[7]) / denom,
        (-c[1] + c[2] * c[7]) / denom,
        (c[1] * c[5] - c[2] * c[4]) / denom,
        (-c[3] + c[5] * c[6]) / denom,
        (c[0] - c[2] * c[6]) / denom,
        (-c[0] * c[5] + c[2] * c[3]) / denom,
        (-c[4] * c[6] + c[3] * c[7]) / denom,
        (-c[0] * c[7] + c[1] * c[6]) / denom,
    ]
    theta1 = ember.tensor([inv[0:3], inv[3:6]], dtype=points.dtype, device=points.device)
    theta2 = ember.tensor([[inv[6], inv[7], 1.0]], dtype=points.dtype, device=points.device)
    ones = ember.ones(points.shape[0], 1, dtype=points.dtype, device=points.device)
    homog = ember.cat([points, ones], dim=-1)
    return (homog @ theta1.T) / (homog @ theta2.T)


def perspective_bounding_boxes(bounding_boxes: Tensor, format, canvas_size, startpoints,
                               endpoints, coefficients=None, clamping_mode="soft") -> Tensor:
    if bounding_boxes.numel() == 0:
        return bounding_boxes
    coeffs = _perspective_coefficients(startpoints, endpoints, coefficients)
    pts, rotated, inter = _boxes_to_points(bounding_boxes, format)
    n = pts.shape[0]
    pts = _perspective_points(pts.reshape(-1, 2), coeffs, "bounding boxes").reshape(n, 4, 2)
    return _points_to_boxes(pts, rotated, inter, format, canvas_size, clamping_mode,
                            bounding_boxes.shape, bounding_boxes.dtype)


_register_kernel_internal(perspective, tv_tensors.BoundingBoxes, tv_tensor_wrapper=False)(
    _drop("interpolation", "fill")(_boxes_dispatch(perspective_bounding_boxes))
)


def perspective_keypoints(keypoints: Tensor, canvas_size, startpoints, endpoints,
                          coefficients=None):
    if keypoints.numel() == 0:
        return keypoints
    coeffs = _perspective_coefficients(startpoints, endpoints, coefficients)
    shape, dtype = keypoints.shape, keypoints.dtype
    pts = (keypoints if keypoints.is_floating_point() else keypoints.float()).reshape(-1, 2)
    return _perspective_points(pts, coeffs, "keypoints").to(dtype).reshape(shape)


_register_kernel_internal(perspective, tv_tensors.KeyPoints, tv_tensor_wrapper=False)(
    _drop("interpolation", "fill")(_keypoints_dispatch(perspective_keypoints))
)


def elastic(inpt, displacement, interpolation=InterpolationMode.BILINEAR, fill=None):
    """Warp by a displacement field ``(1, H, W, 2)`` in normalised coordinates."""
    return _get_kernel(elastic, type(inpt))(inpt, displacement=displacement,
                                            interpolation=interpolation, fill=fill)


elastic_transform = elastic


def _check_displacement(displacement, canvas_size):
    expected_shape = (1, canvas_size[0], canvas_size[1], 2)
    if not isinstance(displacement, Tensor):
        raise TypeError("Argument displacement should be a Tensor")
    elif tuple(displacement.shape) != expected_shape:
        raise ValueError(
            f"Argument displacement shape should be {expected_shape}, but given "
            f"{displacement.shape}"
        )


@_register_kernel_internal(elastic, Tensor)
@_register_kernel_internal(elastic, tv_tensors.Image)
def elastic_image(image: Tensor, displacement, interpolation=InterpolationMode.BILINEAR,
                  fill=None) -> Tensor:
    _check_displacement(displacement, tuple(image.shape[-2:]))
    interpolation = _check_interpolation(interpolation)
    if image.numel() == 0:
        return image.clone()
    if isinstance(displacement, tv_tensors.TVTensor):
        displacement = displacement.as_subclass(Tensor)
    return _FT.elastic_transform(image, displacement, interpolation=interpolation.value,
                                 fill=_fill_list(fill))


@_register_kernel_internal(elastic, PIL.Image.Image)
def _elastic_image_pil(image, displacement, interpolation=InterpolationMode.BILINEAR, fill=None):
    from ._type_conversion import pil_to_tensor, to_pil_image

    t_img = pil_to_tensor(image)
    output = elastic_image(t_img, displacement, interpolation=interpolation, fill=fill)
    return to_pil_image(output, mode=image.mode)


def elastic_mask(mask: Tensor, displacement, fill=None) -> Tensor:
    return _mask_as_image(elastic_image, mask, displacement=displacement,
                          interpolation=InterpolationMode.NEAREST, fill=fill)


@_register_kernel_internal(elastic, tv_tensors.Mask, tv_tensor_wrapper=False)
def _elastic_mask_dispatch(inpt, displacement, fill=None, **kwargs):
    output = elastic_mask(inpt.as_subclass(Tensor), displacement=displacement, fill=fill)
    return tv_tensors.wrap(output, like=inpt)


@_register_kernel_internal(elastic, tv_tensors.Video)
def elastic_video(video: Tensor, displacement, interpolation=InterpolationMode.BILINEAR,
                  fill=None) -> Tensor:
    return elastic_image(video, displacement, interpolation=interpolation, fill=fill)


def _elastic_points(points: Tensor, canvas_size, displacement: Tensor, ceil: bool) -> Tensor:
    """Map points ``(M, 2)`` by the inverse grid (identity minus displacement), sampled at
    the integer pixel of each point (rounded up for boxes), as torchvision does."""
    dtype = points.dtype
    displacement = displacement.as_subclass(Tensor).to(dtype=dtype, device=points.device)
    h, w = canvas_size
    xs = ember.linspace((-w + 1) / w, (w - 1) / w, w, dtype=dtype, device=points.device)
    ys = ember.linspace((-h + 1) / h, (h - 1) / h, h, dtype=dtype, device=points.device)
    id_grid = ember.stack([xs.expand(h, w), ys.unsqueeze(-1).expand(h, w)], dim=-1)
    inv_grid = id_grid - displacement[0]
    if ceil and points.is_floating_point():
        points = points.ceil()
    index = points.to(dtype=ember.int64)
    index_x = index[:, 0].clamp(0, w - 1)
    index_y = index[:, 1].clamp(0, h - 1)
    t_size = ember.tensor([w, h], dtype=dtype, device=points.device)
    return (inv_grid[index_y, index_x, :] + 1) * (0.5 * t_size) - 0.5


def elastic_bounding_boxes(bounding_boxes: Tensor, format, canvas_size, displacement,
                           clamping_mode="soft") -> Tensor:
    _check_displacement(displacement, canvas_size)
    if bounding_boxes.numel() == 0:
        return bounding_boxes
    dtype = bounding_boxes.dtype if bounding_boxes.is_floating_point() else ember.float32
    if tv_tensors.is_rotated_bounding_format(format):
        inter = BoundingBoxFormat.CXCYWHR
        b = convert_bounding_box_format(bounding_boxes.clone().to(dtype), old_format=format,
                                        new_format=inter).reshape(-1, 5)
        centers = _elastic_points(b[:, :2].clone(), canvas_size, displacement, ceil=True)
        out = ember.cat([centers, b[:, 2:]], dim=1)
    else:
        inter = _XYXY
        b = convert_bounding_box_format(bounding_boxes.clone(), old_format=format,
                                        new_format=inter).reshape(-1, 4)
        pts = b[:, [[0, 1], [2, 1], [2, 3], [0, 3]]].reshape(-1, 2).to(dtype)
        pts = _elastic_points(pts, canvas_size, displacement, ceil=True).reshape(-1, 4, 2)
        out = ember.cat([pts.amin(dim=1), pts.amax(dim=1)], dim=1)
    out = out.to(bounding_boxes.dtype)
    out = clamp_bounding_boxes(out, format=inter, canvas_size=canvas_size,
                               clamping_mode=clamping_mode)
    return convert_bounding_box_format(out, old_format=inter,
                                       new_format=format).reshape(bounding_boxes.shape)


_register_kernel_internal(elastic, tv_tensors.BoundingBoxes, tv_tensor_wrapper=False)(
    _drop("interpolation", "fill")(_boxes_dispatch(elastic_bounding_boxes))
)


def elastic_keypoints(keypoints: Tensor, canvas_size, displacement) -> Tensor:
    _check_displacement(displacement, canvas_size)
    if keypoints.numel() == 0:
        return keypoints
    dtype = keypoints.dtype if keypoints.is_floating_point() else ember.float32
    shape = keypoints.shape
    pts = keypoints.reshape(-1, 2).to(dtype)
    out = _elastic_points(pts, canvas_size, displacement, ceil=False)
    return out.to(keypoints.dtype).reshape(shape)


_register_kernel_internal(elastic, tv_tensors.KeyPoints, tv_tensor_wrapper=False)(
    _drop("interpolation", "fill")(_keypoints_dispatch(elastic_keypoints))
)
