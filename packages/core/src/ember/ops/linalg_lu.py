"""LU factorization with partial pivoting and what is built on it: ``lu_factor(_ex)``,
``lu``, ``lu_unpack``, ``lu_solve``, ``solve_ex``.

``getrf`` is LAPACK's getrf in array code: a right-looking blocked LU, vectorised over the
batch (Python loops run over columns only). Its output is LAPACK's (and PyTorch's) packed
format: ``U`` on and above the diagonal, the unit-diagonal ``L`` below it, and 1-based int32
pivots (row ``i`` was swapped with row ``pivots[i]``). The backwards are PyTorch's
(``linalg_lu_backward``), written with differentiable ops so that double backward works.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype
from .._device import check_same_device, xp_of
from .._dtype import scalar_type_name
from .._tensor import _make
from ..autograd.graph import make_node_class, mark_holomorphic, record
from ._inplace import accepts_out
from .linalg import _list_str, broadcast_shapes_or_raise
from .linalg_common import (
    LinAlgError,
    LinalgLuFactorExResult,
    LinalgLuFactorResult,
    LinalgLuResult,
    LinalgSolveExResult,
    LuUnpackResult,
    batch_prefix,
    cat,
    check_dims,
    check_equation_shapes,
    check_square,
    const,
    flatten_batch,
    kernel_dtype,
    multi_ctx,
    needs_grad,
    record_multi,
    saved_outputs,
)
from .linalg_triangular import solve_triangular, trsm

__all__ = ["getrf", "lu_factor", "lu_factor_ex", "lu", "lu_unpack", "lu_solve", "solve_ex",
           "permutation_matrix"]

#: columns factored one by one before the trailing matrix is updated by one product
_BLOCK = 32


# -- the array kernel ------------------------------------------------------------------------

def getrf(xp, a, pivot: bool = True):
    """Factor ``a`` (batch, m, n), a float array, in place: ``a = P L U``. Returns the
    1-based int32 pivots (batch, min(m, n)) and LAPACK's ``info`` (batch,): the 1-based index
    of the first zero on U's diagonal, 0 when there is none."""
    nb, m, n = a.shape
    k = min(m, n)
    piv = xp.empty((nb, k), dtype=np.int32)
    info = xp.zeros(nb, dtype=np.int32)
    rows = xp.arange(nb)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for j0 in range(0, k, _BLOCK):
            j1 = min(j0 + _BLOCK, k)
            for j in range(j0, j1):
                _eliminate_column(xp, a, piv, info, rows, j, j1, pivot)
            if j1 < n:  # U12 = L11^{-1} A12, then A22 -= L21 U12
                a[:, j0:j1, j1:] = trsm(xp, a[:, j0:j1, j0:j1], a[:, j0:j1, j1:], False, True)
                if j1 < m:
                    a[:, j1:, j1:] -= a[:, j1:, j0:j1] @ a[:, j0:j1, j1:]
    return piv, info


def _eliminate_column(xp, a, piv, info, rows, j, j1, pivot):
    """Step ``j`` of the panel that ends at column ``j1``: pivot, scale, update the panel."""
    m = a.shape[1]
    if pivot:
        col = a[:, j:, j]
        # LAPACK's i?amax: |x| for real numbers, |Re x| + |Im x| for complex ones
        mag = xp.abs(col.real) + xp.abs(col.imag) if col.dtype.kind == "c" else xp.abs(col)
        p = j + xp.argmax(mag, axis=1)
        piv[:, j] = p + 1
        row_j = a[rows, j].copy()  # swap whole rows, as getrf's laswp does
        a[rows, j] = a[rows, p]
        a[rows, p] = row_j
    else:
        piv[:, j] = j + 1
    d = a[:, j, j]
    zero = d == 0
    info[...] = xp.where((info == 0) & zero, j + 1, info)
    if j + 1 == m:
        return
    if pivot:  # a zero pivot means a zero column below it: LAPACK leaves it as it is
        scale = xp.where(zero, 1, 1 / xp.where(zero, 1, d)).astype(a.dtype)
    else:
        scale = 1 / d
    a[:, j + 1:, j] *= scale[:, None]
    if j + 1 < j1:
        a[:, j + 1:, j + 1:j1] -= a[:, j + 1:, j, None] * a[:, j, None, j + 1:j1]


