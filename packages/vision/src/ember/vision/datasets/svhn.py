"""SVHN (cropped digits), as ``torchvision.datasets.SVHN`` (the ``.mat`` files read by Ember's
own MATLAB reader, not SciPy)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from ._matlab import loadmat
from .utils import check_integrity, download_url, verify_str_arg
from .vision import VisionDataset

__all__ = ["SVHN"]


class SVHN(VisionDataset):
    """`SVHN <http://ufldl.stanford.edu/housenumbers/>`_ 32x32 house-number digits. The label
    10 of the digit 0 becomes 0. ``data`` is uint8 ``(N, 3, 32, 32)``; items are
    ``(PIL RGB image, int label)``."""

    split_list = {
        "train": [
            "http://ufldl.stanford.edu/housenumbers/train_32x32.mat",
            "train_32x32.mat",
            "e26dedcc434d2e4c54c9b2d4a06d8373",
        ],
        "test": [
            "http://ufldl.stanford.edu/housenumbers/test_32x32.mat",
            "test_32x32.mat",
            "eb5a983be6a315427106f1b164d9cef3",
        ],
        "extra": [
            "http://ufldl.stanford.edu/housenumbers/extra_32x32.mat",
            "extra_32x32.mat",
            "a93ce644f1a588dc4d68dda5feec44a7",
        ],
    }

    def __init__(
        self,
        root,
        split: str = "train",
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
    ) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.split = verify_str_arg(split, "split", tuple(self.split_list.keys()))
        self.url, self.filename, self.file_md5 = self.split_list[split]
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError(
                "Dataset not found or corrupted. You can use download=True to download it"
            )
        loaded = loadmat(os.path.join(self.root, self.filename))
        self.labels = loaded["y"].astype(np.int64).squeeze()
        np.place(self.labels, self.labels == 10, 0)
        self.data = np.transpose(loaded["X"], (3, 2, 0, 1))

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        from PIL import Image

        img = Image.fromarray(np.transpose(self.data[index], (1, 2, 0)))
        return self._transform_pair(img, int(self.labels[index]))

    def __len__(self) -> int:
        return len(self.data)

    def _check_integrity(self) -> bool:
        return check_integrity(os.path.join(self.root, self.filename), self.file_md5)

    def download(self) -> None:
        """Download the split's ``.mat`` file (kept when already there with the right MD5)."""
        download_url(self.url, self.root, self.filename, self.split_list[self.split][2])

    def extra_repr(self) -> str:
        return f"Split: {self.split}"
