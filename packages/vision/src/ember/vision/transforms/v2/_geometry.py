"""Geometry transforms (flips, resizes, crops, pads, affine warps, ...)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import PIL.Image

import ember
from ember import Tensor
from ember.vision import tv_tensors
from ember.vision.ops import box_iou
from ember.vision.transforms import transforms as _v1
from ember.vision.transforms.functional import _get_perspective_coeffs

from . import functional as F
from ._transform import Transform, _RandomApplyTransform
from ._utils import (
    _check_padding_arg,
    _check_padding_mode_arg,
    _check_sequence_input,
    _get_fill,
    _setup_angle,
    _setup_fill_arg,
    _setup_number_or_seq,
    _setup_size,
    get_bounding_boxes,
    has_all,
    has_any,
    is_pure_tensor,
    query_size,
)
from .functional._geometry import _parse_pad_padding


def _uniform(low: float, high: float) -> float:
    return float(ember.empty(1).uniform_(low, high).item())


class RandomHorizontalFlip(_RandomApplyTransform):
    """Flip horizontally with probability ``p``."""

    _v1_transform_cls = _v1.RandomHorizontalFlip

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.horizontal_flip, inpt)


class RandomVerticalFlip(_RandomApplyTransform):
    """Flip vertically with probability ``p``."""

    _v1_transform_cls = _v1.RandomVerticalFlip

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.vertical_flip, inpt)


class Resize(Transform):
    """Resize to ``size`` ((h, w), or the smaller edge; None with ``max_size``)."""

    _v1_transform_cls = _v1.Resize

    def __init__(self, size, interpolation="bilinear", max_size=None, antialias=True) -> None:
        super().__init__()
        if isinstance(size, int):
            size = [size]
        elif isinstance(size, Sequence) and len(size) in {1, 2}:
            size = list(size)
        elif size is None:
            if not isinstance(max_size, int):
                raise ValueError(
                    f"max_size must be an integer when size is None, but got {max_size} instead."
                )
        else:
            raise ValueError(
                "size can be an integer, a sequence of one or two integers, or None, but got "
                f"{size} instead."
            )
        self.size = size
        self.interpolation = interpolation
        self.max_size = max_size
        self.antialias = antialias

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.resize, inpt, self.size, interpolation=self.interpolation,
                                 max_size=self.max_size, antialias=self.antialias)


class CenterCrop(Transform):
    """Crop the centre to ``size``."""

    _v1_transform_cls = _v1.CenterCrop

    def __init__(self, size):
        super().__init__()
        self.size = _setup_size(size,
                                error_msg="Please provide only two dimensions (h, w) for size.")

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.center_crop, inpt, output_size=self.size)


class RandomResizedCrop(Transform):
    """Crop a random area (``scale``) and aspect ratio (``ratio``), resized to ``size``."""

    _v1_transform_cls = _v1.RandomResizedCrop

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation="bilinear", antialias=True) -> None:
        super().__init__()
        self.size = _setup_size(size,
                                error_msg="Please provide only two dimensions (h, w) for size.")
        if not isinstance(scale, Sequence) or len(scale) != 2:
            raise TypeError("Scale should be a sequence of two floats.")
        if not isinstance(ratio, Sequence) or len(ratio) != 2:
            raise TypeError("Ratio should be a sequence of two floats.")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            warnings.warn("Scale and ratio should be of kind (min, max)", stacklevel=2)
        self.scale = scale
        self.ratio = ratio
        self.interpolation = interpolation
        self.antialias = antialias
        self._log_ratio = ember.log(ember.tensor(self.ratio)).tolist()  # float32, as torch

    def make_params(self, flat_inputs: list[Any]) -> dict[str, Any]:
        height, width = query_size(flat_inputs)
        area = height * width
        log_ratio = self._log_ratio
        for _ in range(10):
            target_area = area * _uniform(self.scale[0], self.scale[1])
            aspect_ratio = ember.exp(ember.empty(1).uniform_(log_ratio[0], log_ratio[1])).item()
            w = int(round(math.sqrt(target_area * aspect_ratio)))
            h = int(round(math.sqrt(target_area / aspect_ratio)))
            if 0 < w <= width and 0 < h <= height:
                i = int(ember.randint(0, height - h + 1, size=(1,)).item())
                j = int(ember.randint(0, width - w + 1, size=(1,)).item())
                break
        else:
            in_ratio = float(width) / float(height)
            if in_ratio < min(self.ratio):
                w = width
                h = int(round(w / min(self.ratio)))
            elif in_ratio > max(self.ratio):
                h = height
                w = int(round(h * max(self.ratio)))
            else:
                w = width
                h = height
            i = (height - h) // 2
            j = (width - w) // 2
        return dict(top=i, left=j, height=h, width=w)

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.resized_crop, inpt, **params, size=self.size,
                                 interpolation=self.interpolation, antialias=self.antialias)


class _CropsOfMany(Transform):
    def _call_kernel(self, functional: Callable, inpt: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(inpt, (tv_tensors.BoundingBoxes, tv_tensors.KeyPoints, tv_tensors.Mask)):
            warnings.warn(
                f"{type(self).__name__}() is currently passing through inputs of type "
                f"tv_tensors.{type(inpt).__name__}. This will likely change in the future.",
                stacklevel=2,
            )
        return super()._call_kernel(functional, inpt, *args, **kwargs)

    def check_inputs(self, flat_inputs: list[Any]) -> None:
        if has_any(flat_inputs, tv_tensors.BoundingBoxes, tv_tensors.Mask):
            raise TypeError(
                f"BoundingBoxes'es and Mask's are not supported by {type(self).__name__}()"
            )


class FiveCrop(_CropsOfMany):
    """The four corner crops and the central crop, as a tuple."""

    _v1_transform_cls = _v1.FiveCrop

    def __init__(self, size) -> None:
        super().__init__()
        self.size = _setup_size(size,
                                error_msg="Please provide only two dimensions (h, w) for size.")

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.five_crop, inpt, self.size)


class TenCrop(_CropsOfMany):
    """``FiveCrop`` of the input and of its flipped version."""

    _v1_transform_cls = _v1.TenCrop

    def __init__(self, size, vertical_flip: bool = False) -> None:
        super().__init__()
        self.size = _setup_size(size,
                                error_msg="Please provide only two dimensions (h, w) for size.")
        self.vertical_flip = vertical_flip

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.ten_crop, inpt, self.size, vertical_flip=self.vertical_flip)


class Pad(Transform):
    """Pad the sides; ``fill`` may be a dict ``{type: fill}``."""

    _v1_transform_cls = _v1.Pad

    def __init__(self, padding, fill=0, padding_mode="constant") -> None:
        super().__init__()
        _check_padding_arg(padding)
        _check_padding_mode_arg(padding_mode)
        if not isinstance(padding, int):
            padding = list(padding)
        self.padding = padding
        self.fill = fill
        self._fill = _setup_fill_arg(fill)
        self.padding_mode = padding_mode

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        fill = _get_fill(self._fill, type(inpt))
        return self._call_kernel(F.pad, inpt, padding=self.padding, fill=fill,
                                 padding_mode=self.padding_mode)


class RandomZoomOut(_RandomApplyTransform):
    """Place the input on a larger canvas (``side_range`` times its size) filled with ``fill``."""

    def __init__(self, fill=0, side_range: Sequence[float] = (1.0, 4.0), p: float = 0.5) -> None:
        super().__init__(p=p)
        self.fill = fill
        self._fill = _setup_fill_arg(fill)
        _check_sequence_input(side_range, "side_range", req_sizes=(2,))
        self.side_range = side_range
        if side_range[0] < 1.0 or side_range[0] > side_range[1]:
            raise ValueError(f"Invalid side range provided {side_range}.")

    def make_params(self, flat_inputs: list[Any]) -> dict[str, Any]:
        orig_h, orig_w = query_size(flat_inputs)
        r = self.side_range[0] + float(ember.rand(1)) * (self.side_range[1] - self.side_range[0])
        canvas_width = int(orig_w * r)
        canvas_height = int(orig_h * r)
        r2 = ember.rand(2)
        left = int((canvas_width - orig_w) * float(r2[0]))
        top = int((canvas_height - orig_h) * float(r2[1]))
        right = canvas_width - (left + orig_w)
        bottom = canvas_height - (top + orig_h)
        return dict(padding=[left, top, right, bottom])

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        fill = _get_fill(self._fill, type(inpt))
        return self._call_kernel(F.pad, inpt, **params, fill=fill)


class RandomRotation(Transform):
    """Rotate by an angle drawn from ``degrees``."""

    _v1_transform_cls = _v1.RandomRotation

    def __init__(self, degrees, interpolation="nearest", expand: bool = False, center=None,
                 fill=0) -> None:
        super().__init__()
        self.degrees = _setup_angle(degrees, name="degrees", req_sizes=(2,))
        self.interpolation = interpolation
        self.expand = expand
        self.fill = fill
        self._fill = _setup_fill_arg(fill)
        if center is not None:
            _check_sequence_input(center, "center", req_sizes=(2,))
        self.center = center

    def make_params(self, flat_inputs: list[Any]) -> dict[str, Any]:
        return dict(angle=_uniform(self.degrees[0], self.degrees[1]))

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        fill = _get_fill(self._fill, type(inpt))
        return self._call_kernel(F.rotate, inpt, **params, interpolation=self.interpolation,
                                 expand=self.expand, center=self.center, fill=fill)


class RandomAffine(Transform):
    """Random affine transform (rotation, translation, scale, shear) keeping the centre."""

    _v1_transform_cls = _v1.RandomAffine

    def __init__(self, degrees, translate=None, scale=None, shear=None,
                 interpolation="nearest", fill=0, center=None) -> None:
        super().__init__()
        self.degrees = _setup_angle(degrees, name="degrees", req_sizes=(2,))
        if translate is not None:
            _check_sequence_input(translate, "translate", req_sizes=(2,))
            for t in translate:
                if not (0.0 <= t <= 1.0):
                    raise ValueError("translation values should be between 0 and 1")
        self.translate = translate
        if scale is not None:
            _check_sequence_input(scale, "scale", req_sizes=(2,))
            for s in scale:
                if s <= 0:
                    raise ValueError("scale values should be positive")
        self.scale = scale
        if shear is not None:
            self.shear = _setup_angle(shear, name="shear", req_sizes=(2, 4))
        else:
            self.shear = shear
        self.interpolation = interpolation
        self.fill = fill
        self._fill = _setup_fill_arg(fill)
        if center is not None:
            _check_sequence_input(center, "center", req_sizes=(2,))
        self.center = center

    def make_params(self, flat_inputs: list[Any]) -> dict[str, Any]:
        height, width = query_size(flat_inputs)
        angle = _uniform(self.degrees[0], self.degrees[1])
        if self.translate is not None:
            max_dx = float(self.translate[0] * width)
            max_dy = float(self.translate[1] * height)
            tx = int(round(_uniform(-max_dx, max_dx)))
            ty = int(round(_uniform(-max_dy, max_dy)))
            translate = (tx, ty)
        else:
            translate = (0, 0)
        scale = _uniform(self.scale[0], self.scale[1]) if self.scale is not None else 1.0
        shear_x = shear_y = 0.0
        if self.shear is not None:
            shear_x = _uniform(self.shear[0], self.shear[1])
            if len(self.shear) == 4:
                shear_y = _uniform(self.shear[2], self.shear[3])
        return dict(angle=angle, translate=translate, scale=scale, shear=(shear_x, shear_y))

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        fill = _get_fill(self._fill, type(inpt))
        return self._call_kernel(F.affine, inpt, **params, interpolation=self.interpolation,
                                 fill=fill, center=self.center)


class RandomCrop(Transform):
    """Crop at a random location (after optional padding)."""

    _v1_transform_cls = _v1.RandomCrop

    def __init__(self, size, padding=None, pad_if_needed: bool = False, fill=0,
                 padding_mode="constant") -> None:
        super().__init__()
        self.size = _setup_size(size,
                                error_msg="Please provide only two dimensions (h, w) for size.")
        if pad_if_needed or padding is not None:
            if padding is not None:
                _check_padding_arg(padding)
            _check_padding_mode_arg(padding_mode)
        self.padding = _parse_pad_padding(padding) if padding else None
        self.pad_if_needed = pad_if_needed
        self.fill = fill
        self._fill = _setup_fill_arg(fill)
        self.padding_mode = padding_mode

    def make_params(self, flat_inputs: list[Any]) -> dict[str, Any]:
        padded_height, padded_width = query_size(flat_inputs)
        if self.padding is not None:
            pad_left, pad_right, pad_top, pad_bottom = self.padding
            padded_height += pad_top + pad_bottom
            padded_width += pad_left + pad_right
        else:
            pad_left = pad_right = pad_top = pad_bottom = 0
        cropped_height, cropped_width = self.size
        if self.pad_if_needed:
            if padded_height < cropped_height:
                diff = cropped_height - padded_height
                pad_top += diff
                pad_bottom += diff
                padded_height += 2 * diff
            if padded_width < cropped_width:
                diff = cropped_width - padded_width
                pad_left += diff
                pad_right += diff
                padded_width += 2 * diff
        if padded_height < cropped_height or padded_width < cropped_width:
            raise ValueError(
                f"Required crop size {(cropped_height, cropped_width)} is larger than "
                f"{'padded ' if self.padding is not None else ''}input image size "
                f"{(padded_height, padded_width)}."
            )
        padding = [pad_left, pad_top, pad_right, pad_bottom]
        needs_pad = any(padding)
        needs_vert_crop, top = (
            (True, int(ember.randint(0, padded_height - cropped_height + 1, size=())))
            if padded_height > cropped_height else (False, 0)
        )
        needs_horz_crop, left = (
            (True, int(ember.randint(0, padded_width - cropped_width + 1, size=())))
            if padded_width > cropped_width else (False, 0)
        )
        return dict(needs_crop=needs_vert_crop or needs_horz_crop, top=top, left=left,
                    height=cropped_height, width=cropped_width, needs_pad=needs_pad,
                    padding=padding)

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        if params["needs_pad"]:
            fill = _get_fill(self._fill, type(inpt))
            inpt = self._call_kernel(F.pad, inpt, padding=params["padding"], fill=fill,
                                     padding_mode=self.padding_mode)
        if params["needs_crop"]:
            inpt = self._call_kernel(F.crop, inpt, top=params["top"], left=params["left"],
                                     height=params["height"], width=params["width"])
        return inpt


class RandomPerspective(_RandomApplyTransform):
    """Random perspective warp (corners moved by up to ``distortion_scale``)."""

    _v1_transform_cls = _v1.RandomPerspective

    def __init__(self, distortion_scale: float = 0.5, p: float = 0.5,
                 interpolation="bilinear", fill=0) -> None:
        super().__init__(p=p)
        if not (0 <= distortion_scale <= 1):
            raise ValueError("Argument distortion_scale value should be between 0 and 1")
        self.distortion_scale = distortion_scale
        self.interpolation = interpolation
        self.fill = fill
        self._fill = _setup_fill_arg(fill)

    def make_params(self, flat_inputs: list[Any]) -> dict[str, Any]:
        height, width = query_size(flat_inputs)
        half_height = height // 2
        half_width = width // 2
        bound_height = int(self.distortion_scale * half_height) + 1
        bound_width = int(self.distortion_scale * half_width) + 1

        def randint(lo, hi):
            return int(ember.randint(lo, hi, size=(1,)))

        topleft = [randint(0, bound_width), randint(0, bound_height)]
        topright = [randint(width - bound_width, width), randint(0, bound_height)]
        botright = [randint(width - bound_width, width), randint(height - bound_height, height)]
        botleft = [randint(0, bound_width), randint(height - bound_height, height)]
        startpoints = [[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]]
        endpoints = [topleft, topright, botright, botleft]
        return dict(coefficients=_get_perspective_coeffs(startpoints, endpoints))

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        fill = _get_fill(self._fill, type(inpt))
        return self._call_kernel(F.perspective, inpt, startpoints=None, endpoints=None,
                                 fill=fill, interpolation=self.interpolation, **params)


class ElasticTransform(Transform):
    """Elastic deformation by a smoothed random displacement field."""

    _v1_transform_cls = _v1.ElasticTransform

    def __init__(self, alpha=50.0, sigma=5.0, interpolation="bilinear", fill=0) -> None:
        super().__init__()
        self.alpha = _setup_number_or_seq(alpha, "alpha")
        self.sigma = _setup_number_or_seq(sigma, "sigma")
        self.interpolation = interpolation
        self.fill = fill
        self._fill = _setup_fill_arg(fill)

    def make_params(self, flat_inputs: list[Any]) -> dict[str, Any]:
        height, width = query_size(flat_inputs)
        dx = ember.rand(1, 1, height, width) * 2 - 1
        if self.sigma[0] > 0.0:
            kx = int(8 * self.sigma[0] + 1)
            if kx % 2 == 0:
                kx += 1
            dx = self._call_kernel(F.gaussian_blur, dx, [kx, kx], list(self.sigma))
        dx = dx * self.alpha[0] / width
        dy = ember.rand(1, 1, height, width) * 2 - 1
        if self.sigma[1] > 0.0:
            ky = int(8 * self.sigma[1] + 1)
            if ky % 2 == 0:
                ky += 1
            dy = self._call_kernel(F.gaussian_blur, dy, [ky, ky], list(self.sigma))
        dy = dy * self.alpha[1] / height
        displacement = ember.concat([dx, dy], 1).permute([0, 2, 3, 1])
        return dict(displacement=displacement)

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        fill = _get_fill(self._fill, type(inpt))
        return self._call_kernel(F.elastic, inpt, **params, fill=fill,
                                 interpolation=self.interpolation)


class RandomIoUCrop(Transform):
    """The SSD random crop: a crop whose IoU with some box reaches a drawn threshold."""

    def __init__(self, min_scale: float = 0.3, max_scale: float = 1.0,
                 min_aspect_ratio: float = 0.5, max_aspect_ratio: float = 2.0,
                 sampler_options: list[float] | None = None, trials: int = 40):
        super().__init__()
        self.min_scale = min_scale
        self.max_scale = max_scale
        self.min_aspect_ratio = min_aspect_ratio
        self.max_aspect_ratio = max_aspect_ratio
        if sampler_options is None:
            sampler_options = [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0]
        self.options = sampler_options
        self.trials = trials

    def check_inputs(self, flat_inputs: list[Any]) -> None:
        if not (has_all(flat_inputs, tv_tensors.BoundingBoxes)
                and has_any(flat_inputs, PIL.Image.Image, tv_tensors.Image, is_pure_tensor)):
            raise TypeError(
                f"{type(self).__name__}() requires input sample to contain tensor or PIL images "
                "and bounding boxes. Sample can also contain masks."
            )

    def make_params(self, flat_inputs: list[Any]) -> dict[str, Any]:
        orig_h, orig_w = query_size(flat_inputs)
        bboxes = get_bounding_boxes(flat_inputs)
        while True:
            idx = int(ember.randint(low=0, high=len(self.options), size=(1,)))
            min_jaccard_overlap = self.options[idx]
            if min_jaccard_overlap >= 1.0:
                return dict()
            for _ in range(self.trials):
                r = self.min_scale + (self.max_scale - self.min_scale) * ember.rand(2)
                new_w = int(orig_w * float(r[0]))
                new_h = int(orig_h * float(r[1]))
                if new_h == 0:
                    continue
                aspect_ratio = new_w / new_h
                if not (self.min_aspect_ratio <= aspect_ratio <= self.max_aspect_ratio):
                    continue
                r = ember.rand(2)
                left = int((orig_w - new_w) * float(r[0]))
                top = int((orig_h - new_h) * float(r[1]))
                right = left + new_w
                bottom = top + new_h
                if left == right or top == bottom:
                    continue
                xyxy = F.convert_bounding_box_format(bboxes.as_subclass(Tensor), bboxes.format,
                                                     tv_tensors.BoundingBoxFormat.XYXY)
                cx = 0.5 * (xyxy[..., 0] + xyxy[..., 2])
                cy = 0.5 * (xyxy[..., 1] + xyxy[..., 3])
                is_within_crop_area = (left < cx) & (cx < right) & (top < cy) & (cy < bottom)
                if not is_within_crop_area.any():
                    continue
                xyxy = xyxy[is_within_crop_area]
                ious = box_iou(xyxy, ember.tensor([[left, top, right, bottom]], dtype=xyxy.dtype,
                                                  device=xyxy.device))
                if ious.max() < min_jaccard_overlap:
                    continue
                return dict(top=top, left=left, height=new_h, width=new_w,
                            is_within_crop_area=is_within_crop_area)

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        if len(params) < 1:
            return inpt
        output = self._call_kernel(F.crop, inpt, top=params["top"], left=params["left"],
                                   height=params["height"], width=params["width"])
        if isinstance(output, tv_tensors.BoundingBoxes):
            pure = output.as_subclass(Tensor).clone()
            pure[~params["is_within_crop_area"]] = 0
            output = tv_tensors.wrap(pure, like=output)
        return output


class ScaleJitter(Transform):
    """Resize by a random scale of ``target_size`` (Large Scale Jitter)."""

    def __init__(self, target_size, scale_range=(0.1, 2.0), interpolation="bilinear",
                 antialias=True):
        super().__init__()
        self.target_size = target_size
        self.scale_range = scale_range
        self.interpolation = interpolation
        self.antialias = antialias

    def make_params(self, flat_inputs: list[Any]) -> dict[str, Any]:
        orig_height, orig_width = query_size(flat_inputs)
        scale = self.scale_range[0] + float(ember.rand(1)) * (self.scale_range[1]
                                                              - self.scale_range[0])
        r = min(self.target_size[1] / orig_height, self.target_size[0] / orig_width) * scale
        return dict(size=(int(orig_height * r), int(orig_width * r)))

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.resize, inpt, size=params["size"],
                                 interpolation=self.interpolation, antialias=self.antialias)


class RandomShortestSize(Transform):
    """Resize the shorter side to one of ``min_size`` (the longer at most ``max_size``)."""

    def __init__(self, min_size, max_size=None, interpolation="bilinear", antialias=True):
        super().__init__()
        self.min_size = [min_size] if isinstance(min_size, int) else list(min_size)
        self.max_size = max_size
        self.interpolation = interpolation
        self.antialias = antialias

    def make_params(self, flat_inputs: list[Any]) -> dict[str, Any]:
        orig_height, orig_width = query_size(flat_inputs)
        min_size = self.min_size[int(ember.randint(len(self.min_size), ()))]
        r = min_size / min(orig_height, orig_width)
        if self.max_size is not None:
            r = min(r, self.max_size / max(orig_height, orig_width))
        return dict(size=(int(orig_height * r), int(orig_width * r)))

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.resize, inpt, size=params["size"],
                                 interpolation=self.interpolation, antialias=self.antialias)


class RandomResize(Transform):
    """Resize the shorter side to a size drawn from ``[min_size, max_size)``."""

    def __init__(self, min_size: int, max_size: int, interpolation="bilinear",
                 antialias=True) -> None:
        super().__init__()
        self.min_size = min_size
        self.max_size = max_size
        self.interpolation = interpolation
        self.antialias = antialias

    def make_params(self, flat_inputs: list[Any]) -> dict[str, Any]:
        return dict(size=[int(ember.randint(self.min_size, self.max_size, ()))])

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.resize, inpt, params["size"],
                                 interpolation=self.interpolation, antialias=self.antialias)


