"""SST2, as ``torchtext.datasets.SST2``: GLUE's binary Stanford Sentiment Treebank."""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator

from ._utils import TextDataset, archive_member, dataset

__all__ = ["SST2"]

URL = "https://dl.fbaipublicfiles.com/glue/data/SST-2.zip"

MD5 = "9f81648d4199384278b86e315dac217c"

NUM_LINES = {
    "train": 67349,
    "dev": 872,
    "test": 1821,
}

_PATH = "SST-2.zip"

DATASET_NAME = "SST2"

_EXTRACTED_FILES = {
    "train": os.path.join("SST-2", "train.tsv"),
    "dev": os.path.join("SST-2", "dev.tsv"),
    "test": os.path.join("SST-2", "test.tsv"),
}


def _rows(path: str) -> Iterator[list[str]]:
    """The rows of a tab-separated file after its header (torchdata's ``parse_csv``)."""
    with open(path, encoding="utf-8", newline="") as f:
        rows = csv.reader(f, delimiter="\t")
        next(rows, None)
        yield from rows


def _read(path: str) -> Iterator[tuple[str, int]]:
    for row in _rows(path):
        yield row[0].strip(), int(row[1])


def _read_test(path: str) -> Iterator[tuple[str]]:
    # the test split has no labels: its columns are an index and the sentence
    for row in _rows(path):
        yield (row[1].strip(),)


@dataset(DATASET_NAME, NUM_LINES, "https://nlp.stanford.edu/sentiment/",
         "tuple of text and label (0 or 1). The `test` split only returns text.",
         "Union[(str, int), (str,)]")
def SST2(root: str, split: str) -> TextDataset:
    path = archive_member(root, URL, MD5, _EXTRACTED_FILES[split], _PATH)
    reader = _read_test if split == "test" else _read
    return TextDataset(DATASET_NAME, split, path, reader, NUM_LINES[split])
