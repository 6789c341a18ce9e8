"""CLEVR object counting, as ``torchvision.datasets.CLEVRClassification``."""

from __future__ import annotations

import json
import pathlib
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

from .folder import default_loader
from .utils import download_and_extract_archive, verify_str_arg
from .vision import VisionDataset

__all__ = ["CLEVRClassification"]


class CLEVRClassification(VisionDataset):
    """`CLEVR <https://cs.stanford.edu/people/jcjohns/clevr/>`_ as classification: the label of
    an image is its number of objects (``None`` in the unlabelled test split). Reads
    ``root/clevr/CLEVR_v1.0/{images/<split>/,scenes/CLEVR_<split>_scenes.json}``."""

    _URL = "https://dl.fbaipublicfiles.com/clevr/CLEVR_v1.0.zip"
    _MD5 = "b11922020e72d0cd9154779b2d3d07d2"

    def __init__(
        self,
        root,
        split: str = "train",
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
        loader: Callable[[Any], Any] = default_loader,
    ) -> None:
        self._split = verify_str_arg(split, "split", ("train", "val", "test"))
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.loader = loader
        self._base_folder = pathlib.Path(self.root) / "clevr"
        self._data_folder = self._base_folder / pathlib.Path(urlparse(self._URL).path).stem
        if download:
            self._download()
        if not self._check_exists():
            raise RuntimeError(
                "Dataset not found or corrupted. You can use download=True to download it"
            )
        self._image_files = sorted(self._data_folder.joinpath("images", self._split).glob("*"))
        self._labels: list[int | None]
        if self._split != "test":
            scenes = self._data_folder / "scenes" / f"CLEVR_{self._split}_scenes.json"
            with open(scenes) as file:
                content = json.load(file)
            num_objects = {s["image_filename"]: len(s["objects"]) for s in content["scenes"]}
            self._labels = [num_objects[f.name] for f in self._image_files]
        else:
            self._labels = [None] * len(self._image_files)

    def __len__(self) -> int:
        return len(self._image_files)

    def __getitem__(self, idx: int) -> tuple[Any, Any]:
        return self._transform_pair(self.loader(self._image_files[idx]), self._labels[idx])

    def _check_exists(self) -> bool:
        return self._data_folder.is_dir()

    def _download(self) -> None:
        if self._check_exists():
            return
        download_and_extract_archive(self._URL, str(self._base_folder), md5=self._MD5)

    def extra_repr(self) -> str:
        return f"split={self._split}"
