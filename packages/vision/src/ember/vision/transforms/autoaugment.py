"""Learned augmentation policies, like ``torchvision.transforms.autoaugment``:
``AutoAugment`` (Cubuk et al., 2019), ``RandAugment``, ``TrivialAugmentWide`` and ``AugMix``.

Draws come from ember's default generator where torchvision uses torch's.
"""

from __future__ import annotations

import math
from enum import Enum

import numpy as np

import ember
from ember import Tensor
from ember.nn import Module
from ember.ops import api

from . import functional as F
from ._functional_tensor import _linspace
from .functional import InterpolationMode

__all__ = ["AutoAugmentPolicy", "AutoAugment", "RandAugment", "TrivialAugmentWide", "AugMix"]


def _shear(img, magnitude, interpolation, fill, axis):
    shear = [0.0, 0.0]
    shear[axis] = math.degrees(math.atan(magnitude))
    return F.affine(
        img,
        angle=0.0,
        translate=[0, 0],
        scale=1.0,
        shear=shear,
        interpolation=interpolation,
        fill=fill,
        center=[0, 0],
    )


def _translate(img, magnitude, interpolation, fill, axis):
    translate = [0, 0]
    translate[axis] = int(magnitude)
    return F.affine(
        img,
        angle=0.0,
        translate=translate,
        scale=1.0,
        interpolation=interpolation,
        shear=[0.0, 0.0],
        fill=fill,
    )


# op name -> fn(img, magnitude, interpolation, fill)
_OPS = {
    "ShearX": lambda img, m, i, f: _shear(img, m, i, f, 0),
    "ShearY": lambda img, m, i, f: _shear(img, m, i, f, 1),
    "TranslateX": lambda img, m, i, f: _translate(img, m, i, f, 0),
    "TranslateY": lambda img, m, i, f: _translate(img, m, i, f, 1),
    "Rotate": lambda img, m, i, f: F.rotate(img, m, interpolation=i, fill=f),
    "Brightness": lambda img, m, i, f: F.adjust_brightness(img, 1.0 + m),
    "Color": lambda img, m, i, f: F.adjust_saturation(img, 1.0 + m),
    "Contrast": lambda img, m, i, f: F.adjust_contrast(img, 1.0 + m),
    "Sharpness": lambda img, m, i, f: F.adjust_sharpness(img, 1.0 + m),
    "Posterize": lambda img, m, i, f: F.posterize(img, int(m)),
    "Solarize": lambda img, m, i, f: F.solarize(img, m),
    "AutoContrast": lambda img, m, i, f: F.autocontrast(img),
    "Equalize": lambda img, m, i, f: F.equalize(img),
    "Invert": lambda img, m, i, f: F.invert(img),
    "Identity": lambda img, m, i, f: img,
}


def _apply_op(img, op_name: str, magnitude: float, interpolation, fill):
    if op_name not in _OPS:
        raise ValueError(f"The provided operator {op_name} is not recognized.")
    return _OPS[op_name](img, magnitude, interpolation, fill)


class AutoAugmentPolicy(Enum):
    """The policies learned on ImageNet, CIFAR10 and SVHN."""

    IMAGENET = "imagenet"
    CIFAR10 = "cifar10"
    SVHN = "svhn"


