"""Arithmetic: add, sub, mul, div (rounding modes), floor_divide, remainder, fmod, pow, and
the Python operators (including reflected and in-place forms)."""

from __future__ import annotations

import math
import numbers

import numpy as np

from .. import _dtype, _native
from .. import _memory_format as _mf
from .._device import xp_of
from .._tensor import Tensor, _make
from ..autograd.graph import make_node_class, result
from ._deprecated import NO_ARG, alpha_first, beta_first, hide, value_first
from ._factories import _F32, _F64, _fit, binary_op
from ._inplace import fast_floats, make_inplace, write_out
from ._promotion import broadcast_shape
from ._signatures import check_binds
from .pointwise import _broadcast_all, _meta, _operator, _prepare, _scalar_as, register_operator
from .registry import register, register_method

__all__ = ["add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod",
           "pow", "float_power", "rsub", "addcmul", "addcdiv", "addr"]


def _add_bw(node, g):
    return g, g


def _sub_bw(node, g):
    return g, -g


def _mul_bw(node, g):
    a, b = node.saved
    return (g * b if node.needs_grad(0) else None), (g * a if node.needs_grad(1) else None)


def _div_bw(node, g):
    a, b = node.saved
    gb = -g * a / (b * b) if node.needs_grad(1) else None
    return (g / b if node.needs_grad(0) else None), gb


def _pow_bw(node, g):
    a, b = node.saved
    ga = gb = None
    if isinstance(a, Tensor) and a.requires_grad:
        if isinstance(b, Tensor):
            ga = (g * b * a ** (b - 1)).masked_fill(b == 0, 0.0)
        elif b == 0:
            ga = g * 0
        else:
            ga = g * b * a ** (b - 1)
    if isinstance(b, Tensor) and b.requires_grad:
        if isinstance(a, Tensor):
            # d/db a**b = a**b * log(a), defined as 0 where a == 0 and b >= 0 (PyTorch)
            out = a ** b
            ga_log = out * a.log()
            gb = g * ga_log.masked_fill((a == 0) & (b >= 0), 0.0)
        else:
            gb = g * (a ** b) * float(np.log(a)) if a > 0 else \
                (g * (a ** b) * float(np.log(a))).masked_fill(b >= 0, 0.0)
    return ga, gb


def _zero_bw(node, g):
    return g * 0, None if not isinstance(node.saved[1], Tensor) else g * 0


def _modulo_bw(rounding: str):
    """The backward of ``a - rounding(a / b) * b`` (``remainder``: floor, ``fmod``: trunc)."""

    def backward(node, g):
        a, b = node.saved
        if a is not None and not isinstance(a, Tensor):  # remainder(Number self, Tensor other):
            raise RuntimeError("derivative for aten::remainder is not implemented")  # PyTorch's
        gb = None                                         # overload has no formula
        if isinstance(b, Tensor) and b.requires_grad:
            gb = -g * getattr(a / b, rounding)()
        return g, gb

    return backward


_remainder_bw = _modulo_bw("floor")
_fmod_bw = _modulo_bw("trunc")


def _check_integer_division(a, b, kernel: str) -> None:
    """PyTorch's errors for an integer division (``//``, ``%``, ``fmod``, ``div`` with a
    rounding mode) of ``a`` by ``b``, arrays or scalars already of the result dtype.

    Bool has no such kernel (``NotImplementedError``); a zero divisor raises PyTorch's
    ``RuntimeError: ZeroDivisionError``, unless the result is empty (no element divides by
    it) or the shapes do not broadcast (that error comes first, as in PyTorch).
    """
    b_is_array = hasattr(b, "dtype")
    kind = (b if b_is_array else a).dtype.kind
    if kind == "b" or kind == "c":  # no bool/complex kernel in PyTorch
        _result_shape(a, b)
        raise _dtype.no_kernel(kernel, (b if b_is_array else a).dtype)
    if b_is_array:
        xp = np if b.__class__ is np.ndarray else xp_of(b)
        if xp.count_nonzero(b) == b.size:  # 3x cheaper than b.all()
            return
    elif b != 0:
        return
    if math.prod(_result_shape(a, b)):
        raise RuntimeError("ZeroDivisionError")


def _result_shape(a, b) -> tuple:
    """The broadcast shape of two operands (arrays or scalars), PyTorch's error if none."""
    return broadcast_shape(getattr(a, "shape", ()), getattr(b, "shape", ()))


