"""Inverses, determinants, solvers and factorizations (``ember.linalg``), each with its
backward written in Tensor ops (differentiable again), after PyTorch's FunctionsManual."""

from __future__ import annotations

import numpy as np

from .._device import check_same_device, xp_of
from .._dtype import scalar_type_name
from .._tensor import _make
from ..autograd.graph import make_node_class, record
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
    const,
    eye_like,
    first_failing,
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


def _singular(A, fn: str):
    i, k = first_failing(A._host(), lu_zero_pivot)
    return LinAlgError(f"{fn}: {batch_prefix(A, i)}The diagonal element {k} is zero, the "
                       "inversion could not be completed because the input matrix is singular.")


# -- inv ------------------------------------------------------------------------------------

def _inv_bw(node, g):
    inv_t = node.output().mT
    return (-inv_t.matmul(g).matmul(inv_t),)


LinalgInvExBackward0 = make_node_class("LinalgInvExBackward0", _inv_bw)


@accepts_out
def inv(A, *, out=None):
    """Inverse of a square matrix (or batch); ``LinAlgError`` when it is singular."""
    check_matrix(A, "linalg.inv", square=True)
    try:
        r = xp_of(A).linalg.inv(A._data)
    except _LinAlgErrorNp:
        raise _singular(A, "linalg.inv") from None
    res = _make(r, A._device)
    if needs_grad(A):
        record(LinalgInvExBackward0, res, (A,), (), None, True)
    return res


@accepts_out
def inv_ex(A, *, check_errors=False, out=None):
    """``(inverse, info)``; ``info`` is the LAPACK status (0: success)."""
    return with_info(LinalgInvExResult, lambda: inv(A), A, lu_zero_pivot, check_errors)


# -- det, slogdet --------------------------------------------------------------------------

def _det_bw(node, g):
    (A,) = node.saved
    det_ = node.output()
    if bool((det_._data == 0).any()):
        return (_singular_det_grad(A, g),)
    return ((g * det_).unsqueeze(-1).unsqueeze(-1) * inv(A).mT,)


def _singular_det_grad(A, g):
    # det = det(U) det(Vh) prod(S): d det / dA = U diag(det(U) det(Vh) prod_{j!=i} s_j) Vh
    # (first order only: the factors are taken as constants)
    xp = xp_of(A)
    u, s, vh = xp.linalg.svd(A._data)
    left = xp.concatenate([xp.ones_like(s[..., :1]), xp.cumprod(s[..., :-1], -1)], -1)
    right = xp.flip(xp.concatenate([xp.ones_like(s[..., :1]),
                                    xp.cumprod(xp.flip(s[..., 1:], -1), -1)], -1), -1)
    scale = left * right * (xp.linalg.det(u) * xp.linalg.det(vh))[..., None]
    core = const(A, u).matmul(const(A, scale[..., :, None] * vh))
    return g.unsqueeze(-1).unsqueeze(-1) * core


LinalgDetBackward0 = make_node_class("LinalgDetBackward0", _det_bw)


@accepts_out
def det(A, *, out=None):
    """Determinant of a square matrix (or batch)."""
    check_matrix(A, "linalg.det", square=True)
    res = _make(xp_of(A).linalg.det(A._data), A._device)
    if needs_grad(A):
        record(LinalgDetBackward0, res, (A,), (A,), None, True)
    return res


def _slogdet_bw(node, grads):
    (A,) = node.saved
    g = grads[1]
    if g is None:  # only the sign was used: it is piecewise constant
        return (None,)
    return (g.unsqueeze(-1).unsqueeze(-1) * inv(A).mT,)


LinalgSlogdetBackward0 = make_node_class("LinalgSlogdetBackward0", _slogdet_bw, n_out=2)


@accepts_out
def slogdet(A, *, out=None):
    """``(sign, logabsdet)`` of the determinant; only ``logabsdet`` has a gradient."""
    check_matrix(A, "linalg.slogdet", square=True)
    sign, logabs = xp_of(A).linalg.slogdet(A._data)
    sign = _make(sign, A._device)
    logabs = _make(logabs, A._device)
    if needs_grad(A):  # sign is attached as in PyTorch, but gets no gradient
        record_multi(LinalgSlogdetBackward0, (sign, logabs), (A,), (A,))
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


