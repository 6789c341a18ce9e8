"""The eigendecomposition of a general square matrix (``ember.linalg.eig``, ``eigvals``).

The results are always complex (``complex64`` for float32/complex64 input, ``complex128``
for float64/complex128), the eigenvectors of norm 1 as LAPACK's geev returns them. The
backward is PyTorch's ``linalg_eig_backward``: the eigenvectors are defined only up to a phase
``e^{i phi}`` per column, so a loss of them must not depend on it (gauge invariance); the
backward checks that, as PyTorch's does.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype
from .._device import xp_of
from .._dtype import scalar_type_name
from .._front import front as numpy_names  # PyTorch's NumPy keyword names (x=, axis=)
from .._tensor import _make
from ..autograd.graph import make_node_class
from ._inplace import write_out
from .linalg_common import (
    LinalgEigResult,
    check_dims,
    check_square,
    const,
    eye_like,
    multi_ctx,
    needs_grad,
    record_multi,
    saved_outputs,
)

__all__ = ["eig", "eigvals"]


def _check(A, fn: str) -> np.dtype:
    """PyTorch's checks of ``linalg.eig``/``eigvals`` in its order; the complex result dtype."""
    dt = A._data.dtype
    if dt not in _dtype.FLOATING_NP and dt not in _dtype.COMPLEX_NP:
        # PyTorch asks for the complex type of the input's first
        raise RuntimeError(f"Unknown Complex ScalarType for {scalar_type_name(dt)}")
    check_dims(A._data, fn)
    check_square(A._data, fn)
    if dt in _dtype.OPMATH:  # float16, bfloat16
        raise NotImplementedError(f'"linalg_eig_out_cpu" not implemented for '
                                  f"'{scalar_type_name(dt)}'")
    return np.result_type(dt, np.complex64)


def _eig_arrays(A, ctype, vectors: bool):
    """Eigenvalues (and eigenvectors) of ``A``'s matrices as ``ctype`` arrays."""
    d = A._data
    xp = xp_of(A)
    if d.size == 0:
        w = xp.zeros(d.shape[:-1], dtype=ctype)
        return (w, xp.zeros(d.shape, dtype=ctype)) if vectors else (w, None)
    linalg = xp.linalg
    if hasattr(linalg, "eig"):
        if vectors or not hasattr(linalg, "eigvals"):
            w, v = linalg.eig(d)
            return w.astype(ctype, copy=False), v.astype(ctype, copy=False) if vectors else None
        return linalg.eigvals(d).astype(ctype, copy=False), None
    # an array module without a general eigensolver (CuPy before v14): LAPACK on the host
    host = A._host()
    if vectors:
        w, v = np.linalg.eig(host)
        return xp.asarray(w.astype(ctype)), xp.asarray(v.astype(ctype))
    return xp.asarray(np.linalg.eigvals(host).astype(ctype)), None


def _check_out(out, ctype, fn: str, what: str):
    """PyTorch's dtype check of an ``out=`` tensor of ``eig``/``eigvals``."""
    odt = out._data.dtype
    if odt.kind != "c":  # any complex dtype will do (PyTorch's canCast)
        raise RuntimeError(f"torch.{fn}: Expected {what} to be safely castable from "
                           f"{scalar_type_name(np.dtype(ctype))} dtype, but got {what} with "
                           f"dtype {scalar_type_name(odt)}")


# -- backward ---------------------------------------------------------------------------------

def _phase_check(diag, fn: str) -> None:
    """PyTorch's check that a loss of the eigenvectors does not depend on their phases."""
    im = xp_of(diag).abs(diag._data.imag)
    if not bool((im <= 1e-2).all()):
        raise RuntimeError(f"{fn}: The eigenvectors in the complex case are specified up to "
                           "multiplication by e^{i phi}. The specified loss function depends on "
                           "this quantity, so it is ill-defined.")


