"""Triangular solvers: ``solve_triangular`` (and ``torch.triangular_solve``), and the
Cholesky-based ``cholesky_solve`` / ``cholesky_inverse``.

NumPy has no triangular solver (LAPACK's trsm), so ``trsm`` below is one: blocked
substitution, vectorised over the batch, looping over rows in Python (never over batch
elements). Like LAPACK it reads only the triangle it is told to, and a zero on the diagonal
gives inf / nan instead of an error.
"""

from __future__ import annotations

import numpy as np

from .._device import check_same_device, xp_of
from .._tensor import _make
from ..autograd.graph import make_node_class, mark_holomorphic, record
from ._factories import sum_to_size
from ._inplace import accepts_out
from .linalg import broadcast_shapes_or_raise
from .linalg_common import (
    LinAlgError,
    batch_prefix,
    check_dims,
    check_equation_shapes,
    check_linear_solve,
    check_square,
    kernel_dtype,
    needs_grad,
)

__all__ = ["trsm", "solve_triangular", "triangular_solve", "cholesky_solve",
           "cholesky_inverse"]

#: rows solved by plain substitution before the rest of the right-hand side is updated by
#: one matrix product (LAPACK's blocked trsm)
_BLOCK = 32


def trsm(xp, A, B, upper: bool, unitriangular: bool = False):
    """The array ``X`` with ``A X = B`` for triangular ``A`` (..., n, n) and ``B`` (..., n, k),
    batches broadcast. Only the ``upper`` (or lower) triangle of ``A`` is read; with
    ``unitriangular`` its diagonal is taken as ones."""
    n = A.shape[-1]
    batch = np.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    X = xp.empty(batch + B.shape[-2:], dtype=B.dtype)
    if n == 0 or B.shape[-1] == 0:
        return X
    starts = list(range(0, n, _BLOCK))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for start in (reversed(starts) if upper else starts):
            stop = min(start + _BLOCK, n)
            rhs = B[..., start:stop, :]
            if upper and stop < n:
                rhs = rhs - A[..., start:stop, stop:] @ X[..., stop:, :]
            elif not upper and start:
                rhs = rhs - A[..., start:stop, :start] @ X[..., :start, :]
            _substitute(A, rhs, X, start, stop, upper, unitriangular)
    return X


def _substitute(A, rhs, X, start, stop, upper, unitriangular):
    """Rows ``start:stop`` of ``X`` by substitution inside the diagonal block."""
    rows = range(stop - 1, start - 1, -1) if upper else range(start, stop)
    for i in rows:
        r = rhs[..., i - start, :]
        done = slice(i + 1, stop) if upper else slice(start, i)
        if done.stop > done.start:
            r = r - (A[..., i, None, done] @ X[..., done, :])[..., 0, :]
        if not unitriangular:
            r = r / A[..., i, i, None]
        X[..., i, :] = r


# -- solve_triangular ------------------------------------------------------------------------

def _solve_triangular_bw(node, g):
    # PyTorch's linalg_solve_triangular_backward: gB = A^{-H} gX, gA = -gB X^H on A's triangle
    (A, B) = node.saved
    upper, left, unit = node.ctx
    X = node.output()
    gB = solve_triangular(A.mT, g, upper=not upper, left=left, unitriangular=unit)
    gA = None
    if A.requires_grad:
        gA = -gB.matmul(X.mT) if left else -X.mT.matmul(gB)
        gA = gA.triu(int(unit)) if upper else gA.tril(-int(unit))
        gA = sum_to_size(gA, A._data.shape)
    return gA, sum_to_size(gB, B._data.shape) if B.requires_grad else None


LinalgSolveTriangularBackward0 = make_node_class("LinalgSolveTriangularBackward0",
                                                 _solve_triangular_bw)
mark_holomorphic(LinalgSolveTriangularBackward0)  # complex: gB = A^{-H} gX, gA = -gB X^H


@accepts_out(dtype_rule="same")
def solve_triangular(input, B, *, upper, left=True, unitriangular=False, out=None):
    """The solution ``X`` of ``A X = B`` (``X A = B`` with ``left=False``) for a triangular
    ``A = input``: only its ``upper`` (or lower) triangle is read, its diagonal taken as ones with
    ``unitriangular``. Batches broadcast; ``B`` is cast to ``A``'s dtype, as in PyTorch."""
    A = input
    fn = "linalg.solve_triangular"
    ad, bd = A._data, B._data
    check_dims(ad, fn)
    check_dims(bd, fn, "B")
    check_square(ad, fn)
    check_equation_shapes(ad.shape[-1], bd, left, fn)
    broadcast_shapes_or_raise(ad.shape[:-2], bd.shape[:-2])
    kernel_dtype(A, "triangular_solve_cpu", complex_ok=True)
    check_same_device(A, B)
    if bd.dtype != ad.dtype:
        B = B.to(A.dtype)
        bd = B._data
    xp = xp_of(A)
    if left:
        x = trsm(xp, ad, bd, upper, unitriangular)
    else:  # X A = B  <=>  A^T X^T = B^T
        x = trsm(xp, ad.swapaxes(-1, -2), bd.swapaxes(-1, -2), not upper,
                 unitriangular).swapaxes(-1, -2)
    res = _make(x, A._device)
    if needs_grad(A, B):
        record(LinalgSolveTriangularBackward0, res, (A, B), (A, B), (upper, left, unitriangular),
               True)
    return res


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):
    """``torch.triangular_solve``: ``(solution, cloned_coefficient)`` for ``A X = b``
    (``A^T X = b`` with ``transpose``); the coefficient is ``A`` broadcast to the batch and
    copied. Deprecated in PyTorch in favour of ``solve_triangular``."""
    bd, ad = b._data, A._data
    for t, name in ((bd, "b"), (ad, "A")):
        if t.ndim < 2:
            raise RuntimeError(f"torch.triangular_solve: Expected {name} to have at least 2 "
                               f"dimensions, but it has {t.ndim} dimensions instead")
    check_linear_solve(bd, ad, "triangular_solve")
    batch = broadcast_shapes_or_raise(bd.shape[:-2], ad.shape[:-2])
    coef = A.expand(*batch, *ad.shape[-2:]) if ad.shape[:-2] != batch else A
    x = solve_triangular(A.mT if transpose else A, b, upper=upper != bool(transpose),
                         unitriangular=unitriangular)
    return x, coef.clone()