# Each line is a sub-policy of two (op, probability, magnitude bin or "-") steps.
_POLICY_TEXT = {
    AutoAugmentPolicy.IMAGENET: """
Posterize 0.4 8, Rotate 0.6 9
Solarize 0.6 5, AutoContrast 0.6 -
Equalize 0.8 -, Equalize 0.6 -
Posterize 0.6 7, Posterize 0.6 6
Equalize 0.4 -, Solarize 0.2 4
Equalize 0.4 -, Rotate 0.8 8
Solarize 0.6 3, Equalize 0.6 -
Posterize 0.8 5, Equalize 1.0 -
Rotate 0.2 3, Solarize 0.6 8
Equalize 0.6 -, Posterize 0.4 6
Rotate 0.8 8, Color 0.4 0
Rotate 0.4 9, Equalize 0.6 -
Equalize 0.0 -, Equalize 0.8 -
Invert 0.6 -, Equalize 1.0 -
Color 0.6 4, Contrast 1.0 8
Rotate 0.8 8, Color 1.0 2
Color 0.8 8, Solarize 0.8 7
Sharpness 0.4 7, Invert 0.6 -
ShearX 0.6 5, Equalize 1.0 -
Color 0.4 0, Equalize 0.6 -
Equalize 0.4 -, Solarize 0.2 4
Solarize 0.6 5, AutoContrast 0.6 -
Invert 0.6 -, Equalize 1.0 -
Color 0.6 4, Contrast 1.0 8
Equalize 0.8 -, Equalize 0.6 -
""",
    AutoAugmentPolicy.CIFAR10: """
Invert 0.1 -, Contrast 0.2 6
Rotate 0.7 2, TranslateX 0.3 9
Sharpness 0.8 1, Sharpness 0.9 3
ShearY 0.5 8, TranslateY 0.7 9
AutoContrast 0.5 -, Equalize 0.9 -
ShearY 0.2 7, Posterize 0.3 7
Color 0.4 3, Brightness 0.6 7
Sharpness 0.3 9, Brightness 0.7 9
Equalize 0.6 -, Equalize 0.5 -
Contrast 0.6 7, Sharpness 0.6 5
Color 0.7 7, TranslateX 0.5 8
Equalize 0.3 -, AutoContrast 0.4 -
TranslateY 0.4 3, Sharpness 0.2 6
Brightness 0.9 6, Color 0.2 8
Solarize 0.5 2, Invert 0.0 -
Equalize 0.2 -, AutoContrast 0.6 -
Equalize 0.2 -, Equalize 0.6 -
Color 0.9 9, Equalize 0.6 -
AutoContrast 0.8 -, Solarize 0.2 8
Brightness 0.1 3, Color 0.7 0
Solarize 0.4 5, AutoContrast 0.9 -
TranslateY 0.9 9, TranslateY 0.7 9
AutoContrast 0.9 -, Solarize 0.8 3
Equalize 0.8 -, Invert 0.1 -
TranslateY 0.7 9, AutoContrast 0.9 -
""",
    AutoAugmentPolicy.SVHN: """
ShearX 0.9 4, Invert 0.2 -
ShearY 0.9 8, Invert 0.7 -
Equalize 0.6 -, Solarize 0.6 6
Invert 0.9 -, Equalize 0.6 -
Equalize 0.6 -, Rotate 0.9 3
ShearX 0.9 4, AutoContrast 0.8 -
ShearY 0.9 8, Invert 0.4 -
ShearY 0.9 5, Solarize 0.2 6
Invert 0.9 -, AutoContrast 0.8 -
Equalize 0.6 -, Rotate 0.9 3
ShearX 0.9 4, Solarize 0.3 3
ShearY 0.8 8, Invert 0.7 -
Equalize 0.9 -, TranslateY 0.6 6
Invert 0.9 -, Equalize 0.6 -
Contrast 0.3 3, Rotate 0.8 4
Invert 0.8 -, TranslateY 0.0 2
ShearY 0.7 6, Solarize 0.4 8
Invert 0.6 -, Rotate 0.8 4
ShearY 0.3 7, TranslateX 0.9 3
ShearX 0.1 6, Invert 0.6 -
Solarize 0.7 2, TranslateY 0.6 7
ShearY 0.8 4, Invert 0.8 -
ShearX 0.7 9, TranslateY 0.8 3
ShearY 0.8 5, AutoContrast 0.7 -
ShearX 0.7 2, Invert 0.1 -
""",
}


def _parse_policy(text: str):
    def step(s):
        name, p, m = s.split()
        return name, float(p), None if m == "-" else int(m)

    return [tuple(step(s) for s in line.split(",")) for line in text.strip().splitlines()]


def _space(num_bins: int, image_size, wide: bool = False, identity: bool = True) -> dict:
    """op name -> (magnitudes as float32 array, or None for magnitude-free ops; signed)."""

    def lin(hi, lo=0.0):
        return _linspace(lo, hi, num_bins, np.float32)

    shear, color, rotate = (0.99, 0.99, 135.0) if wide else (0.3, 0.9, 30.0)
    tx, ty = (
        (32.0, 32.0) if wide else (150.0 / 331.0 * image_size[1], 150.0 / 331.0 * image_size[0])
    )
    bits = 8 - np.round(np.arange(num_bins) / np.float32((num_bins - 1) / (6 if wide else 4)))
    space = {"Identity": (None, False)} if identity else {}
    space.update(
        {
            "ShearX": (lin(shear), True),
            "ShearY": (lin(shear), True),
            "TranslateX": (lin(tx), True),
            "TranslateY": (lin(ty), True),
            "Rotate": (lin(rotate), True),
            "Brightness": (lin(color), True),
            "Color": (lin(color), True),
            "Contrast": (lin(color), True),
            "Sharpness": (lin(color), True),
            "Posterize": (bits.astype(np.int32), False),
            "Solarize": (lin(0.0, 255.0), False),
            "AutoContrast": (None, False),
            "Equalize": (None, False),
        }
    )
    if not identity:  # the AutoAugment space has Invert instead of Identity
        space["Invert"] = (None, False)
    return space


