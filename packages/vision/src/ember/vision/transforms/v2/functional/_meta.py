"""Metadata functionals (sizes, channels, frames) and the bounding-box format kernels."""

from __future__ import annotations

import math

import numpy as np
import PIL.Image

import ember
from ember import Tensor
from ember.ops import api
from ember.vision import tv_tensors
from ember.vision.transforms import _functional_pil as _FP
from ember.vision.tv_tensors import BoundingBoxFormat

from ._utils import _get_kernel, _register_kernel_internal, is_pure_tensor


def get_dimensions(inpt) -> list[int]:
    """``[C, H, W]`` of an image or video."""
    return _get_kernel(get_dimensions, type(inpt))(inpt)


@_register_kernel_internal(get_dimensions, Tensor)
@_register_kernel_internal(get_dimensions, tv_tensors.Image, tv_tensor_wrapper=False)
def get_dimensions_image(image: Tensor) -> list[int]:
    chw = list(image.shape[-3:])
    ndims = len(chw)
    if ndims == 3:
        return chw
    elif ndims == 2:
        chw.insert(0, 1)
        return chw
    raise TypeError(f"Input tensor should have at least two dimensions, but got {ndims}")


_register_kernel_internal(get_dimensions, PIL.Image.Image)(_FP.get_dimensions)


@_register_kernel_internal(get_dimensions, tv_tensors.Video, tv_tensor_wrapper=False)
def get_dimensions_video(video: Tensor) -> list[int]:
    return get_dimensions_image(video)


def get_num_channels(inpt) -> int:
    """Number of channels of an image or video."""
    return _get_kernel(get_num_channels, type(inpt))(inpt)


@_register_kernel_internal(get_num_channels, Tensor)
@_register_kernel_internal(get_num_channels, tv_tensors.Image, tv_tensor_wrapper=False)
def get_num_channels_image(image: Tensor) -> int:
    chw = image.shape[-3:]
    ndims = len(chw)
    if ndims == 3:
        return chw[0]
    elif ndims == 2:
        return 1
    raise TypeError(f"Input tensor should have at least two dimensions, but got {ndims}")


_register_kernel_internal(get_num_channels, PIL.Image.Image)(_FP.get_image_num_channels)


@_register_kernel_internal(get_num_channels, tv_tensors.Video, tv_tensor_wrapper=False)
def get_num_channels_video(video: Tensor) -> int:
    return get_num_channels_image(video)


get_image_num_channels = get_num_channels


def get_size(inpt) -> list[int]:
    """``[H, W]`` of an image, video, mask, or the canvas of boxes / keypoints."""
    return _get_kernel(get_size, type(inpt))(inpt)


@_register_kernel_internal(get_size, Tensor)
@_register_kernel_internal(get_size, tv_tensors.Image, tv_tensor_wrapper=False)
def get_size_image(image: Tensor) -> list[int]:
    hw = list(image.shape[-2:])
    ndims = len(hw)
    if ndims == 2:
        return hw
    raise TypeError(f"Input tensor should have at least two dimensions, but got {ndims}")


@_register_kernel_internal(get_size, PIL.Image.Image)
def _get_size_image_pil(image: PIL.Image.Image) -> list[int]:
    width, height = _FP.get_image_size(image)
    return [height, width]


@_register_kernel_internal(get_size, tv_tensors.Video, tv_tensor_wrapper=False)
def get_size_video(video: Tensor) -> list[int]:
    return get_size_image(video)


@_register_kernel_internal(get_size, tv_tensors.Mask, tv_tensor_wrapper=False)
def get_size_mask(mask: Tensor) -> list[int]:
    return get_size_image(mask)


@_register_kernel_internal(get_size, tv_tensors.BoundingBoxes, tv_tensor_wrapper=False)
def get_size_bounding_boxes(bounding_box) -> list[int]:
    return list(bounding_box.canvas_size)


@_register_kernel_internal(get_size, tv_tensors.KeyPoints, tv_tensor_wrapper=False)
def get_size_keypoints(keypoints) -> list[int]:
    return list(keypoints.canvas_size)


