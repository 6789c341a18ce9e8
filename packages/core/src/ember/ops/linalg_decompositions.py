"""Inverses, determinants, solvers and factorizations (``ember.linalg``), each with its
backward written in Tensor ops (differentiable again), after PyTorch's FunctionsManual."""

from __future__ import annotations

import inspect
import math

import numpy as np

from .._device import check_same_device, xp_of
from .._dtype import scalar_type_name
from .._tensor import _make
from ..autograd.grad_mode import no_grad
from ..autograd.graph import make_node_class, mark_holomorphic, record
from ..backends import backend_of
from ._factories import sum_to_size
from ._inplace import accepts_out
from .linalg import _list_str, _shape_str, broadcast_shapes_or_raise
from .linalg_common import (
    LinalgCholeskyExResult,
    LinalgEighResult,
    LinAlgError,
    LinalgInvExResult,
    LinalgLstsqResult,
    LinalgQrResult,
    LinalgSlogdetResult,
    LinalgSvdResult,
    batch_prefix,
    cat,
    check_dims,
    check_float,
    check_matrix,
    check_square,
    complex_own,
    const,
    eye_like,
    first_failing,
    flatten_batch,
    lapack,
    lu_zero_pivot,
    multi_ctx,
    needs_grad,
    record_multi,
    saved_outputs,
    with_info,
)

__all__ = ["inv", "inv_ex", "det", "slogdet", "solve", "cholesky", "cholesky_ex", "qr", "eigh",
           "eigvalsh", "svd", "svdvals", "pinv", "matrix_rank", "lstsq", "matrix_power"]

_LinAlgErrorNp = np.linalg.LinAlgError
_FLOAT_KINDS = frozenset(map(np.dtype, (np.float32, np.float64, np.complex64, np.complex128)))


def _singular(A, fn: str):
    i, k = first_failing(A._host(), lu_zero_pivot)
    return LinAlgError(f"{fn}: {batch_prefix(A, i)}The diagonal element {k} is zero, the "
                       "inversion could not be completed because the input matrix is singular.")


def _svd(A, d, **kw):
    """``xp.linalg.svd(d, **kw)`` (``d``: ``A``'s array or one derived from it), with
    PyTorch's error when LAPACK does not converge (a NaN in the input)."""
    try:
        return xp_of(A).linalg.svd(d, **kw)
    except _LinAlgErrorNp:
        host = np.asarray(A._host())
        i, _ = first_failing(host, lambda m: int(not np.isfinite(m).all()))
        raise LinAlgError(f"linalg.svd: {batch_prefix(A, i)}The algorithm failed to converge "
                          "because the input matrix contained non-finite values.") from None


# -- inv ------------------------------------------------------------------------------------

def _inv_bw(node, g):
    inv_t = node.output().mT
    return (-inv_t.matmul(g).matmul(inv_t),)


LinalgInvExBackward0 = make_node_class("LinalgInvExBackward0", _inv_bw)
mark_holomorphic(LinalgInvExBackward0)  # complex: -A^{-H} G A^{-H}


@accepts_out(dtype_rule="same")
def inv(A, *, out=None):
    """Inverse of a square matrix (or batch); ``LinAlgError`` when it is singular."""
    check_matrix(A, "linalg.inv", square=True)
    try:
        with backend_of(A._device).linalg_errors():  # CuPy checks only when asked
            r = xp_of(A).linalg.inv(A._data)
    except _LinAlgErrorNp:
        raise _singular(A, "linalg.inv") from None
    res = _make(r, A._device)
    if needs_grad(A):
        record(LinalgInvExBackward0, res, (A,), (), None, True)
    return res


@accepts_out(dtype_rule="same")
def inv_ex(A, *, check_errors=False, out=None):
    """``(inverse, info)``; ``info`` is the LAPACK status (0: success)."""
    return with_info(LinalgInvExResult, inv, A, lu_zero_pivot, check_errors,
                     ("linalg.inv:", "linalg.inv_ex:"))


# -- det, slogdet --------------------------------------------------------------------------

def _det_bw(node, g):
    (A,) = node.saved
    det_ = node.output()
    if bool((det_._data == 0).any()):
        return (_singular_det_grad(A, g),)
    inverse = inv(A) if A._data.size else A  # empty: no inverse to take (float16 has none)
    return ((g * det_.conj()).unsqueeze(-1).unsqueeze(-1) * inverse.mH,)


def _singular_det_grad(A, g):
    # det = det(U) det(Vh) prod(S): the gradient is U diag(conj(det(U) det(Vh)) g
    # prod_{j!=i} s_j) Vh (first order only: the factors are taken as constants)
    xp = xp_of(A)
    u, s, vh = _svd(A, A._data)
    left = xp.concatenate([xp.ones_like(s[..., :1]), xp.cumprod(s[..., :-1], -1)], -1)
    right = xp.flip(xp.concatenate([xp.ones_like(s[..., :1]),
                                    xp.cumprod(xp.flip(s[..., 1:], -1), -1)], -1), -1)
    scale = left * right * xp.conj(xp.linalg.det(u) * xp.linalg.det(vh))[..., None]
    core = const(A, u).matmul(const(A, scale[..., :, None] * vh))
    return g.unsqueeze(-1).unsqueeze(-1) * core


LinalgDetBackward0 = make_node_class("LinalgDetBackward0", _det_bw)
complex_own(LinalgDetBackward0)


@accepts_out(dtype_rule="same")
def det(A, *, out=None):
    """Determinant of a square matrix (or batch)."""
    check_matrix(A, "linalg.det", square=True, kernel="lu_cpu")
    res = _make(lapack(xp_of(A).linalg.det, A._data), A._device)
    if needs_grad(A):
        record(LinalgDetBackward0, res, (A,), (A,), None, True)
    return res


def _slogdet_bw(node, grads):
    # PyTorch's slogdet_backward: (g_logabsdet - i Im(conj(g_sign) sign)) A^{-H}; a real
    # sign is piecewise constant (no gradient)
    (A,) = node.saved
    g_sign, g = grads
    if A._data.dtype.kind == "c" and g_sign is not None:
        turn = (g_sign.conj() * multi_ctx(node)).imag * -1j
        g = turn if g is None else g + turn
    if g is None:
        return (None,)
    return (g.unsqueeze(-1).unsqueeze(-1) * inv(A).mH,)


LinalgSlogdetBackward0 = make_node_class("LinalgSlogdetBackward0", _slogdet_bw, n_out=2)
complex_own(LinalgSlogdetBackward0)


@accepts_out(dtype_rule="same")
def slogdet(A, *, out=None):
    """``(sign, logabsdet)`` of the determinant; only ``logabsdet`` has a gradient."""
    return _slogdet(A, "linalg.slogdet")


