"""LDL^T factorization of symmetric matrices with Bunch-Kaufman pivoting: ``ldl_factor(_ex)``
and ``ldl_solve``, in LAPACK's sytrf / sytrs format (the lower triangle, as PyTorch uses).
Complex matrices are factored as symmetric (``A = L D L^T``, zsytrf) or, with
``hermitian=True``, as Hermitian (``A = L D L^H``, zhetrf: the imaginary parts of A's diagonal
are ignored, D's 1x1 blocks are real and its 2x2 blocks Hermitian); pivots are chosen by
LAPACK's ``|Re z| + |Im z|``.

``LD`` holds the unit lower triangular ``L`` below the diagonal and the block diagonal ``D``
(1x1 and 2x2 blocks) on the diagonal and the first subdiagonal; its strict upper triangle is
zero. ``pivots`` (1-based int32): ``pivots[k] > 0`` is a 1x1 block at k, rows and columns k
and ``pivots[k]`` swapped; ``pivots[k] = pivots[k+1] < 0`` is a 2x2 block at k, k+1, rows and
columns k+1 and ``-pivots[k]`` swapped.

Batch elements pick 1x1 or 2x2 blocks independently, so the kernels walk the columns in
lock step: at column k an element either starts a block there or is inside the 2x2 block it
started at k-1 (and waits). Every step is vectorised over the batch.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype
from .._device import check_same_device, xp_of
from .._dtype import scalar_type_name
from .._tensor import _make
from ._inplace import accepts_out
from .linalg import _list_str, broadcast_shapes_or_raise
from .linalg_common import (
    LinAlgError,
    LinalgLdlFactorExResult,
    LinalgLdlFactorResult,
    batch_prefix,
    check_dims,
    check_float,
    check_linear_solve,
    check_square,
    complex_own,
    flatten_batch,
    kernel_dtype,
    not_differentiable,
    record_not_differentiable,
)

__all__ = ["sytrf_lower", "sytrs_lower", "ldl_factor", "ldl_factor_ex", "ldl_solve"]

#: Bunch-Kaufman's threshold (1 + sqrt(17)) / 8, which bounds the growth of the entries
_ALPHA = (1 + math.sqrt(17.0)) / 8


def _cabs1(xp, z):
    """LAPACK's ``|Re z| + |Im z|`` (``|z|`` for real numbers), by which pivots are chosen."""
    return xp.abs(z.real) + xp.abs(z.imag) if z.dtype.kind == "c" else xp.abs(z)


def _symmetrize_from_lower(xp, block, herm=False):
    """``block`` (batch, p, p) made symmetric (Hermitian with ``herm``, its diagonal then
    real) from its lower triangle, in place."""
    lower = xp.tril(block)
    upper = xp.tril(block, -1).swapaxes(-1, -2)
    block[...] = lower + (upper.conj() if herm else upper)
    if herm:
        _real_diagonal(xp, block)


def _real_diagonal(xp, block):
    """Drop the imaginary parts of the diagonal of ``block`` (batch, p, p), in place."""
    p = block.shape[-1]
    idx = xp.arange(p)
    block[:, idx, idx] = block[:, idx, idx].real


def sytrf_lower(xp, a, hermitian=False):
    """Bunch-Kaufman LDL^T of the lower triangles of ``a`` (batch, n, n), LAPACK dsytf2's
    steps (zsytf2's for complex numbers; zhetf2's, ``A = L D L^H``, with ``hermitian``).
    Returns ``(LD, pivots, info)``; ``info`` is the 1-based index of the first zero 1x1 block
    of D (0: none)."""
    nb, n = a.shape[0], a.shape[-1]
    herm = bool(hermitian) and a.dtype.kind == "c"
    w = xp.tril(a).copy()
    _symmetrize_from_lower(xp, w, herm)  # the trailing block is kept symmetric / Hermitian
    piv = xp.zeros((nb, n), dtype=np.int32)
    info = xp.zeros(nb, dtype=np.int32)
    rows = xp.arange(nb)
    waiting = xp.zeros(nb, dtype=bool)  # inside a 2x2 block started at the previous column
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for k in range(n):
            active = ~waiting
            kp, two, zero = _choose_pivot(xp, w, k, rows)
            kk = k + two.astype(np.int64)
            _swap_trailing(xp, w, k, kk, kp, active & (kp != kk), rows)
            one = active & ~two & ~zero
            two = active & two
            if k + 1 < n:
                _update_1x1(xp, w, k, one, herm)
            if k + 2 < n and bool(two.any()):
                (_update_2x2_herm if herm else _update_2x2)(xp, w, k, two)
            if k + 1 < n:
                _symmetrize_from_lower(xp, w[:, k + 1:, k + 1:], herm)
            code = xp.where(two, -(kp + 1), kp + 1).astype(np.int32)
            piv[:, k] = xp.where(active, code, piv[:, k])
            if k + 1 < n:
                piv[:, k + 1] = xp.where(two, code, piv[:, k + 1])
            info[...] = xp.where(active & zero & (info == 0), k + 1, info)
            waiting = two
    return xp.tril(w), piv, info


