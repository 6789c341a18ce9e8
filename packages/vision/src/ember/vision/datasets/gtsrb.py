"""The German Traffic Sign Recognition Benchmark, as ``torchvision.datasets.GTSRB``."""

from __future__ import annotations

import csv
import pathlib
from collections.abc import Callable
from typing import Any

from .folder import make_dataset
from .utils import download_and_extract_archive, verify_str_arg
from .vision import VisionDataset

__all__ = ["GTSRB"]


class GTSRB(VisionDataset):
    """`GTSRB <https://benchmark.ini.rub.de/>`_: 43 traffic-sign classes. The train split is
    ``root/gtsrb/GTSRB/Training/<class>/*.ppm``; the test split's labels come from
    ``root/gtsrb/GT-final_test.csv``."""

    _BASE_URL = "https://sid.erda.dk/public/archives/daaeac0d7ce1152aea9b61d9f1e19370/"

    def __init__(
        self,
        root,
        split: str = "train",
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
    ) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._split = verify_str_arg(split, "split", ("train", "test"))
        self._base_folder = pathlib.Path(root) / "gtsrb"
        self._target_folder = self._base_folder / "GTSRB" / (
            "Training" if self._split == "train" else "Final_Test/Images"
        )
        if download:
            self.download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found. You can use download=True to download it")

        if self._split == "train":
            samples = make_dataset(str(self._target_folder), extensions=(".ppm",))
        else:
            with open(self._base_folder / "GT-final_test.csv") as csv_file:
                samples = [
                    (str(self._target_folder / row["Filename"]), int(row["ClassId"]))
                    for row in csv.DictReader(csv_file, delimiter=";", skipinitialspace=True)
                ]
        self._samples = samples

    def __len__(self) -> int:
        return len(self._samples)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        from PIL import Image

        path, target = self._samples[index]
        return self._transform_pair(Image.open(path).convert("RGB"), target)

    def _check_exists(self) -> bool:
        return self._target_folder.is_dir()

    def download(self) -> None:
        """Download and extract the split's archives unless its folder is already there."""
        if self._check_exists():
            return
        archives = (
            [("GTSRB-Training_fixed.zip", "513f3c79a4c5141765e10e952eaa2478")]
            if self._split == "train"
            else [
                ("GTSRB_Final_Test_Images.zip", "c7e4e6327067d32654124b0fe9e82185"),
                ("GTSRB_Final_Test_GT.zip", "fe31e9c9270bbcd7b84b7f21a9d9d9e5"),
            ]
        )
        for name, md5 in archives:
            download_and_extract_archive(
                self._BASE_URL + name, download_root=str(self._base_folder), md5=md5
            )