def permutation_order(xp, piv, m: int):
    """The row order of ``P^T A`` (batch, m) for LAPACK pivots ``piv`` (batch, k)."""
    nb, k = piv.shape
    perm = xp.broadcast_to(xp.arange(m), (nb, m)).copy()
    rows = xp.arange(nb)
    for i in range(k):
        p = piv[:, i].astype(np.int64) - 1
        at_i = perm[:, i].copy()
        perm[:, i] = perm[rows, p]
        perm[rows, p] = at_i
    return perm


def permutation_matrix(xp, piv, m: int, dtype):
    """The permutation matrices ``P`` (batch..., m, m) with ``A = P L U`` for pivots
    ``piv`` (batch..., k)."""
    batch = piv.shape[:-1]
    order = permutation_order(xp, flatten_batch(piv, 1), m)
    pt = xp.eye(m, dtype=dtype)[order]  # row i of P^T is e_{order[i]}
    return pt.swapaxes(-1, -2).reshape(batch + (m, m))


# -- checks ----------------------------------------------------------------------------------

def _check_lu_input(A, fn: str) -> None:
    d = A._data
    if d.ndim < 2:
        raise RuntimeError(f"{fn}: Expected tensor with 2 or more dimensions. Got size: "
                           f"{_list_str(d.shape)} instead")
    kernel_dtype(A, "lu_cpu", complex_ok=True)


def _factor_arrays(A, pivot: bool):
    """``(LU, pivots, info)`` arrays of ``A`` (any batch shape)."""
    d = A._data
    xp = xp_of(A)
    m, n = d.shape[-2:]
    batch = d.shape[:-2]
    a = flatten_batch(d).copy()
    piv, info = getrf(xp, a, pivot)
    return (a.reshape(d.shape), piv.reshape(batch + (min(m, n),)), info.reshape(batch))


def _zero_pivot_error(A, info, fn: str) -> RuntimeError:
    """PyTorch's error: a plain RuntimeError, not a LinAlgError."""
    flat = info.reshape(-1)
    i = int(xp_of(A).argmax(flat != 0))
    k = int(flat[i])
    return RuntimeError(f"{fn}: {batch_prefix(A, i)}U[{k},{k}] is zero and using it on lu_solve "
                       "would result in a division by zero. If you still want to perform the "
                       "factorization, consider calling linalg.lu(A, pivot) or "
                       "linalg.lu_factor_ex(A, pivot)")


# -- backward (PyTorch's linalg_lu_backward) -------------------------------------------------

def lu_backward(gL, gU, P, L, U):
    """The gradient of ``A = P L U`` given those of ``L`` (m, k) and ``U`` (k, n); ``P`` is a
    constant, or None without pivoting. Either gradient may be None."""
    m, n = L._data.shape[-2], U._data.shape[-1]
    k = min(m, n)
    if m == n:
        # gA = P L^{-H} [L^H gL o 1_L + gU U^H o 1_U] U^{-H}
        gA = _add(None if gL is None else L.mT.matmul(gL).tril(-1),
                  None if gU is None else gU.matmul(U.mT).triu())
        gA = solve_triangular(U.mT, gA, upper=False, left=False)
        gA = solve_triangular(L.mT, gA, upper=True, unitriangular=True)
    elif m < n:  # wide: A = P L [U1 | U2]
        U1 = U.narrow(-1, 0, k)
        gA = _add(None if gL is None else L.mT.matmul(gL),
                  None if gU is None else -gU.triu().matmul(U.mT))
        gA = solve_triangular(U1.mT, gA.tril(-1), upper=False, left=False)
        if gU is not None:
            gA = cat([gA + gU.narrow(-1, 0, k).triu(), gU.narrow(-1, k, n - k)], -1)
        gA = solve_triangular(L.mT, gA, upper=True, unitriangular=True)
        if gU is None:
            gA = cat([gA, _zeros_like(U.narrow(-1, k, n - k))], -1)
    else:  # tall: A = P [L1; L2] U
        L1 = L.narrow(-2, 0, k)
        gA = _add(None if gU is None else gU.matmul(U.mT),
                  None if gL is None else -L.mT.matmul(gL.tril(-1)))
        gA = solve_triangular(L1.mT, gA.triu(), upper=True, unitriangular=True)
        if gL is not None:
            gA = cat([gA + gL.narrow(-2, 0, k).tril(-1), gL.narrow(-2, k, m - k)], -2)
        gA = solve_triangular(U.mT, gA, upper=False, left=False)
        if gL is None:
            gA = cat([gA, _zeros_like(L.narrow(-2, k, m - k))], -2)
    return gA if P is None else P.matmul(gA)


