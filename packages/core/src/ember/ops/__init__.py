"""All differentiable ops, registered once in ``ops.registry`` (see its docstring)."""

from . import (  # noqa: F401
    activation,
    arith,
    attention,
    indexing,
    linalg,
    linear_op,
    loss,
    nn_misc,
    normalization,
    pointwise,
    reduction,
    shape,
)
from .registry import OPS  # noqa: F401
