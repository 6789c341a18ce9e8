"""Flickr8k and Flickr30k captions, as ``torchvision.datasets.Flickr8k`` / ``Flickr30k``."""

from __future__ import annotations

import glob
import os
from collections import defaultdict
from collections.abc import Callable
from html.parser import HTMLParser
from typing import Any

from .folder import default_loader
from .vision import VisionDataset

__all__ = ["Flickr8kParser", "Flickr8k", "Flickr30k"]


class Flickr8kParser(HTMLParser):
    """Reads the captions of the Flickr8k web page: inside the table, a link names an image
    (found as ``root/<id>_*.jpg``) and the list items after it are its captions."""

    def __init__(self, root) -> None:
        super().__init__()
        self.root = root
        self.annotations: dict[str, list[str]] = {}
        self.in_table = False
        self.current_tag: str | None = None
        self.current_img: str | None = None

    def handle_starttag(self, tag: str, attrs) -> None:
        self.current_tag = tag
        if tag == "table":
            self.in_table = True

    def handle_endtag(self, tag: str) -> None:
        self.current_tag = None
        if tag == "table":
            self.in_table = False

    def handle_data(self, data: str) -> None:
        if not self.in_table:
            return
        if data == "Image Not Found":
            self.current_img = None
        elif self.current_tag == "a":
            img_id = data.split("/")[-2]
            img_id = glob.glob(os.path.join(self.root, img_id + "_*.jpg"))[0]
            self.current_img = img_id
            self.annotations[img_id] = []
        elif self.current_tag == "li" and self.current_img:
            self.annotations[self.current_img].append(data.strip())


class Flickr8k(VisionDataset):
    """`Flickr8k Entities <http://hockenmaier.cs.illinois.edu/8k-pictures.html>`_: images of
    ``root`` with their captions from the HTML page ``ann_file``; targets are caption lists."""

    def __init__(
        self,
        root,
        ann_file: str,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        loader: Callable[[str], Any] = default_loader,
    ) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.ann_file = os.path.expanduser(ann_file)
        parser = Flickr8kParser(self.root)
        with open(self.ann_file) as fh:
            parser.feed(fh.read())
        self.annotations = parser.annotations
        self.ids = list(sorted(self.annotations.keys()))
        self.loader = loader

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        img_id = self.ids[index]
        return self._transform_pair(self.loader(img_id), self.annotations[img_id])

    def __len__(self) -> int:
        return len(self.ids)


class Flickr30k(VisionDataset):
    """`Flickr30k Entities <https://bryanplummer.com/Flickr30kEntities/>`_: images of ``root``
    with their captions from ``ann_file`` (lines ``<image>#<n>\\t<caption>``)."""

    def __init__(
        self,
        root,
        ann_file: str,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        loader: Callable[[str], Any] = default_loader,
    ) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.ann_file = os.path.expanduser(ann_file)
        self.annotations: dict[str, list[str]] = defaultdict(list)
        with open(self.ann_file) as fh:
            for line in fh:
                img_id, caption = line.strip().split("\t")
                self.annotations[img_id[:-2]].append(caption)
        self.ids = list(sorted(self.annotations.keys()))
        self.loader = loader

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        img_id = self.ids[index]
        img = self.loader(os.path.join(self.root, img_id))
        return self._transform_pair(img, self.annotations[img_id])

    def __len__(self) -> int:
        return len(self.ids)
