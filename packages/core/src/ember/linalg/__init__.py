"""``ember.linalg``: PyTorch's ``torch.linalg`` over NumPy / CuPy's LAPACK.

The functions are ops, defined under ``ember.ops``: the products that ``torch.linalg`` shares
with ``torch`` (``matmul``, ``cross``, ``multi_dot``, ``vecdot``) in ``ops.linalg``;
decompositions and solvers in ``ops.linalg_decompositions``; norms in ``ops.linalg_norms``;
the factorizations NumPy lacks, written in array code vectorised over the batch: LU
(``ops.linalg_lu``), triangular solves (``ops.linalg_triangular``), Householder QR
(``ops.linalg_householder``), Bunch-Kaufman LDL^T (``ops.linalg_ldl``); and ``matrix_exp``,
``cond`` and the tensor solvers (``ops.linalg_functions``). Every function is differentiable
(float64 gradchecks in the tests; complex128 ones for complex inputs, under PyTorch's
conjugate Wirtinger convention); the gradients of ``svd``, ``eigh`` and ``eig`` assume
distinct singular values / eigenvalues, as PyTorch's do. ``eig`` and ``eigvals``
(``ops.linalg_eig``) return complex tensors whatever the input.

This module only re-exports them. The kernel modules load on first use of one of their names
(PEP 562), so that ``import ember`` does not pay for them; ``torch.<name>`` spellings and
Tensor methods (``ops.linalg``) reach them the same way.
"""

from __future__ import annotations

from importlib import import_module as _import_module

from ..ops.linalg import linalg_cross as cross
from ..ops.linalg import multi_dot, vecdot
from ..ops.registry import OPS as _OPS

matmul = _OPS["matmul"].fn  # ``torch.matmul`` itself, with its ``out=``

#: the module under ``ember.ops`` that defines each name loaded on first use
_HOMES = {
    "linalg_common": (
        "LinAlgError", "_LinAlgError", "LinalgCholeskyExResult", "LinalgEighResult",
        "LinalgInvExResult",
        "LinalgLstsqResult", "LinalgQrResult", "LinalgSlogdetResult", "LinalgSvdResult",
        "QrResult", "SlogdetResult", "SvdResult"),
    "linalg_decompositions": (
        "cholesky", "cholesky_ex", "det", "eigh", "eigvalsh", "inv", "inv_ex", "lstsq",
        "matrix_power", "matrix_rank", "pinv", "qr", "slogdet", "solve", "svd", "svdvals"),
    "linalg_eig": ("eig", "eigvals"),
    "linalg_functions": ("cond", "diagonal", "matrix_exp", "tensorinv", "tensorsolve", "vander"),
    "linalg_householder": ("householder_product",),
    "linalg_ldl": ("ldl_factor", "ldl_factor_ex", "ldl_solve"),
    "linalg_lu": ("lu", "lu_factor", "lu_factor_ex", "lu_solve", "solve_ex"),
    "linalg_norms": ("matrix_norm", "norm", "vector_norm"),
    "linalg_triangular": ("solve_triangular",),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig",
           "eigh", "eigvals", "eigvalsh", "householder_product", "inv", "inv_ex", "ldl_factor",
           "ldl_factor_ex", "ldl_solve", "lstsq", "lu", "lu_factor", "lu_factor_ex", "lu_solve",
           "matmul", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot",
           "norm", "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular", "svd",
           "svdvals", "tensorinv", "tensorsolve", "vander", "vecdot", "vector_norm"]


def __getattr__(name: str):
    home = _HOME_OF.get(name)
    if home is None:
        raise AttributeError(f"module 'ember.linalg' has no attribute '{name}'")
    value = getattr(_import_module(f"ember.ops.{home}"), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__():
    return sorted(set(globals()) | set(_HOME_OF))
