"""``BinaryOpSparseFuzzer``: sparse COO ``x`` and ``y`` of one shape, 1-3 dims."""

from __future__ import annotations

from ..utils.fuzzer import FuzzedParameter, Fuzzer, ParameterAlias
from . import _specs
from .sparse_unary import SPARSE_DIM, sparse_tensor

__all__ = ["BinaryOpSparseFuzzer"]


class BinaryOpSparseFuzzer(Fuzzer):
    def __init__(self, seed, dtype=None, cuda=False) -> None:
        super().__init__(
            parameters=[
                _specs.rank("dim_parameter"),
                FuzzedParameter("sparse_dim", distribution=SPARSE_DIM, strict=True),
                *_specs.sizes("pow2", _specs.POW_TWO_SIZES, 0.2),
                [FuzzedParameter(f"y_k{i}", distribution={ParameterAlias(f"k{i}"): 1.0},
                                 strict=True) for i in range(3)],
                *_specs.density_and_coalesced(), _specs.random_value()],
            tensors=[sparse_tensor("x", ("k0", "k1", "k2"), dtype, cuda),
                     sparse_tensor("y", ("y_k0", "y_k1", "y_k2"), dtype, cuda)],
            seed=seed)
