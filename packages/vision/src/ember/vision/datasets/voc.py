"""Pascal VOC segmentation and detection, as ``torchvision.datasets.VOCSegmentation`` /
``VOCDetection``."""

from __future__ import annotations

import collections
import os
from collections.abc import Callable
from typing import Any
from xml.etree.ElementTree import Element
from xml.etree.ElementTree import parse as parse_xml

from .utils import download_and_extract_archive, verify_str_arg
from .vision import VisionDataset

__all__ = ["VOCSegmentation", "VOCDetection"]

_MIRROR = "https://thor.robots.ox.ac.uk/pascal/VOC/"

DATASET_YEAR_DICT = {
    "2012": {
        "url": _MIRROR + "voc2012/VOCtrainval_11-May-2012.tar",
        "filename": "VOCtrainval_11-May-2012.tar",
        "md5": "6cd6e144f989b92b3379bac3b3de84fd",
        "base_dir": os.path.join("VOCdevkit", "VOC2012"),
    },
    "2011": {
        "url": _MIRROR + "voc2011/VOCtrainval_25-May-2011.tar",
        "filename": "VOCtrainval_25-May-2011.tar",
        "md5": "6c3384ef61512963050cb5d687e5bf1e",
        "base_dir": os.path.join("TrainVal", "VOCdevkit", "VOC2011"),
    },
    "2010": {
        "url": _MIRROR + "voc2010/VOCtrainval_03-May-2010.tar",
        "filename": "VOCtrainval_03-May-2010.tar",
        "md5": "da459979d0c395079b5c75ee67908abb",
        "base_dir": os.path.join("VOCdevkit", "VOC2010"),
    },
    "2009": {
        "url": _MIRROR + "voc2009/VOCtrainval_11-May-2009.tar",
        "filename": "VOCtrainval_11-May-2009.tar",
        "md5": "a3e00b113cfcfebf17e343f59da3caa1",
        "base_dir": os.path.join("VOCdevkit", "VOC2009"),
    },
    "2008": {
        "url": _MIRROR + "voc2008/VOCtrainval_14-Jul-2008.tar",
        # torchvision names the 2008 archive like 2012's; kept so an existing download is found
        "filename": "VOCtrainval_11-May-2012.tar",
        "md5": "2629fa636546599198acfcfbfcf1904a",
        "base_dir": os.path.join("VOCdevkit", "VOC2008"),
    },
    "2007": {
        "url": _MIRROR + "voc2007/VOCtrainval_06-Nov-2007.tar",
        "filename": "VOCtrainval_06-Nov-2007.tar",
        "md5": "c52e279531787c972589f7e41ab4ae64",
        "base_dir": os.path.join("VOCdevkit", "VOC2007"),
    },
    "2007-test": {
        "url": _MIRROR + "voc2007/VOCtest_06-Nov-2007.tar",
        "filename": "VOCtest_06-Nov-2007.tar",
        "md5": "b6e924de25625d8de591ea690078ad9f",
        "base_dir": os.path.join("VOCdevkit", "VOC2007"),
    },
}


class _VOCBase(VisionDataset):
    """``root/<base_dir>/JPEGImages/<id>.jpg`` with targets ``<_TARGET_DIR>/<id><ext>`` for
    the ids listed in ``ImageSets/<_SPLITS_DIR>/<image_set>.txt``."""

    _SPLITS_DIR: str
    _TARGET_DIR: str
    _TARGET_FILE_EXT: str

    def __init__(
        self,
        root,
        year: str = "2012",
        image_set: str = "train",
        download: bool = False,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        transforms: Callable | None = None,
    ) -> None:
        super().__init__(root, transforms, transform, target_transform)
        self.year = verify_str_arg(year, "year", valid_values=[str(yr) for yr in range(2007, 2013)])
        valid_image_sets = ["train", "trainval", "val"]
        if year == "2007":
            valid_image_sets.append("test")
        self.image_set = verify_str_arg(image_set, "image_set", valid_image_sets)

        key = "2007-test" if year == "2007" and image_set == "test" else year
        entry = DATASET_YEAR_DICT[key]
        self.url, self.filename, self.md5 = entry["url"], entry["filename"], entry["md5"]
        voc_root = os.path.join(self.root, entry["base_dir"])

        if download:
            download_and_extract_archive(self.url, self.root, filename=self.filename, md5=self.md5)
        if not os.path.isdir(voc_root):
            raise RuntimeError(
                "Dataset not found or corrupted. You can use download=True to download it"
            )

        split_file = os.path.join(voc_root, "ImageSets", self._SPLITS_DIR, image_set + ".txt")
        with open(split_file) as f:
            file_names = [x.strip() for x in f.readlines()]
        image_dir = os.path.join(voc_root, "JPEGImages")
        target_dir = os.path.join(voc_root, self._TARGET_DIR)
        self.images = [os.path.join(image_dir, x + ".jpg") for x in file_names]
        self.targets = [os.path.join(target_dir, x + self._TARGET_FILE_EXT) for x in file_names]

    def __len__(self) -> int:
        return len(self.images)

    def _item(self, index: int, target: Any) -> tuple[Any, Any]:
        from PIL import Image

        img = Image.open(self.images[index]).convert("RGB")
        if self.transforms is not None:
            img, target = self.transforms(img, target)
        return img, target


class VOCSegmentation(_VOCBase):
    """`Pascal VOC <https://www.robots.ox.ac.uk/~vgg/projects/pascal/VOC/>`_ segmentation:
    items are ``(RGB PIL image, PIL mask)`` (the mask in its stored mode, 'P' for VOC)."""

    _SPLITS_DIR = "Segmentation"
    _TARGET_DIR = "SegmentationClass"
    _TARGET_FILE_EXT = ".png"

    @property
    def masks(self) -> list[str]:
        return self.targets

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        from PIL import Image

        return self._item(index, Image.open(self.masks[index]))


class VOCDetection(_VOCBase):
    """`Pascal VOC <https://www.robots.ox.ac.uk/~vgg/projects/pascal/VOC/>`_ detection: items
    are ``(RGB PIL image, dict of the annotation XML)`` (see :meth:`parse_voc_xml`)."""

    _SPLITS_DIR = "Main"
    _TARGET_DIR = "Annotations"
    _TARGET_FILE_EXT = ".xml"

    @property
    def annotations(self) -> list[str]:
        return self.targets

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        target = self.parse_voc_xml(parse_xml(self.annotations[index]).getroot())
        return self._item(index, target)

    @staticmethod
    def parse_voc_xml(node: Element) -> dict[str, Any]:
        """The XML tree as nested dicts: ``{tag: text}`` for a leaf, ``{tag: {child tag:
        value}}`` otherwise, a repeated child tag giving a list; ``annotation['object']`` is
        always a list."""
        voc_dict: dict[str, Any] = {}
        children = list(node)
        if children:
            by_tag: dict[str, list] = collections.defaultdict(list)
            for child in map(VOCDetection.parse_voc_xml, children):
                for tag, value in child.items():
                    by_tag[tag].append(value)
            if node.tag == "annotation":
                by_tag["object"] = [by_tag["object"]]
            voc_dict = {node.tag: {t: v[0] if len(v) == 1 else v for t, v in by_tag.items()}}
        if node.text:
            text = node.text.strip()
            if not children:
                voc_dict[node.tag] = text
        return voc_dict
