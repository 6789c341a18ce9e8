"""Samplers: iterables of dataset indices (or of index batches) for the ``DataLoader``."""

from __future__ import annotations

import itertools
from typing import Generic, TypeVar

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]

T_co = TypeVar("T_co", covariant=True)


class Sampler(Generic[T_co]):
    """Base class of samplers: subclasses implement ``__iter__`` (and ``__len__`` when the
    number of indices is known). It takes no arguments, as in PyTorch."""

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """``0, 1, ..., len(data_source) - 1`` in order."""

    def __init__(self, data_source) -> None:
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


def _fresh_generator():
    """A generator seeded from ``ember.default_generator`` (what samplers use when no
    ``generator`` is given, so that ``ember.manual_seed`` makes them deterministic)."""
    from .. import _dtype
    from .._factory import empty
    from .._random import Generator

    seed = int(empty((), dtype=_dtype.int64).random_().item())
    return Generator().manual_seed(seed)


def _positive_int(value, what: str, error=ValueError) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise error(f"{what} should be a positive integer value, but got {what}={value}")


class RandomSampler(Sampler[int]):
    """Random indices: a permutation (repeated to ``num_samples``) without replacement, or
    ``num_samples`` uniform draws with replacement."""

    def __init__(self, data_source, replacement: bool = False, num_samples=None,
                 generator=None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError("replacement should be a boolean value, but got "
                            f"replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        from .._random import randint, randperm

        n = len(self.data_source)
        gen = _fresh_generator() if self.generator is None else self.generator
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from randint(high=n, size=(32,), generator=gen).tolist()
            yield from randint(high=n, size=(self.num_samples % 32,), generator=gen).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from randperm(n, generator=gen).tolist()
            yield from randperm(n, generator=gen).tolist()[:self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given ``indices`` in a random order."""

    def __init__(self, indices, generator=None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        from .._random import randperm

        for i in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """``num_samples`` indices in ``[0, len(weights))`` drawn with probabilities proportional
    to ``weights`` (with or without replacement)."""

    def __init__(self, weights, num_samples: int, replacement: bool = True,
                 generator=None) -> None:
        from .. import _dtype
        from .._factory import as_tensor

        _positive_int(num_samples, "num_samples")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        weights = as_tensor(weights, dtype=_dtype.float64)
        if weights.dim() != 1:
            raise ValueError("weights should be a 1d sequence but given weights have shape "
                             f"{tuple(weights.shape)}")
        self.weights = weights
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        from .._random import multinomial

        drawn = multinomial(self.weights, self.num_samples, self.replacement,
                            generator=self.generator)
        yield from drawn.tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list]):
    """Groups the indices of ``sampler`` into lists of ``batch_size`` (the last one shorter
    unless ``drop_last``)."""

    def __init__(self, sampler, batch_size: int, drop_last: bool) -> None:
        _positive_int(batch_size, "batch_size")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        it = iter(self.sampler)
        if self.drop_last:
            yield from (list(batch) for batch in zip(*[it] * self.batch_size))
            return
        batch = list(itertools.islice(it, self.batch_size))
        while batch:
            yield batch
            batch = list(itertools.islice(it, self.batch_size))

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
