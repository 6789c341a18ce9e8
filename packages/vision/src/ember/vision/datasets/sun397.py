"""SUN397, as ``torchvision.datasets.SUN397``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .folder import default_loader
from .utils import download_and_extract_archive
from .vision import VisionDataset

__all__ = ["SUN397"]


class SUN397(VisionDataset):
    """`SUN397 <https://vision.princeton.edu/projects/2010/SUN/>`_: 397 scene categories.
    Classes come from ``root/SUN397/ClassName.txt`` (``/a/abbey`` -> ``abbey``); the images are
    every ``sun_*.jpg`` below ``root/SUN397``, labelled by their folder."""

    _DATASET_URL = "http://vision.princeton.edu/projects/2010/SUN/SUN397.tar.gz"
    _DATASET_MD5 = "8ca2778205c41d23104230ba66911c7a"

    def __init__(
        self,
        root,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
        loader: Callable[[Any], Any] = default_loader,
    ) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._data_dir = Path(self.root) / "SUN397"
        if download:
            self._download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found. You can use download=True to download it")
        with open(self._data_dir / "ClassName.txt") as f:
            self.classes = [c[3:].strip() for c in f]
        self.class_to_idx = dict(zip(self.classes, range(len(self.classes))))
        self._image_files = list(self._data_dir.rglob("sun_*.jpg"))
        self._labels = [
            self.class_to_idx["/".join(path.relative_to(self._data_dir).parts[1:-1])]
            for path in self._image_files
        ]
        self.loader = loader

    def __len__(self) -> int:
        return len(self._image_files)

    def __getitem__(self, idx: int) -> tuple[Any, Any]:
        return self._transform_pair(self.loader(self._image_files[idx]), self._labels[idx])

    def _check_exists(self) -> bool:
        return self._data_dir.is_dir()

    def _download(self) -> None:
        if self._check_exists():
            return
        download_and_extract_archive(
            self._DATASET_URL, download_root=self.root, md5=self._DATASET_MD5
        )
