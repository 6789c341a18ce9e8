"""Batched CSR tensors, as PyTorch's: a CSR tensor of size ``(*batch, R, C)`` whose
``crow_indices()`` is ``(*batch, R + 1)``, ``col_indices()`` and ``values()`` ``(*batch, nnz)``:
every batch holds the same number ``nnz`` of elements (``_nnz()``).

Ember keeps one coordinate per stored element, as for its other compressed tensors: ``_idx`` is
``(len(batch) + 2, B * nnz)`` (the batch indices, the row, the column), in batch-major,
row-major order, and ``_vals`` the ``B * nnz`` values (``values()`` is their ``(*batch, nnz)``
view). So ``to_dense()``, ``to_sparse_coo()`` (a COO tensor with the batch dimensions sparse, as
PyTorch's), the element-wise ops, sums of all elements, ``sparse_mask``, clones, moves and
pickling are the 2-D code unchanged; this module makes them (``sparse_csr_tensor`` with batched
parts, ``to_sparse_csr()`` of a dense tensor of three or more dimensions), gives their parts,
selects a batch (``b[i]``: a CSR tensor) and multiplies them with dense tensors (``b @ d``: one
product of the block-diagonal matrix of the batches, differentiable in the values and ``d``;
PyTorch's CPU build has no such kernel).
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype
from .._device import check_same_device, xp_of
from .._layout import sparse_coo, sparse_csr
from .._sparse_tensor import (
    _index_tensor,
    _named,
    _RowPlan,
    is_sparse,
    make_sparse,
    spmm_plan,
)
from .._tensor import Tensor

__all__ = ["batch_ndim", "is_batched", "csr_tensor", "dense_to_csr", "from_coo", "nnz",
           "crow_indices", "col_indices", "values", "select_batch", "matmul"]


def batch_ndim(s) -> int:
    """The number of batch dimensions of a compressed tensor (0 but for a batched CSR one)."""
    return s._idx.shape[0] - 2 if s._layout is not sparse_coo else 0


def is_batched(s) -> bool:
    return s._layout is sparse_csr and s._idx.shape[0] > 2


def _batch(s) -> tuple:
    return tuple(s._data.shape[:batch_ndim(s)])


def nnz(s) -> int:
    """The number of elements of each batch."""
    return s._idx.shape[1] // math.prod(_batch(s))


def _flat_batch(idx, batch: tuple, xp):
    """The row-major number of the batch of each element (``idx``: its batch indices)."""
    lin = xp.zeros(idx.shape[1], dtype=np.int64)
    for d, size in enumerate(batch):
        lin *= size
        lin += idx[d]
    return lin


def crow_indices(s) -> Tensor:
    """``(*batch, R + 1)``: each batch's compressed row pointers."""
    crow = s._cache.get("crow")
    if crow is None:
        xp = xp_of(s._device)
        batch = _batch(s)
        b, r = math.prod(batch), s._data.shape[-2]
        lin = _flat_batch(s._idx, batch, xp) * r + s._idx[-2]
        starts = (xp.arange(b, dtype=np.int64)[:, None] * r +
                  xp.arange(r + 1, dtype=np.int64)[None, :])
        crow = xp.searchsorted(lin, starts.reshape(-1), side="left").reshape(b, r + 1)
        crow = (crow - xp.arange(b, dtype=np.int64)[:, None] * nnz(s)).astype(np.int64)
        crow = s._cache["crow"] = crow.reshape(batch + (r + 1,))
    return _index_tensor(crow, s._device)


def col_indices(s) -> Tensor:
    """``(*batch, nnz)``: the column of each element."""
    return _index_tensor(s._idx[-1].reshape(_batch(s) + (nnz(s),)), s._device)


def values(s) -> Tensor:
    """``(*batch, nnz)``: the values (a differentiable view of the stored ones)."""
    return s._vals.reshape(_batch(s) + (nnz(s),))


def _elements(crow, counts_shape: tuple, xp):
    """``(batch number, row)`` of each element of compressed row pointers ``crow`` ``(B, R+1)``,
    in batch-major, row-major order."""
    b, r1 = counts_shape
    counts = (crow[:, 1:] - crow[:, :-1]).reshape(-1)
    rows = xp.repeat(xp.tile(xp.arange(r1 - 1, dtype=np.int64), b), counts)
    per_batch = crow[:, -1]
    batches = xp.repeat(xp.arange(b, dtype=np.int64), per_batch)
    return batches, rows


