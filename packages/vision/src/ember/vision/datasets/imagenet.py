"""ImageNet 2012 classification from its local archives, as ``torchvision.datasets.ImageNet``.

The devkit's metadata is kept in ``root/meta.bin``, written with :func:`ember.save` in
PyTorch's checkpoint format (the file torchvision writes with ``torch.save``, so either library
reads the other's) and read back with :func:`ember.load`, which runs no pickled code.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

import ember

from ._matlab import loadmat
from .folder import ImageFolder
from .utils import check_integrity, extract_archive, verify_str_arg

__all__ = [
    "ImageNet",
    "load_meta_file",
    "parse_devkit_archive",
    "parse_train_archive",
    "parse_val_archive",
]

ARCHIVE_META = {
    "train": ("ILSVRC2012_img_train.tar", "1d675b47d978889d74fa0da5fadfb00e"),
    "val": ("ILSVRC2012_img_val.tar", "29b22e2961454d5413ddabcf34fc5622"),
    "devkit": ("ILSVRC2012_devkit_t12.tar.gz", "fa75699e90414af021442c21a62c3abf"),
}

META_FILE = "meta.bin"


class ImageNet(ImageFolder):
    """`ImageNet <http://image-net.org/>`_ 2012 classification, ``split`` ``"train"`` or
    ``"val"``. Download ``ILSVRC2012_devkit_t12.tar.gz`` and the split's image archive
    yourself into ``root``: the first use extracts them into ``root/<split>/<wnid>/``.
    ``classes`` holds each class's names (a tuple), ``wnids`` the WordNet ids."""

    def __init__(self, root, split: str = "train", **kwargs: Any) -> None:
        root = self.root = os.path.expanduser(root)
        self.split = verify_str_arg(split, "split", ("train", "val"))
        self.parse_archives()
        wnid_to_classes = load_meta_file(self.root)[0]
        super().__init__(self.split_folder, **kwargs)
        self.root = root
        self.wnids = self.classes
        self.wnid_to_idx = self.class_to_idx
        self.classes = [wnid_to_classes[wnid] for wnid in self.wnids]
        self.class_to_idx = {cls: idx for idx, clss in enumerate(self.classes) for cls in clss}

    def parse_archives(self) -> None:
        if not check_integrity(os.path.join(self.root, META_FILE)):
            parse_devkit_archive(self.root)
        if not os.path.isdir(self.split_folder):
            if self.split == "train":
                parse_train_archive(self.root)
            else:
                parse_val_archive(self.root)

    @property
    def split_folder(self) -> str:
        return os.path.join(self.root, self.split)

    def extra_repr(self) -> str:
        return f"Split: {self.split}"


def load_meta_file(root, file: str | None = None) -> tuple[dict[str, tuple[str, ...]], list[str]]:
    """``(wnid_to_classes, val_wnids)`` from ``root/meta.bin``."""
    path = os.path.join(root, META_FILE if file is None else file)
    if not check_integrity(path):
        raise RuntimeError(
            f"The meta file {path} is not present in the root directory or is corrupted. "
            "This file is automatically created by the ImageNet dataset."
        )
    return ember.load(path, weights_only=True)


def _verify_archive(root, file: str, md5: str) -> None:
    if not check_integrity(os.path.join(root, file), md5):
        raise RuntimeError(
            f"The archive {file} is not present in the root directory or is corrupted. "
            f"You need to download it externally and place it in {root}."
        )


def _parse_meta_mat(devkit_root: str) -> tuple[dict[int, str], dict[str, tuple[str, ...]]]:
    """``idx_to_wnid`` and ``wnid_to_classes`` of the 1000 leaf synsets of ``meta.mat``."""
    synsets = loadmat(os.path.join(devkit_root, "data", "meta.mat"), squeeze_me=True)["synsets"]
    leaves = [s for s in synsets.reshape(-1) if s["num_children"] == 0]
    idx_to_wnid = {int(s["ILSVRC2012_ID"]): str(s["WNID"]) for s in leaves}
    wnid_to_classes = {str(s["WNID"]): tuple(str(s["words"]).split(", ")) for s in leaves}
    return idx_to_wnid, wnid_to_classes


def parse_devkit_archive(root, file: str | None = None) -> None:
    """Read the class names and the validation labels from the devkit archive and write
    them to ``root/meta.bin``."""
    name, md5 = ARCHIVE_META["devkit"]
    file = name if file is None else file
    _verify_archive(root, file, md5)
    tmp_dir = tempfile.mkdtemp()
    try:
        extract_archive(os.path.join(root, file), tmp_dir)
        devkit_root = os.path.join(tmp_dir, "ILSVRC2012_devkit_t12")
        idx_to_wnid, wnid_to_classes = _parse_meta_mat(devkit_root)
        truth = os.path.join(devkit_root, "data", "ILSVRC2012_validation_ground_truth.txt")
        with open(truth) as f:
            val_idcs = [int(line) for line in f.readlines()]
        val_wnids = [idx_to_wnid[idx] for idx in val_idcs]
        ember.save((wnid_to_classes, val_wnids), os.path.join(root, META_FILE))
    finally:
        shutil.rmtree(tmp_dir)


def parse_train_archive(root, file: str | None = None, folder: str = "train") -> None:
    """Extract the train archive into ``root/<folder>``, then each class's inner tar into
    its ``<wnid>`` folder."""
    name, md5 = ARCHIVE_META["train"]
    file = name if file is None else file
    _verify_archive(root, file, md5)
    train_root = os.path.join(root, folder)
    extract_archive(os.path.join(root, file), train_root)
    for archive in [os.path.join(train_root, a) for a in os.listdir(train_root)]:
        extract_archive(archive, os.path.splitext(archive)[0], remove_finished=True)


def parse_val_archive(
    root, file: str | None = None, wnids: list[str] | None = None, folder: str = "val"
) -> None:
    """Extract the validation archive into ``root/<folder>`` and move each image (in sorted
    order) into the folder of its ``wnids`` entry (from ``meta.bin`` by default)."""
    name, md5 = ARCHIVE_META["val"]
    file = name if file is None else file
    if wnids is None:
        wnids = load_meta_file(root)[1]
    _verify_archive(root, file, md5)
    val_root = os.path.join(root, folder)
    extract_archive(os.path.join(root, file), val_root)
    images = sorted(os.path.join(val_root, image) for image in os.listdir(val_root))
    for wnid in set(wnids):
        os.mkdir(os.path.join(val_root, wnid))
    for wnid, img_file in zip(wnids, images):
        shutil.move(img_file, os.path.join(val_root, wnid, os.path.basename(img_file)))
