"""Elementwise ops: the exp/log, trig and hyperbolic families, special functions (erf, erfc,
erfinv, lgamma, digamma), sigmoid/logit, rounding, clamp, where, maximum/minimum, lerp,
closeness and finiteness tests, comparisons, logical and bitwise ops with their Python
operators, and the copying ops clone, copy_, fill_ and zero_.

Most ops are built by ``unary_op``/``binary_op`` (``_factories``) from a forward on arrays and
a backward written with Tensor ops, so that gradients are themselves differentiable. The
special functions' and sigmoid's array kernels live in ``_special``.
"""

from __future__ import annotations

import functools
import math
import numbers
import warnings

import numpy as np

from .. import _dtype, _native
from .. import _memory_format as _mf
from .. import return_types as _return_types
from .._device import _device_error, check_same_device, xp_of
from .._dtype import scalar_type_name
from .._format import shape_str
from .._sparse_tensor import SparseTensor as _Sparse
from .._sparse_tensor import sparse_op
from .._tensor import Tensor, _make
from .._warn import user_stacklevel
from ..autograd.grad_mode import GRAD
from ..autograd.graph import make_node_class, record, result
from . import _special
from ._casts import cast_to
from ._factories import _fit, _ndarray_operand, binary_op, public, unary_op
from ._inplace import (
    SHARED_WRITE,
    fast_floats,
    make_inplace,
    shared_alias,
    shares_elements,
    writable,
)
from ._promotion import _OPERANDS, _dtype_category, broadcast_shape, check_int_scalar
from ._signatures import SIGNATURES, check_binds, refuse_input
from ._special import TWO_OVER_SQRT_PI, in_float64
from .registry import register, register_method

_return_types.make("frexp", ("mantissa", "exponent"))

__all__ = [
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal",
    "square", "abs", "sign", "sgn", "signbit", "neg", "positive",
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
    "atanh", "atan2", "hypot",
    "erf", "erfc", "erfinv", "sigmoid", "logit", "xlogy", "lgamma", "digamma",
    "lerp", "nan_to_num", "copysign",
    "round", "floor", "ceil", "trunc", "frac",
    "clamp", "clamp_min", "clamp_max", "where", "maximum", "minimum", "fmax", "fmin",
    "isclose", "allclose", "equal", "isnan", "isinf", "isfinite", "isposinf", "isneginf",
    "isreal", "relu", "gt", "lt", "ge", "le", "eq", "ne",
    "logical_and", "logical_or", "logical_xor", "logical_not",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
    "bitwise_right_shift", "clone", "copy_", "fill_", "zero_",
    "deg2rad", "rad2deg", "logaddexp", "logaddexp2", "heaviside", "gcd", "lcm", "ldexp",
    "nextafter", "frexp",
]

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_SQRT_PI_OVER_TWO = math.sqrt(math.pi) / 2.0
_NAN = float("nan")


# -- helpers ------------------------------------------------------------------------------------

def _zeros(g: Tensor) -> Tensor:
    """An identically-zero gradient shaped like ``g`` (a constant: no graph; for a gradient
    batched by vmap, one unbatched zero tensor serves every example)."""
    if g.__class__ is not Tensor:
        return _make(xp_of(g).zeros(tuple(g.shape), dtype=g._data.dtype), g._device)
    return _make(xp_of(g).zeros_like(g._data), g._device)


def _unsupported(kernel: str, arr) -> NotImplementedError:
    """PyTorch's error for a dtype a kernel does not cover (``"abs_cpu" not implemented...``)."""
    cpu = arr.__class__ is np.ndarray or str(getattr(arr, "_device", "")) == "cpu"  # sparse
    suffix = "cpu" if cpu else "cuda"
    return NotImplementedError(f'"{kernel}_{suffix}" not implemented for '
                               f"'{scalar_type_name(arr.dtype)}'")


#: run ``fn`` on float16 and bfloat16 arrays in float32 (PyTorch's opmath type), round back once
_opmath = _dtype.opmath


def _value_range(np_dtype):
    """The Python numbers a scalar of ``np_dtype`` accepts: unsigned types take negative
    values down to ``-max`` (wrapping modulo 2**bits), as PyTorch's overflow check does."""
    if np_dtype in _dtype.INEXACT_NP:
        big = float(_dtype.np_finfo(np_dtype).max)
        return -big, big
    info = np.iinfo(np_dtype)
    return (-int(info.max) if np_dtype.kind == "u" else int(info.min)), int(info.max)


_VALUE_RANGES = {d.np: _value_range(d.np) for d in _dtype.ALL_DTYPES if d.np.kind != "b"}


def _scalar_as(value, np_dtype):
    """A Python number as a NumPy scalar of ``np_dtype``, with PyTorch's overflow check."""
    if value.__class__ is int and not -0x8000000000000000 <= value <= 0xFFFFFFFFFFFFFFFF:
        check_int_scalar(value)  # the argument parser's, before the dtype's
    kind = "f" if np_dtype in _dtype.FLOATING_NP else np_dtype.kind  # bfloat16's kind is 'V'
    if kind == "b":
        return np.bool_(value)
    if kind == "c":
        return np_dtype.type(value)
    if np_dtype is _dtype.CHALF_NP:  # complex32 (its kind is 'W'): both parts fit float16
        z = complex(value)
        low, high = _VALUE_RANGES[_dtype.float16.np]
        for part in (z.real, z.imag):
            if math.isfinite(part) and not low <= part <= high:
                raise RuntimeError("value cannot be converted to type "
                                   f"{_dtype.c_type_name(np_dtype)} without overflow")
        return np_dtype.type(z)
    if isinstance(value, complex):
        if value.imag:
            raise RuntimeError(f"value cannot be converted to type "
                               f"{_dtype.c_type_name(np_dtype)} without overflow")
        value = value.real
    v = float(value)
    if kind != "f" and math.isfinite(v):
        v = int(value)
    low, high = _VALUE_RANGES[np_dtype]
    if not low <= v <= high and (kind != "f" or math.isfinite(v)):
        raise RuntimeError(f"value cannot be converted to type {_dtype.c_type_name(np_dtype)} "
                           "without overflow")
    if kind == "u" and v < 0:
        v += high + 1
    return np_dtype.type(v)


def _common_device(values):
    """The device of the tensors among ``values``; 0-dim CPU tensors follow the others."""
    dev = None
    fallback = None
    for v in values:
        if not isinstance(v, Tensor):
            continue
        fallback = fallback or v._device
        if v._data.ndim == 0 and v._device.type == "cpu":
            continue
        if dev is None:
            dev = v._device
        elif v._device is not dev:
            raise _device_error(dev, v._device)
    return dev or fallback


def _prepare(values, np_dtype, dev=None):
    """Tensors and Python numbers of an n-ary op as arrays/scalars of ``np_dtype`` on one
    device. Returns ``(tensors, arrays, device)``; a number's slot in ``tensors`` is None."""
    dev = dev or _common_device(values)
    tensors, arrays = [], []
    for v in values:
        if isinstance(v, Tensor):
            if v._device is not dev:
                v = cast_to(v, dev, None, False)
            d = v._data
            arrays.append(d if d.dtype is np_dtype else d.astype(np_dtype))
            tensors.append(v)
        else:
            arrays.append(None if v is None else _scalar_as(v, np_dtype))
            tensors.append(None)
    return tensors, arrays, dev


def _meta(t):
    """What a gradient is reduced to for input ``t`` (shape and dtype), None for numbers."""
    return (t._data.shape, t._data.dtype) if isinstance(t, Tensor) else None


def _tensor_args(op, name):
    """``op`` that, like PyTorch's overload, takes tensors only (no Python numbers)."""

    def checked(input, other):
        for pos, (arg, value) in enumerate((("input", input), ("other", other)), 1):
            if not isinstance(value, Tensor):
                raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, "
                                f"not {type(value).__name__}")
        return op(input, other)

    checked.__name__ = checked.__qualname__ = name
    checked._node = op._node
    return checked


def _real_ufunc(kernel, ufunc):
    """``ufunc`` (a real-only NumPy ufunc) raising PyTorch's NotImplementedError for complex
    operands instead of NumPy's TypeError (checked only once the ufunc has failed)."""

    def run(a, b):
        try:
            return ufunc(a, b)
        except TypeError:
            for arr in (a, b):
                if getattr(arr, "dtype", None) is not None and arr.dtype.kind == "c":
                    raise _unsupported(kernel, arr) from None
            raise

    run.__name__ = ufunc.__name__
    return run


def _rejecting(op, kinds, kernel, complex_error=None):
    """``op`` raising PyTorch's NotImplementedError for inputs whose dtype kind is in ``kinds``
    (``complex_error``: a callable giving the exception PyTorch raises for complex inputs)."""

    def checked(input):
        try:
            kind = input._data.dtype.kind
        except AttributeError:  # not a tensor: the op's own words (PyTorch's parser's)
            return op(input)
        if kind in kinds:
            if complex_error is not None and input._data.dtype.kind == "c":
                raise complex_error()
            raise _unsupported(kernel, input._data)
        return op(input)

    checked.__name__ = checked.__qualname__ = op.__name__
    checked._node = op._node
    return checked


def _unary(name, fwd, backward=None, *, doc, to_float=True, saves="", node_name=None,
           reject="", kernel=None, aliases=(), inplace=True, out=True, complex_error=None):
    """Build and register a unary op (``to_float``: integers and bools compute in float;
    ``out``: ``ember.<name>`` takes ``out=``, as most of PyTorch's elementwise ops)."""
    op = unary_op(name, fwd, backward, to_float=to_float, saves=saves, node_name=node_name)
    if complex_error is not None:
        reject += "c"
    if reject:
        op = _rejecting(op, reject, kernel or name, complex_error)
    op.__doc__ = doc
    return register(name, inplace=inplace, aliases=aliases, out=out,
                    differentiable=backward is not None)(op)


