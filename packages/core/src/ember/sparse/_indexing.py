"""Indexing sparse tensors, as PyTorch's: ``s[i]`` (integers, ``...``, ``None`` and full
slices), ``select``, ``index_select``, ``narrow_copy`` and ``unsqueeze`` of COO tensors, and
``select`` / ``s[i]`` of CSR, CSC, BSR and BSC tensors (a COO result; of a block tensor, every
element of the blocks on the line, zeros included, as PyTorch's ``select_copy``: its ``select``
refuses where the result cannot be a view of the blocks; a batch dimension selects a tensor of
the same layout, and so does a dense dimension of a hybrid one, as in PyTorch).

Every result is a gather of the stored elements (the indices that match, the values at them),
so it is differentiable in the values; the indices, their order and the coalesced flags are
PyTorch's: a new COO tensor is flagged coalesced only when it holds fewer than two elements
(``narrow_copy`` keeps its input's flag; a compressed tensor's ``select`` is coalesced), and
``index_select`` lists its matches as PyTorch's kernel does (by position in ``index`` when
``nnz >= len(index)``, else by stored element).
"""

from __future__ import annotations

import numpy as np

from .._device import check_same_device, xp_of
from .._format import shape_str
from .._layout import sparse_coo
from .._sparse_tensor import (
    _LAYOUT_WORDS,
    _index_tensor,
    _named,
    _no_backend,
    is_sparse,
    make_sparse,
)
from .._tensor import Tensor
from ..ops._promotion import wrap_dim

__all__ = ["select", "index_select", "narrow_copy", "unsqueeze", "getitem"]


def _size_str(s) -> str:
    return f"[{shape_str(s._data.shape)}]"


def _no_strides(s) -> RuntimeError:
    """PyTorch's error for a strided-only operation on a compressed tensor."""
    word = _LAYOUT_WORDS[s._layout].removeprefix("Sparse").upper()
    return RuntimeError(f"Sparse {word} tensors do not have strides")


def select(s, dim, index):
    """``s.select(dim, index)``: the elements at ``index`` along ``dim``, that dimension
    removed; dense once no sparse dimension is left (duplicates summed), as PyTorch's."""
    ndim = s._data.ndim
    if ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    dim = wrap_dim(dim, ndim)
    index = int(index)
    size = s._data.shape[dim]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{_size_str(s)} at dimension {dim}")
    if index < 0:
        index += size
    nb = s._idx.shape[0] - 2 if s._layout is not sparse_coo else 0
    if dim < nb:  # a batch of a batched compressed tensor: that layout (ember.sparse._batched)
        from ._batched import select_batch

        return select_batch(s, dim, index)
    if s._layout is not sparse_coo and dim >= nb + 2:  # a dense dim: the values', same layout
        from ._compressed import BLOCK

        values = s._vals.select(dim - nb - 1 + (2 if s._layout in BLOCK else 0), index)
        shape = s._data.shape[:dim] + s._data.shape[dim + 1:]
        return make_sparse(s._idx, _named(values, "SelectBackward0"), shape,
                           coalesced=s._coalesced, layout=s._layout)
    if nb:
        raise RuntimeError("select(): selecting sparse dimensions is not supported for batched "
                           "sparse compressed tensors.")
    if s._layout is not sparse_coo:  # a line of the 2-D pattern (of its blocks' elements)
        out = select(s.to_sparse_coo().coalesce(), dim, index)
        if is_sparse(out):  # sorted and distinct
            out._coalesced = True
        return out
    sd = s._idx.shape[0]
    shape = s._data.shape[:dim] + s._data.shape[dim + 1:]
    if dim < sd:
        xp = xp_of(s._device)
        keep = xp.nonzero(s._idx[dim] == index)[0]
        values = s._vals.index_select(0, _index_tensor(keep, s._device))
        if sd == 1:  # no sparse dimension left: the (summed) dense part
            out = values[0] if keep.shape[0] == 1 else values.sum(0).to(values.dtype)
            return _named(out, "SelectBackward0")
        rest = [d for d in range(sd) if d != dim]
        idx = s._idx[rest][:, keep]
    else:
        values = s._vals.select(dim - sd + 1, index)
        idx = s._idx
    return make_sparse(idx, _named(values, "SelectBackward0"), shape,
                       coalesced=idx.shape[1] < 2)