def _integer_checked(fwd, kernel: str):
    """``fwd(a, b)`` guarded by ``_check_integer_division`` for non-float results; a float
    division (inf/nan by zero, as in PyTorch) pays one dtype read."""

    def checked(a, b):
        try:
            kind = a.dtype.kind
        except AttributeError:  # a Python scalar dividend: ``7 % t``
            kind = b.dtype.kind
        if kind != "f":
            _check_integer_division(a, b, kernel)
        return fwd(a, b)

    checked.__name__ = checked.__qualname__ = getattr(fwd, "__name__", kernel)
    return checked


def _trunc_divide_int(a, b):
    """Integer division rounded toward zero, exactly (no round trip through floats)."""
    q = np.floor_divide(a, b)
    return q + ((np.remainder(a, b) != 0) & ((a < 0) != (b < 0)))


_np_floor_divide = _integer_checked(np.floor_divide, "div_floor_cpu")
_np_trunc_divide = _integer_checked(_trunc_divide_int, "div_trunc_cpu")
def _remainder(a, b):
    """PyTorch's remainder: ``fmod(a, b)``, plus ``b`` where that is non-zero and of the
    other sign. NumPy's differs only in a zero result, which takes the divisor's sign there
    and the dividend's here (``-2. % 2`` is ``-0.``, ``3. % -1.5`` is ``0.``)."""
    r = np.remainder(a, b)
    if r.dtype.kind == "f":
        xp = xp_of(r)
        zero = r == 0
        if zero.any():
            r = xp.where(zero, xp.copysign(r, a), r)
    return r


_remainder_np = _integer_checked(_remainder, "remainder_cpu")
_fmod_np = _integer_checked(np.fmod, "fmod_cpu")


def _pow_np(a, b):
    """``a ** b``; integer and bool powers follow PyTorch (``_integer_pow``)."""
    try:
        dt = a.dtype
    except AttributeError:  # a Python scalar base: ``2 ** t``
        dt = b.dtype
    if dt.kind == "f":
        return pow_scalar_out(a, b) if b.__class__ in (int, float) else np.power(a, b)
    if dt is _dtype.CHALF_NP:  # PyTorch has no complex32 kernel
        raise _dtype.no_chalf_kernel("pow")
    return _integer_pow(a, b)


def _cube(x, out=None):
    if out is None:  # (a 0-d product is a NumPy scalar: no writing into it)
        return x * x * x
    np.multiply(x, x, out=out)
    return np.multiply(out, x, out=out)


def _rsqrt(x, out=None):
    if out is None:
        return np.reciprocal(np.sqrt(x))
    np.sqrt(x, out=out)
    return np.reciprocal(out, out=out)


def _inverse_square(x, out=None):
    if out is None:
        return np.reciprocal(x * x)
    np.multiply(x, x, out=out)
    return np.reciprocal(out, out=out)


# PyTorch's CPU kernel for a float tensor to these scalar powers (``pow_tensor_scalar``): the
# same products and roots, so the values match it to the bit, and x ** 3 is a product, not
# NumPy's per-element pow() (100x slower: GELU's tanh approximation computes x ** 3)
_POW_SCALAR = {2: np.square, 3: _cube, 0.5: np.sqrt, -0.5: _rsqrt, -1: np.reciprocal,
               -2: _inverse_square}


def pow_scalar_out(x, exponent, out=None):
    """A float array ``x`` to a Python number's power, as eager ``pow`` computes it (a CPU
    float32/float64 array takes PyTorch's products for 2, 3, -1, -2 and roots for 0.5, -0.5;
    anything else ``numpy.power``); ``ember.compile``'s lowering calls it too."""
    if type(x) is np.ndarray and (x.dtype is _F32 or x.dtype is _F64):
        fast = _POW_SCALAR.get(exponent)
        if fast is not None:
            return fast(x, out=out)
    return np.power(x, exponent, out=out)


def _integer_pow(a, b):
    """PyTorch's integer power: a tensor of negative exponents gives ``1 ** b == 1``,
    ``(-1) ** b == ±1`` and 0 for other bases (``pow`` rejects a negative Python int before
    it gets here); a bool base takes only a Python bool exponent, which keeps it bool."""
    if not hasattr(b, "dtype"):
        if a.dtype.kind == "b":
            return np.logical_or(a, not b)  # a ** True is a, a ** False all True
        return np.power(a, b)
    if b.dtype.kind == "b":
        _result_shape(a, b)
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")
    negative = b < 0
    if not negative.any():
        return np.power(a, b)
    xp = xp_of(b)
    r = np.power(a, xp.where(negative, 0, b))
    base = a if hasattr(a, "dtype") else xp.asarray(a)  # CuPy's where wants array conditions
    inverse = xp.where(base == 1, 1, xp.where(base == -1, 1 - 2 * (b & 1), 0))
    return xp.where(negative, inverse, r).astype(r.dtype, copy=False)