def _slogdet(A, _name):
    """``slogdet`` whose errors name ``_name`` (``logdet`` reports its own)."""
    check_matrix(A, _name, square=True)
    sign, logabs = xp_of(A).linalg.slogdet(A._data)
    sign = _make(sign, A._device)
    logabs = _make(logabs, A._device)
    if needs_grad(A):  # sign is attached as in PyTorch (a gradient for complex A only)
        record_multi(LinalgSlogdetBackward0, (sign, logabs), (A,), (A,), const(A, sign._data))
    return LinalgSlogdetResult(sign, logabs)


# -- solve ----------------------------------------------------------------------------------

def _solve_bw(node, g):
    (A, B) = node.saved
    vector = node.ctx
    X = node.output()
    if vector:
        g, X = g.unsqueeze(-1), X.unsqueeze(-1)
    gB = solve(A.mT, g)
    gA = None
    if A.requires_grad:
        gA = sum_to_size(-gB.matmul(X.mT), A._data.shape)
    if not B.requires_grad:
        return gA, None
    if vector:
        gB = gB.reshape(*gB._data.shape[:-1])
    return gA, sum_to_size(gB, B._data.shape)


LinalgSolveExBackward0 = make_node_class("LinalgSolveExBackward0", _solve_bw)
mark_holomorphic(LinalgSolveExBackward0)  # complex: gB = A^{-H} G, gA = -gB X^H


@accepts_out(dtype_rule="same")
def solve(A, B, *, left=True, out=None):
    """The solution ``X`` of ``A X = B`` (``X A = B`` with ``left=False``), batches broadcast;
    ``B`` of ``A``'s shape without the last dim (or 1-D) is a vector right-hand side."""
    if not left:
        return solve(A.mT, B.mT).mT
    check_matrix(A, "linalg.solve", square=True, kernel="lu_cpu")
    ad, bd = A._data, B._data
    if ad.dtype != bd.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A "
                           f"of type {scalar_type_name(ad.dtype)} and B of type "
                           f"{scalar_type_name(bd.dtype)} instead")
    check_same_device(A, B)
    vector = bd.ndim == 1 or (bd.ndim == ad.ndim - 1 and bd.shape == ad.shape[:-1])
    bm = bd[..., None] if vector else bd
    n = ad.shape[-1]
    if bm.ndim < 2 or bm.shape[-2] != n:
        shape = bm.shape[-2:] if bm.ndim >= 2 else (bm.shape[0], 1)
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"AX = B ({n}x{n} and {_shape_str(shape)})")
    batch = broadcast_shapes_or_raise(bm.shape[:-2], ad.shape[:-2])
    xp = xp_of(A)
    if xp is not np:  # CuPy's solve does not broadcast the batch dims of A and B
        if ad.shape[:-2] != batch:
            ad = xp.ascontiguousarray(xp.broadcast_to(ad, batch + ad.shape[-2:]))
        if bm.shape[:-2] != batch:
            bm = xp.ascontiguousarray(xp.broadcast_to(bm, batch + bm.shape[-2:]))
    try:
        with backend_of(A._device).linalg_errors():
            x = lapack(xp.linalg.solve, ad, bm)
    except _LinAlgErrorNp:
        full = np.broadcast_to(A._host(), batch + ad.shape[-2:])
        i, _ = first_failing(full, lu_zero_pivot)
        prefix = f"(Batch element {i}): " if full.ndim > 2 else ""
        raise LinAlgError(f"torch.linalg.solve: {prefix}The solver failed because the input "
                          "matrix is singular.") from None
    if vector:
        x = x[..., 0]
    res = _make(x, A._device)
    if needs_grad(A, B):
        # B: only its flags and shape are read (PyTorch saves A's LU and X, not B)
        record(LinalgSolveExBackward0, res, (A, B), (A, B), vector, True,
               checked=(True, False))
    return res


# -- cholesky -------------------------------------------------------------------------------

def _cholesky_bw(node, g):
    # PyTorch's cholesky_backward (Murray 2016, arXiv:1602.07527):
    # gA = L^{-H} Phi L^{-1},  Phi = (tril(L^H gL) + tril(L^H gL, -1)^H) / 2
    upper = node.ctx
    L = node.output()
    if upper:
        L, g = L.mH, g.mH
    M = L.mH.matmul(g).tril()
    phi = (M + M.tril(-1).mH) * 0.5
    L_inv = inv(L)
    return (L_inv.mH.matmul(phi).matmul(L_inv),)


LinalgCholeskyExBackward0 = make_node_class("LinalgCholeskyExBackward0", _cholesky_bw)
complex_own(LinalgCholeskyExBackward0)


def _potf2(a):
    """LAPACK's unblocked Cholesky (potf2, lower) of one matrix, in float64 (complex128):
    ``(info, factor)``, ``info`` the 1-based order of the first leading minor that is not
    positive-definite (0: none) and ``factor`` what LAPACK leaves: the columns before it
    factored, its pivot not square-rooted, the rest of the lower triangle as it was.
    Runs only on the error path."""
    a = np.tril(np.array(a, dtype=np.result_type(a.dtype, np.float64), copy=True))
    n = a.shape[0]
    for k in range(n):
        d = (a[k, k] - a[k, :k] @ a[k, :k].conj()).real  # Hermitian: a real pivot
        if not d > 0:
            a[k, k] = d
            return k + 1, a
        a[k, k] = np.sqrt(d)
        a[k + 1:, k] = (a[k + 1:, k] - a[k + 1:, :k] @ a[k, :k].conj()) / a[k, k]
    return 0, a


def _not_pd_order(a) -> int:
    """1-based order of the first leading minor that is not positive-definite (potrf's
    ``info``), 0 when there is none. Runs only on the error path."""
    return _potf2(a)[0]


def _cholesky_partial(a):
    return _potf2(a)[1]


def _not_pd(A, name: str):
    i, k = first_failing(A._host(), _not_pd_order)
    return LinAlgError(f"{name}: {batch_prefix(A, i)}The factorization could not be completed "
                       "because the input is not positive-definite (the leading minor of order "
                       f"{k} is not positive-definite).")


