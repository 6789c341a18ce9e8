"""Type conversions: PILToTensor, ToImage, ToPILImage, ToPureTensor."""

from __future__ import annotations

from typing import Any

import numpy as np
import PIL.Image

from ember import Tensor
from ember.vision import tv_tensors

from . import functional as F
from ._transform import Transform
from ._utils import is_pure_tensor


class PILToTensor(Transform):
    """PIL image to a CHW tensor of the same dtype (no scaling)."""

    _transformed_types = (PIL.Image.Image,)

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return F.pil_to_tensor(inpt)


class ToImage(Transform):
    """Pure tensor, NumPy array or PIL image to a ``tv_tensors.Image``."""

    _transformed_types = (is_pure_tensor, PIL.Image.Image, np.ndarray)

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return F.to_image(inpt)


class ToPILImage(Transform):
    """Tensor, ``Image`` or ndarray to a PIL image of ``mode``."""

    _transformed_types = (is_pure_tensor, tv_tensors.Image, np.ndarray)

    def __init__(self, mode: str | None = None) -> None:
        super().__init__()
        self.mode = mode

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        if isinstance(inpt, tv_tensors.TVTensor):
            inpt = inpt.as_subclass(Tensor)
        return F.to_pil_image(inpt, mode=self.mode)


class ToPureTensor(Transform):
    """Every TVTensor of the sample as a pure tensor (cheaper in a model's forward)."""

    _transformed_types = (tv_tensors.TVTensor,)

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return inpt.as_subclass(Tensor)