def get_num_frames(inpt) -> int:
    """Number of frames ``T`` of a video ``(..., T, C, H, W)``."""
    return _get_kernel(get_num_frames, type(inpt))(inpt)


@_register_kernel_internal(get_num_frames, Tensor)
@_register_kernel_internal(get_num_frames, tv_tensors.Video, tv_tensor_wrapper=False)
def get_num_frames_video(video: Tensor) -> int:
    return video.shape[-4]


# -- bounding box formats -----------------------------------------------------------------


def _half(t: Tensor) -> Tensor:
    return t / 2 if t.is_floating_point() else t.div(2, rounding_mode="floor")


def _xywh_to_xyxy(xywh: Tensor, inplace: bool) -> Tensor:
    xyxy = xywh if inplace else xywh.clone()
    xyxy[..., 2:] += xyxy[..., :2]
    return xyxy


def _xyxy_to_xywh(xyxy: Tensor, inplace: bool) -> Tensor:
    xywh = xyxy if inplace else xyxy.clone()
    xywh[..., 2:] -= xywh[..., :2]
    return xywh


def _xywh_to_cxcywh(xywh: Tensor, inplace: bool) -> Tensor:
    if not inplace:
        xywh = xywh.clone()
    xywh[..., :2] += _half(xywh[..., 2:])
    return xywh


def _cxcywh_to_xywh(cxcywh: Tensor, inplace: bool) -> Tensor:
    original = cxcywh
    dtype = cxcywh.dtype
    need_cast = not cxcywh.is_floating_point()
    if need_cast:
        cxcywh = cxcywh.float()
    elif not inplace:
        cxcywh = cxcywh.clone()
    half_wh = cxcywh[..., 2:] / 2
    cxcywh[..., :2] -= half_wh
    if need_cast:
        x2y2 = (cxcywh[..., :2] + cxcywh[..., 2:]).to(dtype)
        cxcywh = cxcywh.to(dtype)
        cxcywh[..., 2:] = x2y2 - cxcywh[..., :2]
        if inplace:
            original[:] = cxcywh
            return original
    return cxcywh


def _cxcywh_to_xyxy(cxcywh: Tensor, inplace: bool) -> Tensor:
    original = cxcywh
    dtype = cxcywh.dtype
    need_cast = not cxcywh.is_floating_point()
    if need_cast:
        cxcywh = cxcywh.float()
    elif not inplace:
        cxcywh = cxcywh.clone()
    half_wh = cxcywh[..., 2:] / 2
    cxcywh[..., :2] -= half_wh
    cxcywh[..., 2:] += cxcywh[..., :2]
    if need_cast:
        cxcywh = cxcywh.to(dtype)
        if inplace:
            original[:] = cxcywh
            return original
    return cxcywh


def _xyxy_to_cxcywh(xyxy: Tensor, inplace: bool) -> Tensor:
    if not inplace:
        xyxy = xyxy.clone()
    xyxy[..., 2:] -= xyxy[..., :2]
    doubled = xyxy[..., :2] * 2 + xyxy[..., 2:]
    xyxy[..., :2] = _half(doubled)
    return xyxy


def _cxcywhr_to_xywhr(cxcywhr: Tensor, inplace: bool) -> Tensor:
    if not inplace:
        cxcywhr = cxcywhr.clone()
    half_wh = cxcywhr[..., 2:-1] / 2
    r_rad = cxcywhr[..., 4] * math.pi / 180.0
    cos, sin = r_rad.cos(), r_rad.sin()
    cxcywhr[..., 0] -= half_wh[..., 0] * cos + half_wh[..., 1] * sin
    cxcywhr[..., 1] += half_wh[..., 0] * sin - half_wh[..., 1] * cos
    return cxcywhr


def _xywhr_to_cxcywhr(xywhr: Tensor, inplace: bool) -> Tensor:
    if not inplace:
        xywhr = xywhr.clone()
    half_wh = xywhr[..., 2:-1] / 2
    r_rad = xywhr[..., 4] * math.pi / 180.0
    cos, sin = r_rad.cos(), r_rad.sin()
    xywhr[..., 0] += half_wh[..., 0] * cos + half_wh[..., 1] * sin
    xywhr[..., 1] -= half_wh[..., 0] * sin - half_wh[..., 1] * cos
    return xywhr


