"""FGVC Aircraft, as ``torchvision.datasets.FGVCAircraft``."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from .folder import default_loader
from .utils import download_and_extract_archive, verify_str_arg
from .vision import VisionDataset

__all__ = ["FGVCAircraft"]


class FGVCAircraft(VisionDataset):
    """`FGVC Aircraft <https://www.robots.ox.ac.uk/~vgg/data/fgvc-aircraft/>`_: 10,000 aircraft
    images labelled at the ``annotation_level`` ``variant`` (100 classes), ``family`` (70) or
    ``manufacturer`` (30); ``split`` is ``train``, ``val``, ``trainval`` or ``test``."""

    _URL = (
        "https://www.robots.ox.ac.uk/~vgg/data/fgvc-aircraft/archives/fgvc-aircraft-2013b.tar.gz"
    )

    def __init__(
        self,
        root,
        split: str = "trainval",
        annotation_level: str = "variant",
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
        loader: Callable[[str], Any] = default_loader,
    ) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._split = verify_str_arg(split, "split", ("train", "val", "trainval", "test"))
        self._annotation_level = verify_str_arg(
            annotation_level, "annotation_level", ("variant", "family", "manufacturer")
        )
        self._data_path = os.path.join(self.root, "fgvc-aircraft-2013b")
        if download:
            self._download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found. You can use download=True to download it")

        names = {"variant": "variants.txt", "family": "families.txt",
                 "manufacturer": "manufacturers.txt"}
        with open(os.path.join(self._data_path, "data", names[self._annotation_level])) as f:
            self.classes = [line.strip() for line in f]
        self.class_to_idx = dict(zip(self.classes, range(len(self.classes))))
        image_folder = os.path.join(self._data_path, "data", "images")
        labels_file = os.path.join(
            self._data_path, "data", f"images_{self._annotation_level}_{self._split}.txt"
        )
        self._image_files: list[str] = []
        self._labels: list[int] = []
        with open(labels_file) as f:
            for line in f:
                image_name, label_name = line.strip().split(" ", 1)
                self._image_files.append(os.path.join(image_folder, f"{image_name}.jpg"))
                self._labels.append(self.class_to_idx[label_name])
        self.loader = loader

    def __len__(self) -> int:
        return len(self._image_files)

    def __getitem__(self, idx: int) -> tuple[Any, Any]:
        return self._transform_pair(self.loader(self._image_files[idx]), self._labels[idx])

    def _download(self) -> None:
        """Download and extract the archive under ``root`` unless already there."""
        if self._check_exists():
            return
        download_and_extract_archive(self._URL, self.root)

    def _check_exists(self) -> bool:
        return os.path.isdir(self._data_path)
