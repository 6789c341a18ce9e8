"""``pin_memory``: copy the tensors of a batch (also inside mappings and sequences) into
page-locked host memory, what the DataLoader does with ``pin_memory=True`` when an
accelerator is present."""

from __future__ import annotations

import collections.abc

from .collate import _rebuild_mapping, _rebuild_sequence

__all__ = ["pin_memory"]


def pin_memory(data, device=None):
    """``data`` with every object that has a ``pin_memory`` method (tensors first) pinned;
    containers are rebuilt as in ``default_convert``."""
    if hasattr(data, "pin_memory"):
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, lambda key: pin_memory(data[key], device))
    if isinstance(data, tuple):
        if hasattr(data, "_fields"):  # namedtuple
            return type(data)(*(pin_memory(sample, device) for sample in data))
        return type(data)(pin_memory(sample, device) for sample in data)
    if isinstance(data, collections.abc.Sequence):
        return _rebuild_sequence(data, [pin_memory(sample, device) for sample in data])
    return data