def _xywhr_to_xyxyxyxy(xywhr: Tensor, inplace: bool) -> Tensor:
    wh = xywhr[..., 2:-1]
    r_rad = xywhr[..., 4] * math.pi / 180.0
    cos, sin = r_rad.cos(), r_rad.sin()
    x, y, w, h = xywhr[..., 0], xywhr[..., 1], wh[..., 0], wh[..., 1]
    return ember.stack(
        [x, y, x + w * cos, y - w * sin, x + w * cos + h * sin, y - w * sin + h * cos,
         x + h * sin, y + h * cos],
        dim=-1,
    )


def _xyxyxyxy_to_xywhr(xyxyxyxy: Tensor, inplace: bool) -> Tensor:
    dtype = xyxyxyxy.dtype
    need_cast = dtype not in (ember.float32, ember.float64)
    p = xyxyxyxy.to(ember.float32) if need_cast else xyxyxyxy
    r_rad = ember.atan2(p[..., 1] - p[..., 3], p[..., 2] - p[..., 0])
    w = ((p[..., 2] - p[..., 0]) ** 2 + (p[..., 3] - p[..., 1]) ** 2).sqrt()
    h = ((p[..., 4] - p[..., 2]) ** 2 + (p[..., 5] - p[..., 3]) ** 2).sqrt()
    out = ember.stack([p[..., 0], p[..., 1], w, h, r_rad / math.pi * 180.0], dim=-1)
    return out.to(dtype) if need_cast else out


def _convert_bounding_box_format(bounding_boxes: Tensor, old_format: BoundingBoxFormat,
                                 new_format: BoundingBoxFormat, inplace: bool = False) -> Tensor:
    if new_format == old_format:
        return bounding_boxes
    if tv_tensors.is_rotated_bounding_format(old_format) ^ tv_tensors.is_rotated_bounding_format(
        new_format
    ):
        raise ValueError("Cannot convert between rotated and unrotated bounding boxes.")
    if old_format == BoundingBoxFormat.XYWH and new_format == BoundingBoxFormat.CXCYWH:
        return _xywh_to_cxcywh(bounding_boxes, inplace)
    if old_format == BoundingBoxFormat.CXCYWH and new_format == BoundingBoxFormat.XYWH:
        return _cxcywh_to_xywh(bounding_boxes, inplace)
    if old_format == BoundingBoxFormat.XYWH:
        bounding_boxes = _xywh_to_xyxy(bounding_boxes, inplace)
    elif old_format == BoundingBoxFormat.CXCYWH:
        bounding_boxes = _cxcywh_to_xyxy(bounding_boxes, inplace)
    elif old_format == BoundingBoxFormat.CXCYWHR:
        bounding_boxes = _cxcywhr_to_xywhr(bounding_boxes, inplace)
    elif old_format == BoundingBoxFormat.XYXYXYXY:
        bounding_boxes = _xyxyxyxy_to_xywhr(bounding_boxes, inplace)
    if new_format == BoundingBoxFormat.XYWH:
        bounding_boxes = _xyxy_to_xywh(bounding_boxes, inplace)
    elif new_format == BoundingBoxFormat.CXCYWH:
        bounding_boxes = _xyxy_to_cxcywh(bounding_boxes, inplace)
    elif new_format == BoundingBoxFormat.CXCYWHR:
        bounding_boxes = _xywhr_to_cxcywhr(bounding_boxes, inplace)
    elif new_format == BoundingBoxFormat.XYXYXYXY:
        bounding_boxes = _xywhr_to_xyxyxyxy(bounding_boxes, inplace)
    return bounding_boxes


def _parse_format(fmt):
    return BoundingBoxFormat[fmt.upper()] if isinstance(fmt, str) else fmt


