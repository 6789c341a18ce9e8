"""All differentiable ops, registered once in ``ops.registry`` (see its docstring)."""

from . import (  # noqa: F401
    activation,
    arith,
    attention,
    conv,
    grid,
    indexing,
    linalg,
    linear_op,
    loss,
    nn_misc,
    normalization,
    pointwise,
    pooling,
    reduction,
    shape,
    statistics,
)
from .registry import OPS  # noqa: F401
