"""Householder QR in LAPACK's format: ``geqrf`` (R on and above the diagonal, the
reflectors' vectors below it, and their scales ``tau``), ``householder_product`` (LAPACK's
orgqr: the explicit Q) and ``ormqr`` (a product with Q without forming it).

``Q = H_1 ... H_k`` with ``H_i = I - tau_i v_i v_i^H`` (``v_i^T`` for real numbers), ``v_i``
zero above row i, one at row i and column i of the packed matrix below. For complex numbers
``tau`` is complex and ``H_i`` is not Hermitian (LAPACK's zlarfg: ``H^H x = beta e_1`` with
``beta`` real), and ``transpose`` in ``ormqr`` means the conjugate transpose, as in PyTorch.

The reflectors are applied by one loop over them, each step vectorised over the batch; the
same loop runs on arrays when no gradient is needed and on tensors (so that autograd records
it, double backward included for real numbers) when one is.
"""

from __future__ import annotations

import numpy as np

from .._device import check_same_device, xp_of
from .._dtype import scalar_type_name
from .._tensor import _make
from ._inplace import accepts_out
from .linalg import _list_str
from .linalg_common import (
    GeqrfResult,
    const,
    flatten_batch,
    kernel_dtype,
    needs_grad,
    not_differentiable,
    record_not_differentiable,
)

__all__ = ["geqrf", "householder_product", "ormqr"]


# -- geqrf -----------------------------------------------------------------------------------

