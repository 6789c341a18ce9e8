"""``ember.sparse.mm(mat1, mat2, reduce)``: the product of a 2-D CSR ``mat1`` and a dense
``mat2`` whose products along each row are combined by ``reduce`` instead of summed, as
PyTorch's ``_sparse_mm_reduce_impl`` (CPU, CSR only):
``out[i, j] = reduce(mat1[i, k] * mat2[k, j] for the stored k of row i)``, zero for a row
with no stored element. ``"sum"``, ``"mean"`` (over the stored elements of the row),
``"amax"``/``"max"`` and ``"amin"``/``"min"`` (where products tie, the first stored element
wins the gradient; a NaN product wins over numbers, as PyTorch's).

Differentiable in ``mat1``'s values and ``mat2``, written with Tensor ops on the values, so
higher-order gradients come too (PyTorch stops at the first)."""

from __future__ import annotations

import numpy as np

from .. import _dtype
from .._device import check_same_device, xp_of
from .._layout import sparse_coo, sparse_csr
from .._sparse_tensor import (
    _LAYOUT_WORDS,
    _named,
    _spmm_backward,
    is_sparse,
    row_plan,
    spmm_plan,
)
from .._tensor import Tensor, _make
from ..autograd.graph import make_node_class

#: PyTorch's names of the reductions (``max``/``min`` are aliases)
_REDUCTIONS = {"sum": "sum", "mean": "mean", "amax": "amax", "max": "amax", "amin": "amin",
               "min": "amin"}
#: the dtypes of PyTorch's ``spmm_reduce_kernel``
_KERNEL_NP = frozenset((np.dtype(np.float16), _dtype.BFLOAT16_NP, np.dtype(np.float32),
                        np.dtype(np.float64)))


SparseMmReduceImplBackward0 = make_node_class("SparseMmReduceImplBackward0", _spmm_backward)


def _legacy_name(t: Tensor) -> str:
    legacy = _dtype.legacy_type_name(t._data.dtype)
    dev = t._device.type
    if legacy is None:
        return f"{dev.upper()}{_dtype.scalar_type_name(t._data.dtype)}Type"
    return f"ember.{legacy}" if dev == "cpu" else f"ember.{dev}.{legacy}"


def _check(mat1, mat2, reduce: str, no_backend) -> str:
    """PyTorch's checks in its order; the reduction's canonical name."""
    if not is_sparse(mat1) or mat1.layout is sparse_coo:
        raise no_backend("_sparse_mm_reduce_impl", mat1)
    if mat1.layout is not sparse_csr:
        raise RuntimeError(f"sparse_mm_reduce: expect self to be SparseCsr, got "
                           f"{_LAYOUT_WORDS[mat1.layout]}")
    if mat1._data.ndim != 2 and mat1._idx.shape[0] != 2:  # batched
        raise RuntimeError(f"sparse_mm_reduce: expected self to be a 2-D tensor, got "
                           f"{mat1._data.ndim}-D tensor.")
    if mat1._data.ndim != 2:
        raise RuntimeError("sparse_mm_reduce: expected non-hybrid self tensor.")
    if is_sparse(mat2):
        raise RuntimeError(f"Expected tensor to have Strided Layout, but got tensor with "
                           f"{_LAYOUT_WORDS[mat2.layout]} Layout (while checking arguments for "
                           "sparse_mm_reduce)")
    if mat2._data.dtype != mat1._data.dtype:
        raise RuntimeError(f"Expected tensor for argument #1 'other' to have scalar type "
                           f"{_dtype.scalar_type_name(mat1._data.dtype)}; but got "
                           f"{_legacy_name(mat2)} instead (while checking arguments for "
                           "sparse_mm_reduce)")
    k = mat1._data.shape[1]
    if not mat2._data.ndim:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    if mat2._data.ndim != 2 or mat2._data.shape[0] != k:
        raise RuntimeError(f"Expected a tensor of dimension 2 and tensor.size[0] == {k} but "
                           f"got: dimension {mat2._data.ndim} and tensor.size[0] = "
                           f"{mat2._data.shape[0]}")
    op = _REDUCTIONS.get(reduce)
    if op is None:
        if reduce == "prod":
            raise RuntimeError("sparse_mm_reduce: reduce type of prod has not been enabled.")
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    if mat1._data.dtype not in _KERNEL_NP:
        raise NotImplementedError(f'"spmm_reduce_kernel" not implemented for '
                                  f"'{_dtype.scalar_type_name(mat1._data.dtype)}'")
    check_same_device(mat1, mat2)
    return op


def _extreme(plan, values: Tensor, mat2: Tensor, op: str) -> Tensor:
    """The row-wise ``amax``/``amin`` of the products: each output element is the product of
    its winning stored element (a gather, so the gradient reaches that element only)."""
    from ..ops.indexing import ufunc_at

    xp = xp_of(values._device)
    rows_t, cols_t = plan.tensors()
    prod = mat2.index_select(0, cols_t) * values.unsqueeze(1)
    p = prod._data
    nnz, n = p.shape
    m = plan.shape[0]
    top = xp.full((m, n), -np.inf if op == "amax" else np.inf, dtype=p.dtype)
    ufunc_at(xp, "maximum" if op == "amax" else "minimum", top, plan.rows, p)
    at = top[plan.rows]
    wins = (p == at) | (xp.isnan(p) & xp.isnan(at))
    first = xp.full((m, n), nnz, dtype=np.int64)
    ufunc_at(xp, "minimum", first, plan.rows,
             xp.where(wins, xp.arange(nnz, dtype=np.int64)[:, None], nnz))
    cells = xp.nonzero((first < nnz).reshape(-1))[0]  # the output elements of nonempty rows
    winner = first.reshape(-1)[cells] * n + cells % n  # their products' flat positions
    from .._factory import zeros

    out = zeros((m * n,), dtype=values.dtype, device=values._device)
    picked = prod.reshape(-1).index_select(0, _make(winner, values._device))
    return out.index_add(0, _make(cells, values._device), picked).reshape(m, n)


def mm_reduce(mat1, mat2, reduce: str, no_backend) -> Tensor:
    """``ember.sparse.mm(mat1, mat2, reduce)`` (see the module doc); ``no_backend`` makes
    PyTorch's dispatcher error for a dense or COO ``mat1``."""
    op = _check(mat1, mat2, reduce, no_backend)
    plan, values = row_plan(mat1)
    if op == "sum" or not plan.rows.shape[0] or not mat2._data.shape[1]:
        return spmm_plan(plan, values, mat2, SparseMmReduceImplBackward0)
    if op == "mean":
        xp = xp_of(values._device)
        count = xp.bincount(plan.rows, minlength=plan.shape[0])
        scale = (1.0 / xp.maximum(count, 1)).astype(values._data.dtype)[:, None]
        out = spmm_plan(plan, values, mat2) * _make(scale, values._device)
    else:
        out = _extreme(plan, values, mat2, op)
    return _named(out, "SparseMmReduceImplBackward0")
