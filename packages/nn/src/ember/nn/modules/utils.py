"""Tuple helpers of ``torch.nn.modules.utils`` (``_single``, ``_pair``, ``_triple``...)."""

from __future__ import annotations

import collections.abc
from itertools import repeat

__all__ = ["_ntuple", "_single", "_pair", "_triple", "_quadruple", "_reverse_repeat_tuple"]


def _ntuple(n: int, name: str = "parse"):
    def parse(x):
        if isinstance(x, collections.abc.Iterable) and not isinstance(x, str):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n: int) -> tuple:
    """``(1, 2)`` and ``n=2`` give ``(2, 2, 1, 1)``: the padding order ``F.pad`` takes."""
    return tuple(x for x in reversed(t) for _ in range(n))