_add = binary_op("add", np.add, _add_bw, threaded=True)
_sub = binary_op("sub", np.subtract, _sub_bw, threaded=True)

def _keeps_mul(ra: bool, rb: bool) -> tuple:
    """PyTorch's MulBackward0: ``other`` for ``self``'s gradient, ``self`` for ``other``'s."""
    return rb, ra


def _keeps_div(ra: bool, rb: bool) -> tuple:
    """DivBackward0: ``self`` only for ``other``'s gradient; ``other`` for either."""
    return rb, True


def _keeps_modulo(ra: bool, rb: bool) -> tuple:
    """RemainderBackward/FmodBackward: both only for ``other``'s gradient (``self``'s is
    the incoming gradient)."""
    return rb, rb


mul = register("mul", out=True, inplace=True, aliases=("multiply",))(
    binary_op("mul", np.multiply, _mul_bw, saves="ab", keeps=_keeps_mul, threaded=True))
_true_div = binary_op("div", np.true_divide, _div_bw, kind="float", saves="ab",
                      keeps=_keeps_div, threaded=True)
def _zero_bw(node, g):
    """``div``'s rounding modes: PyTorch's DivBackward2 gives zero gradients (the result is
    piecewise constant), so the result requires grad and its backward runs."""
    z = g.new_zeros(g.shape)
    return (z if node.needs_grad(0) else None), (z if node.needs_grad(1) else None)


def _floor_divide_bw(node, g):
    raise RuntimeError("derivative for aten::floor_divide is not implemented")


# PyTorch's floor_divide has no derivative: its result requires grad (a NotImplemented node)
# and the backward through it raises, where div(rounding_mode="floor") gives zeros
floor_divide = register("floor_divide", out=True, inplace=True, differentiable=False)(
    binary_op("floor_divide", _np_floor_divide, _floor_divide_bw, node_name="NotImplemented"))
floor_divide.__doc__ = "Division rounded toward negative infinity (PyTorch >= 1.13 semantics)."
_div_floor = binary_op("floor_divide", _np_floor_divide, _zero_bw, node_name="DivBackward2")
_trunc_div = binary_op("div_trunc", _np_trunc_divide, _zero_bw, node_name="DivBackward2")
_trunc_div_float = binary_op("div_trunc", lambda a, b: np.trunc(np.true_divide(a, b)),
                             _zero_bw, node_name="DivBackward2")
remainder = register("remainder", out=True, inplace=True)(
    binary_op("remainder", _remainder_np, _remainder_bw, saves="ab", keeps=_keeps_modulo,
              tensor_node_name="RemainderBackward1"))
fmod = register("fmod", out=True, inplace=True)(
    binary_op("fmod", _fmod_np, _fmod_bw, saves="ab", keeps=_keeps_modulo,
              tensor_node_name="FmodBackward1"))
_pow = binary_op("pow", _pow_np, _pow_bw, saves="ab", tensor_node_name="PowBackward1")


def _pow_np_bf16(a, b):
    """A bfloat16 base to the power 3 or -2, on its float32 copy: PyTorch's CPU kernel
    computes these as ``base * base * base`` and ``1 / (base * base)`` in BFloat16
    arithmetic, which rounds the square to bfloat16 before the last step (float16 and the
    other powers are one float32 pow rounded once, as ``_pow`` computes them)."""
    sq = np.multiply(a, a).astype(_dtype.BFLOAT16_NP).astype(a.dtype)
    return np.multiply(sq, a) if b == 3 else np.reciprocal(sq)


_pow_bf16 = binary_op("pow", _pow_np_bf16, _pow_bw, saves="ab")


