"""ONNX export mappings: the special functions (``ember.special``, ``lgamma``, ``digamma``,
``polygamma``, ``erfinv``, ``i0``, the Bessel functions, Hurwitz's zeta, the orthogonal
polynomials...), registered in the table of ``_export_ops.py``.

ONNX has none of them as operators, so each is composed from elementwise ONNX ops with the
algorithms of Ember's own kernels (``ember/ops/_special.py``, ``special_functions.py``:
Cephes' Chebyshev and rational approximations, Cody's erf, Lanczos' lgamma, the asymptotic
series and recurrences of the polygammas, Euler-Maclaurin for zeta, the three-term recurrences
of the polynomials). Like those kernels, the graphs compute in float64 and round the result
once to the output's dtype, so an exported model agrees with Ember's eager result to float32
rounding; the ops they use all have float64 kernels in onnxruntime (``Erf`` and ``Tan`` do
not, so erf is Cody's rational here too). Every range of a piecewise approximation is
evaluated on all elements, its input clipped into the range, and the right one picked with
``Where``. Loops whose length depends on the data (Hurwitz zeta's direct sum for negative
``q``, a polynomial of tensor degree) are ONNX ``Loop`` nodes.

:class:`Expr` is the small expression language the mappings are written in: ONNX values
with Python's arithmetic and comparison operators, so that a formula reads as the kernel's.
"""

from __future__ import annotations

import math

import numpy as np

from . import _special_coefficients as K
from ._export_graph import onnx_type
from ._export_ops import Call, is_tensor_arg, mapping

__all__ = ["Expr", "Fn"]

COMPUTE = "float64"


class Expr:
    """One ONNX value (float64 unless a comparison made it bool) of the function being
    composed; the operators emit nodes through ``fn``."""

    __slots__ = ("fn", "name")

    def __init__(self, fn: Fn, name: str):
        self.fn = fn
        self.name = name

    def __add__(self, o):
        return self.fn.op("Add", self, o)

    def __radd__(self, o):
        return self.fn.op("Add", o, self)

    def __sub__(self, o):
        return self.fn.op("Sub", self, o)

    def __rsub__(self, o):
        return self.fn.op("Sub", o, self)

    def __mul__(self, o):
        return self.fn.op("Mul", self, o)

    def __rmul__(self, o):
        return self.fn.op("Mul", o, self)

    def __truediv__(self, o):
        return self.fn.op("Div", self, o)

    def __rtruediv__(self, o):
        return self.fn.op("Div", o, self)

    def __neg__(self):
        return self.fn.op("Neg", self)

    def __pow__(self, o):
        return self.fn.op("Pow", self, o)

    def __rpow__(self, o):
        return self.fn.op("Pow", o, self)

    def __lt__(self, o):
        return self.fn.op("Less", self, o)

    def __le__(self, o):
        return self.fn.op("LessOrEqual", self, o)

    def __gt__(self, o):
        return self.fn.op("Greater", self, o)

    def __ge__(self, o):
        return self.fn.op("GreaterOrEqual", self, o)

    def eq(self, o):
        return self.fn.op("Equal", self, o)

    def ne(self, o):
        return ~self.fn.op("Equal", self, o)

    def __and__(self, o):
        return self.fn.op("And", self, o)

    def __or__(self, o):
        return self.fn.op("Or", self, o)

    def __invert__(self):
        return self.fn.op("Not", self)

    __hash__ = None  # type: ignore[assignment]


