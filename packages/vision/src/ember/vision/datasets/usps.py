"""USPS handwritten digits, as ``torchvision.datasets.USPS`` (libsvm text, bz2-compressed)."""

from __future__ import annotations

import bz2
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from .utils import download_url
from .vision import VisionDataset

__all__ = ["USPS"]


class USPS(VisionDataset):
    """`USPS <https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/multiclass.html#usps>`_:
    16x16 grayscale digits. Each line of ``usps.bz2`` / ``usps.t.bz2`` is ``label
    index:value ...`` with labels 1-10 (made 0-9) and values in [-1, 1] (made 0-255)."""

    split_list = {
        "train": [
            "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/multiclass/usps.bz2",
            "usps.bz2",
            "ec16c51db3855ca6c91edd34d0e9b197",
        ],
        "test": [
            "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/multiclass/usps.t.bz2",
            "usps.t.bz2",
            "8ea070ee2aca1ac39742fdd1ef5ed118",
        ],
    }

    def __init__(
        self,
        root,
        train: bool = True,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
    ) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        url, filename, checksum = self.split_list["train" if train else "test"]
        full_path = os.path.join(self.root, filename)
        if download and not os.path.exists(full_path):
            download_url(url, self.root, filename, md5=checksum)
        with bz2.open(full_path) as fp:
            raw_data = [line.decode().split() for line in fp.readlines()]
        values = [[x.split(":")[-1] for x in row[1:]] for row in raw_data]
        imgs = np.asarray(values, dtype=np.float32).reshape((-1, 16, 16))
        self.data = ((imgs + 1) / 2 * 255).astype(dtype=np.uint8)
        self.targets = [int(row[0]) - 1 for row in raw_data]

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        from PIL import Image

        img = Image.fromarray(self.data[index])  # uint8 (16, 16): mode "L"
        return self._transform_pair(img, int(self.targets[index]))

    def __len__(self) -> int:
        return len(self.data)
