"""Deprecated v2 transforms."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import PIL.Image

from ember.vision.transforms import functional as _F1

from ._transform import Transform


class ToTensor(Transform):
    """PIL image or ndarray to a float tensor in [0, 1] (deprecated: use ``ToImage`` then
    ``ToDtype(float32, scale=True)``)."""

    _transformed_types = (PIL.Image.Image, np.ndarray)

    def __init__(self) -> None:
        warnings.warn(
            "The transform `ToTensor()` is deprecated and will be removed in a future release. "
            "Instead, please use `v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, "
            "scale=True)])`.Output is equivalent up to float precision.",
            stacklevel=2,
        )
        super().__init__()

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return _F1.to_tensor(inpt)
