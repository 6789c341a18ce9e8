"""Batched sparse compressed tensors (CSR, CSC, BSR, BSC of size ``(*batch, M, N)``, as
PyTorch's; stored as ``ember.sparse._compressed`` describes): selecting a batch (``b[i]``,
``b.select(0, i)``: a compressed tensor of the same layout) and products with dense tensors
(``b @ d``: one product of the block-diagonal matrix of the batches with the stacked
right-hand sides, differentiable in the values and ``d``; PyTorch's CPU build has no such
kernel, its CUDA one is ``bmm``).
"""

from __future__ import annotations

import math

from .. import _dtype
from .._device import check_same_device, xp_of
from .._layout import sparse_csr
from .._sparse_tensor import _index_tensor, _named, _RowPlan, is_sparse, make_sparse, spmm_plan
from .._tensor import Tensor
from ._compressed import BLOCK, batch_ndim, dense_ndim, flat_batch

__all__ = ["select_batch", "matmul"]


def select_batch(s, dim: int, index: int):
    """``s.select(dim, index)`` for a batch dimension ``dim`` (``index`` in range): a
    compressed tensor of ``s``'s layout (batched while batch dimensions are left)."""
    xp = xp_of(s._device)
    keep = xp.nonzero(s._idx[dim] == index)[0]
    rest = [d for d in range(s._idx.shape[0]) if d != dim]
    idx = s._idx[rest][:, keep]
    values = s._vals.index_select(0, _index_tensor(keep, s._device))
    shape = s._data.shape[:dim] + s._data.shape[dim + 1:]
    return make_sparse(idx, _named(values, "SelectBackward0"), shape, coalesced=s._coalesced,
                       layout=s._layout)


def _row_plan(s, batch: tuple):
    """``(plan, order)``: the row plan of the block-diagonal matrix of the batches of a
    batched CSR or CSC ``s`` and the permutation of the values into its (row-major) order
    (None for CSR, whose elements are in it already)."""
    cached = s._cache.get("batched rows")
    if cached is None:
        xp = xp_of(s._device)
        r, c = s._data.shape[-2:]
        lin = flat_batch(s._idx, batch, xp)
        rows, cols = lin * r + s._idx[-2], lin * c + s._idx[-1]
        order = None
        if s._layout is not sparse_csr:
            perm = xp.argsort(rows, kind="stable")
            rows, cols, order = rows[perm], cols[perm], _index_tensor(perm, s._device)
        b = math.prod(batch)
        cached = s._cache["batched rows"] = (_RowPlan(rows, cols, (b * r, b * c), s._device),
                                             order)
    return cached


def matmul(s, other, name: str):
    """``s @ other`` for a compressed ``s`` with batch (or dense) dimensions: for a batched
    ``s`` of size ``(*batch, R, C)`` and a dense ``other`` of size ``(*batch, C, N)`` or
    ``(C, N)`` the dense ``(*batch, R, N)``. ``ember.mm`` and ``sparse.mm`` take matrices only
    (PyTorch's "mat1 must be a matrix"); hybrid tensors (with dense dimensions) do not
    multiply, as in PyTorch."""
    from ._blocks import block_mm

    if name != "matmul":  # mm, smm, addmm, sparse.mm: matrices only, as PyTorch's
        raise RuntimeError(f"mat1 must be a matrix, got {s._data.ndim}-D tensor")
    if dense_ndim(s):
        raise RuntimeError(f"{name}: sparse compressed tensors with dense dimensions (hybrid) "
                           "do not multiply, as in PyTorch; convert with to_dense() first")
    if not isinstance(other, Tensor) or is_sparse(other):
        raise RuntimeError(f"{name}: Ember multiplies batched compressed tensors with dense "
                           "tensors only")
    check_same_device(s, other)
    nb = batch_ndim(s)
    batch = tuple(s._data.shape[:nb])
    r, c = s._data.shape[nb:nb + 2]
    shape = tuple(other._data.shape)
    if len(shape) not in (2, nb + 2) or shape[-2] != c or \
            (len(shape) > 2 and shape[:-2] != batch):
        raise RuntimeError(f"{name}: a batched sparse tensor of size {list(s._data.shape)} "
                           f"cannot be multiplied with a dense tensor of size {list(shape)} "
                           f"(expected {list(batch) + [c, 'N']} or {[c, 'N']})")
    if other._data.dtype != s._data.dtype:
        raise RuntimeError(f"expected scalar type {_dtype.scalar_type_name(s._data.dtype)} "
                           f"but found {_dtype.scalar_type_name(other._data.dtype)}")
    b, n = math.prod(batch), shape[-1]
    dense = other.expand(batch + (c, n))
    if s._layout in BLOCK:
        return block_mm(s, dense)
    plan, order = _row_plan(s, batch)
    values = s._vals if order is None else s._vals.index_select(0, order)
    return spmm_plan(plan, values, dense.reshape(b * c, n)).reshape(batch + (r, n))
