"""PyTorch's ``torch.sym_*`` helpers: size arithmetic that also works on symbolic sizes.

Eagerly (plain Python numbers and bools, 0-d tensors, and the ``SymInt`` sizes of an
``ember.export`` capture, which are ``int``s) they are the Python operation they name, with
PyTorch's type rules and checks: ``sym_max(2, 3.0)`` is ``3.0`` (a float argument makes the
result float), ``sym_ite`` wants a bool and two values of one type, ``sym_constrain_range``
checks the value against the range and returns None.
"""

from __future__ import annotations

import builtins
import math
import numbers

import numpy as np

__all__ = ["sym_int", "sym_float", "sym_max", "sym_min", "sym_not", "sym_sqrt", "sym_sum",
           "sym_ite", "sym_fresh_size", "sym_constrain_range", "sym_constrain_range_for_size"]

_ALL_TYPES = (np.integer, np.floating, int, float)
_FLOAT_TYPES = (np.floating, float)
_INT64_MIN, _INT64_MAX = -(2 ** 63), 2 ** 63 - 1


def sym_int(a):
    """``a`` as an int (a float truncated toward zero); a symbolic size stays symbolic."""
    if isinstance(a, int) and not isinstance(a, bool):
        return a
    return builtins.int(a)


def sym_float(a):
    """``a`` as a float."""
    return builtins.float(a)


def _check_number(a) -> None:
    if not isinstance(a, _ALL_TYPES):
        raise AssertionError(f"expected {_ALL_TYPES}, got {type(a)}")


def sym_max(a, b):
    """The larger of two ints or floats, a float when either is a float (unlike ``max``,
    which keeps the type of the argument it returns)."""
    _check_number(a)
    _check_number(b)
    if isinstance(a, _FLOAT_TYPES) or isinstance(b, _FLOAT_TYPES):
        return builtins.float(builtins.max(a, b))
    return builtins.max(a, b)


def sym_min(a, b):
    """The smaller of two ints or floats, a float when either is a float."""
    _check_number(a)
    _check_number(b)
    if isinstance(a, _FLOAT_TYPES) or isinstance(b, _FLOAT_TYPES):
        return builtins.float(builtins.min(a, b))
    return builtins.min(a, b)


def sym_not(a):
    """Logical negation: ``not a``."""
    return not a


def sym_sqrt(a):
    """The square root as a float (``math.sqrt``)."""
    return math.sqrt(a)


def sym_sum(*args):
    """The sum of its arguments: ``sym_sum([a, b, c])`` or ``sym_sum(a, b, c)`` (0 for
    none); tensors add as tensors."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]
    return builtins.sum(args)


def sym_ite(b, t, f):
    """``t if b else f``: ``b`` must be a bool and ``t``, ``f`` of one type."""
    if not isinstance(b, builtins.bool):
        raise AssertionError(f"expected SymBool or bool, got {type(b)}")
    if type(t) is not type(f):
        raise AssertionError(f"type mismatch: {type(t)} vs {type(f)}")
    return t if b else f


def sym_fresh_size(expr):
    """``expr`` as a Python number (``tensor(expr).item()``): a new unbacked size under
    tracing, the value itself eagerly."""
    from ._factory import tensor

    return tensor(expr).item()


def _scalar_as_int(name: str, size) -> int:
    """A ``Scalar`` argument as the int64 PyTorch's kernel reads (floats truncated)."""
    from ._tensor import Tensor

    if isinstance(size, Tensor):
        if size.dim() != 0:
            raise TypeError(f"{name}(): argument 'size' (position 1) must be Number, not "
                            "Tensor")
        size = size.item()
    if not isinstance(size, numbers.Number):
        raise TypeError(f"{name}(): argument 'size' (position 1) must be Number, not "
                        f"{type(size).__name__}")
    if isinstance(size, numbers.Complex) and not isinstance(size, numbers.Real):
        if size.imag != 0:
            raise RuntimeError("value cannot be converted to type int64_t without overflow")
        size = size.real
    if isinstance(size, (float, np.floating)) and not math.isfinite(size):
        raise RuntimeError("value cannot be converted to type int64_t without overflow")
    value = builtins.int(size)
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise RuntimeError("value cannot be converted to type int64_t without overflow")
    return value


def _optional_int(name: str, arg: str, v):
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name}(): argument '{arg}' must be int, not {type(v).__name__}")
    return builtins.int(v)


def _constrain(name: str, size, lo, hi, lo_default: int) -> None:
    value = _scalar_as_int(name, size)
    lo = _optional_int(name, "min", lo)
    hi = _optional_int(name, "max", hi)
    if name == "sym_constrain_range_for_size" and hi is not None and hi <= 2:
        raise RuntimeError(f"Max value to constrain_range_for_size must be greater than 2. "
                           f"got: {hi}")
    lo = lo_default if lo is None else lo
    hi = _INT64_MAX if hi is None else hi
    if hi < lo:
        raise RuntimeError(f"Max must be greater than or equal to min. Got min={lo} max={hi}")
    if not lo <= value <= hi:
        raise RuntimeError(f"Invalid value range for {value} between [{lo}, {hi}].")


def sym_constrain_range(size, *, min=None, max=None):
    """Declare that ``size`` lies in ``[min, max]`` (inclusive; an unset bound is int64's):
    eagerly a check, raising PyTorch's error when ``size`` is outside. Returns None."""
    _constrain("sym_constrain_range", size, min, max, _INT64_MIN)


def sym_constrain_range_for_size(size, *, min=None, max=None):
    """``sym_constrain_range`` for a value used as a size: ``min`` defaults to 0, and a
    ``max`` must be greater than 2. Returns None."""
    _constrain("sym_constrain_range_for_size", size, min, max, 0)


def _assert(condition, message):
    """``torch._assert``: ``assert condition, message`` that symbolic tracing (``ember.fx``)
    records as one call instead of branching on a traced value; model code (torchvision's
    and timm's ViTs) checks its input shapes with it so that it stays traceable."""
    from ._tensor import Tensor
    from .overrides import handle_torch_function, has_torch_function

    if type(condition) is not Tensor and has_torch_function((condition,)):
        return handle_torch_function(_assert, (condition,), condition, message)
    assert condition, message
