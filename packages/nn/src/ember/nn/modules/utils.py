"""Tuple helpers of ``torch.nn.modules.utils`` (``_single``, ``_pair``, ``_triple``...) and
``consume_prefix_in_state_dict_if_present``."""

from __future__ import annotations

import collections.abc
from itertools import repeat
from typing import Any

__all__ = ["_ntuple", "_single", "_pair", "_triple", "_quadruple", "_reverse_repeat_tuple",
           "consume_prefix_in_state_dict_if_present"]


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


def consume_prefix_in_state_dict_if_present(state_dict: dict[str, Any], prefix: str) -> None:
    """Strip ``prefix`` from the keys of ``state_dict`` in place, where they have it (and from
    its ``_metadata``): a ``DataParallel`` model's checkpoint (keys ``module.*``) then loads
    into the bare model after ``consume_prefix_in_state_dict_if_present(sd, "module.")``."""
    for key in list(state_dict.keys()):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in list(metadata.keys()):
            # '' is the wrapper's own entry (kept); 'module' and 'module.*' are the model's
            if len(key) == 0:
                continue
            if key == prefix.replace(".", "") or key.startswith(prefix):
                metadata[key[len(prefix):]] = metadata.pop(key)
