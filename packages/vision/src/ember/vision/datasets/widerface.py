"""WIDER FACE, as ``torchvision.datasets.WIDERFace``."""

from __future__ import annotations

import os
from collections.abc import Callable
from os.path import abspath, expanduser
from typing import Any

import numpy as np

import ember

from .utils import download_and_extract_archive, download_url, extract_archive, verify_str_arg
from .vision import VisionDataset

__all__ = ["WIDERFace"]


class WIDERFace(VisionDataset):
    """`WIDER FACE <http://shuoyang1213.me/WIDERFACE/>`_ face detection, read from
    ``root/widerface/{WIDER_<split>/images,wider_face_split}``. A target is a dict of int64
    tensors: ``bbox`` ``(N, 4)`` (x, y, width, height), ``blur``, ``expression``,
    ``illumination``, ``occlusion``, ``pose``, ``invalid`` (``None`` for the test split).
    ``download=True`` fetches the images from Google Drive by id (``drive_url``, no ``gdown``)."""

    BASE_FOLDER = "widerface"
    FILE_LIST = [
        ("15hGDLhsx8bLgLcIRD5DhYt5iBxnjNF1M", "3fedf70df600953d25982bcd13d91ba2",
         "WIDER_train.zip"),
        ("1GUCogbp16PMGa39thoMMeWxp7Rp5oM8Q", "dfa7d7e790efa35df3788964cf0bbaea",
         "WIDER_val.zip"),
        ("1HIfDbVEWKmsYKJZm4lchTBDLW5N7dY5T", "e5d8f4248ed24c334bbd12f49c29dd40",
         "WIDER_test.zip"),
    ]
    ANNOTATIONS_FILE = (
        "http://shuoyang1213.me/WIDERFACE/support/bbx_annotation/wider_face_split.zip",
        "0e3767bcf0e326556d407bf5bff5d27c",
        "wider_face_split.zip",
    )
    drive_url = "https://drive.usercontent.google.com/download?id={id}&export=download&confirm=t"

    def __init__(
        self,
        root,
        split: str = "train",
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
    ) -> None:
        super().__init__(
            root=os.path.join(root, self.BASE_FOLDER), transform=transform,
            target_transform=target_transform,
        )
        self.split = verify_str_arg(split, "split", ("train", "val", "test"))
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError(
                "Dataset not found or corrupted. You can use download=True to download and "
                "prepare it"
            )
        self.img_info: list[dict[str, Any]] = []
        if self.split in ("train", "val"):
            self.parse_train_val_annotations_file()
        else:
            self.parse_test_annotations_file()

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        from PIL import Image

        img = Image.open(self.img_info[index]["img_path"])
        if self.transform is not None:
            img = self.transform(img)
        target = None if self.split == "test" else self.img_info[index]["annotations"]
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self) -> int:
        return len(self.img_info)

    def extra_repr(self) -> str:
        return f"Split: {self.split}"

    def _image_path(self, folder: str, line: str) -> str:
        return abspath(expanduser(os.path.join(self.root, folder, "images", line)))

    def parse_train_val_annotations_file(self) -> None:
        """Read ``<image path>``, ``<number of boxes>``, then one line of 10 ints per box (one
        all-zero line when there is none), image after image."""
        filename = f"wider_face_{self.split}_bbx_gt.txt"
        filepath = os.path.join(self.root, "wider_face_split", filename)
        with open(filepath) as f:
            lines = f.readlines()
        file_name_line, num_boxes_line, box_annotation_line = True, False, False
        num_boxes, box_counter = 0, 0
        labels: list[list[int]] = []
        img_path = ""
        for line in lines:
            line = line.rstrip()
            if file_name_line:
                img_path = self._image_path("WIDER_" + self.split, line)
                file_name_line, num_boxes_line = False, True
            elif num_boxes_line:
                num_boxes = int(line)
                num_boxes_line, box_annotation_line = False, True
            elif box_annotation_line:
                box_counter += 1
                labels.append([int(x) for x in line.split(" ")])
                if box_counter >= num_boxes:
                    box_annotation_line, file_name_line = False, True
                    values = np.array(labels, dtype=np.int64)
                    columns = ("blur", "expression", "illumination", "occlusion", "pose",
                               "invalid")
                    annotations = {"bbox": ember.from_numpy(values[:, 0:4].copy())}
                    for k, name in enumerate(columns):
                        annotations[name] = ember.from_numpy(values[:, 4 + k].copy())
                    self.img_info.append({"img_path": img_path, "annotations": annotations})
                    box_counter = 0
                    labels.clear()
            else:
                raise RuntimeError(f"Error parsing annotation file {filepath}")

    def parse_test_annotations_file(self) -> None:
        filepath = os.path.join(self.root, "wider_face_split", "wider_face_test_filelist.txt")
        with open(abspath(expanduser(filepath))) as f:
            for line in f.readlines():
                self.img_info.append({"img_path": self._image_path("WIDER_test", line.rstrip())})

    def _check_integrity(self) -> bool:
        for _, _, filename in [*self.FILE_LIST, self.ANNOTATIONS_FILE]:
            if not os.path.exists(os.path.join(self.root, os.path.splitext(filename)[0])):
                return False
        return True

    def download(self) -> None:
        """Download and extract the three image archives and the annotations."""
        if self._check_integrity():
            return
        for file_id, md5, filename in self.FILE_LIST:
            download_url(self.drive_url.format(id=file_id), self.root, filename, md5)
            extract_archive(os.path.join(self.root, filename))
        download_and_extract_archive(
            url=self.ANNOTATIONS_FILE[0], download_root=self.root, md5=self.ANNOTATIONS_FILE[1]
        )