@accepts_out(dtype_rule="same")
def cholesky(input, *, upper=False, out=None, _name="linalg.cholesky"):
    """Cholesky factor ``L`` (``A = L L^H``, lower triangle of ``A`` read); ``upper=True``
    gives ``L^H``. ``LinAlgError`` when ``A`` is not positive-definite."""
    A = input  # PyTorch's binding names it input (its docs: A)
    check_matrix(A, _name, square=True, kernel="cholesky_cpu")
    xp = xp_of(A)
    try:
        with backend_of(A._device).linalg_errors():
            r = lapack(xp.linalg.cholesky, A._data)
    except _LinAlgErrorNp:
        raise _not_pd(A, _name) from None
    if r.size and bool(xp.isnan(r).any()):  # LAPACK's potrf fails on a NaN pivot
        raise _not_pd(A, _name)
    if upper:  # L^H
        r = r.swapaxes(-1, -2)
        if r.dtype.kind == "c":
            r = r.conj()
    res = _make(r, A._device)
    if needs_grad(A):
        record(LinalgCholeskyExBackward0, res, (A,), (), upper, True)
    return res


@accepts_out(dtype_rule="same")
def cholesky_ex(input, *, upper=False, check_errors=False, out=None):
    """``(L, info)``; ``info`` is the order of the failing leading minor (0: success)."""
    A = input  # PyTorch's binding names it input (its docs: A)
    if upper:  # L^H, partial factors included
        r = cholesky_ex(A.mH, check_errors=check_errors)
        return LinalgCholeskyExResult(r.L.mH, r.info)
    return with_info(LinalgCholeskyExResult, cholesky, A, _not_pd_order, check_errors,
                     ("linalg.cholesky:", "linalg.cholesky_ex:"), _cholesky_partial)


# -- qr -------------------------------------------------------------------------------------

def _qr_bw(node, grads):
    # PyTorch's linalg_qr_backward, with M = gR R^H - Q^H gQ:
    # m >= n: gA = [gQ + Q syminvadj(triu(M))] R^{-H}
    # m < n:  gA = [Q trilImInvAdjSkew(-M) R_1^{-H} | 0] + Q gR
    mode, m, n = multi_ctx(node)
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when "
                           "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to "
                           "differentiate through linalg.qr.")
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and "
                           "nrows > ncols.")
    Q, R = saved_outputs(node)
    gQ, gR = grads
    if gQ is None and gR is None:
        return (None,)
    M = gR.matmul(R.mH) if gR is not None else None
    if gQ is not None:
        QhgQ = Q.mH.matmul(gQ)
        M = -QhgQ if M is None else M - QhgQ
    if m >= n:
        upper = M.triu(1)
        sym = upper + upper.mH + M.diagonal(0, -2, -1).real.diag_embed()
        X = Q.matmul(sym)
        if gQ is not None:
            X = X + gQ
        return (_times_inv_h(X, R),)
    Y = -M
    skew = Y - Y.mH  # its diagonal is imaginary (zero for real numbers): halved
    X = Q.matmul(skew.tril() - skew.diagonal(0, -2, -1).diag_embed() * 0.5)
    gA = _times_inv_h(X, R.narrow(-1, 0, m))
    gA = cat([gA, gA.new_zeros(gA.shape[:-1] + (n - m,))], -1)
    if gR is not None:
        gA = gA + Q.matmul(gR)
    return (gA,)


def _times_inv_h(X, R):
    """``X R^{-H}`` for an upper-triangular ``R``."""
    return solve(R, X.mH).mH


LinalgQrBackward0 = make_node_class("LinalgQrBackward0", _qr_bw, n_out=2)
complex_own(LinalgQrBackward0)


@accepts_out(dtype_rule="same")
def qr(A, mode="reduced", *, out=None):
    """QR decomposition ``A = Q R``; ``mode``: 'reduced', 'complete' or 'r' (R only)."""
    check_dims(A._data, "linalg.qr")  # PyTorch's order: shape, dtype, mode, then the kernel's
    dt = A._data.dtype  # dispatch error for float16 / bfloat16
    if dt.kind not in "fc" and dt.name != "bfloat16":
        check_float(A, "linalg.qr")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    check_matrix(A, "linalg.qr", kernel="geqrf_cpu")
    xp = xp_of(A)
    m, n = A._data.shape[-2:]
    if mode == "r":
        q = xp.zeros((0,), dtype=A._data.dtype)
        r = xp.linalg.qr(A._data, mode="r")
    else:
        q, r = xp.linalg.qr(A._data, mode=mode)
    Q, R = _make(q, A._device), _make(r, A._device)
    if needs_grad(A):
        record_multi(LinalgQrBackward0, (Q, R), (A,), (), (mode, m, n))
    return LinalgQrResult(Q, R)


# -- eigh -----------------------------------------------------------------------------------

def _eigh_bw(node, grads):
    # PyTorch's linalg_eig_backward for Hermitian A:
    # gA = V (diag(gL) + skew(V^H gV) / 2E) V^H,  E_ij = L_j - L_i (1 on the diagonal)
    L, V = saved_outputs(node)
    gL, gV = grads
    if gL is None and gV is None:
        return (None,)
    if gV is None:
        return ((V * gL.unsqueeze(-2)).matmul(V.mH),)
    VhgV = V.mH.matmul(gV)
    if VhgV._data.dtype.kind == "c":
        from .linalg_eig import _phase_check

        _phase_check(VhgV.diagonal(0, -2, -1), "linalg_eigh_backward")
    eye = eye_like(V)
    inner = (VhgV - VhgV.mH) * 0.5 / (L.unsqueeze(-2) - L.unsqueeze(-1) + eye)
    if gL is not None:
        inner = inner * (1 - eye) + gL.diag_embed()
    return (V.matmul(inner).matmul(V.mH),)


LinalgEighBackward0 = make_node_class("LinalgEighBackward0", _eigh_bw, n_out=2)
complex_own(LinalgEighBackward0)


def _check_uplo(UPLO) -> str:
    """``UPLO``, either case (PyTorch's), as 'L' or 'U'."""
    uplo = UPLO.upper() if isinstance(UPLO, str) else UPLO
    if uplo not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return uplo


def _check_eigh(A, UPLO) -> str:
    check_dims(A._data, "linalg.eigh")  # PyTorch's order: shape, then UPLO, then dtype
    check_square(A._data, "linalg.eigh")
    UPLO = _check_uplo(UPLO)
    dt = A._data.dtype
    if dt.kind in "biu" and A._data.size == 0:
        return UPLO  # no kernel runs: empty results of the input's dtype (_empty_eigh)
    if dt.kind not in "fc" and dt.name != "bfloat16":  # PyTorch's kernel-dispatch error,
        # not the usual dtype check (bfloat16: check_matrix's, for a non-empty input)
        raise NotImplementedError(f'"linalg_eigh_cpu" not implemented for '
                                  f"'{scalar_type_name(dt)}'")
    check_matrix(A, "linalg.eigh", square=True, kernel="linalg_eigh_cpu")
    return UPLO


