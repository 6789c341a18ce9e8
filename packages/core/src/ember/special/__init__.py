"""``ember.special``: ``torch.special``'s namespace.

A thin namespace: every function is a registered op (``ember.ops.special_functions`` for the
kernels new here, ``ember.ops.pointwise`` and friends for those ember already had), so
autograd, the strict device and the registry's consumers treat them like any other op.
Differentiable where PyTorch is; the Bessel, Airy and polynomial functions are not (as in
PyTorch), and ``zeta``, ``gammainc`` and ``gammaincc`` differentiate in ``other`` only.
"""

from __future__ import annotations

from .. import _dtype
from .._front import front as _front
from ..ops import special_functions as _sf
from ..ops.registry import OPS as _OPS

__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
    "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma",
    "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc",
    "gammaincc", "gammaln", "hermite_polynomial_h", "hermite_polynomial_he", "i0", "i0e", "i1",
    "i1e", "laguerre_polynomial_l", "legendre_polynomial_p", "log1p", "log_ndtr",
    "log_softmax", "logit", "logsumexp", "modified_bessel_i0", "modified_bessel_i1",
    "modified_bessel_k0", "modified_bessel_k1", "multigammaln", "ndtr", "ndtri", "polygamma",
    "psi", "round", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "sinc", "softmax",
    "spherical_bessel_j0", "xlog1py", "xlogy", "zeta",
]

# -- the ops ember already had, under torch.special's names ---------------------------------------
erf = _OPS["erf"].fn
erfc = _OPS["erfc"].fn
erfinv = _OPS["erfinv"].fn
expit = _OPS["sigmoid"].fn
logit = _OPS["logit"].fn
gammaln = _OPS["lgamma"].fn
digamma = psi = _OPS["digamma"].fn
xlogy = _OPS["xlogy"].fn
exp2 = _OPS["exp2"].fn
expm1 = _OPS["expm1"].fn
log1p = _OPS["log1p"].fn
_round = _OPS["round"].fn
logsumexp = _OPS["logsumexp"].fn

# -- new in ember.ops.special_functions -----------------------------------------------------------
erfcx = _sf.special_erfcx
ndtr = _sf.special_ndtr
ndtri = _sf.special_ndtri
log_ndtr = _sf.special_log_ndtr
i0 = _sf.i0
i0e = _sf.special_i0e
i1 = _sf.special_i1
i1e = _sf.special_i1e
sinc = _sf.sinc
entr = _sf.special_entr
xlog1py = _sf.special_xlog1py
zeta = _sf.special_zeta
polygamma = _sf.polygamma
gammainc = _sf.igamma
gammaincc = _sf.igammac
bessel_j0 = _sf.special_bessel_j0
bessel_j1 = _sf.special_bessel_j1
bessel_y0 = _sf.special_bessel_y0
bessel_y1 = _sf.special_bessel_y1
modified_bessel_i0 = _sf.special_modified_bessel_i0
modified_bessel_i1 = _sf.special_modified_bessel_i1
modified_bessel_k0 = _sf.special_modified_bessel_k0
modified_bessel_k1 = _sf.special_modified_bessel_k1
scaled_modified_bessel_k0 = _sf.special_scaled_modified_bessel_k0
scaled_modified_bessel_k1 = _sf.special_scaled_modified_bessel_k1
spherical_bessel_j0 = _sf.special_spherical_bessel_j0
airy_ai = _sf.special_airy_ai
chebyshev_polynomial_t = _sf.POLYNOMIALS["chebyshev_polynomial_t"]
chebyshev_polynomial_u = _sf.POLYNOMIALS["chebyshev_polynomial_u"]
chebyshev_polynomial_v = _sf.POLYNOMIALS["chebyshev_polynomial_v"]
chebyshev_polynomial_w = _sf.POLYNOMIALS["chebyshev_polynomial_w"]
shifted_chebyshev_polynomial_t = _sf.POLYNOMIALS["shifted_chebyshev_polynomial_t"]
shifted_chebyshev_polynomial_u = _sf.POLYNOMIALS["shifted_chebyshev_polynomial_u"]
shifted_chebyshev_polynomial_v = _sf.POLYNOMIALS["shifted_chebyshev_polynomial_v"]
shifted_chebyshev_polynomial_w = _sf.POLYNOMIALS["shifted_chebyshev_polynomial_w"]
hermite_polynomial_h = _sf.POLYNOMIALS["hermite_polynomial_h"]
hermite_polynomial_he = _sf.POLYNOMIALS["hermite_polynomial_he"]
laguerre_polynomial_l = _sf.POLYNOMIALS["laguerre_polynomial_l"]
legendre_polynomial_p = _sf.POLYNOMIALS["legendre_polynomial_p"]


def multigammaln(input, p: int, *, out=None):
    """The multivariate log-gamma function of dimension ``p`` (``ember.mvlgamma``)."""
    return _OPS["mvlgamma"].fn(input, p, out=out)


def round(input, *, decimals: int = 0, out=None):
    """Round half to even (``decimals``: to that many decimal places). Unlike ``ember.round``,
    PyTorch's ``special_round`` has no integer, bool or complex case: its dispatch error."""
    d = getattr(input, "_data", None)
    if d is not None and (d.dtype.kind in "biuc" or d.dtype == _dtype.CHALF_NP):
        raise _dtype.no_kernel("round_vml_cpu" if decimals == 0 else "round_cpu", d.dtype)
    return _round(input, decimals=decimals, out=out)


def softmax(input, dim: int, *, dtype=None):
    """``exp(input) / exp(input).sum(dim)`` along ``dim`` (optionally in ``dtype``)."""
    return _OPS["softmax"].fn(input, dim, dtype=dtype)


def log_softmax(input, dim: int, *, dtype=None):
    """``log(softmax(input, dim))``, computed stably (optionally in ``dtype``)."""
    return _OPS["log_softmax"].fn(input, dim, dtype=dtype)



def _public(fn):
    """The registered op's public function (``out=``, PyTorch's NumPy keyword names) where
    ``fn`` is its kernel; this module's own functions get a front (``ops._front``) too."""
    info = _OPS.get(getattr(fn, "__name__", ""))
    if info is not None and info.kernel is fn:
        return info.fn
    return _front(fn) if getattr(fn, "__module__", None) == __name__ else fn


for _name in __all__:
    globals()[_name] = _public(globals()[_name])

# __torch_function__ modes (vmap, capture) and overriding subclasses see these functions too
import sys as _sys

from .. import overrides as _overrides

_overrides.register_namespace(_sys.modules[__name__])