@register("add", inplace=True)
def add(input, other, _deprecated_other=NO_ARG, *, alpha=1, out=None):
    """``input + alpha * other`` with PyTorch's promotion and broadcasting."""
    if _deprecated_other is not NO_ARG:  # add(input, alpha, other): ops/_deprecated.py
        other, alpha = alpha_first("add", input, other, _deprecated_other, alpha)
    try:
        if alpha.__class__ is not int or alpha != 1:
            scaled = _scaled_fast(input, other, alpha)
            if scaled is None:
                alpha = _checked_alpha(input, other, alpha)
                # a number times alpha stays a number (a weak scalar in promotion)
                scaled = mul(other, alpha) if isinstance(other, Tensor) else other * alpha
            other = scaled
        r = _add(input, other)
    except NotImplementedError:  # a sparse operand's placeholder data refused (no cost else)
        r = _sparse_sum(input, other, alpha)
    return _out(r, out, (input, other), "add")


def _sparse_sum(input, other, alpha):
    """``input + alpha * other`` where one of them is sparse (``ember.add(dense, sparse)``
    is dense, ``add(sparse, sparse)`` sparse, ``add(sparse, dense)`` PyTorch's error);
    re-raises when neither is."""
    from .._sparse_tensor import dense_add_sparse, is_sparse, sparse_add

    if is_sparse(input):
        return sparse_add(input, other, alpha)
    if is_sparse(other):
        return dense_add_sparse(input, other if alpha == 1 else other * alpha, 1)
    raise


@register("sub", inplace=True, aliases=("subtract",))
def sub(input, other, _deprecated_other=NO_ARG, *, alpha=1, out=None):
    """``input - alpha * other``."""
    if _deprecated_other is not NO_ARG:  # sub(input, alpha, other): ops/_deprecated.py
        other, alpha = alpha_first("sub", input, other, _deprecated_other, alpha)
    if _is_bool(input) or _is_bool(other):
        raise _bool_sub_error(input, other)
    try:
        if alpha.__class__ is not int or alpha != 1:
            scaled = _scaled_fast(input, other, alpha)
            if scaled is None:
                alpha = _checked_alpha(input, other, alpha)
                # a number times alpha stays a number (a weak scalar in promotion)
                scaled = mul(other, alpha) if isinstance(other, Tensor) else other * alpha
            other = scaled
        r = _sub(input, other)
    except NotImplementedError:  # a sparse operand (see add)
        r = _sparse_sum(input, other, -alpha)
    return _out(r, out, (input, other), "sub")


def _bool_sub_error(a, b) -> RuntimeError:
    if _is_bool(a) and _is_bool(b):
        return RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                            "supported. Use the `^` or `logical_xor()` operator instead.")
    return RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                        "If you are trying to invert a mask, use the `~` or `logical_not()` "
                        "operator instead.")


def _scaled_fast(input, other, alpha):
    """``mul(other, alpha)`` for ``add``/``sub``'s ``alpha`` where both are float32 or float64
    CPU tensors of one dtype, ``other`` C-contiguous, neither recording (``fast_floats``), and
    ``alpha`` a finite number in their dtype (``exp_avg.add_(grad, alpha=1 - beta1)``, per
    parameter per step): the same array, without the checks that cannot fail there; None
    otherwise."""
    if alpha.__class__ not in _PY_SCALARS:
        return None
    dt = fast_floats(other, input)
    if dt is None or not other._data.flags.c_contiguous:
        return None
    a = dt.type(alpha)
    if not math.isfinite(a):
        return None
    od = other._data
    r = _native.ufunc(np.multiply, od, float(a))  # big operands on the pool, as mul's
    return _make(np.multiply(od, a) if r is None else r, other._device)


def _checked_alpha(input, other, alpha):
    """``alpha`` of ``add``/``sub`` after PyTorch's checks against the result's dtype (its
    ``alpha_check``); a bool result scales by ``bool(alpha)``, as PyTorch's bool kernel."""
    if isinstance(alpha, Tensor):
        alpha = alpha.item()
    kind = _dtype.result_type(input, other).np.kind
    is_bool = isinstance(alpha, (bool, np.bool_))
    if is_bool and kind != "b":
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if kind in "biu" and not (is_bool or isinstance(alpha, numbers.Integral)):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")
    if kind != "c" and isinstance(alpha, numbers.Complex) and not isinstance(alpha,
                                                                              numbers.Real):
        raise RuntimeError("For non-complex input tensors, argument alpha must not be a "
                           "complex number.")
    return bool(alpha) if kind == "b" else alpha


def _sub_operator(self, other):
    """``Tensor.__sub__``: ``sub`` without its keywords, NotImplemented for an operand no
    tensor op takes (``_sub._dunder``; see ``pointwise._operator``)."""
    if _is_bool(self) or _is_bool(other):
        raise _bool_sub_error(self, other)
    try:
        return _sub._dunder(self, other)
    except NotImplementedError:  # a sparse operand (see add)
        return _sparse_sum(self, other, -1)