@accepts_out
def solve(A, B, *, left=True, out=None):
    """The solution ``X`` of ``A X = B`` (``X A = B`` with ``left=False``), batches broadcast;
    ``B`` of ``A``'s shape without the last dim (or 1-D) is a vector right-hand side."""
    if not left:
        return solve(A.mT, B.mT).mT
    check_matrix(A, "linalg.solve", square=True)
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
    try:
        x = xp.linalg.solve(ad, bm)
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
        record(LinalgSolveExBackward0, res, (A, B), (A, B), vector, True)
    return res


# -- cholesky -------------------------------------------------------------------------------

def _tril_half_mask(L):
    """Lower-triangular ones with halved diagonal (PyTorch's Phi), L's dtype and device."""
    n = L._data.shape[-1]
    xp = xp_of(L)
    m = xp.tril(xp.ones((n, n), dtype=L._data.dtype))
    m[xp.arange(n), xp.arange(n)] = 0.5
    return const(L, m)


def _cholesky_bw(node, g):
    # Murray (2016), arXiv:1602.07527: gA = sym(L^{-H} Phi(L^H gL) L^{-1})
    upper = node.ctx
    L = node.output()
    if upper:
        L, g = L.mT, g.mT
    phi = L.mT.matmul(g) * _tril_half_mask(L)
    L_inv = inv(L)
    gA = L_inv.mT.matmul(phi).matmul(L_inv)
    return ((gA + gA.mT) * 0.5,)


LinalgCholeskyExBackward0 = make_node_class("LinalgCholeskyExBackward0", _cholesky_bw)


def _not_pd_order(a) -> int:
    """1-based order of the first leading minor that is not positive-definite (potrf's
    ``info``), 0 when there is none. Runs only on the error path."""
    a = np.array(a, dtype=np.float64, copy=True)
    n = a.shape[0]
    for k in range(n):
        d = a[k, k] - a[k, :k] @ a[k, :k]
        if not d > 0:
            return k + 1
        a[k, k] = np.sqrt(d)
        a[k + 1:, k] = (a[k + 1:, k] - a[k + 1:, :k] @ a[k, :k]) / a[k, k]
    return 0


@accepts_out
def cholesky(A, *, upper=False, out=None, _name="linalg.cholesky"):
    """Cholesky factor ``L`` (``A = L L^T``, lower triangle of ``A`` read); ``upper=True``
    gives ``L^T``. ``LinAlgError`` when ``A`` is not positive-definite."""
    check_matrix(A, _name, square=True)
    try:
        r = xp_of(A).linalg.cholesky(A._data)
    except _LinAlgErrorNp:
        i, k = first_failing(A._host(), _not_pd_order)
        raise LinAlgError(f"{_name}: {batch_prefix(A, i)}The factorization could not be "
                          "completed because the input is not positive-definite (the leading "
                          f"minor of order {k} is not positive-definite).") from None
    if upper:
        r = r.swapaxes(-1, -2)
    res = _make(r, A._device)
    if needs_grad(A):
        record(LinalgCholeskyExBackward0, res, (A,), (), upper, True)
    return res


@accepts_out
def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """``(L, info)``; ``info`` is the order of the failing leading minor (0: success)."""
    return with_info(LinalgCholeskyExResult, lambda: cholesky(A, upper=upper), A, _not_pd_order,
                     check_errors)


# -- qr -------------------------------------------------------------------------------------

def _qr_bw(node, grads):
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
    if m < n:
        # A = [X | Y] with X square: R = [U | V], V = Q^H Y (Liao et al. 2019)
        (A,) = node.saved
        Y = A.narrow(-1, m, n - m)
        gV = gR.narrow(-1, m, n - m) if gR is not None else None
        gU = gR.narrow(-1, 0, m) if gR is not None else None
        if gV is not None:
            gQ = Y.matmul(gV.mT) if gQ is None else gQ + Y.matmul(gV.mT)
        gX = _qr_square_grad(Q, R.narrow(-1, 0, m), gQ, gU)
        gY = Q.matmul(gV) if gV is not None else Y * 0
        return (cat([gX, gY], -1),)
    return (_qr_square_grad(Q, R, gQ, gR),)


