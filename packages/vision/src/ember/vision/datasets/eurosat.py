"""EuroSAT (RGB), as ``torchvision.datasets.EuroSAT``."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from .folder import ImageFolder, default_loader
from .utils import download_and_extract_archive

__all__ = ["EuroSAT"]


class EuroSAT(ImageFolder):
    """`EuroSAT <https://github.com/phelber/eurosat>`_: Sentinel-2 RGB land-cover patches in 10
    classes, an :class:`ImageFolder` over ``root/eurosat/2750``."""

    _URL = (
        "https://huggingface.co/datasets/torchgeo/eurosat/resolve/"
        "c877bcd43f099cd0196738f714544e355477f3fd/EuroSAT.zip"
    )
    _MD5 = "c8fa014336c82ac7804f0398fcb19387"

    def __init__(
        self,
        root,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
        loader: Callable[[str], Any] = default_loader,
    ) -> None:
        self.root = os.path.expanduser(root)
        self._base_folder = os.path.join(self.root, "eurosat")
        self._data_folder = os.path.join(self._base_folder, "2750")
        if download:
            self.download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found. You can use download=True to download it")
        super().__init__(
            self._data_folder, transform=transform, target_transform=target_transform,
            loader=loader,
        )
        self.root = os.path.expanduser(root)

    def __len__(self) -> int:
        return len(self.samples)

    def _check_exists(self) -> bool:
        return os.path.exists(self._data_folder)

    def download(self) -> None:
        """Download and extract ``EuroSAT.zip`` unless ``eurosat/2750`` is already there."""
        if self._check_exists():
            return
        os.makedirs(self._base_folder, exist_ok=True)
        download_and_extract_archive(self._URL, download_root=self._base_folder, md5=self._MD5)