class Fn:
    """Emits the nodes of one composed function: into the main graph, or (``nodes`` given)
    into the body of a ``Loop``. Numbers become float64 constants (shared)."""

    def __init__(self, c: Call, nodes: list | None = None):
        self.c = c
        self.nodes = nodes

    # -- nodes ------------------------------------------------------------------------------
    def emit(self, op_type: str, inputs: list, outputs: int = 1, **attrs):
        if self.nodes is None:
            return self.c.add(op_type, inputs, outputs, **attrs)
        b = self.c.b
        if b.opset < 13:  # the node in the form of the requested opset
            return b.add_into(self.nodes, op_type, inputs, outputs, **attrs)
        names = [b.fresh(f"{b.current or 'loop'}_{op_type}") for _ in range(outputs)]
        self.nodes.append(b.helper.make_node(op_type, inputs, names,
                                             name=b.fresh(f"/{b.current}/loop/{op_type}"),
                                             **attrs))
        return names[0] if outputs == 1 else names

    def lift(self, v) -> Expr:
        if isinstance(v, Expr):
            return v
        return Expr(self, self.c.const(float(v), COMPUTE))

    def op(self, op_type: str, *args, **attrs) -> Expr:
        """One node; inside a loop body when any operand is a value of that body."""
        fn = next((a.fn for a in args if isinstance(a, Expr) and a.fn.nodes is not None), self)
        return Expr(fn, fn.emit(op_type, [fn.lift(a).name for a in args], **attrs))

    def input(self, arg) -> Expr:
        """A tensor or number argument (a parameter name or a JSON argument) in float64."""
        return Expr(self, self.c.t(arg, COMPUTE))

    def result(self, r: Expr, dtype: str | None = None) -> str:
        """``r`` rounded to the output's dtype."""
        return self.c.b.cast(r.name, COMPUTE, dtype or self.c.out_dtype)

    # -- elementwise ------------------------------------------------------------------------
    def exp(self, x):
        return self.op("Exp", x)

    def log(self, x):
        return self.op("Log", x)

    def sqrt(self, x):
        return self.op("Sqrt", x)

    def sin(self, x):
        return self.op("Sin", x)

    def cos(self, x):
        return self.op("Cos", x)

    def abs(self, x):
        return self.op("Abs", x)

    def floor(self, x):
        return self.op("Floor", x)

    def isnan(self, x):
        return self.op("IsNaN", x)

    def isinf(self, x):
        return self.op("IsInf", x)

    def isfinite(self, x):
        return ~(self.isinf(x) | self.isnan(x))

    def where(self, cond: Expr, a, b) -> Expr:
        return self.op("Where", cond, a, b)

    def minimum(self, a, b):
        return self.op("Min", a, b)

    def maximum(self, a, b):
        return self.op("Max", a, b)

    def clip(self, x, lo, hi):
        return self.minimum(self.maximum(x, lo), hi)

    def trunc(self, x):
        return self.where(x < 0, self.op("Ceil", x), self.floor(x))

    def remainder(self, x, m: float):
        """Python's ``x % m`` (the sign of ``m``)."""
        return x - self.floor(x / m) * m

    def log1p(self, x):
        """``log(1 + x)`` accurate for small ``x``: ``log(u) * x / (u - 1)``, ``u = 1 + x``
        (exact where ``u`` rounds to 1)."""
        u = x + 1.0
        d = u - 1.0
        zero = d.eq(0.0)
        ratio = self.log(u) * x / self.where(zero, 1.0, d)
        return self.where(zero, x, self.where(u.eq(math.inf), u, ratio))

    def copysign(self, a, b):
        """``|a|`` with the sign of ``b`` (where ``b < 0``)."""
        a = self.abs(a)
        return self.where(b < 0, -a, a)

    def zeros_like(self, x: Expr) -> Expr:
        """Zeros of ``x``'s shape (``x * 0`` would be NaN where ``x`` is infinite)."""
        return Expr(self, self.emit(
            "ConstantOfShape", [self.emit("Shape", [x.name])],
            value=self.c.b.onnx.numpy_helper.from_array(np.zeros(1, np.float64))))

    def broadcast(self, a: Expr, b: Expr) -> tuple[Expr, Expr]:
        """``a`` and ``b`` broadcast to their common shape (``Expand`` broadcasts both ways)."""
        return (Expr(self, self.emit("Expand", [a.name, self.emit("Shape", [b.name])])),
                Expr(self, self.emit("Expand", [b.name, self.emit("Shape", [a.name])])))

    def nan_like(self, x):
        return x * 0.0 + math.nan

    def poly(self, z, coeffs) -> Expr:
        """Horner's rule, ``coeffs`` highest power first."""
        r = z * coeffs[0] + coeffs[1]
        for c in coeffs[2:]:
            r = r * z + c
        return r

    def chbevl(self, x, coeffs) -> Expr:
        """Cephes' Chebyshev series (Clenshaw's recurrence)."""
        b0 = x * 0.0 + coeffs[0]
        b1 = x * 0.0
        b2 = b1
        for c in coeffs[1:]:
            b2 = b1
            b1 = b0
            b0 = x * b1 - b2 + c
        return (b0 - b2) * 0.5

    # -- loops ------------------------------------------------------------------------------
    def loop(self, trips: str, carried: list, body) -> list:
        """An ONNX ``Loop`` of ``trips`` (an int64 scalar) iterations over the float64
        values ``carried``: ``body(fn, j, *values)`` returns their next values (``j`` the
        iteration number as a float64 scalar). Outer values are read from the body by name."""
        b, helper = self.c.b, self.c.b.helper
        nodes: list = []
        inner = Fn(self.c, nodes)
        it, cond = b.fresh("loop_iter"), b.fresh("loop_cond")
        ins = [b.fresh("loop_in") for _ in carried]
        j = Expr(inner, inner.emit("Cast", [it], to=onnx_type(COMPUTE)))
        outs = body(inner, j, *[Expr(inner, n) for n in ins])
        cond_out = inner.emit("Identity", [cond])
        out_names = [inner.emit("Identity", [o.name]) for o in outs]
        f64 = onnx_type(COMPUTE)
        graph = helper.make_graph(
            nodes, b.fresh("loop_body"),
            [helper.make_tensor_value_info(it, onnx_type("int64"), []),
             helper.make_tensor_value_info(cond, onnx_type("bool"), [])]
            + [helper.make_tensor_value_info(n, f64, None) for n in ins],
            [helper.make_tensor_value_info(cond_out, onnx_type("bool"), [])]
            + [helper.make_tensor_value_info(n, f64, None) for n in out_names])
        results = self.emit("Loop", [trips, "", *[v.name for v in carried]],
                            outputs=len(carried), body=graph)
        results = [results] if isinstance(results, str) else results
        return [Expr(self, r) for r in results]

    def int_scalar(self, x: Expr) -> str:
        """A float64 scalar (integral) as an int64 scalar."""
        return self.emit("Cast", [x.name], to=onnx_type("int64"))

    def reduce_min(self, x: Expr) -> Expr:
        """The smallest element of ``x`` as a scalar."""
        flat = self.emit("Reshape", [x.name, self.c.i64([-1])])
        return Expr(self, self.emit("ReduceMin", [flat], keepdims=0))