def _unflatten(lin, batch: tuple, xp) -> list:
    """The batch indices (one array per batch dimension) of row-major batch numbers."""
    out = []
    for size in reversed(batch):
        out.append(lin % size)
        lin = lin // size
    return out[::-1]


def _invariant_error(text: str) -> RuntimeError:
    return RuntimeError(f"`{text}` is not satisfied.")


def csr_tensor(crow, col, vals: Tensor, size, requires_grad: bool):
    """``sparse_csr_tensor`` of batched parts (tensors on one device; ``crow`` and ``col``
    int64): PyTorch's checks (with ``check_invariants=True``: Ember always checks)."""
    from ..ops.sparse_ops import _autograd_values

    cnd, pnd = crow._data.ndim, col._data.ndim
    if pnd != cnd:
        raise RuntimeError(f"crow_indices and col_indices dimensionalities must be equal but got "
                           f"{cnd} and {pnd}, respectively")
    nb = cnd - 1
    dense_ndim = vals._data.ndim - nb - 1
    if dense_ndim < 0:
        raise RuntimeError("values must have dimensionality > sum of batch and block "
                           f"dimensionalities (={nb} + 0) but got {vals._data.ndim}")
    if size is not None:
        shape = tuple(int(n) for n in size)
        if len(shape) != nb + 2 + dense_ndim:
            raise RuntimeError("tensor dimensionality must be sum of batch, base, and dense "
                               f"dimensionalities (={nb} + 2 + {dense_ndim}) but got "
                               f"{len(shape)}")
        batch = shape[:nb]
    else:
        batch = tuple(crow._data.shape[:nb])
    parts = (crow._data.shape[:nb], col._data.shape[:nb], vals._data.shape[:nb])
    if any(tuple(p) != batch for p in parts):
        words = [f"[{', '.join(map(str, p))}]" for p in (*parts, batch)]
        raise RuntimeError(f"all batch dimensions of crow_indices (={words[0]}), col_indices "
                           f"(={words[1]}), and values (={words[2]}) must be equal to tensor "
                           f"batch dimensions (={words[3]})")
    if dense_ndim:
        raise RuntimeError("sparse_csr_tensor: Ember's batched CSR tensors have scalar values "
                           f"(no dense dimensions), got {dense_ndim}")
    if not math.prod(batch):
        raise RuntimeError("sparse_csr_tensor: Ember's batched CSR tensors have a non-zero "
                           "number of batches")
    n = col._data.shape[-1]
    if vals._data.shape[-1] != n:
        raise RuntimeError(f"col_indices.shape[-1] must be equal to nnz (={vals._data.shape[-1]})"
                           f" as defined by values.shape[{nb}], but got {n}")
    rows = crow._data.shape[-1] - 1
    if rows < 0:
        raise RuntimeError("crow_indices must have at least one element")
    host_c = crow._host().reshape(-1, rows + 1).astype(np.int64)
    host_p = col._host().reshape(-1, n).astype(np.int64)
    if size is None:
        shape = batch + (rows, int(host_p.max()) + 1 if host_p.size else 0)
    elif shape[-2] != rows:
        raise RuntimeError(f"crow_indices.shape[-1] must be equal to the number of rows + 1 "
                           f"(={shape[-2] + 1}), but got {rows + 1}")
    ncols = shape[-1]
    if np.any(host_c[:, 0] != 0):
        raise _invariant_error("crow_indices[..., 0] == 0")
    if np.any(host_c[:, -1] != n):
        raise _invariant_error("crow_indices[..., -1] == nnz")
    step = np.diff(host_c, axis=1)
    if step.size and (step.min() < 0 or step.max() > ncols):
        raise _invariant_error("0 <= crow_indices[..., 1:] - crow_indices[..., :-1] <= ncols")
    if host_p.size and (host_p.min() < 0 or host_p.max() >= ncols):
        raise _invariant_error("0 <= col_indices < ncols")
    if n > 1:
        owner = np.repeat(np.tile(np.arange(rows), host_c.shape[0]), step.reshape(-1))
        owner = owner.reshape(-1, n)
        if np.any((owner[:, 1:] == owner[:, :-1]) & (host_p[:, 1:] <= host_p[:, :-1])):
            raise _invariant_error("col_indices[..., crow_indices[..., i - 1]:crow_indices[..., "
                                   "i]] for all i = 1, ..., nrows are sorted and distinct along "
                                   "the last dimension values")
    xp = xp_of(vals._device)
    b = math.prod(batch)
    bnum, row = _elements(crow._data.reshape(b, rows + 1), (b, rows + 1), xp)
    idx = xp.stack(_unflatten(bnum, batch, xp) + [row, col._data.reshape(-1)]).astype(np.int64)
    flat = _autograd_values(vals.reshape(-1), requires_grad, "SparseCompressedTensorBackward0")
    return make_sparse(idx, flat, shape, coalesced=True, layout=sparse_csr)


