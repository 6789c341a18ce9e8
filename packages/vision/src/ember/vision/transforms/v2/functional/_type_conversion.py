"""Conversions between PIL images, NumPy arrays, tensors and ``tv_tensors.Image``."""

from __future__ import annotations

import numpy as np
import PIL.Image

import ember
from ember import Tensor
from ember.vision import tv_tensors
from ember.vision.transforms import functional as _F1

to_pil_image = _F1.to_pil_image
pil_to_tensor = _F1.pil_to_tensor


def to_image(inpt) -> tv_tensors.Image:
    """A pure tensor, NumPy array (HWC) or PIL image as a ``tv_tensors.Image`` (CHW)."""
    if isinstance(inpt, np.ndarray):
        output = ember.from_numpy(np.atleast_3d(inpt)).permute((2, 0, 1)).contiguous()
    elif isinstance(inpt, PIL.Image.Image):
        output = pil_to_tensor(inpt)
    elif isinstance(inpt, Tensor):
        output = inpt
    else:
        raise TypeError(
            "Input can either be a pure Tensor, a numpy array, or a PIL image, but got "
            f"{type(inpt)} instead."
        )
    return tv_tensors.Image(output)
