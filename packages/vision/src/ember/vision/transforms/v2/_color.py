"""Colour transforms."""

from __future__ import annotations

import collections.abc
from typing import Any

import ember
from ember.vision.transforms import transforms as _v1

from . import functional as F
from ._transform import Transform, _RandomApplyTransform
from ._utils import query_chw


class Grayscale(Transform):
    """Convert to greyscale with ``num_output_channels`` (1 or 3)."""

    _v1_transform_cls = _v1.Grayscale

    def __init__(self, num_output_channels: int = 1):
        super().__init__()
        self.num_output_channels = num_output_channels

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.rgb_to_grayscale, inpt,
                                 num_output_channels=self.num_output_channels)


class RandomGrayscale(_RandomApplyTransform):
    """Convert to greyscale (keeping the channel count) with probability ``p``."""

    _v1_transform_cls = _v1.RandomGrayscale

    def __init__(self, p: float = 0.1) -> None:
        super().__init__(p=p)

    def make_params(self, flat_inputs: list[Any]) -> dict[str, Any]:
        num_input_channels, *_ = query_chw(flat_inputs)
        return dict(num_input_channels=num_input_channels)

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.rgb_to_grayscale, inpt,
                                 num_output_channels=params["num_input_channels"])


class RGB(Transform):
    """Convert greyscale images to RGB (RGB images are passed through)."""

    def __init__(self):
        super().__init__()

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.grayscale_to_rgb, inpt)


class ColorJitter(Transform):
    """Random brightness, contrast, saturation and hue, applied in a random order."""

    _v1_transform_cls = _v1.ColorJitter

    def __init__(self, brightness=None, contrast=None, saturation=None, hue=None) -> None:
        super().__init__()
        self.brightness = self._check_input(brightness, "brightness")
        self.contrast = self._check_input(contrast, "contrast")
        self.saturation = self._check_input(saturation, "saturation")
        self.hue = self._check_input(hue, "hue", center=0, bound=(-0.5, 0.5),
                                     clip_first_on_zero=False)

    def _check_input(self, value, name: str, center: float = 1.0,
                     bound: tuple[float, float] = (0, float("inf")),
                     clip_first_on_zero: bool = True):
        if value is None:
            return None
        if isinstance(value, (int, float)):
            if value < 0:
                raise ValueError(f"If {name} is a single number, it must be non negative.")
            value = [center - value, center + value]
            if clip_first_on_zero:
                value[0] = max(value[0], 0.0)
        elif isinstance(value, collections.abc.Sequence) and len(value) == 2:
            value = [float(v) for v in value]
        else:
            raise TypeError(
                f"{name}={value} should be a single number or a sequence with length 2."
            )
        if not bound[0] <= value[0] <= value[1] <= bound[1]:
            raise ValueError(
                f"{name} values should be between {bound} and increasing, but got {value}."
            )
        return None if value[0] == value[1] == center else (float(value[0]), float(value[1]))

    @staticmethod
    def _generate_value(left: float, right: float) -> float:
        return float(ember.empty(1).uniform_(left, right).item())

    def make_params(self, flat_inputs: list[Any]) -> dict[str, Any]:
        fn_idx = ember.randperm(4)
        b = None if self.brightness is None else self._generate_value(*self.brightness)
        c = None if self.contrast is None else self._generate_value(*self.contrast)
        s = None if self.saturation is None else self._generate_value(*self.saturation)
        h = None if self.hue is None else self._generate_value(*self.hue)
        return dict(fn_idx=fn_idx, brightness_factor=b, contrast_factor=c, saturation_factor=s,
                    hue_factor=h)

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        output = inpt
        for fn_id in params["fn_idx"]:
            fn_id = int(fn_id)
            if fn_id == 0 and params["brightness_factor"] is not None:
                output = self._call_kernel(F.adjust_brightness, output,
                                           brightness_factor=params["brightness_factor"])
            elif fn_id == 1 and params["contrast_factor"] is not None:
                output = self._call_kernel(F.adjust_contrast, output,
                                           contrast_factor=params["contrast_factor"])
            elif fn_id == 2 and params["saturation_factor"] is not None:
                output = self._call_kernel(F.adjust_saturation, output,
                                           saturation_factor=params["saturation_factor"])
            elif fn_id == 3 and params["hue_factor"] is not None:
                output = self._call_kernel(F.adjust_hue, output, hue_factor=params["hue_factor"])
        return output


