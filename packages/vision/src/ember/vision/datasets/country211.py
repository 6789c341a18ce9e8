"""Country211, as ``torchvision.datasets.Country211``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .folder import ImageFolder, default_loader
from .utils import download_and_extract_archive, verify_str_arg

__all__ = ["Country211"]


class Country211(ImageFolder):
    """`Country211 <https://github.com/openai/CLIP/blob/main/data/country211.md>`_ (OpenAI):
    YFCC100m photos of 211 countries, an :class:`ImageFolder` over
    ``root/country211/<split>`` (``train``, ``valid`` or ``test``)."""

    _URL = "https://openaipublic.azureedge.net/clip/data/country211.tgz"
    _MD5 = "84988d7644798601126c29e9877aab6a"

    def __init__(
        self,
        root,
        split: str = "train",
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
        loader: Callable[[str], Any] = default_loader,
    ) -> None:
        self._split = verify_str_arg(split, "split", ("train", "valid", "test"))
        root = Path(root).expanduser()
        self.root = str(root)
        self._base_folder = root / "country211"
        if download:
            self._download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found. You can use download=True to download it")
        super().__init__(
            str(self._base_folder / self._split), transform=transform,
            target_transform=target_transform, loader=loader,
        )
        self.root = str(root)

    def _check_exists(self) -> bool:
        return self._base_folder.is_dir()

    def _download(self) -> None:
        if self._check_exists():
            return
        download_and_extract_archive(self._URL, download_root=self.root, md5=self._MD5)
