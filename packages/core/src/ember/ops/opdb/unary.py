"""Elementwise ops of one tensor: exp, log, trigonometry, rounding, predicates."""

from __future__ import annotations

import numpy as np

from . import ALL, FLOAT_AND_INT, SampleInput, define, make

_SHAPES = ((), (5,), (2, 3), (2, 0, 3))


def unary_samples(low=None, high=None, exclude_zero=False):
    """Scalars, vectors, matrices, an empty tensor and a non-contiguous view, in ``[low,
    high)`` (the op's domain, away from its singular points)."""

    def samples(device, dtype, requires_grad=False):
        for shape in _SHAPES:
            yield SampleInput(make(shape, dtype, device, low=low, high=high,
                                   exclude_zero=exclude_zero, requires_grad=requires_grad),
                              name=f"shape{shape}")
        yield SampleInput(make((3, 4), dtype, device, low=low, high=high,
                               exclude_zero=exclude_zero, noncontiguous=True,
                               requires_grad=requires_grad), name="noncontiguous")

    return samples


def _np_sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def _float_ref(f):
    """A NumPy reference that computes in the input's float type (integers: float32), as
    PyTorch promotes integer inputs of float functions to the default dtype."""

    def ref(a):
        if a.dtype.kind not in "fc":
            a = a.astype(np.float32)
        with np.errstate(all="ignore"):
            return f(a).astype(a.dtype)

    return ref


# name: (low, high, exclude_zero, numpy reference)
_FLOAT_FUNCS = {
    "exp": (-3, 3, False, np.exp),
    "exp2": (-3, 3, False, np.exp2),
    "expm1": (-3, 3, False, np.expm1),
    "log": (0.1, 5, False, np.log),
    "log2": (0.1, 5, False, np.log2),
    "log10": (0.1, 5, False, np.log10),
    "log1p": (-0.9, 5, False, np.log1p),
    "sqrt": (0.1, 5, False, np.sqrt),
    "rsqrt": (0.1, 5, False, lambda a: 1 / np.sqrt(a)),
    "sin": (-3, 3, False, np.sin),
    "cos": (-3, 3, False, np.cos),
    "tan": (-1.2, 1.2, False, np.tan),
    "asin": (-0.9, 0.9, False, np.arcsin),
    "acos": (-0.9, 0.9, False, np.arccos),
    "atan": (-3, 3, False, np.arctan),
    "sinh": (-3, 3, False, np.sinh),
    "cosh": (-3, 3, False, np.cosh),
    "tanh": (-3, 3, False, np.tanh),
    "asinh": (-3, 3, False, np.arcsinh),
    "acosh": (1.1, 5, False, np.arccosh),
    "atanh": (-0.9, 0.9, False, np.arctanh),
    "erf": (-3, 3, False, None),
    "erfc": (-3, 3, False, None),
    "erfinv": (-0.9, 0.9, False, None),
    "lgamma": (0.1, 5, False, None),
    "digamma": (0.1, 5, False, None),
    "sigmoid": (-5, 5, False, _np_sigmoid),
}

for _name, (_lo, _hi, _ez, _f) in _FLOAT_FUNCS.items():
    define(_name, unary_samples(_lo, _hi, _ez), dtypes=FLOAT_AND_INT,
           ref=_float_ref(_f) if _f is not None else None)

# ops that keep the input's dtype (integers stay integers)
_SAME_DTYPE = {
    "neg": (None, None, False, np.negative),
    "square": (None, None, False, np.square),
    "sign": (None, None, False, np.sign),
    "sgn": (None, None, False, np.sign),
    "relu": (None, None, False, lambda a: np.maximum(a, 0).astype(a.dtype)),
}
for _name, (_lo, _hi, _ez, _f) in _SAME_DTYPE.items():
    define(_name, unary_samples(_lo, _hi, _ez), dtypes=FLOAT_AND_INT, ref=_f,
           skip={"gradgradcheck": "piecewise linear: the second derivative is zero"}
           if _name in ("relu", "sign", "sgn") else {})

define("reciprocal", unary_samples(0.2, 3), dtypes=FLOAT_AND_INT,
       ref=_float_ref(np.reciprocal))
define("deg2rad", unary_samples(), dtypes=FLOAT_AND_INT, ref=_float_ref(np.deg2rad))
define("rad2deg", unary_samples(), dtypes=FLOAT_AND_INT, ref=_float_ref(np.rad2deg))

# predicates: bool results, never differentiable
for _name, _f in {"signbit": np.signbit, "isnan": np.isnan, "isinf": np.isinf,
                  "isfinite": np.isfinite, "isposinf": np.isposinf,
                  "isneginf": np.isneginf, "isreal": np.isreal,
                  "logical_not": np.logical_not}.items():
    define(_name, unary_samples(), dtypes=ALL if _name != "signbit" else FLOAT_AND_INT,
           ref=_f)

define("bitwise_not", unary_samples(), dtypes=("uint8", "int8", "int16", "int32", "int64",
                                               "bool"), ref=np.invert)
del _name, _lo, _hi, _ez, _f
__all__ = ["unary_samples"]