def _matches(inner, outer, xp):
    """The pairs ``(i, j)`` with ``inner[i] == outer[j]``, ordered by ``j`` and then ``i``:
    ``(inner positions, outer positions)``."""
    order = xp.argsort(inner, kind="stable")
    ordered = inner[order]
    lo = xp.searchsorted(ordered, outer, side="left")
    counts = xp.searchsorted(ordered, outer, side="right") - lo
    total = int(counts.sum()) if counts.shape[0] else 0
    outer_pos = xp.repeat(xp.arange(outer.shape[0], dtype=np.int64), counts)
    starts = xp.cumsum(counts) - counts
    offsets = xp.arange(total, dtype=np.int64) - starts[outer_pos] + lo[outer_pos]
    return order[offsets], outer_pos


def index_select(s, dim, index):
    """``s.index_select(dim, index)``: the slices at the positions ``index`` (a 1-D int64
    tensor, negative positions counted from the end; repeats repeat) along ``dim``."""
    ndim = s._data.ndim
    if ndim == 0:
        raise IndexError("index_select() cannot be applied to a 0-dim tensor.")
    if not isinstance(index, Tensor) or is_sparse(index) or index._data.ndim != 1 or \
            index._data.dtype != np.int64:
        raise IndexError("index_select() argument index must be 1-D strided (non-sparse) "
                         "long-tensor.")
    dim = wrap_dim(dim, ndim)
    if s._layout is not sparse_coo:
        raise _no_backend("index_select", s)
    check_same_device(s, index)
    xp = xp_of(s._device)
    a = index._data
    n = a.shape[0]
    size = s._data.shape[dim]
    shape = list(s._data.shape)
    shape[dim] = n
    sd = s._idx.shape[0]
    if dim >= sd:  # a dense dimension: the values' own
        bad = (a < 0) | (a >= size)
        if n and bool(bad.any()):
            raise RuntimeError(f"index {int(a[int(xp.argmax(bad))])} is out of bounds for "
                               f"dimension {dim - sd + 1} with size {size}")
        values = s._vals.index_select(dim - sd + 1, index)
        return make_sparse(s._idx, _named(values, "IndexSelectBackward0"), tuple(shape),
                           coalesced=s._idx.shape[1] < 2)
    bad = (a < -size) | (a >= size)
    if n and bool(bad.any()):
        raise IndexError(f"index_select(): index contains {int(a[int(xp.argmax(bad))])} that "
                         f"is out of range for tensor of size {_size_str(s)} at dimension "
                         f"{dim}")
    a = xp.where(a < 0, a + size, a)
    at = s._idx[dim]
    if at.shape[0] >= n:  # PyTorch's loop over index, then over the elements
        elems, pos = _matches(at, a, xp)
    else:  # over the elements, then over index
        pos, elems = _matches(a, at, xp)
    idx = s._idx[:, elems]
    idx[dim] = pos
    values = s._vals.index_select(0, _index_tensor(elems, s._device))
    return make_sparse(idx, _named(values, "IndexSelectBackward0"), tuple(shape),
                       coalesced=idx.shape[1] < 2)


def narrow_copy(s, dim, start, length):
    """``s.narrow_copy(dim, start, length)``: the elements with ``start <= i < start + length``
    along ``dim`` (shifted by ``start``), with ``s``'s coalesced flag."""
    ndim = s._data.ndim
    dim, start, length = int(dim), int(start), int(length)
    if s._layout is not sparse_coo:
        raise _no_strides(s)
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if not 0 <= dim < ndim:
        raise RuntimeError(f"Dimension {dim} out of range. Expecting 0 <= dim < {ndim}.")
    size = s._data.shape[dim]
    end = start + length
    if start < 0 or end > size:
        raise RuntimeError("Invalid range to narrow. range(start, start+length) must be a "
                           f"subset of range(0, {size}).")
    shape = list(s._data.shape)
    shape[dim] = length
    sd = s._idx.shape[0]
    if dim < sd:
        xp = xp_of(s._device)
        at = s._idx[dim]
        keep = xp.nonzero((at >= start) & (at < end))[0]
        idx = s._idx[:, keep]
        idx[dim] -= start
        values = s._vals.index_select(0, _index_tensor(keep, s._device))
    else:
        idx = s._idx
        values = s._vals.narrow_copy(dim - sd + 1, start, length)
    return make_sparse(idx, _named(values, "NarrowCopyBackward0"), tuple(shape),
                       coalesced=s._coalesced)


