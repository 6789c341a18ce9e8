"""Datasets: ``Dataset``, ``IterableDataset`` and the wrappers and combinators of
``torch.utils.data`` (``TensorDataset``, ``StackDataset``, ``ConcatDataset``, ``ChainDataset``,
``Subset``) plus ``random_split``."""

from __future__ import annotations

import bisect
import itertools
import math
import warnings
from typing import Generic, Iterable, TypeVar  # noqa: UP035 - typing's, as in PyTorch

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset",
           "ChainDataset", "Subset", "random_split"]

T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    """A map-style dataset: subclasses implement ``__getitem__`` (and usually ``__len__``).

    ``a + b`` concatenates two datasets into a ``ConcatDataset``.
    """

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co], Iterable[T_co]):
    """An iterable-style dataset: subclasses implement ``__iter__`` (abstract, as in PyTorch:
    a subclass without it cannot be instantiated).

    With ``num_workers > 0`` every worker iterates its own copy; use ``get_worker_info()``
    inside ``__iter__`` to shard the stream between workers.
    """

    def __add__(self, other: Dataset) -> ChainDataset:
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Dataset wrapping tensors; sample ``i`` is ``tuple(t[i] for t in tensors)``."""

    def __init__(self, *tensors) -> None:
        if any(tensors[0].size(0) != t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class StackDataset(Dataset):
    """Datasets stacked side by side: samples are tuples (positional datasets) or dicts
    (keyword datasets) of the datasets' samples at the same index."""

    def __init__(self, *args, **kwargs) -> None:
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via "
                             "``kwargs``) like input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        parts = list(args) if args else list(kwargs.values())
        self._length = len(parts[0])
        if any(self._length != len(d) for d in parts):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args if args else kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: list) -> list:
        """The samples at ``indices``, fetched in one call from the datasets that have
        ``__getitems__`` of their own."""
        keyed = isinstance(self.datasets, dict)
        parts = self.datasets.items() if keyed else enumerate(self.datasets)
        batch = [{} if keyed else [] for _ in indices]
        for key, dataset in parts:
            if callable(getattr(dataset, "__getitems__", None)):
                items = dataset.__getitems__(indices)
                if len(items) != len(indices):
                    raise ValueError("Nested dataset's output size mismatch."
                                     f" Expected {len(indices)}, got {len(items)}")
            else:
                items = [dataset[idx] for idx in indices]
            for data, sample in zip(items, batch):
                if keyed:
                    sample[key] = data
                else:
                    sample.append(data)
        return batch if keyed else [tuple(sample) for sample in batch]

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset):
    """The concatenation of several map-style datasets (``cumulative_sizes`` holds the running
    lengths; negative indices count from the end)."""

    @staticmethod
    def cumsum(sequence) -> list:
        return list(itertools.accumulate(len(e) for e in sequence))

    def __init__(self, datasets) -> None:
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        offset = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - offset]

    @property
    def cummulative_sizes(self) -> list:
        """Deprecated spelling of ``cumulative_sizes``."""
        warnings.warn("`cummulative_sizes` attribute is renamed to `cumulative_sizes`",
                      FutureWarning, stacklevel=2)
        return self.cumulative_sizes


class ChainDataset(IterableDataset):
    """Iterable datasets chained one after the other, on the fly."""

    def __init__(self, datasets) -> None:
        self.datasets = datasets

    def _checked(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield d

    def __iter__(self):
        for d in self._checked():
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self._checked())


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``."""

    def __init__(self, dataset, indices) -> None:
        self.dataset = dataset
        self.indices = indices
        cls = type(self)
        if cls.__getitem__ is not Subset.__getitem__ and cls.__getitems__ is Subset.__getitems__:
            raise NotImplementedError(
                f"{cls.__name__} overrides __getitem__ but not __getitems__. When subclassing "
                "Subset and overriding __getitem__, you must also override __getitems__ to "
                "ensure DataLoader works correctly with your custom logic. A simple "
                "implementation:\n\ndef __getitems__(self, indices):\n"
                "    return [self.__getitem__(idx) for idx in indices]")

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list) -> list:
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


def _fraction_lengths(n: int, fractions) -> list:
    """``floor(n * frac)`` per split, the remainder dealt out one by one, round robin."""
    lengths = []
    for i, frac in enumerate(fractions):
        if frac < 0 or frac > 1:
            raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        lengths.append(math.floor(n * frac))
    for i in range(n - sum(lengths)):
        lengths[i % len(lengths)] += 1
    for i, length in enumerate(lengths):
        if length == 0:
            warnings.warn(f"Length of split at index {i} is 0. This might result in an empty "
                          "dataset.", stacklevel=3)
    return lengths


def random_split(dataset, lengths, generator=None) -> list:
    """Split ``dataset`` at random into non-overlapping ``Subset``s of the given lengths, or
    of the given fractions (summing to 1) of its length. ``generator`` defaults to
    ``ember.default_generator``."""
    from .._random import randperm

    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        lengths = _fraction_lengths(len(dataset), lengths)
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = randperm(sum(lengths), generator=generator).tolist()
    return [Subset(dataset, indices[end - length:end])
            for end, length in zip(itertools.accumulate(lengths), lengths)]