def _qr_square_grad(Q, R, gQ, gR):
    # m >= n: gA = [gQ + Q copyltu(M)] R^{-H},  M = R gR^H - gQ^H Q
    M = None
    if gR is not None:
        M = R.matmul(gR.mT)
    if gQ is not None:
        M = -gQ.mT.matmul(Q) if M is None else M - gQ.mT.matmul(Q)
    sym = M.tril() + M.tril(-1).mT
    X = Q.matmul(sym)
    if gQ is not None:
        X = X + gQ
    return solve(R, X.mT).mT


LinalgQrBackward0 = make_node_class("LinalgQrBackward0", _qr_bw, n_out=2)


@accepts_out
def qr(A, mode="reduced", *, out=None):
    """QR decomposition ``A = Q R``; ``mode``: 'reduced', 'complete' or 'r' (R only)."""
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    check_matrix(A, "linalg.qr")
    xp = xp_of(A)
    m, n = A._data.shape[-2:]
    if mode == "r":
        q = xp.zeros((0,), dtype=A._data.dtype)
        r = xp.linalg.qr(A._data, mode="r")
    else:
        q, r = xp.linalg.qr(A._data, mode=mode)
    Q, R = _make(q, A._device), _make(r, A._device)
    if needs_grad(A):
        record_multi(LinalgQrBackward0, (Q, R), (A,), (A,) if m < n else (), (mode, m, n))
    return LinalgQrResult(Q, R)


# -- eigh -----------------------------------------------------------------------------------

def _eigh_bw(node, grads):
    # gA = V (diag(gL) + skew(V^H gV) / E) V^H,  E_ij = L_j - L_i (1 on the diagonal)
    L, V = saved_outputs(node)
    gL, gV = grads
    inner = None
    if gV is not None:
        VhgV = V.mT.matmul(gV)
        E = L.unsqueeze(-2) - L.unsqueeze(-1) + eye_like(V)
        inner = (VhgV - VhgV.mT) * 0.5 / E
    if gL is not None:
        diag = gL.diag_embed()
        inner = diag if inner is None else inner + diag
    return (V.matmul(inner).matmul(V.mT),)


LinalgEighBackward0 = make_node_class("LinalgEighBackward0", _eigh_bw, n_out=2)


def _check_uplo(UPLO):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


def _check_eigh(A, UPLO):
    _check_uplo(UPLO)
    dt = A._data.dtype
    if dt.kind != "f":  # PyTorch's kernel-dispatch error, not the usual dtype check
        raise NotImplementedError(f'"linalg_eigh_cpu" not implemented for '
                                  f"'{scalar_type_name(dt)}'")
    check_matrix(A, "linalg.eigh", square=True)


@accepts_out
def eigh(A, UPLO="L", *, out=None):
    """Eigenvalues (ascending) and eigenvectors of a symmetric matrix, of which only the
    ``UPLO`` triangle is read. Gradients assume distinct eigenvalues."""
    _check_eigh(A, UPLO)
    w, v = xp_of(A).linalg.eigh(A._data, UPLO=UPLO)
    L, V = _make(w, A._device), _make(v, A._device)
    if needs_grad(A):
        record_multi(LinalgEighBackward0, (L, V), (A,))
    return LinalgEighResult(L, V)


@accepts_out
def eigvalsh(A, UPLO="L", *, out=None):
    """Eigenvalues (ascending) of a symmetric matrix."""
    if needs_grad(A):
        return eigh(A, UPLO).eigenvalues
    _check_eigh(A, UPLO)
    return _make(xp_of(A).linalg.eigvalsh(A._data, UPLO=UPLO), A._device)


# -- svd ------------------------------------------------------------------------------------

def _svd_bw(node, grads):
    # PyTorch's svd_backward (real case, distinct singular values), on the reduced SVD
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
        UhgU = U.mT.matmul(gU)
        UhgU = UhgU - UhgU.mT
    if gVh is not None:
        VhgV = Vh.matmul(gVh.mT)
        VhgV = VhgV - VhgV.mT
    if gU is not None and gVh is not None:
        core = (UhgU * S_row + S_col * VhgV) / E
    elif gU is not None:
        core = UhgU * (S_row / E)
    else:
        core = S_col * (VhgV / E)
    if gS is not None:
        core = core + gS.diag_embed()
    if m > n and gU is not None:
        gA = U.matmul(core)
        gUSinv = gU / S_row
        gA = gA + gUSinv - U.matmul(U.mT.matmul(gUSinv))
        return (gA.matmul(Vh),)
    if m < n and gVh is not None:
        gA = core.matmul(Vh)
        SinvgVh = gVh / S_col
        gA = gA + SinvgVh - SinvgVh.matmul(Vh.mT).matmul(Vh)
        return (U.matmul(gA),)
    return (U.matmul(core.matmul(Vh)) if m >= n else U.matmul(core).matmul(Vh),)