@accepts_out(dtype_rule="same")
def eigh(input, UPLO="L", *, out=None):
    """Eigenvalues (ascending, real) and eigenvectors of a symmetric (complex: Hermitian)
    matrix, of which only the ``UPLO`` triangle is read. Gradients assume distinct eigenvalues."""
    A = input  # PyTorch's binding names it input (its docs: A)
    UPLO = _check_eigh(A, UPLO)
    if A._data.dtype.kind in "biu":
        return LinalgEighResult(*_empty_eigh(A))
    w, v = lapack(xp_of(A).linalg.eigh, A._data, UPLO=UPLO)
    L, V = _make(w, A._device), _make(v, A._device)
    if needs_grad(A):
        record_multi(LinalgEighBackward0, (L, V), (A,))
    return LinalgEighResult(L, V)


@accepts_out(dtype_rule="same")
def eigvalsh(input, UPLO="L", *, out=None):
    """Eigenvalues (ascending) of a symmetric matrix."""
    A = input  # PyTorch's binding names it input (its docs: A)
    if needs_grad(A):
        return eigh(A, UPLO).eigenvalues
    UPLO = _check_eigh(A, UPLO)
    if A._data.dtype.kind in "biu":
        return _empty_eigh(A)[0]
    return _make(lapack(xp_of(A).linalg.eigvalsh, A._data, UPLO=UPLO), A._device)


def _empty_eigh(A):
    """``eigh`` of an empty integer or bool matrix (batch): PyTorch runs no kernel and gives
    empty eigenvalues and eigenvectors of the input's own dtype (non-empty ones have none)."""
    xp, d = xp_of(A), A._data
    return (_make(xp.empty(d.shape[:-1], dtype=d.dtype), A._device),
            _make(xp.empty(d.shape, dtype=d.dtype), A._device))


# -- svd ------------------------------------------------------------------------------------

def _svd_bw(node, grads):
    # PyTorch's svd_backward (distinct singular values), on the reduced SVD; for complex
    # numbers the loss must not depend on the phases of the singular vectors
    U, S, Vh = saved_outputs(node)
    gU, gS, gVh = grads
    full, m, n = multi_ctx(node)
    k = min(m, n)
    if full and m != k:  # only the first k singular vectors enter the gradient
        U = U.narrow(-1, 0, k)
        gU = gU.narrow(-1, 0, k) if gU is not None else None
    if full and n != k:
        Vh = Vh.narrow(-2, 0, k)
        gVh = gVh.narrow(-2, 0, k) if gVh is not None else None
    if gU is None and gVh is None:
        return (U.matmul(gS.unsqueeze(-1) * Vh) if m >= n else
                (U * gS.unsqueeze(-2)).matmul(Vh),)
    S_row, S_col = S.unsqueeze(-2), S.unsqueeze(-1)
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + eye_like(S_col, k)
    if gU is not None:
        UhgU = U.mH.matmul(gU)
        UhgU = UhgU - UhgU.mH
    if gVh is not None:
        VhgV = Vh.matmul(gVh.mH)
        VhgV = VhgV - VhgV.mH
    is_complex = U._data.dtype.kind == "c"
    if is_complex:
        _svd_phase_check(UhgU if gU is not None else None, VhgV if gVh is not None else None)
    if gU is not None and gVh is not None:
        core = (UhgU * S_row + S_col * VhgV) / E
    elif gU is not None:
        core = UhgU * (S_row / E)
    else:
        core = S_col * (VhgV / E)
    if gS is not None:
        core = core + gS.diag_embed()
    if is_complex and gU is not None and gVh is not None:
        core = core + (UhgU.diagonal(0, -2, -1) / (2 * S)).diag_embed()
    if m > n and gU is not None:
        gA = U.matmul(core)
        gUSinv = gU / S_row
        gA = gA + gUSinv - U.matmul(U.mH.matmul(gUSinv))
        return (gA.matmul(Vh),)
    if m < n and gVh is not None:
        gA = core.matmul(Vh)
        SinvgVh = gVh / S_col
        gA = gA + SinvgVh - SinvgVh.matmul(Vh.mH).matmul(Vh)
        return (U.matmul(gA),)
    return (U.matmul(core.matmul(Vh)) if m >= n else U.matmul(core).matmul(Vh),)


def _svd_phase_check(UhgU, VhgV) -> None:
    """PyTorch's check that the loss is invariant under (U, V) -> (U L, V L) for unit
    complex diagonal L: Im(diag(U^H gU)) = -Im(diag(V^H gV))."""
    parts = [x.diagonal(0, -2, -1)._data.imag for x in (UhgU, VhgV) if x is not None]
    total = parts[0] + parts[1] if len(parts) == 2 else parts[0]
    xp = xp_of(UhgU if UhgU is not None else VhgV)
    bound = 1e-2 + 1e-2 * xp.abs(parts[-1]) if len(parts) == 2 else 1e-2
    if not bool((xp.abs(total) <= bound).all()):
        raise RuntimeError("svd_backward: The singular vectors in the complex case are specified "
                           "up to multiplication by e^{i phi}. The specified loss function depends "
                           "on this phase term, making it ill-defined.")


LinalgSvdBackward0 = make_node_class("LinalgSvdBackward0", _svd_bw, n_out=3)
complex_own(LinalgSvdBackward0)


@accepts_out(dtype_rule="same")
def svd(A, full_matrices=True, *, driver=None, out=None):
    """Singular value decomposition ``A = U diag(S) Vh`` (``S`` descending). Gradients
    assume distinct singular values and, like PyTorch's, do not depend on the sign
    convention of the singular vectors."""
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on "
                           "CUDA inputs with cuSOLVER backend.")
    check_matrix(A, "linalg.svd", kernel="linalg_svd_cpu")
    d = A._data
    xp = xp_of(A)
    m, n = d.shape[-2:]
    if d.size == 0:
        u = xp.broadcast_to(xp.eye(m, m if full_matrices else min(m, n), dtype=d.dtype),
                            d.shape[:-2] + (m, m if full_matrices else min(m, n))).copy()
        vh = xp.broadcast_to(xp.eye(n if full_matrices else min(m, n), n, dtype=d.dtype),
                             d.shape[:-2] + (n if full_matrices else min(m, n), n)).copy()
        s = xp.zeros(d.shape[:-2] + (min(m, n),), dtype=d.real.dtype)  # real, as LAPACK's
    else:
        u, s, vh = _svd(A, d, full_matrices=full_matrices)
    U, S, Vh = (_make(x, A._device) for x in (u, s, vh))
    if needs_grad(A):
        record_multi(LinalgSvdBackward0, (U, S, Vh), (A,), (), (full_matrices, m, n))
    return LinalgSvdResult(U, S, Vh)


