"""PatchCamelyon (PCAM), as ``torchvision.datasets.PCAM``."""

from __future__ import annotations

import os
import pathlib
from collections.abc import Callable
from typing import Any

from .utils import _decompress, download_url, verify_str_arg
from .vision import VisionDataset

__all__ = ["PCAM"]


def _import_h5py():
    """h5py, which only this dataset needs (the ``ember-vision[pcam]`` extra)."""
    try:
        import h5py
    except ImportError:
        raise RuntimeError(
            "h5py is not found. This dataset needs to have h5py installed: please run pip "
            "install h5py (or pip install 'ember-vision[pcam]')"
        ) from None
    return h5py


class PCAM(VisionDataset):
    """`PCAM <https://github.com/basveeling/pcam>`_: 327,680 color 96x96 patches of lymph node
    sections, each labelled 1 when it shows metastatic tissue, else 0. Items are
    ``(PIL RGB image, int target)``.

    The images and targets are HDF5 files read with ``h5py``, which ember-vision does not depend
    on: ``pip install h5py`` (or ``pip install 'ember-vision[pcam]'``).

    Args:
        root (str or ``pathlib.Path``): Root directory of the dataset; the files are in
            ``root/pcam``.
        split (string, optional): ``"train"`` (default), ``"test"`` or ``"val"``.
        transform (callable, optional): takes a PIL image and returns a transformed version.
        target_transform (callable, optional): takes the target and transforms it.
        download (bool, optional): download the split's two ``.h5.gz`` files from Google Drive
            by id (``drive_url``, without ``gdown``; checked by MD5) into ``root/pcam`` and
            decompress them; nothing is fetched when the ``.h5`` files are already there.
            Google may refuse large files to scripts: then download them by hand.

    Unlike torchvision, which opens both HDF5 files at every ``len()`` and every item, the files
    are opened once per process, when first read, and kept open (an item then costs less than
    half as much). The handles belong to the process that opened them: a DataLoader worker
    (forked after the dataset was read) opens its own on first use and never touches its
    parent's, and pickling the dataset (``spawn`` workers) leaves them behind.
    """

    _FILES = {
        "train": {
            "images": (
                "camelyonpatch_level_2_split_train_x.h5",  # data file name
                "1Ka0XfEMiwgCYPdTI-vv6eUElOBnKFKQ2",  # Google Drive id
                "1571f514728f59376b705fc836ff4b63",  # md5 of the .h5.gz
            ),
            "targets": (
                "camelyonpatch_level_2_split_train_y.h5",
                "1269yhu3pZDP8UYFQs-NYs3FPwuK-nGSG",
                "35c2d7259d906cfc8143347bb8e05be7",
            ),
        },
        "test": {
            "images": (
                "camelyonpatch_level_2_split_test_x.h5",
                "1qV65ZqZvWzuIVthK8eVDhIwrbnsJdbg_",
                "d8c2d60d490dbd479f8199bdfa0cf6ec",
            ),
            "targets": (
                "camelyonpatch_level_2_split_test_y.h5",
                "17BHrSrwWKjYsOgTMmoqrIjDy6Fa2o_gP",
                "60a7035772fbdb7f34eb86d4420cf66a",
            ),
        },
        "val": {
            "images": (
                "camelyonpatch_level_2_split_valid_x.h5",
                "1hgshYGWK8V-eGRy8LToWJJgDU_rXWVJ3",
                "d5b63470df7cfa627aeec8b9dc0c066e",
            ),
            "targets": (
                "camelyonpatch_level_2_split_valid_y.h5",
                "1bH8ZRbhSVAhScTS0p9-ZzGnX91cHT3uO",
                "2b85f58b927af9964a4c15b8f7e8f179",
            ),
        },
    }
    drive_url = "https://drive.usercontent.google.com/download?id={id}&export=download&confirm=t"
    #: the HDF5 dataset that holds the images (N x 96 x 96 x 3) and the targets (N x 1 x 1 x 1)
    _H5_KEYS = {"images": "x", "targets": "y"}

    def __init__(
        self,
        root,
        split: str = "train",
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
    ) -> None:
        _import_h5py()
        self._split = verify_str_arg(split, "split", ("train", "test", "val"))
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._base_folder = pathlib.Path(self.root) / "pcam"
        self._handles: dict[str, Any] = {}  # "images"/"targets" -> h5py.File, opened lazily
        self._handles_pid: int | None = None  # the process that opened them

        if download:
            self._download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found. You can use download=True to download it")

    def _h5_dataset(self, kind: str):
        """The HDF5 dataset of ``kind`` ("images" or "targets"), its file opened in this
        process on first use."""
        if self._handles_pid != os.getpid():
            self._handles, self._handles_pid = {}, os.getpid()  # never use a parent's handle
        handle = self._handles.get(kind)
        if handle is None:
            path = self._base_folder / self._FILES[self._split][kind][0]
            handle = self._handles.setdefault(kind, _import_h5py().File(path, "r"))
        return handle[self._H5_KEYS[kind]]

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_handles"], state["_handles_pid"] = {}, None  # h5py handles do not pickle
        return state

    def __len__(self) -> int:
        return self._h5_dataset("images").shape[0]

    def __getitem__(self, idx: int) -> tuple[Any, Any]:
        from PIL import Image

        image = Image.fromarray(self._h5_dataset("images")[idx]).convert("RGB")
        target = int(self._h5_dataset("targets")[idx, 0, 0, 0])  # shape is [N, 1, 1, 1]
        if self.transform:
            image = self.transform(image)
        if self.target_transform:
            target = self.target_transform(target)
        return image, target

    def _check_exists(self) -> bool:
        return all(
            self._base_folder.joinpath(file_name).exists()
            for file_name, _, _ in self._FILES[self._split].values()
        )

    def _download(self) -> None:
        if self._check_exists():
            return
        for file_name, file_id, md5 in self._FILES[self._split].values():
            archive = self._base_folder / (file_name + ".gz")
            download_url(self.drive_url.format(id=file_id), self._base_folder, archive.name, md5)
            # through a temporary name: an interrupted run leaves no partial .h5 behind that
            # _check_exists would take for the dataset
            partial = self._base_folder / (file_name + ".part")
            _decompress(archive, partial)
            os.replace(partial, self._base_folder / file_name)