LinalgSvdBackward0 = make_node_class("LinalgSvdBackward0", _svd_bw, n_out=3)


@accepts_out
def svd(A, full_matrices=True, *, driver=None, out=None):
    """Singular value decomposition ``A = U diag(S) Vh`` (``S`` descending). Gradients
    assume distinct singular values and, like PyTorch's, do not depend on the sign
    convention of the singular vectors."""
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on "
                           "CUDA inputs with cuSOLVER backend.")
    check_matrix(A, "linalg.svd")
    d = A._data
    xp = xp_of(A)
    m, n = d.shape[-2:]
    if d.size == 0:
        u = xp.broadcast_to(xp.eye(m, m if full_matrices else min(m, n), dtype=d.dtype),
                            d.shape[:-2] + (m, m if full_matrices else min(m, n))).copy()
        vh = xp.broadcast_to(xp.eye(n if full_matrices else min(m, n), n, dtype=d.dtype),
                             d.shape[:-2] + (n if full_matrices else min(m, n), n)).copy()
        s = xp.zeros(d.shape[:-2] + (min(m, n),), dtype=d.dtype)
    else:
        u, s, vh = xp.linalg.svd(d, full_matrices=full_matrices)
    U, S, Vh = (_make(x, A._device) for x in (u, s, vh))
    if needs_grad(A):
        record_multi(LinalgSvdBackward0, (U, S, Vh), (A,), (), (full_matrices, m, n))
    return LinalgSvdResult(U, S, Vh)


@accepts_out
def svdvals(A, *, driver=None, out=None):
    """Singular values, descending."""
    if needs_grad(A):
        return svd(A, full_matrices=False, driver=driver).S
    check_matrix(A, "linalg.svd")
    d = A._data
    if d.size == 0:
        return _make(xp_of(A).zeros(d.shape[:-2] + (min(d.shape[-2:]),), d.dtype), A._device)
    return _make(xp_of(A).linalg.svd(d, compute_uv=False), A._device)


# -- pinv, matrix_rank, lstsq ---------------------------------------------------------------

def _tolerance(xp, s, shape, atol, rtol, dtype):
    """PyTorch's cutoff ``max(atol, rtol * s_max)`` (rtol defaults to eps * max(m, n) when
    neither is given), shaped to broadcast against the singular values ``s``."""
    if rtol is None:
        rtol = np.finfo(dtype).eps * max(shape[-2:]) if atol is None or atol == 0 else 0.0
    smax = s.max(-1, keepdims=True) if s.shape[-1] else xp.zeros(s.shape[:-1] + (1,), s.dtype)
    return xp.maximum(0.0 if atol is None else atol, rtol * smax)


def _pinv_bw(node, g):
    (A,) = node.saved
    P = node.output()
    m, n = A._data.shape[-2:]
    Ph, gh = P.mT, g.mT
    if m <= n:
        K = gh.matmul(P)
        KPh = K.matmul(Ph)
        return (-(P.matmul(K)).mT + KPh - A.matmul(P).matmul(KPh)
                + Ph.matmul(P).matmul(gh - K.matmul(A)),)
    K = P.matmul(gh)
    PhK = Ph.matmul(K)
    return (-(K.matmul(P)).mT + (gh - A.matmul(K)).matmul(P).matmul(Ph) + PhK
            - PhK.matmul(P).matmul(A),)


LinalgPinvBackward0 = make_node_class("LinalgPinvBackward0", _pinv_bw)


