"""Matrix functions the orthogonal parametrization needs, composed from ember-core ops.

``torch.linalg.matrix_exp``, ``torch.linalg.householder_product`` and ``torch.geqrf`` have
no ember-core counterpart yet; these are built from differentiable Tensor ops (so autograd
gives their gradients) and work on batches of matrices ``(..., m, n)``.
"""

from __future__ import annotations

import math

import ember
from ember import Tensor

#: Taylor degree of ``matrix_exp`` once the matrix is scaled to a 1-norm of at most 1/2:
#: the truncation error is below 0.5**19 / 19! ~ 2e-23, under float64's rounding
_EXP_TAYLOR_DEGREE = 18


def _eye_like(A: Tensor, n: int, k: int | None = None) -> Tensor:
    return ember.eye(n, n if k is None else k, dtype=A.dtype, device=A.device)


def matrix_exp(A: Tensor) -> Tensor:
    """The matrix exponential of the square matrices ``A`` (``torch.linalg.matrix_exp``):
    scaling and squaring around a degree-18 Taylor polynomial (Horner's scheme)."""
    n = A.size(-1)
    with ember.no_grad():
        norm = A.abs().sum(-2).amax().item()  # the largest 1-norm of the batch
    squarings = max(0, math.ceil(math.log2(norm)) + 1) if norm > 0 else 0
    X = A / 2.0 ** squarings
    eye = _eye_like(A, n)
    E = eye + X / _EXP_TAYLOR_DEGREE
    for k in range(_EXP_TAYLOR_DEGREE - 1, 0, -1):
        E = eye + (X @ E) / k
    for _ in range(squarings):
        E = E @ E
    return E


def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first ``n`` columns of ``H_1 H_2 ... H_k`` with ``H_i = I - tau_i v_i v_i^T``,
    ``v_i`` the ``i``-th column of ``A`` below the diagonal with an implied 1 on it
    (``torch.linalg.householder_product``, LAPACK's ``orgqr``)."""
    m, n = A.size(-2), A.size(-1)
    reflectors = A.tril(-1) + _eye_like(A, m, n)
    Q = _eye_like(A, m, n).expand(*A.shape)
    for i in reversed(range(tau.size(-1))):
        v = reflectors[..., :, i:i + 1]
        Q = Q - tau[..., i, None, None] * (v @ (v.mT @ Q))
    return Q


def geqrf(A: Tensor) -> tuple[Tensor, Tensor]:
    """The QR decomposition of ``A`` in LAPACK's compact form (``torch.geqrf``, no gradient):
    ``R`` on and above the diagonal, the Householder vectors below it, and their scalars
    ``tau``, so that ``householder_product(a, tau) @ R == A``."""
    with ember.no_grad():
        a = A.clone()
        m, n = a.size(-2), a.size(-1)
        taus = [_householder_column(a, j, n) for j in range(min(m, n))]
        return a, ember.stack(taus, -1)


def _householder_column(a: Tensor, j: int, n: int) -> Tensor:
    """One step of ``geqrf`` on ``a`` in place: the reflector that zeroes column ``j`` below
    the diagonal (LAPACK's ``larfg``), applied to the columns after it. Returns its ``tau``."""
    alpha = a[..., j, j].clone()
    x = a[..., j + 1:, j]
    xnorm = ember.linalg.vector_norm(x, dim=-1)
    identity = xnorm == 0  # nothing to zero: the reflector is the identity, tau = 0
    beta = -ember.copysign(ember.hypot(alpha, xnorm), alpha)
    one = ember.ones_like(alpha)
    tau = ember.where(identity, ember.zeros_like(alpha),
                      (beta - alpha) / ember.where(identity, one, beta))
    v = x / ember.where(identity, one, alpha - beta).unsqueeze(-1)
    a[..., j + 1:, j] = ember.where(identity.unsqueeze(-1), x, v)
    a[..., j, j] = ember.where(identity, alpha, beta)
    if j + 1 < n:
        w = ember.cat([one.unsqueeze(-1), a[..., j + 1:, j]], -1).unsqueeze(-1)
        trailing = a[..., j:, j + 1:]
        a[..., j:, j + 1:] = trailing - tau[..., None, None] * w * (w * trailing).sum(-2, True)
    return tau