def _binary(name, fwd, backward=None, *, doc, kind="arith", saves="", node_name=None,
            tensors_only=False, aliases=(), inplace=True, out=True):
    """Build and register a binary op with PyTorch's broadcasting and promotion (``out`` as in
    ``_unary``)."""
    op = binary_op(name, fwd, backward, kind=kind, saves=saves, node_name=node_name)
    if tensors_only:
        op = _tensor_args(op, name)
    op.__doc__ = doc
    if inplace is True and name + "_" in SIGNATURES:  # the in-place op's own parser words
        inplace = _parsed_inplace(op, name + "_")
    return register(name, inplace=inplace, aliases=aliases, out=out,
                    differentiable=backward is not None)(op)


# -- exp / log / powers ---------------------------------------------------------------------

def _exp_bw(node, g):
    return (g * node.output(),)


def _exp2_bw(node, g):
    return (g * node.output() * _LN2,)


def _expm1_bw(node, g):
    return (g * (node.output() + 1),)


def _log_bw(node, g):
    return (g / node.saved[0],)


def _log2_bw(node, g):
    return (g / (node.saved[0] * _LN2),)


def _log10_bw(node, g):
    return (g / (node.saved[0] * _LN10),)


def _log1p_bw(node, g):
    return (g / (node.saved[0] + 1),)


def _sqrt_bw(node, g):
    return (g / (node.output() * 2),)


def _rsqrt_bw(node, g):
    return (g * node.output() ** 3 * -0.5,)


def _reciprocal_bw(node, g):
    o = node.output()
    return (-(g * o * o),)


def _square_bw(node, g):
    return (g * node.saved[0] * 2,)


def _rsqrt_np(a):
    return 1 / np.sqrt(a)


def _square_np(a):
    if a.dtype is _dtype.CHALF_NP:  # PyTorch's square is pow, which has no complex32 kernel
        raise _dtype.no_chalf_kernel("pow")
    return a.astype(np.int64) if a.dtype.kind == "b" else np.square(a)


exp = _unary("exp", np.exp, _exp_bw, saves="o", doc="``e ** input`` elementwise.")
exp2 = _unary("exp2", np.exp2, _exp2_bw, saves="o", doc="``2 ** input`` elementwise.")
expm1 = _unary("expm1", np.expm1, _expm1_bw, saves="o",
               doc="``exp(input) - 1``, accurate for small inputs.")
log = _unary("log", np.log, _log_bw, saves="a", doc="Natural logarithm.")
log2 = _unary("log2", np.log2, _log2_bw, saves="a", doc="Base-2 logarithm.")
log10 = _unary("log10", np.log10, _log10_bw, saves="a", doc="Base-10 logarithm.")
log1p = _unary("log1p", np.log1p, _log1p_bw, saves="a", node_name="Log1PBackward0",
               doc="``log(1 + input)``, accurate for small inputs.")
sqrt = _unary("sqrt", np.sqrt, _sqrt_bw, saves="o", doc="Square root.")
rsqrt = _unary("rsqrt", _rsqrt_np, _rsqrt_bw, saves="o", doc="``1 / sqrt(input)``.")
reciprocal = _unary("reciprocal", np.reciprocal, _reciprocal_bw, saves="o",
                    doc="``1 / input`` (integers give floats).")
square = _unary("square", _square_np, _square_bw, to_float=False, saves="a",
                node_name="PowBackward0", doc="``input ** 2`` (bools give int64).")


# -- sign family ----------------------------------------------------------------------------

def _zero_bw(node, g):
    return (_zeros(g),)


def _abs_bw(node, g):
    return (g * node.saved[0].sgn(),)  # sgn: z / |z| for complex z (PyTorch's abs_backward)


def _neg_bw(node, g):
    return (-g,)


def _sign_np(a):
    # (x > 0) - (x < 0): 0 for NaN and -0.0, as PyTorch (np.sign keeps NaN)
    if a.dtype.kind == "b":
        return a.copy()
    if a.dtype in _dtype.COMPLEX_NP:
        raise NotImplementedError("Unlike NumPy, ember.sign is not intended to support complex "
                                  "numbers. Please use ember.sgn instead.")
    return (a > 0).astype(a.dtype) - (a < 0).astype(a.dtype)


def _sgn_np(a):
    """``z / |z|`` for complex ``z`` (0 at 0), ``sign`` for real numbers."""
    if a.dtype not in _dtype.COMPLEX_NP:
        return _sign_np(a)
    xp = xp_of(a)
    if a.dtype is _dtype.CHALF_NP:
        return _sgn_chalf(a, xp)
    mag = xp.abs(a)
    return xp.where(mag == 0, 0, a / xp.where(mag == 0, 1, mag)).astype(a.dtype)


def _sgn_chalf(a, xp):
    """complex32 ``sgn`` as PyTorch computes it: in float32, each part times ``1 / |z|``
    (|z| = hypot(re, im)), rounded to float16 once; 0 at 0."""
    re = _dtype.real_part(a).astype(np.float32)
    im = _dtype.imag_part(a).astype(np.float32)
    mag = xp.hypot(re, im)
    inv = xp.where(mag == 0, np.float32(0), np.float32(1) / xp.where(mag == 0, 1, mag))
    out = xp.empty(a.shape, dtype=a.dtype)
    _dtype.real_part(out)[...] = re * inv
    _dtype.imag_part(out)[...] = im * inv
    return out


def _sgn_bw(node, g):
    (z,) = node.saved
    if z._data.dtype not in _dtype.COMPLEX_NP:
        return (_zeros(g),)
    # (g - s Re(g conj(s))) / |z|, zero at the origin (PyTorch's sgn_backward)
    s = node.output()
    mag = z.abs()
    at0 = mag == 0
    inv = (~at0).to(mag.dtype) / mag.masked_fill(at0, 1.0)  # real: 0 at the origin
    return ((g - s * (g * s.conj()).real) * inv,)


def _signbit_np(a):
    return np.signbit(a) if a.dtype in _dtype.FLOATING_NP else a < 0


abs = _unary("abs", np.abs, _abs_bw, to_float=False, saves="a", reject="b",
             aliases=("absolute",), doc="Absolute value (bool tensors are an error).")
sign = _unary("sign", _sign_np, _zero_bw, to_float=False,
              doc="-1, 0 or 1 by the sign of each element (0 for NaN).")
sgn = _unary("sgn", _sgn_np, _sgn_bw, to_float=False, saves="ao",
             doc="``z / |z|`` for complex tensors (0 at 0); ``sign`` for real ones.")
sgn._node._complex = "own"
abs._node._complex = "own"
signbit = _unary("signbit", _signbit_np, to_float=False, inplace=False,
                 complex_error=lambda: NotImplementedError(
                     "signbit is not implemented for complex tensors."),
                 doc="True where the sign bit is set (``-0.0`` included).")
neg = register("neg", out=True, inplace=True, aliases=("negative",))(
    unary_op("neg", np.negative, _neg_bw, no_bool=True))
neg.__doc__ = "``-input`` (bool tensors are an error)."


@register("positive")
def positive(input):
    """``+input``: returns ``input`` itself (bool tensors are an error)."""
    try:
        kind = input._data.dtype.kind
    except AttributeError:
        refuse_input("positive", input)
        raise
    if kind == "b":
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


# -- trigonometric and hyperbolic -----------------------------------------------------------

def _sin_bw(node, g):
    return (g * node.saved[0].cos(),)


def _cos_bw(node, g):
    return (-(g * node.saved[0].sin()),)


def _tan_bw(node, g):
    o = node.output()
    return (g * (o * o + 1),)


def _asin_bw(node, g):
    x = node.saved[0]
    return (g * (1 - x * x).rsqrt(),)


def _acos_bw(node, g):
    x = node.saved[0]
    return (-(g * (1 - x * x).rsqrt()),)


def _atan_bw(node, g):
    x = node.saved[0]
    return (g / (x * x + 1),)


def _sinh_bw(node, g):
    return (g * node.saved[0].cosh(),)


def _cosh_bw(node, g):
    return (g * node.saved[0].sinh(),)


def _tanh_bw(node, g):
    o = node.output()
    if not GRAD.enabled and g.__class__ is Tensor and g._device is o._device:
        r = _native.tanh_backward(g._data, o._data)  # one pass, the three ops' bits
        if r is not None:
            return (_make(r, g._device),)
    return (g * (1 - o * o),)


def _asinh_bw(node, g):
    x = node.saved[0]
    return (g * (x * x + 1).rsqrt(),)


def _acosh_bw(node, g):
    x = node.saved[0]
    return (g * (x * x - 1).rsqrt(),)


def _atanh_bw(node, g):
    x = node.saved[0]
    return (g / (1 - x * x),)


