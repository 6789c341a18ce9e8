"""``ember.lobpcg``: a few extreme eigenpairs of a large symmetric (positive definite)
generalized eigenproblem ``A x = lambda B x`` by the Locally Optimal Block Preconditioned
Conjugate Gradient method (Knyazev 2001), as ``torch.lobpcg``.

Each step builds the search basis ``S = [X, W, P]`` from the current approximation ``X``,
the preconditioned residuals ``W = iK R`` of the columns that have not converged, and the
previous step's direction ``P``, then keeps the ``n`` best Ritz vectors of ``A`` on that
basis (Rayleigh-Ritz). ``method="ortho"`` (the default) makes ``W`` and ``P``
``B``-orthogonal to ``X`` and ``B``-orthonormal among themselves by repeated projection and
SVQB (Stathopoulos and Wu 2002; Duersch et al. 2018), dropping directions that have become
dependent, so the Rayleigh-Ritz problem is a plain symmetric one; ``method="basic"`` solves
the Rayleigh-Ritz problem on the raw basis through a Cholesky factor of its Gram matrix,
which fails when the basis is (numerically) dependent.

The arithmetic runs on the tensors' arrays (NumPy or CuPy); ``A``, ``B`` and ``iK`` may be
sparse (they are only multiplied with). The gradient (``A`` dense, ``B`` None, as PyTorch)
is the symmetric eigenproblem's, restricted to the ``k`` pairs returned: for eigenvector
``j`` the part of its gradient outside the computed pairs is carried by the rest of
``A``'s spectrum, computed from a dense ``eigh`` of ``A`` in the backward only.
"""

from __future__ import annotations

import math

import numpy as np

from . import _dtype, _layout
from ._device import xp_of
from ._tensor import Tensor, _make
from .autograd.function import Function
from .autograd.grad_mode import GRAD, no_grad

__all__ = ["lobpcg", "LOBPCG"]

_EPS = {np.dtype(np.float32): 1.2e-07, np.dtype(np.float64): 2.23e-16}


def _arr(t):
    return None if t is None else t._data


def _times(M, V, device):
    """``M @ V`` for a dense or sparse tensor ``M`` (None: the identity) and an array ``V``."""
    if M is None:
        return V
    if M.layout is not _layout.strided:  # sparse: its own product
        return (M @ _make(V, device))._data
    return M._data @ V


def _sym(H):
    return (H + H.T) / 2


