"""More ways to make a tensor, beside ``_factory``: ``scalar_tensor``, ``empty_permuted``, and
the tensors over outside memory, ``frombuffer`` (a Python buffer) and ``from_file`` (a
memory-mapped file)."""

from __future__ import annotations

import numbers
import operator
import os
import warnings

import numpy as np

from . import _dtype
from . import _memory_format as _mf
from ._device import resolve_device
from ._factory import _dtype_or_default, empty, finish, full, refuse_layout, sparse_layout
from ._tensor import Tensor, _make

__all__ = ["scalar_tensor", "empty_permuted", "frombuffer", "from_file"]


def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory: bool = False,
                  requires_grad: bool = False) -> Tensor:
    """A 0-dim tensor holding the number ``s``, of the default float dtype unless given."""
    if isinstance(s, Tensor):
        s = s.item()
    if not isinstance(s, (numbers.Number, np.generic)):
        raise TypeError(f"scalar_tensor(): argument 's' (position 1) must be Number, not "
                        f"{type(s).__name__}")
    sparse_layout(layout, "scalar_tensor")  # checked; a sparse one is ignored, as PyTorch's
    return full((), s, dtype=_dtype_or_default(dtype), device=device,
                requires_grad=requires_grad)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """An uninitialised, dense tensor of ``size`` whose dims lie in memory in the order
    ``physical_layout`` (outermost first): ``(0, 2, 3, 1)`` is NHWC for an NCHW ``size``.
    Its strides satisfy ``t.stride(physical_layout[i]) == contiguous_strides[i]``."""
    size = tuple(operator.index(s) for s in size)
    order = tuple(operator.index(p) for p in physical_layout)
    n = len(size)
    if len(order) != n:
        raise RuntimeError("Number of dimensions in size does not match the length of the "
                           f"physical_layout; i.e. len(size) = {n} is not equal to "
                           f"len(physical_layout) = {len(order)}")
    seen = set()
    for i, p in enumerate(order):
        if not 0 <= p < n:
            raise RuntimeError(f"Dimension out of range (expected to be between 0 and {n - 1}, "
                               f"but got {p} at index {i}).  NB: negative dims not currently "
                               "supported; file an issue if you want it.")
        if p in seen:
            raise RuntimeError("Duplicate dim not allowed")
        seen.add(p)
    refuse_layout(layout, "empty_permuted", device)
    physical = empty(tuple(size[p] for p in order), dtype=dtype, device=device)
    out = _make(physical._data.transpose(_mf.inverse(order)), physical._device)
    return finish(out, requires_grad)


_warned_readonly = [False]


def frombuffer(buffer, *, dtype, count: int = -1, offset: int = 0,
               requires_grad: bool = False) -> Tensor:
    """A 1-D CPU tensor over the memory of a Python buffer (``bytearray``, ``array``,
    ``memoryview``, ...): ``count`` elements of ``dtype`` (all that fit when -1) after
    ``offset`` bytes. The tensor and the buffer share memory.

    A read-only buffer (``bytes``) gives a read-only tensor: PyTorch writes into such memory
    anyway, Ember refuses in-place ops on it (and warns once, as PyTorch does).
    """
    dt = _dtype.to_dtype(dtype, "frombuffer")
    try:
        view = memoryview(buffer)
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    length = view.nbytes
    item = dt.itemsize
    count, offset = operator.index(count), operator.index(offset)
    if length <= 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({length} bytes) minus 1")
    if count < 0 and (length - offset) % item:
        raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} "
                         f"bytes) must be a multiple of element size ({item})")
    n = (length - offset) // item if count < 0 else count
    if offset + n * item > length:
        raise ValueError(f"requested buffer length ({n} * {item} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({length} bytes)")
    arr = np.frombuffer(view, dtype=dt.np, count=n, offset=offset)
    if not arr.flags.writeable:
        from ._settings import is_warn_always_enabled

        if is_warn_always_enabled() or not _warned_readonly[0]:
            _warned_readonly[0] = True
            warnings.warn("The given buffer is not writable: the tensor shares its memory "
                          "read-only, and in-place operations on it will raise. You may want "
                          "to copy the buffer to protect its data or make it writable before "
                          "converting it to a tensor. This type of warning will be suppressed "
                          "for the rest of this program.", UserWarning, stacklevel=2)
    return finish(_make(arr, resolve_device("cpu")), requires_grad)


def from_file(filename, shared=None, size: int = 0, *, dtype=None, layout=None, device=None,
              pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """A 1-D CPU tensor of ``size`` elements over a memory-mapped file.

    ``shared=True`` maps the file shared: writes to the tensor go to the file, which is
    created (or grown) to ``size`` elements when needed. Otherwise the mapping is private
    (copy-on-write) and the file must hold ``size`` elements already.
    """
    dt = _dtype_or_default(dtype)
    dev = resolve_device("cpu" if device is None else device)  # CPU memory, whatever the default
    if dev.type != "cpu":
        raise RuntimeError("from_file: only CPU tensors can be mapped to files, got device "
                           f"{dev}")
    n = operator.index(size)
    nbytes = n * dt.itemsize
    path = os.fspath(filename)
    if shared:
        if not os.path.exists(path) or os.path.getsize(path) < nbytes:
            with open(path, "ab") as fh:
                fh.truncate(max(nbytes, fh.tell()))
    elif not os.path.exists(path):
        raise RuntimeError(f"unable to open file <{path}> in read-only mode: No such file or "
                           "directory (2)")
    elif os.path.getsize(path) < nbytes:
        raise RuntimeError(f"file <{path}> size <{os.path.getsize(path)}> is smaller than the "
                           f"required mapping size <{nbytes}>")
    if n == 0:
        return finish(empty(0, dtype=dt), requires_grad)
    mapped = np.memmap(path, dtype=dt.np, mode="r+" if shared else "c", shape=(n,))
    return finish(_make(mapped.view(np.ndarray), dev), requires_grad)
