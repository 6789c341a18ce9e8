"""``ember.testing``: ``assert_close`` and the NumPy-backed test device.

No GPU is lent to this project, so the tests register a second device type backed by NumPy
(``register_test_device()``). It behaves as a separate device: moves copy, mixing it with the
CPU in one op raises PyTorch's error, and every device path (``.to``, ``map_location``,
optimizer state, DataLoader) runs through it.
"""

from __future__ import annotations

import numpy as np

from ._testing_comparison import assert_close
from .backends import Backend, register_backend, unregister_backend

__all__ = ["NumpyTestBackend", "StrictTestBackend", "register_test_device",
           "register_strict_device", "unregister_test_device",
           "assert_close"]


class NumpyTestBackend(Backend):
    """A device whose arrays are NumPy arrays in host memory, kept apart from the CPU's."""

    def __init__(self, type: str = "testdev", count: int = 2):
        self.type = type
        self.count = count
        self.xp = np
        self.kernels = {}

    def device_count(self) -> int:
        return self.count

    def default_index(self, index):
        return 0 if index is None else index

    def to_device(self, array, index):
        if index is not None and index >= self.count:
            raise RuntimeError(f"{self.type}: invalid device ordinal {index}")
        return np.array(array, copy=True)

    def to_host(self, array):
        return array


def register_test_device(type: str = "testdev", count: int = 2) -> NumpyTestBackend:
    """Register (or re-register) the NumPy-backed test device type ``type``."""
    return register_backend(NumpyTestBackend(type, count))


def unregister_test_device(type: str = "testdev") -> None:
    unregister_backend(type)


class StrictTestBackend(NumpyTestBackend):
    """The ``strict`` device: arrays refuse NumPy as CuPy's do (see ``ember._strict``).

    Its array module is :data:`ember._strict.strict_numpy`; a kernel that calls ``np.*`` on
    a tensor's array, or mixes in a host array it built with ``np.*``, raises ``TypeError``
    here as it would on a GPU. One leak remains: ``np.asarray(a)`` on the array itself views
    an ndarray subclass without asking it, so it is not caught.
    """

    def __init__(self, type: str = "strict", count: int = 2):
        from ._strict import strict_numpy

        super().__init__(type, count)
        self.xp = strict_numpy

    def to_device(self, array, index):
        from ._strict import to_strict

        if index is not None and index >= self.count:
            raise RuntimeError(f"{self.type}: invalid device ordinal {index}")
        return to_strict(array)

    def to_host(self, array):
        from ._strict import from_strict

        return from_strict(array)


#: ``assert_allclose``'s own default tolerances (rtol, atol) per dtype, as PyTorch's
_ALLCLOSE_TOLERANCES = {"float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5), "float64": (1e-5, 1e-8)}


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg="") -> None:
    """Deprecated since PyTorch 1.12 (``torch.testing.assert_allclose``), kept for the
    programs that still call it: ``assert_close`` with NaNs equal, the dtypes free to differ
    and its own default tolerances; non-tensors become tensors (``expected`` in ``actual``'s
    dtype)."""
    import warnings

    from ._factory import tensor
    from ._tensor import Tensor
    from ._warn import user_stacklevel

    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be "
                  "removed in a future release. Please use `torch.testing.assert_close()` "
                  "instead. You can find detailed upgrade instructions in "
                  "https://github.com/pytorch/pytorch/issues/61844.", FutureWarning,
                  stacklevel=user_stacklevel())
    if not isinstance(actual, Tensor):
        actual = tensor(actual)
    if not isinstance(expected, Tensor):
        expected = tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        pairs = [_ALLCLOSE_TOLERANCES.get(str(t.dtype).rpartition(".")[2], (0.0, 0.0))
                 for t in (actual, expected)]
        rtol, atol = max(p[0] for p in pairs), max(p[1] for p in pairs)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
                 check_device=True, check_dtype=False, msg=msg or None)


__all__ += ["assert_allclose"]


def register_strict_device(type: str = "strict", count: int = 2) -> StrictTestBackend:
    """Register (or re-register) the strict test device type ``type``: arrays that refuse
    implicit conversion to NumPy and direct ``np.*`` calls, like CuPy's."""
    return register_backend(StrictTestBackend(type, count))


_INTEGRAL_DTYPES = ("uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64")
_FLOATING_DTYPES = ("float16", "bfloat16", "float32", "float64")
_FLOAT8_DTYPES = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")
_COMPLEX_DTYPES = ("complex32", "complex64", "complex128")