class LOBPCG:
    """The iteration's state, handed to ``tracker`` after every step (PyTorch's attribute
    names): ``A``, ``B``, ``iK``; ``E`` (Ritz values), ``X`` (Ritz vectors), ``R``
    (residuals), ``S`` (the last search basis); ``iparams``/``fparams``/``bparams`` (the
    integer/float/bool parameters) and ``ivars``/``fvars``/``bvars``/``tvars`` (``istep``,
    ``converged_count``, ``converged_end``, ``iterations_left``, ``ortho_i``, ``ortho_j``,
    the last residual errors ``rerr``, ...)."""

    def __init__(self, A, B, X, iK, iparams, fparams, bparams, method, tracker):
        self.A, self.B, self.iK = A, B, iK
        self.iparams, self.fparams, self.bparams = iparams, fparams, bparams
        self.method, self.tracker = method, tracker
        self.device = A.device
        self.xp = xp_of(A)
        self.ivars = {"istep": 0, "iterations_left": iparams["niter"], "converged_count": 0,
                      "converged_end": 0, "ortho_i": 0, "ortho_j": 0}
        self.fvars: dict = {}
        self.bvars = {"ortho_use_drop": bparams.get("ortho_use_drop", False)}
        self.tvars: dict = {}
        self._X0 = X._data.astype(A._data.dtype, copy=True)
        self.E = self.X = self.R = self.S = None

    # -- the arithmetic on arrays --------------------------------------------------------------
    def _A(self, V):
        return _times(self.A, V, self.device)

    def _B(self, V):
        return _times(self.B, V, self.device)

    def _K(self, V):
        return _times(self.iK, V, self.device)

    def _norms(self, X):
        """Estimates of ``||A||`` and ``||B||`` for the relative residual, as PyTorch takes
        them (``||A X|| / ||X||`` for the starting ``X``: cheap for sparse inputs too)."""
        xn = float(self.xp.linalg.norm(X))
        self.fvars["X_norm"] = xn
        return (float(self.xp.linalg.norm(self._A(X))) / xn,
                float(self.xp.linalg.norm(self._B(X))) / xn)

    def _pick(self, theta):
        """The order in which Ritz values are kept: largest first, or smallest first."""
        order = self.xp.argsort(theta)
        return order[::-1] if self.bparams["largest"] else order

    def _b_orthonormal(self, U, drop_tol):
        """``U`` made ``B``-orthonormal by SVQB (columns scaled to unit ``B``-norm, then the
        Gram matrix's eigenvectors); directions whose Gram eigenvalue falls below
        ``drop_tol`` times the largest are dropped. Repeated until ``|U^T B U - I|`` is
        within ``ortho_tol`` or ``ortho_j_max`` rounds."""
        xp = self.xp
        for j in range(self.iparams["ortho_j_max"]):
            self.ivars["ortho_j"] = j
            if U.shape[1] == 0:
                return U
            BU = self._B(U)
            G = _sym(U.T @ BU)
            d = xp.sqrt(xp.abs(xp.diagonal(G)))
            d = xp.where(d > 0, 1 / xp.where(d > 0, d, 1), 0)
            theta, Z = xp.linalg.eigh(G * d[:, None] * d[None, :])
            keep = theta > drop_tol * max(float(theta.max()), 0.0) if theta.size else theta > 0
            if not bool(keep.any()):
                return U[:, :0]
            Z, theta = Z[:, keep], theta[keep]
            U = (U * d[None, :]) @ (Z / xp.sqrt(theta)[None, :])
            BU = self._B(U)
            err = float(xp.abs(U.T @ BU - xp.eye(U.shape[1], dtype=U.dtype)).max())
            if err <= self.fparams["ortho_tol"]:
                return U
        return U

    def _project_out(self, U, X):
        """``U`` with its ``B``-components along the ``B``-orthonormal ``X`` removed (twice
        is enough: classical Gram-Schmidt repeated, ``ortho_i_max`` rounds at most)."""
        BX = self._B(X)
        for i in range(self.iparams["ortho_i_max"]):
            self.ivars["ortho_i"] = i
            U = U - X @ (BX.T @ U)
            if float(self.xp.abs(BX.T @ U).max(initial=0.0)) <= self.fparams["ortho_tol"] * \
                    max(1.0, float(self.xp.abs(U).max(initial=0.0))):
                break
        return U

    def _rayleigh_ritz(self, S, basic: bool):
        """Ritz values (in keeping order) and coefficient vectors of ``A`` on the basis
        ``S``: ``S^T A S c = theta S^T B S c``."""
        xp = self.xp
        H = _sym(S.T @ self._A(S))
        if basic:
            G = _sym(S.T @ self._B(S))
            try:
                L = xp.linalg.cholesky(G)
            except Exception as e:
                raise RuntimeError("lobpcg: the basis of a step is linearly dependent (the "
                                   "Cholesky factorization of its Gram matrix failed); "
                                   "method='ortho' handles this") from e
            Li = xp.linalg.inv(L)
            theta, C = xp.linalg.eigh(_sym(Li @ H @ Li.T))
            C = Li.T @ C
        else:
            theta, C = xp.linalg.eigh(H)
        order = self._pick(theta)
        return theta[order], C[:, order]

    def _residual_errors(self):
        """Relative residual per column: ``|r| / (|x| (|A| + |e| |B|))``."""
        xp = self.xp
        a_norm, b_norm = self.fvars["A_norm"], self.fvars["B_norm"]
        rn = xp.linalg.norm(self.R, axis=0)
        xn = xp.linalg.norm(self.X, axis=0)
        return rn / (xn * (a_norm + xp.abs(self.E) * b_norm))

    # -- the iteration -------------------------------------------------------------------------
    def run(self) -> None:
        xp = self.xp
        n, k = self.iparams["n"], self.iparams["k"]
        self.fvars["A_norm"], self.fvars["B_norm"] = self._norms(self._X0)
        basic = self.method == "basic"
        X = self._X0
        if basic:
            E, C = self._rayleigh_ritz(X, True)
        else:
            X = self._b_orthonormal(X, self.fparams["ortho_tol_drop"])
            if X.shape[1] < n:
                raise RuntimeError("lobpcg: the initial approximation X has dependent columns")
            E, C = self._rayleigh_ritz(X, False)
        self.X = X @ C
        # signs as the starting columns (the i-th Ritz vector against the i-th column)
        flip = xp.sum(self._B(X) * self.X, axis=0) < 0
        self.X = xp.where(flip[None, :], -self.X, self.X)
        self.E = E
        P = None
        tol = self.fparams["tol"]
        iv = self.ivars
        # the first Rayleigh-Ritz counts as step 1, as in PyTorch; ``niter`` steps are run
        # (a negative one: until converged), or fewer once k pairs have converged or the
        # tracker sets ``bvars["force_stop"]``
        iv["istep"], iv["iterations_left"] = 1, self.iparams["niter"] - 1
        while True:
            AX, BX = self._A(self.X), self._B(self.X)
            self.R = AX - BX * self.E[None, :]
            rerr = self._residual_errors()
            self.tvars["rerr"] = rerr
            conv = rerr < tol
            count = int(xp.argmin(conv)) if not bool(conv.all()) else n
            iv["converged_count"] = count
            iv["converged_end"] = n
            if self.tracker is not None:
                self.tracker(self)
            if (count >= k or iv["iterations_left"] == 0
                    or self.bvars.get("force_stop", False)):
                break
            iv["istep"] += 1
            iv["iterations_left"] -= 1
            active = ~conv
            W = self._K(self.R[:, active] if not bool(active.all()) else self.R)
            parts = [W] if P is None else [W, P]
            if basic:
                S = xp.concatenate([self.X, *parts], axis=1)
                E, C = self._rayleigh_ritz(S, True)
                U = S[:, n:]
            else:
                U = self._project_out(xp.concatenate(parts, axis=1), self.X)
                U = self._b_orthonormal(U, self.fparams["ortho_tol_drop"])
                S = xp.concatenate([self.X, U], axis=1)
                E, C = self._rayleigh_ritz(S, False)
            self.S = S
            C = C[:, :n]
            # each Ritz vector keeps the sign of the one it refines (eigh's signs are
            # arbitrary): the result is then a smooth function of A for a given X
            X_new = S @ C
            flip = xp.sum(self._B(self.X) * X_new, axis=0) < 0
            C = C * xp.where(flip, -1, 1).astype(C.dtype)[None, :]
            self.E = E[:n]
            P = U @ C[n:, :] if U.shape[1] else None
            self.X = xp.where(flip[None, :], -X_new, X_new)

    def result(self, k: int):
        return (_make(self.xp.ascontiguousarray(self.E[:k]), self.device),
                _make(self.xp.ascontiguousarray(self.X[:, :k]), self.device))