def geqrf_array(xp, a):
    """Householder QR of ``a`` (batch, m, n) in place, LAPACK's geqr2 step by step (dlarfg /
    zlarfg's convention: ``beta = -sign(Re alpha) * norm``, real; ``tau = (beta - alpha) /
    beta``; ``H_j^H`` applied to the trailing columns); returns ``tau`` (batch, min(m, n))."""
    nb, m, n = a.shape
    k = min(m, n)
    cplx = a.dtype.kind == "c"
    tau = xp.zeros((nb, k), dtype=a.dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        for j in range(k):
            alpha = a[:, j, j]
            below = a[:, j + 1:, j]
            if cplx:
                alphr, alphi = alpha.real, alpha.imag
                xnorm = xp.sqrt((below.real ** 2 + below.imag ** 2).sum(-1))
                # zlarfg: H = I (tau = 0) when the column is reduced and alpha is real
                reflect = (xnorm != 0) | (alphi != 0)
                beta = -xp.copysign(xp.hypot(xp.hypot(alphr, alphi), xnorm), alphr)
            else:
                alphr = alpha
                xnorm = xp.sqrt((below * below).sum(-1))
                reflect = xnorm != 0  # dlarfg: H = I (tau = 0) when the column is reduced
                beta = -xp.copysign(xp.hypot(alpha, xnorm), alpha)
            safe_beta = xp.where(reflect, beta, 1)
            t = (beta - alphr) / safe_beta
            if cplx:
                t = t - 1j * (alphi / safe_beta)
            t = xp.where(reflect, t, 0)
            scale = xp.where(reflect, 1 / xp.where(reflect, alpha - beta, 1), 1)
            a[:, j + 1:, j] = below * scale[:, None]
            a[:, j, j] = xp.where(reflect, beta, alpha)
            tau[:, j] = t
            if j + 1 < n:  # apply H_j^H to the trailing columns: C -= conj(tau) v (v^H C)
                v = a[:, j:, j].copy()
                v[:, 0] = 1
                trailing = a[:, j:, j + 1:]
                w = (v.conj()[:, None, :] @ trailing)  # (nb, 1, n - j - 1)
                trailing -= (t.conj()[:, None] * v)[:, :, None] * w
    return tau


GeqrfBackward0 = not_differentiable("GeqrfBackward0", NotImplementedError)


@accepts_out
def geqrf(input):
    """``(a, tau)``: the QR decomposition in LAPACK's geqrf format (see the module doc).
    Not differentiable, as in PyTorch."""
    d = input._data
    if d.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    kernel_dtype(input, "geqrf_cpu", complex_ok=True)
    if d.dtype.kind == "c" and needs_grad(input):
        raise RuntimeError("geqrf does not support automatic differentiation for outputs with "
                           "complex dtype.")
    m, n = d.shape[-2:]
    a = flatten_batch(d).copy()
    tau = geqrf_array(xp_of(input), a)
    res_a = _make(a.reshape(d.shape), input._device)
    res_tau = _make(tau.reshape(d.shape[:-2] + (min(m, n),)), input._device)
    for t in (res_a, res_tau):
        record_not_differentiable(GeqrfBackward0, t, (input,),
                                  "the derivative for 'geqrf' is not implemented.")
    return GeqrfResult(res_a, res_tau)


# -- applying reflectors ---------------------------------------------------------------------

def apply_reflectors(V, tau, C, left: bool, transpose: bool, const_like):
    """``Q C`` / ``Q^H C`` (``left``) or ``C Q`` / ``C Q^H`` for ``Q = H_1 ... H_k``, the
    reflectors stored in the columns of ``V`` (..., m, >= k) and ``tau`` (..., k); ``Q^H`` is
    ``Q^T`` for real numbers.

    ``V``, ``tau`` and ``C`` are all arrays or all tensors (then every step is recorded by
    autograd); ``const_like(fn)`` makes the constant ``fn(xp, dtype)`` of the same kind. Only
    operators, indexing and ``conj()``, which arrays and tensors share, are used."""
    m = V.shape[-2]
    k = tau.shape[-1]
    cplx = V.dtype.is_complex if hasattr(V.dtype, "is_complex") else V.dtype.kind == "c"
    if cplx and transpose:  # H^H = I - conj(tau) v v^H
        tau = tau.conj()
    forward = left == transpose  # Q^H C = H_k^H ... H_1^H C applies H_1^H first
    for i in (range(k) if forward else range(k - 1, -1, -1)):
        below = const_like(lambda xp, dt, i=i: (xp.arange(m) > i).astype(dt))
        unit = const_like(lambda xp, dt, i=i: (xp.arange(m) == i).astype(dt))
        v = V[..., :, i] * below + unit  # (..., m): zero above i, one at i
        vh = v.conj() if cplx else v
        t = tau[..., i, None, None]
        if left:  # H C = C - tau v (v^H C)
            C = C - (t * v[..., :, None]) @ (vh[..., None, :] @ C)
        else:  # C H = C - (C v) tau v^H
            C = C - (C @ v[..., :, None]) @ (t * vh[..., None, :])
    return C


def _run(tensors, fn):
    """``fn(*args, const_like)`` on the tensors when autograd must record it, else on their
    arrays (the result wrapped as a tensor of the first one's device)."""
    first = tensors[0]
    xp, dt = xp_of(first), first._data.dtype
    if needs_grad(*tensors):
        r = fn(*tensors, lambda make: const(first, make(xp, dt)))
        return r.clone() if r is tensors[-1] else r  # no reflectors: a copy of C
    arrays = [t._data for t in tensors]
    r = fn(*arrays, lambda make: make(xp, dt))
    return _make(r.copy() if r is arrays[-1] else r, first._device)


# -- householder_product (orgqr) --------------------------------------------------------------

def _check_reflectors(ad, td, fn: str, cd=None):
    """PyTorch's checks of the arrays of ``geqrf``'s output (``input``, ``tau``) passed to
    ``fn``, and of the matrices ``other`` (``cd``) they multiply, where there are some."""
    if ad.ndim < 2:
        raise RuntimeError(f"{fn}: input must have at least 2 dimensions.")
    if cd is not None and cd.ndim < 2:
        raise RuntimeError(f"{fn}: other must have at least 2 dimensions.")
    if td.ndim != ad.ndim - 1:
        raise RuntimeError(f"{fn}: Expected tau to have one dimension less than input, but got "
                           f"tau.ndim equal to {td.ndim} and input.ndim is equal to {ad.ndim}")
    if cd is not None and cd.ndim != ad.ndim:
        raise RuntimeError(f"{fn}: Expected other to have the same number of dimensions as "
                           f"input, but got other.ndim equal to {cd.ndim} and input.ndim is "
                           f"equal to {ad.ndim}")
    batches = [("tau", td.shape[:-1])] + ([] if cd is None else [("other", cd.shape[:-2])])
    for name, batch in batches:
        if batch != ad.shape[:-2]:
            raise RuntimeError(f"{fn}: Expected batch dimensions of {name} to be equal to "
                               f"input.shape[:-2], but got {_list_str(batch)}")


@accepts_out
def householder_product(input, tau, *, out=None):
    """The first ``n`` columns of ``H_1 ... H_k`` (LAPACK's orgqr) for the reflectors in the
    columns of ``input`` (..., m, n) below the diagonal and ``tau`` (..., k), ``k <= n <= m``.
    Differentiable in both (only the strictly lower part of ``input`` is read)."""
    A = input
    fn = "torch.linalg.householder_product"
    ad, td = A._data, tau._data
    if ad.ndim >= 2 and ad.shape[-2] < ad.shape[-1]:
        raise RuntimeError(f"{fn}: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if ad.ndim >= 2 and td.ndim and ad.shape[-1] < td.shape[-1]:
        raise RuntimeError(f"{fn}: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    _check_reflectors(ad, td, fn)
    if td.dtype != ad.dtype:
        raise RuntimeError(f"{fn}: tau dtype {scalar_type_name(td.dtype)} does not match input "
                           f"dtype {scalar_type_name(ad.dtype)}")
    check_same_device(A, tau)
    kernel_dtype(A, "orgqr_cpu", complex_ok=True)
    m, n = ad.shape[-2:]
    xp = xp_of(A)
    eye = xp.broadcast_to(xp.eye(m, n, dtype=ad.dtype), ad.shape).copy()
    return _run((A, tau), lambda V, t, const_like: apply_reflectors(
        V, t, const_like(lambda xp, dt: eye), True, False, const_like))


@accepts_out(dtype_rule="same")
def ormqr(input, input2, input3, left=True, transpose=False, *, out=None):
    """``Q C`` (``Q^H C`` with ``transpose``, ``Q^T C`` for real numbers; ``C Q`` with
    ``left=False``) for ``C = input3`` and ``Q`` given by the reflectors of ``geqrf``
    (``input``, ``tau = input2``), without forming ``Q``. Differentiable in all three."""
    A, tau, C = input, input2, input3
    fn = "torch.ormqr"
    ad, td, cd = A._data, tau._data, C._data
    _check_reflectors(ad, td, fn, cd)
    side = -2 if left else -1
    if cd.shape[side] != ad.shape[-2]:
        raise RuntimeError(f"{fn}: other.shape[{side}] must be equal to input.shape[-2]")
    if td.shape[-1] != min(cd.shape[side], ad.shape[-1]):
        raise RuntimeError(f"{fn}: tau.shape[-1] must be equal to min(other.shape[{side}], "
                           "input.shape[-1])")
    for t, name in ((C, "other"), (tau, "tau")):
        if t._data.dtype != ad.dtype:
            raise RuntimeError(f"{fn}: Expected input and {name} to have the same dtype, but "
                               f"input has dtype{scalar_type_name(ad.dtype)} and {name} has dtype "
                               f"{scalar_type_name(t._data.dtype)}")
    check_same_device(A, tau, C)
    kernel_dtype(A, "ormqr_cpu", complex_ok=True)
    return _run((A, tau, C), lambda V, t, c, const_like: apply_reflectors(
        V, t, c, bool(left), bool(transpose), const_like))