_sub_operator.__name__ = _sub_operator.__qualname__ = "__sub__"  # op_key: "sub"
sub._dunder = _sub_operator


@register("rsub", out=True, method=False)
def rsub(input, other, *, alpha=1):
    """``other - alpha * input``."""
    if not isinstance(input, Tensor):
        check_binds("rsub", (input, other), None if alpha == 1 else {"alpha": alpha})
    try:
        return sub(other, input, alpha=alpha)
    except TypeError:  # sub's words for rsub's operands: the parser's for rsub
        check_binds("rsub", (input, other), None if alpha == 1 else {"alpha": alpha})
        raise


def _is_bool(x) -> bool:
    """A bool tensor or a Python/NumPy bool."""
    if isinstance(x, Tensor):
        return x._data.dtype.kind == "b"
    return isinstance(x, (bool, np.bool_))


@register("div", inplace=True, aliases=("divide",))
def div(input, other, *, rounding_mode=None, out=None):
    """Division; ``rounding_mode`` None (true division), ``'trunc'`` or ``'floor'``."""
    try:
        if rounding_mode is None:
            return _out(_true_div(input, other), out, (input, other), "div")
        if rounding_mode == "floor":
            try:
                r = _div_floor(input, other)
            except RuntimeError as exc:  # floor_divide's words for a sparse divisor: div's
                if not str(exc).startswith("Sparse floor division"):
                    raise
                raise RuntimeError(str(exc).replace("Sparse floor division", "Sparse division",
                                                    1)) from None
            return _out(r, out, (input, other), "div")
        if rounding_mode == "trunc":
            if _dtype.result_type(input, other).is_floating_point:
                return _out(_trunc_div_float(input, other), out, (input, other), "div")
            return _out(_trunc_div(input, other), out, (input, other), "div")
    except TypeError:  # operands no signature takes: the parser's words, for div's call
        _div_binds(input, other, rounding_mode, out)
        raise
    _div_binds(input, other, rounding_mode, out)  # a rounding mode that is no str
    raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                       f"found '{rounding_mode}'")


def _div_binds(input, other, rounding_mode, out) -> None:
    """PyTorch's parser error for a ``div`` call that none of its signatures takes."""
    kwargs = {} if rounding_mode is None else {"rounding_mode": rounding_mode}
    if out is not None:
        kwargs["out"] = out
    check_binds("div", (input, other), kwargs)


@register("true_divide", out=True, inplace=True)
def true_divide(input, other):
    try:
        return _true_div(input, other)
    except TypeError:  # the parser's error, in true_divide's words (not div's)
        check_binds("true_divide", (input, other))
        raise


@register("pow", out=True, inplace=True)
def pow(input, exponent):  # PyTorch's name
    """``input ** exponent`` (tensor or scalar on either side)."""
    # checked before coerce wraps the exponent into the dtype; 0..127 fits every integer dtype
    if exponent.__class__ is int and not 0 <= exponent <= 127 and isinstance(input, Tensor) \
            and input._data.dtype.kind in "biu":
        _check_integer_exponent(input._data.dtype, exponent)
    if exponent.__class__ in (int, float) and (exponent == 3 or exponent == -2) \
            and isinstance(input, Tensor) and input._data.dtype is _dtype.BFLOAT16_NP:
        return _pow_bf16(input, exponent)
    return _pow(input, exponent)


def _check_integer_exponent(np_dtype, exponent: int) -> None:
    """PyTorch's errors for a Python int power of an integer or bool tensor: no negative
    exponent, and none beyond the result dtype (int64 for bool)."""
    if exponent < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    result = np.dtype(np.int64) if np_dtype.kind == "b" else np_dtype
    if exponent > np.iinfo(result).max:
        raise RuntimeError(f"value cannot be converted to type {_dtype.c_type_name(result)} "
                           "without overflow")


def float_power(input, exponent):
    """``pow`` computed in float64 (complex128 when either operand is complex)."""
    return _pow(_double(input), _double(exponent))


_float_power_derived = make_inplace(float_power, "float_power_")


