"""``ember.return_types``: the named tuples that multi-output ops return, like
``torch.return_types`` (same type names and fields, printed and pickled as ours)."""

from __future__ import annotations

import sys
from collections import namedtuple

from ._naming import PREFIX as _PREFIX

__all__ = ["make"]


def make(name: str, fields=("values", "indices")) -> type:
    """A named-tuple type ``ember.return_types.<name>`` with PyTorch's repr layout."""
    cls = namedtuple(name, fields)

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
        return f"{_PREFIX[0]}.return_types.{name}(\n{body})"

    cls.__repr__ = __repr__
    cls.__module__ = __name__  # pickled by reference to this module
    setattr(sys.modules[__name__], name, cls)
    __all__.append(name)
    return cls


for _name in ("max", "min", "sort", "topk", "kthvalue", "median", "nanmedian", "mode", "cummax",
              "cummin"):
    make(_name)
make("aminmax", ("min", "max"))
make("slogdet", ("sign", "logabsdet"))
make("linalg_slogdet", ("sign", "logabsdet"))
make("svd", ("U", "S", "V"))
make("linalg_svd", ("U", "S", "Vh"))
make("qr", ("Q", "R"))
make("linalg_qr", ("Q", "R"))
make("linalg_eigh", ("eigenvalues", "eigenvectors"))
make("linalg_eig", ("eigenvalues", "eigenvectors"))
make("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))
make("linalg_inv_ex", ("inverse", "info"))
make("linalg_cholesky_ex", ("L", "info"))
make("linalg_lu", ("P", "L", "U"))
make("linalg_lu_factor", ("LU", "pivots"))
make("linalg_lu_factor_ex", ("LU", "pivots", "info"))
make("lu_unpack", ("P", "L", "U"))
make("_lu_with_info", ("LU", "pivots", "info"))
make("linalg_ldl_factor", ("LD", "pivots"))
make("linalg_ldl_factor_ex", ("LD", "pivots", "info"))
make("linalg_solve_ex", ("result", "info"))
make("geqrf", ("a", "tau"))
make("triangular_solve", ("solution", "cloned_coefficient"))
make("histogram", ("hist", "bin_edges"))
make("histogramdd", ("hist", "bin_edges"))
del _name
