"""Random images, deterministic per index, as ``torchvision.datasets.FakeData``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import ember

from .vision import VisionDataset

__all__ = ["FakeData"]


class FakeData(VisionDataset):
    """``size`` random PIL images of ``image_size`` (C, H, W) with labels in ``[0, num_classes)``.

    Item ``i`` is drawn on the CPU by a generator seeded with ``i + random_offset`` (the values
    of ``manual_seed(i + random_offset)``; the global RNGs are left untouched), so the same
    index always gives the same image, whatever the default device.
    """

    def __init__(
        self,
        size: int = 1000,
        image_size: tuple[int, int, int] = (3, 224, 224),
        num_classes: int = 10,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        random_offset: int = 0,
    ) -> None:
        super().__init__(transform=transform, target_transform=target_transform)
        self.size = size
        self.num_classes = num_classes
        self.image_size = image_size
        self.random_offset = random_offset

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        from PIL import Image

        if index >= len(self):
            raise IndexError(f"{self.__class__.__name__} index out of range")
        gen = ember.Generator().manual_seed(index + self.random_offset)
        img = ember.randn(*self.image_size, generator=gen, device="cpu")
        target = ember.randint(0, self.num_classes, size=(1,), dtype=ember.long, generator=gen,
                               device="cpu")[0]
        # ToPILImage's float path: scale by 255 and wrap to uint8 (as a C cast would)
        arr = (img.numpy() * np.float32(255)).astype(np.int64).astype(np.uint8)
        arr = arr[0] if arr.shape[0] == 1 else np.ascontiguousarray(arr.transpose(1, 2, 0))
        pil, target = self._transform_pair(Image.fromarray(arr), target)
        return pil, target.item() if isinstance(target, ember.Tensor) else target

    def __len__(self) -> int:
        return self.size
