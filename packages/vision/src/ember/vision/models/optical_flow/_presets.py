"""The ``OpticalFlow`` inference preset of RAFT's weights (torchvision's
``transforms._presets.OpticalFlow``).

It lives beside the model because ``ember.vision.transforms._presets`` does not define it; the
transforms are imported when the preset runs, so importing the models never imports them.
"""

from __future__ import annotations

from typing import Any

import ember
from ember import Tensor
from ember.nn import Module

__all__ = ["OpticalFlow"]


class OpticalFlow(Module):
    """Convert a pair of images to float32 and rescale them from ``[0, 1]`` to ``[-1, 1]``."""

    def forward(self, img1: Any, img2: Any) -> tuple[Tensor, Tensor]:
        from ember.vision.transforms import functional as F

        if not isinstance(img1, Tensor):
            img1 = F.pil_to_tensor(img1)
        if not isinstance(img2, Tensor):
            img2 = F.pil_to_tensor(img2)

        img1 = F.convert_image_dtype(img1, ember.float)
        img2 = F.convert_image_dtype(img2, ember.float)

        # map [0, 1] into [-1, 1]
        img1 = F.normalize(img1, mean=[0.5, 0.5, 0.5], std=[0.5, 0.5, 0.5])
        img2 = F.normalize(img2, mean=[0.5, 0.5, 0.5], std=[0.5, 0.5, 0.5])

        img1 = img1.contiguous()
        img2 = img2.contiguous()

        return img1, img2

    def __repr__(self) -> str:
        return self.__class__.__name__ + "()"

    def describe(self) -> str:
        return (
            "Accepts ``PIL.Image``, batched ``(B, C, H, W)`` and single ``(C, H, W)`` image "
            "``torch.Tensor`` objects. The images are rescaled to ``[-1.0, 1.0]``."
        )