def _same_nnz(counts, xp) -> None:
    if counts.shape[0] and bool(xp.any(counts != counts[0])):
        raise RuntimeError("Expect the same number of specified elements per batch.")


def dense_to_csr(x: Tensor):
    """``x.to_sparse_csr()`` of a dense tensor of three or more dimensions: the nonzero
    elements of each matrix ``x[b]`` (every batch must hold as many)."""
    shape = tuple(x._data.shape)
    batch = shape[:-2]
    b = math.prod(batch)
    if not b:
        raise RuntimeError("to_sparse_csr: Expected product of batch dimensions to be "
                           "non-zero.")
    xp = xp_of(x)
    mask = x._data != 0
    _same_nnz(mask.reshape(b, -1).sum(axis=1), xp)
    idx = xp.stack(xp.nonzero(mask)).astype(np.int64, copy=False)
    values = x[tuple(_index_tensor(i, x._device) for i in idx)]
    return make_sparse(idx, _named(values, "ToSparseCsrBackward0"), shape, coalesced=True,
                       layout=sparse_csr)


def from_coo(c, like):
    """The COO tensor ``c`` (of ``like``'s size) as a batched CSR tensor like ``like``: every
    batch must hold as many elements (after coalescing)."""
    c = c.coalesce()
    xp = xp_of(c._device)
    batch = _batch(like)
    counts = xp.bincount(_flat_batch(c._idx, batch, xp), minlength=math.prod(batch))
    _same_nnz(counts, xp)
    return make_sparse(c._idx, c._vals, c._data.shape, coalesced=True, layout=sparse_csr)


def select_batch(s, dim: int, index: int):
    """``s.select(dim, index)`` for a batch dimension ``dim``: a CSR tensor (batched while
    batch dimensions are left)."""
    xp = xp_of(s._device)
    keep = xp.nonzero(s._idx[dim] == index)[0]
    rest = [d for d in range(s._idx.shape[0]) if d != dim]
    idx = s._idx[rest][:, keep]
    values = s._vals.index_select(0, _index_tensor(keep, s._device))
    shape = s._data.shape[:dim] + s._data.shape[dim + 1:]
    return make_sparse(idx, _named(values, "SelectBackward0"), shape, coalesced=s._coalesced,
                       layout=sparse_csr)


def matmul(s, other, name: str):
    """``s @ other`` for a batched CSR ``s`` and a dense ``other`` of size ``(*batch, C, N)``
    or ``(C, N)``: the dense ``(*batch, R, N)``, as one product of the block-diagonal matrix of
    the batches with the stacked right-hand sides."""
    if name != "matmul":  # mm, smm, sparse.mm: matrices only, as PyTorch's
        raise RuntimeError(f"mat1 must be a matrix, got {s._data.ndim}-D tensor")
    if not isinstance(other, Tensor) or is_sparse(other):
        raise RuntimeError(f"{name}: Ember multiplies batched CSR tensors with dense tensors "
                           "only")
    check_same_device(s, other)
    batch = _batch(s)
    r, c = s._data.shape[-2:]
    shape = tuple(other._data.shape)
    if len(shape) not in (2, len(batch) + 2) or shape[-2] != c or \
            (len(shape) > 2 and shape[:-2] != batch):
        raise RuntimeError(f"{name}: a batched CSR tensor of size {list(s._data.shape)} cannot "
                           f"be multiplied with a dense tensor of size {list(shape)} (expected "
                           f"{list(batch) + [c, 'N']} or {[c, 'N']})")
    if other._data.dtype != s._data.dtype:
        raise RuntimeError(f"expected scalar type {_dtype.scalar_type_name(s._data.dtype)} "
                           f"but found {_dtype.scalar_type_name(other._data.dtype)}")
    b, n = math.prod(batch), shape[-1]
    plan = s._cache.get("batched rows")
    if plan is None:
        xp = xp_of(s._device)
        lin = _flat_batch(s._idx, batch, xp)
        plan = s._cache["batched rows"] = _RowPlan(lin * r + s._idx[-2], lin * c + s._idx[-1],
                                                   (b * r, b * c), s._device)
    dense = other.expand(batch + (c, n)).reshape(b * c, n)
    return spmm_plan(plan, s._vals, dense).reshape(batch + (r, n))