@accepts_out
def pinv(A, *, atol=None, rtol=None, hermitian=False, rcond=None, out=None):
    """Moore-Penrose pseudo-inverse (through the SVD; ``hermitian`` uses ``eigh``).
    Singular values below ``max(atol, rtol * s_max)`` are treated as zero."""
    d = A._data
    if d.ndim < 2 or d.dtype.kind != "f":
        raise RuntimeError(f"linalg.pinv({scalar_type_name(d.dtype)}{{{_list_str(d.shape)}}}): "
                           "expected a tensor with 2 or more dimensions of float, double, "
                           "cfloat or cdouble types")
    if rcond is not None:
        rtol = rcond
    check_float(A, "linalg.pinv")
    xp = xp_of(A)
    if hermitian:
        check_matrix(A, "linalg.eigh", square=True)
        w, v = xp.linalg.eigh(d)
        tol = _tolerance(xp, xp.abs(w), d.shape, atol, rtol, d.dtype)
        winv = xp.where(xp.abs(w) > tol, 1 / xp.where(w == 0, 1, w), 0).astype(d.dtype)
        r = (v * winv[..., None, :]) @ v.swapaxes(-1, -2)
    else:
        u, s, vh = xp.linalg.svd(d, full_matrices=False)
        tol = _tolerance(xp, s, d.shape, atol, rtol, d.dtype)
        sinv = xp.where(s > tol, 1 / xp.where(s == 0, 1, s), 0).astype(d.dtype)
        r = (vh.swapaxes(-1, -2) * sinv[..., None, :]) @ u.swapaxes(-1, -2)
    res = _make(r, A._device)
    if needs_grad(A):
        record(LinalgPinvBackward0, res, (A,), (A,), None, True)
    return res


@accepts_out
def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, tol=None, out=None):
    """Number of singular values above ``max(atol, rtol * s_max)`` (an int64 tensor)."""
    d = A._data
    if d.ndim < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least "
                           "2 dimensions.")
    if d.dtype.kind != "f":
        raise RuntimeError("This function doesn't handle types other than float and double")
    check_float(A, "torch.linalg.matrix_rank")
    if tol is not None:
        atol, rtol = tol, 0.0
    xp = xp_of(A)
    s = xp.abs(xp.linalg.eigvalsh(d)) if hermitian else xp.linalg.svd(d, compute_uv=False)
    tol_ = _tolerance(xp, s, d.shape, atol, rtol, d.dtype)
    return _make((s > tol_).sum(-1).astype(np.int64), A._device)


_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A, B, rcond=None, *, driver=None):
    """Least-squares solution of ``A X = B`` (minimum norm), with PyTorch's extra outputs:
    residuals (drivers gelsd/gelss/gels, full-rank tall ``A``), rank (all but gels) and
    singular values (gelsd/gelss)."""
    driver = driver or "gelsy"
    if driver not in _DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, "
                           "gelsy, gelsd, gelss)")
    check_matrix(A, "torch.linalg.lstsq")
    ad, bd = A._data, B._data
    vector = bd.ndim == ad.ndim - 1
    Bm = B.unsqueeze(-1) if vector else B
    if Bm._data.shape[-2] != ad.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    X = pinv(A, rtol=rcond).matmul(Bm)
    xp = xp_of(A)
    m, n = ad.shape[-2:]
    empty = const(A, xp.zeros((0,), dtype=ad.dtype))
    rank = matrix_rank(A, rtol=rcond) if driver != "gels" else \
        const(A, xp.zeros((0,), dtype=np.int64))
    residuals = empty
    full_rank = driver == "gels" or bool((rank._data == n).all())
    if driver != "gelsy" and m > n and full_rank:
        r = A.matmul(X) - Bm
        residuals = (r * r).sum(-2)
        if vector:
            residuals = residuals.reshape(*residuals._data.shape[:-1])
    sv = svdvals(A.detach()) if driver in ("gelsd", "gelss") else empty
    if vector:
        X = X.reshape(*X._data.shape[:-1])
    return LinalgLstsqResult(X, residuals, rank, sv)


# -- matrix_power ---------------------------------------------------------------------------

def _copy_backwards(node, g):
    """The gradient of an input overwritten by ``copy_`` (matrix_power(A, 0)): zeros."""
    return (g.new_zeros(g.shape),)


CopyBackwards = make_node_class("CopyBackwards", _copy_backwards)


@accepts_out
def matrix_power(A, n: int, *, out=None):
    """``A`` to the integer power ``n`` by repeated squaring (``n < 0`` inverts first)."""
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
