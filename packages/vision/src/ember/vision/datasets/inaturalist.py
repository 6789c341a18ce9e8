"""iNaturalist, as ``torchvision.datasets.INaturalist``."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from .utils import download_and_extract_archive, verify_str_arg
from .vision import VisionDataset

__all__ = ["INaturalist"]

CATEGORIES_2021 = ["kingdom", "phylum", "class", "order", "family", "genus"]

_S3 = "https://ml-inat-competition-datasets.s3.amazonaws.com/"
DATASET_URLS = {
    "2017": _S3 + "2017/train_val_images.tar.gz",
    "2018": _S3 + "2018/train_val2018.tar.gz",
    "2019": _S3 + "2019/train_val2019.tar.gz",
    "2021_train": _S3 + "2021/train.tar.gz",
    "2021_train_mini": _S3 + "2021/train_mini.tar.gz",
    "2021_valid": _S3 + "2021/val.tar.gz",
}

DATASET_MD5 = {
    "2017": "7c784ea5e424efaec655bd392f87301f",
    "2018": "b1c6952ce38f31868cc50ea72d066cc3",
    "2019": "c60a6e2962c9b8ccbd458d12c8582644",
    "2021_train": "e0526d53c7f7b2e3167b2b43bb2690ed",
    "2021_train_mini": "db6ed8330e634445efc8fec83ae81442",
    "2021_valid": "f6f6e0e242e3d4c9569ba56400938afc",
}


class INaturalist(VisionDataset):
    """`iNaturalist <https://github.com/visipedia/inat_comp>`_ species classification, read
    from ``root/<version>/<category folder>/<image>``. ``target_type`` is ``full`` (the species
    index) or, for 2021, one of ``kingdom`` ... ``genus`` (for 2017-2019, ``super``), or a list
    of them (a tuple target). Like torchvision, the images of a category are taken in the file
    system's listing order."""

    def __init__(
        self,
        root,
        version: str = "2021_train",
        target_type: list[str] | str = "full",
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
        loader: Callable[[Any], Any] | None = None,
    ) -> None:
        self.version = verify_str_arg(version, "version", DATASET_URLS.keys())
        super().__init__(
            os.path.join(root, version), transform=transform, target_transform=target_transform
        )
        os.makedirs(root, exist_ok=True)
        if download:
            self.download()
        if not self._check_exists():
            raise RuntimeError(
                "Dataset not found or corrupted. You can use download=True to download it"
            )
        self.all_categories: list[str] = []
        self.categories_index: dict[str, dict[str, int]] = {}
        self.categories_map: list[dict[str, int]] = []
        if not isinstance(target_type, list):
            target_type = [target_type]
        if self.version[:4] == "2021":
            self.target_type = [
                verify_str_arg(t, "target_type", ("full", *CATEGORIES_2021)) for t in target_type
            ]
            self._init_2021()
        else:
            self.target_type = [
                verify_str_arg(t, "target_type", ("full", "super")) for t in target_type
            ]
            self._init_pre2021()
        self.index: list[tuple[int, str]] = []
        for dir_index, dir_name in enumerate(self.all_categories):
            for fname in os.listdir(os.path.join(self.root, dir_name)):
                self.index.append((dir_index, fname))
        self.loader = loader

    def _init_2021(self) -> None:
        """Categories of the 2021 layout: ``NNNNN_kingdom_phylum_..._genus_species`` folders."""
        self.all_categories = sorted(os.listdir(self.root))
        self.categories_index = {k: {} for k in CATEGORIES_2021}
        for dir_index, dir_name in enumerate(self.all_categories):
            pieces = dir_name.split("_")
            if len(pieces) != 8:
                raise RuntimeError(
                    f"Unexpected category name {dir_name}, wrong number of pieces"
                )
            if pieces[0] != f"{dir_index:05d}":
                raise RuntimeError(
                    f"Unexpected category id {pieces[0]}, expecting {dir_index:05d}"
                )
            cat_map = {}
            for cat, name in zip(CATEGORIES_2021, pieces[1:7]):
                index = self.categories_index[cat]
                cat_map[cat] = index.setdefault(name, len(index))
            self.categories_map.append(cat_map)

    def _init_pre2021(self) -> None:
        """Categories of the 2017-2019 layout: ``<super category>/<id or name>`` folders."""
        self.categories_index = {"super": {}}
        cat_index = 0
        for sindex, scat in enumerate(sorted(os.listdir(self.root))):
            self.categories_index["super"][scat] = sindex
            for subcat in sorted(os.listdir(os.path.join(self.root, scat))):
                if self.version == "2017":  # this version does not use ids as folder names
                    subcat_i = cat_index
                    cat_index += 1
                else:
                    try:
                        subcat_i = int(subcat)
                    except ValueError:
                        raise RuntimeError(f"Unexpected non-numeric dir name: {subcat}") from None
                if subcat_i >= len(self.categories_map):
                    grow = subcat_i - len(self.categories_map) + 1
                    self.categories_map.extend([{}] * grow)
                    self.all_categories.extend([""] * grow)
                if self.categories_map[subcat_i]:
                    raise RuntimeError(f"Duplicate category {subcat}")
                self.categories_map[subcat_i] = {"super": sindex}
                self.all_categories[subcat_i] = os.path.join(scat, subcat)
        for cindex, c in enumerate(self.categories_map):
            if not c:
                raise RuntimeError(f"Missing category {cindex}")

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        from PIL import Image

        cat_id, fname = self.index[index]
        image_path = os.path.join(self.root, self.all_categories[cat_id], fname)
        img = self.loader(image_path) if self.loader is not None else Image.open(image_path)
        target: Any = [
            cat_id if t == "full" else self.categories_map[cat_id][t] for t in self.target_type
        ]
        target = tuple(target) if len(target) > 1 else target[0]
        return self._transform_pair(img, target)

    def __len__(self) -> int:
        return len(self.index)

    def category_name(self, category_type: str, category_id: int) -> str:
        """The name of category ``category_id`` of ``category_type`` (``full`` or a level)."""
        if category_type == "full":
            return self.all_categories[category_id]
        if category_type not in self.categories_index:
            raise ValueError(f"Invalid category type '{category_type}'")
        for name, id in self.categories_index[category_type].items():
            if id == category_id:
                return name
        raise ValueError(f"Invalid category id {category_id} for {category_type}")

    def _check_exists(self) -> bool:
        return os.path.exists(self.root) and len(os.listdir(self.root)) > 0

    def download(self) -> None:
        """Download and extract the version's archive, then rename its folder to ``version``."""
        if self._check_exists():
            return
        base_root = os.path.dirname(self.root)
        download_and_extract_archive(
            DATASET_URLS[self.version], base_root, filename=f"{self.version}.tgz",
            md5=DATASET_MD5[self.version],
        )
        # torchvision strips the characters of ".tar.gz"; for these URLs that is the suffix
        orig_dir_name = os.path.join(
            base_root, os.path.basename(DATASET_URLS[self.version]).removesuffix(".tar.gz")
        )
        if not os.path.exists(orig_dir_name):
            raise RuntimeError(f"Unable to find downloaded files at {orig_dir_name}")
        os.rename(orig_dir_name, self.root)
