"""torch.special's ops new in ``ember.ops.special_functions``: erfcx, ndtr, Bessel, zeta,
incomplete gamma, orthogonal polynomials (wider ranges, tails and PyTorch's own inaccuracies
are in tests/core/test_special.py)."""

from __future__ import annotations

from . import FLOAT, SampleInput, define, make
from .unary import unary_samples

# name: (low, high) of the samples (away from poles and branch points)
_UNARY = {
    "special_erfcx": (-3, 5), "special_ndtr": (-5, 5), "special_ndtri": (0.05, 0.95),
    "special_log_ndtr": (-8, 5), "i0": (-5, 5), "special_i0e": (-5, 5), "special_i1": (-5, 5),
    "special_i1e": (-5, 5), "sinc": (-3, 3), "special_entr": (0.1, 3),
    "special_bessel_j0": (-9, 9), "special_bessel_j1": (-9, 9),
    "special_bessel_y0": (0.2, 9), "special_bessel_y1": (0.2, 9),
    "special_modified_bessel_i0": (-5, 5), "special_modified_bessel_i1": (-5, 5),
    "special_modified_bessel_k0": (0.2, 5), "special_modified_bessel_k1": (0.2, 5),
    "special_scaled_modified_bessel_k0": (0.2, 5),
    "special_scaled_modified_bessel_k1": (0.2, 5),
    "special_spherical_bessel_j0": (-5, 5), "special_airy_ai": (-5, 5),
}
for _name, (_lo, _hi) in _UNARY.items():
    define(_name, unary_samples(_lo, _hi), dtypes=FLOAT, atol=1e-5, rtol=1e-5,
           torch="" if not _name.startswith("special_") else f"special.{_name[8:]}")


def _pair(lo_a, hi_a, lo_b, hi_b, grad_a=True):
    def samples(device, dtype, requires_grad=False):
        for shape in ((), (5,), (2, 3)):
            a = make(shape, dtype, device, low=lo_a, high=hi_a,
                     requires_grad=requires_grad and grad_a)
            b = make(shape, dtype, device, low=lo_b, high=hi_b, requires_grad=requires_grad)
            yield SampleInput(a, b, name=f"shape{shape}")

    return samples


define("special_xlog1py", _pair(-2, 2, -0.5, 3), dtypes=FLOAT, torch="special.xlog1py")
# zeta, igamma, igammac differentiate in ``other`` only (PyTorch raises for ``input``)
define("special_zeta", _pair(1.5, 5, 0.5, 4, grad_a=False), dtypes=FLOAT,
       torch="special.zeta")
define("igamma", _pair(0.5, 5, 0.2, 6, grad_a=False), dtypes=FLOAT,
       skip={"inplace": "igamma_ differentiates in other only"})
define("igammac", _pair(0.5, 5, 0.2, 6, grad_a=False), dtypes=FLOAT,
       skip={"inplace": "igammac_ differentiates in other only"})


def _polynomial_samples(device, dtype, requires_grad=False):
    for n in (0, 1, 4, 9):
        yield SampleInput(make((6,), dtype, device, low=-1, high=1), n, name=f"n={n}")


for _name in ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
              "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
              "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
              "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
              "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"):
    define(f"special_{_name}", _polynomial_samples, dtypes=FLOAT, atol=1e-4, rtol=1e-5,
           torch=f"special.{_name}")


def _polygamma_samples(device, dtype, requires_grad=False):
    for n in (1, 2, 3):
        yield SampleInput(n, make((5,), dtype, device, low=0.5, high=4,
                                  requires_grad=requires_grad), name=f"n={n}")


def _mvlgamma_samples(device, dtype, requires_grad=False):
    for p in (1, 3):
        yield SampleInput(make((5,), dtype, device, low=1.5, high=5,
                               requires_grad=requires_grad), p, name=f"p={p}")


define("polygamma", _polygamma_samples, dtypes=FLOAT, rtol=1e-5)
define("mvlgamma", _mvlgamma_samples, dtypes=FLOAT, rtol=1e-5)
