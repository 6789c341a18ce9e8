"""Arithmetic: add, sub, mul, div (rounding modes), floor_divide, remainder, fmod, pow, and
the Python operators (including reflected and in-place forms)."""

from __future__ import annotations

import numpy as np

from .._tensor import Tensor, _make
from ._core import binary_op, coerce, make_inplace
from .registry import register, register_method

__all__ = ["add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod",
           "pow", "float_power", "rsub"]


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


def _remainder_bw(node, g):
    a, b = node.saved
    gb = None
    if isinstance(b, Tensor) and b.requires_grad:
        gb = -g * (a / b).floor()
    return g, gb


def _fmod_bw(node, g):
    a, b = node.saved
    gb = None
    if isinstance(b, Tensor) and b.requires_grad:
        gb = -g * (a / b).trunc()
    return g, gb


def _np_floor_divide(a, b):
    return np.floor_divide(a, b)


def _remainder_np(a, b):
    return np.remainder(a, b)


def _fmod_np(a, b):
    return np.fmod(a, b)


def _int_pow(a, b):
    if isinstance(b, (int, np.integer)) and b < 0 and a.dtype.kind in "iu":
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    if isinstance(b, np.ndarray) and b.dtype.kind in "iu" and a.dtype.kind in "iu" if \
            isinstance(a, np.ndarray) else False:
        if (b < 0).any():
            raise RuntimeError("Integers to negative integer powers are not allowed.")
    return np.power(a, b)


_add = binary_op("add", np.add, _add_bw)
_sub = binary_op("sub", np.subtract, _sub_bw)
mul = register("mul", inplace=True, aliases=("multiply",))(
    binary_op("mul", np.multiply, _mul_bw, saves="ab"))
_true_div = binary_op("div", np.true_divide, _div_bw, kind="float", saves="ab")
_floor_div = binary_op("floor_divide", _np_floor_divide, None)
remainder = register("remainder", inplace=True)(
    binary_op("remainder", _remainder_np, _remainder_bw, saves="ab"))
fmod = register("fmod", inplace=True)(binary_op("fmod", _fmod_np, _fmod_bw, saves="ab"))
_pow = binary_op("pow", _int_pow, _pow_bw, saves="ab")


@register("add", inplace=True)
def add(input, other, *, alpha=1, out=None):
    """``input + alpha * other`` with PyTorch's promotion and broadcasting."""
    if alpha != 1:
        other = mul(other, alpha)
    r = _add(input, other)
    return _out(r, out)


@register("sub", inplace=True, aliases=("subtract",))
def sub(input, other, *, alpha=1, out=None):
    """``input - alpha * other``."""
    if _is_bool(input) or _is_bool(other):
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    if alpha != 1:
        other = mul(other, alpha)
    return _out(_sub(input, other), out)


@register("rsub", method=False)
def rsub(input, other, *, alpha=1):
    """``other - alpha * input``."""
    return sub(other, input, alpha=alpha)


def _is_bool(x) -> bool:
    return isinstance(x, Tensor) and x._data.dtype.kind == "b"


@register("div", inplace=True, aliases=("divide",))
def div(input, other, *, rounding_mode=None, out=None):
    """Division; ``rounding_mode`` None (true division), ``'trunc'`` or ``'floor'``."""
    if rounding_mode is None:
        return _out(_true_div(input, other), out)
    if rounding_mode == "floor":
        return _out(floor_divide(input, other), out)
    if rounding_mode == "trunc":
        ta, tb, ad, bd, dev = coerce(input, other)
        res = ad if ta is not None else bd
        if res.dtype.kind in "biu":  # exact integer division rounded toward zero
            _int_div_zero_check(other)
            q = np.floor_divide(ad, bd)
            fix = (np.remainder(ad, bd) != 0) & ((np.asarray(ad) < 0) != (np.asarray(bd) < 0))
            return _out(_make(q + fix.astype(q.dtype), dev), out)
        return _out(_true_div(input, other).trunc(), out)
    raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                       f"found '{rounding_mode}'")


def _int_div_zero_check(other):
    if isinstance(other, Tensor):
        if other._data.dtype.kind in "biu" and not other._data.all():
            raise RuntimeError("ZeroDivisionError")
    elif other == 0:
        raise RuntimeError("ZeroDivisionError")


@register("true_divide", inplace=True)
def true_divide(input, other):
    return _true_div(input, other)


@register("floor_divide", inplace=True)
def floor_divide(input, other):
    """Division rounded toward negative infinity (PyTorch >= 1.13 semantics)."""
    ta, tb, ad, bd, _ = coerce(input, other) if not (
        isinstance(input, Tensor) and isinstance(other, Tensor)) else (
        input, other, input._data, other._data, None)
    if isinstance(bd, np.ndarray) and bd.dtype.kind in "biu" and not np.all(bd):
        raise RuntimeError("ZeroDivisionError")
    if not isinstance(bd, np.ndarray) and isinstance(bd, int) and bd == 0 and \
            isinstance(ad, np.ndarray) and ad.dtype.kind in "biu":
        raise RuntimeError("ZeroDivisionError")
    return _floor_div(input, other)


@register("pow", inplace=True)
def pow(input, exponent):  # noqa: A001 - PyTorch's name
    """``input ** exponent`` (tensor or scalar on either side)."""
    return _pow(input, exponent)


@register("float_power", inplace=True)
def float_power(input, exponent):
    """``pow`` computed in float64."""
    a = input.double() if isinstance(input, Tensor) else float(input)
    b = exponent.double() if isinstance(exponent, Tensor) else float(exponent)
    return _pow(a, b)


def _out(r, out):
    if out is None:
        return r
    from .._factory import write_out

    return write_out(out, r)


# -- Python operators -------------------------------------------------------------------------

def _radd(self, other):
    return _add(other, self)


def _rsub(self, other):
    return sub(other, self)


def _rmul(self, other):
    return mul(other, self)


def _rtruediv(self, other):
    return _true_div(other, self)


def _rfloordiv(self, other):
    return floor_divide(other, self)


def _rmod(self, other):
    return remainder(other, self)


def _rpow(self, other):
    return _pow(other, self)


register_method("__add__", _add)
register_method("__radd__", _radd)
register_method("__iadd__", make_inplace(add, "add_"))
register_method("__sub__", sub)
register_method("__rsub__", _rsub)
register_method("__isub__", make_inplace(sub, "sub_"))
register_method("__mul__", mul)
register_method("__rmul__", _rmul)
register_method("__imul__", make_inplace(mul, "mul_"))
register_method("__truediv__", _true_div)
register_method("__rtruediv__", _rtruediv)
register_method("__itruediv__", make_inplace(div, "div_"))
register_method("__floordiv__", floor_divide)
register_method("__rfloordiv__", _rfloordiv)
register_method("__ifloordiv__", make_inplace(floor_divide, "floor_divide_"))
register_method("__mod__", remainder)
register_method("__rmod__", _rmod)
register_method("__imod__", make_inplace(remainder, "remainder_"))
register_method("__pow__", _pow)
register_method("__rpow__", _rpow)
register_method("__ipow__", make_inplace(pow, "pow_"))
register_method("__matmul__", lambda a, b: a.matmul(b))
register_method("__rmatmul__", lambda a, b: _make(b, a._device).matmul(a)
                if not isinstance(b, Tensor) else b.matmul(a))
