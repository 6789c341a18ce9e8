"""The Semantic Boundaries Dataset, as ``torchvision.datasets.SBDataset`` (its ``.mat`` targets
read by Ember's own MATLAB reader, not SciPy)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from typing import Any

import numpy as np

from ._matlab import loadmat
from .utils import download_and_extract_archive, download_url, verify_str_arg
from .vision import VisionDataset

__all__ = ["SBDataset"]


class SBDataset(VisionDataset):
    """`Semantic Boundaries Dataset <http://home.bharathh.info/pubs/codes/SBD/download.html>`_:
    11,355 PASCAL VOC 2011 images. ``mode="boundaries"`` gives a uint8 NumPy array
    ``(20, H, W)`` per image, ``mode="segmentation"`` a PIL mask; ``image_set`` is ``train``,
    ``val`` or ``train_noval`` (no VOC 2012 val images)."""

    url = (
        "https://www2.eecs.berkeley.edu/Research/Projects/CS/vision/grouping/semantic_contours/"
        "benchmark.tgz"
    )
    md5 = "82b4d87ceb2ed10f6038a1cba92111cb"
    filename = "benchmark.tgz"
    voc_train_url = "https://www.cs.cornell.edu/~bharathh/train_noval.txt"
    voc_split_filename = "train_noval.txt"
    voc_split_md5 = "79bff800c5f0b1ec6b21080a3c066722"

    def __init__(
        self,
        root,
        image_set: str = "train",
        mode: str = "boundaries",
        download: bool = False,
        transforms: Callable | None = None,
    ) -> None:
        super().__init__(root, transforms)
        self.image_set = verify_str_arg(image_set, "image_set", ("train", "val", "train_noval"))
        self.mode = verify_str_arg(mode, "mode", ("segmentation", "boundaries"))
        self.num_classes = 20
        sbd_root = self.root
        image_dir = os.path.join(sbd_root, "img")
        mask_dir = os.path.join(sbd_root, "cls")
        if download:
            download_and_extract_archive(self.url, self.root, filename=self.filename, md5=self.md5)
            extracted_ds_root = os.path.join(self.root, "benchmark_RELEASE", "dataset")
            for f in ["cls", "img", "inst", "train.txt", "val.txt"]:
                shutil.move(os.path.join(extracted_ds_root, f), sbd_root)
            if self.image_set == "train_noval":
                download_url(
                    self.voc_train_url, sbd_root, self.voc_split_filename, self.voc_split_md5
                )
        if not os.path.isdir(sbd_root):
            raise RuntimeError(
                "Dataset not found or corrupted. You can use download=True to download it"
            )
        with open(os.path.join(sbd_root, image_set + ".txt")) as fh:
            file_names = [x.strip() for x in fh.readlines()]
        self.images = [os.path.join(image_dir, x + ".jpg") for x in file_names]
        self.masks = [os.path.join(mask_dir, x + ".mat") for x in file_names]
        self._get_target = (
            self._get_segmentation_target if self.mode == "segmentation"
            else self._get_boundaries_target
        )

    def _get_segmentation_target(self, filepath: str) -> Any:
        from PIL import Image

        return Image.fromarray(loadmat(filepath)["GTcls"][0]["Segmentation"][0])

    def _get_boundaries_target(self, filepath: str) -> np.ndarray:
        boundaries = loadmat(filepath)["GTcls"][0]["Boundaries"][0]
        return np.concatenate(
            [np.expand_dims(boundaries[i][0].toarray(), axis=0) for i in range(self.num_classes)],
            axis=0,
        )

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        from PIL import Image

        img = Image.open(self.images[index]).convert("RGB")
        target = self._get_target(self.masks[index])
        if self.transforms is not None:
            img, target = self.transforms(img, target)
        return img, target

    def __len__(self) -> int:
        return len(self.images)

    def extra_repr(self) -> str:
        return f"Image set: {self.image_set}\nMode: {self.mode}"
