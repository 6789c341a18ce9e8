"""AG_NEWS, as ``torchtext.datasets.AG_NEWS``: news titles and descriptions in 4 classes."""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator

from ._utils import TextDataset, dataset, download

__all__ = ["AG_NEWS"]

URL = {
    "train": "https://raw.githubusercontent.com/mhjabreel/CharCnn_Keras/master/data/ag_news_csv/train.csv",
    "test": "https://raw.githubusercontent.com/mhjabreel/CharCnn_Keras/master/data/ag_news_csv/test.csv",
}

MD5 = {
    "train": "b1a00f826fdfbd249f79597b59e1dc12",
    "test": "d52ea96a97a2d943681189a97654912d",
}

NUM_LINES = {
    "train": 120000,
    "test": 7600,
}

DATASET_NAME = "AG_NEWS"


def _read(path: str) -> Iterator[tuple[int, str]]:
    with open(path, encoding="utf-8", newline="") as f:
        for row in csv.reader(f):
            yield int(row[0]), " ".join(row[1:])


@dataset(DATASET_NAME, NUM_LINES, "https://paperswithcode.com/dataset/ag-news",
         "tuple of label (1 to 4) and text", "(int, str)")
def AG_NEWS(root: str, split: str) -> TextDataset:
    path = download(URL[split], os.path.join(root, split + ".csv"), MD5[split])
    return TextDataset(DATASET_NAME, split, path, _read, NUM_LINES[split])
