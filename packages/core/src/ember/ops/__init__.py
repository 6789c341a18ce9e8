"""All differentiable ops, registered once in ``ops.registry`` (see its docstring)."""

from . import (
    activation,
    api,
    arith,
    attention,
    complex_ops,
    conv,
    extras,
    fft_ops,
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
    sparse_ops,
    special_functions,
    statistics,
)
from .registry import OPS

# isort: off
from . import batching_rules  # vmap's batching rules: imported after the ops they batch
# isort: on
