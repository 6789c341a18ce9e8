"""Transform classes, like ``torchvision.transforms`` (v1).

Random parameters are drawn from ember's default generator (``ember.rand``, ``ember.randint``,
``ember.empty(...).uniform_``) wherever torchvision draws from torch's, so ``ember.manual_seed``
makes a pipeline deterministic; ``RandomOrder``/``RandomChoice`` use Python's ``random`` as
torchvision does.
"""

from __future__ import annotations

import math
import numbers
import random
import warnings
from collections.abc import Sequence

import ember
from ember import Tensor
from ember.nn import Module

from . import functional as F
from .functional import InterpolationMode, _interpolation_modes_from_int

__all__ = [
    "Compose",
    "ToTensor",
    "PILToTensor",
    "ConvertImageDtype",
    "ToPILImage",
    "Normalize",
    "LinearTransformation",
    "Resize",
    "CenterCrop",
    "Pad",
    "Lambda",
    "RandomApply",
    "RandomChoice",
    "RandomOrder",
    "RandomCrop",
    "RandomHorizontalFlip",
    "RandomVerticalFlip",
    "RandomResizedCrop",
    "FiveCrop",
    "TenCrop",
    "ColorJitter",
    "RandomRotation",
    "RandomAffine",
    "RandomPerspective",
    "ElasticTransform",
    "Grayscale",
    "RandomGrayscale",
    "RandomErasing",
    "GaussianBlur",
    "InterpolationMode",
    "RandomInvert",
    "RandomPosterize",
    "RandomSolarize",
    "RandomAdjustSharpness",
    "RandomAutocontrast",
    "RandomEqualize",
]


def _uniform(low: float, high: float) -> float:
    return float(ember.empty(1).uniform_(low, high).item())


def _randint(low: int, high: int) -> int:
    return int(ember.randint(low, high, size=(1,)).item())


def _coin(p: float) -> bool:
    """``torch.rand(1) < p``."""
    return float(ember.rand(1).item()) < p


def _setup_size(size, error_msg):
    if isinstance(size, numbers.Number):
        return (int(size), int(size))
    if isinstance(size, Sequence) and len(size) == 1:
        return (size[0], size[0])
    if len(size) != 2:
        raise ValueError(error_msg)
    return size


def _check_sequence_input(x, name, req_sizes):
    msg = req_sizes[0] if len(req_sizes) < 2 else " or ".join([str(s) for s in req_sizes])
    if not isinstance(x, Sequence):
        raise TypeError(f"{name} should be a sequence of length {msg}.")
    if len(x) not in req_sizes:
        raise ValueError(f"{name} should be a sequence of length {msg}.")


def _setup_angle(x, name, req_sizes=(2,)):
    if isinstance(x, numbers.Number):
        if x < 0:
            raise ValueError(f"If {name} is a single number, it must be positive.")
        x = [-x, x]
    else:
        _check_sequence_input(x, name, req_sizes)
    return [float(d) for d in x]


def _interp(interpolation):
    return (
        _interpolation_modes_from_int(interpolation)
        if isinstance(interpolation, int)
        else interpolation
    )


def _setup_fill(fill):
    if fill is None:
        return 0
    if not isinstance(fill, (Sequence, numbers.Number)):
        raise TypeError("Fill should be either a sequence or a number.")
    return fill


def _tensor_fill(img, fill, channels):
    if isinstance(img, Tensor):
        return (
            [float(fill)] * channels if isinstance(fill, (int, float)) else [float(f) for f in fill]
        )
    return fill


_SIZE_MSG = "Please provide only two dimensions (h, w) for size."


def _check_scale_ratio(scale, ratio):
    """``(scale, ratio)`` of a random box, checked as torchvision does (a warning when a range
    is reversed)."""
    if not isinstance(scale, Sequence):
        raise TypeError("Scale should be a sequence")
    if not isinstance(ratio, Sequence):
        raise TypeError("Ratio should be a sequence")
    if scale[0] > scale[1] or ratio[0] > ratio[1]:
        warnings.warn("Scale and ratio should be of kind (min, max)", stacklevel=3)
    return scale, ratio