sin = _unary("sin", np.sin, _sin_bw, saves="a", doc="Sine (radians).")
cos = _unary("cos", np.cos, _cos_bw, saves="a", doc="Cosine (radians).")
tan = _unary("tan", np.tan, _tan_bw, saves="o", doc="Tangent (radians).")
asin = _unary("asin", np.arcsin, _asin_bw, saves="a", aliases=("arcsin",), doc="Arcsine.")
acos = _unary("acos", np.arccos, _acos_bw, saves="a", aliases=("arccos",), doc="Arccosine.")
atan = _unary("atan", np.arctan, _atan_bw, saves="a", aliases=("arctan",), doc="Arctangent.")
sinh = _unary("sinh", np.sinh, _sinh_bw, saves="a", doc="Hyperbolic sine.")
cosh = _unary("cosh", np.cosh, _cosh_bw, saves="a", doc="Hyperbolic cosine.")
tanh = _unary("tanh", np.tanh, _tanh_bw, saves="o", doc="Hyperbolic tangent.")
asinh = _unary("asinh", np.arcsinh, _asinh_bw, saves="a", aliases=("arcsinh",),
               doc="Inverse hyperbolic sine.")
acosh = _unary("acosh", np.arccosh, _acosh_bw, saves="a", aliases=("arccosh",),
               doc="Inverse hyperbolic cosine.")
atanh = _unary("atanh", np.arctanh, _atanh_bw, saves="a", aliases=("arctanh",),
               doc="Inverse hyperbolic tangent.")


def _atan2_bw(node, g):
    a, b = node.saved
    denom = a * a + b * b
    at_origin = denom == 0
    recip = where(at_origin, 0.0, 1 / where(at_origin, 1.0, denom))  # 0 at (0, 0), as PyTorch
    return g * b * recip, -(g * a * recip)


def _hypot_np(a, b):
    if a.dtype not in _dtype.FLOATING_NP:
        raise _unsupported("hypot", a)
    return np.hypot(a, b)


def _hypot_bw(node, g):
    a, b = node.saved
    o = node.output()
    return g * a / o, g * b / o


atan2 = _binary("atan2", _real_ufunc("atan2", np.arctan2), _atan2_bw, kind="float", saves="ab",
                tensors_only=True,
                aliases=("arctan2",), doc="Angle of ``(other, input)`` in ``(-pi, pi]``.")
hypot = _binary("hypot", _hypot_np, _hypot_bw, saves="abo", tensors_only=True,
                doc="``sqrt(input ** 2 + other ** 2)`` without overflow (floats only).")


# -- special functions (array kernels in ``_special``) -----------------------------------------

def _erf_bw(node, g):
    x = node.saved[0]
    return (g * ((-(x * x)).exp() * TWO_OVER_SQRT_PI),)


def _erfc_bw(node, g):
    x = node.saved[0]
    return (g * ((-(x * x)).exp() * -TWO_OVER_SQRT_PI),)


def _erfinv_bw(node, g):
    o = node.output()
    return (g * ((o * o).exp() * _SQRT_PI_OVER_TWO),)


def _lgamma_bw(node, g):
    return (g * node.saved[0].digamma(),)


def _digamma_bw(node, g):
    return (g * _trigamma(node.saved[0]),)  # polygamma(1, x)


def _trigamma_bw(node, g):
    # polygamma(2, x); a constant here, so fourth derivatives of lgamma are not available
    return (g * _tetragamma(node.saved[0]),)


erf = _unary("erf", in_float64(_special.erf_f64), _erf_bw, saves="a", doc="The error function.")
erfc = _unary("erfc", in_float64(_special.erfc_f64), _erfc_bw, saves="a",
              doc="``1 - erf(input)``, accurate where erf is close to 1.")
erfinv = _unary("erfinv", _special.erfinv, _erfinv_bw, saves="o",
                doc="Inverse error function on ``[-1, 1]`` (NaN outside).")
lgamma = _unary("lgamma", in_float64(_special.lgamma_f64), _lgamma_bw, saves="a",
                doc="``log(|gamma(input)|)``.")
digamma = _unary("digamma", in_float64(_special.digamma_f64), _digamma_bw, saves="a",
                 doc="Logarithmic derivative of the gamma function.")
_trigamma = unary_op("trigamma", in_float64(_special.trigamma_f64), _trigamma_bw, to_float=True,
                     saves="a", node_name="PolygammaBackward0")
_tetragamma = unary_op("tetragamma", in_float64(_special.tetragamma_f64), to_float=True)


# -- sigmoid, logit, xlogy ------------------------------------------------------------------

def _sigmoid_bw(node, g):
    o = node.output()
    return (g * o * (1 - o),)


sigmoid = _unary("sigmoid", _opmath(_special.sigmoid), _sigmoid_bw, saves="o",
                 doc="``1 / (1 + exp(-input))``, stable for large ``|input|``.")


def _logit_np(a, eps):
    if eps is not None:
        a = a.clip(eps, 1 - eps)
    return np.log(a / (1 - a))


def _logit_bw(node, g):
    x = node.saved[0]
    eps = node.ctx
    dx = g / (x * (1 - x))
    if eps is None:
        return (where((x < 0) | (x > 1), _NAN, dx),)
    return (where((x < eps) | (x > 1 - eps), 0.0, dx),)


LogitBackward0 = make_node_class("LogitBackward0", _logit_bw)


@register("logit", out=True, inplace=True)
def logit(input, eps=None):
    """``log(p / (1 - p))``; with ``eps``, ``p`` is clamped to ``[eps, 1 - eps]`` first."""
    try:
        d = input._data
    except AttributeError:
        refuse_input("logit", input)
        raise
    if d.dtype not in _dtype.FLOATING_NP:
        if d.dtype.kind == "c":  # PyTorch's kernel has no complex case (a cast drops imag)
            raise _dtype.no_kernel("logit_cpu", d.dtype)
        d = d.astype(_dtype.get_default_dtype().np)
    if d.dtype in _dtype.OPMATH:
        r = _logit_low_precision(d, eps)
    else:
        r = _logit_np(d, eps)
    return result(r, input._device, LogitBackward0, (input,), (input,), eps)


def _logit_low_precision(d, eps):
    """float16/bfloat16 ``logit`` as PyTorch's CPU kernel computes it: the clamp bounds, ``1 -
    x`` and the quotient in the input's dtype (each rounded), the log in float32."""
    dt, wide = d.dtype, _dtype.widen
    if eps is not None:
        lo = float(np.asarray(eps).astype(dt))
        d = d.clip(lo, float(np.asarray(1 - lo).astype(dt)))
    x = wide(d)
    q = (x / wide((1 - x).astype(dt))).astype(dt)
    return np.log(wide(q)).astype(dt)


def _same_dtype_operands(a, b):
    """A Python-number operand as a NumPy scalar of the other operand's dtype."""
    if not hasattr(a, "dtype"):
        a = b.dtype.type(a)
    elif not hasattr(b, "dtype"):
        b = a.dtype.type(b)
    return a, b


def _xlogy_np(a, b):
    a, b = _same_dtype_operands(a, b)
    if a.dtype.kind == "c":
        raise _unsupported("xlogy", a)
    xp = xp_of(b if isinstance(a, np.generic) else a)
    with np.errstate(all="ignore"):
        r = xp.where(a == 0, 0, a * np.log(b))
    return xp.where(np.isnan(b), b, r)


def _xlogy_bw(node, g):
    a, b = node.saved
    ga = gb = None
    if isinstance(a, Tensor):
        ga = where((a == 0) & (b <= 0), 0.0, xlogy(g, b))
    if isinstance(b, Tensor):
        gb = g * a / b
    return ga, gb


_xlogy = {variant: binary_op("xlogy", _xlogy_np, _xlogy_bw, kind="float", saves="ab",
                             node_name=f"XlogyBackward{variant}") for variant in range(3)}


def xlogy(input, other):
    """``input * log(other)``, 0 where ``input == 0`` (unless ``other`` is NaN)."""
    variant = 0 if isinstance(input, Tensor) and isinstance(other, Tensor) else \
        1 if isinstance(other, Tensor) else 2
    return _xlogy[variant](input, other)


def _parsed_inplace(fn, name: str):
    """``Tensor.<name>`` (``make_inplace``'s) whose refused arguments get the parser's error
    in the in-place op's words (``xlogy_()``, not ``xlogy()``), checked once the op failed."""
    derived = make_inplace(fn, name)

    def inplace(self, *args, **kwargs):
        try:
            return derived(self, *args, **kwargs)
        except (TypeError, AttributeError):
            check_binds(name, (self, *args), kwargs)
            raise

    inplace.__name__ = inplace.__qualname__ = name
    if hasattr(derived, "_ember_aliases"):
        inplace._ember_aliases = derived._ember_aliases
    return inplace


xlogy = register("xlogy", out=True, inplace=_parsed_inplace(xlogy, "xlogy_"))(xlogy)


# -- lerp, nan_to_num, copysign -------------------------------------------------------------

def _lerp_np(start, end, weight):
    diff = end - start
    # a number weight takes one of the two formulas (a weight tensor, elementwise)
    low = bool(-0.5 < weight < 0.5) if not isinstance(weight, np.ndarray) \
        and not hasattr(weight, "__cuda_array_interface__") else None
    if diff.dtype == np.float32:  # PyTorch's kernel fuses both multiply-adds: the products
        d = diff.astype(np.float64)  # are exact in float64, rounded once (its bits, tested)
        if low is not None:
            if low:
                return (np.float64(weight) * d + start).astype(np.float32)
            return (end - d * np.float64(np.float32(1) - weight)).astype(np.float32)
        w = weight.astype(np.float64)
        w1 = (np.float32(1) - weight).astype(np.float64)
        return xp_of(diff).where(np.abs(weight) < 0.5, (w * d + start).astype(np.float32),
                                 (end - d * w1).astype(np.float32))
    if diff.dtype == np.float64 and diff.__class__ is np.ndarray:  # fused there too (Dekker)
        from .._torch_rng import _fma64

        with np.errstate(invalid="ignore", over="ignore"):
            if low is None:
                fused = np.where(np.abs(weight) < 0.5, _fma64(weight, diff, start),
                                 _fma64(-diff, 1 - weight, end))
            else:
                fused = _fma64(weight, diff, start) if low else _fma64(-diff, 1 - weight, end)
        finite = np.isfinite(fused)
        if low is not None and finite.all():
            return fused
        # (the split overflows at infinities and huge values: the plain result stands there)
        plain = np.where(np.abs(weight) < 0.5, start + weight * diff, end - diff * (1 - weight))
        return np.where(finite, fused, plain)
    return xp_of(diff).where(np.abs(weight) < 0.5, start + weight * diff,
                             end - diff * (1 - weight))


