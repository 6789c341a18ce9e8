"""Miscellaneous transforms: Identity, Lambda, LinearTransformation, Normalize, GaussianBlur,
GaussianNoise, ToDtype, ConvertImageDtype, SanitizeBoundingBoxes, SanitizeKeyPoints."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import PIL.Image

import ember
from ember import Tensor
from ember.vision import tv_tensors
from ember.vision.transforms import transforms as _v1

from . import functional as F
from ._transform import Transform
from ._utils import (
    _parse_labels_getter,
    _setup_number_or_seq,
    _setup_size,
    get_bounding_boxes,
    get_keypoints,
    has_any,
    is_pure_tensor,
    tree_flatten,
    tree_unflatten,
)
from .functional._misc import _get_sanitize_bounding_boxes_mask, _get_sanitize_keypoints_mask


class Identity(Transform):
    """Return the input unchanged."""

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return inpt


class Lambda(Transform):
    """Apply ``lambd`` to the inputs of ``types`` (every input by default)."""

    _transformed_types = (object,)

    def __init__(self, lambd: Callable[[Any], Any], *types: type):
        super().__init__()
        self.lambd = lambd
        self.types = types or self._transformed_types

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        if isinstance(inpt, self.types):
            return self.lambd(inpt)
        return inpt

    def extra_repr(self) -> str:
        extras = []
        name = getattr(self.lambd, "__name__", None)
        if name:
            extras.append(name)
        extras.append(f"types={[type.__name__ for type in self.types]}")
        return ", ".join(extras)


class LinearTransformation(Transform):
    """Flatten, subtract ``mean_vector``, multiply by ``transformation_matrix`` (whitening)."""

    _v1_transform_cls = getattr(_v1, "LinearTransformation", None)
    _transformed_types = (is_pure_tensor, tv_tensors.Image, tv_tensors.Video)

    def __init__(self, transformation_matrix: Tensor, mean_vector: Tensor):
        super().__init__()
        if transformation_matrix.size(0) != transformation_matrix.size(1):
            raise ValueError(
                "transformation_matrix should be square. Got "
                f"{tuple(transformation_matrix.size())} rectangular matrix."
            )
        if mean_vector.size(0) != transformation_matrix.size(0):
            raise ValueError(
                f"mean_vector should have the same length {mean_vector.size(0)} as any one of "
                f"the dimensions of the transformation_matrix "
                f"[{tuple(transformation_matrix.size())}]"
            )
        if transformation_matrix.device != mean_vector.device:
            raise ValueError(
                "Input tensors should be on the same device. Got "
                f"{transformation_matrix.device} and {mean_vector.device}"
            )
        if transformation_matrix.dtype != mean_vector.dtype:
            raise ValueError(
                "Input tensors should have the same dtype. Got "
                f"{transformation_matrix.dtype} and {mean_vector.dtype}"
            )
        self.transformation_matrix = transformation_matrix
        self.mean_vector = mean_vector

    def check_inputs(self, sample: Any) -> Any:
        if has_any(sample, PIL.Image.Image):
            raise TypeError(f"{type(self).__name__}() does not support PIL images.")

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        shape = inpt.shape
        n = shape[-3] * shape[-2] * shape[-1]
        if n != self.transformation_matrix.shape[0]:
            raise ValueError(
                "Input tensor and transformation matrix have incompatible shape."
                + f"[{shape[-3]} x {shape[-2]} x {shape[-1]}] != "
                + f"{self.transformation_matrix.shape[0]}"
            )
        if inpt.device.type != self.mean_vector.device.type:
            raise ValueError(
                "Input tensor should be on the same device as transformation matrix and mean "
                f"vector. Got {inpt.device} vs {self.mean_vector.device}"
            )
        pure = inpt.as_subclass(Tensor)
        flat_inpt = pure.reshape(-1, n) - self.mean_vector
        output = ember.mm(flat_inpt, self.transformation_matrix.to(flat_inpt.dtype))
        output = output.reshape(shape)
        if isinstance(inpt, (tv_tensors.Image, tv_tensors.Video)):
            output = tv_tensors.wrap(output, like=inpt)
        return output


class Normalize(Transform):
    """Normalise images and videos channel-wise: ``(x - mean) / std``."""

    _v1_transform_cls = _v1.Normalize

    def __init__(self, mean: Sequence[float], std: Sequence[float], inplace: bool = False):
        super().__init__()
        self.mean = list(mean)
        self.std = list(std)
        self.inplace = inplace

    def check_inputs(self, sample: Any) -> Any:
        if has_any(sample, PIL.Image.Image):
            raise TypeError(f"{type(self).__name__}() does not support PIL images.")

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.normalize, inpt, mean=self.mean, std=self.std,
                                 inplace=self.inplace)


class GaussianBlur(Transform):
    """Gaussian blur with a sigma drawn uniformly from ``sigma`` (min, max)."""

    _v1_transform_cls = _v1.GaussianBlur

    def __init__(self, kernel_size, sigma=(0.1, 2.0)) -> None:
        super().__init__()
        self.kernel_size = _setup_size(kernel_size,
                                       "Kernel size should be a tuple/list of two integers")
        for ks in self.kernel_size:
            if ks <= 0 or ks % 2 == 0:
                raise ValueError("Kernel size value should be an odd and positive number.")
        self.sigma = _setup_number_or_seq(sigma, "sigma")
        if not 0.0 < self.sigma[0] <= self.sigma[1]:
            raise ValueError(
                f"sigma values should be positive and of the form (min, max). Got {self.sigma}"
            )

    def make_params(self, flat_inputs: list[Any]) -> dict[str, Any]:
        sigma = ember.empty(1).uniform_(self.sigma[0], self.sigma[1]).item()
        return dict(sigma=[sigma, sigma])

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.gaussian_blur, inpt, self.kernel_size, **params)


class GaussianNoise(Transform):
    """Add Gaussian noise to images and videos (float or uint8)."""

    def __init__(self, mean: float = 0.0, sigma: float = 0.1, clip=True) -> None:
        super().__init__()
        self.mean = mean
        self.sigma = sigma
        self.clip = clip

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.gaussian_noise, inpt, mean=self.mean, sigma=self.sigma,
                                 clip=self.clip)


class ToDtype(Transform):
    """Convert dtypes: one dtype for images and videos, or a dict ``{type: dtype}`` (with
    ``"others"`` as a catch-all); ``scale`` rescales image / video values."""

    _transformed_types = (Tensor,)

    def __init__(self, dtype, scale: bool = False) -> None:
        super().__init__()
        if not isinstance(dtype, (dict, ember.dtype)):
            raise ValueError(f"dtype must be a dict or a torch.dtype, got {type(dtype)} instead")
        if (isinstance(dtype, dict) and Tensor in dtype
                and any(cls in dtype for cls in [tv_tensors.Image, tv_tensors.Video])):
            warnings.warn(
                "Got `dtype` values for `torch.Tensor` and either `tv_tensors.Image` or "
                "`tv_tensors.Video`. Note that a plain `torch.Tensor` will *not* be transformed "
                "by this (or any other transformation) in case a `tv_tensors.Image` or "
                "`tv_tensors.Video` is present in the input.",
                stacklevel=2,
            )
        self.dtype = dtype
        self.scale = scale

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        if isinstance(self.dtype, ember.dtype):
            if not is_pure_tensor(inpt) and not isinstance(inpt, (tv_tensors.Image,
                                                                  tv_tensors.Video)):
                return inpt
            dtype = self.dtype
        elif type(inpt) in self.dtype:
            dtype = self.dtype[type(inpt)]
        elif "others" in self.dtype:
            dtype = self.dtype["others"]
        else:
            raise ValueError(
                f"No dtype was specified for type {type(inpt)}. If you only need to convert the "
                "dtype of images or videos, you can just pass e.g. dtype=torch.float32. If "
                "you're passing a dict as dtype, you can use \"others\" as a catch-all key e.g. "
                "dtype={tv_tensors.Mask: torch.int64, \"others\": None} to pass-through the rest "
                "of the inputs."
            )
        supports_scaling = is_pure_tensor(inpt) or isinstance(inpt, (tv_tensors.Image,
                                                                     tv_tensors.Video))
        if dtype is None:
            if self.scale and supports_scaling:
                warnings.warn(
                    "scale was set to True but no dtype was specified for images or videos: no "
                    "scaling will be done.",
                    stacklevel=2,
                )
            return inpt
        return self._call_kernel(F.to_dtype, inpt, dtype=dtype, scale=self.scale)


class ConvertImageDtype(Transform):
    """Convert images and videos to ``dtype``, rescaling values."""

    _v1_transform_cls = _v1.ConvertImageDtype

    def __init__(self, dtype=ember.float32) -> None:
        super().__init__()
        self.dtype = dtype

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.to_dtype, inpt, dtype=self.dtype, scale=True)


def _labels_of(labels_getter, inputs):
    labels = labels_getter(inputs)
    if labels is not None:
        msg = "The labels in the input to forward() must be a tensor or None, got {type} instead."
        if isinstance(labels, Tensor):
            labels = (labels,)
        elif isinstance(labels, (tuple, list)):
            for entry in labels:
                if not isinstance(entry, Tensor):
                    raise ValueError(msg.format(type=type(entry)))
        else:
            raise ValueError(msg.format(type=type(labels)))
    return labels


class SanitizeBoundingBoxes(Transform):
    """Remove degenerate boxes (and the matching labels and masks)."""

    def __init__(self, min_size: float = 1.0, min_area: float = 1.0,
                 labels_getter="default") -> None:
        super().__init__()
        if min_size < 1:
            raise ValueError(f"min_size must be >= 1, got {min_size}.")
        self.min_size = min_size
        if min_area < 1:
            raise ValueError(f"min_area must be >= 1, got {min_area}.")
        self.min_area = min_area
        self.labels_getter = labels_getter
        self._labels_getter = _parse_labels_getter(labels_getter)

    def forward(self, *inputs: Any) -> Any:
        inputs = inputs if len(inputs) > 1 else inputs[0]
        labels = _labels_of(self._labels_getter, inputs)
        flat_inputs, spec = tree_flatten(inputs)
        boxes = get_bounding_boxes(flat_inputs)
        if labels is not None:
            for label in labels:
                if boxes.shape[0] != label.shape[0]:
                    raise ValueError(
                        f"Number of boxes (shape={boxes.shape}) and must match the number of "
                        f"labels.Found labels with shape={label.shape})."
                    )
        valid = _get_sanitize_bounding_boxes_mask(boxes, format=boxes.format,
                                                  canvas_size=boxes.canvas_size,
                                                  min_size=self.min_size,
                                                  min_area=self.min_area)
        params = dict(valid=valid, labels=labels)
        flat_outputs = [self.transform(inpt, params) for inpt in flat_inputs]
        return tree_unflatten(flat_outputs, spec)

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        is_label = params["labels"] is not None and any(inpt is label
                                                        for label in params["labels"])
        is_bounding_boxes = isinstance(inpt, tv_tensors.BoundingBoxes)
        is_mask = isinstance(inpt, tv_tensors.Mask)
        if not (is_label or is_bounding_boxes or is_mask):
            return inpt
        try:
            output = inpt[params["valid"]]
        except IndexError:
            return inpt
        if is_label:
            return output
        return tv_tensors.wrap(output, like=inpt)


class SanitizeKeyPoints(Transform):
    """Remove keypoints (groups) outside the canvas, and the matching labels."""

    def __init__(self, labels_getter=None) -> None:
        super().__init__()
        self.labels_getter = labels_getter
        self._labels_getter = _parse_labels_getter(labels_getter)

    def forward(self, *inputs: Any) -> Any:
        inputs = inputs if len(inputs) > 1 else inputs[0]
        labels = _labels_of(self._labels_getter, inputs)
        flat_inputs, spec = tree_flatten(inputs)
        points = get_keypoints(flat_inputs)
        if labels is not None:
            for label in labels:
                if points.shape[0] != label.shape[0]:
                    raise ValueError(
                        f"Number of kepyoints (shape={points.shape}) must match the number of "
                        f"labels.Found labels with shape={label.shape})."
                    )
        valid = _get_sanitize_keypoints_mask(points.as_subclass(Tensor),
                                             canvas_size=points.canvas_size)
        params = dict(valid=valid, labels=labels)
        flat_outputs = [self.transform(inpt, params) for inpt in flat_inputs]
        return tree_unflatten(flat_outputs, spec)

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        is_label = params["labels"] is not None and any(inpt is label
                                                        for label in params["labels"])
        if not (is_label or isinstance(inpt, tv_tensors.KeyPoints)):
            return inpt
        output = inpt[params["valid"]]
        if is_label:
            return output
        return tv_tensors.wrap(output, like=inpt)