def _random_box_sides(area, scale, ratio):
    """Ten draws of a box of ``area * U(scale)`` with a log-uniform aspect ratio in ``ratio``:
    ``(round(sqrt(a * r)), round(sqrt(a / r)))`` each, drawn as late as torchvision draws."""
    log_ratio = ember.log(ember.tensor(ratio))
    lo, hi = float(log_ratio[0].item()), float(log_ratio[1].item())
    for _ in range(10):
        box_area = area * _uniform(scale[0], scale[1])
        aspect_ratio = float(ember.exp(ember.empty(1).uniform_(lo, hi)).item())
        yield (
            int(round(math.sqrt(box_area * aspect_ratio))),
            int(round(math.sqrt(box_area / aspect_ratio))),
        )


def _apply_in_turn(transforms, img):
    for t in transforms:
        img = t(img)
    return img


def _repr_no_args(self) -> str:
    """``Name()``: the repr of the transforms that print no arguments."""
    return f"{self.__class__.__name__}()"


def _repr_transforms(self) -> str:
    """``Name(`` then each of ``self.transforms`` on its own indented line, then ``)``."""
    body = "".join(f"\n    {t}" for t in self.transforms)
    return f"{self.__class__.__name__}({body}\n)"


class Compose:
    """Chain transforms."""

    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, img):
        return _apply_in_turn(self.transforms, img)

    __repr__ = _repr_transforms


class ToTensor:
    """PIL image / ndarray (H x W x C) to a float tensor (C x H x W) in [0, 1]."""

    def __call__(self, pic):
        return F.to_tensor(pic)

    __repr__ = _repr_no_args


class PILToTensor:
    """PIL image to a tensor (C x H x W) of the same dtype."""

    def __call__(self, pic):
        return F.pil_to_tensor(pic)

    __repr__ = _repr_no_args


class ConvertImageDtype(Module):
    """Convert a tensor image to ``dtype`` and scale its values."""

    def __init__(self, dtype) -> None:
        super().__init__()
        self.dtype = dtype

    def forward(self, image):
        return F.convert_image_dtype(image, self.dtype)


class ToPILImage:
    """Tensor or ndarray to a PIL image."""

    def __init__(self, mode=None):
        self.mode = mode

    def __call__(self, pic):
        return F.to_pil_image(pic, self.mode)

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}()"
            if self.mode is None
            else f"{self.__class__.__name__}(mode={self.mode})"
        )


class Normalize(Module):
    """Normalise a float tensor image with per-channel mean and std."""

    def __init__(self, mean, std, inplace=False):
        super().__init__()
        self.mean = mean
        self.std = std
        self.inplace = inplace

    def forward(self, tensor):
        return F.normalize(tensor, self.mean, self.std, self.inplace)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(mean={self.mean}, std={self.std})"


class LinearTransformation(Module):
    """Flatten a tensor image, subtract ``mean_vector`` and multiply by the square
    ``transformation_matrix`` (``D x D``, ``D = C * H * W``; e.g. a whitening matrix), then
    restore the shape. Tensors only, as in torchvision."""

    def __init__(self, transformation_matrix: Tensor, mean_vector: Tensor) -> None:
        super().__init__()
        size = tuple(transformation_matrix.size())
        if transformation_matrix.size(0) != transformation_matrix.size(1):
            raise ValueError(f"transformation_matrix should be square. Got {size} rectangular "
                             "matrix.")
        if mean_vector.size(0) != transformation_matrix.size(0):
            raise ValueError(f"mean_vector should have the same length {mean_vector.size(0)} as "
                             f"any one of the dimensions of the transformation_matrix [{size}]")
        if transformation_matrix.device != mean_vector.device:
            raise ValueError("Input tensors should be on the same device. Got "
                             f"{transformation_matrix.device} and {mean_vector.device}")
        if transformation_matrix.dtype != mean_vector.dtype:
            raise ValueError("Input tensors should have the same dtype. Got "
                             f"{transformation_matrix.dtype} and {mean_vector.dtype}")
        self.transformation_matrix = transformation_matrix
        self.mean_vector = mean_vector

    def forward(self, tensor: Tensor) -> Tensor:
        shape = tensor.shape
        n = shape[-3] * shape[-2] * shape[-1]
        if n != self.transformation_matrix.shape[0]:
            raise ValueError("Input tensor and transformation matrix have incompatible shape."
                             f"[{shape[-3]} x {shape[-2]} x {shape[-1]}] != "
                             f"{self.transformation_matrix.shape[0]}")
        if tensor.device.type != self.mean_vector.device.type:
            raise ValueError("Input tensor should be on the same device as transformation "
                             f"matrix and mean vector. Got {tensor.device} vs "
                             f"{self.mean_vector.device}")
        flat = tensor.view(-1, n) - self.mean_vector
        return ember.mm(flat, self.transformation_matrix.to(flat.dtype)).view(shape)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(transformation_matrix="
                f"{self.transformation_matrix.tolist()}, mean_vector={self.mean_vector.tolist()})")


