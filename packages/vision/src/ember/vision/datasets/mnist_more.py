"""EMNIST and QMNIST, the MNIST variants of ``torchvision.datasets`` (IDX files, as MNIST)."""

from __future__ import annotations

import os
import shutil
import string
from typing import Any

import numpy as np

import ember

from .mnist import MNIST, read_image_file, read_label_file, read_sn3_pascalvincent_tensor
from .utils import check_integrity, download_and_extract_archive, extract_archive, verify_str_arg

__all__ = ["EMNIST", "QMNIST"]


class EMNIST(MNIST):
    """`EMNIST <https://www.westernsydney.edu.au/bens/home/reproducible_research/emnist>`_:
    handwritten characters in six splits (``byclass``, ``bymerge``, ``balanced``, ``letters``,
    ``digits``, ``mnist``), read from ``root/EMNIST/raw/emnist-<split>-{train,test}-*``."""

    url = "https://biometrics.nist.gov/cs_links/EMNIST/gzip.zip"
    md5 = "58c8d27c78d21e728a6bc7b3cc06412e"
    splits = ("byclass", "bymerge", "balanced", "letters", "digits", "mnist")
    # the merged classes have the same shape in upper and lower case
    _merged_classes = {"c", "i", "j", "k", "l", "m", "o", "p", "s", "u", "v", "w", "x", "y", "z"}
    _all_classes = set(string.digits + string.ascii_letters)
    classes_split_dict = {
        "byclass": sorted(_all_classes),
        "bymerge": sorted(_all_classes - _merged_classes),
        "balanced": sorted(_all_classes - _merged_classes),
        "letters": ["N/A"] + list(string.ascii_lowercase),
        "digits": list(string.digits),
        "mnist": list(string.digits),
    }

    def __init__(self, root, split: str, **kwargs: Any) -> None:
        self.split = verify_str_arg(split, "split", self.splits)
        self.training_file = self._training_file(split)
        self.test_file = self._test_file(split)
        super().__init__(root, **kwargs)
        self.classes = self.classes_split_dict[self.split]

    @staticmethod
    def _training_file(split) -> str:
        return f"training_{split}.pt"

    @staticmethod
    def _test_file(split) -> str:
        return f"test_{split}.pt"

    @property
    def _file_prefix(self) -> str:
        return f"emnist-{self.split}-{'train' if self.train else 'test'}"

    @property
    def images_file(self) -> str:
        return os.path.join(self.raw_folder, f"{self._file_prefix}-images-idx3-ubyte")

    @property
    def labels_file(self) -> str:
        return os.path.join(self.raw_folder, f"{self._file_prefix}-labels-idx1-ubyte")

    def _load_data(self):
        return read_image_file(self.images_file), read_label_file(self.labels_file)

    def _check_exists(self) -> bool:
        return all(check_integrity(f) for f in (self.images_file, self.labels_file))

    def download(self) -> None:
        """Download ``gzip.zip`` and decompress its IDX files into ``raw_folder``."""
        if self._check_exists():
            return
        os.makedirs(self.raw_folder, exist_ok=True)
        download_and_extract_archive(self.url, download_root=self.raw_folder, md5=self.md5)
        gzip_folder = os.path.join(self.raw_folder, "gzip")
        for gzip_file in os.listdir(gzip_folder):
            if gzip_file.endswith(".gz"):
                extract_archive(os.path.join(gzip_folder, gzip_file), self.raw_folder)
        shutil.rmtree(gzip_folder)


_QMNIST_URL = "https://raw.githubusercontent.com/facebookresearch/qmnist/master/"


class QMNIST(MNIST):
    """`QMNIST <https://github.com/facebookresearch/qmnist>`_: MNIST rebuilt from NIST with
    extended labels. ``what`` picks ``train``, ``test``, ``test10k``, ``test50k`` or ``nist``
    (default: ``train`` or ``test`` by ``train``); ``compat=True`` gives the class as the
    target, ``compat=False`` the row of 8 label fields (an int64 tensor)."""

    subsets = {"train": "train", "test": "test", "test10k": "test", "test50k": "test",
               "nist": "nist"}
    resources: dict[str, list[tuple[str, str]]] = {  # type: ignore[assignment]
        "train": [
            (_QMNIST_URL + "qmnist-train-images-idx3-ubyte.gz", "ed72d4157d28c017586c42bc6afe6370"),
            (_QMNIST_URL + "qmnist-train-labels-idx2-int.gz", "0058f8dd561b90ffdd0f734c6a30e5e4"),
        ],
        "test": [
            (_QMNIST_URL + "qmnist-test-images-idx3-ubyte.gz", "1394631089c404de565df7b7aeaf9412"),
            (_QMNIST_URL + "qmnist-test-labels-idx2-int.gz", "5b5b05890a5e13444e108efe57b788aa"),
        ],
        "nist": [
            (_QMNIST_URL + "xnist-images-idx3-ubyte.xz", "7f124b3b8ab81486c9d8c2749c17f834"),
            (_QMNIST_URL + "xnist-labels-idx2-int.xz", "5ed0e788978e45d4a8bd4b7caec3d79d"),
        ],
    }

    def __init__(
        self, root, what: str | None = None, compat: bool = True, train: bool = True,
        **kwargs: Any,
    ) -> None:
        if what is None:
            what = "train" if train else "test"
        self.what = verify_str_arg(what, "what", tuple(self.subsets.keys()))
        self.compat = compat
        self.data_file = what + ".pt"
        self.training_file = self.data_file
        self.test_file = self.data_file
        super().__init__(root, train, **kwargs)

    def _file(self, which: int) -> str:
        url, _ = self.resources[self.subsets[self.what]][which]
        return os.path.join(self.raw_folder, os.path.splitext(os.path.basename(url))[0])

    @property
    def images_file(self) -> str:
        return self._file(0)

    @property
    def labels_file(self) -> str:
        return self._file(1)

    def _check_exists(self) -> bool:
        return all(check_integrity(f) for f in (self.images_file, self.labels_file))

    def _load_data(self):
        data = read_sn3_pascalvincent_tensor(self.images_file)
        if data.dtype != ember.uint8:
            raise TypeError(f"data should be of dtype torch.uint8 instead of {data.dtype}")
        if data.ndimension() != 3:
            raise ValueError("data should have 3 dimensions instead of {data.ndimension()}")
        targets = read_sn3_pascalvincent_tensor(self.labels_file).long()
        if targets.ndimension() != 2:
            raise ValueError(
                f"targets should have 2 dimensions instead of {targets.ndimension()}"
            )
        if self.what == "test10k":
            data, targets = data[0:10000, :, :].clone(), targets[0:10000, :].clone()
        elif self.what == "test50k":
            data, targets = data[10000:, :, :].clone(), targets[10000:, :].clone()
        return data, targets

    def download(self) -> None:
        """Download (and decompress) the two files of ``what`` unless already there."""
        if self._check_exists():
            return
        os.makedirs(self.raw_folder, exist_ok=True)
        for url, md5 in self.resources[self.subsets[self.what]]:
            download_and_extract_archive(url, self.raw_folder, md5=md5)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        from PIL import Image

        img, target = self.data[index], self.targets[index]
        img = Image.fromarray(np.ascontiguousarray(img.numpy()))  # uint8 (H, W): mode "L"
        if self.transform is not None:
            img = self.transform(img)
        if self.compat:
            target = int(target[0])
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def extra_repr(self) -> str:
        return f"Split: {self.what}"
