"""Multi-view stereo patches (PhotoTour), as ``torchvision.datasets.PhotoTour``."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

import ember

from .utils import download_url, extract_archive
from .vision import VisionDataset

__all__ = ["PhotoTour"]


class PhotoTour(VisionDataset):
    """`Multi-view Stereo Correspondence <http://matthewalunbrown.com/patchdata/patchdata.html>`_
    patches. The first use reads ``root/<name>/`` (64x64 patches tiled in ``.bmp`` files,
    ``info.txt``, ``m50_100000_100000_0.txt``) into ``root/<name>.pt`` (PyTorch's checkpoint
    format, read back by :func:`ember.load`). ``train=True`` items are uint8 ``(64, 64)``
    patches; ``train=False`` items are ``(patch1, patch2, 1 if they match else 0)``."""

    urls = {
        "notredame_harris": [
            "http://matthewalunbrown.com/patchdata/notredame_harris.zip",
            "notredame_harris.zip",
            "69f8c90f78e171349abdf0307afefe4d",
        ],
        "yosemite_harris": [
            "http://matthewalunbrown.com/patchdata/yosemite_harris.zip",
            "yosemite_harris.zip",
            "a73253d1c6fbd3ba2613c45065c00d46",
        ],
        "liberty_harris": [
            "http://matthewalunbrown.com/patchdata/liberty_harris.zip",
            "liberty_harris.zip",
            "c731fcfb3abb4091110d0ae8c7ba182c",
        ],
        "notredame": [
            "http://icvl.ee.ic.ac.uk/vbalnt/notredame.zip",
            "notredame.zip",
            "509eda8535847b8c0a90bbb210c83484",
        ],
        "yosemite": [
            "http://icvl.ee.ic.ac.uk/vbalnt/yosemite.zip",
            "yosemite.zip",
            "533b2e8eb7ede31be40abc317b2fd4f0",
        ],
        "liberty": [
            "http://icvl.ee.ic.ac.uk/vbalnt/liberty.zip",
            "liberty.zip",
            "fdd9152f138ea5ef2091746689176414",
        ],
    }
    means = {
        "notredame": 0.4854,
        "yosemite": 0.4844,
        "liberty": 0.4437,
        "notredame_harris": 0.4854,
        "yosemite_harris": 0.4844,
        "liberty_harris": 0.4437,
    }
    stds = {
        "notredame": 0.1864,
        "yosemite": 0.1818,
        "liberty": 0.2019,
        "notredame_harris": 0.1864,
        "yosemite_harris": 0.1818,
        "liberty_harris": 0.2019,
    }
    lens = {
        "notredame": 468159,
        "yosemite": 633587,
        "liberty": 450092,
        "liberty_harris": 379587,
        "yosemite_harris": 450912,
        "notredame_harris": 325295,
    }
    image_ext = "bmp"
    info_file = "info.txt"
    matches_files = "m50_100000_100000_0.txt"

    def __init__(
        self,
        root,
        name: str,
        train: bool = True,
        transform: Callable | None = None,
        download: bool = False,
    ) -> None:
        super().__init__(root, transform=transform)
        self.name = name
        self.data_dir = os.path.join(self.root, name)
        self.data_down = os.path.join(self.root, f"{name}.zip")
        self.data_file = os.path.join(self.root, f"{name}.pt")
        self.train = train
        self.mean = self.means[name]
        self.std = self.stds[name]
        if download:
            self.download()
        if not self._check_datafile_exists():
            self.cache()
        self.data, self.labels, self.matches = ember.load(self.data_file, weights_only=True)

    def __getitem__(self, index: int) -> Any:
        if self.train:
            data = self.data[index]
            if self.transform is not None:
                data = self.transform(data)
            return data
        m = self.matches[index]
        data1, data2 = self.data[m[0]], self.data[m[1]]
        if self.transform is not None:
            data1, data2 = self.transform(data1), self.transform(data2)
        return data1, data2, m[2]

    def __len__(self) -> int:
        return len(self.data if self.train else self.matches)

    def _check_datafile_exists(self) -> bool:
        return os.path.exists(self.data_file)

    def _check_downloaded(self) -> bool:
        return os.path.exists(self.data_dir)

    def download(self) -> None:
        """Download the zip and extract it (safely) into ``root/<name>``."""
        if self._check_datafile_exists():
            return
        if not self._check_downloaded():
            url, filename, md5 = self.urls[self.name]
            fpath = os.path.join(self.root, filename)
            download_url(url, self.root, filename, md5)
            extract_archive(fpath, self.data_dir)
            os.unlink(fpath)

    def cache(self) -> None:
        """Read the patches, labels and matches and save them to ``root/<name>.pt``."""
        dataset = (
            read_image_file(self.data_dir, self.image_ext, self.lens[self.name]),
            read_info_file(self.data_dir, self.info_file),
            read_matches_files(self.data_dir, self.matches_files),
        )
        ember.save(dataset, self.data_file)

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train is True else 'Test'}"


def read_image_file(data_dir: str, image_ext: str, n: int) -> ember.Tensor:
    """The first ``n`` 64x64 patches of the sorted ``*.<image_ext>`` files, row by row."""
    files = sorted(
        os.path.join(data_dir, f) for f in os.listdir(data_dir) if f.endswith(image_ext)
    )
    from PIL import Image

    patches = []
    for fpath in files:
        with Image.open(fpath) as img:
            pixels = np.asarray(img.convert("L") if img.mode != "L" else img, dtype=np.uint8)
        for y in range(0, pixels.shape[0], 64):
            for x in range(0, pixels.shape[1], 64):
                patch = np.zeros((64, 64), np.uint8)  # PIL's crop pads past the edge with 0
                tile = pixels[y : y + 64, x : x + 64]
                patch[: tile.shape[0], : tile.shape[1]] = tile
                patches.append(patch)
    return ember.from_numpy(np.array(patches[:n], dtype=np.uint8).reshape(-1, 64, 64))


def read_info_file(data_dir: str, info_file: str) -> ember.Tensor:
    """The 3D point id of each patch (the first column of ``info_file``)."""
    with open(os.path.join(data_dir, info_file)) as f:
        labels = [int(line.split()[0]) for line in f]
    return ember.tensor(labels, dtype=ember.int64, device="cpu")


def read_matches_files(data_dir: str, matches_file: str) -> ember.Tensor:
    """``(patch1, patch2, 1 if their 3D points are the same else 0)`` per line."""
    matches = []
    with open(os.path.join(data_dir, matches_file)) as f:
        for line in f:
            s = line.split()
            matches.append([int(s[0]), int(s[3]), int(s[1] == s[4])])
    return ember.tensor(matches, dtype=ember.int64, device="cpu")
