"""Cityscapes, as ``torchvision.datasets.Cityscapes``."""

from __future__ import annotations

import json
import os
from collections import namedtuple
from collections.abc import Callable
from typing import Any

from .utils import extract_archive, iterable_to_str, verify_str_arg
from .vision import VisionDataset

__all__ = ["Cityscapes"]


class Cityscapes(VisionDataset):
    """`Cityscapes <https://www.cityscapes-dataset.com/>`_ urban scenes, read from
    ``root/leftImg8bit/<split>/<city>/`` with targets in ``root/gtFine`` (``mode="fine"``) or
    ``root/gtCoarse``; the dataset's zip files in ``root`` are extracted on first use.
    ``target_type`` is ``instance``, ``semantic``, ``color`` (PIL images), ``polygon`` (the
    JSON dict) or a list of them (a tuple target). Like torchvision, cities and files are
    taken in the file system's listing order."""

    # Based on https://github.com/mcordts/cityscapesScripts
    CityscapesClass = namedtuple(
        "CityscapesClass",
        ["name", "id", "train_id", "category", "category_id", "has_instances", "ignore_in_eval",
         "color"],
    )

    classes = [
        CityscapesClass("unlabeled", 0, 255, "void", 0, False, True, (0, 0, 0)),
        CityscapesClass("ego vehicle", 1, 255, "void", 0, False, True, (0, 0, 0)),
        CityscapesClass("rectification border", 2, 255, "void", 0, False, True, (0, 0, 0)),
        CityscapesClass("out of roi", 3, 255, "void", 0, False, True, (0, 0, 0)),
        CityscapesClass("static", 4, 255, "void", 0, False, True, (0, 0, 0)),
        CityscapesClass("dynamic", 5, 255, "void", 0, False, True, (111, 74, 0)),
        CityscapesClass("ground", 6, 255, "void", 0, False, True, (81, 0, 81)),
        CityscapesClass("road", 7, 0, "flat", 1, False, False, (128, 64, 128)),
        CityscapesClass("sidewalk", 8, 1, "flat", 1, False, False, (244, 35, 232)),
        CityscapesClass("parking", 9, 255, "flat", 1, False, True, (250, 170, 160)),
        CityscapesClass("rail track", 10, 255, "flat", 1, False, True, (230, 150, 140)),
        CityscapesClass("building", 11, 2, "construction", 2, False, False, (70, 70, 70)),
        CityscapesClass("wall", 12, 3, "construction", 2, False, False, (102, 102, 156)),
        CityscapesClass("fence", 13, 4, "construction", 2, False, False, (190, 153, 153)),
        CityscapesClass("guard rail", 14, 255, "construction", 2, False, True, (180, 165, 180)),
        CityscapesClass("bridge", 15, 255, "construction", 2, False, True, (150, 100, 100)),
        CityscapesClass("tunnel", 16, 255, "construction", 2, False, True, (150, 120, 90)),
        CityscapesClass("pole", 17, 5, "object", 3, False, False, (153, 153, 153)),
        CityscapesClass("polegroup", 18, 255, "object", 3, False, True, (153, 153, 153)),
        CityscapesClass("traffic light", 19, 6, "object", 3, False, False, (250, 170, 30)),
        CityscapesClass("traffic sign", 20, 7, "object", 3, False, False, (220, 220, 0)),
        CityscapesClass("vegetation", 21, 8, "nature", 4, False, False, (107, 142, 35)),
        CityscapesClass("terrain", 22, 9, "nature", 4, False, False, (152, 251, 152)),
        CityscapesClass("sky", 23, 10, "sky", 5, False, False, (70, 130, 180)),
        CityscapesClass("person", 24, 11, "human", 6, True, False, (220, 20, 60)),
        CityscapesClass("rider", 25, 12, "human", 6, True, False, (255, 0, 0)),
        CityscapesClass("car", 26, 13, "vehicle", 7, True, False, (0, 0, 142)),
        CityscapesClass("truck", 27, 14, "vehicle", 7, True, False, (0, 0, 70)),
        CityscapesClass("bus", 28, 15, "vehicle", 7, True, False, (0, 60, 100)),
        CityscapesClass("caravan", 29, 255, "vehicle", 7, True, True, (0, 0, 90)),
        CityscapesClass("trailer", 30, 255, "vehicle", 7, True, True, (0, 0, 110)),
        CityscapesClass("train", 31, 16, "vehicle", 7, True, False, (0, 80, 100)),
        CityscapesClass("motorcycle", 32, 17, "vehicle", 7, True, False, (0, 0, 230)),
        CityscapesClass("bicycle", 33, 18, "vehicle", 7, True, False, (119, 11, 32)),
        CityscapesClass("license plate", -1, -1, "vehicle", 7, False, True, (0, 0, 142)),
    ]

    def __init__(
        self,
        root,
        split: str = "train",
        mode: str = "fine",
        target_type: list[str] | str = "instance",
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        transforms: Callable | None = None,
    ) -> None:
        super().__init__(root, transforms, transform, target_transform)
        self.mode = "gtFine" if mode == "fine" else "gtCoarse"
        self.images_dir = os.path.join(self.root, "leftImg8bit", split)
        self.targets_dir = os.path.join(self.root, self.mode, split)
        self.target_type = target_type
        self.split = split
        self.images: list[str] = []
        self.targets: list[list[str]] = []

        verify_str_arg(mode, "mode", ("fine", "coarse"))
        valid_modes = ("train", "test", "val") if mode == "fine" else ("train", "train_extra",
                                                                        "val")
        msg = (
            f"Unknown value '{split}' for argument split if mode is '{mode}'. "
            f"Valid values are {{{iterable_to_str(valid_modes)}}}."
        )
        verify_str_arg(split, "split", valid_modes, msg)
        if not isinstance(target_type, list):
            self.target_type = [target_type]
        for value in self.target_type:
            verify_str_arg(value, "target_type", ("instance", "semantic", "polygon", "color"))

        if not os.path.isdir(self.images_dir) or not os.path.isdir(self.targets_dir):
            self._extract_zips(split)

        for city in os.listdir(self.images_dir):
            img_dir = os.path.join(self.images_dir, city)
            target_dir = os.path.join(self.targets_dir, city)
            for file_name in os.listdir(img_dir):
                stem = file_name.split("_leftImg8bit")[0]
                self.images.append(os.path.join(img_dir, file_name))
                self.targets.append([
                    os.path.join(target_dir, f"{stem}_{self._get_target_suffix(self.mode, t)}")
                    for t in self.target_type
                ])

    def _extract_zips(self, split: str) -> None:
        name = "leftImg8bit_trainextra.zip" if split == "train_extra" else (
            "leftImg8bit_trainvaltest.zip")
        image_dir_zip = os.path.join(self.root, name)
        target_dir_zip = os.path.join(
            self.root, f"{self.mode}_trainvaltest.zip" if self.mode == "gtFine" else
            f"{self.mode}.zip"
        )
        if not (os.path.isfile(image_dir_zip) and os.path.isfile(target_dir_zip)):
            raise RuntimeError(
                "Dataset not found or incomplete. Please make sure all required folders for the"
                ' specified "split" and "mode" are inside the "root" directory'
            )
        extract_archive(from_path=image_dir_zip, to_path=self.root)
        extract_archive(from_path=target_dir_zip, to_path=self.root)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        from PIL import Image

        image = Image.open(self.images[index]).convert("RGB")
        targets: list[Any] = []
        for i, t in enumerate(self.target_type):
            if t == "polygon":
                targets.append(self._load_json(self.targets[index][i]))
            else:
                targets.append(Image.open(self.targets[index][i]))
        target = tuple(targets) if len(targets) > 1 else targets[0]
        if self.transforms is not None:
            image, target = self.transforms(image, target)
        return image, target

    def __len__(self) -> int:
        return len(self.images)

    def extra_repr(self) -> str:
        return f"Split: {self.split}\nMode: {self.mode}\nType: {self.target_type}"

    def _load_json(self, path: str) -> dict[str, Any]:
        with open(path) as file:
            return json.load(file)

    def _get_target_suffix(self, mode: str, target_type: str) -> str:
        if target_type == "instance":
            return f"{mode}_instanceIds.png"
        if target_type == "semantic":
            return f"{mode}_labelIds.png"
        if target_type == "color":
            return f"{mode}_color.png"
        return f"{mode}_polygons.json"