# -- cholesky_solve, cholesky_inverse --------------------------------------------------------

def _cholesky_solve_array(xp, L, B, upper):
    """``(L L^H)^{-1} B`` (``(U^H U)^{-1} B`` with ``upper``) in array code."""
    Lt = _adjoint(xp, L)
    if upper:
        return trsm(xp, L, trsm(xp, Lt, B, False), True)
    return trsm(xp, Lt, trsm(xp, L, B, False), True)


def _cholesky_solve_bw(node, g):
    # PyTorch's cholesky_solve_backward (the gradient of L is not projected on its triangle)
    B, L = node.saved
    upper = node.ctx
    X = node.output()
    gB = cholesky_solve(g, L, upper)
    gL = None
    if L.requires_grad:
        common = gB.matmul(X.mH)
        common = common + common.mH
        gL = -L.matmul(common) if upper else -common.matmul(L)
        gL = sum_to_size(gL, L._data.shape)
    return sum_to_size(gB, B._data.shape) if B.requires_grad else None, gL


CholeskySolveBackward0 = make_node_class("CholeskySolveBackward0", _cholesky_solve_bw)
CholeskySolveBackward0._complex = "own"  # PyTorch's formula, conjugate transposes included


def _adjoint(xp, a):
    """The conjugate transpose of the matrices of the array ``a``."""
    t = a.swapaxes(-1, -2)
    return xp.conj(t) if t.dtype.kind == "c" else t


@accepts_out
def cholesky_solve(B, L, upper=False, *, out=None):
    """The solution ``X`` of ``A X = B`` with ``A = L L^H`` given its Cholesky factor ``L``
    (``A = U^H U`` with ``upper``); batches broadcast."""
    bd, ld = B._data, L._data
    if bd.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {bd.ndim} dimensions "
                           "instead")
    if ld.ndim < 2:
        raise RuntimeError(f"u should have at least 2 dimensions, but has {ld.ndim} dimensions "
                           "instead")
    check_linear_solve(bd, ld, "cholesky_solve")
    broadcast_shapes_or_raise(bd.shape[:-2], ld.shape[:-2])
    kernel_dtype(L, "cholesky_solve_cpu", complex_ok=True)
    check_same_device(B, L)
    res = _make(_cholesky_solve_array(xp_of(L), ld, bd, upper), L._device)
    if needs_grad(B, L):
        record(CholeskySolveBackward0, res, (B, L), (B, L), bool(upper), True)
    return res


def _cholesky_inverse_bw(node, g):
    # PyTorch's cholesky_inverse_backward: gL = -(A^{-1} (g + g^H) A^{-1}) L
    (L,) = node.saved
    upper = node.ctx
    inverse = node.output()
    common = inverse.matmul((g + g.mH).matmul(inverse))
    return (-L.matmul(common) if upper else -common.matmul(L),)


CholeskyInverseBackward0 = make_node_class("CholeskyInverseBackward0", _cholesky_inverse_bw)
CholeskyInverseBackward0._complex = "own"


@accepts_out
def cholesky_inverse(L, upper=False, *, out=None):
    """The inverse of ``A = L L^H`` (``U^H U`` with ``upper``) from its Cholesky factor;
    ``LinAlgError`` when a diagonal element of the factor is zero."""
    fn = "cholesky_inverse"
    ld = L._data
    check_dims(ld, fn)
    check_square(ld, fn)
    kernel_dtype(L, "cholesky_inverse_out_cpu", complex_ok=True)
    xp = xp_of(L)
    n = ld.shape[-1]
    diag = ld.diagonal(0, -2, -1)
    zero = diag == 0
    if n and bool(zero.any()):
        flat = zero.reshape(-1, n)
        first = int(xp.argmax(flat.any(-1)))
        k = int(xp.argmax(flat[first])) + 1
        raise LinAlgError(f"{fn}: {batch_prefix(L, first)}The diagonal element {k} is zero, the "
                          "inversion could not be completed because the input matrix is "
                          "singular.")
    eye = xp.broadcast_to(xp.eye(n, dtype=ld.dtype), ld.shape)
    # A^{-1} = L^{-H} L^{-1} (lower) or U^{-1} U^{-H} (upper)
    inv_factor = trsm(xp, ld, eye, bool(upper))
    if upper:
        r = inv_factor @ _adjoint(xp, inv_factor)
    else:
        r = _adjoint(xp, inv_factor) @ inv_factor
    res = _make(r, L._device)
    if needs_grad(L):
        record(CholeskyInverseBackward0, res, (L,), (L,), bool(upper), True)
    return res
