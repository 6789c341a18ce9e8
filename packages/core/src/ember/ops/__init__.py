"""All differentiable ops, registered once in ``ops.registry`` (see its docstring)."""

from . import arith, indexing, linalg, linear_op, pointwise, reduction, shape  # noqa: F401
from .registry import OPS  # noqa: F401