def convert_bounding_box_format(inpt: Tensor, old_format=None, new_format=None,
                                inplace: bool = False) -> Tensor:
    """Convert boxes between formats (``old_format`` only for pure tensors)."""
    if new_format is None:
        raise TypeError("convert_bounding_box_format() missing 1 required argument: 'new_format'")
    old_format = _parse_format(old_format)
    new_format = _parse_format(new_format)
    if is_pure_tensor(inpt):
        if old_format is None:
            raise ValueError("For pure tensor inputs, `old_format` has to be passed.")
        return _convert_bounding_box_format(inpt, old_format=old_format, new_format=new_format,
                                            inplace=inplace)
    elif isinstance(inpt, tv_tensors.BoundingBoxes):
        if old_format is not None:
            raise ValueError("For bounding box tv_tensor inputs, `old_format` must not be passed.")
        output = _convert_bounding_box_format(inpt.as_subclass(Tensor), old_format=inpt.format,
                                              new_format=new_format, inplace=inplace)
        return tv_tensors.wrap(output, like=inpt, format=new_format)
    raise TypeError(
        "Input can either be a plain tensor or a bounding box tv_tensor, but got "
        f"{type(inpt)} instead."
    )


def _clamp_bounding_boxes(bounding_boxes: Tensor, format: BoundingBoxFormat, canvas_size,
                          clamping_mode) -> Tensor:
    if clamping_mode is None:
        return bounding_boxes.clone()
    in_dtype = bounding_boxes.dtype
    bounding_boxes = (
        bounding_boxes.clone() if bounding_boxes.is_floating_point() else bounding_boxes.float()
    )
    xyxy = _convert_bounding_box_format(bounding_boxes, old_format=format,
                                        new_format=BoundingBoxFormat.XYXY, inplace=True)
    xyxy[..., 0::2] = xyxy[..., 0::2].clamp(min=0, max=canvas_size[1])
    xyxy[..., 1::2] = xyxy[..., 1::2].clamp(min=0, max=canvas_size[0])
    out = _convert_bounding_box_format(xyxy, old_format=BoundingBoxFormat.XYXY, new_format=format,
                                       inplace=True)
    return out.to(in_dtype)


def _order_points(xp, boxes, indices=None):
    """Rotate each box's corner order to start at its left-most (then top-most) corner."""
    if indices is None:
        x, y = boxes[:, 0::2], boxes[:, 1::2]
        y_max = xp.abs(y).max(axis=1, keepdims=True)
        x_max = xp.abs(x).max(axis=1, keepdims=True)
        x1 = (y / y_max + x / x_max * 100).argmin(axis=1)
        indices = (2 * x1[:, None] + xp.arange(8)[None, :]) % 8
    return indices, xp.take_along_axis(boxes, indices, axis=1)


def _slope_and_intercept(xp, box):
    x, y = box[..., ::2], box[..., 1::2]
    a = xp.diff(y, append=y[..., 0:1]) / xp.diff(x, append=x[..., 0:1])
    return a, y - a * x


def _intersection_points(xp, a, b):
    x = -xp.diff(b, prepend=b[..., 3:4]) / xp.diff(a, prepend=a[..., 3:4])
    y = a * x + b
    return xp.stack([x, y], axis=-1).reshape(a.shape[0], 8)


def _clip(xp, v, lo=None, hi=None):
    """``torch.clamp`` (``max`` wins where ``min > max``)."""
    if lo is not None:
        v = xp.maximum(v, lo)
    if hi is not None:
        v = xp.minimum(v, hi)
    return v


