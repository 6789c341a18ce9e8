"""LSUN scene categories, as ``torchvision.datasets.LSUN`` and ``LSUNClass``."""

from __future__ import annotations

import bisect
import io
import os
import threading
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from .utils import iterable_to_str, verify_str_arg
from .vision import VisionDataset

__all__ = ["LSUN", "LSUNClass"]

#: the scene categories; a class is ``<category>_<train|val>``, or ``test``
_CATEGORIES = [
    "bedroom",
    "bridge",
    "church_outdoor",
    "classroom",
    "conference_room",
    "dining_room",
    "kitchen",
    "living_room",
    "restaurant",
    "tower",
]
_DSET_OPTS = ["train", "val", "test"]


def _import_lmdb():
    """lmdb, which only these datasets need (the ``ember-vision[lsun]`` extra)."""
    try:
        import lmdb
    except ImportError:
        raise ModuleNotFoundError(
            "LSUN reads LMDB databases with the lmdb package, which is not installed: please "
            "run pip install lmdb (or pip install 'ember-vision[lsun]')",
            name="lmdb",
        ) from None
    return lmdb


_envs_lock = threading.Lock()
_envs: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # file identity -> env
_envs_pid = os.getpid()  # the process that opened the environments in _envs


def _new_lock_after_fork() -> None:
    global _envs_lock
    _envs_lock = threading.Lock()  # a fork while another thread held it would leave it held


if hasattr(os, "register_at_fork"):  # not on Windows, which does not fork
    os.register_at_fork(after_in_child=_new_lock_after_fork)


def _open_env(path: str):
    """The read-only LMDB environment at ``path``, opened once per process and shared by every
    dataset over it while one holds it (lmdb refuses to open an environment twice in one
    process). In a forked child the parent's environments, which LMDB forbids to use after a
    fork, are closed (this process's copies only) and opened afresh."""
    global _envs, _envs_pid
    lmdb = _import_lmdb()
    with _envs_lock:
        if _envs_pid != os.getpid():
            inherited = list(_envs.values())
            _envs, _envs_pid = weakref.WeakValueDictionary(), os.getpid()
            for env in inherited:
                env.close()
        try:  # lmdb's own notion of "the same environment": its data file
            stat = os.stat(os.path.join(path, "data.mdb"))
            key: Any = (stat.st_dev, stat.st_ino)
        except OSError:
            key = None  # lmdb.open raises its error
        env = _envs.get(key) if key is not None else None
        if env is None:
            env = lmdb.open(path, max_readers=1, readonly=True, lock=False, readahead=False,
                            meminit=False)
            if key is not None:
                _envs[key] = env
        return env


class LSUNClass(VisionDataset):
    """The images of one LSUN LMDB database (a ``<class>_lmdb`` folder). Items are
    ``(PIL RGB image, None)`` (``target_transform(None)`` when given).

    Needs the ``lmdb`` package: ``pip install lmdb`` (or ``pip install 'ember-vision[lsun]'``).

    Differences from torchvision, neither visible in the items:

    * torchvision caches the database's key list as a pickle file ``_cache_<letters of root>``
      in the *current working directory* and loads it back with ``pickle`` when it is there,
      which runs whatever code the file holds (and trusts a stale cache). Ember never loads
      data by running code: it reads the keys from the database itself (one pass of a
      key-only cursor) each time the dataset is built, and writes no file anywhere.
    * torchvision opens the LMDB environment once and shares it with forked DataLoader
      workers, which LMDB forbids; here each process opens its own on first use (``env``),
      and pickling the dataset (``spawn`` workers) leaves the environment behind. Datasets
      over the same database in one process share its environment, where torchvision's
      second one fails (lmdb opens an environment only once per process).
    """

    def __init__(
        self, root, transform: Callable | None = None, target_transform: Callable | None = None
    ) -> None:
        _import_lmdb()
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._env_path = os.fspath(root)
        self._env = _open_env(self._env_path)
        self._env_pid: int | None = os.getpid()
        with self._env.begin(write=False) as txn:
            self.length = txn.stat()["entries"]
            self.keys = list(txn.cursor().iternext(keys=True, values=False))

    @property
    def env(self):
        """The LMDB environment (read-only), opened by this process."""
        if self._env_pid != os.getpid():
            self._env, self._env_pid = _open_env(self._env_path), os.getpid()
        return self._env

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_env"], state["_env_pid"] = None, None  # an lmdb.Environment does not pickle
        return state

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        from PIL import Image

        with self.env.begin(write=False) as txn:
            imgbuf = txn.get(self.keys[index])
        img = Image.open(io.BytesIO(imgbuf)).convert("RGB")
        target = None
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self) -> int:
        return self.length


