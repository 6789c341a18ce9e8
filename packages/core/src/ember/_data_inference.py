"""Nested Python data, NumPy arrays and scalars to a host array, with PyTorch's dtype
inference (``torch.tensor``'s ``infer_scalar_type`` and ``compute_sizes``): bool, int64 for
Python ints, the default float for Python floats, an array's or tensor's own dtype; nested
sequences promote their elements' dtypes, and PyTorch's errors name what does not fit.
"""

from __future__ import annotations

import builtins
import math
import numbers
from collections.abc import Sequence

import numpy as np

from . import _dtype
from ._tensor import Tensor

__all__ = ["np_to_dtype", "data_to_array"]

#: the category of each Python scalar type: bool, integer, floating (``_category_dtype``)
_PY_SCALARS = {builtins.bool: 0, builtins.int: 1, builtins.float: 2, builtins.complex: 3}
_NP_NAMES = _dtype.NUMPY_NAMES


def np_to_dtype(arr: np.ndarray) -> _dtype.dtype:
    """The ember dtype of a NumPy array (PyTorch's errors for unsupported ones)."""
    d = _dtype.FROM_NP.get(arr.dtype)
    if d is not None:
        return d
    if not arr.dtype.isnative:
        raise ValueError("given numpy array has byte order different from the native byte "
                         "order. Conversion between byte orders is currently not supported.")
    raise TypeError(f"can't convert np.ndarray of type numpy.{arr.dtype.type.__name__}. The "
                    f"only supported types are: {_NP_NAMES}.")


def _category_dtype(cat: int) -> _dtype.dtype:
    """The dtype PyTorch infers for a Python scalar of category ``cat`` (``_PY_SCALARS``)."""
    if cat == 3:
        return _dtype.default_complex_dtype()
    return (_dtype.bool, _dtype.int64, _dtype.get_default_dtype())[cat]


def _is_sequence(x) -> builtins.bool:
    return isinstance(x, (Sequence, np.ndarray, bytearray)) and not isinstance(x, bytes)


def _sequence_sizes(data) -> list:
    """The shape implied by following the first element down (PyTorch's compute_sizes)."""
    sizes = []
    seq = data
    while _is_sequence(seq):
        if isinstance(seq, np.ndarray) and seq.ndim == 0:
            raise TypeError("len() of unsized object")
        n = len(seq)
        sizes.append(n)
        if len(sizes) > 64:
            raise ValueError(f"too many dimensions '{type(seq).__name__}'")
        if n == 0:
            break
        seq = seq[0]
    return sizes


def _leaf_dtype(x) -> _dtype.dtype:
    """PyTorch's infer_scalar_type for one element: Python bools, ints, floats and complex
    numbers (and their subclasses), NumPy scalars and arrays, tensors, sequences; another
    number type (``Fraction``, ``Decimal``) is an error, as there."""
    if isinstance(x, np.generic):
        return np_to_dtype(np.asarray(x))
    cat = _PY_SCALARS.get(type(x))
    if cat is None:
        if isinstance(x, builtins.bool):
            cat = 0
        elif isinstance(x, builtins.int):
            cat = 1
        elif isinstance(x, builtins.float):
            cat = 2
        elif isinstance(x, builtins.complex):
            cat = 3
    if cat is not None:
        return _category_dtype(cat)
    if isinstance(x, Tensor):
        return x.dtype
    if isinstance(x, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(x).__name__}'")
    if _is_sequence(x):
        if isinstance(x, np.ndarray):
            return np_to_dtype(x)
        if len(x) == 0:
            return _dtype.get_default_dtype()
        return _promote_all(_leaf_dtype(v) for v in x)
    from ._factory import tp_name

    raise RuntimeError(f"Could not infer dtype of {tp_name(x)}")


def _promote_all(dtypes) -> _dtype.dtype | None:
    out = None
    for d in dtypes:
        out = d if out is None else _dtype.promote_types(out, d)
    return out


