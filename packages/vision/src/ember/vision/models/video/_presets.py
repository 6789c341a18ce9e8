"""The video classification preset that the video weights enums return from ``transforms()``
(torchvision's ``transforms._presets.VideoClassification``).

It lives here because ``ember.vision.transforms._presets`` has no video preset yet; the
weights enums refer to it through a ``functools.partial``, as torchvision's do.
"""

from __future__ import annotations

import ember
from ember import Tensor
from ember.nn import Module

from ...transforms import functional as F
from ...transforms.functional import InterpolationMode

__all__ = ["VideoClassification"]


class VideoClassification(Module):
    """Resize and centre-crop every frame, rescale to [0, 1], normalise, and move the time axis
    behind the channels: ``(..., T, C, H, W)`` frames in, ``(..., C, T, H, W)`` clips out."""

    def __init__(
        self,
        *,
        crop_size: tuple[int, int],
        resize_size: tuple[int] | tuple[int, int],
        mean: tuple[float, ...] = (0.43216, 0.394666, 0.37645),
        std: tuple[float, ...] = (0.22803, 0.22145, 0.216989),
        interpolation: InterpolationMode = InterpolationMode.BILINEAR,
    ) -> None:
        super().__init__()
        self.crop_size = list(crop_size)
        self.resize_size = list(resize_size)
        self.mean = list(mean)
        self.std = list(std)
        self.interpolation = interpolation

    def forward(self, vid: Tensor) -> Tensor:
        need_squeeze = vid.ndim < 5
        if need_squeeze:
            vid = vid.unsqueeze(dim=0)

        N, T, C, H, W = vid.shape
        vid = vid.reshape(-1, C, H, W)
        # antialias=False, as torchvision: its video checkpoints were evaluated without it.
        vid = F.resize(vid, self.resize_size, interpolation=self.interpolation, antialias=False)
        vid = F.center_crop(vid, self.crop_size)
        vid = F.convert_image_dtype(vid, ember.float32)
        vid = F.normalize(vid, mean=self.mean, std=self.std)
        H, W = self.crop_size
        # (N, T, C, H, W) -> (N, C, T, H, W)
        vid = vid.reshape(N, T, C, H, W).permute(0, 2, 1, 3, 4)

        if need_squeeze:
            vid = vid.squeeze(dim=0)
        return vid

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}(\n    crop_size={self.crop_size}"
            f"\n    resize_size={self.resize_size}"
            f"\n    mean={self.mean}\n    std={self.std}\n    interpolation={self.interpolation}\n)"
        )

    def describe(self) -> str:
        return (
            "Accepts batched ``(B, T, C, H, W)`` and single ``(T, C, H, W)`` video frame "
            "``torch.Tensor`` objects. The frames are resized to "
            f"``resize_size={self.resize_size}`` using ``interpolation={self.interpolation}``, "
            f"followed by a central crop of ``crop_size={self.crop_size}``. Finally the values "
            "are first rescaled to ``[0.0, 1.0]`` and then normalized using "
            f"``mean={self.mean}`` and ``std={self.std}``. Finally the output dimensions are "
            "permuted to ``(..., C, T, H, W)`` tensors."
        )