def _solve(A, B, k, X, n, iK, niter, tol, largest, method, tracker, ortho_iparams,
           ortho_fparams, ortho_bparams):
    """The forward on detached tensors (batches one matrix at a time)."""
    from ._random import randn

    if A.shape[-2] != A.shape[-1]:
        raise AssertionError(f"A must be square, got shape {A.shape}")
    if B is not None and A.shape != B.shape:
        raise AssertionError(f"A and B must have same shape, got {A.shape} vs {B.shape}")
    if A.dtype not in (_dtype.float32, _dtype.float64):
        raise RuntimeError(f"lobpcg: A must be a float32 or float64 tensor, but got {A.dtype}")
    npdt = np.dtype(A._data.dtype)
    if tol is None:
        tol = _EPS[npdt] ** 0.5
    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m}) "
                         f"is smaller than 3 x the number of requested eigenpairs (={n})")
    if not 1 <= k <= n:
        raise ValueError(f"lobpcg: expected 1 <= k <= n, but got k={k} and n={n}")
    method = "ortho" if method is None else method
    if method not in ("ortho", "basic"):
        raise ValueError(f"lobpcg: method must be 'ortho' or 'basic', but got {method!r}")
    iparams = {"m": m, "n": n, "k": k, "niter": 1000 if niter is None else niter}
    fparams = {"tol": tol}
    bparams = {"largest": True if largest is None else largest}
    if method == "ortho":
        iparams.update(ortho_iparams or {})
        fparams.update(ortho_fparams or {})
        bparams.update(ortho_bparams or {})
    iparams.setdefault("ortho_i_max", 3)
    iparams.setdefault("ortho_j_max", 3)
    fparams.setdefault("ortho_tol", tol)
    fparams.setdefault("ortho_tol_drop", tol)
    fparams.setdefault("ortho_tol_replace", tol)
    bparams.setdefault("ortho_use_drop", False)

    def one(A_, B_, X_, index):
        if X_ is None:
            X_ = randn((m, n), dtype=A.dtype, device=A.device)
        if tuple(X_.shape) != (m, n):
            raise AssertionError(f"X shape mismatch: got {X_.shape}, expected {(m, n)}")
        iparams["batch_index"] = index
        worker = LOBPCG(A_, B_, X_, iK, dict(iparams), fparams, bparams, method, tracker)
        worker.run()
        return worker.result(k)

    if len(A.shape) == 2:
        return one(A, B, X, 0)
    batch = tuple(A.shape[:-2])
    N = math.prod(batch)
    bA = A.reshape((N, m, m))
    bB = B.reshape((N, m, m)) if B is not None else None
    bX = X.reshape((N,) + tuple(X.shape[-2:])) if X is not None else None
    Es, Xs = [], []
    for i in range(N):
        e, x = one(bA[i], bB[i] if bB is not None else None, bX[i] if bX is not None else None,
                   i)
        Es.append(e._data)
        Xs.append(x._data)
    xp = xp_of(A)
    return (_make(xp.stack(Es).reshape(batch + (k,)), A.device),
            _make(xp.stack(Xs).reshape(batch + (m, k)), A.device))