def _choose_pivot(xp, w, k, rows):
    """Bunch-Kaufman's choice at column k: ``(kp, two, zero)`` with ``kp`` the row to swap
    in, ``two`` whether the block is 2x2, ``zero`` whether the column is zero."""
    n = w.shape[-1]
    absakk = _cabs1(xp, w[:, k, k])
    if k + 1 < n:
        col = _cabs1(xp, w[:, k + 1:, k])
        imax = k + 1 + xp.argmax(col, axis=1)
        colmax = col.max(axis=1)
    else:
        imax = xp.full(w.shape[0], k, dtype=np.int64)
        colmax = xp.zeros_like(absakk)
    zero = (xp.maximum(absakk, colmax) == 0) | xp.isnan(absakk)
    # the largest off-diagonal entry of row / column imax in the trailing block
    row = _cabs1(xp, w[rows, imax, k:])
    row[rows, imax - k] = 0
    rowmax = row.max(axis=1)
    keep = zero | (absakk >= _ALPHA * colmax)
    keep |= absakk >= _ALPHA * colmax * (colmax / xp.where(rowmax == 0, 1, rowmax))
    swap_1x1 = ~keep & (_cabs1(xp, w[rows, imax, imax]) >= _ALPHA * rowmax)
    kp = xp.where(keep, k, imax)
    return kp, ~keep & ~swap_1x1, zero


def _swap_trailing(xp, w, k, kk, kp, swap, rows):
    """Swap rows and columns ``kk`` and ``kp`` of the trailing block ``w[:, k:, k:]`` where
    ``swap`` (a symmetric permutation; the factored columns before k stay as they are)."""
    if not bool(swap.any()):
        return
    size = w.shape[-1] - k
    order = xp.broadcast_to(xp.arange(size), (w.shape[0], size)).copy()
    a, b = xp.where(swap, kk - k, 0), xp.where(swap, kp - k, 0)
    order[rows, a] = b
    order[rows, b] = xp.where(swap, kk - k, 0)
    block = w[:, k:, k:]
    block = xp.take_along_axis(block, order[:, :, None], axis=1)
    w[:, k:, k:] = xp.take_along_axis(block, order[:, None, :], axis=2)


def _update_1x1(xp, w, k, one, herm=False):
    """A 1x1 pivot at k: the trailing block loses x x^T / d (x x^H / d with ``herm``, d
    real), column k becomes L's column."""
    d11 = xp.where(one, 1 / xp.where(one, w[:, k, k], 1), 0)
    x = w[:, k + 1:, k]
    update = x[:, :, None] * (d11[:, None] * (x.conj() if herm else x))[:, None, :]
    w[:, k + 1:, k + 1:] -= xp.where(one[:, None, None], update, 0)
    w[:, k + 1:, k] = xp.where(one[:, None], x * d11[:, None], x)


def _update_2x2(xp, w, k, two):
    """A 2x2 pivot at k, k+1 (dsytf2's formulas, so that rounding follows LAPACK's)."""
    d21 = xp.where(two, w[:, k + 1, k], 1)
    d11 = w[:, k + 1, k + 1] / d21
    d22 = w[:, k, k] / d21
    t = 1 / (d11 * d22 - 1)
    d21 = t / d21
    xk, xk1 = w[:, k + 2:, k], w[:, k + 2:, k + 1]
    wk = d21[:, None] * (d11[:, None] * xk - xk1)
    wkp1 = d21[:, None] * (d22[:, None] * xk1 - xk)
    mask = two[:, None, None]
    w[:, k + 2:, k + 2:] -= xp.where(mask, xk[:, :, None] * wk[:, None, :], 0)
    w[:, k + 2:, k + 2:] -= xp.where(mask, xk1[:, :, None] * wkp1[:, None, :], 0)
    w[:, k + 2:, k] = xp.where(two[:, None], wk, xk)
    w[:, k + 2:, k + 1] = xp.where(two[:, None], wkp1, xk1)