@accepts_out(dtype_rule="same")
def svdvals(A, *, driver=None, out=None):
    """Singular values, descending."""
    if needs_grad(A):
        return svd(A, full_matrices=False, driver=driver).S
    check_matrix(A, "linalg.svd", kernel="linalg_svd_cpu")
    d = A._data
    if d.size == 0:
        return _make(xp_of(A).zeros(d.shape[:-2] + (min(d.shape[-2:]),), d.real.dtype),
                     A._device)
    return _make(_svd(A, d, compute_uv=False), A._device)


# -- pinv, matrix_rank, lstsq ---------------------------------------------------------------

_NOT_GIVEN = object()  # a positional rcond / tol (PyTorch's third overload) not given


def _overload_error(fn: str, input, rest: str, args: dict, kw: dict) -> TypeError:
    """PyTorch's argument-parser error for an invalid mix of ``pinv``/``matrix_rank``'s
    keyword overloads and their positional ``rcond``/``tol`` one."""
    got = ", ".join(["Tensor", *(type(v).__name__ if not hasattr(v, "_data") else "Tensor"
                                 for v in args.values()),
                     *(f"{k}={type(v).__name__ if not hasattr(v, '_data') else 'Tensor'}"
                       for k, v in kw.items())])
    return TypeError(
        f"{fn}() received an invalid combination of arguments - got ({got}), but expected one "
        "of:\n * (Tensor input, *, Tensor atol = None, Tensor rtol = None, bool hermitian = "
        "False, Tensor out = None)\n * (Tensor input, *, float atol = None, float rtol = None, "
        f"bool hermitian = False, Tensor out = None)\n * (Tensor input, Tensor {rest}, bool "
        f"hermitian = False, *, Tensor out = None)\n * (Tensor input, float {rest}, bool "
        "hermitian = False, *, Tensor out = None)\n")


def _tol_array(xp, t, fn: str, name: str):
    """A tolerance (None, a number or a Tensor) as a float or a float64 array."""
    if t is None:
        return None
    if hasattr(t, "_data"):
        dt = t._data.dtype
        if dt.kind == "c":
            raise RuntimeError(f"{fn}: {name} tensor of complex type is not supported. Got "
                               f"{scalar_type_name(dt)}")
        return xp.asarray(t._data, dtype=np.float64)
    return float(t)


def _tolerance(xp, smax, shape, atol, rtol, dtype):
    """PyTorch's cutoff ``max(atol, rtol * s_max)``: ``rtol`` defaults to eps * max(m, n)
    where ``atol`` is not positive; tensor tolerances broadcast against the batch, so the
    cutoff is shaped to broadcast against the singular values (``smax``: (..., 1))."""
    default = float(np.finfo(dtype).eps * max(shape[-2:]))
    if rtol is None:
        if atol is None:
            rtol = default
        elif isinstance(atol, float):
            rtol = 0.0 if atol > 0 else default
        else:
            rtol = xp.where(atol > 0, 0.0, default)
    atol = 0.0 if atol is None else atol
    if not isinstance(atol, float):
        atol = atol[..., None]
    if not isinstance(rtol, float):
        rtol = rtol[..., None]
    return xp.maximum(atol, rtol * smax)


def _pinv_bw(node, g):
    (A,) = node.saved
    return (_pinv_backward(g, node.output(), A),)


LinalgPinvBackward0 = make_node_class("LinalgPinvBackward0", _pinv_bw)
complex_own(LinalgPinvBackward0)  # PyTorch's pinv_backward, conjugate transposes included


@accepts_out
def pinv(input, rcond=_NOT_GIVEN, hermitian=False, *, atol=None, rtol=None, out=None):
    """Moore-Penrose pseudo-inverse (through the SVD; ``hermitian`` uses ``eigh``).
    Singular values below ``max(atol, rtol * s_max)`` are treated as zero; ``rcond`` (the
    positional overload) is ``rtol`` with ``atol = 0``. Tolerances may be tensors that
    broadcast against the batch."""
    A = input  # PyTorch's binding names it input (its docs: A)
    if rcond is not _NOT_GIVEN:
        if atol is not None or rtol is not None or isinstance(rcond, (str, bool)) or \
                rcond is None:
            given = {k: v for k, v in (("atol", atol), ("rtol", rtol)) if v is not None}
            raise _overload_error("linalg_pinv", A, "rcond", {"rcond": rcond}, given)
        atol, rtol = 0.0, rcond
    d = A._data
    if d.ndim < 2 or d.dtype not in _FLOAT_KINDS:
        raise RuntimeError(f"linalg.pinv({scalar_type_name(d.dtype)}{{{_list_str(d.shape)}}}): "
                           "expected a tensor with 2 or more dimensions of float, double, "
                           "cfloat or cdouble types")
    xp = xp_of(A)
    atol = _tol_array(xp, atol, "torch.linalg.pinv", "atol")
    rtol = _tol_array(xp, rtol, "torch.linalg.pinv", "rtol")
    m, n = d.shape[-2:]
    if d.size == 0:
        r = xp.zeros(d.shape[:-2] + (n, m), dtype=d.dtype)
    elif hermitian:
        check_matrix(A, "linalg.eigh", square=True)
        w, v = xp.linalg.eigh(d)
        aw = xp.abs(w)
        tol = _tolerance(xp, aw.max(-1, keepdims=True), d.shape, atol, rtol, w.dtype)
        winv = xp.where(aw > tol, 1 / xp.where(w == 0, 1, w), 0).astype(w.dtype)
        r = (v * winv[..., None, :]) @ xp.conj(v.swapaxes(-1, -2))
    else:
        u, s, vh = _svd(A, d, full_matrices=False)
        tol = _tolerance(xp, s[..., :1], d.shape, atol, rtol, s.dtype)
        sinv = xp.where(s > tol, 1 / xp.where(s == 0, 1, s), 0).astype(s.dtype)
        r = (xp.conj(vh.swapaxes(-1, -2)) * sinv[..., None, :]) @ xp.conj(u.swapaxes(-1, -2))
    res = _make(r, A._device)
    if needs_grad(A):
        record(LinalgPinvBackward0, res, (A,), (A,), None, True)
    return res