def _lerp_fast(input, end, weight: float):
    """``lerp`` of two float32/float64 CPU tensors of one shape and layout by a number, with
    no gradient to record (``fast_floats``): ``_lerp_np``'s values without the general path's
    overhead; None where that path must run."""
    dt = fast_floats(input, end)
    if dt is None:
        return None
    s, e = input._data, end._data
    if s.shape != e.shape or not (s.flags.c_contiguous and e.flags.c_contiguous):
        return None
    return _make(_lerp_np(s, e, _scalar_as(weight, dt)), input._device)


def _lerp_bw(node, g):
    start, end, weight = node.saved
    metas = node.ctx
    grads = (g * (1 - weight), g * weight)
    if isinstance(weight, Tensor):
        grads += (g * (end - start),)
    return tuple(_fit(gr, *m) for gr, m in zip(grads, metas))


LerpBackward0 = make_node_class("LerpBackward0", _lerp_bw)
LerpBackward1 = make_node_class("LerpBackward1", _lerp_bw)


@register("lerp", out=True, inplace=True)
def lerp(input, end, weight):
    """``input + weight * (end - input)``; ``weight`` is a number or a tensor."""
    if not isinstance(end, Tensor):
        raise TypeError(f"lerp(): argument 'end' (position 2) must be Tensor, not "
                        f"{type(end).__name__}")
    if weight.__class__ is float:
        r = _lerp_fast(input, end, weight)  # EMAs and Lion's lerp_, per parameter
        if r is not None:
            return r
    dt = input._data.dtype
    tensor_weight = isinstance(weight, Tensor)
    for label, t in (("end", end), ("weight", weight)):
        if label == "end" or (tensor_weight and t._data.ndim):
            if t._data.dtype is not dt:
                raise RuntimeError(f"expected dtype {_dtype.options_type_name(dt)} for "
                                   f"`{label}` but got dtype "
                                   f"{_dtype.options_type_name(t._data.dtype)}")
    if dt not in _dtype.FLOATING_NP:
        kernel = "lerp_kernel_tensor" if tensor_weight else "lerp_kernel_scalar"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{scalar_type_name(dt)}\'')
    (ts, te, tw), (s, e, w), dev = _prepare((input, end, weight), dt)
    shape = s.shape
    for t in (te, tw):
        if t is not None:
            shape = broadcast_shape(shape, t._data.shape)
    if tw is None and dt in _dtype.OPMATH:  # a number weight in the opmath type, as PyTorch's
        w = _dtype.OPMATH[dt].type(weight)   # (not rounded to float16/bfloat16 first)
    r = _opmath(_lerp_np)(s, e, w)
    if not (s.flags.c_contiguous and e.flags.c_contiguous):
        r = _mf.iter_layout(r, [x for x in (s, e, w) if hasattr(x, "flags")])
    if tensor_weight:  # start and end only for the weight's gradient
        gw = tw is not None and tw.requires_grad
        return result(r, dev, LerpBackward1, (ts, te, tw), (ts, te, tw),
                       (_meta(ts), _meta(te), _meta(tw)), checked=(gw, gw, True))
    return result(r, dev, LerpBackward0, (ts, te), (ts, te, w), (_meta(ts), _meta(te)),
                  checked=(False, False, True))


def _nan_to_num_bw(node, g):
    return (where(node.saved[0].isfinite(), g, 0.0),)


NanToNumBackward0 = make_node_class("NanToNumBackward0", _nan_to_num_bw)


@register("nan_to_num", out=True, inplace=True)
def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """Replace NaN by ``nan`` and infinities by ``posinf``/``neginf`` (default: the dtype's
    largest and smallest finite values). Integer and bool tensors are returned as copies."""
    if input.__class__ is _Sparse:  # ember._sparse_tensor: on the stored values
        return sparse_op("nan_to_num", nan_to_num, input, nan, posinf, neginf)
    try:
        d = input._data
    except AttributeError:
        refuse_input("nan_to_num", input)
        raise
    if d.dtype not in _dtype.FLOATING_NP:
        if d.dtype is _dtype.CHALF_NP:
            raise _dtype.no_chalf_kernel("nan_to_num")
        return _make(_mf.copy_as(d, _mf.preserve_order(d)), input._device)  # clone's layout
    if d.dtype is _dtype.BFLOAT16_NP:  # NumPy's nan_to_num knows its own float dtypes only
        big = float(_dtype.np_finfo(d.dtype).max)
        posinf = big if posinf is None else posinf
        neginf = -big if neginf is None else neginf
    with np.errstate(over="ignore"):
        r = _dtype.narrow(xp_of(input).nan_to_num(_dtype.widen(d) if d.dtype is
                                                  _dtype.BFLOAT16_NP else d, nan=nan,
                                                  posinf=posinf, neginf=neginf), d.dtype)
    if not d.flags.c_contiguous:  # NumPy's copy sorts stride-0 dims too; PyTorch's does not
        r = _mf.iter_layout(r, (d,))
    return result(r, input._device, NanToNumBackward0, (input,), (input,))


def _copysign_bw(node, g):
    a, b = node.saved
    # d/da copysign(a, b) = result / a: +-1, 0 where a == 0, NaN at +-inf and NaN (PyTorch)
    ga = None
    if isinstance(a, Tensor):
        with np.errstate(all="ignore"):
            ga = g * _where_of(g)(a == 0, 0.0, node.output() / a)
    gb = _zeros(g) if isinstance(b, Tensor) else None
    return ga, gb


copysign = _binary("copysign", _real_ufunc("copysign", np.copysign), _copysign_bw, kind="float",
                   saves="abo",
                   doc="``|input|`` with the sign of ``other`` (integers give floats).")


# -- rounding ---------------------------------------------------------------------------------

def _keep_integers(fn):
    """A rounding forward: integer tensors come back unchanged (as a copy), as in PyTorch."""

    def run(a):
        return a.copy() if a.dtype.kind in "iu" else fn(a)

    return run


def _not_for_complex(name):
    """PyTorch's error for a rounding op given a complex tensor."""
    return lambda: NotImplementedError(f"{name} is not supported for complex inputs")


def _frac_np(a):
    return a - np.trunc(a)


def _identity_bw(node, g):
    return (g,)


floor = _unary("floor", _keep_integers(np.floor), _zero_bw, to_float=False, reject="b",
               complex_error=_not_for_complex("floor"),
               kernel="floor_vml", doc="Largest integer not greater than each element.")
ceil = _unary("ceil", _keep_integers(np.ceil), _zero_bw, to_float=False, reject="b",
               complex_error=_not_for_complex("ceil"),
              kernel="ceil_vml", doc="Smallest integer not less than each element.")
trunc = _unary("trunc", _keep_integers(np.trunc), _zero_bw, to_float=False, reject="b",
               complex_error=_not_for_complex("trunc"),
               kernel="trunc_vml", aliases=("fix",), doc="Round toward zero.")
frac = _unary("frac", _frac_np, _identity_bw, to_float=False, reject="biuc",
              doc="Fractional part: ``input - trunc(input)``.")


def _round_np(a, decimals):
    if decimals == 0:
        return np.rint(a)
    if decimals > 0:
        scale = 10.0 ** decimals
        return np.rint(a * scale) / scale
    scale = 10.0 ** -decimals
    return np.rint(a / scale) * scale


RoundBackward0 = make_node_class("RoundBackward0", _zero_bw)
RoundBackward1 = make_node_class("RoundBackward1", _zero_bw)


@register("round", out=True, inplace=True)
def round(input, *, decimals=0):  # PyTorch's name
    """Round half to even; ``decimals`` rounds to that many decimal places."""
    if input.__class__ is _Sparse:  # ember._sparse_tensor: on the stored values
        return sparse_op("round", round, input, decimals=decimals)
    try:
        d = input._data
    except AttributeError:
        refuse_input("round", input)
        raise
    if d.dtype.kind in "biuc":
        if d.dtype.kind in "bc" or decimals != 0:
            raise _unsupported("round" if decimals else "round_vml", d)
        return _make(d.copy(), input._device)
    r = _opmath(_round_np)(d, decimals)
    node = RoundBackward0 if decimals == 0 else RoundBackward1
    return result(r, input._device, node, (input,))


# -- clamp --------------------------------------------------------------------------------------

def _clamp_scalar_bw(node, g):
    x = node.saved[0]
    low, high = node.ctx
    if low is not None and high is not None:
        mask = (x >= low) & (x <= high)
    elif low is not None:
        mask = x >= low
    else:
        mask = x <= high
    return (_where_of(g)(mask, g, 0.0),)