def _add(a, b):
    if a is None:
        return b
    return a if b is None else a + b


def _zeros_like(t):
    return const(t, xp_of(t).zeros(t._data.shape, dtype=t._data.dtype))


def _unpack_tensors(LU, k):
    """``L`` (m, k) and ``U`` (k, n) from the packed ``LU``, as differentiable ops."""
    m, n = LU._data.shape[-2:]
    L = LU.narrow(-1, 0, k).tril(-1) + const(LU, xp_of(LU).eye(m, k, dtype=LU._data.dtype))
    U = LU.narrow(-2, 0, k).triu()
    return L, U


def _lu_factor_bw(node, g):
    piv, pivot = node.ctx
    LU = node.output()
    m, n = LU._data.shape[-2:]
    k = min(m, n)
    L, U = _unpack_tensors(LU, k)
    P = const(LU, permutation_matrix(xp_of(LU), piv, m, LU._data.dtype)) if pivot else None
    return (lu_backward(g.narrow(-1, 0, k), g.narrow(-2, 0, k), P, L, U),)


LinalgLuFactorExBackward0 = make_node_class("LinalgLuFactorExBackward0", _lu_factor_bw)


def _lu_bw(node, grads):
    _, gL, gU = grads
    p = multi_ctx(node)
    _, L, U = saved_outputs(node)
    return (lu_backward(gL, gU, None if p is None else const(L, p), L, U),)


LinalgLuBackward0 = make_node_class("LinalgLuBackward0", _lu_bw, n_out=3)
# A = P L U is holomorphic and lu_backward linear in the gradients (transposes, triangular
# solves): for complex numbers, conj(backward(conj(g))) is PyTorch's formula with A^H
mark_holomorphic(LinalgLuFactorExBackward0, LinalgLuBackward0)


# -- lu_factor, lu_factor_ex, lu -------------------------------------------------------------

def _lu_factor_ex(A, pivot, check_errors, fn):
    _check_lu_input(A, "torch.lu_factor")  # PyTorch's name in this check, whichever the caller
    lu_a, piv, info = _factor_arrays(A, pivot)
    if check_errors and info.size and bool((info != 0).any()):
        raise _zero_pivot_error(A, info, fn)
    LU = _make(lu_a, A._device)
    if needs_grad(A):
        record(LinalgLuFactorExBackward0, LU, (A,), (), (piv.copy(), pivot), True)
    return LU, _make(piv, A._device), _make(info, A._device)


@accepts_out(dtype_rule="same")
def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """``(LU, pivots, info)``: the packed LU factorization of ``A`` with partial pivoting
    (LAPACK getrf's format, 1-based int32 pivots) and getrf's ``info`` (0: success, k: U[k,k]
    is zero). Batches of rectangular matrices are fine."""
    return LinalgLuFactorExResult(*_lu_factor_ex(A, pivot, check_errors,
                                                 "torch.linalg.lu_factor_ex"))


@accepts_out(dtype_rule="same")
def lu_factor(A, *, pivot=True, out=None):
    """``(LU, pivots)`` of ``A`` (see ``lu_factor_ex``); raises when U has a zero on its
    diagonal, as ``lu_solve`` would divide by it."""
    LU, piv, _ = _lu_factor_ex(A, pivot, True, "torch.linalg.lu_factor")
    return LinalgLuFactorResult(LU, piv)


