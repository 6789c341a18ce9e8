"""All differentiable ops, registered once in ``ops.registry`` (see its docstring)."""

from . import (
    activation,
    api,
    arith,
    attention,
    complex_ops,
    conv,
    extras,
    grid,
    indexing,
    linalg,
    linear_op,
    loss,
    nn_misc,
    normalization,
    numeric,
    pointwise,
    pooling,
    reduction,
    shape,
    sorting,
    special_functions,
    statistics,
)
from .registry import OPS