def _clamp_y_intercept(xp, boxes, original, canvas_size, clamping_mode):
    a, b = _slope_and_intercept(xp, boxes)
    a1, a2, a3, a4 = (a[:, k] for k in range(4))
    b1, b2, b3, b4 = (b[:, k] for k in range(4))
    _, bm = _slope_and_intercept(xp, original)
    b1m, b2m, b3m, b4m = (bm[:, k] for k in range(4))
    h, w = canvas_size
    b1 = _clip(xp, _clip(xp, b2, b1, b3), 0, h)
    b4 = _clip(xp, _clip(xp, b3, b2, b4), 0, h)
    if clamping_mode == "hard":
        b1 = b4 = (b1 + b4) / 2
        b2_candidates = xp.stack([b1 * a2 / a1, b3 * a2 / a3, (a1 - a2) * w + b1,
                                  (a3 - a2) * w + b3], axis=1)
        b2 = _clip(xp, _nan_max(xp, b2_candidates), None, b2)
        b3_candidates = xp.stack([h * (1 - a3 / a4) + b4 * a3 / a4,
                                  h * (1 - a3 / a2) + b2 * a3 / a2,
                                  (a2 - a3) * w + b2, (a4 - a3) * w + b4], axis=1)
        b3 = _clip(xp, _nan_min(xp, b3_candidates), b3, None)
    b1 = _clip(xp, b1, b1m, b3m)
    b3 = _clip(xp, b3, b1m, b3m)
    b2 = _clip(xp, b2, b2m, b4m)
    b4 = _clip(xp, b4, b2m, b4m)
    return xp.stack([b1, b2, b3, b4], axis=-1)


def _nan_max(xp, v):
    """``torch.max(dim=1)``: NaN wins."""
    return xp.where(xp.isnan(v).any(axis=1), xp.nan, xp.nanmax(xp.where(xp.isnan(v), -xp.inf, v),
                                                                 axis=1))


def _nan_min(xp, v):
    return xp.where(xp.isnan(v).any(axis=1), xp.nan, xp.nanmin(xp.where(xp.isnan(v), xp.inf, v),
                                                                 axis=1))


def _clamp_along_y_axis(xp, boxes, original, canvas_size, clamping_mode):
    a, _ = _slope_and_intercept(xp, boxes)
    x1, y1, x2, y2, x3, y3, x4, y4 = (boxes[:, k] for k in range(8))
    b = _clamp_y_intercept(xp, boxes, original, canvas_size, clamping_mode)
    case_a = _intersection_points(xp, a, b)
    case_b = boxes.copy()
    case_b[:, 0] = xp.maximum(case_b[:, 0], 0)
    case_b[:, 6] = xp.maximum(case_b[:, 6], 0)
    case_c = xp.zeros_like(case_b)
    cond_a = (x1 < 0) & ~xp.isnan(case_a).any(-1)
    cond_b = xp.isclose(y1, y2) | xp.isclose(y3, y4)
    cond_c = (x1 <= 0) & (x2 <= 0) & (x3 <= 0) & (x4 <= 0)
    cond_c = cond_c | xp.isclose(y1, y4) | xp.isclose(y2, y3) | (cond_b & xp.isclose(x1, x2))
    for cond, case in ((cond_a, case_a), (cond_b, case_b), (cond_c, case_c)):
        boxes = xp.where(cond[:, None], case, boxes)
    return boxes


def _clamp_rotated_bounding_boxes(bounding_boxes: Tensor, format, canvas_size,
                                  clamping_mode) -> Tensor:
    """Clamp rotated boxes to the canvas, side by side (torchvision's algorithm: each of the
    four passes clips the box's edges against one canvas side, then turns the frame by 90
    degrees); ``"hard"`` keeps every corner inside, ``"soft"`` keeps the box's shape."""
    if clamping_mode is None:
        return bounding_boxes.clone()
    shape = bounding_boxes.shape
    pts = _convert_bounding_box_format(bounding_boxes.clone(), old_format=format,
                                       new_format=BoundingBoxFormat.XYXYXYXY).reshape(-1, 8)
    xp = api.array_module(pts)
    out = api.array(pts).copy()
    original = out.copy()
    with np.errstate(all="ignore"):  # degenerate boxes give NaNs, as in torchvision
        out = _clamp_rotated_points(xp, out, original, canvas_size, clamping_mode)
    out_t = api.wrap(out.astype(api.array(pts).dtype), pts.device)
    return _convert_bounding_box_format(out_t, old_format=BoundingBoxFormat.XYXYXYXY,
                                        new_format=format).reshape(shape)