def _clamp_tensor_bw(node, g):
    # PyTorch's clamp_backward_min_max: a bound gets the gradient where it is the result
    x, low, high = node.saved
    where = _where_of(g)
    g_low = g_high = None
    if low is not None and high is not None:
        g_x = where((x >= low) & (x <= high), g, 0.0)
        if isinstance(low, Tensor):
            g_low = where((x < low) & (low < high), g, 0.0)
        if isinstance(high, Tensor):
            g_high = where((x > high) | (high < low), g, 0.0)
    elif low is not None:
        g_x = where(x >= low, g, 0.0)
        g_low = where(x < low, g, 0.0)
    else:
        g_x = where(x <= high, g, 0.0)
        g_high = where(x > high, g, 0.0)
    return tuple(_fit(gr, *m) if m is not None and gr is not None else None
                 for gr, m in zip((g_x, g_low, g_high), node.ctx))


# (number bounds, tensor bounds) node classes of clamp, clamp_min, clamp_max
_CLAMP_NODES = {
    name: (make_node_class(f"{stem}Backward{n_scalar}", _clamp_scalar_bw),
           make_node_class(f"{stem}Backward{n_tensor}", _clamp_tensor_bw))
    for name, stem, n_scalar, n_tensor in (("clamp", "Clamp", 1, 0),
                                           ("clamp_min", "ClampMin", 0, 1),
                                           ("clamp_max", "ClampMax", 0, 1))
}


_NUMBER_TYPES = (int, float, type(None))


def _clamp(input, low, high, name):
    try:
        d = input._data
    except AttributeError:  # PyTorch's parser takes no other first operand
        _clamp_refused(name, input, low, high)
        raise
    if d.dtype.kind == "f" and type(low) in _NUMBER_TYPES and type(high) in _NUMBER_TYPES \
            and (low is not None or high is not None):
        for v in (low, high):
            if v.__class__ is int and not -0x8000000000000000 <= v <= 0xFFFFFFFFFFFFFFFF:
                check_int_scalar(v)
        # fast path: Python numbers are weak scalars for NumPy too, so the dtype is kept
        r = d if low is None else np.maximum(d, low)
        if high is not None:
            r = np.minimum(r, high)
        return result(r, input._device, _CLAMP_NODES[name][0], (input,), (input,),
                       (low, high))
    if low is None and high is None:
        if name != "clamp":  # clamp_min/clamp_max's bound takes no None
            _clamp_refused(name, input, low, high)
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if low is not None and high is not None \
            and isinstance(low, Tensor) is not isinstance(high, Tensor):
        _clamp_refused(name, input, low, high)  # a tensor and a number: one signature each
    operands = [v for v in (input, low, high) if v is not None]
    try:
        rt = _dtype.result_type(*operands).np
    except TypeError:  # a bound no signature takes (a string, a list): the parser's words
        _clamp_refused(name, input, low, high)
        raise
    if rt in _dtype.COMPLEX_NP:  # complex numbers have no order
        if d.dtype in _dtype.FLOATING_NP and (isinstance(low, complex)
                                              or isinstance(high, complex)):
            # PyTorch's kernel takes the bounds in the real tensor's opmath type first
            raise RuntimeError("value cannot be converted to type double without overflow")
        raise NotImplementedError("clamp is not supported for complex types")
    if rt in _dtype.SHELL_NP:  # PyTorch's kernel by the bounds given (a tensor bound alone:
        tensors = isinstance(low, Tensor) or isinstance(high, Tensor)  # maximum/minimum)
        _dtype.check_kernel(("clamp_tensor" if tensors else "clamp") if low is not None
                            and high is not None else ("maximum" if tensors else "clamp_min")
                            if low is not None else ("minimum" if tensors else "clamp_max"), rt)
    if rt.kind == "b":
        _check_bool_clamp(input, low, high)
    (tx, tlow, thigh), (x, lo, hi), dev = _prepare((input, low, high), rt)
    try:
        r = x if lo is None else np.maximum(x, lo)
        if hi is not None:
            r = np.minimum(r, hi)
    except ValueError:
        _broadcast_all(x, lo, hi)
        raise
    scalar_node, tensor_node = _CLAMP_NODES[name]
    if tlow is None and thigh is None:
        return result(r, dev, scalar_node, (tx,), (tx,), (low, high))
    saved = (tx, low if tlow is None else tlow, high if thigh is None else thigh)
    return result(r, dev, tensor_node, (tx, tlow, thigh), saved,
                   (_meta(tx), _meta(tlow), _meta(thigh)))


def _clamp_refused(name, input, low, high) -> None:
    """PyTorch's parser error for bounds no signature of ``name`` takes (the bounds as
    given: clamp's trailing None is its default)."""
    args = (input, low, high) if name == "clamp" else (input, high if low is None else low)
    if name == "clamp" and high is None:
        args = args[:2] if low is not None else args[:1]
    check_binds(name, args)


def _check_bool_clamp(input, low, high) -> None:
    """PyTorch clamps bools only against a single tensor bound (its clamp_min/clamp_max
    tensor kernels are maximum/minimum); other forms are NotImplementedError."""
    one_bound = high if low is None else low if high is None else None
    if isinstance(one_bound, Tensor):
        return
    _broadcast_all(input, low, high)  # PyTorch checks shapes before the dtype
    kernel = "clamp" + ("_max" if low is None else "_min" if high is None else "")
    if not isinstance(low, Tensor) and not isinstance(high, Tensor):
        kernel += "_scalar"
    raise _unsupported(kernel, input._data)


def _clamp_inplace(fn, name: str):
    """``Tensor.<name>``: with number bounds, PyTorch's structured kernel checks the result
    dtype against ``self``'s before anything else, in its own words (``... to the desired
    output type long int``); tensor bounds go through TensorIterator's check (``Long``)."""
    derived = make_inplace(fn, name)

    def inplace(self, *args, **kwargs):
        bounds = [b for b in (*args, *kwargs.values()) if b is not None]
        if bounds and not any(isinstance(b, Tensor) for b in bounds) \
                and isinstance(self, Tensor) and self._data.dtype.kind != "f":
            sd = self._data.dtype
            if sd not in _dtype.FLOATING_NP:  # (bfloat16's kind is "V")
                try:
                    rt = _dtype.result_type(self, *bounds).np
                except TypeError:
                    rt = sd  # the kernel's own error
                if _dtype_category(rt) > _dtype_category(sd):
                    raise RuntimeError(f"result type {scalar_type_name(rt)} can't be cast to "
                                       "the desired output type "
                                       f"{_dtype.options_type_name(sd)}")
        try:
            return derived(self, *args, **kwargs)
        except (TypeError, AttributeError) as err:  # the parser's, in the in-place's words
            if isinstance(err, TypeError) and getattr(err, "parser_call", None) is None:
                raise
            check_binds(name, (self, *args), kwargs)
            raise

    inplace.__name__ = inplace.__qualname__ = name
    for attr in ("_ember_aliases",):
        if hasattr(derived, attr):
            setattr(inplace, attr, getattr(derived, attr))
    return inplace


def clamp(input, min=None, max=None):  # PyTorch's names
    """Limit ``input`` to ``[min, max]`` (numbers or tensors; either may be None).
    Where ``min > max`` the result is ``max``."""
    return _clamp(input, min, max, "clamp")


clamp = register("clamp", out=True, inplace=_clamp_inplace(clamp, "clamp_"),
                 aliases=("clip",))(clamp)


def clamp_min(input, min):
    """``clamp(input, min=min)``."""
    return _clamp(input, min, None, "clamp_min")


clamp_min = register("clamp_min", out=True,
                     inplace=_clamp_inplace(clamp_min, "clamp_min_"))(clamp_min)


def clamp_max(input, max):
    """``clamp(input, max=max)``."""
    return _clamp(input, None, max, "clamp_max")


clamp_max = register("clamp_max", out=True,
                     inplace=_clamp_inplace(clamp_max, "clamp_max_"))(clamp_max)


# -- where, maximum / minimum -----------------------------------------------------------------

def _where_of(g):
    """``where`` for backward code: the kernel, or for a gradient batched by vmap the
    dispatching ``ember.where``."""
    return where if g.__class__ is Tensor else public("where")


def _where_bw(node, g):
    cond = node.saved[0]
    where = _where_of(g)
    meta_a, meta_b = node.ctx
    ga = _fit(where(cond, g, 0.0), *meta_a) if meta_a is not None else None
    gb = _fit(where(cond, 0.0, g), *meta_b) if meta_b is not None else None
    return ga, gb


WhereBackward0 = make_node_class("WhereBackward0", _where_bw)


@register("where", out=True, method=False)
def where(condition, input=None, other=None):
    """``input`` where ``condition`` holds, else ``other`` (tensors or numbers, promoted as
    PyTorch does). ``where(condition)`` is ``nonzero(condition, as_tuple=True)``."""
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    if input is None or other is None:
        raise TypeError("where() takes a condition and both of input and other")
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        cond, a, b = condition._data, input._data, other._data
        dev = condition._device
        if cond.dtype.kind == "b" and a.dtype is b.dtype and input._device is dev \
                and other._device is dev:
            try:  # inline, not a helper: many backwards mask their gradients with where
                r = xp_of(condition).where(cond, a, b)
            except ValueError:  # PyTorch broadcasts the condition with input, then other
                _broadcast_all(cond, a, b)
                raise
            if not (cond.flags.c_contiguous and a.flags.c_contiguous):
                r = _mf.iter_layout(r, (cond, a, b))
            return result(r, dev, WhereBackward0, (input, other), (condition,),
                           (_meta(input), _meta(other)))
    dev = _common_device((condition, input, other))
    if condition._device is not dev:
        condition = cast_to(condition, dev, None, False)
    cond = condition._data
    if cond.dtype.kind != "b":
        if cond.dtype != np.uint8:
            raise RuntimeError("where expected condition to be a boolean tensor, but got a "
                               f"tensor with dtype {scalar_type_name(cond.dtype)}")
        warnings.warn("where received a uint8 condition tensor. This behavior is deprecated "
                      "and will be removed in a future version of PyTorch. Use a boolean "
                      "condition instead.", UserWarning, stacklevel=user_stacklevel())
        cond = cond.astype(np.bool_)
        condition = _make(cond, dev)
    rt = _dtype.result_type(input, other).np
    (ta, tb), (a, b), dev = _prepare((input, other), rt, dev)
    try:
        r = xp_of(condition).where(cond, a, b)
    except ValueError:
        _broadcast_all(cond, a, b)
        raise
    r = _mf.iter_layout(r, [x for x in (cond, a, b) if hasattr(x, "flags")])
    return result(r, dev, WhereBackward0, (ta, tb), (condition,), (_meta(ta), _meta(tb)))


