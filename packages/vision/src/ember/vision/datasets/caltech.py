"""Caltech 101 and Caltech 256, as ``torchvision.datasets.Caltech101`` / ``Caltech256``."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from typing import Any

from ._matlab import loadmat
from .utils import download_and_extract_archive, extract_archive, verify_str_arg
from .vision import VisionDataset

__all__ = ["Caltech101", "Caltech256"]


class Caltech101(VisionDataset):
    """`Caltech 101 <https://data.caltech.edu/records/20086>`_: 101 object categories in
    ``root/caltech101/101_ObjectCategories`` (``BACKGROUND_Google`` left out). ``target_type``
    is ``"category"`` (int), ``"annotation"`` (the outline points of
    ``Annotations/<category>/annotation_NNNN.mat``, read without SciPy) or a list of both."""

    def __init__(
        self,
        root,
        target_type: list[str] | str = "category",
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
    ) -> None:
        super().__init__(
            os.path.join(root, "caltech101"), transform=transform,
            target_transform=target_transform,
        )
        os.makedirs(self.root, exist_ok=True)
        if isinstance(target_type, str):
            target_type = [target_type]
        self.target_type = [
            verify_str_arg(t, "target_type", ("category", "annotation")) for t in target_type
        ]
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError(
                "Dataset not found or corrupted. You can use download=True to download it"
            )

        self.categories = sorted(os.listdir(os.path.join(self.root, "101_ObjectCategories")))
        self.categories.remove("BACKGROUND_Google")  # not a real class
        name_map = {
            "Faces": "Faces_2",
            "Faces_easy": "Faces_3",
            "Motorbikes": "Motorbikes_16",
            "airplanes": "Airplanes_Side_2",
        }
        self.annotation_categories = [name_map.get(c, c) for c in self.categories]
        self.index: list[int] = []
        self.y: list[int] = []
        for i, c in enumerate(self.categories):
            n = len(os.listdir(os.path.join(self.root, "101_ObjectCategories", c)))
            self.index.extend(range(1, n + 1))
            self.y.extend(n * [i])

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        from PIL import Image

        category, number = self.y[index], self.index[index]
        img = Image.open(
            os.path.join(
                self.root, "101_ObjectCategories", self.categories[category],
                f"image_{number:04d}.jpg",
            )
        )
        target: Any = []
        for t in self.target_type:
            if t == "category":
                target.append(category)
            else:
                data = loadmat(
                    os.path.join(
                        self.root, "Annotations", self.annotation_categories[category],
                        f"annotation_{number:04d}.mat",
                    )
                )
                target.append(data["obj_contour"])
        target = tuple(target) if len(target) > 1 else target[0]
        return self._transform_pair(img, target)

    def _check_integrity(self) -> bool:
        return os.path.exists(os.path.join(self.root, "101_ObjectCategories"))

    def __len__(self) -> int:
        return len(self.index)

    def download(self) -> None:
        """Download ``caltech-101.zip`` and extract the two archives inside it."""
        if self._check_integrity():
            return
        download_and_extract_archive(
            "https://data.caltech.edu/records/mzrjq-6wc02/files/caltech-101.zip",
            download_root=self.root,
            filename="caltech-101.zip",
            md5="3138e1922a9193bfa496528edbbc45d0",
        )
        gzip_folder = os.path.join(self.root, "caltech-101")
        for gzip_file in os.listdir(gzip_folder):
            if gzip_file.endswith(".gz"):
                extract_archive(os.path.join(gzip_folder, gzip_file), self.root)
        shutil.rmtree(gzip_folder)
        os.remove(os.path.join(self.root, "caltech-101.zip"))

    def extra_repr(self) -> str:
        return f"Target type: {self.target_type}"


class Caltech256(VisionDataset):
    """`Caltech 256 <https://data.caltech.edu/records/20087>`_: 256 object categories (and
    clutter) in ``root/caltech256/256_ObjectCategories/NNN.<name>/NNN_MMMM.jpg``."""

    def __init__(
        self,
        root,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
    ) -> None:
        super().__init__(
            os.path.join(root, "caltech256"), transform=transform,
            target_transform=target_transform,
        )
        os.makedirs(self.root, exist_ok=True)
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError(
                "Dataset not found or corrupted. You can use download=True to download it"
            )
        self.categories = sorted(os.listdir(os.path.join(self.root, "256_ObjectCategories")))
        self.index: list[int] = []
        self.y: list[int] = []
        for i, c in enumerate(self.categories):
            folder = os.path.join(self.root, "256_ObjectCategories", c)
            n = len([item for item in os.listdir(folder) if item.endswith(".jpg")])
            self.index.extend(range(1, n + 1))
            self.y.extend(n * [i])

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        from PIL import Image

        category = self.y[index]
        img = Image.open(
            os.path.join(
                self.root, "256_ObjectCategories", self.categories[category],
                f"{category + 1:03d}_{self.index[index]:04d}.jpg",
            )
        )
        return self._transform_pair(img, category)

    def _check_integrity(self) -> bool:
        return os.path.exists(os.path.join(self.root, "256_ObjectCategories"))

    def __len__(self) -> int:
        return len(self.index)

    def download(self) -> None:
        """Download and extract ``256_ObjectCategories.tar`` unless already there."""
        if self._check_integrity():
            return
        download_and_extract_archive(
            "https://data.caltech.edu/records/nyy15-4j048/files/256_ObjectCategories.tar",
            self.root,
            filename="256_ObjectCategories.tar",
            md5="67b4f42ca05d46448c6bb8ecd2220f6d",
        )
