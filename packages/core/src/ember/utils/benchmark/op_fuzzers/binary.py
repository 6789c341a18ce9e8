"""``BinaryOpFuzzer``: dense ``x`` and ``y`` of 1-3 dims; ``y`` has singleton dims at times
(broadcasting), both strided and permuted at times."""

from __future__ import annotations

from ..utils.fuzzer import FuzzedParameter, FuzzedTensor, Fuzzer, ParameterAlias
from . import _specs

__all__ = ["BinaryOpFuzzer"]


class BinaryOpFuzzer(Fuzzer):
    def __init__(self, seed, dtype=None, cuda=False) -> None:
        steps = ("x_step_0", "x_step_1", "x_step_2")  # (y is sliced with x's steps, as there)
        super().__init__(
            parameters=[
                _specs.rank("dim"), *_specs.sizes("pow2", _specs.POW_TWO_SIZES, 0.2),
                [FuzzedParameter(f"y_k{i}", distribution={ParameterAlias(f"k{i}"): 0.8, 1: 0.2},
                                 strict=True) for i in range(3)],
                [FuzzedParameter(f"{name}_step_{i}", distribution=_specs.STEPS)
                 for i in range(3) for name in ("x", "y")],
                _specs.random_value()],
            tensors=[
                FuzzedTensor("x", size=("k0", "k1", "k2"), steps=steps,
                             probability_contiguous=0.75, **_specs.ELEMENTS,
                             max_allocation_bytes=_specs.ALLOCATION, dim_parameter="dim",
                             dtype=dtype, cuda=cuda),
                FuzzedTensor("y", size=("y_k0", "y_k1", "y_k2"), steps=steps,
                             probability_contiguous=0.75, max_allocation_bytes=_specs.ALLOCATION,
                             dim_parameter="dim", dtype=dtype, cuda=cuda)],
            seed=seed)