def _make_tensor_range(low, high, dtype, *, lowest: float, highest: float,
                       default_low: float, default_high: float, kind: str) -> tuple:
    """``make_tensor``'s ``[low, high)`` for ``dtype`` (of ``kind`` "integral", "floating" or
    "float8"): defaults filled in, checked, clamped to ``[lowest, highest)``; integer bounds
    are rounded up (``randint``'s high is exclusive)."""
    import math
    import warnings

    from ._tensor import Tensor

    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and kind == "floating":
        warnings.warn("Passing `low==high` to `ember.testing.make_tensor` for floating or "
                      "complex types is deprecated since 2.1 and will be removed in 2.3. Use "
                      "`ember.full(...)` instead.", FutureWarning, stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                         f"but {dtype} only supports [{lowest}, {highest})")
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    # 0-d tensors given as bounds pass as their values
    low, high = (v.item() if isinstance(v, Tensor) else v for v in (low, high))
    if kind != "integral":
        return low, high
    return math.ceil(low), math.ceil(high)


def _uniform_random_(t, low, high):
    """``t.uniform_(low, high)``, drawn at half the width and doubled where the width itself
    would overflow the dtype."""
    import ember

    if high - low >= ember.finfo(t.dtype).max:
        return t.uniform_(low / 2, high / 2).mul_(2)
    return t.uniform_(low, high)


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad: bool = False,
                noncontiguous: bool = False, exclude_zero: bool = False, memory_format=None):
    """A tensor of ``shape`` on ``device`` with values drawn uniformly from ``[low, high)``,
    as ``torch.testing.make_tensor`` makes one.

    ``shape`` is integers or one sequence of them. ``low`` and ``high`` default by dtype:
    ``[0, 2)`` for bool, ``[0, 10)`` for unsigned and ``[-9, 10)`` for signed integers,
    ``[-9, 9)`` for floating and complex types (both parts of a complex value); given bounds
    are clamped to the dtype's finite range. float8 values are drawn in float32 and rounded.
    ``noncontiguous=True`` returns a strided view (tensors of two or more elements);
    ``memory_format`` lays the values out in that format instead (the two exclude each other).
    ``exclude_zero=True`` replaces zeros by one (bool, integers) or by ``finfo(dtype).tiny``.
    ``requires_grad`` is for floating and complex types. Values come from ember's global
    generator (``ember.manual_seed``).

    Raises ``ValueError`` for ``low >= high``, a NaN bound, a range outside the dtype's, both
    ``noncontiguous`` and ``memory_format``, or ``requires_grad`` with a boolean or integral
    dtype; ``TypeError`` for a dtype it cannot fill.
    """
    import collections.abc
    import math

    import ember

    def named(names):
        return [getattr(ember, n) for n in names]

    integral = [ember.bool, *named(_INTEGRAL_DTYPES)]
    floating_or_complex = named(_FLOATING_DTYPES + _COMPLEX_DTYPES)

    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually "
                         f"exclusive, but got noncontiguous={noncontiguous} and "
                         f"memory_format={memory_format}")
    if requires_grad and any(dtype is d for d in integral):
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral "
                         f"dtypes, but got dtype={dtype}")

    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:  # twice as wide, then every other column: distinct values, offset 1
        shape = (*shape[:-1], 2 * shape[-1])

    if dtype is ember.bool:
        low, high = _make_tensor_range(low, high, dtype, lowest=0, highest=2, default_low=0,
                                       default_high=2, kind="integral")
        result = ember.randint(low, high, shape, dtype=dtype, device=device)
    elif any(dtype is d for d in integral):
        info = ember.iinfo(dtype)
        # randint's bounds pass through int64, so int64's maximum itself cannot be drawn
        highest = info.max + (0 if dtype is ember.int64 else 1)
        low, high = _make_tensor_range(low, high, dtype, lowest=info.min, highest=highest,
                                       default_low=-9, default_high=10, kind="integral")
        result = ember.randint(low, high, shape, dtype=dtype, device=device)
    elif any(dtype is d for d in floating_or_complex):
        info = ember.finfo(dtype)
        low, high = _make_tensor_range(low, high, dtype, lowest=info.min, highest=info.max,
                                       default_low=-9, default_high=9, kind="floating")
        result = ember.empty(shape, dtype=dtype, device=device)
        _uniform_random_(ember.view_as_real(result) if dtype.is_complex else result, low, high)
    elif any(dtype is d for d in named(_FLOAT8_DTYPES)):
        info = ember.finfo(dtype)
        low, high = _make_tensor_range(low, high, dtype, lowest=info.min, highest=info.max,
                                       default_low=-9, default_high=9, kind="float8")
        result = ember.empty(shape, dtype=ember.float32, device=device)
        result = _uniform_random_(result, low, high).to(dtype)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by "
                        f"ember.testing.make_tensor().")

    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if any(dtype is d for d in integral) else \
            ember.finfo(dtype).tiny
    if any(dtype is d for d in floating_or_complex):
        result.requires_grad_(requires_grad)
    return result


__all__ += ["make_tensor"]