# -- mapping helpers ------------------------------------------------------------------------------

def _unary(*names: str, since: int = 11):
    """Register ``kernel(fn, x) -> Expr`` as the mapping of unary ops ``names``: the input in
    float64, NaN in -> NaN out, the result rounded to the output dtype."""
    def decorate(kernel):
        @mapping(*names, since=since)
        def emit(c: Call):
            f = Fn(c)
            x = f.input(next(iter(c.p)))
            r = kernel(f, x)
            return f.result(f.where(f.isnan(x), x, r))
        emit.__name__ = kernel.__name__
        return kernel
    return decorate


def _binary_args(c: Call) -> tuple[Fn, Expr, Expr]:
    names = list(c.p)[:2]
    f = Fn(c)
    return f, f.input(names[0]), f.input(names[1])


_SQRT_PI = math.sqrt(math.pi)
_SQRT_2PI = math.sqrt(2 * math.pi)
_INV_SQRT_2 = 1 / math.sqrt(2)
_TWO_OVER_SQRT_PI = 2 / _SQRT_PI




# -- erf, erfc, erfcx, erfinv, ndtr, ndtri, log_ndtr -----------------------------------------------

def erf_inner(f: Fn, x: Expr) -> Expr:
    x = f.clip(x, -K.ERF_INNER, K.ERF_INNER)
    z = x * x
    return f.poly(z, K.ERF_A) * x / f.poly(z, K.ERF_B)


def _erfc_rational(f: Fn, y: Expr) -> Expr:
    """``exp(y^2) erfc(y)`` for ``y > 0.46875`` (Cody's rationals, no ``exp`` factor)."""
    ym = f.minimum(y, 4.0)
    middle = f.poly(ym, K.ERF_C) / f.poly(ym, K.ERF_D)
    yt = f.maximum(y, 4.0)
    z = 1.0 / (yt * yt)
    tail = (1 / _SQRT_PI - f.poly(z, K.ERF_P) / f.poly(z, K.ERF_Q) * z) / yt
    return f.where(y <= 4.0, middle, tail)


def erfc_outer(f: Fn, y: Expr) -> Expr:
    """``erfc(y)`` for ``y > 0.46875``, ``exp(-y^2)`` split exactly as the kernel does."""
    yc = f.minimum(y, 40.0)
    out = _erfc_rational(f, yc)
    s = f.floor(yc * 16.0) / 16.0
    rest = (yc - s) * (yc + s)
    return out * f.exp(-rest) * f.exp(-(s * s))


def erf(f: Fn, x: Expr) -> Expr:
    y = f.abs(x)
    outer = f.copysign((0.5 - erfc_outer(f, y)) + 0.5, x)
    return f.where(y <= K.ERF_INNER, erf_inner(f, x), outer)


def erfc(f: Fn, x: Expr) -> Expr:
    erfc_y = erfc_outer(f, f.abs(x))
    outer = f.where(x < 0, 2.0 - erfc_y, erfc_y)
    inner = (0.5 - erf_inner(f, x)) + 0.5
    return f.where(f.abs(x) <= K.ERF_INNER, inner, outer)


@_unary("erfinv")
def erfinv(f: Fn, y: Expr) -> Expr:
    """PyTorch's rational starting point, two Newton steps on ``erf(x) = y`` in the middle
    and on ``log(erfc(x)) = log(1 - |y|)`` in the tails."""
    a = f.abs(y)
    yc = f.clip(y, -0.7, 0.7)
    z = yc * yc
    x = yc * f.poly(z, K.ERFINV_A) / f.poly(z, K.ERFINV_B)
    for _ in range(2):
        x = x - (erf(f, x) - yc) / (f.exp(-(x * x)) * _TWO_OVER_SQRT_PI)
    central = x
    at = f.clip(a, 0.7, 1.0)
    target = 1.0 - at
    t = f.sqrt(-f.log(target / 2.0))
    x = f.poly(t, K.ERFINV_C) / f.poly(t, K.ERFINV_D)
    for _ in range(2):
        e = erfc_outer(f, x)
        x = x + f.log(e / target) * e / (f.exp(-(x * x)) * _TWO_OVER_SQRT_PI)
    tail = f.copysign(f.where(at.eq(1.0), math.inf, x), y)
    return f.where(a > 1.0, f.nan_like(y), f.where(a <= 0.7, central, tail))