class RandomChannelPermutation(Transform):
    """Permute the channels randomly."""

    def make_params(self, flat_inputs: list[Any]) -> dict[str, Any]:
        num_channels, *_ = query_chw(flat_inputs)
        return dict(permutation=ember.randperm(num_channels).tolist())

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.permute_channels, inpt, params["permutation"])


class RandomPhotometricDistort(Transform):
    """The SSD photometric distortions, each applied with probability ``p``."""

    def __init__(self, brightness=(0.875, 1.125), contrast=(0.5, 1.5), saturation=(0.5, 1.5),
                 hue=(-0.05, 0.05), p: float = 0.5):
        super().__init__()
        self.brightness = brightness
        self.contrast = contrast
        self.hue = hue
        self.saturation = saturation
        self.p = p

    def make_params(self, flat_inputs: list[Any]) -> dict[str, Any]:
        num_channels, *_ = query_chw(flat_inputs)
        params: dict[str, Any] = {
            key: ColorJitter._generate_value(rng[0], rng[1]) if ember.rand(1) < self.p else None
            for key, rng in [
                ("brightness_factor", self.brightness),
                ("contrast_factor", self.contrast),
                ("saturation_factor", self.saturation),
                ("hue_factor", self.hue),
            ]
        }
        params["contrast_before"] = bool(ember.rand(()) < 0.5)
        params["channel_permutation"] = (ember.randperm(num_channels).tolist()
                                         if ember.rand(1) < self.p else None)
        return params

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        if params["brightness_factor"] is not None:
            inpt = self._call_kernel(F.adjust_brightness, inpt,
                                     brightness_factor=params["brightness_factor"])
        if params["contrast_factor"] is not None and params["contrast_before"]:
            inpt = self._call_kernel(F.adjust_contrast, inpt,
                                     contrast_factor=params["contrast_factor"])
        if params["saturation_factor"] is not None:
            inpt = self._call_kernel(F.adjust_saturation, inpt,
                                     saturation_factor=params["saturation_factor"])
        if params["hue_factor"] is not None:
            inpt = self._call_kernel(F.adjust_hue, inpt, hue_factor=params["hue_factor"])
        if params["contrast_factor"] is not None and not params["contrast_before"]:
            inpt = self._call_kernel(F.adjust_contrast, inpt,
                                     contrast_factor=params["contrast_factor"])
        if params["channel_permutation"] is not None:
            inpt = self._call_kernel(F.permute_channels, inpt,
                                     permutation=params["channel_permutation"])
        return inpt


class RandomEqualize(_RandomApplyTransform):
    """Equalise the histogram with probability ``p``."""

    _v1_transform_cls = getattr(_v1, "RandomEqualize", None)

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.equalize, inpt)


class RandomInvert(_RandomApplyTransform):
    """Invert colours with probability ``p``."""

    _v1_transform_cls = _v1.RandomInvert

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.invert, inpt)


class RandomPosterize(_RandomApplyTransform):
    """Keep ``bits`` bits per channel with probability ``p``."""

    _v1_transform_cls = _v1.RandomPosterize

    def __init__(self, bits: int, p: float = 0.5) -> None:
        super().__init__(p=p)
        self.bits = bits

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.posterize, inpt, bits=self.bits)


class RandomSolarize(_RandomApplyTransform):
    """Invert pixels at or above ``threshold`` with probability ``p``."""

    _v1_transform_cls = _v1.RandomSolarize

    def __init__(self, threshold: float, p: float = 0.5) -> None:
        super().__init__(p=p)
        self.threshold = threshold

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.solarize, inpt, threshold=self.threshold)


class RandomAutocontrast(_RandomApplyTransform):
    """Autocontrast with probability ``p``."""

    _v1_transform_cls = _v1.RandomAutocontrast

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.autocontrast, inpt)


class RandomAdjustSharpness(_RandomApplyTransform):
    """Adjust sharpness by ``sharpness_factor`` with probability ``p``."""

    _v1_transform_cls = _v1.RandomAdjustSharpness

    def __init__(self, sharpness_factor: float, p: float = 0.5) -> None:
        super().__init__(p=p)
        self.sharpness_factor = sharpness_factor

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.adjust_sharpness, inpt,
                                 sharpness_factor=self.sharpness_factor)
