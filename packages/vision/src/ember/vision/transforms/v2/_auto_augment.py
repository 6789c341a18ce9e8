"""Automatic augmentation policies: AutoAugment, RandAugment, TrivialAugmentWide, AugMix.

They transform the single image or video of a sample (boxes and masks are refused)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import PIL.Image

import ember
from ember import Tensor
from ember.vision import tv_tensors
from ember.vision.transforms import autoaugment as _v1_aa
from ember.vision.transforms.autoaugment import AutoAugmentPolicy

from . import functional as F
from ._transform import Transform
from ._utils import (
    _get_fill,
    _setup_fill_arg,
    check_type,
    is_pure_tensor,
    tree_flatten,
    tree_unflatten,
)
from .functional._misc import _max_value


def _linspace(start, end):
    return lambda num_bins, height, width: ember.linspace(start, end, num_bins)


def _scaled(fraction, dim):
    def magnitudes(num_bins, height, width):
        size = width if dim == "w" else height
        return ember.linspace(0.0, fraction * size, num_bins)

    return magnitudes


def _posterize_bins(top: int, div: int):
    def magnitudes(num_bins, height, width):
        return (top - ember.arange(num_bins) / ((num_bins - 1) / div)).round().int()

    return magnitudes


def _none(num_bins, height, width):
    return None


class _AutoAugmentBase(Transform):
    def __init__(self, *, interpolation="nearest", fill=None) -> None:
        super().__init__()
        self.interpolation = interpolation
        self.fill = fill
        self._fill = _setup_fill_arg(fill)

    def _get_random_item(self, dct: dict) -> tuple[str, tuple[Callable, bool]]:
        keys = tuple(dct.keys())
        key = keys[int(ember.randint(len(keys), ()))]
        return key, dct[key]

    def _flatten_and_extract_image_or_video(
        self, inputs: Any,
        unsupported_types: tuple = (tv_tensors.BoundingBoxes, tv_tensors.Mask,
                                    tv_tensors.KeyPoints),
    ):
        flat_inputs, spec = tree_flatten(inputs if len(inputs) > 1 else inputs[0])
        needs_transform_list = self._needs_transform_list(flat_inputs)
        image_or_videos = []
        for idx, (inpt, needs) in enumerate(zip(flat_inputs, needs_transform_list)):
            if needs and check_type(inpt, (tv_tensors.Image, PIL.Image.Image, is_pure_tensor,
                                           tv_tensors.Video)):
                image_or_videos.append((idx, inpt))
            elif isinstance(inpt, unsupported_types):
                raise TypeError(
                    f"Inputs of type {type(inpt).__name__} are not supported by "
                    f"{type(self).__name__}()"
                )
        if not image_or_videos:
            raise TypeError("Found no image in the sample.")
        if len(image_or_videos) > 1:
            raise TypeError(
                "Auto augment transformations are only properly defined for a single image or "
                f"video, but found {len(image_or_videos)}."
            )
        idx, image_or_video = image_or_videos[0]
        return (flat_inputs, spec, idx), image_or_video

    def _unflatten_and_insert_image_or_video(self, flat_inputs_with_spec, image_or_video):
        flat_inputs, spec, idx = flat_inputs_with_spec
        flat_inputs[idx] = image_or_video
        return tree_unflatten(flat_inputs, spec)

    def _apply_image_or_video_transform(self, image, transform_id: str, magnitude: float,
                                        interpolation, fill):
        fill_ = _get_fill(fill, type(image))
        if transform_id == "Identity":
            return image
        elif transform_id == "ShearX":
            return F.affine(image, angle=0.0, translate=[0, 0], scale=1.0,
                            shear=[math.degrees(math.atan(magnitude)), 0.0],
                            interpolation=interpolation, fill=fill_, center=[0, 0])
        elif transform_id == "ShearY":
            return F.affine(image, angle=0.0, translate=[0, 0], scale=1.0,
                            shear=[0.0, math.degrees(math.atan(magnitude))],
                            interpolation=interpolation, fill=fill_, center=[0, 0])
        elif transform_id == "TranslateX":
            return F.affine(image, angle=0.0, translate=[int(magnitude), 0], scale=1.0,
                            interpolation=interpolation, shear=[0.0, 0.0], fill=fill_)
        elif transform_id == "TranslateY":
            return F.affine(image, angle=0.0, translate=[0, int(magnitude)], scale=1.0,
                            interpolation=interpolation, shear=[0.0, 0.0], fill=fill_)
        elif transform_id == "Rotate":
            return F.rotate(image, angle=magnitude, interpolation=interpolation, fill=fill_)
        elif transform_id == "Brightness":
            return F.adjust_brightness(image, brightness_factor=1.0 + magnitude)
        elif transform_id == "Color":
            return F.adjust_saturation(image, saturation_factor=1.0 + magnitude)
        elif transform_id == "Contrast":
            return F.adjust_contrast(image, contrast_factor=1.0 + magnitude)
        elif transform_id == "Sharpness":
            return F.adjust_sharpness(image, sharpness_factor=1.0 + magnitude)
        elif transform_id == "Posterize":
            return F.posterize(image, bits=int(magnitude))
        elif transform_id == "Solarize":
            bound = _max_value(image.dtype) if isinstance(image, Tensor) else 255.0
            return F.solarize(image, threshold=bound * magnitude)
        elif transform_id == "AutoContrast":
            return F.autocontrast(image)
        elif transform_id == "Equalize":
            return F.equalize(image)
        elif transform_id == "Invert":
            return F.invert(image)
        raise ValueError(f"No transform available for {transform_id}")


def _magnitude(magnitudes_fn, signed, num_bins, height, width, index_fn) -> float:
    magnitudes = magnitudes_fn(num_bins, height, width)
    if magnitudes is None:
        return 0.0
    magnitude = float(magnitudes[index_fn()])
    if signed and ember.rand(()) <= 0.5:
        magnitude *= -1
    return magnitude


_BASE_SPACE = {
    "ShearX": (_linspace(0.0, 0.3), True),
    "ShearY": (_linspace(0.0, 0.3), True),
    "TranslateX": (_scaled(150.0 / 331.0, "w"), True),
    "TranslateY": (_scaled(150.0 / 331.0, "h"), True),
    "Rotate": (_linspace(0.0, 30.0), True),
    "Brightness": (_linspace(0.0, 0.9), True),
    "Color": (_linspace(0.0, 0.9), True),
    "Contrast": (_linspace(0.0, 0.9), True),
    "Sharpness": (_linspace(0.0, 0.9), True),
    "Posterize": (_posterize_bins(8, 4), False),
    "Solarize": (_linspace(1.0, 0.0), False),
    "AutoContrast": (_none, False),
    "Equalize": (_none, False),
}


class AutoAugment(_AutoAugmentBase):
    """AutoAugment: one random sub-policy of a learned ``policy`` per call."""

    _v1_transform_cls = _v1_aa.AutoAugment
    _AUGMENTATION_SPACE = {**_BASE_SPACE, "Invert": (_none, False)}

    def __init__(self, policy: AutoAugmentPolicy = AutoAugmentPolicy.IMAGENET,
                 interpolation="nearest", fill=None) -> None:
        super().__init__(interpolation=interpolation, fill=fill)
        self.policy = policy
        self._policies = self._get_policies(policy)

    def _get_policies(self, policy: AutoAugmentPolicy):
        if policy not in _v1_aa._POLICY_TEXT:
            raise ValueError(f"The provided policy {policy} is not recognized.")
        return _v1_aa._parse_policy(_v1_aa._POLICY_TEXT[policy])

    def forward(self, *inputs: Any) -> Any:
        flat_inputs_with_spec, image_or_video = self._flatten_and_extract_image_or_video(inputs)
        height, width = F.get_size(image_or_video)
        policy = self._policies[int(ember.randint(len(self._policies), ()))]
        for transform_id, probability, magnitude_idx in policy:
            if not ember.rand(()) <= probability:
                continue
            magnitudes_fn, signed = self._AUGMENTATION_SPACE[transform_id]
            magnitude = _magnitude(magnitudes_fn, signed, 10, height, width,
                                   lambda idx=magnitude_idx: idx)
            image_or_video = self._apply_image_or_video_transform(
                image_or_video, transform_id, magnitude, interpolation=self.interpolation,
                fill=self._fill)
        return self._unflatten_and_insert_image_or_video(flat_inputs_with_spec, image_or_video)


class RandAugment(_AutoAugmentBase):
    """RandAugment: ``num_ops`` random ops at a fixed ``magnitude``."""

    _v1_transform_cls = _v1_aa.RandAugment
    _AUGMENTATION_SPACE = {"Identity": (_none, False), **_BASE_SPACE}

    def __init__(self, num_ops: int = 2, magnitude: int = 9, num_magnitude_bins: int = 31,
                 interpolation="nearest", fill=None) -> None:
        super().__init__(interpolation=interpolation, fill=fill)
        if not isinstance(num_ops, int) or (num_ops < 0):
            raise ValueError(
                f"num_ops should be a non-negative integer, but got {num_ops} instead."
            )
        self.num_ops = num_ops
        self.magnitude = magnitude
        self.num_magnitude_bins = num_magnitude_bins

    def forward(self, *inputs: Any) -> Any:
        flat_inputs_with_spec, image_or_video = self._flatten_and_extract_image_or_video(inputs)
        height, width = F.get_size(image_or_video)
        for _ in range(self.num_ops):
            transform_id, (magnitudes_fn, signed) = self._get_random_item(
                self._AUGMENTATION_SPACE)
            magnitude = _magnitude(magnitudes_fn, signed, self.num_magnitude_bins, height, width,
                                   lambda: self.magnitude)
            image_or_video = self._apply_image_or_video_transform(
                image_or_video, transform_id, magnitude, interpolation=self.interpolation,
                fill=self._fill)
        return self._unflatten_and_insert_image_or_video(flat_inputs_with_spec, image_or_video)


class TrivialAugmentWide(_AutoAugmentBase):
    """TrivialAugment Wide: one random op at a random magnitude."""

    _v1_transform_cls = _v1_aa.TrivialAugmentWide
    _AUGMENTATION_SPACE = {
        "Identity": (_none, False),
        "ShearX": (_linspace(0.0, 0.99), True),
        "ShearY": (_linspace(0.0, 0.99), True),
        "TranslateX": (_linspace(0.0, 32.0), True),
        "TranslateY": (_linspace(0.0, 32.0), True),
        "Rotate": (_linspace(0.0, 135.0), True),
        "Brightness": (_linspace(0.0, 0.99), True),
        "Color": (_linspace(0.0, 0.99), True),
        "Contrast": (_linspace(0.0, 0.99), True),
        "Sharpness": (_linspace(0.0, 0.99), True),
        "Posterize": (_posterize_bins(8, 6), False),
        "Solarize": (_linspace(1.0, 0.0), False),
        "AutoContrast": (_none, False),
        "Equalize": (_none, False),
    }

    def __init__(self, num_magnitude_bins: int = 31, interpolation="nearest", fill=None):
        super().__init__(interpolation=interpolation, fill=fill)
        self.num_magnitude_bins = num_magnitude_bins

    def forward(self, *inputs: Any) -> Any:
        flat_inputs_with_spec, image_or_video = self._flatten_and_extract_image_or_video(inputs)
        height, width = F.get_size(image_or_video)
        transform_id, (magnitudes_fn, signed) = self._get_random_item(self._AUGMENTATION_SPACE)
        magnitude = _magnitude(magnitudes_fn, signed, self.num_magnitude_bins, height, width,
                               lambda: int(ember.randint(self.num_magnitude_bins, ())))
        image_or_video = self._apply_image_or_video_transform(
            image_or_video, transform_id, magnitude, interpolation=self.interpolation,
            fill=self._fill)
        return self._unflatten_and_insert_image_or_video(flat_inputs_with_spec, image_or_video)


class AugMix(_AutoAugmentBase):
    """AugMix: a Dirichlet-weighted mix of ``mixture_width`` chains of random ops."""

    _v1_transform_cls = _v1_aa.AugMix
    _PARTIAL_AUGMENTATION_SPACE = {
        "ShearX": (_linspace(0.0, 0.3), True),
        "ShearY": (_linspace(0.0, 0.3), True),
        "TranslateX": (_scaled(1.0 / 3.0, "w"), True),
        "TranslateY": (_scaled(1.0 / 3.0, "h"), True),
        "Rotate": (_linspace(0.0, 30.0), True),
        "Posterize": (_posterize_bins(4, 4), False),
        "Solarize": (_linspace(1.0, 0.0), False),
        "AutoContrast": (_none, False),
        "Equalize": (_none, False),
    }
    _AUGMENTATION_SPACE = {
        **_PARTIAL_AUGMENTATION_SPACE,
        "Brightness": (_linspace(0.0, 0.9), True),
        "Color": (_linspace(0.0, 0.9), True),
        "Contrast": (_linspace(0.0, 0.9), True),
        "Sharpness": (_linspace(0.0, 0.9), True),
    }

    def __init__(self, severity: int = 3, mixture_width: int = 3, chain_depth: int = -1,
                 alpha: float = 1.0, all_ops: bool = True, interpolation="bilinear",
                 fill=None) -> None:
        super().__init__(interpolation=interpolation, fill=fill)
        self._PARAMETER_MAX = 10
        if not (1 <= severity <= self._PARAMETER_MAX):
            raise ValueError(
                f"The severity must be between [1, {self._PARAMETER_MAX}]. Got {severity} "
                "instead."
            )
        self.severity = severity
        self.mixture_width = mixture_width
        self.chain_depth = chain_depth
        self.alpha = alpha
        self.all_ops = all_ops

    def _sample_dirichlet(self, params: Tensor) -> Tensor:
        return _v1_aa.AugMix._sample_dirichlet(self, params)

    def forward(self, *inputs: Any) -> Any:
        flat_inputs_with_spec, orig = self._flatten_and_extract_image_or_video(inputs)
        height, width = F.get_size(orig)
        if isinstance(orig, Tensor):
            image_or_video = orig.as_subclass(Tensor)
        else:
            image_or_video = F.pil_to_tensor(orig)
        space = self._AUGMENTATION_SPACE if self.all_ops else self._PARTIAL_AUGMENTATION_SPACE
        orig_dims = list(image_or_video.shape)
        expected_ndim = 5 if isinstance(orig, tv_tensors.Video) else 4
        batch = image_or_video.reshape([1] * max(expected_ndim - image_or_video.ndim, 0)
                                       + orig_dims)
        batch_dims = [batch.size(0)] + [1] * (batch.ndim - 1)
        m = self._sample_dirichlet(
            ember.tensor([self.alpha, self.alpha], device=batch.device).expand(batch_dims[0], -1))
        combined_weights = self._sample_dirichlet(
            ember.tensor([self.alpha] * self.mixture_width, device=batch.device).expand(
                batch_dims[0], -1)) * m[:, 1].reshape([batch_dims[0], -1])
        mix = m[:, 0].reshape(batch_dims) * batch
        for i in range(self.mixture_width):
            aug = batch
            depth = (self.chain_depth if self.chain_depth > 0
                     else int(ember.randint(low=1, high=4, size=(1,)).item()))
            for _ in range(depth):
                transform_id, (magnitudes_fn, signed) = self._get_random_item(space)
                magnitude = _magnitude(magnitudes_fn, signed, self._PARAMETER_MAX, height, width,
                                       lambda: int(ember.randint(self.severity, ())))
                aug = self._apply_image_or_video_transform(aug, transform_id, magnitude,
                                                           interpolation=self.interpolation,
                                                           fill=self._fill)
            mix = mix + combined_weights[:, i].reshape(batch_dims) * aug
        mix = mix.reshape(orig_dims).to(dtype=image_or_video.dtype)
        if isinstance(orig, (tv_tensors.Image, tv_tensors.Video)):
            mix = tv_tensors.wrap(mix, like=orig)
        elif isinstance(orig, PIL.Image.Image):
            mix = F.to_pil_image(mix)
        return self._unflatten_and_insert_image_or_video(flat_inputs_with_spec, mix)