def erfcx(f: Fn, x: Expr) -> Expr:
    a = f.abs(x)
    outer = _erfc_rational(f, f.maximum(a, K.ERF_INNER))
    outer = f.where(x < 0, f.exp(x * x) * 2.0 - outer, outer)
    inner = f.exp(x * x) * (1.0 - erf_inner(f, x))
    return f.where(a <= K.ERF_INNER, inner, outer)


_unary("special_erfcx")(erfcx)


@_unary("special_ndtr")
def ndtr(f: Fn, x: Expr) -> Expr:
    return erfc(f, -x * _INV_SQRT_2) * 0.5


@_unary("special_log_ndtr")
def log_ndtr(f: Fn, x: Expr) -> Expr:
    t = x * _INV_SQRT_2
    low = f.log(erfcx(f, -f.minimum(t, 0.0)) / 2.0) - t * t
    high = f.log1p(-erfc(f, t) / 2.0)
    return f.where(x < -1.0, low, high)


@_unary("special_ndtri")
def ndtri(f: Fn, y0: Expr) -> Expr:
    exp_m2 = 0.13533528323661269189
    flip = y0 > 1 - exp_m2
    y = f.where(flip, 1.0 - y0, y0)
    yc = f.clip(y, exp_m2, 1 - exp_m2) - 0.5
    y2 = yc * yc
    central = (yc + yc * (y2 * f.poly(y2, K.NDTRI_P0) / f.poly(y2, K.NDTRI_Q0))) * _SQRT_2PI
    yt = f.clip(y, 1e-300, exp_m2)
    xt = f.sqrt(f.log(yt) * -2.0)
    z = 1.0 / xt
    near = z * f.poly(z, K.NDTRI_P1) / f.poly(z, K.NDTRI_Q1)
    far = z * f.poly(z, K.NDTRI_P2) / f.poly(z, K.NDTRI_Q2)
    tail = xt - f.log(xt) / xt - f.where(xt < 8.0, near, far)
    xs = f.sqrt(f.log(f.maximum(y, 5e-324)) * -2.0)
    zs = 1.0 / xs
    tiny = xs - f.log(xs) / xs - zs * f.poly(zs, K.NDTRI_P2) / f.poly(zs, K.NDTRI_Q2)
    tail = f.where(y < 1e-300, tiny, tail)
    tail = f.where(flip, tail, -tail)
    r = f.where(y > exp_m2, central, tail)
    r = f.where(y0.eq(0.0), -math.inf, f.where(y0.eq(1.0), math.inf, r))
    return f.where((y0 < 0.0) | (y0 > 1.0), f.nan_like(y0), r)


# -- lgamma, digamma, polygamma, mvlgamma ----------------------------------------------------------

def _sinpi(f: Fn, x: Expr) -> Expr:
    return f.sin(f.remainder(x, 2.0) * math.pi)


def _lgamma_positive(f: Fn, x: Expr) -> Expr:
    xm = x - 1.0
    acc = f.lift(K.LANCZOS[0])
    for i in range(1, 9):
        acc = acc + K.LANCZOS[i] / (xm + float(i))
    t = xm + 7.5
    return (xm + 0.5) * f.log(t) - t + f.log(acc) + K.HALF_LOG_2PI


@_unary("lgamma")
def lgamma(f: Fn, x: Expr) -> Expr:
    """Lanczos (g = 7, n = 9) on ``x >= 0.5``, the reflection formula below; +inf at the
    poles and at +-inf."""
    reflect = x < 0.5
    xr = f.where(reflect, 1.0 - x, x)
    pos = _lgamma_positive(f, xr)
    refl = f.log(math.pi / f.abs(_sinpi(f, x))) - pos
    r = f.where(reflect, refl, pos)
    poles = (x <= 0.0) & x.eq(f.floor(x))
    return f.where(poles | f.isinf(x), math.inf, r)


def _shift_up(f: Fn, x: Expr, term) -> tuple[Expr, Expr]:
    """``f(x) = f(x + 1) + term(x)`` until ``x >= 10`` (ten unrolled steps)."""
    acc = f.zeros_like(x)
    for _ in range(10):
        small = x < 10.0
        acc = acc + f.where(small, term(x), 0.0)
        x = f.where(small, x + 1.0, x)
    return x, acc