def _fill_for(img, fill):
    channels = F.get_dimensions(img)[0]
    if isinstance(img, Tensor):
        if isinstance(fill, (int, float)):
            return [float(fill)] * channels
        if fill is not None:
            return [float(f) for f in fill]
    return fill


def _randint(high: int, size=(1,)):
    return ember.randint(high, size)


class _AutoAugmentBase(Module):
    """What the policies share: ``interpolation`` and ``fill`` for their geometric ops, and
    applying a random op of an augmentation space."""

    def __init__(self, interpolation: InterpolationMode, fill) -> None:
        super().__init__()
        self.interpolation = interpolation
        self.fill = fill

    def _apply_random_op(self, img, space: dict, pick_bin, fill):
        """Apply an op of ``space`` drawn uniformly at magnitude bin ``pick_bin(magnitudes)``
        (0 for magnitude-free ops), negated on a coin flip when the op is signed."""
        names = list(space)
        op_name = names[int(_randint(len(space)).item())]
        magnitudes, signed = space[op_name]
        magnitude = 0.0 if magnitudes is None else float(magnitudes[pick_bin(magnitudes)])
        if signed and bool(_randint(2).item()):
            magnitude *= -1.0
        return _apply_op(img, op_name, magnitude, self.interpolation, fill)


def _random_bin(magnitudes) -> int:
    return int(_randint(len(magnitudes)).item())


class AutoAugment(_AutoAugmentBase):
    """Apply one random sub-policy of a learned AutoAugment policy."""

    def __init__(
        self,
        policy: AutoAugmentPolicy = AutoAugmentPolicy.IMAGENET,
        interpolation: InterpolationMode = InterpolationMode.NEAREST,
        fill=None,
    ) -> None:
        super().__init__(interpolation, fill)
        self.policy = policy
        if policy not in _POLICY_TEXT:
            raise ValueError(f"The provided policy {policy} is not recognized.")
        self.policies = _parse_policy(_POLICY_TEXT[policy])

    @staticmethod
    def get_params(transform_num: int):
        """(sub-policy index, two uniform draws, two signs)."""
        policy_id = int(_randint(transform_num).item())
        probs = ember.rand((2,))
        signs = _randint(2, (2,))
        return policy_id, probs, signs

    def forward(self, img):
        fill = _fill_for(img, self.fill)
        _, height, width = F.get_dimensions(img)
        transform_id, probs, signs = self.get_params(len(self.policies))
        probs, signs = probs.tolist(), signs.tolist()
        space = _space(10, (height, width), identity=False)
        for i, (op_name, p, magnitude_id) in enumerate(self.policies[transform_id]):
            if probs[i] <= p:
                magnitudes, signed = space[op_name]
                magnitude = float(magnitudes[magnitude_id]) if magnitude_id is not None else 0.0
                if signed and signs[i] == 0:
                    magnitude *= -1.0
                img = _apply_op(img, op_name, magnitude, self.interpolation, fill)
        return img

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(policy={self.policy}, fill={self.fill})"


class RandAugment(_AutoAugmentBase):
    """Apply ``num_ops`` random ops at a fixed ``magnitude`` (Cubuk et al., 2020)."""

    def __init__(
        self,
        num_ops: int = 2,
        magnitude: int = 9,
        num_magnitude_bins: int = 31,
        interpolation: InterpolationMode = InterpolationMode.NEAREST,
        fill=None,
    ) -> None:
        super().__init__(interpolation, fill)
        self.num_ops = num_ops
        self.magnitude = magnitude
        self.num_magnitude_bins = num_magnitude_bins

    def forward(self, img):
        fill = _fill_for(img, self.fill)
        _, height, width = F.get_dimensions(img)
        space = _space(self.num_magnitude_bins, (height, width))
        for _ in range(self.num_ops):
            img = self._apply_random_op(img, space, lambda _: self.magnitude, fill)
        return img


class TrivialAugmentWide(_AutoAugmentBase):
    """Apply one random op at a random magnitude (Müller & Hutter, 2021)."""

    def __init__(
        self,
        num_magnitude_bins: int = 31,
        interpolation: InterpolationMode = InterpolationMode.NEAREST,
        fill=None,
    ) -> None:
        super().__init__(interpolation, fill)
        self.num_magnitude_bins = num_magnitude_bins

    def forward(self, img):
        fill = _fill_for(img, self.fill)
        space = _space(self.num_magnitude_bins, (0, 0), wide=True)
        return self._apply_random_op(img, space, _random_bin, fill)