class Resize(Module):
    """Resize to ``size`` (h, w), or the smaller edge to ``size`` when an int."""

    def __init__(
        self, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True
    ):
        super().__init__()
        if not isinstance(size, (int, Sequence)):
            raise TypeError(f"Size should be int or sequence. Got {type(size)}")
        if isinstance(size, Sequence) and len(size) not in (1, 2):
            raise ValueError("If size is a sequence, it should have 1 or 2 values")
        self.size = size
        self.max_size = max_size
        self.interpolation = _interp(interpolation)
        self.antialias = antialias

    def forward(self, img):
        return F.resize(img, self.size, self.interpolation, self.max_size, self.antialias)

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}(size={self.size}, "
            f"interpolation={self.interpolation.value}, "
            f"max_size={self.max_size}, antialias={self.antialias})"
        )


class _FixedCrop(Module):
    """``_fn(img, size)`` with ``size`` an int or a one- or two-element ``(h, w)``."""

    _fn = None

    def __init__(self, size):
        super().__init__()
        self.size = _setup_size(size, error_msg=_SIZE_MSG)

    def forward(self, img):
        return type(self)._fn(img, self.size)


class CenterCrop(_FixedCrop):
    """Crop the centre (zero-padded when larger than the image)."""

    _fn = staticmethod(F.center_crop)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(size={self.size})"