class _Gather:
    """Walks nested sequences: checks the shape, infers the dtype, collects the elements."""

    def __init__(self, sizes):
        self.sizes = sizes
        self.last = len(sizes) - 1
        self.flat: list = []
        self.dtype = None
        self.stray = None       # first element that is a sequence where a number belongs
        self.tensors = []       # (index in flat, tensor) of tensor elements

    def walk(self, seq, dim: int) -> None:
        if not _is_sequence(seq):
            raise TypeError("not a sequence")
        n = len(seq)
        if n != self.sizes[dim]:
            raise ValueError(f"expected sequence of length {self.sizes[dim]} at dim {dim} "
                             f"(got {n})")
        if isinstance(seq, np.ndarray) and seq.shape == tuple(self.sizes[dim:]):
            self._add_dtype(np_to_dtype(seq))
            self.flat.extend(seq.ravel().tolist())
            return
        if dim == self.last - 1 and self._rows_of_numbers(seq):
            return
        if dim < self.last:
            for item in seq:
                self.walk(item, dim + 1)
            return
        types = set(map(type, seq))
        if types.issubset(_PY_SCALARS):
            self._add_scalar_types(types)
            self.flat.extend(seq)
            return
        for x in seq:
            self._add_leaf(x)

    def _rows_of_numbers(self, rows) -> builtins.bool:
        """Fast path for the last two dims: rows (lists/tuples) of Python numbers only."""
        n = self.sizes[-1]
        start = len(self.flat)
        types = set()
        for row in rows:
            if row.__class__ not in (list, tuple) or len(row) != n:
                del self.flat[start:]
                return False
            types.update(map(type, row))
            self.flat.extend(row)
        if not types.issubset(_PY_SCALARS):
            del self.flat[start:]
            return False
        self._add_scalar_types(types)
        return True

    def _add_scalar_types(self, types) -> None:
        for t in types:
            self._add_dtype(_category_dtype(_PY_SCALARS[t]))

    def _add_dtype(self, d) -> None:
        self.dtype = d if self.dtype is None else _dtype.promote_types(self.dtype, d)

    def _add_leaf(self, x) -> None:
        self._add_dtype(_leaf_dtype(x))
        if isinstance(x, Tensor):
            self.tensors.append((len(self.flat), x))
            self.flat.append(0)
        elif isinstance(x, np.generic):
            self.flat.append(x.item())
        else:
            if _is_sequence(x) and self.stray is None:
                self.stray = x
            self.flat.append(x)

    def array(self, dt: _dtype.dtype) -> np.ndarray:
        if self.stray is not None:
            name = type(self.stray).__name__
            if dt.is_floating_point:
                raise TypeError(f"must be real number, not {name}")
            raise TypeError(f"'{name}' object cannot be interpreted as an integer")
        for i, t in self.tensors:
            if t._data.size != 1:
                if dt.is_floating_point:
                    raise ValueError("only one element tensors can be converted to Python "
                                     "scalars")
                raise TypeError("only integer tensors of a single element can be converted "
                                "to an index")
            self.flat[i] = t.item()
        inferred = self.dtype
        floats = inferred is not None and (inferred.is_floating_point or inferred.is_complex)
        return _values_to_array(self.flat, dt, floats).reshape(self.sizes)


def _values_to_array(values, dt: _dtype.dtype, floats: builtins.bool = False) -> np.ndarray:
    """Python numbers as an array of ``dt`` with PyTorch's overflow errors; ``floats``: some
    values may be floats (their dtype infers as floating)."""
    if dt.is_floating_point or dt.is_complex or dt is _dtype.bool:
        try:
            with np.errstate(over="ignore"):
                return np.array(values, dtype=dt.np)
        except (TypeError, ValueError):
            _raise_unpack_error(values, dt)
            raise
    if dt is _dtype.uint64:
        return _uint64_array(values)
    try:
        arr = np.array(values, dtype=np.int64)
    except (OverflowError, ValueError, TypeError):
        _raise_unpack_error(values, dt)
        raise ValueError("Overflow when unpacking long long") from None
    if floats:  # floats among the values: each must fit (PyTorch's checked conversion)
        _raise_unpack_error(values, dt)
    if dt is not _dtype.int64 and arr.size:
        info = np.iinfo(dt.np)
        lo = -info.max if info.min == 0 else info.min
        if arr.min() < lo or arr.max() > info.max:
            raise RuntimeError(f"value cannot be converted to type {dt.name} without overflow")
        arr = arr.astype(dt.np)
    return arr