def _float_power_(self, exponent):
    """``Tensor.float_power_``: PyTorch refuses a base not already of the result dtype
    (float64, complex128 when either operand is complex)."""
    d = self._data.dtype
    if d != np.float64:
        cplx = d.kind == "c" or (exponent._data.dtype.kind == "c" if isinstance(exponent, Tensor)
                                 else isinstance(exponent, complex))
        if not (cplx and d == np.complex128):
            need = "ComplexDouble" if cplx else "Double"
            raise RuntimeError(f"the base given to float_power_ has dtype "
                               f"{_dtype.scalar_type_name(d)} but the operation's result "
                               f"requires dtype {need}")
    elif isinstance(exponent, complex) or (isinstance(exponent, Tensor)
                                           and exponent._data.dtype.kind == "c"):
        raise RuntimeError("the base given to float_power_ has dtype Double but the "
                           "operation's result requires dtype ComplexDouble")
    return _float_power_derived(self, exponent)


_float_power_.__name__ = _float_power_.__qualname__ = "float_power_"
float_power = register("float_power", out="result", inplace=_float_power_)(float_power)


def _double(x):
    """``float_power``'s operand in double precision: complex128 for complex ones."""
    if isinstance(x, Tensor):
        return x.to(_dtype.complex128) if x._data.dtype in _dtype.COMPLEX_NP else x.double()
    return x if isinstance(x, complex) else float(x)


def _out(r, out, inputs, name: str):
    if out is None:
        return r
    return write_out(out, r, name, inputs=inputs)


# -- addcmul, addcdiv, addr ---------------------------------------------------------------------

def _addc_bw(node, g):
    t1, t2 = node.saved
    value, divide, metas = node.ctx
    if divide:
        g1 = g * value / t2
        grads = (g, g1, -g1 * t1 / t2)
    else:
        grads = (g, g * t2 * value, g * t1 * value)
    return tuple(_fit(gr, *m) if node.needs_grad(i) else None
                 for i, (gr, m) in enumerate(zip(grads, metas)))


AddcmulBackward0 = make_node_class("AddcmulBackward0", _addc_bw)
AddcdivBackward0 = make_node_class("AddcdivBackward0", _addc_bw)

_ADDCDIV_INTEGER = (
    "Integer division with addcdiv is no longer supported, and in a future  release addcdiv "
    "will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be "
    "implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
    "integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future "
    "addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), "
    "for all dtypes.")


def _addc(input, tensor1, tensor2, value, divide):
    if input.__class__ is Tensor and tensor1.__class__ is Tensor \
            and tensor2.__class__ is Tensor and value.__class__ in _PY_SCALARS:
        r = _addc_fast(input, tensor1, tensor2, value, divide)
        if r is not None:
            return r
    name = "addcdiv" if divide else "addcmul"
    for pos, (arg, t) in enumerate((("input", input), ("tensor1", tensor1),
                                     ("tensor2", tensor2)), 1):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not "
                            f"{type(t).__name__}")
    if divide and tensor1._data.dtype not in _dtype.INEXACT_NP \
            and tensor2._data.dtype not in _dtype.INEXACT_NP:
        raise RuntimeError(_ADDCDIV_INTEGER)
    rt = _dtype.result_type(input, tensor1, tensor2).np
    if divide and rt is _dtype.CHALF_NP:
        raise _dtype.no_chalf_kernel("addcdiv_cpu_out")
    (tx, t1, t2), (x, a, b), dev = _prepare((input, tensor1, tensor2), rt)
    shape = _broadcast_all(x, a, b)
    if not divide:
        _dtype.check_kernel("addcmul", rt)
    if rt.kind == "b":
        suffix = "cpu" if x.__class__ is np.ndarray else "cuda"
        raise NotImplementedError(f'"{name}_{suffix}_out" not implemented for \'Bool\'')
    try:
        v = rt.type(value)
    except TypeError:  # a complex value for a real result
        if isinstance(value, complex):
            raise RuntimeError(f"value cannot be converted to type {_dtype.c_type_name(rt)} "
                               "without overflow") from None
        raise
    if rt.kind == "f" and math.isinf(v) and rt.itemsize >= 4 and not math.isinf(value):
        raise RuntimeError(f"value cannot be converted to type {_dtype.c_type_name(rt)} "
                           "without overflow")
    with np.errstate(divide="ignore", invalid="ignore"):
        r = _addc_values(x, a, b, value, v, rt, divide)
    if r.shape != shape:
        r = xp_of(r).broadcast_to(r, shape).copy()
    arrays = [t for t in (x, a, b) if hasattr(t, "flags")]
    if not all(t.flags.c_contiguous for t in arrays[:2]):
        r = _mf.iter_layout(r, arrays)  # PyTorch's layout: the first input's
    node = AddcdivBackward0 if divide else AddcmulBackward0
    g1, g2 = t1 is not None and t1.requires_grad, t2 is not None and t2.requires_grad
    return result(r.astype(rt, copy=False), dev, node, (tx, t1, t2), (t1, t2),
                   (value, divide, (_meta(tx), _meta(t1), _meta(t2))),
                   checked=(g2, g1 or g2 if divide else g1))