@accepts_out
def matrix_rank(input, tol=_NOT_GIVEN, hermitian=False, *, atol=None, rtol=None, out=None):
    """Number of singular values above ``max(atol, rtol * s_max)`` (an int64 tensor); ``tol``
    (the positional overload) is ``atol`` with ``rtol = 0``."""
    A = input  # PyTorch's binding names it input (its docs: A)
    if tol is not _NOT_GIVEN:
        if atol is not None or rtol is not None or isinstance(tol, (str, bool)) or tol is None:
            given = {k: v for k, v in (("atol", atol), ("rtol", rtol)) if v is not None}
            raise _overload_error("linalg_matrix_rank", A, "tol", {"tol": tol}, given)
        atol, rtol = tol, 0.0
    d = A._data
    if d.ndim < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least "
                           "2 dimensions.")
    if d.dtype not in _FLOAT_KINDS:
        raise RuntimeError("This function doesn't handle types other than float and double")
    xp = xp_of(A)
    atol = _tol_array(xp, atol, "torch.linalg.matrix_rank", "atol")
    rtol = _tol_array(xp, rtol, "torch.linalg.matrix_rank", "rtol")
    if d.size == 0:
        return _make(xp.zeros(d.shape[:-2], dtype=np.int64), A._device)
    if hermitian:
        check_matrix(A, "linalg.eigh", square=True)
        s = xp.abs(xp.linalg.eigvalsh(d))
        smax = s.max(-1, keepdims=True)
    else:
        s = _svd(A, d, compute_uv=False)
        smax = s[..., :1]
    tol_ = _tolerance(xp, smax, d.shape, atol, rtol, s.dtype)
    return _make((s > tol_).sum(-1).astype(np.int64), A._device)


def _keyword_overload(*keywords) -> inspect.Signature:
    """The signature of PyTorch's keyword overload ``(input, *, keywords...)``: what
    ``inspect`` reports for ``pinv``/``matrix_rank`` and the C++ op table binds (their
    positional ``rcond``/``tol`` form is PyTorch's second overload, taken as well)."""
    P = inspect.Parameter
    return inspect.Signature([P("input", P.POSITIONAL_OR_KEYWORD)]
                             + [P(k, P.KEYWORD_ONLY, default=d) for k, d in keywords])


pinv.__signature__ = _keyword_overload(("atol", None), ("rtol", None), ("hermitian", False),
                                       ("rcond", None), ("out", None))
matrix_rank.__signature__ = _keyword_overload(("atol", None), ("rtol", None),
                                              ("hermitian", False), ("tol", None),
                                              ("out", None))

_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


@accepts_out
def lstsq(input, b, rcond=None, *, driver=None):
    """Least-squares solution of ``A X = B`` (minimum norm), with PyTorch's extra outputs:
    residuals (drivers gelsd/gelss/gels, full-rank tall ``A``), rank (all but gels) and
    singular values (gelsd/gelss)."""
    A, B = input, b  # PyTorch's binding names them input and b (docs: A, B)
    ad, bd = A._data, B._data
    fn = "torch.linalg.lstsq"
    if ad.ndim < 2:
        raise RuntimeError(f"{fn}: input must have at least 2 dimensions.")
    if bd.ndim < 1:
        raise RuntimeError(f"{fn}: other must have at least 1 dimension.")
    if ad.dtype != bd.dtype:
        raise RuntimeError(f"{fn}: Expected input and other to have the same dtype, but got "
                           f"input's dtype {scalar_type_name(ad.dtype)} and other's dtype "
                           f"{scalar_type_name(bd.dtype)}")
    vector = ad.ndim - bd.ndim == 1
    if not 0 <= ad.ndim - bd.ndim <= 1:
        raise RuntimeError(f"{fn}: input.dim() must be greater or equal to other.dim() and "
                           "(input.dim() - other.dim()) <= 1")
    late = vector and bd.ndim > 1  # a batch of vectors: its size is checked after broadcasting
    if not late and (bd.shape[-1] if vector else bd.shape[-2]) != ad.shape[-2]:
        raise RuntimeError(f"{fn}: input.size(-2) should match other.size("
                           f"{-1 if vector else -2})")
    driver = "gelsy" if driver is None else driver
    if driver not in _DRIVERS:
        raise RuntimeError(f"{fn}: parameter `driver` should be one of (gels, gelsy, gelsd, "
                           "gelss)")
    if ad.dtype not in _FLOAT_KINDS:
        raise RuntimeError("This function doesn't handle types other than float and double")
    Bm = B.unsqueeze(-1) if vector else B
    broadcast_shapes_or_raise(ad.shape[:-2], Bm._data.shape[:-2])
    if late and bd.shape[-1] != ad.shape[-2]:
        raise RuntimeError(f"{fn}: input.size(-2) should match other.size(-2)")
    xp = xp_of(A)
    m, n = ad.shape[-2:]
    if driver == "gels" and ad.size:
        _gels_full_rank(xp, A, m, n)
    with no_grad():
        if driver == "gelsy" and ad.size and Bm._data.size:
            X, rank = _gelsy(A, Bm, rcond)
        else:  # gels ignores rcond; gelsd/gelss cut the SVD at it, as pinv does
            X = pinv(A, rtol=None if driver == "gels" else rcond).matmul(Bm)
            rank = matrix_rank(A, rtol=rcond) if driver != "gels" else \
                const(A, xp.zeros((0,), dtype=np.int64))
    if needs_grad(A, Bm):  # PyTorch's derivative: pinv(A)'s (no rcond)
        record(LinalgLstsqBackward0, X, (A, Bm), (A, Bm))
    real = np.finfo(ad.dtype).dtype  # residuals and singular values are real
    empty = const(A, xp.zeros((0,), dtype=real))
    residuals = empty
    full_rank = driver in ("gels", "gelsy") or bool((rank._data == n).all())
    if driver != "gelsy" and m > n and full_rank:
        r = A.matmul(X) - Bm
        if r._data.dtype.kind == "c":  # |r|^2, real as PyTorch's
            r = ember_view_as_real(r)
            residuals = (r * r).sum((-3, -1))
        else:
            residuals = (r * r).sum(-2)  # (..., nrhs): 1 for a vector b, as PyTorch's
    sv = svdvals(A.detach()) if driver in ("gelsd", "gelss") else empty
    if vector:
        X = X.reshape(*X._data.shape[:-1])
    return LinalgLstsqResult(X, residuals, rank, sv)


def _pinv_backward(g, P, A):
    """PyTorch's ``pinv_backward``: the gradient with respect to ``A`` of a loss whose
    gradient with respect to ``P = pinv(A)`` is ``g``."""
    m, n = A._data.shape[-2:]
    Ph, gh = P.mH, g.mH
    if m <= n:
        K = gh.matmul(P)
        KPh = K.matmul(Ph)
        return (-(P.matmul(K)).mH + KPh - A.matmul(P).matmul(KPh)
                + Ph.matmul(P).matmul(gh - K.matmul(A)))
    K = P.matmul(gh)
    PhK = Ph.matmul(K)
    return (-(K.matmul(P)).mH + (gh - A.matmul(K)).matmul(P).matmul(Ph) + PhK
            - PhK.matmul(P).matmul(A))


