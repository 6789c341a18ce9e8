"""The parameter specifications the op fuzzers share (in the order their draws are made)."""

from __future__ import annotations

from ..utils.fuzzer import FuzzedParameter, ParameterAlias

MIN_DIM_SIZE = 16
MAX_DIM_SIZE = 16 * 1024 ** 2
POW_TWO_SIZES = tuple(2 ** i for i in range(4, 25))  # 16 .. 16M
#: a stride per dim: mostly 1, sometimes a power of two (strided memory access)
STEPS = {1: 0.8, 2: 0.06, 4: 0.06, 8: 0.04, 16: 0.04}
#: sizes, x's elements and allocation the elementwise fuzzers allow
ELEMENTS = {"min_elements": 4 * 1024, "max_elements": 32 * 1024 ** 2}
ALLOCATION = 2 * 1024 ** 3  # 2 GB


def rank(name: str) -> FuzzedParameter:
    """1, 2 or 3 dims (30/40/30%), drawn once per case."""
    return FuzzedParameter(name, distribution={1: 0.3, 2: 0.4, 3: 0.3}, strict=True)


def sizes(special: str, special_sizes, p_special: float, *, minval: int = MIN_DIM_SIZE,
          maxval: int = MAX_DIM_SIZE, special_first: bool = False) -> list:
    """``k0..k2``: each either any size (log-uniform) or one of ``special_sizes`` (uniform
    among them), chosen with probability ``p_special``; the draws behind them are named
    ``k_any_i`` and ``k_<special>_i``."""
    anys = [FuzzedParameter(f"k_any_{i}", minval=minval, maxval=maxval,
                            distribution="loguniform") for i in range(3)]
    specials = [FuzzedParameter(f"k_{special}_{i}",
                                distribution={s: 1.0 / len(special_sizes) for s in special_sizes})
                for i in range(3)]
    picks = []
    for i in range(3):
        choices = [(ParameterAlias(f"k_any_{i}"), 1 - p_special),
                   (ParameterAlias(f"k_{special}_{i}"), p_special)]
        if special_first:
            choices.reverse()
        picks.append(FuzzedParameter(f"k{i}", distribution=dict(choices), strict=True))
    return [anys, specials, picks]


def density_and_coalesced() -> list:
    return [FuzzedParameter("density", distribution={0.1: 0.4, 0.05: 0.3, 0.01: 0.3}),
            FuzzedParameter("coalesced", distribution={True: 0.5, False: 0.5})]


def random_value() -> FuzzedParameter:
    """Repeatable entropy for the benchmark's own use."""
    return FuzzedParameter("random_value", minval=0, maxval=2 ** 32 - 1, distribution="uniform")
