"""Omniglot, as ``torchvision.datasets.Omniglot``."""

from __future__ import annotations

import os
from collections.abc import Callable
from os.path import join
from typing import Any

from .utils import check_integrity, download_and_extract_archive
from .vision import VisionDataset

__all__ = ["Omniglot"]


def _list_dir(root) -> list[str]:
    """The sub-folders of ``root`` in ``os.listdir`` order (torchvision's ``list_dir``)."""
    root = os.path.expanduser(root)
    return [p for p in os.listdir(root) if os.path.isdir(os.path.join(root, p))]


def _list_files(root, suffix: str) -> list[str]:
    """The files of ``root`` ending in ``suffix``, in ``os.listdir`` order (``list_files``)."""
    root = os.path.expanduser(root)
    return [
        p for p in os.listdir(root) if os.path.isfile(os.path.join(root, p)) and p.endswith(suffix)
    ]


class Omniglot(VisionDataset):
    """`Omniglot <https://github.com/brendenlake/omniglot>`_: 1,623 handwritten characters from
    50 alphabets, read from ``root/omniglot-py/images_{background,evaluation}`` (the
    ``background`` set by default); the target is the character's index. Like torchvision,
    alphabets, characters and images are taken in the file system's listing order."""

    folder = "omniglot-py"
    download_url_prefix = "https://raw.githubusercontent.com/brendenlake/omniglot/master/python"
    zips_md5 = {
        "images_background": "68d2efa1b9178cc56df9314c21c6e718",
        "images_evaluation": "6b91aef0f799c5bb55b94e3f2daec811",
    }

    def __init__(
        self,
        root,
        background: bool = True,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
        loader: Callable[[Any], Any] | None = None,
    ) -> None:
        super().__init__(
            join(root, self.folder), transform=transform, target_transform=target_transform
        )
        self.background = background
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError(
                "Dataset not found or corrupted. You can use download=True to download it"
            )
        self.target_folder = join(self.root, self._get_target_folder())
        self._alphabets = _list_dir(self.target_folder)
        self._characters: list[str] = [
            join(a, c) for a in self._alphabets for c in _list_dir(join(self.target_folder, a))
        ]
        self._character_images = [
            [(image, idx) for image in _list_files(join(self.target_folder, character), ".png")]
            for idx, character in enumerate(self._characters)
        ]
        self._flat_character_images: list[tuple[str, int]] = [
            item for images in self._character_images for item in images
        ]
        self.loader = loader

    def __len__(self) -> int:
        return len(self._flat_character_images)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        from PIL import Image

        image_name, character_class = self._flat_character_images[index]
        image_path = join(self.target_folder, self._characters[character_class], image_name)
        if self.loader is None:
            image = Image.open(image_path, mode="r").convert("L")
        else:
            image = self.loader(image_path)
        return self._transform_pair(image, character_class)

    def _check_integrity(self) -> bool:
        name = self._get_target_folder()
        return check_integrity(join(self.root, name + ".zip"), self.zips_md5[name])

    def download(self) -> None:
        """Download and extract the set's zip unless it is already there."""
        if self._check_integrity():
            return
        name = self._get_target_folder()
        download_and_extract_archive(
            f"{self.download_url_prefix}/{name}.zip", self.root, filename=name + ".zip",
            md5=self.zips_md5[name],
        )

    def _get_target_folder(self) -> str:
        return "images_background" if self.background else "images_evaluation"
