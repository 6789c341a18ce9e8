"""``SpectralOpFuzzer``: one tensor ``x`` for FFT benchmarks; each size is, with probability
``probability_regular``, a 5-smooth number (``REGULAR_SIZES``: 2^i 3^j 5^k, FFT-friendly)."""

from __future__ import annotations

import math

from ..utils.fuzzer import FuzzedParameter, FuzzedTensor, Fuzzer
from . import _specs

__all__ = ["SpectralOpFuzzer"]

MIN_DIM_SIZE = 16
MAX_DIM_SIZE = 16 * 1024


def power_range(upper_bound, base):
    """``base ** i`` up to ``upper_bound``."""
    return (base ** i for i in range(int(math.log(upper_bound, base)) + 1))


REGULAR_SIZES = sorted(i * j * k for i in power_range(MAX_DIM_SIZE, 2)
                       for j in power_range(MAX_DIM_SIZE // i, 3)
                       for k in power_range(MAX_DIM_SIZE // (i * j), 5)
                       if i * j * k > MIN_DIM_SIZE)


class SpectralOpFuzzer(Fuzzer):
    def __init__(self, *, seed: int, dtype=None, cuda: bool = False,
                 probability_regular: float = 1.0) -> None:
        import ember

        super().__init__(
            parameters=[
                _specs.rank("ndim"),
                *_specs.sizes("regular", REGULAR_SIZES, probability_regular,
                              minval=MIN_DIM_SIZE, maxval=MAX_DIM_SIZE, special_first=True),
                [FuzzedParameter(f"step_{i}", distribution=_specs.STEPS) for i in range(3)]],
            tensors=[FuzzedTensor("x", size=("k0", "k1", "k2"),
                                  steps=("step_0", "step_1", "step_2"),
                                  probability_contiguous=0.75, **_specs.ELEMENTS,
                                  max_allocation_bytes=_specs.ALLOCATION, dim_parameter="ndim",
                                  dtype=ember.float64 if dtype is None else dtype, cuda=cuda)],
            seed=seed)
