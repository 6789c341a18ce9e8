"""MS COCO detection and captions, as ``torchvision.datasets.CocoDetection`` / ``CocoCaptions``.

torchvision indexes the annotation file with ``pycocotools``; Ember reads the JSON itself and
gives the same targets: the annotations of an image in file order (``getAnnIds``), each looked
up by its id (``loadAnns``, so of two annotations sharing an id the later one is returned
twice), over the image ids sorted, the later entry winning where an image id repeats.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from .vision import VisionDataset

__all__ = ["CocoDetection", "CocoCaptions"]


class _CocoIndex:
    """The part of ``pycocotools.coco.COCO`` the datasets use: ``imgs``, ``anns``,
    ``imgToAnns`` and ``loadImgs`` / ``getAnnIds`` / ``loadAnns`` for one image id."""

    def __init__(self, annotation_file) -> None:
        with open(annotation_file) as f:
            dataset = json.load(f)
        if not isinstance(dataset, dict):
            raise TypeError(f"annotation file format {type(dataset)} not supported")
        self.dataset = dataset
        self.anns: dict[Any, dict] = {}
        self.imgs: dict[Any, dict] = {}
        self.imgToAnns: dict[Any, list[dict]] = {}
        for ann in dataset.get("annotations", ()):
            self.imgToAnns.setdefault(ann["image_id"], []).append(ann)
            self.anns[ann["id"]] = ann
        for img in dataset.get("images", ()):
            self.imgs[img["id"]] = img

    def loadImgs(self, id) -> list[dict]:
        return [self.imgs[id]]

    def getAnnIds(self, id) -> list:
        return [ann["id"] for ann in self.imgToAnns.get(id, ())]

    def loadAnns(self, ids) -> list[dict]:
        return [self.anns[i] for i in ids]


class CocoDetection(VisionDataset):
    """`MS Coco Detection <https://cocodataset.org/#detection-2016>`_: images under ``root``
    named by the ``file_name`` of ``annFile``'s images; targets are the image's annotation
    dicts as stored in the JSON file."""

    def __init__(
        self,
        root,
        annFile: str,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        transforms: Callable | None = None,
    ) -> None:
        super().__init__(root, transforms, transform, target_transform)
        self.coco = _CocoIndex(annFile)
        self.ids = list(sorted(self.coco.imgs.keys()))

    def _load_image(self, id: int) -> Any:
        from PIL import Image

        path = self.coco.loadImgs(id)[0]["file_name"]
        return Image.open(os.path.join(self.root, path)).convert("RGB")

    def _load_target(self, id: int) -> list[Any]:
        return self.coco.loadAnns(self.coco.getAnnIds(id))

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        if not isinstance(index, int):
            raise ValueError(f"Index must be of type integer, got {type(index)} instead.")
        id = self.ids[index]
        image = self._load_image(id)
        target = self._load_target(id)
        if self.transforms is not None:
            image, target = self.transforms(image, target)
        return image, target

    def __len__(self) -> int:
        return len(self.ids)


class CocoCaptions(CocoDetection):
    """`MS Coco Captions <https://cocodataset.org/#captions-2015>`_: targets are the image's
    caption strings."""

    def _load_target(self, id: int) -> list[str]:
        return [ann["caption"] for ann in super()._load_target(id)]