def _update_2x2_herm(xp, w, k, two):
    """A Hermitian 2x2 pivot at k, k+1 (zhetf2's formulas)."""
    e = xp.where(two, w[:, k + 1, k], 1)
    d = xp.abs(e)
    d11 = w[:, k + 1, k + 1].real / d
    d22 = w[:, k, k].real / d
    tt = 1 / (d11 * d22 - 1)
    d21 = e / d
    d = tt / d
    xk, xk1 = w[:, k + 2:, k], w[:, k + 2:, k + 1]
    wk = d[:, None] * (d11[:, None] * xk - d21[:, None] * xk1)
    wkp1 = d[:, None] * (d22[:, None] * xk1 - d21.conj()[:, None] * xk)
    mask = two[:, None, None]
    w[:, k + 2:, k + 2:] -= xp.where(mask, xk[:, :, None] * wk.conj()[:, None, :], 0)
    w[:, k + 2:, k + 2:] -= xp.where(mask, xk1[:, :, None] * wkp1.conj()[:, None, :], 0)
    w[:, k + 2:, k] = xp.where(two[:, None], wk, xk)
    w[:, k + 2:, k + 1] = xp.where(two[:, None], wkp1, xk1)


def _block_starts(xp, piv):
    """Per column: whether a 1x1 block, or the first / second column of a 2x2 block."""
    nb, n = piv.shape
    first = xp.zeros((nb, n), dtype=bool)
    inside = xp.zeros(nb, dtype=bool)
    for k in range(n):
        first[:, k] = ~inside & (piv[:, k] < 0)
        inside = first[:, k]
    second = xp.zeros_like(first)
    second[:, 1:] = first[:, :-1]
    return first, second


def _swap_rows(xp, X, r, s, rows):
    """Swap rows ``r`` and ``s`` (per batch element) of ``X`` (batch, n, p)."""
    row_r = X[rows, r].copy()
    X[rows, r] = X[rows, s]
    X[rows, s] = row_r


def sytrs_lower(xp, LD, piv, X, hermitian=False):
    """Solve ``A X = B`` in place of ``X`` (batch, n, p) from ``sytrf_lower``'s factors
    (LAPACK dsytrs with uplo 'L'; zhetrs, ``A = L D L^H``, with ``hermitian``)."""
    nb, n = piv.shape
    herm = bool(hermitian) and LD.dtype.kind == "c"
    LDc = LD.conj() if herm else LD  # L^H in the backward sweep
    rows = xp.arange(nb)
    p = piv.astype(np.int64)
    first, second = _block_starts(xp, p)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for k in range(n):  # L D Y = P^T B, block by block
            one = ~first[:, k] & ~second[:, k]
            two = first[:, k]
            target = xp.where(two, k + 1, k)
            source = xp.where(one, p[:, k] - 1, xp.where(two, -p[:, k] - 1, target))
            _swap_rows(xp, X, target, source, rows)
            xk = X[:, k, None, :]
            if k + 1 < n:
                upd = LD[:, k + 1:, k, None] * xk
                X[:, k + 1:] -= xp.where(one[:, None, None], upd, 0)
            if k + 2 < n:
                mask = two[:, None, None]
                X[:, k + 2:] -= xp.where(mask, LD[:, k + 2:, k, None] * xk, 0)
                X[:, k + 2:] -= xp.where(mask, LD[:, k + 2:, k + 1, None] * X[:, k + 1, None, :],
                                         0)
            dk = LD[:, k, k].real if herm else LD[:, k, k]
            X[:, k] = xp.where(one[:, None], X[:, k] / xp.where(one, dk, 1)[:, None], X[:, k])
            if k + 1 < n:
                _solve_2x2(xp, LD, X, k, two, herm)
        for k in range(n - 1, -1, -1):  # L^T X = Y, then undo the interchanges
            one = ~first[:, k] & ~second[:, k]
            two = second[:, k]
            if k + 1 < n:
                tail = X[:, k + 1:]
                upd = (LDc[:, k + 1:, k, None] * tail).sum(1)
                X[:, k] -= xp.where((one | two)[:, None], upd, 0)
                if k:
                    upd = (LDc[:, k + 1:, k - 1, None] * tail).sum(1)
                    X[:, k - 1] -= xp.where(two[:, None], upd, 0)
            source = xp.where(one, p[:, k] - 1, xp.where(two, -p[:, k] - 1, k))
            _swap_rows(xp, X, xp.full(nb, k, dtype=np.int64), source, rows)
    return X


def _solve_2x2(xp, LD, X, k, two, herm=False):
    """Rows k, k+1 of ``X`` times the inverse of the 2x2 block of D at k (dsytrs; zhetrs with
    ``herm``)."""
    akm1k = xp.where(two, LD[:, k + 1, k], 1)[:, None]
    upper = akm1k.conj() if herm else akm1k  # D[k, k+1]
    akm1 = LD[:, k, k, None] / upper
    ak = LD[:, k + 1, k + 1, None] / akm1k
    denom = akm1 * ak - 1
    bkm1 = X[:, k] / upper
    bk = X[:, k + 1] / akm1k
    new_k = (ak * bkm1 - bk) / denom
    new_k1 = (akm1 * bk - bkm1) / denom
    X[:, k] = xp.where(two[:, None], new_k, X[:, k])
    X[:, k + 1] = xp.where(two[:, None], new_k1, X[:, k + 1])


