"""Rendered SST2, as ``torchvision.datasets.RenderedSST2``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .folder import default_loader, make_dataset
from .utils import download_and_extract_archive, verify_str_arg
from .vision import VisionDataset

__all__ = ["RenderedSST2"]


class RenderedSST2(VisionDataset):
    """`Rendered SST2 <https://github.com/openai/CLIP/blob/main/data/rendered-sst2.md>`_:
    sentences of SST-2 rendered as images, ``negative`` or ``positive``, read from
    ``root/rendered-sst2/{train,valid,test}/<class>/*.png``."""

    _URL = "https://openaipublic.azureedge.net/clip/data/rendered-sst2.tgz"
    _MD5 = "2384d08e9dcfa4bd55b324e610496ee5"

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
        self._split = verify_str_arg(split, "split", ("train", "val", "test"))
        self._split_to_folder = {"train": "train", "val": "valid", "test": "test"}
        self._base_folder = Path(self.root) / "rendered-sst2"
        self.classes = ["negative", "positive"]
        self.class_to_idx = {"negative": 0, "positive": 1}
        if download:
            self._download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found. You can use download=True to download it")
        self._samples = make_dataset(
            str(self._base_folder / self._split_to_folder[self._split]), extensions=("png",)
        )
        self.loader = loader

    def __len__(self) -> int:
        return len(self._samples)

    def __getitem__(self, idx: int) -> tuple[Any, Any]:
        image_file, label = self._samples[idx]
        return self._transform_pair(self.loader(image_file), label)

    def extra_repr(self) -> str:
        return f"split={self._split}"

    def _check_exists(self) -> bool:
        folder = self._base_folder / self._split_to_folder[self._split]
        return all((folder / c).is_dir() for c in self.classes)

    def _download(self) -> None:
        if self._check_exists():
            return
        download_and_extract_archive(self._URL, download_root=self.root, md5=self._MD5)