@_unary("digamma")
def digamma(f: Fn, x: Expr) -> Expr:
    """The recurrence up to ``x >= 10``, the asymptotic series there, the reflection formula
    for negative ``x``."""
    negative = x < 0.0
    xr = f.where(negative, 1.0 - x, x)
    xs, acc = _shift_up(f, xr, lambda v: -1.0 / v)
    z = 1.0 / (xs * xs)
    series = z * (1 / 12 - z * (1 / 120 - z * (1 / 252 - z * (1 / 240 - z * (
        1 / 132 - z * (691 / 32760 - z / 12))))))
    psi = f.log(xs) - 0.5 / xs - series + acc
    frac = x - f.floor(x)
    ppx = frac * math.pi
    psi = f.where(negative, psi - math.pi * f.cos(ppx) / f.sin(ppx), psi)
    psi = f.where(negative & frac.eq(0.0), f.nan_like(x), psi)
    inf = f.where(f.op("Div", 1.0, x) < 0.0, math.inf, -math.inf)  # -inf at +0, inf at -0
    return f.where(x.eq(0.0), inf, psi)


def trigamma(f: Fn, x: Expr) -> Expr:
    negative = x < 0.0
    xr = f.where(negative, 1.0 - x, x)
    xs, acc = _shift_up(f, xr, lambda v: 1.0 / (v * v))
    z = 1.0 / (xs * xs)
    series = (1.0 + (0.5 + (1 / 6 - z * (1 / 30 - z * (1 / 42 - z * (
        1 / 30 - z * (5 / 66 - z * (691 / 2730 - z * (7 / 6))))))) / xs) / xs) / xs
    r = series + acc
    s = _sinpi(f, x)
    r = f.where(negative, math.pi * math.pi / (s * s) - r, r)
    return f.where((x <= 0.0) & x.eq(f.floor(x)), math.inf, r)


def zeta(f: Fn, x: Expr, q: Expr) -> Expr:
    """Hurwitz's zeta as Cephes (and Ember) compute it: ``sum_{k <= N} (q + k)^-x`` with
    ``N = max(9, floor(9 - min q) + 1)`` (a ``Loop``: ``N`` depends on the data), then
    Euler-Maclaurin with the Bernoulli numbers up to B_24."""
    x, q = f.broadcast(x, q)  # the loop carries one shape
    finite_q = f.where(f.isfinite(q), q, 0.0)
    lowest = f.reduce_min(finite_q)
    n_terms = f.maximum(f.floor(9.0 - lowest) + 1.0, 9.0)
    trips = f.int_scalar(n_terms + 1.0)

    def step(g: Fn, j, s, a):
        return [s + g.op("Pow", a, -x), a + 1.0]

    s, a = f.loop(trips, [q * 0.0, q * 1.0], step)
    a = a - 1.0
    b = f.op("Pow", a, -x)
    w = a
    s = s + b * w / (x - 1.0) - b * 0.5
    fact = x * 0.0 + 1.0
    k = 0.0
    done = x.ne(x)  # all False
    for coef in K.ZETA_A:
        fact = fact * (x + k)
        b = b / w
        t = fact * b / coef
        s = s + f.where(done, 0.0, t)
        done = done | (f.abs(t / s) < K.MACHEP)
        k += 1
        fact = fact * (x + k)
        b = b / w
        k += 1
    q_pole = (q <= 0.0) & q.eq(f.floor(q))
    s = f.where((q <= 0.0) & x.ne(f.floor(x)), f.nan_like(s), s)
    s = f.where(q_pole, math.inf, s)
    s = f.where(x < 1.0, f.nan_like(s), s)
    return f.where(x.eq(1.0), math.inf, s)


@mapping("special_zeta")
def _zeta(c: Call):
    f, x, q = _binary_args(c)
    r = zeta(f, x, q)
    return f.result(f.where(f.isnan(x) | f.isnan(q), f.nan_like(r), r))


@mapping("polygamma")
def _polygamma(c: Call):
    n = int(c.lit("n"))
    f = Fn(c)
    x = f.input("input")
    if n == 0:
        r = digamma(f, x)
    elif n == 1:
        r = trigamma(f, x)
    else:
        sign = 1.0 if n % 2 else -1.0
        r = zeta(f, x * 0.0 + float(n + 1), x) * (sign * math.factorial(n))
    return f.result(f.where(f.isnan(x), x, r))


@mapping("mvlgamma")
def _mvlgamma(c: Call):
    p = int(c.lit("p"))
    f = Fn(c)
    x = f.input("input")
    total = lgamma(f, x)
    for i in range(1, p):
        total = total + lgamma(f, x - i / 2)
    total = total + p * (p - 1) / 4 * math.log(math.pi)
    return f.result(f.where(f.isnan(x), x, total))


# -- modified Bessel functions -----------------------------------------------------------------

def i0e_positive(f: Fn, a: Expr) -> Expr:
    small = f.chbevl(f.minimum(a, 8.0) / 2.0 - 2.0, K.I0E_A)
    ab = f.maximum(a, 8.0)
    large = f.chbevl(32.0 / ab - 2.0, K.I0E_B) / f.sqrt(ab)
    return f.where(a <= 8.0, small, large)