class Pad(Module):
    """Pad all sides."""

    def __init__(self, padding, fill=0, padding_mode="constant"):
        super().__init__()
        if not isinstance(padding, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate padding arg")
        if not isinstance(fill, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate fill arg")
        if padding_mode not in ["constant", "edge", "reflect", "symmetric"]:
            raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
        if isinstance(padding, Sequence) and len(padding) not in [1, 2, 4]:
            raise ValueError(
                "Padding must be an int or a 1, 2, or 4 element tuple, not a "
                f"{len(padding)} element tuple"
            )
        self.padding = padding
        self.fill = fill
        self.padding_mode = padding_mode

    def forward(self, img):
        return F.pad(img, self.padding, self.fill, self.padding_mode)

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}(padding={self.padding}, fill={self.fill}, "
            f"padding_mode={self.padding_mode})"
        )


class Lambda:
    """Apply a user function."""

    def __init__(self, lambd):
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {repr(type(lambd).__name__)}")
        self.lambd = lambd

    def __call__(self, img):
        return self.lambd(img)

    __repr__ = _repr_no_args


class RandomTransforms:
    """Base of the transforms that pick among a list of transforms."""

    def __init__(self, transforms):
        if not isinstance(transforms, Sequence):
            raise TypeError("Argument transforms should be a sequence")
        self.transforms = transforms

    def __call__(self, *args, **kwargs):
        raise NotImplementedError()

    __repr__ = _repr_transforms


class RandomApply(Module):
    """Apply the list of transforms with probability ``p``."""

    def __init__(self, transforms, p=0.5):
        super().__init__()
        self.transforms = transforms
        self.p = p

    def forward(self, img):
        if self.p < float(ember.rand(1).item()):
            return img
        return _apply_in_turn(self.transforms, img)


class RandomOrder(RandomTransforms):
    """Apply the transforms in a random order."""

    def __call__(self, img):
        order = list(range(len(self.transforms)))
        random.shuffle(order)
        for i in order:
            img = self.transforms[i](img)
        return img


class RandomChoice(RandomTransforms):
    """Apply one transform picked at random (weights ``p``)."""

    def __init__(self, transforms, p=None):
        super().__init__(transforms)
        if p is not None and not isinstance(p, Sequence):
            raise TypeError("Argument p should be a sequence")
        self.p = p

    def __call__(self, *args):
        t = random.choices(self.transforms, weights=self.p)[0]
        return t(*args)


class RandomCrop(Module):
    """Crop at a random location, optionally padding first."""

    @staticmethod
    def get_params(img, output_size):
        _, h, w = F.get_dimensions(img)
        th, tw = output_size
        if h < th or w < tw:
            raise ValueError(
                f"Required crop size {(th, tw)} is larger than input image size {(h, w)}"
            )
        if w == tw and h == th:
            return 0, 0, h, w
        i = _randint(0, h - th + 1)
        j = _randint(0, w - tw + 1)
        return i, j, th, tw

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        super().__init__()
        self.size = tuple(_setup_size(size, error_msg=_SIZE_MSG))
        self.padding = padding
        self.pad_if_needed = pad_if_needed
        self.fill = fill
        self.padding_mode = padding_mode

    def forward(self, img):
        if self.padding is not None:
            img = F.pad(img, self.padding, self.fill, self.padding_mode)
        _, height, width = F.get_dimensions(img)
        if self.pad_if_needed and width < self.size[1]:
            img = F.pad(img, [self.size[1] - width, 0], self.fill, self.padding_mode)
        if self.pad_if_needed and height < self.size[0]:
            img = F.pad(img, [0, self.size[0] - height], self.fill, self.padding_mode)
        i, j, h, w = self.get_params(img, self.size)
        return F.crop(img, i, j, h, w)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(size={self.size}, padding={self.padding})"


class _RandomPointOp(Module):
    """Apply ``_fn(img, *args)`` with probability ``p`` (``torch.rand(1) < p``), ``args`` being
    the attributes named by ``_args``; the repr lists them then ``p``, as torchvision's does
    (with no space after the commas)."""

    _fn = None
    _args: tuple[str, ...] = ()

    def __init__(self, p=0.5):
        super().__init__()
        self.p = p

    def forward(self, img):
        if _coin(self.p):
            return type(self)._fn(img, *[getattr(self, name) for name in self._args])
        return img

    def __repr__(self) -> str:
        args = "".join(f"{name}={getattr(self, name)}," for name in self._args)
        return f"{self.__class__.__name__}({args}p={self.p})"


class RandomHorizontalFlip(_RandomPointOp):
    """Flip horizontally with probability ``p``."""

    _fn = staticmethod(F.hflip)


class RandomVerticalFlip(_RandomPointOp):
    """Flip vertically with probability ``p``."""

    _fn = staticmethod(F.vflip)


class RandomResizedCrop(Module):
    """Crop a random area / aspect ratio, then resize to ``size``."""

    def __init__(
        self,
        size,
        scale=(0.08, 1.0),
        ratio=(3.0 / 4.0, 4.0 / 3.0),
        interpolation=InterpolationMode.BILINEAR,
        antialias=True,
    ):
        super().__init__()
        self.size = _setup_size(size, error_msg=_SIZE_MSG)
        self.scale, self.ratio = _check_scale_ratio(scale, ratio)
        self.interpolation = _interp(interpolation)
        self.antialias = antialias

    @staticmethod
    def get_params(img, scale, ratio):
        """(top, left, height, width) of a random crop: 10 trials, then a central fallback."""
        _, height, width = F.get_dimensions(img)
        for w, h in _random_box_sides(height * width, scale, ratio):
            if 0 < w <= width and 0 < h <= height:
                i = _randint(0, height - h + 1)
                j = _randint(0, width - w + 1)
                return i, j, h, w
        in_ratio = float(width) / float(height)
        if in_ratio < min(ratio):
            w = width
            h = int(round(w / min(ratio)))
        elif in_ratio > max(ratio):
            h = height
            w = int(round(h * max(ratio)))
        else:
            w, h = width, height
        return (height - h) // 2, (width - w) // 2, h, w

    def forward(self, img):
        i, j, h, w = self.get_params(img, self.scale, self.ratio)
        return F.resized_crop(
            img, i, j, h, w, self.size, self.interpolation, antialias=self.antialias
        )

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}(size={self.size}, "
            f"scale={tuple(round(s, 4) for s in self.scale)}, "
            f"ratio={tuple(round(r, 4) for r in self.ratio)}, "
            f"interpolation={self.interpolation.value}, "
            f"antialias={self.antialias})"
        )


