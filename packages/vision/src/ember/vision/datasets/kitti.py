"""KITTI 2D object detection, as ``torchvision.datasets.Kitti``."""

from __future__ import annotations

import csv
import os
from collections.abc import Callable
from typing import Any

from .utils import download_and_extract_archive
from .vision import VisionDataset

__all__ = ["Kitti"]


class Kitti(VisionDataset):
    """`KITTI <http://www.cvlibs.net/datasets/kitti/eval_object.php?obj_benchmark>`_ object
    detection: ``root/Kitti/raw/{training,testing}/image_2`` with ``label_2`` text labels for
    training; a target is a list of dicts (``type``, ``truncated``, ``occluded``, ``alpha``,
    ``bbox``, ``dimensions``, ``location``, ``rotation_y``), ``None`` for the test split. Like
    torchvision, images are taken in the file system's listing order."""

    data_url = "https://s3.eu-central-1.amazonaws.com/avg-kitti/"
    resources = ["data_object_image_2.zip", "data_object_label_2.zip"]
    image_dir_name = "image_2"
    labels_dir_name = "label_2"

    def __init__(
        self,
        root,
        train: bool = True,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        transforms: Callable | None = None,
        download: bool = False,
    ) -> None:
        super().__init__(
            root, transform=transform, target_transform=target_transform, transforms=transforms
        )
        self.images: list[str] = []
        self.targets: list[str] = []
        self.train = train
        self._location = "training" if self.train else "testing"
        if download:
            self.download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found. You may use download=True to download it.")
        image_dir = os.path.join(self._raw_folder, self._location, self.image_dir_name)
        labels_dir = os.path.join(self._raw_folder, self._location, self.labels_dir_name)
        for img_file in os.listdir(image_dir):
            self.images.append(os.path.join(image_dir, img_file))
            if self.train:
                self.targets.append(os.path.join(labels_dir, f"{img_file.split('.')[0]}.txt"))

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        from PIL import Image

        image = Image.open(self.images[index])
        target = self._parse_target(index) if self.train else None
        if self.transforms:
            image, target = self.transforms(image, target)
        return image, target

    def _parse_target(self, index: int) -> list:
        target = []
        with open(self.targets[index]) as inp:
            for line in csv.reader(inp, delimiter=" "):
                target.append({
                    "type": line[0],
                    "truncated": float(line[1]),
                    "occluded": int(line[2]),
                    "alpha": float(line[3]),
                    "bbox": [float(x) for x in line[4:8]],
                    "dimensions": [float(x) for x in line[8:11]],
                    "location": [float(x) for x in line[11:14]],
                    "rotation_y": float(line[14]),
                })
        return target

    def __len__(self) -> int:
        return len(self.images)

    @property
    def _raw_folder(self) -> str:
        return os.path.join(self.root, self.__class__.__name__, "raw")

    def _check_exists(self) -> bool:
        folders = [self.image_dir_name]
        if self.train:
            folders.append(self.labels_dir_name)
        return all(
            os.path.isdir(os.path.join(self._raw_folder, self._location, f)) for f in folders
        )

    def download(self) -> None:
        """Download and extract the image and label archives (no checksums are published)."""
        if self._check_exists():
            return
        os.makedirs(self._raw_folder, exist_ok=True)
        for fname in self.resources:
            download_and_extract_archive(
                url=f"{self.data_url}{fname}", download_root=self._raw_folder, filename=fname
            )