@accepts_out(dtype_rule="same")
def lu(A, *, pivot=True, out=None):
    """``(P, L, U)`` with ``A = P L U``: ``L`` (m, k) unit lower triangular, ``U`` (k, n)
    upper triangular, ``k = min(m, n)``. Without ``pivot``, ``P`` is empty."""
    _check_lu_input(A, "linalg.lu")
    lu_a, piv, _ = _factor_arrays(A, pivot)
    xp = xp_of(A)
    m, n = lu_a.shape[-2:]
    k = min(m, n)
    dt = lu_a.dtype
    lower = xp.tril(lu_a[..., :, :k], -1) + xp.eye(m, k, dtype=dt)
    upper = xp.triu(lu_a[..., :k, :])
    p = permutation_matrix(xp, piv, m, dt) if pivot else xp.zeros((0,), dtype=dt)
    P, L, U = (_make(x, A._device) for x in (p, lower, upper))
    if needs_grad(A):
        record_multi(LinalgLuBackward0, (None, L, U), (A,), (), p.copy() if pivot else None)
    return LinalgLuResult(P, L, U)


# -- lu_unpack -------------------------------------------------------------------------------

def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """``(P, L, U)`` from the packed output of ``lu_factor``; ``L`` and ``U`` (empty unless
    ``unpack_data``) are differentiable functions of ``LU_data``, ``P`` (empty unless
    ``unpack_pivots``) is not."""
    d, pd = LU_data._data, LU_pivots._data
    if d.ndim < 2:
        raise RuntimeError(f"torch.lu_unpack: Expected tensor with 2 or more dimensions. Got "
                           f"size: {_list_str(d.shape)} instead")
    if pd.dtype != np.int32:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of "
                           "torch.int32 dtype.\nNote: this function is intended to be used with "
                           "the output produced by torch.linalg.lu_factor")
    m, n = d.shape[-2:]
    k = min(m, n)
    if pd.shape[:-1] != d.shape[:-2] or pd.ndim == 0 or pd.shape[-1] > k:
        raise RuntimeError(f"torch.lu_unpack: Expected LU_pivots of shape "
                           f"{_list_str(d.shape[:-2] + (k,))}, but got {_list_str(pd.shape)}")
    check_same_device(LU_data, LU_pivots)
    xp = xp_of(LU_data)
    empty = _make(xp.zeros((0,), dtype=d.dtype), LU_data._device)
    P = empty
    if unpack_pivots:
        if pd.size and bool(((pd < 1) | (pd > m)).any()):
            raise RuntimeError("pivots passed to lu_unpack must be between 1 and LU.size(-2) "
                               "inclusive.Did you properly pass the result of lu_factor?")
        P = _make(permutation_matrix(xp, pd, m, d.dtype), LU_data._device)
    L = U = empty
    if unpack_data:
        L, U = _unpack_tensors(LU_data, k)
    return LuUnpackResult(P, L, U)


# -- lu_solve, solve_ex ----------------------------------------------------------------------

def _check_lu_solve(LU, pivots, B, left):
    fn = "linalg.lu_solve"
    ld, pd, bd = LU._data, pivots._data, B._data
    check_dims(ld, f"torch.{fn}")
    check_dims(bd, fn, "B")
    if ld.dtype not in _dtype.FLOATING_NP and ld.dtype not in _dtype.COMPLEX_NP:
        raise RuntimeError(f"torch.{fn}: Expected a floating point or complex tensor as input. "
                           f"Got {scalar_type_name(ld.dtype)}")
    check_square(ld, f"torch.{fn}")
    n = ld.shape[-1]
    if bd.dtype != ld.dtype:
        raise RuntimeError(f"{fn}: Expected LU and B to have the same dtype, but found LU of type "
                           f"{scalar_type_name(ld.dtype)} and B of type "
                           f"{scalar_type_name(bd.dtype)} instead")
    if pd.dtype != np.int32:
        raise RuntimeError(f"{fn}: pivots should be a Tensor of scalar type torch.int32")
    if pd.ndim == 0 or pd.shape[-1] != n:
        raise RuntimeError(f"{fn}: Number of pivots per batch should be same as the dimension of "
                           "the matrix")
    if pd.shape != ld.shape[:-1]:
        raise RuntimeError(f"{fn}: Expected LU.shape[:-1] and pivots.shape to be the same, but "
                           f"got pivots with shape {_list_str(pd.shape)} instead")
    check_equation_shapes(n, bd, left, fn)
    batch = broadcast_shapes_or_raise(ld.shape[:-2], bd.shape[:-2])
    check_same_device(LU, pivots, B)
    if math.prod(batch) * bd.shape[-2] * bd.shape[-1]:  # PyTorch returns an empty X unchecked
        _check_pivot_range(pd, n)
    kernel_dtype(LU, f"{fn}_cpu", complex_ok=True)  # the kernel's dispatch error comes last