# -- the functions ---------------------------------------------------------------------------

LinalgLdlFactorExBackward0 = not_differentiable("LinalgLdlFactorExBackward0")
LinalgLdlSolveBackward0 = not_differentiable("LinalgLdlSolveBackward0")
# complex inputs are recorded too; backward raises PyTorch's error either way
complex_own(LinalgLdlFactorExBackward0, LinalgLdlSolveBackward0)


def _ldl_factor_ex(A, check_errors, fn, hermitian):
    d = A._data
    checks = "torch.linalg.ldl_factor_ex"  # PyTorch's checks name it for ldl_factor too
    check_dims(d, checks)
    check_square(d, checks)
    if d.dtype not in _dtype.FLOATING_NP:  # float16, bfloat16: the kernel's dispatch error
        check_float(A, checks)
    kernel_dtype(A, "ldl_factor_kernel_cpu", complex_ok=True)
    xp = xp_of(A)
    ld, piv, info = sytrf_lower(xp, flatten_batch(d), hermitian)
    if check_errors and info.size and bool((info != 0).any()):
        i = int(xp.argmax(info != 0))
        k = int(info[i])
        raise LinAlgError(f"{fn}: {batch_prefix(A, i)}The factorization could not be completed "
                          f"because the block diagonal matrix D is singular (D[{k},{k}] is "
                          "zero).")
    LD = _make(ld.reshape(d.shape), A._device)
    record_not_differentiable(LinalgLdlFactorExBackward0, LD, (A,),
                              "derivative for aten::linalg_ldl_factor_ex is not implemented")
    return (LD, _make(piv.reshape(d.shape[:-1]), A._device),
            _make(info.reshape(d.shape[:-2]), A._device))


@accepts_out(dtype_rule="same")
def ldl_factor_ex(input, *, hermitian=False, check_errors=False, out=None):
    """``(LD, pivots, info)``: the Bunch-Kaufman LDL^T factorization of the symmetric ``A``
    (only its lower triangle is read) in LAPACK sytrf's format (see the module doc); a complex
    ``A`` is factored as Hermitian (``L D L^H``, hetrf) with ``hermitian=True``, as complex
    symmetric (``L D L^T``) without. ``info`` is k when D[k, k] is exactly zero. Not
    differentiable, as in PyTorch."""
    return LinalgLdlFactorExResult(*_ldl_factor_ex(input, check_errors,
                                                   "torch.linalg.ldl_factor_ex", hermitian))


@accepts_out(dtype_rule="same")
def ldl_factor(input, *, hermitian=False, out=None):
    """``(LD, pivots)`` of ``A`` (see ``ldl_factor_ex``, also for ``hermitian``); raises
    ``LinAlgError`` when D is singular."""
    LD, piv, _ = _ldl_factor_ex(input, True, "torch.linalg.ldl_factor", hermitian)
    return LinalgLdlFactorResult(LD, piv)


@accepts_out
def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """The solution ``X`` of ``A X = B`` given ``ldl_factor(A)`` (``hermitian`` as it was
    factored); batches broadcast. Not differentiable, as in PyTorch."""
    fn = "torch.linalg.ldl_solve"
    ld, pd, bd = LD._data, pivots._data, B._data
    check_dims(ld, fn)
    check_square(ld, fn)
    n = ld.shape[-1]
    if bd.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-{max(bd.ndim, 1)}"
                         f", {max(bd.ndim, 1) - 1}], but got -2)")
    if ld.dtype.kind not in "fc":
        check_float(LD, fn)
    if pd.dtype.kind not in "iu":
        raise RuntimeError(f"{fn}: Expected pivots to be integers. Got "
                           f"{scalar_type_name(pd.dtype)}")
    if pd.shape != ld.shape[:-1]:
        raise RuntimeError(f"{fn}: Expected LD.shape[:-1] and pivots.shape to be the same, but "
                           f"got pivots with shape {_list_str(pd.shape)} instead")
    check_linear_solve(bd, ld, fn)
    batch = broadcast_shapes_or_raise(ld.shape[:-2], bd.shape[:-2])
    kernel_dtype(LD, "ldl_solve_kernel_cpu", complex_ok=True)
    check_same_device(LD, pivots, B)
    xp = xp_of(LD)
    lds = flatten_batch(xp.broadcast_to(ld, batch + (n, n)))
    ps = flatten_batch(xp.broadcast_to(pd, batch + (n,)), 1)
    x = flatten_batch(xp.broadcast_to(bd, batch + bd.shape[-2:])).copy()
    x = sytrs_lower(xp, lds, ps, x, hermitian)
    res = _make(x.reshape(batch + bd.shape[-2:]), LD._device)
    record_not_differentiable(LinalgLdlSolveBackward0, res, (LD, B),
                              "derivative for aten::linalg_ldl_solve is not implemented")
    return res