class AugMix(_AutoAugmentBase):
    """AugMix (Hendrycks et al., 2020): a Beta-weighted mix of the image with a
    Dirichlet-weighted sum of ``mixture_width`` chains of random ops."""

    _PARAMETER_MAX = 10

    def __init__(
        self,
        severity: int = 3,
        mixture_width: int = 3,
        chain_depth: int = -1,
        alpha: float = 1.0,
        all_ops: bool = True,
        interpolation: InterpolationMode = InterpolationMode.BILINEAR,
        fill=None,
    ) -> None:
        super().__init__(interpolation, fill)
        if not (1 <= severity <= self._PARAMETER_MAX):
            raise ValueError(
                f"The severity must be between [1, {self._PARAMETER_MAX}]. Got {severity} instead."
            )
        self.severity = severity
        self.mixture_width = mixture_width
        self.chain_depth = chain_depth
        self.alpha = alpha
        self.all_ops = all_ops

    def _augmentation_space(self, num_bins: int, image_size) -> dict:
        """op name -> (magnitudes as float32 array, or None; signed), in torchvision's order."""

        def lin(hi, lo=0.0):
            return _linspace(lo, hi, num_bins, np.float32)

        bits = 4 - np.round(np.arange(num_bins) / np.float32((num_bins - 1) / 4))
        s = {
            "ShearX": (lin(0.3), True),
            "ShearY": (lin(0.3), True),
            "TranslateX": (lin(image_size[1] / 3.0), True),
            "TranslateY": (lin(image_size[0] / 3.0), True),
            "Rotate": (lin(30.0), True),
            "Posterize": (bits.astype(np.int32), False),
            "Solarize": (lin(0.0, 255.0), False),
            "AutoContrast": (None, False),
            "Equalize": (None, False),
        }
        if self.all_ops:
            for name in ("Brightness", "Color", "Contrast", "Sharpness"):
                s[name] = (lin(0.9), True)
        return s

    def _sample_dirichlet(self, params: Tensor) -> Tensor:
        """One Dirichlet draw per row of ``params`` (normalised Gamma draws, like
        ``torch._sample_dirichlet``); a separate method so tests can fix the weights."""
        gamma = api.rng(params.device).standard_gamma(params._host().astype(np.float64))
        out = gamma / gamma.sum(-1, keepdims=True)
        return ember.as_tensor(out.astype(params._host().dtype), device=params.device)

    def forward(self, orig_img):
        fill = self.fill
        channels, height, width = F.get_dimensions(orig_img)
        if isinstance(orig_img, Tensor):
            img = orig_img
            fill = _fill_for(img, fill)
        else:
            img = F.pil_to_tensor(orig_img)
        op_meta = self._augmentation_space(self._PARAMETER_MAX, (height, width))
        orig_dims = list(img.shape)
        batch = img.view([1] * max(4 - img.ndim, 0) + orig_dims)
        n = batch.shape[0]
        batch_dims = [n] + [1] * (batch.ndim - 1)
        alpha = ember.tensor([self.alpha, self.alpha], device=batch.device).expand(n, -1)
        m = self._sample_dirichlet(alpha)
        weights = ember.tensor([self.alpha] * self.mixture_width, device=batch.device)
        combined_weights = self._sample_dirichlet(weights.expand(n, -1)) * m[:, 1].view([n, -1])
        mix = m[:, 0].view(batch_dims) * batch

        def severity_bin(_magnitudes) -> int:
            return int(_randint(self.severity).item())

        for i in range(self.mixture_width):
            aug = batch
            depth = self.chain_depth
            if depth <= 0:
                depth = int(ember.randint(1, 4, (1,)).item())
            for _ in range(depth):
                aug = self._apply_random_op(aug, op_meta, severity_bin, fill)
            mix.add_(combined_weights[:, i].view(batch_dims) * aug)
        mix = mix.view(orig_dims).to(dtype=img.dtype)
        if not isinstance(orig_img, Tensor):
            return F.to_pil_image(mix)
        return mix

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}(severity={self.severity}, "
            f"mixture_width={self.mixture_width}, chain_depth={self.chain_depth}, "
            f"alpha={self.alpha}, all_ops={self.all_ops}, "
            f"interpolation={self.interpolation}, fill={self.fill})"
        )
