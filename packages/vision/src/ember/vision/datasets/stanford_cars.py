"""Stanford Cars, as ``torchvision.datasets.StanfordCars`` (its ``.mat`` annotations read by
Ember's own MATLAB reader, not SciPy)."""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from typing import Any

from ._matlab import loadmat
from .folder import default_loader
from .utils import verify_str_arg
from .vision import VisionDataset

__all__ = ["StanfordCars"]


class StanfordCars(VisionDataset):
    """Stanford Cars: 16,185 images of 196 car models, read from ``root/stanford_cars``
    (``devkit/cars_meta.mat``, ``devkit/cars_train_annos.mat`` + ``cars_train/``, or
    ``cars_test_annos_withlabels.mat`` + ``cars_test/``). The original download is gone, so
    ``download=True`` raises."""

    def __init__(
        self,
        root,
        split: str = "train",
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
        loader: Callable[[str], Any] = default_loader,
    ) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._split = verify_str_arg(split, "split", ("train", "test"))
        self._base_folder = pathlib.Path(root) / "stanford_cars"
        devkit = self._base_folder / "devkit"
        if self._split == "train":
            self._annotations_mat_path = devkit / "cars_train_annos.mat"
            self._images_base_path = self._base_folder / "cars_train"
        else:
            self._annotations_mat_path = self._base_folder / "cars_test_annos_withlabels.mat"
            self._images_base_path = self._base_folder / "cars_test"
        if download:
            self.download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found.")

        annotations = loadmat(self._annotations_mat_path, squeeze_me=True)["annotations"]
        self._samples = [
            (str(self._images_base_path / a["fname"]), a["class"] - 1)  # classes count from 1
            for a in annotations
        ]
        self.classes = loadmat(devkit / "cars_meta.mat", squeeze_me=True)["class_names"].tolist()
        self.class_to_idx = {cls: i for i, cls in enumerate(self.classes)}
        self.loader = loader

    def __len__(self) -> int:
        return len(self._samples)

    def __getitem__(self, idx: int) -> tuple[Any, Any]:
        image_path, target = self._samples[idx]
        return self._transform_pair(self.loader(image_path), target)

    def _check_exists(self) -> bool:
        if not (self._base_folder / "devkit").is_dir():
            return False
        return self._annotations_mat_path.exists() and self._images_base_path.is_dir()

    def download(self):
        raise ValueError(
            "The original URL is broken so the StanfordCars dataset cannot be downloaded anymore."
        )