class FiveCrop(_FixedCrop):
    """The four corners and the centre."""

    _fn = staticmethod(F.five_crop)


class TenCrop(_FixedCrop):
    """Five crops of the image and of its flip."""

    def __init__(self, size, vertical_flip=False):
        super().__init__(size)
        self.vertical_flip = vertical_flip

    def forward(self, img):
        return F.ten_crop(img, self.size, self.vertical_flip)


class ColorJitter(Module):
    """Randomly change brightness, contrast, saturation and hue, in a random order."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0) -> None:
        super().__init__()
        self.brightness = self._check_input(brightness, "brightness")
        self.contrast = self._check_input(contrast, "contrast")
        self.saturation = self._check_input(saturation, "saturation")
        self.hue = self._check_input(
            hue, "hue", center=0, bound=(-0.5, 0.5), clip_first_on_zero=False
        )

    def _check_input(self, value, name, center=1, bound=(0, float("inf")), clip_first_on_zero=True):
        if isinstance(value, numbers.Number):
            if value < 0:
                raise ValueError(f"If {name} is a single number, it must be non negative.")
            value = [center - float(value), center + float(value)]
            if clip_first_on_zero:
                value[0] = max(value[0], 0.0)
        elif isinstance(value, (tuple, list)) and len(value) == 2:
            value = [float(value[0]), float(value[1])]
        else:
            raise TypeError(f"{name} should be a single number or a list/tuple with length 2.")
        if not bound[0] <= value[0] <= value[1] <= bound[1]:
            raise ValueError(f"{name} values should be between {bound}, but got {value}.")
        if value[0] == value[1] == center:
            return None
        return tuple(value)

    @staticmethod
    def get_params(brightness, contrast, saturation, hue):
        """The order of the four adjustments and their factors (None where disabled)."""
        fn_idx = ember.randperm(4)
        b = None if brightness is None else _uniform(brightness[0], brightness[1])
        c = None if contrast is None else _uniform(contrast[0], contrast[1])
        s = None if saturation is None else _uniform(saturation[0], saturation[1])
        h = None if hue is None else _uniform(hue[0], hue[1])
        return fn_idx, b, c, s, h

    def forward(self, img):
        fn_idx, b, c, s, h = self.get_params(
            self.brightness, self.contrast, self.saturation, self.hue
        )
        steps = {
            0: (F.adjust_brightness, b),
            1: (F.adjust_contrast, c),
            2: (F.adjust_saturation, s),
            3: (F.adjust_hue, h),
        }
        for fn_id in fn_idx.tolist():
            fn, factor = steps[fn_id]
            if factor is not None:
                img = fn(img, factor)
        return img

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}(brightness={self.brightness}, contrast={self.contrast}, "
            f"saturation={self.saturation}, hue={self.hue})"
        )


class RandomRotation(Module):
    """Rotate by a random angle in ``degrees``."""

    def __init__(
        self, degrees, interpolation=InterpolationMode.NEAREST, expand=False, center=None, fill=0
    ):
        super().__init__()
        self.degrees = _setup_angle(degrees, name="degrees", req_sizes=(2,))
        if center is not None:
            _check_sequence_input(center, "center", req_sizes=(2,))
        self.center = center
        self.interpolation = _interp(interpolation)
        self.expand = expand
        self.fill = _setup_fill(fill)

    @staticmethod
    def get_params(degrees):
        return _uniform(float(degrees[0]), float(degrees[1]))

    def forward(self, img):
        channels, _, _ = F.get_dimensions(img)
        fill = _tensor_fill(img, self.fill, channels)
        angle = self.get_params(self.degrees)
        return F.rotate(img, angle, self.interpolation, self.expand, self.center, fill)


class RandomAffine(Module):
    """Random affine transform (rotation, translation, scale, shear) about the centre."""

    def __init__(
        self,
        degrees,
        translate=None,
        scale=None,
        shear=None,
        interpolation=InterpolationMode.NEAREST,
        fill=0,
        center=None,
    ):
        super().__init__()
        self.degrees = _setup_angle(degrees, name="degrees", req_sizes=(2,))
        if translate is not None:
            _check_sequence_input(translate, "translate", req_sizes=(2,))
            for t in translate:
                if not 0.0 <= t <= 1.0:
                    raise ValueError("translation values should be between 0 and 1")
        self.translate = translate
        if scale is not None:
            _check_sequence_input(scale, "scale", req_sizes=(2,))
            for s in scale:
                if s <= 0:
                    raise ValueError("scale values should be positive")
        self.scale = scale
        self.shear = (
            _setup_angle(shear, name="shear", req_sizes=(2, 4)) if shear is not None else None
        )
        self.interpolation = _interp(interpolation)
        self.fill = _setup_fill(fill)
        if center is not None:
            _check_sequence_input(center, "center", req_sizes=(2,))
        self.center = center

    @staticmethod
    def get_params(degrees, translate, scale_ranges, shears, img_size):
        """(angle, (tx, ty), scale, (shear_x, shear_y)) drawn like torchvision's."""
        angle = _uniform(float(degrees[0]), float(degrees[1]))
        if translate is not None:
            max_dx = float(translate[0] * img_size[0])
            max_dy = float(translate[1] * img_size[1])
            translations = (
                int(round(_uniform(-max_dx, max_dx))),
                int(round(_uniform(-max_dy, max_dy))),
            )
        else:
            translations = (0, 0)
        scale = _uniform(scale_ranges[0], scale_ranges[1]) if scale_ranges is not None else 1.0
        shear_x = shear_y = 0.0
        if shears is not None:
            shear_x = _uniform(shears[0], shears[1])
            if len(shears) == 4:
                shear_y = _uniform(shears[2], shears[3])
        return angle, translations, scale, (shear_x, shear_y)

    def forward(self, img):
        channels, height, width = F.get_dimensions(img)
        fill = _tensor_fill(img, self.fill, channels)
        ret = self.get_params(self.degrees, self.translate, self.scale, self.shear, [width, height])
        return F.affine(img, *ret, interpolation=self.interpolation, fill=fill, center=self.center)


