"""IMDB, as ``torchtext.datasets.IMDB``: 50,000 movie reviews, negative or positive."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import PurePosixPath

from ._utils import TextDataset, dataset, download, tar_members, write_atomic

__all__ = ["IMDB"]

URL = "http://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz"

MD5 = "7c2ac02c03563afcf9b574c7e56c153a"

NUM_LINES = {
    "train": 25000,
    "test": 25000,
}

MAP_LABELS = {"neg": 1, "pos": 2}

_PATH = "aclImdb_v1.tar.gz"

DATASET_NAME = "IMDB"

#: where a split's reviews are cached, one file per label with one review per line
_DECOMPRESSED_FOLDER = "aclImdb_v1"


def _split_and_label(name: str) -> tuple[str | None, str | None]:
    """``("train", "neg")`` for ``aclImdb/train/neg/12416_3.txt``."""
    parts = PurePosixPath(name).parts
    return (parts[-3], parts[-2]) if len(parts) >= 3 else (None, None)


def _cache_split(archive: str, split: str, paths: dict[str, str]) -> None:
    """Write each label's reviews of ``split`` to ``paths[label]``, one line each (the
    lines of a review file are separate items in torchtext, blank lines dropped)."""
    reviews: dict[str, list[bytes]] = {label: [] for label in paths}

    def wanted(name: str) -> bool:
        member_split, label = _split_and_label(name)
        return member_split == split and label in reviews

    for name, data in tar_members(archive, wanted):
        lines = (line.rstrip(b"\r") for line in data.split(b"\n"))
        reviews[_split_and_label(name)[1]].extend(line + b"\n" for line in lines if line)
    for label, path in paths.items():
        write_atomic(path, reviews[label])


def _read(paths: dict[str, str]) -> Iterator[tuple[int, str]]:
    for label, path in paths.items():
        with open(path, encoding="utf-8", newline="\n") as f:  # a review may hold a "\r"
            for line in f:
                yield MAP_LABELS[label], line.rstrip("\n")


@dataset(DATASET_NAME, NUM_LINES, "http://ai.stanford.edu/~amaas/data/sentiment/",
         "tuple of label (1 to 2) and text containing the movie review (negative reviews "
         "first, then positive ones)", "(int, str)")
def IMDB(root: str, split: str) -> TextDataset:
    folder = os.path.join(root, _DECOMPRESSED_FOLDER, split)
    paths = {label: os.path.join(folder, label) for label in MAP_LABELS}
    if not all(os.path.isfile(p) for p in paths.values()):
        archive = download(URL, os.path.join(root, _PATH), MD5)
        _cache_split(archive, split, paths)
    return TextDataset(DATASET_NAME, split, paths, _read, NUM_LINES[split])
