"""In-place resizes of compressed sparse tensors (CSR, CSC, BSR, BSC), as PyTorch's:
``resize_as_sparse_`` and, for CSR and CSC, ``resize_`` / ``resize_as_``.

``resize_as_sparse_(self, src)`` (both of one compressed layout) gives ``self`` the size of
``src`` and, when the sizes differ, ``src``'s indices; the values keep their leading elements
(in memory order, as PyTorch's storage resize does) up to ``src``'s number of values. PyTorch
leaves the rest uninitialised, Ember zero-fills it; and where PyTorch would keep ``self``'s
compressed indices beside ``src``'s number of elements (same size, another ``nnz``: not a
valid tensor), Ember takes ``src``'s indices too.

``resize_(rows, cols)`` of a CSR tensor is PyTorch's ``SparseCsrTensorImpl::resize_``: more
rows are empty rows; fewer rows keep the first ``min(nnz, rows * cols)`` elements, those of the
removed rows counted in the last row kept; the columns may only grow. A CSC tensor may only
grow (PyTorch's CSC resize writes compressed indices of the wrong length).
"""

from __future__ import annotations

import math

import numpy as np

from .._device import xp_of
from .._layout import sparse_coo, sparse_csc, sparse_csr
from .._sparse_tensor import _LAYOUT_WORDS, _SparseData, is_sparse
from .._tensor import Tensor, _make
from ..autograd.grad_mode import GRAD

__all__ = ["resize_as_sparse_compressed_", "resize_compressed_"]


def _layout_word(t) -> str:
    if is_sparse(t):
        return _LAYOUT_WORDS[t._layout]
    return "Strided" if isinstance(t, Tensor) else type(t).__name__


def _compressed(t) -> bool:
    return is_sparse(t) and t._layout is not sparse_coo


def _check_leaf(self) -> None:
    vals = self._vals
    if GRAD.enabled and vals.requires_grad and vals.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")


def _resized_values(vals: Tensor, shape: tuple) -> Tensor:
    """``vals`` resized to ``shape`` as a storage is: the leading elements in memory order
    kept, the rest zero."""
    if tuple(vals._data.shape) == shape:
        return vals
    xp = xp_of(vals._device)
    old = vals._data.reshape(-1)
    new = xp.zeros(math.prod(shape), dtype=old.dtype)
    n = min(old.shape[0], new.shape[0])
    new[:n] = old[:n]
    return _make(new.reshape(shape), vals._device)


def resize_as_sparse_compressed_(self, src):
    """``self.resize_as_sparse_(src)`` for compressed tensors (see the module doc)."""
    for name, t in (("src", src), ("self", self)):
        if not _compressed(t):
            raise RuntimeError(f"resize_as_sparse_compressed_: {name}  expected sparse "
                               f"compressed tensor layout but got {_layout_word(t)}")
    _check_leaf(self)
    if self._idx.shape[0] > 2 or src._idx.shape[0] > 2:
        raise RuntimeError("resize_as_sparse_: Ember does not resize batched compressed tensors in "
                           "place; build a new one")
    if self._layout is not src._layout:
        raise RuntimeError("resize_as_sparse_compressed_tensor_: self and src must have the "
                           f"same layout, but got: self ({_LAYOUT_WORDS[self._layout]}) and "
                           f"source ({_LAYOUT_WORDS[src._layout]})")
    if self._data.shape != src._data.shape or self._idx.shape != src._idx.shape:
        self._idx = src._idx.copy()
        self._coalesced = src._coalesced
    self._vals = _resized_values(self._vals, tuple(src._vals._data.shape))
    self._data = _SparseData(tuple(src._data.shape), self._vals._data.dtype, self._device,
                             self._layout)
    self._cache = {}
    self._bump_version()
    return self


def resize_compressed_(self, size):
    """``self.resize_(size)`` for a CSR or CSC tensor (see the module doc)."""
    shape = tuple(int(n) for n in size)
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if any(n < 0 for n in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{min(shape)}: [{', '.join(map(str, shape))}]")
    if len(shape) < 2:
        raise RuntimeError("torch.resize_: Only batched sparse CSR matrices are supported, but "
                           f"got size [{', '.join(map(str, shape))}]")
    old = self._data.shape
    if shape[-1] < old[-1]:
        raise RuntimeError("torch.resize_: Resizing columns of sparse CSR tensors to a smaller "
                           f"value is not supported. The original number of columns is "
                           f"{old[-1]} while the requested new number of columns is "
                           f"{shape[-1]}.")
    if self._layout not in (sparse_csr, sparse_csc):
        raise RuntimeError(f"resize_: Ember resizes CSR and CSC tensors in place, not "
                           f"{_LAYOUT_WORDS[self._layout]} ones (PyTorch's result is not a "
                           "valid block tensor); build a new one")
    if len(shape) != 2 or self._data.ndim != 2:
        raise RuntimeError(f"resize_: Ember resizes 2-D {_LAYOUT_WORDS[self._layout]} tensors "
                           f"in place, not size [{', '.join(map(str, self._data.shape))}] to "
                           f"[{', '.join(map(str, shape))}]")
    rows, cols = shape
    nnz = self._idx.shape[1]
    if self._layout is sparse_csc:
        if rows < old[0]:
            raise RuntimeError("resize_: Resizing rows of sparse CSC tensors to a smaller value "
                               f"is not supported. The original number of rows is {old[0]} "
                               f"while the requested new number of rows is {rows}.")
    elif rows < old[0]:  # the first elements, the removed rows' counted in the last row kept
        keep = min(nnz, rows * cols)
        xp = xp_of(self._device)
        crow = self.crow_indices()._data[:rows + 1].copy()
        crow[rows] = keep
        row = xp.searchsorted(crow, xp.arange(keep, dtype=np.int64), side="right") - 1
        idx = xp.stack((row.astype(np.int64, copy=False), self._idx[1][:keep]))
        ordered = True
        if keep > 1:
            same = idx[0][1:] == idx[0][:-1]
            ordered = not bool(xp.any(same & (idx[1][1:] <= idx[1][:-1])))
        self._idx = idx
        self._vals = _make(self._vals._data[:keep].copy(), self._device)
        self._coalesced = ordered
    self._data = _SparseData(shape, self._vals._data.dtype, self._device, self._layout)
    self._cache = {}
    self._bump_version()
    return self
