"""The 8x8 UCI handwritten digits shipped with ember-vision (CC BY 4.0, see data/ATTRIBUTION.md)."""

from __future__ import annotations

import gzip
import os
from collections.abc import Callable

import numpy as np

import ember

from .vision import _SplitImageDataset

__all__ = ["Digits"]

_DATA = os.path.join(os.path.dirname(__file__), "data", "digits.csv.gz")


class Digits(_SplitImageDataset):
    """UCI optdigits: 1,797 8x8 grayscale digits, embedded in the package (no download).

    Pixels (0..16 in the file) are scaled to uint8 0..255 in ``data`` ``(N, 8, 8)``; items are
    ``(PIL 'L' image, int label)``. ``train`` picks the 80% training part of a random split
    fixed by ``split_seed`` (the split of ``random_split(..., [0.8, 0.2])`` with a generator
    seeded so). ``root`` is unused except in the repr.
    """

    classes = [str(i) for i in range(10)]

    def __init__(
        self,
        root=None,
        train: bool = True,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        split_seed: int = 0,
    ) -> None:
        self.split_seed = split_seed
        super().__init__(root, train, transform, target_transform)

    def _load_data(self) -> tuple[ember.Tensor, ember.Tensor]:
        with gzip.open(_DATA, "rt") as f:
            raw = np.loadtxt(f, delimiter=",", dtype=np.int64)
        images = np.round(raw[:, :64] * (255 / 16)).astype(np.uint8).reshape(-1, 8, 8)
        n = len(raw)
        n_train = n - int(np.floor(0.2 * n))  # random_split's rounding of [0.8, 0.2]
        perm = ember.randperm(n, generator=ember.Generator().manual_seed(self.split_seed),
                              device="cpu").numpy()  # the CPU's, whatever the default device
        index = np.sort(perm[:n_train]) if self.train else np.sort(perm[n_train:])
        return (
            ember.from_numpy(np.ascontiguousarray(images[index])),
            ember.from_numpy(raw[index, 64].copy()),
        )
