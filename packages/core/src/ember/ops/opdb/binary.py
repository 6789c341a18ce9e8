"""Elementwise ops of two operands: arithmetic, comparisons, logical and bitwise ops,
with broadcasting, Python-number and 0-d operands, and mixed dtypes (promotion)."""

from __future__ import annotations

import numpy as np

from . import FLOAT, FLOAT_AND_INT, SampleInput, define, make

_PAIRS = (((), ()), ((5,), (5,)), ((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 1), (1, 3)),
          ((0, 3), (3,)))


def binary_samples(low=None, high=None, rlow=None, rhigh=None, rhs_zero=True, scalar=True,
                   mixed=True):
    """Same-shape, broadcast and empty pairs, a non-contiguous pair, a Python number and a
    0-d tensor as ``other``, and (``mixed``) an operand of another dtype. ``rlow``/``rhigh``
    bound ``other`` (a divisor, an exponent); ``rhs_zero=False`` keeps it away from 0."""

    def samples(device, dtype, requires_grad=False):
        def lhs(shape, **kw):
            return make(shape, dtype, device, low=low, high=high, requires_grad=requires_grad,
                        **kw)

        def rhs(shape, dt=dtype, **kw):
            return make(shape, dt, device, low=rlow, high=rhigh, exclude_zero=not rhs_zero,
                        requires_grad=requires_grad, **kw)

        for a, b in _PAIRS:
            yield SampleInput(lhs(a), rhs(b), name=f"{a}x{b}")
        yield SampleInput(lhs((3, 4), noncontiguous=True), rhs((3, 4), noncontiguous=True),
                          name="noncontiguous")
        if scalar:
            kind = np.dtype(dtype).kind if dtype != "bool" else "b"
            num = 2 if kind in "iu" else (True if kind == "b" else 1.5)
            yield SampleInput(lhs((2, 3)), num, name="python number")
            yield SampleInput(lhs((2, 3)), make((), dtype, device, low=rlow or 1,
                                                high=rhigh or 3), name="0-d other")
        if mixed and dtype in FLOAT:
            yield SampleInput(lhs((2, 3)), make((2, 3), "int64", device, low=1, high=4),
                              name="float op int64")
            other = "float64" if dtype == "float32" else "float32"
            yield SampleInput(lhs((2, 3)), rhs((3,), other), name=f"{dtype} op {other}")

    return samples


def _np(f):
    def ref(a, b):
        with np.errstate(all="ignore"):
            return f(a, b)

    return ref


_ARITH = {
    "add": (binary_samples(), lambda a, b: np.add(a, b)),
    "sub": (binary_samples(), lambda a, b: np.subtract(a, b)),
    "mul": (binary_samples(), lambda a, b: np.multiply(a, b)),
    "maximum": (binary_samples(scalar=False), None),
    "minimum": (binary_samples(scalar=False), None),
    "fmax": (binary_samples(scalar=False, mixed=False), None),
    "fmin": (binary_samples(scalar=False, mixed=False), None),
}
for _name, (_s, _f) in _ARITH.items():
    define(_name, _s, dtypes=FLOAT_AND_INT, ref=None,
           skip={"gradgradcheck": "piecewise linear: the second derivative is zero"}
           if _name in ("maximum", "minimum", "fmax", "fmin") else {})

define("rsub", binary_samples(), dtypes=FLOAT_AND_INT)
define("div", binary_samples(rhs_zero=False, rlow=0.5, rhigh=3), dtypes=FLOAT_AND_INT)
define("true_divide", binary_samples(rhs_zero=False, rlow=0.5, rhigh=3), dtypes=FLOAT_AND_INT)
define("floor_divide", binary_samples(rhs_zero=False, rlow=1, rhigh=4), dtypes=FLOAT_AND_INT,
       skip={"gradcheck": "no derivative, as in PyTorch, whose result still requires grad "
                          "(a NotImplemented node)"})
define("remainder", binary_samples(rhs_zero=False, rlow=1, rhigh=4), dtypes=FLOAT_AND_INT,
       skip={"gradgradcheck": "linear away from the jumps: the second derivative is zero"})
define("fmod", binary_samples(rhs_zero=False, rlow=1, rhigh=4), dtypes=FLOAT_AND_INT,
       skip={"gradgradcheck": "linear away from the jumps: the second derivative is zero"})
define("pow", binary_samples(low=0.5, high=2, rlow=-2, rhigh=2), dtypes=FLOAT)
define("float_power", binary_samples(low=0.5, high=2, rlow=-2, rhigh=2), dtypes=FLOAT)
define("atan2", binary_samples(rhs_zero=False, scalar=False), dtypes=FLOAT)
define("hypot", binary_samples(rhs_zero=False, scalar=False, low=0.5, high=3), dtypes=FLOAT)
define("copysign", binary_samples(rhs_zero=False), dtypes=FLOAT,
       skip={"gradgradcheck": "piecewise linear: the second derivative is zero"})
define("logaddexp", binary_samples(scalar=False), dtypes=FLOAT)
define("logaddexp2", binary_samples(scalar=False), dtypes=FLOAT)
define("xlogy", binary_samples(rlow=0.5, rhigh=3), dtypes=FLOAT)
define("nextafter", binary_samples(scalar=False, mixed=False), dtypes=FLOAT)

for _name, _f in {"gt": np.greater, "lt": np.less, "ge": np.greater_equal,
                  "le": np.less_equal, "eq": np.equal, "ne": np.not_equal,
                  "logical_and": np.logical_and, "logical_or": np.logical_or,
                  "logical_xor": np.logical_xor}.items():
    define(_name, binary_samples(scalar=not _name.startswith("logical")),
           dtypes=FLOAT_AND_INT + ("bool",), ref=_np(_f))

for _name, _f in {"bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
                  "bitwise_xor": np.bitwise_xor}.items():
    define(_name, binary_samples(mixed=False), dtypes=("uint8", "int16", "int32", "int64",
                                                      "bool"), ref=None)
define("bitwise_left_shift", binary_samples(rlow=0, rhigh=4, mixed=False),
       dtypes=("uint8", "int32", "int64"))
define("bitwise_right_shift", binary_samples(rlow=0, rhigh=4, mixed=False),
       dtypes=("uint8", "int32", "int64"))
define("gcd", binary_samples(mixed=False, scalar=False), dtypes=("int32", "int64"), ref=_np(np.gcd))
define("lcm", binary_samples(mixed=False, scalar=False), dtypes=("int32", "int64"), ref=_np(np.lcm))
del _name, _f, _s
__all__ = ["binary_samples"]
