"""``default_collate`` and ``default_convert``: turn a list of samples into a batch.

Tensors are stacked, NumPy arrays and numbers become tensors (Python ``float`` -> float64,
``int`` -> int64, ``bool`` -> bool), strings stay a list, and containers (mappings,
namedtuples, sequences) are collated field by field. ``collate`` with a ``collate_fn_map``
(type -> function) extends it, as in PyTorch.
"""

from __future__ import annotations

import collections.abc
import copy
import re

import numpy as np

from ..._tensor import Tensor as _Tensor

__all__ = ["collate", "default_collate", "default_convert", "default_collate_fn_map",
           "default_collate_err_msg_format"]

np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = ("default_collate: batch must contain tensors, numpy arrays, "
                                  "numbers, dicts or lists; found {}")


def _is_numpy_object(data) -> bool:
    t = type(data)
    return t.__module__ == "numpy" and t.__name__ not in ("str_", "string_")


def _rebuild_mapping(elem, convert):
    """``elem``'s mapping type (a shallow copy when mutable) with converted values."""
    values = {key: convert(key) for key in elem}
    try:
        if isinstance(elem, collections.abc.MutableMapping):
            clone = copy.copy(elem)
            clone.update(values)
            return clone
        return type(elem)(values)
    except TypeError:
        return values


def _rebuild_sequence(elem, items: list):
    """``elem``'s sequence type (a shallow copy when mutable) holding ``items``."""
    try:
        if isinstance(elem, collections.abc.MutableSequence):
            clone = copy.copy(elem)
            for i, item in enumerate(items):
                clone[i] = item
            return clone
        return type(elem)(items)
    except TypeError:
        return items


def default_convert(data):
    """Convert NumPy arrays and scalars (also inside mappings and sequences) to tensors;
    leave everything else unchanged (the collate function when auto-batching is off)."""
    from ..._factory import as_tensor
    from ..._tensor import Tensor

    if isinstance(data, Tensor):
        return data
    if _is_numpy_object(data):
        if type(data).__name__ == "ndarray" and np_str_obj_array_pattern.search(data.dtype.str):
            return data
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, lambda key: default_convert(data[key]))
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild_sequence(data, [default_convert(d) for d in data])
    return data


def collate(batch, *, collate_fn_map: dict | None = None):
    """Collate ``batch`` (a list of samples) recursively; ``collate_fn_map`` maps element
    types (exact first, then by ``isinstance`` in insertion order) to collate functions
    called as ``fn(batch, collate_fn_map=...)``."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type, fn in collate_fn_map.items():
            if isinstance(elem, collate_type):
                return fn(batch, collate_fn_map=collate_fn_map)

    def recurse(samples):
        return collate(samples, collate_fn_map=collate_fn_map)

    if isinstance(elem, collections.abc.Mapping):
        return _rebuild_mapping(elem, lambda key: recurse([d[key] for d in batch]))
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(recurse(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = [recurse(samples) for samples in zip(*batch)]
        if isinstance(elem, tuple):
            return transposed  # PyTorch returns tuples as lists
        return _rebuild_sequence(elem, transposed)
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def _refuse_sparse_or_nested(elem) -> None:
    from ... import _layout

    if elem.is_nested:
        raise RuntimeError("Batches of nested tensors are not currently supported by the default "
                           "collate_fn; please provide a custom collate_fn to handle them "
                           "appropriately.")
    if elem.layout in (_layout.sparse_coo, _layout.sparse_csr, _layout.sparse_bsr,
                       _layout.sparse_csc, _layout.sparse_bsc):
        raise RuntimeError("Batches of sparse tensors are not currently supported by the default "
                           "collate_fn; please provide a custom collate_fn to handle them "
                           "appropriately.")


def collate_tensor_fn(batch, *, collate_fn_map=None):
    from ...ops.shape import stack

    if type(batch[0]) is not _Tensor:  # sparse and nested tensors are subclasses
        _refuse_sparse_or_nested(batch[0])
    return stack(batch, 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    from ..._factory import as_tensor

    if np_str_obj_array_pattern.search(batch[0].dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(batch[0].dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    from ..._factory import as_tensor

    return as_tensor(batch)


def collate_float_fn(batch, *, collate_fn_map=None):
    from ... import _dtype
    from ..._factory import tensor

    return tensor(batch, dtype=_dtype.float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    from ..._factory import tensor

    return tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


def _default_map() -> dict:
    return {_Tensor: collate_tensor_fn, np.ndarray: collate_numpy_array_fn,
            (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
            float: collate_float_fn, int: collate_int_fn, str: collate_str_fn,
            bytes: collate_str_fn}


default_collate_fn_map: dict = _default_map()


def default_collate(batch):
    """Collate a list of samples into a batch the way PyTorch's ``default_collate`` does:
    tensors stacked on a new first dim, NumPy arrays and numbers turned into tensors,
    strings kept as a list, mappings / namedtuples / sequences collated per field."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