def _broadcast_all(*operands) -> tuple:
    """The broadcast shape of ``operands`` (arrays, scalars or None), folded left to right
    as PyTorch does, with its error for the first pair that does not broadcast."""
    shape = ()
    for x in operands:
        shape = broadcast_shape(shape, getattr(x, "shape", ()))
    return shape


def _where_method(self, condition, other):
    """``Tensor.where(condition, other)``: ``where(condition, self, other)``."""
    return where(condition, self, other)


register_method("where", _where_method)


def _maximum_bw(node, g):
    where = _where_of(g)
    # ties split the gradient evenly; NaN comparisons fall through to ``g`` (PyTorch)
    a, b = node.saved
    even = where(a == b, g * 0.5, g)
    return where(a < b, 0.0, even), where(a > b, 0.0, even)


def _minimum_bw(node, g):
    where = _where_of(g)
    a, b = node.saved
    even = where(a == b, g * 0.5, g)
    return where(a > b, 0.0, even), where(a < b, 0.0, even)


def _fmax_bw(node, g):
    where = _where_of(g)
    a, b = node.saved
    to_a = (a >= b) | b.isnan()
    return where(to_a, g, 0.0), where(to_a, 0.0, g)


def _fmin_bw(node, g):
    where = _where_of(g)
    a, b = node.saved
    to_a = (a <= b) | b.isnan()
    return where(to_a, g, 0.0), where(to_a, 0.0, g)


def _no_complex(name, fwd):
    """``fwd`` refusing complex operands, which have no order (PyTorch's error)."""

    def run(a, b):
        if (a if hasattr(a, "dtype") else b).dtype in _dtype.COMPLEX_NP:
            raise RuntimeError(f"{name} not implemented for complex tensors.")
        return fwd(a, b)

    return run


maximum = _binary("maximum", _no_complex("maximum", np.maximum), _maximum_bw, saves="ab",
                  tensors_only=True, inplace=False, doc="Elementwise maximum (NaN propagates).")
minimum = _binary("minimum", _no_complex("minimum", np.minimum), _minimum_bw, saves="ab",
                  tensors_only=True, inplace=False, doc="Elementwise minimum (NaN propagates).")
fmax = _binary("fmax", _no_complex("fmax", np.fmax), _fmax_bw, saves="ab", tensors_only=True,
               inplace=False, doc="Elementwise maximum ignoring NaN.")
fmin = _binary("fmin", _no_complex("fmin", np.fmin), _fmin_bw, saves="ab", tensors_only=True,
               inplace=False, doc="Elementwise minimum ignoring NaN.")


# -- closeness and finiteness -----------------------------------------------------------------

@register("isclose", differentiable=False)
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``|input - other| <= atol + rtol * |other|`` elementwise (same dtypes required)."""
    for pos, (arg, value) in enumerate((("input", input), ("other", other)), 1):
        if not isinstance(value, Tensor):
            raise TypeError(f"isclose(): argument '{arg}' (position {pos}) must be Tensor, not "
                            f"{type(value).__name__}")
    a, b = input._data, other._data
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{scalar_type_name(a.dtype)} did not match {scalar_type_name(b.dtype)}")
    for label, value in (("rtol", rtol), ("atol", atol)):
        if value < 0:
            raise RuntimeError(f"{label} must be greater than or equal to zero, but got {value}")
    dev = check_same_device(input, other)
    if a.shape != b.shape:
        _broadcast_all(a, b)  # PyTorch's RuntimeError for shapes that do not broadcast
    close = a == b
    if equal_nan and a.dtype in _dtype.INEXACT_NP:
        close = close | (np.isnan(a) & np.isnan(b))
    if rtol or atol:
        if a.dtype not in _dtype.INEXACT_NP:
            ft = _dtype.get_default_dtype().np
            a, b = a.astype(ft), b.astype(ft)
        # complex32 computes in its own precision, rtol rounded to it (as PyTorch's kernel)
        rt = rtol if a.dtype is not _dtype.CHALF_NP else a.dtype.type(rtol)
        with np.errstate(all="ignore"):
            allowed = atol + np.abs(rt * b)
            actual = np.abs(a - b)
            close = close | (np.isfinite(actual) & (actual <= allowed))
    return _make(close, dev)


@register("allclose", differentiable=False)
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """True if ``isclose`` holds everywhere (a Python bool)."""
    return bool(isclose(input, other, rtol, atol, equal_nan)._data.all())


@register("equal", differentiable=False)
def equal(input, other) -> bool:
    """True if both tensors have the same shape and the same values (a Python bool)."""
    try:
        check_same_device(input, other)
        a, b = input._data, other._data
    except AttributeError:  # not a tensor: PyTorch's parser refuses it
        check_binds("equal", (input, other))
        raise
    if (a.dtype is _dtype.CHALF_NP or b.dtype is _dtype.CHALF_NP) and a.shape == b.shape:
        # PyTorch compares a tensor with itself by its NaN check alone
        raise _dtype.no_chalf_kernel("equal_notnan_cpu" if input is other else "equal_cpu")
    return a.shape == b.shape and bool((a == b).all())


def _isposinf_np(a):
    return np.isinf(a) & (a > 0)


def _isneginf_np(a):
    return np.isinf(a) & (a < 0)


def _isreal_np(a):
    if a.dtype in _dtype.COMPLEX_NP:  # a complex element is real when its imaginary part is 0
        return _dtype.imag_part(a) == 0
    return xp_of(a).ones(a.shape, dtype=np.bool_)


isnan = _unary("isnan", np.isnan, to_float=False, inplace=False, out=False,
               doc="True where NaN.")
isinf = _unary("isinf", np.isinf, to_float=False, inplace=False, out=False,
               doc="True where +-inf.")
isfinite = _unary("isfinite", np.isfinite, to_float=False, inplace=False, out=False,
                  doc="True where neither NaN nor infinite.")
isposinf = _unary("isposinf", _isposinf_np, to_float=False, inplace=False,
                  complex_error=lambda: RuntimeError("isposinf does not support complex inputs."),
                  doc="True where +inf.")
isneginf = _unary("isneginf", _isneginf_np, to_float=False, inplace=False,
                  complex_error=lambda: RuntimeError("isneginf does not support complex inputs."),
                  doc="True where -inf.")
isreal = _unary("isreal", _isreal_np, to_float=False, inplace=False, out=False,
                doc="True where the element is real: everywhere for real dtypes, where the "
                    "imaginary part is 0 for complex ones.")


# -- activations' kernels -----------------------------------------------------------------------

def _threshold_backward_bw(node, gg):
    # d/d(grad) of mask * grad is the same mask; the mask itself is flat almost everywhere
    return threshold_backward(gg, node.saved[0], node.ctx), None


ThresholdBackwardBackward0 = make_node_class("ThresholdBackwardBackward0", _threshold_backward_bw)


@register("threshold_backward", method=False)
def threshold_backward(grad_output, input, threshold):
    """``grad_output`` where not ``input <= threshold``, else 0: the backward kernel of relu
    and threshold, itself differentiable (one fused NumPy expression instead of two ops). A
    NaN input passes its gradient, and a masked gradient is 0 even where it is infinite or
    NaN, as PyTorch's ``x <= t ? 0 : g``."""
    if grad_output.__class__ is not Tensor:  # batched by vmap: through the dispatching product
        return grad_output * _make(~(input._data <= threshold), input._device)
    gd = grad_output._data
    xd = input._data
    fn = _native.kernel("ember_threshold_backward_f32") if gd.__class__ is np.ndarray and \
        xd.__class__ is np.ndarray and gd.dtype == xd.dtype == np.float32 and \
        gd.shape == xd.shape and gd.flags.c_contiguous and xd.flags.c_contiguous and \
        isinstance(threshold, (int, float)) else None
    if fn is not None:  # one pass, in the threads (ReLU's on 32x16x32x32: 240 -> 50 us)
        r = np.empty_like(gd)
        _native.chunks(fn, gd.size, (_native.address(gd), _native.address(xd),
                                     _native.address(r)), threshold)
    else:  # a select, not a product: a masked infinite or NaN gradient gives 0, as PyTorch's
        r = xp_of(gd).where(xd <= threshold, 0, gd)
        if r.dtype is not gd.dtype:
            r = r.astype(gd.dtype)
    out = _make(r, grad_output._device)
    if grad_output.requires_grad and GRAD.enabled:
        record(ThresholdBackwardBackward0, out, (grad_output, None), (input,), threshold)
    return out


def _relu_bw(node, g):
    return (threshold_backward(g, node.output(False), 0),)