def unsqueeze(s, dim):
    """``s.unsqueeze(dim)``: a size-one dimension inserted (a sparse one, index 0, at or
    before the last sparse dimension; else a dense one)."""
    if s._layout is not sparse_coo:
        raise _no_strides(s)
    ndim = s._data.ndim
    dim = wrap_dim(dim, ndim + 1)
    sd = s._idx.shape[0]
    shape = s._data.shape[:dim] + (1,) + s._data.shape[dim:]
    if dim <= sd:
        xp = xp_of(s._device)
        zero = xp.zeros((1, s._idx.shape[1]), dtype=np.int64)
        idx = xp.concatenate((s._idx[:dim], zero, s._idx[dim:]), axis=0)
        values = s._vals
    else:
        idx = s._idx
        values = s._vals.unsqueeze(dim - sd + 1)
    return make_sparse(idx, _named(values, "UnsqueezeBackward0"), shape,
                       coalesced=idx.shape[1] < 2)


def _index_error(kind: str) -> IndexError:
    return IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                      f"Variables are valid indices (got {kind})")


def _no_index_kernel(s, kernel: str) -> NotImplementedError:
    return _no_backend(kernel, s)


def _normalized(s, key) -> list:
    items = []
    for k in key if isinstance(key, tuple) else (key,):
        if k is None or k is Ellipsis or isinstance(k, slice):
            items.append(k)
        elif isinstance(k, (bool, np.bool_)):
            raise _no_index_kernel(s, "index.Tensor")
        elif isinstance(k, (int, np.integer)):
            items.append(int(k))
        elif isinstance(k, Tensor):
            if is_sparse(k) or k._data.ndim or k._data.dtype.kind not in "iu":
                raise _no_index_kernel(s, "index.Tensor")
            items.append(int(k.item()))
        elif isinstance(k, (list, np.ndarray)):
            raise _no_index_kernel(s, "index.Tensor")
        else:
            raise _index_error(type(k).__name__)
    if sum(k is Ellipsis for k in items) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    return items


def getitem(s, key):
    """``s[key]``: integers select (``select``), ``None`` inserts a dimension (``unsqueeze``),
    ``...`` and full slices (``:``) keep dimensions; once no sparse dimension is left the rest
    of the key indexes the dense result. Other slices and tensor indices are PyTorch's
    errors."""
    items = _normalized(s, key)
    ndim = s._data.ndim
    specified = sum(k is not None and k is not Ellipsis for k in items)
    if specified > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    cur, dim, real = s, 0, 0  # real: the dimension of ``s`` the item indexes (for errors)
    for pos, k in enumerate(items):
        if not is_sparse(cur):
            return cur[(slice(None),) * dim + tuple(items[pos:])]
        if k is Ellipsis:
            dim += ndim - specified
            real += ndim - specified
        elif k is None:
            cur = unsqueeze(cur, dim)
            dim += 1
        elif isinstance(k, slice):
            size = cur._data.shape[dim]
            if k.step is not None and k.step <= 0:
                raise ValueError("step must be greater than zero")
            if k.indices(size) != (0, size, 1):
                if cur._layout is not sparse_coo:
                    raise _no_strides(cur)
                raise _no_index_kernel(cur, "as_strided")
            dim += 1
            real += 1
        else:
            size = cur._data.shape[dim]
            if not -size <= k < size:
                raise IndexError(f"index {k} is out of bounds for dimension {real} with size "
                                 f"{size}")
            cur = select(cur, dim, k)
            real += 1
    return cur