_PY_SCALARS = (float, int)


def _addc_fast(input, tensor1, tensor2, value, divide):
    """``_addc`` of three float32 or float64 CPU tensors of one shape (not 0-dim) and layout
    with no gradient to record (user-written optimizers' ``addcmul_``/``addcdiv_``, per parameter
    per step): ``_addc_values``, as the general path, with ~10x less overhead; None where the
    general path must run."""
    dt = fast_floats(input, tensor1, tensor2)
    if dt is None:
        return None
    x, a, b = input._data, tensor1._data, tensor2._data
    if x.shape != a.shape or x.shape != b.shape or not x.ndim \
            or not (x.flags.c_contiguous and a.flags.c_contiguous):
        return None
    v = dt.type(value)
    if dt is _F32 and not math.isfinite(v) and math.isfinite(value):
        return None  # the general path raises PyTorch's overflow error
    return _make(_addc_values(x, a, b, value, v, dt, divide), input._device)


def _addc_values(x, a, b, value, v, rt, divide):
    """PyTorch's CPU kernels' roundings: ``self + (value * t1) / t2`` and ``self + value * t1
    * t2``, which its build contracts into ``fma(value * t1, t2, self)`` (float32: exact
    through float64, rounded once); float16/bfloat16 computed in float32 with ``value`` in
    float32 (not rounded to the tensor's dtype), rounded once at the end."""
    wide = _dtype.OPMATH.get(rt)
    if wide is not None:
        x, a, b, v = _dtype.widen(x), _dtype.widen(a), _dtype.widen(b), wide.type(value)
    va = v * a
    if divide:
        return x + va / b
    if getattr(va, "dtype", None) == np.float32 and va.__class__ is np.ndarray:
        return (va.astype(np.float64) * b + x).astype(np.float32)
    return x + va * b


@register("addcmul", out=True, inplace=True)
def addcmul(input, tensor1, tensor2, _deprecated_tensor2=NO_ARG, *, value=1):
    """``input + value * tensor1 * tensor2`` (broadcast, promoted)."""
    if _deprecated_tensor2 is not NO_ARG:  # addcmul(input, value, t1, t2): ops/_deprecated.py
        tensor1, tensor2, value = value_first("addcmul", input, tensor1, tensor2,
                                              _deprecated_tensor2, value)
    return _addc(input, tensor1, tensor2, value, False)


@register("addcdiv", out=True, inplace=True)
def addcdiv(input, tensor1, tensor2, _deprecated_tensor2=NO_ARG, *, value=1):
    """``input + value * tensor1 / tensor2`` (integer ``tensor1``/``tensor2`` are an error)."""
    if _deprecated_tensor2 is not NO_ARG:  # addcdiv(input, value, t1, t2): ops/_deprecated.py
        tensor1, tensor2, value = value_first("addcdiv", input, tensor1, tensor2,
                                              _deprecated_tensor2, value)
    return _addc(input, tensor1, tensor2, value, True)


def _addr_bw(node, g):
    v1, v2 = node.saved
    beta, alpha, meta_in = node.ctx
    g_in = _fit(g * beta, *meta_in) if node.needs_grad(0) else None
    g1 = (g * v2).sum(1) * alpha if node.needs_grad(1) else None
    g2 = (g * v1.unsqueeze(1)).sum(0) * alpha if node.needs_grad(2) else None
    return g_in, g1, g2


AddrBackward0 = make_node_class("AddrBackward0", _addr_bw)