def _raise_unpack_error(values, dt: _dtype.dtype) -> None:
    """PyTorch's error for the first element it cannot store as ``dt`` (the rare path): a
    non-number (``must be real number, not NoneType``), a complex into a real dtype, a float
    out of an integer type's range (or NaN, inf); returns when every element fits."""
    integral = not (dt.is_floating_point or dt.is_complex or dt is _dtype.bool)
    if integral:
        info = np.iinfo(dt.np)
    for v in np.asarray(values, dtype=object).reshape(-1).tolist():
        if isinstance(v, builtins.float):
            if integral and not (math.isfinite(v) and info.min <= v <= info.max):
                raise RuntimeError(f"value cannot be converted to type {dt.name} without "
                                   "overflow")
        elif isinstance(v, builtins.int) or (
                dt.is_complex and isinstance(v, (numbers.Number, np.generic))):
            continue
        elif dt is _dtype.bool and isinstance(v, (numbers.Number, np.generic)):
            continue
        elif integral:
            from ._factory import tp_name

            raise TypeError(f"'{tp_name(v)}' object cannot be interpreted as an integer")
        elif not isinstance(v, (numbers.Real, np.generic)) or isinstance(v, builtins.complex):
            from ._factory import tp_name

            raise TypeError(f"must be real number, not {tp_name(v)}")


def _uint64_array(values) -> np.ndarray:
    """Python numbers as a uint64 array: PyTorch unpacks each as an unsigned 64-bit integer
    (Python ints and bools only; no negative or wrapped values)."""
    for v in np.asarray(values, dtype=object).reshape(-1).tolist():
        if v.__class__ is not builtins.int and v.__class__ is not builtins.bool:
            raise TypeError("an integer is required")
        if v < 0:
            raise OverflowError("can't convert negative int to unsigned")
        if v >> 64:
            raise OverflowError("int too big to convert")
    return np.array(values, dtype=np.uint64)


def data_to_array(data, dt: _dtype.dtype | None) -> np.ndarray:
    """Host array for ``tensor(data)``; ``dt`` None infers the dtype as PyTorch does."""
    if isinstance(data, np.ndarray):
        src = np_to_dtype(data)
        return np.array(data, dtype=(dt or src).np, copy=True)
    if isinstance(data, np.generic):
        src = np_to_dtype(np.asarray(data))
        if dt is not None and src.is_floating_point and not (
                dt.is_floating_point or dt.is_complex or dt is _dtype.bool):
            _raise_unpack_error([data.item()], dt)  # NaN, inf, out of range: PyTorch's error
        return np.array(data, dtype=(dt or src).np)
    if isinstance(data, str):
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    if _is_sequence(data):
        sizes = _sequence_sizes(data)
        if sizes[-1] == 0:  # no elements: PyTorch infers the dtype and checks no lengths
            return np.zeros(sizes, dtype=(dt or _leaf_dtype(data)).np)
        gather = _Gather(sizes)
        gather.walk(data, 0)
        target = dt or gather.dtype or _dtype.get_default_dtype()
        if not gather.flat:
            return np.zeros(sizes, dtype=target.np)
        return gather.array(target)
    if hasattr(data, "__array__") and not isinstance(data, numbers.Number):
        return data_to_array(np.asarray(data), dt)
    if dt is None:
        return _values_to_array(data, _leaf_dtype(data))
    if data.__class__ not in _PY_SCALARS:  # None, Fraction...: what PyTorch's unpacking takes
        _raise_unpack_error([data], dt)
    return _values_to_array(data, dt, data.__class__ is not builtins.int)
