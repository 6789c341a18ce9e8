"""CelebA, as ``torchvision.datasets.CelebA``."""

from __future__ import annotations

import csv
import os
from collections import namedtuple
from collections.abc import Callable
from typing import Any

import numpy as np

import ember

from .utils import check_integrity, download_url, extract_archive, verify_str_arg
from .vision import VisionDataset

__all__ = ["CelebA"]

CSV = namedtuple("CSV", ["header", "index", "data"])


class CelebA(VisionDataset):
    """`CelebA <http://mmlab.ie.cuhk.edu.hk/projects/CelebA.html>`_: 200k aligned celebrity
    faces. ``split`` is ``train``, ``valid``, ``test`` or ``all``; ``target_type`` is ``attr``
    (int64 tensor of 40 zeros and ones), ``identity`` (0-d int64 tensor), ``bbox`` (4) or
    ``landmarks`` (10), or a list of them (a tuple; an empty list gives ``None``).

    ``download=True`` fetches the files from Google Drive by id (``drive_url``, without
    ``gdown``); Google may refuse large files to scripts, then download them by hand.
    """

    base_folder = "celeba"
    #: ``(Google Drive file id, md5, file name)``
    file_list = [
        ("0B7EVK8r0v71pZjFTYXZWM3FlRnM", "00d2c5bc6d35e252742224ab0c1e8fcb",
         "img_align_celeba.zip"),
        ("0B7EVK8r0v71pblRyaVFSWGxPY0U", "75e246fa4810816ffd6ee81facbd244c",
         "list_attr_celeba.txt"),
        ("1_ee_0u7vcNLOfNLegJRHmolfH5ICW-XS", "32bd1bd63d3c78cd57e08160ec5ed1e2",
         "identity_CelebA.txt"),
        ("0B7EVK8r0v71pbThiMVRxWXZ4dU0", "00566efa6fedff7a56946cd1c10f1c16",
         "list_bbox_celeba.txt"),
        ("0B7EVK8r0v71pd0FJY3Blby1HUTQ", "cc24ecafdb5b50baae59b03474781f8c",
         "list_landmarks_align_celeba.txt"),
        ("0B7EVK8r0v71pY0NSMzRuSXJEVkk", "d32c9cbf5e040fd4025c592c306e6668",
         "list_eval_partition.txt"),
    ]
    drive_url = "https://drive.usercontent.google.com/download?id={id}&export=download&confirm=t"

    def __init__(
        self,
        root,
        split: str = "train",
        target_type: list[str] | str = "attr",
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
    ) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.split = split
        self.target_type = target_type if isinstance(target_type, list) else [target_type]
        if not self.target_type and self.target_transform is not None:
            raise RuntimeError("target_transform is specified but target_type is empty")
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError(
                "Dataset not found or corrupted. You can use download=True to download it"
            )

        split_map = {"train": 0, "valid": 1, "test": 2, "all": None}
        split_ = split_map[
            verify_str_arg(
                split.lower() if isinstance(split, str) else split,
                "split",
                ("train", "valid", "test", "all"),
            )
        ]
        splits = self._load_csv("list_eval_partition.txt")
        identity = self._load_csv("identity_CelebA.txt")
        bbox = self._load_csv("list_bbox_celeba.txt", header=1)
        landmarks_align = self._load_csv("list_landmarks_align_celeba.txt", header=1)
        attr = self._load_csv("list_attr_celeba.txt", header=1)

        if split_ is None:
            rows = np.arange(len(splits.index))
            self.filename = splits.index
        else:
            rows = np.flatnonzero(splits.data[:, 0] == split_)
            self.filename = [splits.index[i] for i in rows]
        self.identity = ember.from_numpy(identity.data[rows])
        self.bbox = ember.from_numpy(bbox.data[rows])
        self.landmarks_align = ember.from_numpy(landmarks_align.data[rows])
        self.attr = ember.from_numpy((attr.data[rows] + 1) // 2)  # -1/1 -> 0/1
        self.attr_names = attr.header

    def _load_csv(self, filename: str, header: int | None = None) -> CSV:
        with open(os.path.join(self.root, self.base_folder, filename)) as csv_file:
            data = list(csv.reader(csv_file, delimiter=" ", skipinitialspace=True))
        headers: list[str] = []
        if header is not None:
            headers = data[header]
            data = data[header + 1 :]
        indices = [row[0] for row in data]
        values = np.array([list(map(int, row[1:])) for row in data], dtype=np.int64)
        return CSV(headers, indices, values.reshape(len(data), -1))

    def _check_integrity(self) -> bool:
        for _, md5, filename in self.file_list:
            _, ext = os.path.splitext(filename)
            path = os.path.join(self.root, self.base_folder, filename)
            if ext not in [".zip", ".7z"] and not check_integrity(path, md5):
                return False
        return os.path.isdir(os.path.join(self.root, self.base_folder, "img_align_celeba"))

    def download(self) -> None:
        """Download the six files (checked by MD5) and extract the images archive."""
        if self._check_integrity():
            return
        folder = os.path.join(self.root, self.base_folder)
        for file_id, md5, filename in self.file_list:
            download_url(self.drive_url.format(id=file_id), folder, filename, md5)
        extract_archive(os.path.join(folder, "img_align_celeba.zip"))

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        from PIL import Image

        X = Image.open(
            os.path.join(self.root, self.base_folder, "img_align_celeba", self.filename[index])
        )
        target: Any = []
        for t in self.target_type:
            if t == "attr":
                target.append(self.attr[index, :])
            elif t == "identity":
                target.append(self.identity[index, 0])
            elif t == "bbox":
                target.append(self.bbox[index, :])
            elif t == "landmarks":
                target.append(self.landmarks_align[index, :])
            else:
                raise ValueError(f'Target type "{t}" is not recognized.')
        if self.transform is not None:
            X = self.transform(X)
        if target:
            target = tuple(target) if len(target) > 1 else target[0]
            if self.target_transform is not None:
                target = self.target_transform(target)
        else:
            target = None
        return X, target

    def __len__(self) -> int:
        return len(self.attr)

    def extra_repr(self) -> str:
        return f"Target type: {self.target_type}\nSplit: {self.split}"