@register("addr", out=True, inplace=True)
def addr(input, vec1, vec2, _deprecated_vec1=NO_ARG, _deprecated_vec2=NO_ARG, *, beta=1,
         alpha=1):
    """``beta * input + alpha * outer(vec1, vec2)``; ``beta == 0`` ignores ``input``."""
    if _deprecated_vec1 is not NO_ARG:  # addr(beta, input, alpha, v1, v2): ops/_deprecated.py
        input, vec1, vec2, beta, alpha = beta_first("addr", input, vec1, vec2, _deprecated_vec1,
                                                    _deprecated_vec2, beta, alpha)
    for label, v in (("vec1", vec1), ("vec2", vec2)):
        if v._data.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {label}, but got "
                               f"{v._data.ndim}-D")
    rt = _dtype.result_type(input, vec1, vec2).np
    if rt.kind in "iu":
        for label, s in (("beta", beta), ("alpha", alpha)):
            if isinstance(s, float):
                raise RuntimeError(f"For integral input tensors, argument {label} must not be "
                                   "a floating point number.")
    (tx, t1, t2), (x, a, b), dev = _prepare((input, vec1, vec2), rt)
    shape = (a.shape[0], b.shape[0])
    if x.shape != shape:
        input.detach().expand(shape)  # PyTorch's error when input does not expand to shape
    outer = a[:, None] * b[None, :]
    if rt.kind == "b":
        r = (outer & bool(alpha)) | (x & bool(beta))
    else:  # PyTorch's scalar conversion: -1 wraps to 255 for uint8, 256 overflows
        r = outer * _scalar_as(alpha, rt)
        if beta != 0:
            r = r + x * _scalar_as(beta, rt)
    r = xp_of(r).broadcast_to(r, shape).astype(rt)
    return result(r, dev, AddrBackward0, (tx, t1, t2), (t1, t2), (beta, alpha, _meta(tx)))


hide("add", "sub", "addcmul", "addcdiv", "addr")


# -- Python operators -------------------------------------------------------------------------

# (dunder, the operator, its reflected form's op, the in-place op): ``a + b`` takes ``_add``,
# the fast two-tensor path, where ``ember.add`` also parses ``alpha``
for _dunder, _op, _rop, _iop in (("add", _add, _add, add), ("sub", sub, sub, sub),
                                 ("mul", mul, mul, mul),
                                 ("truediv", _true_div, _true_div, div),
                                 ("floordiv", floor_divide, floor_divide, floor_divide),
                                 ("mod", remainder, remainder, remainder),
                                 ("pow", pow, _pow, pow)):
    register_operator(_dunder, _op, _rop, make_inplace(_iop, _iop.__name__ + "_"))


# The reflected forms of a number on the left, recorded as PyTorch records them (its
# ``_tensor.py`` dunders): ``2 + b`` and ``2 * b`` are ``add(b, 2)`` and ``mul(b, 2)`` (the
# tensor's edge first in ``grad_fn.next_functions``), ``2 - b`` is ``rsub(b, 2)`` and
# ``2 ** b`` is ``pow(2, b)``, nodes with the tensor's edge alone (RsubBackward1,
# PowBackward2). ``2 / b`` stays one correctly rounded division (PyTorch computes
# ``reciprocal(b) * 2``, within an ulp of it; ember.compile and export replay a division).
def _radd(self, other):
    return _add(self, other)


def _rmul(self, other):
    return mul(self, other)


RsubBackward1 = make_node_class("RsubBackward1", lambda node, g: (-g,))
PowBackward2 = make_node_class("PowBackward2", lambda node, g: (_pow_bw(node, g)[1],))


def _number_first(self, other, fn, node_cls, saved=()):
    """``fn(other, self)`` for a number ``other``, recorded as a ``node_cls`` node with one
    edge, to ``self`` (``saved``: what its backward reads)."""
    r = fn(other, self.detach())
    return result(r._data, r._device, node_cls, (self,), saved)


def _rsub(self, other):
    if isinstance(other, Tensor):  # a tensor subclass's reflected call: no number
        return sub(other, self)
    return _number_first(self, other, sub, RsubBackward1)  # sub: the bool refusal


def _rpow(self, other):
    if isinstance(other, Tensor):
        return _pow(other, self)
    return _number_first(self, other, _pow, PowBackward2, (other, self))


for _dunder, _method in (("__radd__", _radd), ("__rmul__", _rmul), ("__rsub__", _rsub),
                         ("__rpow__", _rpow)):
    register_method(_dunder, _operator(_method, _dunder))
register_method("__matmul__", _operator(lambda a, b: a.matmul(b), "__matmul__"))


def _rmatmul(a, b):
    if isinstance(b, Tensor):
        return b.matmul(a)
    if isinstance(b, np.ndarray):
        return _make(b, a._device).matmul(a)
    return NotImplemented  # a list or tuple on the left: Python's error, as PyTorch's


_rmatmul.__name__ = _rmatmul.__qualname__ = "__rmatmul__"  # op_key: "matmul"
register_method("__rmatmul__", _rmatmul)
