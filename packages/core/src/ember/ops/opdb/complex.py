"""Complex numbers: real/imag, view_as_real/view_as_complex, conj, angle, polar, complex.

The generic tests ask for a float dtype; these samples build complex tensors of its complex
type (float32 -> complex64, float64 -> complex128), so the float64 gradcheck is a complex128
gradcheck (``ember.autograd.gradcheck`` checks complex inputs through their real views).
"""

from __future__ import annotations

import numpy as np

from . import FLOAT, SampleInput, define, make

_SHAPES = ((), (4,), (2, 3))


def _complex(shape, dtype, device, requires_grad, *, noncontiguous=False, low=-3, high=3):
    import ember

    re = make(shape, dtype, device, low=low, high=high, noncontiguous=noncontiguous)
    im = make(shape, dtype, device, noncontiguous=noncontiguous)
    return ember.complex(re, im).requires_grad_(requires_grad)


def complex_samples(real_too: bool):
    """Complex tensors (scalar, vector, matrix, a non-contiguous view); with ``real_too`` a
    real tensor as well (real ops pass it through)."""

    def samples(device, dtype, requires_grad=False):
        for shape in _SHAPES:
            yield SampleInput(_complex(shape, dtype, device, requires_grad),
                              name=f"complex{shape}")
        yield SampleInput(_complex((3, 4), dtype, device, requires_grad, noncontiguous=True),
                          name="noncontiguous")
        if real_too:
            yield SampleInput(make((2, 3), dtype, device, requires_grad=requires_grad),
                              name="real")

    return samples


def _view_as_complex_samples(device, dtype, requires_grad=False):
    for shape in ((2,), (3, 2), (2, 4, 2)):
        yield SampleInput(make(shape, dtype, device, requires_grad=requires_grad),
                          name=f"shape{shape}")


def _pair_samples(low):
    def samples(device, dtype, requires_grad=False):
        for sa, sb in (((3,), (3,)), ((2, 3), (3,)), ((), ())):
            yield SampleInput(make(sa, dtype, device, low=low, requires_grad=requires_grad),
                              make(sb, dtype, device, requires_grad=requires_grad),
                              name=f"{sa}x{sb}")

    return samples


def _np_angle(a):
    if np.iscomplexobj(a):
        return np.angle(a)
    return np.where(a < 0, np.pi, 0.0).astype(a.dtype)


define("real", complex_samples(True), dtypes=FLOAT, ref=np.real,
       skip={"inplace": "a view, no in-place form", "out": "a view"})
_COMPLEX_ONLY = "complex inputs only: there is no complex bfloat16"
define("imag", complex_samples(False), dtypes=FLOAT, ref=np.imag,
       skip={"inplace": "a view, no in-place form", "out": "a view", "bfloat16": _COMPLEX_ONLY})
define("view_as_real", complex_samples(False), dtypes=FLOAT,
       ref=lambda a: np.stack([a.real, a.imag], -1), skip={"bfloat16": _COMPLEX_ONLY})
def _as_real(out):
    """A complex result as its real view: the generic backward tests sum outputs into a real
    loss (a complex one cannot start backward, as in PyTorch)."""
    import ember

    return ember.view_as_real(out) if out.is_complex() else out


define("view_as_complex", _view_as_complex_samples, dtypes=FLOAT,
       ref=lambda a: a[..., 0] + 1j * a[..., 1], output=_as_real)
# torch's conj is a lazy view that .numpy() refuses: compare with its physical conjugate
define("conj", complex_samples(True), dtypes=FLOAT, ref=np.conj, torch="conj_physical",
       output=_as_real)
define("conj_physical", complex_samples(True), dtypes=FLOAT, ref=np.conj, output=_as_real)
define("angle", complex_samples(True), dtypes=FLOAT, ref=_np_angle)
define("polar", _pair_samples(0.1), dtypes=FLOAT,
       ref=lambda r, t: r * np.exp(1j * t), output=_as_real)
define("complex", _pair_samples(None), dtypes=FLOAT, ref=lambda a, b: a + 1j * b,
       output=_as_real)
# ember keeps no lazy conjugate/negative bits: the predicates are False, the resolvers identity
for _name in ("is_conj", "is_neg"):
    define(_name, complex_samples(True), dtypes=FLOAT, ref=lambda a: False,
           skip={"inplace": "a predicate", "out": "a predicate"})
for _name in ("resolve_conj", "resolve_neg"):
    define(_name, complex_samples(True), dtypes=FLOAT, ref=lambda a: a, output=_as_real,
           skip={"inplace": "returns its input", "out": "returns its input"})
del _name