def i1e_positive(f: Fn, a: Expr) -> Expr:
    small = f.chbevl(f.minimum(a, 8.0) / 2.0 - 2.0, K.I1E_A) * a
    ab = f.maximum(a, 8.0)
    large = f.chbevl(32.0 / ab - 2.0, K.I1E_B) / f.sqrt(ab)
    return f.where(a <= 8.0, small, large)


def i0(f: Fn, x: Expr) -> Expr:
    a = f.abs(x)
    return f.exp(a) * i0e_positive(f, a)


def i1(f: Fn, x: Expr) -> Expr:
    a = f.abs(x)
    return f.copysign(f.exp(a) * i1e_positive(f, a), x)


_unary("i0", "special_modified_bessel_i0")(i0)
_unary("special_i1", "special_modified_bessel_i1")(i1)


@_unary("special_i0e")
def i0e(f: Fn, x: Expr) -> Expr:
    return i0e_positive(f, f.abs(x))


@_unary("special_i1e")
def i1e(f: Fn, x: Expr) -> Expr:
    return f.copysign(i1e_positive(f, f.abs(x)), x)


def _k(order: int, scaled: bool):
    small_c, large_c = (K.K0_A, K.K0_B) if order == 0 else (K.K1_A, K.K1_B)
    i_fn = i0 if order == 0 else i1

    def kernel(f: Fn, x: Expr) -> Expr:
        xs = f.clip(x, 1e-300, 2.0)
        series = f.chbevl(xs * xs - 2.0, small_c)
        log_term = f.log(xs * 0.5) * i_fn(f, xs)
        small = series - log_term if order == 0 else log_term + series / xs
        xl = f.maximum(x, 2.0)
        large = f.chbevl(8.0 / xl - 2.0, large_c) / f.sqrt(xl)
        if scaled:
            small = small * f.exp(f.minimum(x, 2.0))
        else:
            large = large * f.exp(-xl)
        r = f.where(x <= 2.0, small, large)
        return f.where(x.eq(0.0), math.inf, f.where(x < 0.0, f.nan_like(x), r))

    kernel.__name__ = f"{'scaled_' if scaled else ''}modified_bessel_k{order}"
    return kernel


_unary("special_modified_bessel_k0")(_k(0, False))
_unary("special_modified_bessel_k1")(_k(1, False))
_unary("special_scaled_modified_bessel_k0")(_k(0, True))
_unary("special_scaled_modified_bessel_k1")(_k(1, True))


# -- Bessel functions of the first and second kind, Airy's Ai ---------------------------------

def _bessel_asymptotic(f: Fn, x: Expr, order: int, sine: bool) -> Expr:
    pp, pq, qp, qq = (K.J0_PP, K.J0_PQ, K.J0_QP, K.J0_QQ) if order == 0 else \
        (K.J1_PP, K.J1_PQ, K.J1_QP, K.J1_QQ)
    xl = f.maximum(x, 5.0)
    z = 25.0 / (xl * xl)
    p = f.poly(z, pp) / f.poly(z, pq)
    q = f.poly(z, qp) / f.poly(z, qq)
    xn = xl - (math.pi / 4 if order == 0 else 3 * math.pi / 4)
    if sine:
        r = p * f.sin(xn) + 5.0 / xl * q * f.cos(xn)
    else:
        r = p * f.cos(xn) - 5.0 / xl * q * f.sin(xn)
    return r * math.sqrt(2 / math.pi) / f.sqrt(xl)


def _j0_small(f: Fn, a: Expr) -> Expr:
    a = f.minimum(a, 5.0)
    z = a * a
    r = (z - 5.78318596294678452118) * (z - 30.4712623436620863991)
    r = r * f.poly(z, K.J0_RP) / f.poly(z, K.J0_RQ)
    return f.where(a < 1e-5, 1.0 - z / 4.0, r)


def _j1_small(f: Fn, a: Expr) -> Expr:
    a = f.minimum(a, 5.0)
    z = a * a
    return f.poly(z, K.J1_RP) / f.poly(z, K.J1_RQ) * a * (z - 14.6819706421238932572) * (
        z - 49.2184563216946036703)


@_unary("special_bessel_j0")
def bessel_j0(f: Fn, x: Expr) -> Expr:
    a = f.abs(x)
    return f.where(a <= 5.0, _j0_small(f, a), _bessel_asymptotic(f, a, 0, False))


@_unary("special_bessel_j1")
def bessel_j1(f: Fn, x: Expr) -> Expr:
    a = f.abs(x)
    r = f.where(a <= 5.0, _j1_small(f, a), _bessel_asymptotic(f, a, 1, False))
    return f.where(x < 0.0, -r, r)


