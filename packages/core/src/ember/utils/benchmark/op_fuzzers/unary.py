"""``UnaryOpFuzzer``: one dense tensor ``x`` of 1-3 dims, strided and permuted at times."""

from __future__ import annotations

from ..utils.fuzzer import FuzzedParameter, FuzzedTensor, Fuzzer
from . import _specs

__all__ = ["UnaryOpFuzzer"]


class UnaryOpFuzzer(Fuzzer):
    def __init__(self, seed, dtype=None, cuda=False) -> None:
        super().__init__(
            parameters=[
                _specs.rank("dim"), *_specs.sizes("pow2", _specs.POW_TWO_SIZES, 0.2),
                [FuzzedParameter(f"x_step_{i}", distribution=_specs.STEPS) for i in range(3)],
                _specs.random_value()],
            tensors=[FuzzedTensor("x", size=("k0", "k1", "k2"),
                                  steps=("x_step_0", "x_step_1", "x_step_2"),
                                  probability_contiguous=0.75, **_specs.ELEMENTS,
                                  max_allocation_bytes=_specs.ALLOCATION, dim_parameter="dim",
                                  dtype=dtype, cuda=cuda)],
            seed=seed)
