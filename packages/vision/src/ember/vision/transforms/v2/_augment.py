"""Augmentations: RandomErasing, MixUp, CutMix, JPEG."""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import PIL.Image

import ember
from ember import Tensor
from ember.nn.functional import one_hot
from ember.vision import tv_tensors
from ember.vision.transforms import transforms as _v1

from . import functional as F
from ._transform import Transform, _RandomApplyTransform
from ._utils import (
    _check_sequence_input,
    _parse_labels_getter,
    has_any,
    is_pure_tensor,
    query_chw,
    query_size,
    tree_flatten,
    tree_unflatten,
)


class RandomErasing(_RandomApplyTransform):
    """Erase a random rectangle (of area ``scale`` and aspect ``ratio``) with ``value``
    (``"random"``: normal noise) with probability ``p``."""

    _v1_transform_cls = _v1.RandomErasing

    def __init__(self, p: float = 0.5, scale: Sequence[float] = (0.02, 0.33),
                 ratio: Sequence[float] = (0.3, 3.3), value=0.0, inplace: bool = False):
        super().__init__(p=p)
        if not isinstance(value, (numbers.Number, str, tuple, list)):
            raise TypeError("Argument value should be either a number or str or a sequence")
        if isinstance(value, str) and value != "random":
            raise ValueError("If value is str, it should be 'random'")
        if not isinstance(scale, Sequence):
            raise TypeError("Scale should be a sequence")
        if not isinstance(ratio, Sequence):
            raise TypeError("Ratio should be a sequence")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            warnings.warn("Scale and ratio should be of kind (min, max)", stacklevel=2)
        if scale[0] < 0 or scale[1] > 1:
            raise ValueError("Scale should be between 0 and 1")
        self.scale = scale
        self.ratio = ratio
        if isinstance(value, (int, float)):
            self.value = [float(value)]
        elif isinstance(value, str):
            self.value = None
        elif isinstance(value, (list, tuple)):
            self.value = [float(v) for v in value]
        else:
            self.value = value
        self.inplace = inplace
        self._log_ratio = ember.log(ember.tensor(self.ratio)).tolist()  # float32, as torch

    def _call_kernel(self, functional: Callable, inpt: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(inpt, (tv_tensors.BoundingBoxes, tv_tensors.KeyPoints, tv_tensors.Mask)):
            warnings.warn(
                f"{type(self).__name__}() is currently passing through inputs of type "
                f"tv_tensors.{type(inpt).__name__}. This will likely change in the future.",
                stacklevel=2,
            )
        return super()._call_kernel(functional, inpt, *args, **kwargs)

    def make_params(self, flat_inputs: list[Any]) -> dict[str, Any]:
        img_c, img_h, img_w = query_chw(flat_inputs)
        if self.value is not None and len(self.value) not in (1, img_c):
            raise ValueError(
                "If value is a sequence, it should have either a single value or "
                f"{img_c} (number of inpt channels)"
            )
        area = img_h * img_w
        log_ratio = self._log_ratio
        for _ in range(10):
            erase_area = area * ember.empty(1).uniform_(self.scale[0], self.scale[1]).item()
            aspect_ratio = ember.exp(ember.empty(1).uniform_(log_ratio[0], log_ratio[1])).item()
            h = int(round(math.sqrt(erase_area * aspect_ratio)))
            w = int(round(math.sqrt(erase_area / aspect_ratio)))
            if not (h < img_h and w < img_w):
                continue
            if self.value is None:
                v = ember.empty([img_c, h, w], dtype=ember.float32).normal_()
            else:
                v = ember.tensor(self.value)[:, None, None]
            i = int(ember.randint(0, img_h - h + 1, size=(1,)).item())
            j = int(ember.randint(0, img_w - w + 1, size=(1,)).item())
            break
        else:
            i, j, h, w, v = 0, 0, img_h, img_w, None
        return dict(i=i, j=j, h=h, w=w, v=v)

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        if params["v"] is not None:
            inpt = self._call_kernel(F.erase, inpt, **params, inplace=self.inplace)
        return inpt


class _BaseMixUpCutMix(Transform):
    def __init__(self, *, alpha: float = 1.0, num_classes: int | None = None,
                 labels_getter="default") -> None:
        super().__init__()
        self.alpha = float(alpha)
        self._dist = ember.distributions.Beta(ember.tensor([alpha]), ember.tensor([alpha]))
        self.num_classes = num_classes
        self._labels_getter = _parse_labels_getter(labels_getter)

    def forward(self, *inputs):
        inputs = inputs if len(inputs) > 1 else inputs[0]
        flat_inputs, spec = tree_flatten(inputs)
        needs_transform_list = self._needs_transform_list(flat_inputs)
        if has_any(flat_inputs, PIL.Image.Image, tv_tensors.BoundingBoxes, tv_tensors.Mask,
                   tv_tensors.KeyPoints):
            raise ValueError(
                f"{type(self).__name__}() does not support PIL images, bounding boxes, keypoints "
                "and masks."
            )
        labels = self._labels_getter(inputs)
        if not isinstance(labels, Tensor):
            raise ValueError(f"The labels must be a tensor, but got {type(labels)} instead.")
        if labels.ndim not in (1, 2):
            raise ValueError(
                "labels should be index based with shape (batch_size,) or probability based with "
                f"shape (batch_size, num_classes), but got a tensor of shape {labels.shape} "
                "instead."
            )
        if labels.ndim == 2 and self.num_classes is not None and \
                labels.shape[-1] != self.num_classes:
            raise ValueError(
                "When passing 2D labels, the number of elements in last dimension must match "
                f"num_classes: {labels.shape[-1]} != {self.num_classes}. You can Leave "
                "num_classes to None."
            )
        if labels.ndim == 1 and self.num_classes is None:
            raise ValueError("num_classes must be passed if the labels are index-based (1D)")
        params = {
            "labels": labels,
            "batch_size": labels.shape[0],
            **self.make_params(
                [inpt for inpt, needs in zip(flat_inputs, needs_transform_list) if needs]
            ),
        }
        needs_transform_list[next(idx for idx, inpt in enumerate(flat_inputs)
                                  if inpt is labels)] = True
        flat_outputs = [
            self.transform(inpt, params) if needs else inpt
            for inpt, needs in zip(flat_inputs, needs_transform_list)
        ]
        return tree_unflatten(flat_outputs, spec)

    def _check_image_or_video(self, inpt: Tensor, *, batch_size: int):
        expected_num_dims = 5 if isinstance(inpt, tv_tensors.Video) else 4
        if inpt.ndim != expected_num_dims:
            raise ValueError(
                f"Expected a batched input with {expected_num_dims} dims, but got {inpt.ndim} "
                "dimensions instead."
            )
        if inpt.shape[0] != batch_size:
            raise ValueError(
                "The batch size of the image or video does not match the batch size of the "
                f"labels: {inpt.shape[0]} != {batch_size}."
            )

    def _mixup_label(self, label: Tensor, *, lam: float) -> Tensor:
        if label.ndim == 1:
            label = one_hot(label, num_classes=self.num_classes)
        if not label.dtype.is_floating_point:
            label = label.float()
        return label.roll(1, 0).mul_(1.0 - lam).add_(label.mul(lam))


class MixUp(_BaseMixUpCutMix):
    """MixUp a batch of images or videos with its roll by one, and their labels alike."""

    def make_params(self, flat_inputs: list[Any]) -> dict[str, Any]:
        return dict(lam=float(self._dist.sample(())))

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        lam = params["lam"]
        if inpt is params["labels"]:
            return self._mixup_label(inpt, lam=lam)
        elif isinstance(inpt, (tv_tensors.Image, tv_tensors.Video)) or is_pure_tensor(inpt):
            self._check_image_or_video(inpt, batch_size=params["batch_size"])
            pure = inpt.as_subclass(Tensor)
            output = pure.roll(1, 0).mul_(1.0 - lam).add_(pure.mul(lam))
            if isinstance(inpt, (tv_tensors.Image, tv_tensors.Video)):
                output = tv_tensors.wrap(output, like=inpt)
            return output
        return inpt


class CutMix(_BaseMixUpCutMix):
    """CutMix a batch: paste a random box of the rolled batch, mixing labels by area."""

    def make_params(self, flat_inputs: list[Any]) -> dict[str, Any]:
        lam = float(self._dist.sample(()))
        H, W = query_size(flat_inputs)
        r_x = int(ember.randint(W, size=(1,)))
        r_y = int(ember.randint(H, size=(1,)))
        r = 0.5 * math.sqrt(1.0 - lam)
        r_w_half = int(r * W)
        r_h_half = int(r * H)
        x1 = max(r_x - r_w_half, 0)
        y1 = max(r_y - r_h_half, 0)
        x2 = min(r_x + r_w_half, W)
        y2 = min(r_y + r_h_half, H)
        box = (x1, y1, x2, y2)
        lam_adjusted = float(1.0 - (x2 - x1) * (y2 - y1) / (W * H))
        return dict(box=box, lam_adjusted=lam_adjusted)

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        if inpt is params["labels"]:
            return self._mixup_label(inpt, lam=params["lam_adjusted"])
        elif isinstance(inpt, (tv_tensors.Image, tv_tensors.Video)) or is_pure_tensor(inpt):
            self._check_image_or_video(inpt, batch_size=params["batch_size"])
            x1, y1, x2, y2 = params["box"]
            pure = inpt.as_subclass(Tensor)
            rolled = pure.roll(1, 0)
            output = pure.clone()
            output[..., y1:y2, x1:x2] = rolled[..., y1:y2, x1:x2]
            if isinstance(inpt, (tv_tensors.Image, tv_tensors.Video)):
                output = tv_tensors.wrap(output, like=inpt)
            return output
        return inpt


class JPEG(Transform):
    """Re-encode as JPEG with a quality drawn from ``quality`` (an int or a [min, max])."""

    def __init__(self, quality):
        super().__init__()
        if isinstance(quality, int):
            if isinstance(quality, bool):
                raise TypeError("quality can't be bool")
            quality = [quality, quality]
        else:
            _check_sequence_input(quality, "quality", req_sizes=(2,))
        if not (1 <= quality[0] <= quality[1] <= 100 and isinstance(quality[0], int)
                and isinstance(quality[1], int)):
            raise ValueError(f"quality must be an integer from 1 to 100, got {quality =}")
        self.quality = quality

    def make_params(self, flat_inputs: list[Any]) -> dict[str, Any]:
        return dict(quality=int(ember.randint(self.quality[0], self.quality[1] + 1, ()).item()))

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.jpeg, inpt, quality=params["quality"])