def _lstsq_bw(node, g):
    """PyTorch's ``linalg_lstsq_backward``: the gradients of ``pinv(A) @ B`` (``pinv`` at its
    default tolerance, whatever the driver and ``rcond``), summed over broadcast batch dims."""
    A, B = node.saved
    P = pinv(A)
    gA = gB = None
    if A.requires_grad:
        gA = sum_to_size(_pinv_backward(g.matmul(B.mH), P, A), A._data.shape)
    if B.requires_grad:
        gB = sum_to_size(P.mH.matmul(g), B._data.shape)
    return gA, gB


LinalgLstsqBackward0 = make_node_class("LinalgLstsqBackward0", _lstsq_bw)
complex_own(LinalgLstsqBackward0)  # PyTorch's formula, conjugate transposes included


def _gelsy(A, B, rcond):
    """LAPACK's ``xGELSY`` (PyTorch's default CPU driver): ``A P = Q R`` by Householder QR with
    column pivoting, the rank ``r`` by incremental condition estimation on ``R`` (the largest
    ``r`` whose estimated condition stays under ``1 / rcond``), and the minimum-norm solution
    of the problem with ``R``'s rows past ``r`` dropped: ``X = P pinv(R[:r]) (Q^H B)[:r]``.
    ``rcond`` defaults to eps * max(m, n). Runs on the host; returns ``(X, rank)``."""
    backend = backend_of(A._device)
    xp = xp_of(A)
    a = backend.to_host(A._data)
    b = backend.to_host(B._data)
    m, n = a.shape[-2:]
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, (*batch, m, n)).reshape(-1, m, n)
    b = np.broadcast_to(b, (*batch, *b.shape[-2:])).reshape(-1, *b.shape[-2:])
    dt = a.dtype
    eps = float(np.finfo(dt).eps)
    rc = eps * max(m, n) if rcond is None else float(rcond)
    xs = np.empty((a.shape[0], n, b.shape[-1]), dtype=dt)
    ranks = np.empty(a.shape[0], dtype=np.int64)
    for i in range(a.shape[0]):
        xs[i], ranks[i] = _gelsy_one(a[i], b[i], rc, eps)
    X = xs.reshape(*batch, n, b.shape[-1])
    # the rank is A's, of A's batch shape (as PyTorch's), not of the broadcast one
    a_batch = A._data.shape[:-2]
    lead = (0,) * (len(batch) - len(a_batch))
    ranks = ranks.reshape(batch)[lead + tuple(slice(0, 1) if s == 1 else slice(None)
                                              for s in a_batch)]
    return (_make(backend.to_device(X, A._device.index) if xp is not np else X, A._device),
            const(A, xp.asarray(np.array(ranks, dtype=np.int64))))


def _gelsy_one(a, b, rcond: float, eps: float):
    """One matrix of :func:`_gelsy`: ``a`` (m, n) and ``b`` (m, k), NumPy arrays (copies)."""
    m, n = a.shape
    k = min(m, n)
    perm = np.arange(n)
    a = a.copy()
    b = b.copy()
    for j in range(k):  # A P = Q R, Q^H applied to b as each reflector is made (xGEQP3)
        norms = np.linalg.norm(a[j:, j:], axis=0)
        p = j + int(np.argmax(norms))  # the first of equal norms, as IDAMAX
        if p != j:
            a[:, [j, p]] = a[:, [p, j]]
            perm[[j, p]] = perm[[p, j]]
        alpha = a[j, j]
        xnorm = float(np.linalg.norm(a[j + 1:, j]))
        if xnorm == 0.0 and alpha.imag == 0:
            continue  # H = I (xLARFG's tau = 0)
        beta = -math.copysign(math.hypot(abs(alpha), xnorm), alpha.real)
        tau = (beta - alpha.real) / beta - 1j * alpha.imag / beta if a.dtype.kind == "c" \
            else (beta - alpha) / beta
        v = a[j:, j] / (alpha - beta)
        v[0] = 1
        ctau = np.conj(tau)
        a[j:, j + 1:] -= np.outer(v, ctau * (v.conj() @ a[j:, j + 1:]))
        b[j:] -= np.outer(v, ctau * (v.conj() @ b[j:]))
        a[j, j] = beta
        a[j + 1:, j] = 0
    r = a[:k]
    smax = abs(r[0, 0]) if k else 0.0
    if smax == 0.0:
        return np.zeros((n, b.shape[1]), dtype=a.dtype), 0
    rank, smin = 1, smax
    xmin = np.ones(1, dtype=a.dtype)
    xmax = np.ones(1, dtype=a.dtype)
    while rank < k:  # xGELSY's incremental condition estimation (xLAIC1)
        w, gamma = r[:rank, rank], r[rank, rank]
        sminpr, s1, c1 = _laic1(False, xmin, smin, w, gamma, eps)
        smaxpr, s2, c2 = _laic1(True, xmax, smax, w, gamma, eps)
        if smaxpr * rcond > sminpr:
            break
        xmin = np.append(s1 * xmin, c1)
        xmax = np.append(s2 * xmax, c2)
        smin, smax = sminpr, smaxpr
        rank += 1
    c = b[:rank]
    r1 = r[:rank]
    if rank == n:
        y = np.linalg.solve(np.triu(r1), c)
    else:  # the minimum-norm solution of R[:r] y = c: R[:r]^H = Z T, y = Z T^-H c
        z, t = np.linalg.qr(r1.conj().T)
        y = z @ np.linalg.solve(t.conj().T, c)
    x = np.empty((n, b.shape[1]), dtype=a.dtype)
    x[perm] = y
    return x, rank