def _eig_backward(A, E, U, gE, gU, largest):
    """``dL/dA`` of the symmetric eigenproblem given ``k`` of its pairs ``(E, U)`` (columns in
    keeping order) and the gradients of those: within the computed pairs the usual
    ``U (diag(gE) + F o (U^T gU)) U^T``, ``F_ij = 1/(e_j - e_i)``; the part of ``gU``'s
    column ``j`` outside them through the remaining eigenpairs of ``A``
    (``sum_i v_i v_i^T gU_j / (e_j - l_i)``, from a dense ``eigh``)."""
    from . import _factory, linalg

    k = E.shape[-1]
    Ut = U.mT
    out = None
    if gE is not None:
        out = (U * gE.unsqueeze(-2)) @ Ut
    if gU is not None:
        diff = E.unsqueeze(-2) - E.unsqueeze(-1)  # [i, j] = e_j - e_i
        eye = _factory.eye(k, dtype=E.dtype, device=E.device)
        F = (1 - eye) / (diff + eye)  # 0 on the diagonal
        inner = U @ (F * (Ut @ gU)) @ Ut
        lam, V = linalg.eigh(A)
        m = lam.shape[-1]
        # the eigenpairs lobpcg did not return: the first m - k of eigh's ascending order when
        # the largest were kept, else the last m - k
        rest = slice(0, m - k) if largest else slice(k, m)
        Vr, lr = V[..., :, rest], lam[..., rest]
        w = 1 / (E.unsqueeze(-2) - lr.unsqueeze(-1))  # [i, j] = 1 / (e_j - l_i)
        C = Vr @ (w * (Vr.mT @ gU))
        part = inner + C @ Ut
        out = part if out is None else out + part
    return out


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None,
           method=None, tracker=None, ortho_iparams=None, ortho_fparams=None,
           ortho_bparams=None):
    """The ``k`` largest (``largest=True``, the default) or smallest eigenvalues ``E`` of the
    symmetric positive definite generalized problem ``A X = B X diag(E)`` and their
    eigenvectors ``X`` (``B``-orthonormal), as ``torch.lobpcg``.

    ``A`` (and ``B``, ``iK``) are ``(*, m, m)`` dense or sparse; ``X`` (``(*, m, n)``, ``k <=
    n``) is the starting approximation (random normal of ``n`` columns, default ``k``, when
    not given); ``iK`` a preconditioner (an approximate inverse of ``A``); ``niter`` the step
    limit (default 1000, ``-1``: until converged); ``tol`` the relative residual at which a
    pair has converged (default ``sqrt(eps)`` of ``A``'s dtype); ``method`` ``"ortho"``
    (default) or ``"basic"``; ``tracker(state)`` is called after every step with the
    :class:`LOBPCG` state. Needs ``m >= 3 n``. Differentiable in ``A`` (dense, with ``B``
    None), which is symmetrized first as PyTorch does.
    """
    if not isinstance(A, Tensor):
        raise TypeError(f"lobpcg(): argument 'A' must be Tensor, not {type(A).__name__}")
    args = (k, X, n, iK, niter, tol, largest, method, tracker, ortho_iparams, ortho_fparams,
            ortho_bparams)
    needs_grad = A.requires_grad or (B is not None and B.requires_grad)
    if needs_grad and GRAD.enabled:
        if A.layout is not _layout.strided or (B is not None and
                                                B.layout is not _layout.strided):
            raise ValueError("lobpcg.backward does not support sparse input yet. Note that "
                             "lobpcg.forward does though.")
        if B is not None and B.requires_grad:
            raise ValueError("lobpcg.backward does not support backward with B != I yet.")
        return LOBPCGAutogradFunction.apply((A + A.mT) / 2, B, largest, args)
    with no_grad():
        return _solve(A.detach(), None if B is None else B.detach(), *_detached(args))


def _detached(args):
    k, X, n, iK, *rest = args
    return (k, None if X is None else X.detach(), n, None if iK is None else iK.detach(), *rest)


class LOBPCGAutogradFunction(Function):
    """The differentiable ``lobpcg`` (``A`` dense, ``B`` None): forward on detached tensors,
    backward by :func:`_eig_backward`."""

    @staticmethod
    def forward(ctx, A, B, largest, args):
        E, U = _solve(A, B, *_detached(args))
        ctx.save_for_backward(A, E, U)
        ctx.largest = True if largest is None else largest
        return E, U

    @staticmethod
    def backward(ctx, gE, gU):
        A, E, U = ctx.saved_tensors
        return _eig_backward(A, E, U, gE, gU, ctx.largest), None, None, None
