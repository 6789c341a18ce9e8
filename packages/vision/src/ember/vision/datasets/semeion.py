"""SEMEION handwritten digits, as ``torchvision.datasets.SEMEION``."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from .utils import check_integrity, download_url
from .vision import VisionDataset

__all__ = ["SEMEION"]


class SEMEION(VisionDataset):
    """`SEMEION <http://archive.ics.uci.edu/ml/datasets/semeion+handwritten+digit>`_: 16x16
    binary digits, one per line of ``semeion.data`` (256 pixels, then a one-hot label).
    ``download`` defaults to True, as in torchvision."""

    url = "http://archive.ics.uci.edu/ml/machine-learning-databases/semeion/semeion.data"
    filename = "semeion.data"
    md5_checksum = "cb545d371d2ce14ec121470795a77432"

    def __init__(
        self,
        root,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = True,
    ) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError(
                "Dataset not found or corrupted. You can use download=True to download it"
            )
        data = np.loadtxt(os.path.join(self.root, self.filename))
        self.data = np.reshape((data[:, :256] * 255).astype("uint8"), (-1, 16, 16))
        self.labels = np.nonzero(data[:, 256:])[1]

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        from PIL import Image

        img = Image.fromarray(self.data[index])  # uint8 (16, 16): mode "L"
        return self._transform_pair(img, int(self.labels[index]))

    def __len__(self) -> int:
        return len(self.data)

    def _check_integrity(self) -> bool:
        return check_integrity(os.path.join(self.root, self.filename), self.md5_checksum)

    def download(self) -> None:
        """Download ``semeion.data`` unless it is already there with the right MD5."""
        if self._check_integrity():
            return
        download_url(self.url, self.root, self.filename, self.md5_checksum)