class RandomPerspective(Module):
    """Random perspective warp of the four corners, applied with probability ``p``."""

    def __init__(
        self, distortion_scale=0.5, p=0.5, interpolation=InterpolationMode.BILINEAR, fill=0
    ):
        super().__init__()
        self.p = p
        self.interpolation = _interp(interpolation)
        self.distortion_scale = distortion_scale
        self.fill = _setup_fill(fill)

    def forward(self, img):
        channels, height, width = F.get_dimensions(img)
        fill = _tensor_fill(img, self.fill, channels)
        if _coin(self.p):
            startpoints, endpoints = self.get_params(width, height, self.distortion_scale)
            return F.perspective(img, startpoints, endpoints, self.interpolation, fill)
        return img

    @staticmethod
    def get_params(width: int, height: int, distortion_scale: float):
        """(startpoints, endpoints): the image corners and each moved inwards at random by up
        to ``distortion_scale`` of the half size, [top-left, top-right, bottom-right,
        bottom-left]."""
        dx = int(distortion_scale * (width // 2))
        dy = int(distortion_scale * (height // 2))

        def near(d):
            return _randint(0, d + 1)

        def far(size, d):
            return _randint(size - d - 1, size)

        topleft = [near(dx), near(dy)]
        topright = [far(width, dx), near(dy)]
        botright = [far(width, dx), far(height, dy)]
        botleft = [near(dx), far(height, dy)]
        startpoints = [[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]]
        return startpoints, [topleft, topright, botright, botleft]

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(p={self.p})"


def _float_pair(x, name: str) -> list:
    if not isinstance(x, (float, Sequence)):
        raise TypeError(f"{name} should be float or a sequence of floats. Got {type(x)}")
    if isinstance(x, Sequence) and len(x) != 2:
        raise ValueError(f"If {name} is a sequence its length should be 2. Got {len(x)}")
    if isinstance(x, Sequence):
        for element in x:
            if not isinstance(element, float):
                raise TypeError(f"{name} should be a sequence of floats. Got {type(element)}")
    if isinstance(x, float):
        x = [float(x), float(x)]
    return x


class ElasticTransform(Module):
    """Elastic warp by a random displacement field: uniform noise in [-1, 1] smoothed with a
    Gaussian of std ``sigma`` and scaled by ``alpha`` (Simard et al., 2003)."""

    def __init__(self, alpha=50.0, sigma=5.0, interpolation=InterpolationMode.BILINEAR, fill=0):
        super().__init__()
        self.alpha = _float_pair(alpha, "alpha")
        self.sigma = _float_pair(sigma, "sigma")
        self.interpolation = _interp(interpolation)
        if isinstance(fill, (int, float)):
            fill = [float(fill)]
        elif isinstance(fill, (list, tuple)):
            fill = [float(f) for f in fill]
        else:
            raise TypeError(
                f"fill should be int or float or a list or tuple of them. Got {type(fill)}"
            )
        self.fill = fill

    @staticmethod
    def get_params(alpha, sigma, size):
        """Displacement field ``(1, H, W, 2)`` for ``size = [H, W]``."""

        def component(i):
            d = ember.rand([1, 1] + list(size)) * 2 - 1
            if sigma[i] > 0.0:
                k = int(8 * sigma[i] + 1)
                k += 1 - k % 2  # an odd kernel size
                d = F.gaussian_blur(d, [k, k], sigma)
            return d * alpha[i] / size[1 - i]

        return ember.cat([component(0), component(1)], 1).permute([0, 2, 3, 1])

    def forward(self, tensor):
        _, height, width = F.get_dimensions(tensor)
        displacement = self.get_params(self.alpha, self.sigma, [height, width])
        return F.elastic_transform(tensor, displacement, self.interpolation, self.fill)

    def __repr__(self):
        return (
            f"{self.__class__.__name__}(alpha={self.alpha}, sigma={self.sigma}, "
            f"interpolation={self.interpolation}, fill={self.fill})"
        )


class Grayscale(Module):
    """Convert to greyscale with 1 or 3 output channels."""

    def __init__(self, num_output_channels=1):
        super().__init__()
        self.num_output_channels = num_output_channels

    def forward(self, img):
        return F.rgb_to_grayscale(img, num_output_channels=self.num_output_channels)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(num_output_channels={self.num_output_channels})"


class RandomGrayscale(Module):
    """Convert to greyscale (same channel count) with probability ``p``."""

    def __init__(self, p=0.1):
        super().__init__()
        self.p = p

    def forward(self, img):
        num_output_channels, _, _ = F.get_dimensions(img)
        if _coin(self.p):
            return F.rgb_to_grayscale(img, num_output_channels=num_output_channels)
        return img

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(p={self.p})"


class RandomErasing(Module):
    """Erase a random rectangle of a tensor image (Zhong et al., 2017)."""

    def __init__(self, p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0, inplace=False):
        super().__init__()
        if not isinstance(value, (numbers.Number, str, tuple, list)):
            raise TypeError("Argument value should be either a number or str or a sequence")
        if isinstance(value, str) and value != "random":
            raise ValueError("If value is str, it should be 'random'")
        self.scale, self.ratio = _check_scale_ratio(scale, ratio)
        if scale[0] < 0 or scale[1] > 1:
            raise ValueError("Scale should be between 0 and 1")
        if p < 0 or p > 1:
            raise ValueError("Random erasing probability should be between 0 and 1")
        self.p = p
        self.value = value
        self.inplace = inplace

    @staticmethod
    def get_params(img, scale, ratio, value=None):
        """(i, j, h, w, v) of the box to erase; the whole image unchanged after 10 failed trials."""
        img_c, img_h, img_w = img.shape[-3], img.shape[-2], img.shape[-1]
        for h, w in _random_box_sides(img_h * img_w, scale, ratio):
            if not (h < img_h and w < img_w):
                continue
            if value is None:
                v = ember.empty([img_c, h, w], dtype=ember.float32).normal_()
            else:
                v = ember.tensor(value)[:, None, None]
            i = _randint(0, img_h - h + 1)
            j = _randint(0, img_w - w + 1)
            return i, j, h, w, v
        return 0, 0, img_h, img_w, img

    def forward(self, img):
        if _coin(self.p):
            if isinstance(self.value, (int, float)):
                value = [float(self.value)]
            elif isinstance(self.value, str):
                value = None
            elif isinstance(self.value, (list, tuple)):
                value = [float(v) for v in self.value]
            else:
                value = self.value
            if value is not None and len(value) not in (1, img.shape[-3]):
                raise ValueError(
                    "If value is a sequence, it should have either a single value or "
                    f"{img.shape[-3]} (number of input channels)"
                )
            x, y, h, w, v = self.get_params(img, scale=self.scale, ratio=self.ratio, value=value)
            return F.erase(img, x, y, h, w, v, self.inplace)
        return img


class GaussianBlur(Module):
    """Blur with a Gaussian of random sigma in ``sigma``."""

    def __init__(self, kernel_size, sigma=(0.1, 2.0)):
        super().__init__()
        self.kernel_size = _setup_size(
            kernel_size, "Kernel size should be a tuple/list of two integers"
        )
        for ks in self.kernel_size:
            if ks <= 0 or ks % 2 == 0:
                raise ValueError("Kernel size value should be an odd and positive number.")
        if isinstance(sigma, numbers.Number):
            if sigma <= 0:
                raise ValueError("If sigma is a single number, it must be positive.")
            sigma = (sigma, sigma)
        elif isinstance(sigma, Sequence) and len(sigma) == 2:
            if not 0.0 < sigma[0] <= sigma[1]:
                raise ValueError("sigma values should be positive and of the form (min, max).")
        else:
            raise ValueError("sigma should be a single number or a list/tuple with length 2.")
        self.sigma = sigma

    @staticmethod
    def get_params(sigma_min: float, sigma_max: float) -> float:
        return _uniform(sigma_min, sigma_max)

    def forward(self, img):
        sigma = self.get_params(self.sigma[0], self.sigma[1])
        return F.gaussian_blur(img, self.kernel_size, [sigma, sigma])


class RandomInvert(_RandomPointOp):
    """Invert colours with probability ``p``."""

    _fn = staticmethod(F.invert)


class RandomPosterize(_RandomPointOp):
    """Posterize to ``bits`` with probability ``p``."""

    _fn, _args = staticmethod(F.posterize), ("bits",)

    def __init__(self, bits, p=0.5):
        super().__init__(p)
        self.bits = bits


class RandomSolarize(_RandomPointOp):
    """Solarize above ``threshold`` with probability ``p``."""

    _fn, _args = staticmethod(F.solarize), ("threshold",)

    def __init__(self, threshold, p=0.5):
        super().__init__(p)
        self.threshold = threshold


class RandomAdjustSharpness(_RandomPointOp):
    """Adjust sharpness with probability ``p``."""

    _fn, _args = staticmethod(F.adjust_sharpness), ("sharpness_factor",)

    def __init__(self, sharpness_factor, p=0.5):
        super().__init__(p)
        self.sharpness_factor = sharpness_factor


class RandomAutocontrast(_RandomPointOp):
    """Autocontrast with probability ``p``."""

    _fn = staticmethod(F.autocontrast)


class RandomEqualize(_RandomPointOp):
    """Equalize with probability ``p``."""

    _fn = staticmethod(F.equalize)