@_unary("special_bessel_y0")
def bessel_y0(f: Fn, x: Expr) -> Expr:
    xs = f.clip(x, 1e-300, 5.0)
    z = xs * xs
    small = f.poly(z, K.Y0_YP) / f.poly(z, K.Y0_YQ) + \
        f.log(xs) * _j0_small(f, xs) * (2 / math.pi)
    r = f.where(x <= 5.0, small, _bessel_asymptotic(f, x, 0, True))
    return f.where(x.eq(0.0), -math.inf, f.where(x < 0.0, f.nan_like(x), r))


@_unary("special_bessel_y1")
def bessel_y1(f: Fn, x: Expr) -> Expr:
    xs = f.clip(x, 1e-300, 5.0)
    z = xs * xs
    small = xs * (f.poly(z, K.Y1_YP) / f.poly(z, K.Y1_YQ)) + (
        _j1_small(f, xs) * f.log(xs) - 1.0 / xs) * (2 / math.pi)
    r = f.where(x <= 5.0, small, _bessel_asymptotic(f, x, 1, True))
    return f.where(x.eq(0.0), -math.inf, f.where(x < 0.0, f.nan_like(x), r))


@_unary("special_spherical_bessel_j0")
def spherical_bessel_j0(f: Fn, x: Expr) -> Expr:
    z = x * x
    small = 1.0 + z * (-1 / 6 + z * (1 / 120 + z * (-1 / 5040 + z * (1 / 362880 + z * (
        -1 / 39916800 + z * (1 / 6227020800))))))
    r = f.where(f.abs(x) < 0.5, small, f.sin(x) / x)
    return f.where(f.isinf(x), 0.0, r)


@_unary("special_airy_ai")
def airy_ai(f: Fn, x: Expr) -> Expr:
    """Maclaurin series on ``[-2.09, 2.09)`` (40 unrolled terms), asymptotic rationals
    beyond; NaN at +-inf, 0 past 103.892 (as PyTorch)."""
    c = 0.564189583547756286948
    xn = f.minimum(x, -2.09)
    zeta_ = -xn * 2.0 * f.sqrt(-xn) / 3.0
    z = 1.0 / zeta_
    z2 = z * z
    fa = 1.0 + z2 * f.poly(z2, K.AIRY_AFN) / f.poly(z2, K.AIRY_AFD)
    ga = z * f.poly(z2, K.AIRY_AGN) / f.poly(z2, K.AIRY_AGD)
    t = zeta_ + math.pi / 4
    negative = c / f.sqrt(f.sqrt(-xn)) * (f.sin(t) * fa - f.cos(t) * ga)
    xp = f.clip(x, 2.09, 103.892)
    zeta_ = xp * 2.0 * f.sqrt(xp) / 3.0
    r = f.poly(1.0 / zeta_, K.AIRY_AN) / f.poly(1.0 / zeta_, K.AIRY_AD)
    positive = c * r / (f.sqrt(f.sqrt(xp)) * 2.0 * f.exp(zeta_))
    xm = f.clip(x, -2.09, 2.09)
    z3 = xm * xm * xm
    m = xm * 0.0 + 1.0
    n = xm * 1.0
    fs, gs = m, n
    k = 1.0
    for _ in range(40):
        m = m * z3 / (k + 1) / (k + 2)
        n = n * z3 / (k + 2) / (k + 3)
        fs = fs + m
        gs = gs + n
        k += 3
    series = fs * 0.355028053887817239260 - gs * 0.258819403792806798405
    r = f.where(x < -2.09, negative, f.where(x < 2.09, series, positive))
    r = f.where(x > 103.892, 0.0, r)
    return f.where(f.isinf(x), f.nan_like(x), r)


# -- sinc, entr, xlog1py --------------------------------------------------------------------------

@_unary("sinc")
def sinc(f: Fn, x: Expr) -> Expr:
    a = f.abs(x)
    s = f.sin(f.remainder(a, 2.0) * math.pi)
    return f.where(x.eq(0.0), 1.0, s / (a * math.pi))


@_unary("special_entr")
def entr(f: Fn, x: Expr) -> Expr:
    r = -x * f.log(f.maximum(x, 5e-324))
    return f.where(x > 0.0, r, f.where(x.eq(0.0), 0.0, -math.inf))


@mapping("special_xlog1py")
def _xlog1py(c: Call):
    f, x, y = _binary_args(c)
    r = f.where(x.eq(0.0), 0.0, x * f.log1p(y))
    return f.result(f.where(f.isnan(y), y, r))


# -- the orthogonal polynomials ----------------------------------------------------------------

#: degree above which a polynomial of constant degree is a Loop rather than unrolled
UNROLL_DEGREE = 24