class LSUN(VisionDataset):
    """`LSUN <https://paperswithcode.com/dataset/lsun>`_ scene categories, one LMDB database
    (:class:`LSUNClass`) per class in ``root/<class>_lmdb``. Items are
    ``(PIL RGB image, target)`` where the target is the index of the image's class in
    ``classes``.

    Needs the ``lmdb`` package: ``pip install lmdb`` (or ``pip install 'ember-vision[lsun]'``).
    Unlike torchvision, no key cache is pickled into the working directory (see
    :class:`LSUNClass`), and a negative index counts from the end of the whole dataset
    (torchvision takes it from the end of the first class).

    Args:
        root (str or ``pathlib.Path``): Root directory for the database files.
        classes (string or list): One of {'train', 'val', 'test'} or a list of
            categories to load. e,g. ['bedroom_train', 'church_outdoor_train'].
        transform (callable, optional): takes a PIL image and returns a transformed version.
        target_transform (callable, optional): takes the target and transforms it.
    """

    def __init__(
        self,
        root,
        classes: str | list[str] = "train",
        transform: Callable | None = None,
        target_transform: Callable | None = None,
    ) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.classes = self._verify_classes(classes)

        self.dbs = [
            LSUNClass(root=os.path.join(root, f"{c}_lmdb"), transform=transform)
            for c in self.classes
        ]
        self.indices = []  # the end (exclusive) of each class's images in the whole dataset
        count = 0
        for db in self.dbs:
            count += len(db)
            self.indices.append(count)
        self.length = count

    def _verify_classes(self, classes: str | list[str]) -> list[str]:
        if isinstance(classes, str) and classes in _DSET_OPTS:
            if classes == "test":
                return [classes]
            return [c + "_" + classes for c in _CATEGORIES]

        # anything else is taken as a list of classes (a string too, letter by letter, as
        # torchvision does)
        if not isinstance(classes, Iterable):
            msg = "Expected type str or Iterable for argument classes, but got type {}."
            raise ValueError(msg.format(type(classes)))
        classes = list(classes)
        msg_fmtstr_type = "Expected type str for elements in argument classes, but got type {}."
        msg_fmtstr = "Unknown value '{}' for {}. Valid values are {{{}}}."
        for c in classes:
            verify_str_arg(c, custom_msg=msg_fmtstr_type.format(type(c)))
            c_short = c.split("_")
            category, dset_opt = "_".join(c_short[:-1]), c_short[-1]
            msg = msg_fmtstr.format(category, "LSUN class", iterable_to_str(_CATEGORIES))
            verify_str_arg(category, valid_values=_CATEGORIES, custom_msg=msg)
            msg = msg_fmtstr.format(dset_opt, "postfix", iterable_to_str(_DSET_OPTS))
            verify_str_arg(dset_opt, valid_values=_DSET_OPTS, custom_msg=msg)
        return classes

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        """
        Args:
            index (int): Index

        Returns:
            tuple: Tuple (image, target) where target is the index of the target category.
        """
        if index < 0:
            index += self.length
        if not 0 <= index < self.length:
            raise IndexError("list index out of range")  # torchvision's words (past the end)
        target = bisect.bisect_right(self.indices, index)  # the first class ending after it
        sub = self.indices[target - 1] if target > 0 else 0
        db = self.dbs[target]
        index = index - sub

        if self.target_transform is not None:
            target = self.target_transform(target)
        img, _ = db[index]
        return img, target

    def __len__(self) -> int:
        return self.length

    def extra_repr(self) -> str:
        return f"Classes: {self.classes}"