def _clamp_rotated_points(xp, out, original, canvas_size, clamping_mode):
    for _ in range(4):
        indices, out = _order_points(xp, out)
        _, original = _order_points(xp, original, indices)
        out = _clamp_along_y_axis(xp, out, original, canvas_size, clamping_mode)
        _, out = _order_points(xp, out, indices)
        _, original = _order_points(xp, original, indices)
        out = _turn(xp, out, canvas_size[1])
        original = _turn(xp, original, canvas_size[1])
        canvas_size = (canvas_size[1], canvas_size[0])
    return out


def _turn(xp, boxes, width):
    """The frame turned by 90 degrees: (x, y) -> (y, width - x)."""
    out = xp.empty_like(boxes)
    out[:, ::2] = boxes[:, 1::2]
    out[:, 1::2] = width - boxes[:, ::2]
    return out


def clamp_bounding_boxes(inpt: Tensor, format=None, canvas_size=None,
                         clamping_mode="auto") -> Tensor:
    """Clamp boxes to their canvas (``format`` and ``canvas_size`` only for pure tensors)."""
    if clamping_mode is not None and clamping_mode not in ("soft", "hard", "auto"):
        raise ValueError(f"clamping_mode must be soft, hard, auto or None, got {clamping_mode}")
    format = _parse_format(format)
    if is_pure_tensor(inpt):
        if format is None or canvas_size is None or (
            clamping_mode is not None and clamping_mode == "auto"
        ):
            raise ValueError(
                "For pure tensor inputs, `format`, `canvas_size` and `clamping_mode` have to be "
                "passed."
            )
        kernel = (_clamp_rotated_bounding_boxes if tv_tensors.is_rotated_bounding_format(format)
                  else _clamp_bounding_boxes)
        return kernel(inpt, format=format, canvas_size=canvas_size, clamping_mode=clamping_mode)
    elif isinstance(inpt, tv_tensors.BoundingBoxes):
        if format is not None or canvas_size is not None:
            raise ValueError(
                "For bounding box tv_tensor inputs, `format` and `canvas_size` must not be passed."
            )
        if clamping_mode is not None and clamping_mode == "auto":
            clamping_mode = inpt.clamping_mode
        kernel = (_clamp_rotated_bounding_boxes
                  if tv_tensors.is_rotated_bounding_format(inpt.format) else _clamp_bounding_boxes)
        output = kernel(inpt.as_subclass(Tensor), format=inpt.format,
                        canvas_size=inpt.canvas_size, clamping_mode=clamping_mode)
        return tv_tensors.wrap(output, like=inpt)
    raise TypeError(
        "Input can either be a plain tensor or a bounding box tv_tensor, but got "
        f"{type(inpt)} instead."
    )


def _clamp_keypoints(keypoints: Tensor, canvas_size) -> Tensor:
    dtype = keypoints.dtype
    keypoints = keypoints.clone() if keypoints.is_floating_point() else keypoints.float()
    keypoints[..., 0] = keypoints[..., 0].clamp(min=0, max=canvas_size[1] - 1)
    keypoints[..., 1] = keypoints[..., 1].clamp(min=0, max=canvas_size[0] - 1)
    return keypoints.to(dtype=dtype)


def clamp_keypoints(inpt: Tensor, canvas_size=None) -> Tensor:
    """Clamp keypoints into their canvas."""
    if is_pure_tensor(inpt):
        if canvas_size is None:
            raise ValueError("For pure tensor inputs, `canvas_size` has to be passed.")
        return _clamp_keypoints(inpt, canvas_size=canvas_size)
    elif isinstance(inpt, tv_tensors.KeyPoints):
        if canvas_size is not None:
            raise ValueError("For keypoints tv_tensor inputs, `canvas_size` must not be passed.")
        output = _clamp_keypoints(inpt.as_subclass(Tensor), canvas_size=inpt.canvas_size)
        return tv_tensors.wrap(output, like=inpt)
    raise TypeError(
        "Input can either be a plain tensor or a keypoints tv_tensor, but got "
        f"{type(inpt)} instead."
    )
