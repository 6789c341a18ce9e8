"""``ember.linalg``: PyTorch's ``torch.linalg`` over NumPy / CuPy's LAPACK.

Decompositions and solvers (``_decompositions``), norms (``_norms``), the products that
``torch.linalg`` shares with ``torch`` (``matmul``, ``cross``, ``multi_dot``, ``vecdot``), and
the factorizations NumPy lacks, written in array code vectorised over the batch: LU
(``_lu``), triangular solves (``_triangular``), Householder QR (``_householder``),
Bunch-Kaufman LDL^T (``_ldl``), and ``matrix_exp`` (``_functions``).
Every function is differentiable (float64 gradchecks in the tests); the gradients of
``svd`` and ``eigh`` assume distinct singular values / eigenvalues, as PyTorch's do.
"""

from __future__ import annotations

from ..ops._core import _pretty, accepts_out
from ..ops.linalg import _cross, _tname, matmul
from ._common import (
    LinalgCholeskyExResult,
    LinalgEighResult,
    LinAlgError,
    LinalgInvExResult,
    LinalgLstsqResult,
    LinalgQrResult,
    LinalgSlogdetResult,
    LinalgSvdResult,
    QrResult,
    SlogdetResult,
    SvdResult,
)
from ._decompositions import (
    cholesky,
    cholesky_ex,
    det,
    eigh,
    eigvalsh,
    inv,
    inv_ex,
    lstsq,
    matrix_power,
    matrix_rank,
    pinv,
    qr,
    slogdet,
    solve,
    svd,
    svdvals,
)
from ._functions import cond, diagonal, matrix_exp, tensorinv, tensorsolve, vander
from ._householder import householder_product
from ._ldl import ldl_factor, ldl_factor_ex, ldl_solve
from ._lu import lu, lu_factor, lu_factor_ex, lu_solve, solve_ex
from ._norms import matrix_norm, norm, vector_norm
from ._triangular import solve_triangular

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eigh",
           "eigvalsh", "householder_product", "inv", "inv_ex", "ldl_factor", "ldl_factor_ex",
           "ldl_solve", "lstsq", "lu", "lu_factor", "lu_factor_ex", "lu_solve", "matmul",
           "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot", "norm",
           "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular", "svd", "svdvals",
           "tensorinv", "tensorsolve", "vander", "vecdot", "vector_norm"]


@accepts_out
def cross(input, other, *, dim=-1, out=None):
    """Cross product of 3-vectors along ``dim``, batches broadcast."""
    return _cross(input, other, dim)


@accepts_out
def vecdot(x, y, *, dim=-1, out=None):
    """Dot product of vectors along ``dim`` (batches broadcast)."""
    for t in (x, y):
        if t._data.dtype.kind != "f":
            raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as "
                               f"input. Got {_pretty(t._data.dtype)}")
    if x._data.dtype != y._data.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x "
                           f"of type {_pretty(x._data.dtype)} and y of type "
                           f"{_pretty(y._data.dtype)} instead")
    return (x * y).sum(dim)


def _chain_order(dims):
    """Optimal parenthesization of a matrix chain with ``dims`` (n + 1 sizes): ``split[i][j]``
    is where the product of matrices i..j splits (the classic dynamic programme)."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


@accepts_out
def multi_dot(tensors, *, out=None):
    """The product of a chain of matrices in the cheapest order; the first may be a row
    vector (1-D) and the last a column vector (1-D)."""
    tensors = list(tensors)
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    for i, t in enumerate(tensors):
        nd = t._data.ndim
        if i == 0 and nd not in (1, 2):
            raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {nd}D")
        if i == n - 1 and nd not in (1, 2):
            raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {nd}D")
        if 0 < i < n - 1 and nd != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {nd}D")
        if t._data.dtype != tensors[0]._data.dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor "
                               f"0 is {_tname(tensors[0]._data)} and tensor {i} "
                               f"{_tname(t._data)}")
    for i in range(n - 1):
        a, b = tensors[i]._data.shape, tensors[i + 1]._data.shape
        if a[-1] != b[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes "
                               f"[{', '.join(map(str, a))}] and [{', '.join(map(str, b))}] "
                               "cannot be multiplied")
    first_vec, last_vec = tensors[0]._data.ndim == 1, tensors[-1]._data.ndim == 1
    if first_vec:
        tensors[0] = tensors[0].unsqueeze(0)
    if last_vec:
        tensors[-1] = tensors[-1].unsqueeze(-1)
    dims = [t._data.shape[0] for t in tensors] + [tensors[-1]._data.shape[1]]
    split = _chain_order(dims)

    def product(i, j):
        if i == j:
            return tensors[i]
        k = split[i][j]
        return product(i, k).matmul(product(k + 1, j))

    r = product(0, n - 1)
    shape = r._data.shape
    if first_vec or last_vec:
        r = r.reshape(*[s for s, drop in zip(shape, (first_vec, last_vec)) if not drop])
    return r