def _relu_np(a):
    if a.dtype.kind in "bc":
        if a.dtype.kind == "c":
            raise NotImplementedError("clamp is not supported for complex types")
        raise RuntimeError("Boolean inputs not supported for relu")
    if a.size >= 4096 and type(a) is np.ndarray and a.dtype.kind == "f" and \
            a.flags.c_contiguous:
        # NumPy's maximum against a scalar runs a loop that does not vectorize: against a
        # zero row broadcast over (size / r, r) it is 2-3x faster (32x16x32x32 float32:
        # 180 us -> 62 us), same values, NaN included
        r = _ZERO_ROW
        while r and a.size % r:
            r >>= 1
        if r >= 256:
            return np.maximum(a.reshape(-1, r), _zero_row(a.dtype, r)).reshape(a.shape)
    return np.maximum(a, 0)


_ZERO_ROW = 8192
_ZERO_ROWS: dict = {}


def _zero_row(dtype, r: int):
    row = _ZERO_ROWS.get(dtype)
    if row is None:
        row = _ZERO_ROWS[dtype] = np.zeros(_ZERO_ROW, dtype=dtype)
        row.flags.writeable = False
    return row[:r]


relu = _unary("relu", _relu_np, _relu_bw, to_float=False, saves="o", out=False,
              doc="``max(input, 0)``.")


# -- comparisons --------------------------------------------------------------------------------

def _comparison(name, fwd, aliases=()):
    return _binary(name, fwd, kind="bool", aliases=aliases, doc=f"Elementwise ``{name}`` "
                   "comparison (bool result, PyTorch's promotion).")


def _ordering(kernel, fwd):
    """An order comparison's forward: complex operands (no order) get PyTorch's error."""

    def run(a, b):
        arr = a if hasattr(a, "dtype") else b
        if arr.dtype in _dtype.COMPLEX_NP:
            _broadcast_all(a, b)  # PyTorch checks shapes before the dtype
            raise _unsupported(kernel, arr)
        return fwd(a, b)

    return run


gt = _comparison("gt", _ordering("gt", np.greater), ("greater",))
lt = _comparison("lt", _ordering("lt", np.less), ("less",))
ge = _comparison("ge", _ordering("ge", np.greater_equal), ("greater_equal",))
le = _comparison("le", _ordering("le", np.less_equal), ("less_equal",))
eq = _comparison("eq", np.equal)
ne = _comparison("ne", np.not_equal, ("not_equal",))


# -- logical and bitwise ----------------------------------------------------------------------

def _integral(kernel, fwd, allow_bool=True):
    """A bitwise forward: floats (and bools, unless allowed) are PyTorch's NotImplementedError."""

    def run(a, b):
        arr = a if hasattr(a, "dtype") else b
        k = arr.dtype.kind  # floats, complex (and bfloat16, kind "V") have no bitwise kernel
        if k not in "iu" and (k != "b" or not allow_bool):
            _broadcast_all(a, b)  # PyTorch checks shapes before the dtype
            raise _unsupported(kernel, arr)
        return fwd(a, b)

    return run


def _bitwise_not_np(a):
    if a.dtype.kind not in "iub":
        raise _unsupported("bitwise_not", a)
    return np.logical_not(a) if a.dtype.kind == "b" else np.invert(a)


def _no_chalf(kernel, fwd):
    """``fwd`` refusing complex32 arrays with PyTorch's error (it has no such kernel; the
    ``ml_dtypes`` loops NumPy would run look at the real part only)."""

    def run(*arrays):
        for a in arrays:
            if getattr(a, "dtype", None) is _dtype.CHALF_NP:
                raise _dtype.no_chalf_kernel(kernel)
        return fwd(*arrays)

    run.__name__ = getattr(fwd, "__name__", kernel)
    return run


logical_and = _binary("logical_and", _no_chalf("logical_and_cpu", np.logical_and), kind="bool",
                      tensors_only=True, doc="Elementwise logical AND (nonzero is True).")
logical_or = _binary("logical_or", _no_chalf("logical_or_cpu", np.logical_or), kind="bool",
                     tensors_only=True, doc="Elementwise logical OR (nonzero is True).")
logical_xor = _binary("logical_xor", _no_chalf("logical_xor_cpu", np.logical_xor), kind="bool",
                      tensors_only=True, doc="Elementwise logical XOR (nonzero is True).")
logical_not = _unary("logical_not", _no_chalf("logical_not_cpu", np.logical_not),
                     to_float=False, doc="Elementwise logical NOT (bool result).")
bitwise_and = _binary("bitwise_and", _integral("bitwise_and", np.bitwise_and),
                      doc="Bitwise AND of integers (logical AND of bools).")
bitwise_or = _binary("bitwise_or", _integral("bitwise_or", np.bitwise_or),
                     doc="Bitwise OR of integers (logical OR of bools).")
bitwise_xor = _binary("bitwise_xor", _integral("bitwise_xor", np.bitwise_xor),
                      doc="Bitwise XOR of integers (logical XOR of bools).")
bitwise_not = _unary("bitwise_not", _bitwise_not_np, to_float=False,
                     doc="Bitwise NOT of integers (logical NOT of bools).")
bitwise_left_shift = _binary("bitwise_left_shift",
                             _integral("lshift", np.left_shift, allow_bool=False),
                             doc="``input << other`` (0 once the shift reaches the width).")
bitwise_right_shift = _binary("bitwise_right_shift",
                              _integral("rshift", np.right_shift, allow_bool=False),
                              doc="Arithmetic ``input >> other``.")


def _invert(self):
    """``~self``: logical NOT of bools, bitwise NOT of integers."""
    if self._data.dtype in _dtype.INEXACT_NP:  # floating and complex
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return bitwise_not(self)


def _operator(fn, name: str):
    """Python's operator ``name`` on Tensor: ``fn(self, other)``, or ``NotImplemented`` for an
    operand that no tensor op takes (None, a string, a list, an object of the user's), as
    PyTorch's operators (its ``TypeError_to_NotImplemented_``): an object with its own
    reflected operator gets to answer (``x + obj`` calls ``obj.__radd__``; ``x == None`` is
    False by Python's identity fallback), and anything else gets Python's own "unsupported
    operand type(s)" error. A binary op's own ``_dunder`` form does this without a wrapper
    call; a ``try`` costs nothing until it catches."""
    dunder = getattr(fn, "_dunder", None)
    if dunder is not None:
        return dunder

    @functools.wraps(fn)
    def operator(self, other):
        try:
            return fn(self, other)
        except TypeError:
            if isinstance(other, np.ndarray):
                return _ndarray_operand(self)
            if isinstance(other, _OPERANDS):
                raise
            return NotImplemented

    operator.__name__ = operator.__qualname__ = name
    return operator


def _reflected(op, name):
    """``other <op> self`` for a Python number on the left."""

    def reflected(self, other):
        return op(other, self)

    return _operator(reflected, name)


def register_operator(dunder: str, op, reflected=None, inplace=None) -> None:
    """Python's operator ``__<dunder>__`` on Tensor as ``op``; with ``reflected``,
    ``__r<dunder>__`` as ``reflected(other, self)``; with ``inplace``, ``__i<dunder>__``
    (each ``NotImplemented`` for an operand no tensor op takes: ``_operator``)."""
    register_method(f"__{dunder}__", _operator(op, f"__{dunder}__"))
    if reflected is not None:
        register_method(f"__r{dunder}__", _reflected(reflected, f"__r{dunder}__"))
    if inplace is not None:
        register_method(f"__i{dunder}__", _operator(inplace, f"__i{dunder}__"))


for _dunder, _op in (("and", bitwise_and), ("or", bitwise_or), ("xor", bitwise_xor),
                     ("lshift", bitwise_left_shift), ("rshift", bitwise_right_shift)):
    register_operator(_dunder, _op, _op, make_inplace(_op, _op.__name__ + "_"))
for _dunder, _op in (("gt", gt), ("lt", lt), ("ge", ge), ("le", le), ("eq", eq), ("ne", ne)):
    register_operator(_dunder, _op)
register_method("__invert__", _invert)
register_method("__neg__", neg)
register_method("__abs__", abs)
register_method("__pos__", positive)


# -- clone, copy_, fill_, zero_ ---------------------------------------------------------------

def _clone_bw(node, g):
    return (g,)


CloneBackward0 = make_node_class("CloneBackward0", _clone_bw)


def copy_as(input, order=None):
    """A copy of ``input`` laid out in ``order`` (a ``_memory_format`` order; None:
    C-contiguous), recorded as ``CloneBackward0``: ``clone``, ``contiguous`` and the copies
    of the shape ops. Recorded inline, not by ``result``: ``contiguous`` runs every step."""
    out = _make(_mf.copy_as(input._data, order), input._device)
    if input.requires_grad and GRAD.enabled:
        record(CloneBackward0, out, (input,), ())
    return out


@register("clone")
def clone(input, *, memory_format=_mf.preserve_format):
    """A copy of ``input`` with its own memory, laid out as ``memory_format`` says (the
    default keeps ``input``'s layout, channels-last included)."""
    return copy_as(input, _mf.like_order(input._data, memory_format, "clone"))


def _copy_bw(node, g):
    return _zeros(g), g


CopyBackwards = make_node_class("CopyBackwards", _copy_bw)


def _copy_value(self, src, non_blocking=False):
    """``src`` as ``self``'s new value: ``self``'s dtype, device and shape (cast, moved and
    broadcast with a graph, so the gradient returns to ``src``'s dtype, device and shape)."""
    if not isinstance(src, Tensor):
        src = _make(xp_of(self).asarray(src), self._device)
    shape = self._data.shape
    if src._data.shape != shape:
        full = broadcast_shape(shape, src._data.shape)
        if full != shape:
            raise RuntimeError(f"output with shape [{shape_str(shape)}] doesn't match "
                               f"the broadcast shape [{shape_str(full)}]")
    value = cast_to(src, self._device, self.dtype, False)
    if value._data.shape != shape:
        value = value.expand(shape)
    return result(value._data, self._device, CopyBackwards, (self, value))


