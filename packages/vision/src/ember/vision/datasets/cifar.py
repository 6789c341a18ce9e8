"""CIFAR-10 and CIFAR-100 from their python pickle batches, as in ``torchvision.datasets``."""

from __future__ import annotations

import io
import os
import pickle

import numpy as np

from .utils import check_integrity, download_and_extract_archive
from .vision import _SplitImageDataset

__all__ = ["CIFAR10", "CIFAR100"]


class _PlainUnpickler(pickle.Unpickler):
    """Unpickles dicts, lists, strings, numbers and NumPy arrays only: no other global is run."""

    _ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("_codecs", "encode"),
    }

    def find_class(self, module: str, name: str):
        if (module, name) in self._ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(
            f"CIFAR batch refers to the global {module}.{name}, which is not allowed"
        )


def _load_batch(path: str) -> dict:
    with open(path, "rb") as f:
        return _PlainUnpickler(io.BytesIO(f.read()), encoding="latin1").load()


class CIFAR10(_SplitImageDataset):
    """`CIFAR10 <https://www.cs.toronto.edu/~kriz/cifar.html>`_: 32x32 color images in 10 classes.

    Reads ``root/cifar-10-batches-py`` (``download=True`` fetches and safely extracts the
    tar.gz). Items are ``(PIL RGB image, int label)``; ``data`` is uint8 ``(N, 32, 32, 3)``.
    """

    base_folder = "cifar-10-batches-py"
    url = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
    filename = "cifar-10-python.tar.gz"
    tgz_md5 = "c58f30108f718f92721af3b95e74349a"
    train_list = [
        ["data_batch_1", "c99cafc152244af753f735de768cd75f"],
        ["data_batch_2", "d4bba439e000b95fd0a9bffe97cbabec"],
        ["data_batch_3", "54ebc095f3ab1f0389bbae665268c751"],
        ["data_batch_4", "634d18415352ddfa80567beed471001a"],
        ["data_batch_5", "482c414d41f54cd18b22e5b47cb7c3cb"],
    ]
    test_list = [["test_batch", "40351d587109b95175f43aff81a1287e"]]
    meta = {
        "filename": "batches.meta",
        "key": "label_names",
        "md5": "5ff9c542aee3614f3951f8cda6e48888",
    }

    _not_found_msg = "Dataset not found or corrupted. You can use download=True to download it"

    def _load_data(self) -> tuple[np.ndarray, list[int]]:
        data, targets = [], []
        for file_name, _ in self.train_list if self.train else self.test_list:
            entry = _load_batch(os.path.join(self.root, self.base_folder, file_name))
            data.append(np.asarray(entry["data"], dtype=np.uint8))
            targets.extend(entry["labels"] if "labels" in entry else entry["fine_labels"])
        self._load_meta()
        return np.vstack(data).reshape(-1, 3, 32, 32).transpose((0, 2, 3, 1)), targets

    def _load_meta(self) -> None:
        path = os.path.join(self.root, self.base_folder, self.meta["filename"])
        if not check_integrity(path, self.meta["md5"]):
            raise RuntimeError(
                "Dataset metadata file not found or corrupted. "
                "You can use download=True to download it"
            )
        self.classes = _load_batch(path)[self.meta["key"]]

    def _check_integrity(self) -> bool:
        return all(
            check_integrity(os.path.join(self.root, self.base_folder, name), md5)
            for name, md5 in self.train_list + self.test_list
        )

    def _check_exists(self) -> bool:
        return self._check_integrity()

    def download(self) -> None:
        """Download and extract the archive unless the batches are already there."""
        if self._check_integrity():
            return
        download_and_extract_archive(self.url, self.root, filename=self.filename, md5=self.tgz_md5)


class CIFAR100(CIFAR10):
    """`CIFAR100 <https://www.cs.toronto.edu/~kriz/cifar.html>`_: 100 fine classes."""

    base_folder = "cifar-100-python"
    url = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
    filename = "cifar-100-python.tar.gz"
    tgz_md5 = "eb9058c3a382ffc7106e4002c42a8d85"
    train_list = [["train", "16019d7e3df5f24257cddd939b257f8d"]]
    test_list = [["test", "f0ef6b0ae62326f3e7ffdfab6717acfc"]]
    meta = {
        "filename": "meta",
        "key": "fine_label_names",
        "md5": "7973b15100ade9c7d40fb424638fde48",
    }