def _laic1(largest: bool, x, sest: float, w, gamma, eps: float):
    """LAPACK's ``xLAIC1``: one step of incremental condition estimation. ``x`` (unit norm)
    approximates a singular vector of a triangular ``L`` with ``|L x| = sest``; returns
    ``(sestpr, s, c)`` with ``[s x; c]`` the approximate singular vector of ``L`` bordered by
    the row ``[w^H gamma]`` and ``sestpr`` its singular value (the largest one when
    ``largest``, else the smallest), computed without squaring small quantities."""
    alpha = complex(np.vdot(x, w)) if x.dtype.kind == "c" else float(np.dot(x, w))
    gamma = complex(gamma) if x.dtype.kind == "c" else float(gamma)
    absalp, absgam, absest = abs(alpha), abs(gamma), abs(sest)
    conj = (lambda z: z.conjugate())

    def unit(sn, cs):
        nrm = math.sqrt(abs(sn) ** 2 + abs(cs) ** 2)
        return sn / nrm, cs / nrm

    if largest:
        if sest == 0:
            s1 = max(absgam, absalp)
            if s1 == 0:
                return 0.0, 0.0, 1.0
            sn, cs = unit(alpha / s1, gamma / s1)
            return s1 * math.sqrt(abs(alpha / s1) ** 2 + abs(gamma / s1) ** 2), sn, cs
        if absgam <= eps * absest:
            tmp = max(absest, absalp)
            return tmp * math.hypot(absest / tmp, absalp / tmp), 1.0, 0.0
        if absalp <= eps * absest:
            return (absest, 1.0, 0.0) if absgam <= absest else (absgam, 0.0, 1.0)
        if absest <= eps * absalp or absest <= eps * absgam:
            big = max(absgam, absalp)
            scl = math.sqrt(1 + (min(absgam, absalp) / big) ** 2)
            return big * scl, (alpha / big) / scl, (gamma / big) / scl
        z1, z2 = absalp / absest, absgam / absest
        bb = (1 - z1 * z1 - z2 * z2) / 2
        cc = z1 * z1
        t = cc / (bb + math.sqrt(bb * bb + cc)) if bb > 0 else math.sqrt(bb * bb + cc) - bb
        sn, cs = unit(-(alpha / absest) / t, -(gamma / absest) / (1 + t))
        return math.sqrt(t + 1) * absest, sn, cs
    if sest == 0:
        if max(absgam, absalp) == 0:
            sn, cs = 1.0, 0.0
        else:
            sn, cs = -conj(gamma), conj(alpha)
        s1 = max(abs(sn), abs(cs))
        return (0.0, *unit(sn / s1, cs / s1))
    if absgam <= eps * absest:
        return absgam, 0.0, 1.0
    if absalp <= eps * absest:
        return (absgam, 0.0, 1.0) if absgam <= absest else (absest, 1.0, 0.0)
    if absest <= eps * absalp or absest <= eps * absgam:
        if absgam <= absalp:
            tmp = absgam / absalp
            scl = math.sqrt(1 + tmp * tmp)
            return (absest * (tmp / scl), -(conj(gamma) / absalp) / scl,
                    (conj(alpha) / absalp) / scl)
        tmp = absalp / absgam
        scl = math.sqrt(1 + tmp * tmp)
        return absest / scl, -(conj(gamma) / absgam) / scl, (conj(alpha) / absgam) / scl
    z1, z2 = absalp / absest, absgam / absest
    norma = max(1 + z1 * z1 + z1 * z2, z1 * z2 + z2 * z2)
    if 1 + 2 * (z1 - z2) * (z1 + z2) >= 0:  # the root is near zero: computed directly
        bb = (z1 * z1 + z2 * z2 + 1) / 2
        cc = z2 * z2
        t = cc / (bb + math.sqrt(abs(bb * bb - cc)))
        sn, cs = (alpha / absest) / (1 - t), -(gamma / absest) / t
        sestpr = math.sqrt(t + 4 * eps * eps * norma) * absest
    else:  # the root is nearer one: shifted by it
        bb = (z2 * z2 + z1 * z1 - 1) / 2
        cc = z1 * z1
        t = -cc / (bb + math.sqrt(bb * bb + cc)) if bb >= 0 else bb - math.sqrt(bb * bb + cc)
        sn, cs = -(alpha / absest) / t, -(gamma / absest) / (1 + t)
        sestpr = math.sqrt(1 + t + 4 * eps * eps * norma) * absest
    return (sestpr, *unit(sn, cs))


def _gels_full_rank(xp, A, m, n) -> None:
    """LAPACK's gels fails (trtrs's info) on a zero diagonal element of the triangular factor
    of its QR (LQ for a wide ``A``): PyTorch's error then. Whether rounding leaves an exact
    zero depends on the LAPACK, so elements below eps * max(m, n) * max|diag| count as zero
    (a rank-deficient ``A``, gels's documented failure)."""
    d = A._data if m >= n else xp.conj(A._data.swapaxes(-1, -2))
    diag = xp.abs(xp.linalg.qr(d, mode="r").diagonal(0, -2, -1))
    tol = np.finfo(diag.dtype).eps * max(m, n) * diag.max(-1, keepdims=True)
    zero = diag <= tol
    if not bool(zero.any()):
        return
    flat = flatten_batch(xp.asarray(zero), 1)
    i = int(xp.nonzero(flat.any(-1))[0][0])
    k = int(xp.nonzero(flat[i])[0][0]) + 1
    raise LinAlgError(f"torch.linalg.lstsq: {batch_prefix(A, i)}The least squares solution "
                      "could not be computed because the input matrix does not have full rank "
                      f"(error code: {k}).")


def ember_view_as_real(t):
    """``ember.view_as_real`` (looked up on use)."""
    from .complex_ops import view_as_real

    return view_as_real(t)


# -- matrix_power ---------------------------------------------------------------------------

def _copy_backwards(node, g):
    """The gradient of an input overwritten by ``copy_`` (matrix_power(A, 0)): zeros."""
    return (g.new_zeros(g.shape),)


CopyBackwards = make_node_class("CopyBackwards", _copy_backwards)
mark_holomorphic(CopyBackwards)  # zeros: linear


@accepts_out(dtype_rule="same")
def matrix_power(input, n: int, *, out=None):
    """``A`` to the integer power ``n`` by repeated squaring (``n < 0`` inverts first)."""
    return _matrix_power(input, n, "linalg_matrix_power")


def _matrix_power(input, n, _name):
    """``matrix_power`` whose argument errors name ``_name`` (``torch.matrix_power``'s own)."""
    A = input  # PyTorch's binding names it input (its docs: A)
    if n.__class__ is not int:
        if isinstance(n, bool) or not hasattr(n, "__index__"):
            raise TypeError(f"{_name}(): argument 'n' (position 2) must be int, not "
                            f"{type(n).__name__}")
        n = n.__index__()
    d = A._data
    check_dims(d, "linalg.matrix_power")
    check_square(d, "linalg.matrix_power")
    n = int(n)
    if n == 0:  # identities; of an A that requires grad, with a zero gradient (PyTorch's copy_)
        xp = xp_of(A)
        out = _make(xp.broadcast_to(xp.eye(d.shape[-1], dtype=d.dtype), d.shape).copy(),
                    A._device)
        if needs_grad(A):
            record(CopyBackwards, out, (A,), (), None)
        return out
    if n < 0:
        A, n = inv(A), -n
    elif n == 1:
        return A.clone()
    result = None
    base = A
    while n:
        if n & 1:
            result = base if result is None else result.matmul(base)
        n >>= 1
        if n:
            base = base.matmul(base)
    return result
