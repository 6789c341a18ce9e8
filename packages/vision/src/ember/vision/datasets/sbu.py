"""SBU Captioned Photos, as ``torchvision.datasets.SBU``."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from .folder import default_loader
from .utils import check_integrity, download_and_extract_archive, download_url
from .vision import VisionDataset

__all__ = ["SBU"]


class SBU(VisionDataset):
    """`SBU Captioned Photo Dataset <http://www.cs.virginia.edu/~vicente/sbucaptions/>`_: Flickr
    photos with their captions; only the photos present in ``root/dataset`` are items.
    ``download`` defaults to True, as in torchvision: it fetches the URL and caption lists,
    then every photo it can (photos removed from Flickr are skipped)."""

    url = "https://www.cs.rice.edu/~vo9/sbucaptions/SBUCaptionedPhotoDataset.tar.gz"
    filename = "SBUCaptionedPhotoDataset.tar.gz"
    md5_checksum = "9aec147b3488753cf758b4d493422285"

    def __init__(
        self,
        root,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = True,
        loader: Callable[[str], Any] = default_loader,
    ) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.loader = loader
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError(
                "Dataset not found or corrupted. You can use download=True to download it"
            )
        self.photos: list[str] = []
        self.captions: list[str] = []
        folder = os.path.join(self.root, "dataset")
        with open(os.path.join(folder, "SBU_captioned_photo_dataset_urls.txt")) as urls, open(
            os.path.join(folder, "SBU_captioned_photo_dataset_captions.txt")
        ) as captions:
            for line1, line2 in zip(urls, captions):
                photo = os.path.basename(line1.rstrip())
                if os.path.exists(os.path.join(folder, photo)):
                    self.photos.append(photo)
                    self.captions.append(line2.rstrip())

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        img = self.loader(os.path.join(self.root, "dataset", self.photos[index]))
        return self._transform_pair(img, self.captions[index])

    def __len__(self) -> int:
        return len(self.photos)

    def _check_integrity(self) -> bool:
        return check_integrity(os.path.join(self.root, self.filename), self.md5_checksum)

    def download(self) -> None:
        """Download and extract the lists, then each photo that can still be fetched."""
        if self._check_integrity():
            return
        download_and_extract_archive(self.url, self.root, self.root, self.filename,
                                     self.md5_checksum)
        folder = os.path.join(self.root, "dataset")
        with open(os.path.join(folder, "SBU_captioned_photo_dataset_urls.txt")) as fh:
            for line in fh:
                try:
                    download_url(line.rstrip(), folder)
                except (OSError, RuntimeError):  # photos may be removed from Flickr any time
                    pass