def _eig_bw(node, grads):
    # gA = V^{-H} (diag(gL) + (V^H gV - V^H V diag(Re(V^H gV))) / conj(E)) V^H,
    # E_ij = L_j - L_i (arXiv:1701.00392, eq. 4.77, with the unit-norm eigenvectors' term)
    from .linalg_decompositions import solve

    L, V = saved_outputs(node)
    gL, gV = grads
    real_input = multi_ctx(node)
    if gL is None and gV is None:
        return (None,)
    Vh = V.mH
    if gV is None:  # eigvals: V^{-H} diag(gL) V^H
        gA = solve(Vh, gL.unsqueeze(-1) * Vh)
    else:
        VhgV = Vh.matmul(gV)
        diag = VhgV.diagonal(0, -2, -1)
        _phase_check(diag, "linalg_eig_backward")
        VhgV = VhgV - Vh.matmul(V * diag.real.unsqueeze(-2))
        Lc = L.conj()
        eye = eye_like(V)
        ret = VhgV / (Lc.unsqueeze(-2) - Lc.unsqueeze(-1) + eye)
        if gL is not None:
            ret = ret * (1 - eye) + gL.diag_embed()
        gA = solve(Vh, ret.matmul(Vh))
    if real_input:  # a real input takes the real part (PyTorch's handle_r_to_c)
        gA = gA.real
    return (gA,)


LinalgEigBackward0 = make_node_class("LinalgEigBackward0", _eig_bw, n_out=2)
LinalgEigBackward0._complex = "own"  # written for complex numbers (its outputs always are)


# -- the functions ------------------------------------------------------------------------------

@numpy_names
def eig(input, *, out=None):
    """Eigenvalues and eigenvectors of a square matrix (or batch): ``A V = V diag(L)``.

    Always complex (``complex64`` for float32 / complex64 input, ``complex128`` for float64
    / complex128); each eigenvector has norm 1. The eigenvectors are unique only up to a
    phase per column: gradients are defined for losses that do not depend on it (such as
    ``abs`` of them, or ``V diag(L) V^{-1}``), and backward raises otherwise."""
    A = input  # PyTorch's binding names it input (its docs: A)
    ctype = _check(A, "linalg.eig")
    xp = xp_of(A)
    if A._data.size and not bool(xp.isfinite(A._data).all()):
        raise RuntimeError("torch.linalg.eig: input tensor should not contain infs or NaNs.")
    if out is not None:
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            n = len(out) if isinstance(out, (tuple, list)) else 1
            raise TypeError(f"expected tuple of 2 elements but got {n}")
        _check_out(out[0], ctype, "linalg.eig", "eigenvalues")
        _check_out(out[1], ctype, "linalg.eig", "eigenvectors")
    w, v = _eig_arrays(A, ctype, True)
    L, V = _make(w, A._device), _make(v, A._device)
    if needs_grad(A):
        record_multi(LinalgEigBackward0, (L, V), (A,), (), A._data.dtype.kind != "c")
    if out is not None:
        return LinalgEigResult(write_out(out[0], L), write_out(out[1], V))
    return LinalgEigResult(L, V)


@numpy_names
def eigvals(input, *, out=None):
    """The eigenvalues of a square matrix (or batch), complex as ``eig``'s; differentiable
    (no gauge condition: the eigenvalues are unique)."""
    A = input  # PyTorch's binding names it input (its docs: A)
    ctype = _check(A, "linalg.eigvals")
    if out is not None:
        _check_out(out, ctype, "linalg.eigvals", "eigenvalues")
    if needs_grad(A):
        L = eig(A).eigenvalues
        return L if out is None else write_out(out, L)
    xp = xp_of(A)
    d = A._data
    finite = xp.isfinite(d).all((-2, -1)) if d.size else None
    if finite is not None and not bool(finite.all()):
        # LAPACK gives NaNs for a matrix with infs or NaNs (PyTorch returns them, no error)
        clean = _make(xp.where(finite[..., None, None], d, 0), A._device)
        w, _ = _eig_arrays(clean, ctype, False)
        w = xp.where(finite[..., None], w, xp.asarray(complex("nan+nanj"), dtype=ctype))
    else:
        w, _ = _eig_arrays(A, ctype, False)
    L = const(A, w)
    return L if out is None else write_out(out, L)
