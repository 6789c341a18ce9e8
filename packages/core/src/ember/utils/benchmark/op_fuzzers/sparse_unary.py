"""``UnaryOpSparseFuzzer``: one sparse COO tensor ``x`` of 1-3 dims."""

from __future__ import annotations

from ..utils.fuzzer import FuzzedParameter, Fuzzer
from ..utils.sparse_fuzzer import FuzzedSparseTensor
from . import _specs

__all__ = ["UnaryOpSparseFuzzer"]

SPARSE_DIM = {1: 0.4, 2: 0.4, 3: 0.2}


def sparse_tensor(name, size, dtype, cuda):
    return FuzzedSparseTensor(name, size=size, dim_parameter="dim_parameter",
                              sparse_dim="sparse_dim", density="density", coalesced="coalesced",
                              **_specs.ELEMENTS, dtype=dtype, cuda=cuda)


class UnaryOpSparseFuzzer(Fuzzer):
    def __init__(self, seed: int | None, dtype=None, cuda: bool = False) -> None:
        super().__init__(
            parameters=[
                _specs.rank("dim_parameter"),
                FuzzedParameter("sparse_dim", distribution=SPARSE_DIM, strict=True),
                *_specs.sizes("pow2", _specs.POW_TWO_SIZES, 0.2),
                *_specs.density_and_coalesced(), _specs.random_value()],
            tensors=[sparse_tensor("x", ("k0", "k1", "k2"), dtype, cuda)],
            seed=seed)
