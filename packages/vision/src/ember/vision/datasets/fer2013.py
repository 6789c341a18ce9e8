"""FER2013 facial expressions, as ``torchvision.datasets.FER2013``."""

from __future__ import annotations

import csv
import pathlib
from collections.abc import Callable
from typing import Any

import numpy as np

from .utils import check_integrity, verify_str_arg
from .vision import VisionDataset

__all__ = ["FER2013"]

_KAGGLE = (
    "https://www.kaggle.com/c/"
    "challenges-in-representation-learning-facial-expression-recognition-challenge"
)


class FER2013(VisionDataset):
    """`FER2013 <https://www.kaggle.com/c/challenges-in-representation-learning-facial-
    expression-recognition-challenge>`_: 48x48 grayscale faces in 7 expressions, read from
    ``root/fer2013/`` (``fer2013.csv``, else ``icml_face_data.csv``, else ``train.csv`` /
    ``test.csv``, whose test split has no labels: its targets are ``None``). Not downloadable."""

    _RESOURCES = {
        "train": ("train.csv", "3f0dfb3d3fd99c811a1299cb947e3131"),
        "test": ("test.csv", "b02c2298636a634e8c2faabbf3ea9a23"),
        "fer": ("fer2013.csv", "f8428a1edbd21e88f42c73edd2a14f95"),
        "icml": ("icml_face_data.csv", "b114b9e04e6949e5fe8b6a98b3892b1d"),
    }

    def __init__(
        self,
        root,
        split: str = "train",
        transform: Callable | None = None,
        target_transform: Callable | None = None,
    ) -> None:
        self._split = verify_str_arg(split, "split", ("train", "test"))
        super().__init__(root, transform=transform, target_transform=target_transform)
        base_folder = pathlib.Path(self.root) / "fer2013"
        use_fer = (base_folder / self._RESOURCES["fer"][0]).exists()
        use_icml = not use_fer and (base_folder / self._RESOURCES["icml"][0]).exists()
        file_name, md5 = self._RESOURCES["fer" if use_fer else "icml" if use_icml else split]
        data_file = base_folder / file_name
        if not check_integrity(str(data_file), md5=md5):
            raise RuntimeError(
                f"{file_name} not found in {base_folder} or corrupted. "
                f"You can download it from {_KAGGLE}"
            )
        pixels_key = " pixels" if use_icml else "pixels"
        usage_key = " Usage" if use_icml else "Usage"
        labelled = use_fer or use_icml or self._split == "train"

        def sample(row: dict) -> tuple[np.ndarray, int | None]:
            pixels = [int(v) for v in row[pixels_key].split()]
            image = np.array(pixels, dtype=np.uint8).reshape(48, 48)
            return image, int(row["emotion"]) if labelled else None

        with open(data_file, newline="") as file:
            rows = csv.DictReader(file)
            if use_fer or use_icml:
                keep = ("Training",) if self._split == "train" else ("PublicTest", "PrivateTest")
                rows = (row for row in rows if row[usage_key] in keep)
            self._samples = [sample(row) for row in rows]

    def __len__(self) -> int:
        return len(self._samples)

    def __getitem__(self, idx: int) -> tuple[Any, Any]:
        from PIL import Image

        image, target = self._samples[idx]
        return self._transform_pair(Image.fromarray(image), target)

    def extra_repr(self) -> str:
        return f"split={self._split}"
