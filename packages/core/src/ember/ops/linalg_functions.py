"""Functions of matrices and tensor reshapes of solvers: ``matrix_exp``, ``cond``,
``tensorinv``, ``tensorsolve``, ``vander``, ``diagonal``.

``matrix_exp`` is PyTorch's algorithm: the optimized Taylor polynomials of Bader, Blanes and
Casas (2019, degrees 1, 2, 4, 8, 12, 18), the degree picked per matrix from its 1-norm, and
scaling and squaring above the last threshold. The others are compositions of
differentiable ops, so their gradients come for free.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .. import _dtype
from .._device import xp_of
from .._dtype import scalar_type_name
from .._front import front as numpy_names  # PyTorch's NumPy keyword names (x=, axis=)
from .._tensor import _make
from ..autograd.graph import make_node_class, mark_holomorphic, record
from ._inplace import accepts_out
from .linalg_common import (
    LinAlgError,
    cat,
    check_dims,
    check_float,
    check_square,
    const,
    flatten_batch,
    needs_grad,
)
from .linalg_decompositions import inv, inv_ex, solve, svdvals
from .linalg_norms import matrix_norm

__all__ = ["matrix_exp", "cond", "tensorinv", "tensorsolve", "vander", "diagonal"]

# -- matrix_exp ------------------------------------------------------------------------------

#: the largest 1-norm each Taylor degree (1, 2, 4, 8, 12, 18) is accurate for
_THETAS = {
    np.dtype(np.float32): (1.192092800768788e-07, 5.978858893805233e-04, 5.116619363445086e-02,
                           5.800524627688768e-01, 1.461661507209034e+00, 3.010066362817634e+00),
    np.dtype(np.float64): (2.220446049250313e-16, 2.580956802971767e-08, 3.397168839976962e-04,
                           4.991228871115323e-02, 2.996158913811580e-01, 1.090863719290036e+00),
}

_SQRT_177 = 0.1330413469565007072504e+2
_X3 = 2.0 / 3.0
_T8 = ((_X3 * ((1.0 + _SQRT_177) / 88.0), _X3 * ((1.0 + _SQRT_177) / 352.0)),  # x1, x2
       ((-271.0 + 29.0 * _SQRT_177) / (315.0 * _X3), (-11.0 + 11.0 * _SQRT_177) / (1260.0 * _X3),
        (-99.0 + 11.0 * _SQRT_177) / (5040.0 * _X3), (89.0 - _SQRT_177) / (5040.0 * _X3)),
       (857.0 - 58.0 * _SQRT_177) / 630.0)  # x4..x7, y2

#: coefficients of T12 over (I, A, A^2, A^3), one row per intermediate matrix
_T12 = ((9.0198e-16, 0.46932117595418237389, -0.20099424927047284052, -0.04623946134063071740),
        (5.31597895759871264183, 1.19926790417132231573, 0.01179296240992997031,
         0.01108844528519167989),
        (0.18188869982170434744, 0.05502798439925399070, 0.09351590770535414968,
         0.00610700528898058230),
        (-2.0861320e-13, -0.13181061013830184015, -0.02027855540589259079,
         -0.00675951846863086359))

#: coefficients of T18 over (I, A, A^2, A^3, A^6)
_T18 = ((0.0, -1.00365581030144618291e-01, -8.02924648241156932449e-03,
         -8.92138498045729985177e-04, 0.0),
        (0.0, 3.97849749499645077844e-01, 1.36783778460411720168e+00,
         4.98289622525382669416e-01, -6.37898194594723280150e-04),
        (-1.09676396052962061844e+01, 1.68015813878906206114e+00, 5.71779846478865511061e-02,
         -6.98210122488052056106e-03, 3.34975017086070470649e-05),
        (-9.04316832390810593223e-02, -6.76404519071381882256e-02, 6.75961301770459654925e-02,
         2.95552570429315521194e-02, -1.39180257516060693404e-05),
        (0.0, 0.0, -9.23364619367118555360e-02, -1.69364939002081722752e-02,
         -1.40086798182036094347e-05))


def _combine(coefs, mats):
    """``sum_j coefs[j] * mats[j]`` (skipping zero coefficients)."""
    out = None
    for c, m in zip(coefs, mats):
        if c:
            out = c * m if out is None else out + c * m
    return out


def _taylor(xp, a, degree: int):
    """The optimized Taylor polynomial of ``exp`` of the given degree, for a (batch, n, n)."""
    eye = xp.broadcast_to(xp.eye(a.shape[-1], dtype=a.dtype), a.shape)
    if degree == 1:
        return eye + a
    a2 = a @ a
    if degree == 2:
        return eye + a + a2 / 2.0
    if degree == 4:
        return eye + a + a2 @ (eye / 2.0 + a / 6.0 + a2 / 24.0)
    if degree == 8:
        (x1, x2), (x4, x5, x6, x7), y2 = _T8
        a4 = a2 @ (x1 * a + x2 * a2)
        a8 = (_X3 * a2 + a4) @ (x4 * eye + x5 * a + x6 * a2 + x7 * a4)
        return eye + a + y2 * a2 + a8
    a3 = a2 @ a
    if degree == 12:
        b = [_combine(row, (eye, a, a2, a3)) for row in _T12]
        b[2] = b[2] + b[3] @ b[3]  # + A6
        return b[0] + (b[1] + b[2]) @ b[2]
    b = [_combine(row, (eye, a, a2, a3, a3 @ a3)) for row in _T18]
    b[3] = b[3] + b[0] @ b[4]  # + A9
    return b[1] + (b[2] + b[3]) @ b[3]


def _expm_array(xp, a):
    """``exp`` of each matrix of ``a`` (batch, n, n), degree chosen per matrix."""
    thetas = _THETAS[np.finfo(a.dtype).dtype]  # a complex dtype's real one
    norm = xp.abs(a).sum(-2).max(-1)
    res = xp.empty_like(a)
    lower = -1.0
    for degree, theta in zip((1, 2, 4, 8, 12), thetas):
        idx = xp.nonzero((norm > lower) & (norm <= theta))[0]
        if idx.size:
            res[idx] = _taylor(xp, a[idx], degree)
        lower = theta
    idx = xp.nonzero(~(norm <= thetas[4]))[0]  # NaN norms too
    if idx.size:
        res[idx] = _expm_scaled(xp, a[idx], norm[idx], thetas[5])
    return res


def _expm_scaled(xp, a, norm, theta):
    """Scaling and squaring: ``T18(A / 2^s)^(2^s)`` with ``s`` per matrix."""
    with np.errstate(divide="ignore", invalid="ignore"):
        s = xp.maximum(0, xp.ceil(xp.log2(norm / theta)))
    s = xp.where(xp.isfinite(s), s, 0).astype(np.int64)
    r = _taylor(xp, a / (2.0 ** s)[:, None, None].astype(a.dtype), 18)
    for step in range(int(s.max()) if s.size else 0):
        idx = xp.nonzero(s > step)[0]
        r[idx] = r[idx] @ r[idx]
    return r


def _matrix_exp_bw(node, g):
    # exp of the block matrix [[A^T, G], [0, A^T]] holds the gradient in its upper-right block
    (A,) = node.saved
    At = A.mT
    zeros = const(A, xp_of(A).zeros(A._data.shape, dtype=A._data.dtype))
    meta = cat([cat([At, g], -1), cat([zeros, At], -1)], -2)
    n = A._data.shape[-1]
    return (matrix_exp(meta).narrow(-2, 0, n).narrow(-1, n, n),)


LinalgMatrixExpBackward0 = make_node_class("LinalgMatrixExpBackward0", _matrix_exp_bw)
mark_holomorphic(LinalgMatrixExpBackward0)  # complex: exp of [[A^H, G], [0, A^H]]


@numpy_names
def matrix_exp(input):
    """The matrix exponential of a (batch of) square matrix."""
    A = input
    d = A._data
    check_dims(d, "linalg.matrix_exp")
    check_square(d, "linalg.matrix_exp")
    n = d.shape[-1]
    if d.dtype not in _dtype.FLOATING_NP and d.dtype not in _dtype.COMPLEX_NP:
        raise RuntimeError(f"linalg.matrix_exp: Expected a floating point or complex tensor as "
                           f"input. Got {scalar_type_name(d.dtype)}")
    xp = xp_of(A)
    if n == 0:
        r = d.copy()
    elif n == 1:
        r = xp.exp(d)
    else:
        work = _dtype.widen(d)  # float16/bfloat16 in float32: no half thresholds
        r = _expm_array(xp, flatten_batch(work)).reshape(d.shape).astype(d.dtype, copy=False)
    res = _make(r, A._device)
    if needs_grad(A):
        record(LinalgMatrixExpBackward0, res, (A,), (A,))
    return res


# -- cond ------------------------------------------------------------------------------------

def _ord_text(p) -> str:
    if isinstance(p, str):
        return p
    if isinstance(p, float) and p.is_integer():
        return str(int(p))
    return str(p)


@accepts_out
def cond(input, p=None, *, out=None):
    """The condition number of ``A`` in the ``p`` norm: ``s_max / s_min`` for p = None / 2
    (``s_min / s_max`` for -2, any shape), else ``norm(A) * norm(A^{-1})`` for square ``A``
    ('fro', 'nuc', +-1, +-inf); inf for a singular matrix."""
    A = input
    d = A._data
    if d.ndim < 2:
        if isinstance(p, str):
            raise RuntimeError(f"linalg.cond(ord={p}): The input tensor A must have at least 2 "
                               "dimensions.")
        raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
    ord_ = 2 if p is None else p
    if isinstance(ord_, str) and d.shape[-1] != d.shape[-2]:  # before the empty shortcut
        raise RuntimeError(f"linalg.cond(ord={ord_}): A must be batches of square matrices, "
                           f"but they are {d.shape[-2]} by {d.shape[-1]} matrices")
    valid = (ord_ in ("fro", "nuc")) if isinstance(ord_, str) else (
        isinstance(ord_, numbers.Real) and abs(ord_) in (1, 2, math.inf))
    if not valid:
        raise RuntimeError(f"linalg.cond got an invalid norm type: {_ord_text(ord_)}")
    if d.size == 0:  # zeros, of the input's real dtype (integers too)
        real = np.finfo(d.dtype).dtype if d.dtype.kind in "fc" else d.dtype
        return _make(xp_of(A).zeros(d.shape[:-2], dtype=real), A._device)
    if ord_ == "nuc":  # PyTorch takes the singular values first
        check_float(A, "linalg.svd", "linalg_svd_cpu")
    if not isinstance(ord_, str) and abs(ord_) == 2:
        s = svdvals(A)  # descending
        big, small = s.narrow(-1, 0, 1), s.narrow(-1, s._data.shape[-1] - 1, 1)
        return (big / small if ord_ == 2 else small / big).squeeze(-1)
    if d.shape[-1] != d.shape[-2]:
        raise RuntimeError(f"linalg.cond(ord={_ord_text(ord_)}): A must be batches of square "
                           f"matrices, but they are {d.shape[-2]} by {d.shape[-1]} matrices")
    inverse, info = inv_ex(A)
    singular = info._data > 0
    if bool(singular.any()):  # inf norms of the inverse: an infinite condition number
        inverse = inverse.masked_fill(const(A, singular[..., None, None]), math.inf)
    r = matrix_norm(A, ord_) * matrix_norm(inverse, ord_)
    return r.nan_to_num(math.inf, math.inf, -math.inf)


# -- tensorinv, tensorsolve ------------------------------------------------------------------

@accepts_out
def tensorinv(input, ind=2, *, out=None):
    """The inverse of ``A`` for ``tensordot`` over ``ind`` dims: ``A`` reshaped to the
    square matrix (prod(shape[:ind]), prod(shape[ind:])), inverted, reshaped to
    ``shape[ind:] + shape[:ind]``."""
    A = input
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    shape = tuple(A._data.shape)
    end, start = math.prod(shape[ind:]), math.prod(shape[:ind])
    if end != start:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {end} != {start}")
    try:
        r = inv(A.reshape(end, end))
    except LinAlgError as e:
        raise LinAlgError(str(e).replace("linalg.inv:", "inv:", 1)) from None
    return r.reshape(*shape[ind:], *shape[:ind])


@accepts_out
def tensorsolve(input, other, dims=None, *, out=None):
    """The ``X`` with ``tensordot(input, X, X.ndim) = other``; ``dims`` of ``input`` are moved
    to the end first."""
    A, B = input, other
    if dims is not None:
        from .. import movedim

        dims = (dims,) if isinstance(dims, int) else tuple(dims)
        nd = A._data.ndim
        A = movedim(A, dims, tuple(range(nd - len(dims), nd)))
    shape = tuple(A._data.shape)
    result_shape = shape[B._data.ndim:]
    result_size = math.prod(result_shape)
    other_size = math.prod(B._data.shape)
    if result_size != other_size:
        raise RuntimeError("Expected self to satisfy the requirement "
                           "prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), but "
                           f"got {result_size} != {other_size}")
    X = solve(A.reshape(result_size, result_size), B.flatten())
    return X.reshape(*result_shape)


# -- vander, diagonal ------------------------------------------------------------------------

def vander(x, *, N=None):
    """The Vandermonde matrix of the last dim of ``x``: columns ``x^0 ... x^(N-1)``
    (``torch.linalg.vander``; integers give int64)."""
    dt = x._data.dtype
    if dt.kind not in "fciu" or dt == np.float16:
        raise RuntimeError(f"linalg.vander supports floating point, complex, and integer "
                           f"tensors, but got {scalar_type_name(dt)}")
    x_ = x.unsqueeze(-1) if x._data.ndim == 0 else x
    shape = tuple(x_._data.shape)
    n = shape[-1] if N is None else int(N)
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    powers = x_.unsqueeze(-1).expand(*shape, n - 1).cumprod(-1)
    ones = const(x, xp_of(x).ones(shape + (1,), dtype=powers._data.dtype))
    return cat([ones, powers], -1)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """``A.diagonal(offset, dim1, dim2)`` with the last two dims as defaults."""
    return A.diagonal(offset, dim1, dim2)