def _check_pivot_range(pd, n: int) -> None:
    """PyTorch's sanity check on the pivots handed to ``lu_solve`` (1-based, at most n),
    which LAPACK would otherwise follow out of the matrix."""
    if pd.size and not bool((pd > 0).all()):
        raise RuntimeError("Pivots given to lu_solve must all be greater or equal to 1. Did you "
                           "properly pass the result of lu_factor?")
    if pd.size and not bool((pd <= n).all()):
        raise RuntimeError("Pivots given to lu_solve must all be smaller or equal to LU.size(-2). "
                           "Did you properly pass the result of lu_factor?")


def _lu_solve_left(LU, P, B, adjoint):
    if not adjoint:  # X = U^{-1} L^{-1} P^T B
        Y = solve_triangular(LU, P.mT.matmul(B), upper=False, unitriangular=True)
        return solve_triangular(LU, Y, upper=True)
    # A^H = U^H L^H P^T:  X = P L^{-H} U^{-H} B
    Y = solve_triangular(LU.mH, B, upper=False)
    return P.matmul(solve_triangular(LU.mH, Y, upper=True, unitriangular=True))


@accepts_out(dtype_rule="same")
def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """The solution ``X`` of ``A X = B`` given the LU factorization of ``A``
    (``lu_factor``'s output); ``left=False`` solves ``X A = B``, ``adjoint`` uses ``A^H``.
    Batches broadcast; differentiable in ``LU`` and ``B``."""
    _check_lu_solve(LU, pivots, B, left)
    P = const(LU, permutation_matrix(xp_of(LU), pivots._data, LU._data.shape[-1],
                                     LU._data.dtype))
    if left:
        return _lu_solve_left(LU, P, B, adjoint)
    # X A = B  <=>  A^H X^H = B^H;  X A^H = B  <=>  A X^H = B^H
    return _lu_solve_left(LU, P, B.mH, not adjoint).mH


@accepts_out(dtype_rule="same")
def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """``(result, info)``: ``linalg.solve`` that reports a singular ``A`` in ``info`` (the
    index of the zero on U's diagonal, as ``lu_factor_ex``) instead of raising, unless
    ``check_errors``."""
    from .linalg_decompositions import solve

    try:
        x = solve(A, B, left=left)
    except LinAlgError as e:
        if check_errors:
            raise LinAlgError(str(e).replace("torch.linalg.solve:", "torch.linalg.solve_ex:",
                                             1)) from None
    else:
        info = xp_of(A).zeros(A._data.shape[:-2], dtype=np.int32)
        return LinalgSolveExResult(x, _make(info, A._device))
    # singular: LAPACK's gesv result (inf / nan where it divides by the zero pivot)
    LU, piv, info = lu_factor_ex(A)
    vector = left and (B._data.ndim == 1 or (B._data.ndim == A._data.ndim - 1 and
                                             B._data.shape == A._data.shape[:-1]))
    Bm = B.unsqueeze(-1) if vector else B
    batch = broadcast_shapes_or_raise(LU._data.shape[:-2], Bm._data.shape[:-2])
    if LU._data.shape[:-2] != batch:
        LU = LU.expand(*batch, *LU._data.shape[-2:])
        piv = piv.expand(*batch, piv._data.shape[-1])
    x = lu_solve(LU, piv, Bm, left=left)
    if vector:
        x = x.squeeze(-1)
    return LinalgSolveExResult(x, info)