def _recurrence(f: Fn, first, step, n: Expr, active: Expr, const_n) -> Expr:
    """``P_n`` from ``P_0 = 1``, ``P_1 = first`` and ``P_{j+1} = step(fn, P_j, P_{j-1}, j)``
    (``n`` float64, integral); elements not ``active`` are left to the caller. Unrolled for a
    small constant degree, a ``Loop`` up to the largest active degree otherwise."""
    p = first * 0.0 + 1.0
    q = first * 1.0
    p, q = p + n * 0.0, q + n * 0.0  # one shape for the loop
    if const_n is not None and const_n <= UNROLL_DEGREE:
        for j in range(1, max(const_n, 1)):
            r = step(f, q, p, f.lift(float(j)))
            more = n > float(j)
            p, q = f.where(more, q, p), f.where(more, r, q)
    else:
        top = f.reduce_min(-f.where(active, n, 0.0))  # -max
        trips = f.int_scalar(f.maximum(-top - 1.0, 0.0))

        def body(g: Fn, j, p_, q_):
            j = j + 1.0
            r = step(g, q_, p_, j)
            more = n > j
            return [g.where(more, q_, p_), g.where(more, r, q_)]

        p, q = f.loop(trips, [p, q], body)
    r = f.where(n.eq(0.0), 1.0, q)
    return f.where(n < 0.0, 0.0, r)


def _polynomial(kind: str):
    def emit(c: Call):
        f = Fn(c)
        x = f.input("input")
        n_arg = c.p.get("n")
        const_n = None
        if not is_tensor_arg(n_arg):
            value = c.lit("n")
            const_n = int(value) if math.isfinite(value) else -1
        n = f.input("n")
        n = f.where(f.isfinite(n), f.trunc(n), -1.0)  # the degree as PyTorch casts it
        return f.result(_KINDS[kind](f, x, n, const_n))
    return emit


def _chebyshev(kind: str, shifted: bool):
    def poly(f: Fn, x: Expr, n: Expr, const_n) -> Expr:
        y = x * 2.0 - 1.0 if shifted else x
        first = {"t": y, "u": y * 2.0, "v": y * 2.0 - 1.0, "w": y * 2.0 + 1.0}[kind]
        at_one = x.eq(1.0) if shifted else y.eq(1.0)
        at_minus_one = x.eq(0.0) if shifted else y.eq(-1.0)
        sign = f.where(f.remainder(n, 2.0).eq(0.0), 1.0, -1.0)
        ends = {"t": (1.0, sign), "u": (n + 1.0, sign * (n + 1.0)),
                "v": (1.0, sign * (n * 2.0 + 1.0)), "w": (n * 2.0 + 1.0, sign)}[kind]
        endpoint = at_one | at_minus_one
        r = _recurrence(f, first, lambda g, q, p, j: y * 2.0 * q - p, n, ~endpoint, const_n)
        r = f.where(at_one, ends[0], f.where(at_minus_one, ends[1], r))
        return f.where(n < 0.0, 0.0, r)
    return poly


def _hermite(physicists: bool):
    def poly(f: Fn, x: Expr, n: Expr, const_n) -> Expr:
        limit = 128.0 if f.c.out_dtype == "float32" else 512.0
        if physicists:
            r = _recurrence(f, x * 2.0, lambda g, q, p, j: x * 2.0 * q - j * 2.0 * p, n,
                            n <= limit, const_n)
        else:
            r = _recurrence(f, x * 1.0, lambda g, q, p, j: x * q - j * p, n, n <= limit,
                            const_n)
        return f.where(n > limit, f.nan_like(x), r)
    return poly


def _laguerre(f: Fn, x: Expr, n: Expr, const_n) -> Expr:
    r = _recurrence(f, 1.0 - x, lambda g, q, p, j: ((j * 2.0 + 1.0 - x) * q - j * p) /
                    (j + 1.0), n, x.ne(0.0), const_n)
    return f.where(x.eq(0.0) & (n >= 0.0), 1.0, r)


def _legendre(f: Fn, x: Expr, n: Expr, const_n) -> Expr:
    endpoint = f.abs(x).eq(1.0)
    r = _recurrence(f, x * 1.0, lambda g, q, p, j: ((j * 2.0 + 1.0) * x * q - j * p) /
                    (j + 1.0), n, ~endpoint, const_n)
    sign = f.where((x > 0.0) | f.remainder(n, 2.0).eq(0.0), 1.0, -1.0)
    return f.where(endpoint & (n >= 0.0), sign, r)


_KINDS = {"hermite_polynomial_h": _hermite(True), "hermite_polynomial_he": _hermite(False),
          "laguerre_polynomial_l": _laguerre, "legendre_polynomial_p": _legendre}
for _kind in "tuvw":
    for _shifted in (False, True):
        _KINDS[f"{'shifted_' if _shifted else ''}chebyshev_polynomial_{_kind}"] = \
            _chebyshev(_kind, _shifted)
for _name in _KINDS:
    mapping(f"special_{_name}")(_polynomial(_name))
del _kind, _shifted, _name