copy_ = make_inplace(_copy_value, "copy_")
copy_.__doc__ = ("Copy ``src`` into ``self`` in place (broadcast, cast to ``self``'s dtype, "
                 "moved across devices); the gradient flows to ``src``.")
register_method("copy_", copy_)


def _fill_bw(node, g):
    grads = (_zeros(g),)
    if len(node.next_functions) == 2:
        grads += (g.sum(),)
    return grads


FillBackward2 = make_node_class("FillBackward2", _fill_bw)
FillBackward3 = make_node_class("FillBackward3", _fill_bw)
ZeroBackward0 = make_node_class("ZeroBackward0", _fill_bw)


def _filled(self, value, node_cls=None):
    """The tensor ``self`` becomes under ``fill_(value)``, recorded for autograd."""
    xp = xp_of(self)
    shape = self._data.shape
    if isinstance(value, Tensor):
        v = cast_to(value, self._device, self.dtype, False)
        return result(xp.broadcast_to(v._data, shape), self._device,
                       node_cls or FillBackward3, (self, v))
    data = xp.broadcast_to(xp.asarray(_scalar_as(value, self._data.dtype)), shape)
    return result(data, self._device, node_cls or FillBackward2, (self,))


_fill_with_grad = make_inplace(_filled, "fill_")
_zero_with_grad = make_inplace(lambda self: _filled(self, 0, ZeroBackward0), "zero_")


def fill_(self, value):
    """Fill ``self`` in place with ``value`` (a number or a 0-dim tensor)."""
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError("fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value._data.ndim} dimensions.")
        if GRAD.enabled and (self.requires_grad or value.requires_grad):
            return _fill_with_grad(self, value)
        if shares_elements(self._data):  # PyTorch's Tensor overload checks the overlap
            raise RuntimeError(SHARED_WRITE)
        value = value.item()
    elif not isinstance(value, (numbers.Number, np.generic)):
        raise _fill_type_error(value)
    elif GRAD.enabled and self.requires_grad:
        return _fill_with_grad(self, value)
    return _fill_array(self, _scalar_as(value, self._data.dtype), "fill_")


def _fill_type_error(value) -> TypeError:
    """PyTorch's error for a ``fill_`` value that is neither a tensor nor a number."""
    got = type(value).__name__
    if isinstance(value, (list, tuple)):
        names = list(dict.fromkeys(type(v).__name__ for v in value))
        got = f"{got} of [{', '.join(names)}]"
    bad = f"(!{got}!)"
    return TypeError(f"fill_() received an invalid combination of arguments - got "
                     f"({type(value).__name__}), but expected one of:\n"
                     f" * (Tensor value)\n      didn't match because some of the arguments have "
                     f"invalid types: {bad}\n"
                     f" * (Number value)\n      didn't match because some of the arguments have "
                     f"invalid types: {bad}\n")


def zero_(self):
    """Fill ``self`` with zeros in place."""
    if GRAD.enabled and self.requires_grad:
        return _zero_with_grad(self)
    return _fill_array(self, 0, "zero_")


def _fill_array(self, scalar, name):
    data = self._data
    if not writable(data):  # expand's view: PyTorch fills the memory its elements share
        data = shared_alias(data)
        if data is None:
            raise RuntimeError(SHARED_WRITE)
    data.fill(scalar)
    self._bump_version()
    return self


register_method("fill_", fill_)
register_method("zero_", zero_)


# -- angle conversion, logaddexp, heaviside, gcd/lcm, ldexp, nextafter, frexp ----------------

_DEG2RAD = math.pi / 180.0
_RAD2DEG = 180.0 / math.pi


def _scaled(factor):
    """A forward multiplying by the constant ``factor`` (computed in opmath, as PyTorch)."""
    return _opmath(lambda a: a * a.dtype.type(factor))


def _scaled_bw(factor):
    def bw(node, g):
        return (g * factor,)

    return bw


deg2rad = _unary("deg2rad", _scaled(_DEG2RAD), _scaled_bw(_DEG2RAD),
                 node_name="Deg2RadBackward0",  # PyTorch's name
                 doc="Degrees to radians (integers and bools give floats).")
rad2deg = _unary("rad2deg", _scaled(_RAD2DEG), _scaled_bw(_RAD2DEG),
                 node_name="Rad2DegBackward0",
                 doc="Radians to degrees (integers and bools give floats).")


def _floats_only(kernel, fwd, opmath=True):
    """A binary forward for floating dtypes only (PyTorch's NotImplementedError otherwise);
    ``opmath`` computes float16 in float32."""
    run_fwd = _opmath(fwd) if opmath else fwd

    def run(a, b):
        if a.dtype not in _dtype.FLOATING_NP:
            _broadcast_all(a, b)
            raise _unsupported(kernel, a)
        return run_fwd(a, b)

    return run


def _integers_only(kernel, fwd):
    """A binary forward for integer dtypes only (no floats, no bools)."""
    return _integral(kernel, fwd, allow_bool=False)


def _logaddexp_bw(node, g):
    a, b = node.saved
    return g * (a - b).sigmoid(), g * (b - a).sigmoid()


def _logaddexp2_bw(node, g):
    a, b = node.saved
    return g / (1 + ((b - a) * _LN2).exp()), g / (1 + ((a - b) * _LN2).exp())


logaddexp = _binary("logaddexp", _floats_only("logaddexp", np.logaddexp), _logaddexp_bw,
                    saves="ab", tensors_only=True, inplace=False,
                    doc="``log(exp(input) + exp(other))`` without overflow (floats only).")
logaddexp2 = _binary("logaddexp2", _floats_only("logaddexp2", np.logaddexp2), _logaddexp2_bw,
                     saves="ab", tensors_only=True, inplace=False,
                     doc="``log2(2 ** input + 2 ** other)`` without overflow (floats only).")
gcd = _binary("gcd", _integers_only("gcd", np.gcd), tensors_only=True,
              doc="Greatest common divisor (integers only; ``gcd(0, 0) == 0``).")
def _lcm_np(a, b):
    """PyTorch's ``abs(a / gcd(a, b) * b)`` in C++'s arithmetic: types narrower than int are
    computed in int, then wrapped; int32 and int64 wrap before the abs (NumPy's lcm takes the
    abs first, so an overflowing lcm differs in sign)."""
    xp = np if a.__class__ is np.ndarray else xp_of(a)
    dt = a.dtype
    if dt.itemsize < 4:
        a, b = a.astype(np.int32), b.astype(np.int32)
    g = xp.gcd(a, b)
    with np.errstate(over="ignore"):
        r = (a // xp.where(g == 0, 1, g)) * b
        return xp.abs(xp.where(g == 0, 0, r)).astype(dt)


lcm = _binary("lcm", _integers_only("lcm", _lcm_np), tensors_only=True,
              doc="Least common multiple, non-negative (integers only).")
nextafter = _binary("nextafter", _floats_only("nextafter", np.nextafter, opmath=False),
                    tensors_only=True,
                    doc="The next representable value after ``input`` towards ``other``.")


def _ldexp_np(a, b):
    a, b = _same_dtype_operands(a, b)
    return a * np.exp2(b)


def _ldexp_bw(node, g):
    a, b = node.saved
    scale = (b * _LN2).exp()
    return g * scale, g * a * scale * _LN2


ldexp = _binary("ldexp", _ldexp_np, _ldexp_bw, kind="float", saves="ab", tensors_only=True,
                doc="``input * 2 ** other`` (integers give floats).")


def _heaviside_check(input, values):
    for pos, (arg, value) in enumerate((("input", input), ("values", values)), 1):
        if not isinstance(value, Tensor):
            raise TypeError(f"heaviside(): argument '{arg}' (position {pos}) must be Tensor, "
                            f"not {type(value).__name__}")
    if input._data.dtype is not values._data.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")


def _heaviside_np(a, b):
    # PyTorch's formula: ``values`` where input == 0, else (input > 0); NaN gives 0
    if a.dtype.kind == "c":
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    xp = xp_of(a)
    return xp.where(a == 0, b, (a > 0).astype(a.dtype))


_heaviside = binary_op("heaviside", _heaviside_np)


@register("heaviside", out=True, inplace=True, differentiable=False)
def heaviside(input, values):
    """The Heaviside step: 0 where ``input < 0``, 1 where ``input > 0``, ``values`` where it
    is 0 (both tensors of one dtype)."""
    _heaviside_check(input, values)
    return _heaviside(input, values)


FrexpBackward0 = make_node_class("FrexpBackward0", lambda node, g: (g / node.ctx,))


@register("frexp")
def frexp(input):
    """``(mantissa, exponent)`` with ``input == mantissa * 2 ** exponent`` and
    ``0.5 <= |mantissa| < 1`` (floats only; the exponent is int32)."""
    d = input._data
    if d.dtype not in _dtype.FLOATING_NP:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    mantissa, exponent = xp_of(input).frexp(d)
    exponent = exponent.astype(np.int32, copy=False)
    dev = input._device
    m = _make(mantissa, dev)
    if GRAD.enabled and input.requires_grad:
        scale = _make(xp_of(input).ldexp(xp_of(input).ones_like(d), exponent), dev)
        m = record(FrexpBackward0, m, (input,), (), scale)
    return _return_types.frexp(m, _make(exponent, dev))
