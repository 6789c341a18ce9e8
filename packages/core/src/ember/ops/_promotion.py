"""Arguments of ops: dims, PyTorch's type promotion of mixed operands, broadcasting.

``coerce`` is the slow path of a binary op (scalars, mixed dtypes, 0-dim CPU tensors on
another device); the fast path (two tensors of one dtype on one device) never comes here.
"""

from __future__ import annotations

import numbers

import numpy as np

from .. import _dtype
from .._device import _device_error, xp_of
from .._tensor import Tensor

# what a binary op takes beside a tensor (an array's error is its own); Python's operators
# give any other operand its turn
_OPERANDS = (Tensor, numbers.Number, np.ndarray, np.generic)

__all__ = ["wrap_dim", "normalize_dims", "coerce", "broadcast_shape", "broadcast_array",
           "check_int_scalar"]

_UINT64_MAX = 0xFFFFFFFFFFFFFFFF
_INT64_MIN = -0x8000000000000000


def check_int_scalar(value: int) -> None:
    """PyTorch's argument parser's refusal of a Python int that is neither an int64 nor a
    uint64 (a ``Scalar`` argument: ``t + 2**70``, ``fill_(2**70)``, ``clamp(max=-2**64)``),
    whatever the tensor's dtype; within [-2**63, 2**64) the op's own range check decides."""
    if value > _UINT64_MAX:
        raise OverflowError("int too big to convert")
    if value < _INT64_MIN:
        raise OverflowError("can't convert negative int to unsigned")

_result_np = _dtype.binary_result_np


def wrap_dim(dim, ndim: int) -> int:
    n = ndim if ndim else 1
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim % n if ndim else 0


def normalize_dims(dim, ndim: int):
    """``dim`` (None, int, or sequence) as a sorted tuple of non-negative axes, or None."""
    if dim is None:
        return None
    if isinstance(dim, (int, np.integer)):
        d = wrap_dim(int(dim), ndim)  # range-checked on 0-dim tensors too ([-1, 0])
        return (d,) if ndim else ()
    dims = tuple(wrap_dim(int(d), ndim) for d in dim)
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"dim {dims[0]} appears multiple times in the list of dims")
    return tuple(sorted(dims)) if ndim else ()


def coerce(input, other, to_float: bool = False):
    """Slow path of a binary op: scalars, mixed dtypes, 0-dim CPU tensors on another device.

    Returns ``(tensor_or_None, tensor_or_None, array_or_scalar, array_or_scalar, device)``
    with arrays already cast to PyTorch's result dtype. ``to_float`` (true division) turns an
    integer tensor paired with an int scalar into the default float dtype first, so that a
    scalar outside the integer dtype's range keeps its value instead of wrapping.
    """
    ta = input if isinstance(input, Tensor) else None
    tb = other if isinstance(other, Tensor) else None
    if ta is None and tb is None:
        raise TypeError(f"expected a Tensor, got {type(input).__name__} and "
                        f"{type(other).__name__}")
    for t, x in ((ta, input), (tb, other)):
        if t is None and not isinstance(x, (numbers.Number, np.generic)):
            raise TypeError(f"unsupported operand type: '{type(x).__name__}'")
    if ta is not None and tb is not None:
        dev = ta._device
        if tb._device is not dev:
            if tb._device.type == "cpu" and tb._data.ndim == 0:
                tb = tb.to(dev)
            elif dev.type == "cpu" and ta._data.ndim == 0:
                dev = tb._device
                ta = ta.to(dev)
            else:
                raise _device_error(ta._device, tb._device)
        ad, bd = ta._data, tb._data
        if ad.dtype is not bd.dtype:
            rt = _result_np(ad, bd)
            # a 0-dim operand may not fit the integer type
            if to_float and rt not in _dtype.INEXACT_NP:
                rt = _dtype.get_default_dtype().np
            if ad.dtype is not rt:
                ad = ad.astype(rt)
            if bd.dtype is not rt:
                bd = bd.astype(rt)
        return ta, tb, ad, bd, dev
    t = ta if ta is not None else tb
    s = other if ta is not None else input
    data = t._data
    if isinstance(s, np.generic):
        s = s.item()
    if isinstance(s, bool):
        pass
    elif isinstance(s, float):
        if data.dtype.kind in "biu":
            data = data.astype(_dtype.get_default_dtype().np)
    elif isinstance(s, int):
        if not _INT64_MIN <= s <= _UINT64_MAX:
            check_int_scalar(s)
        if to_float and data.dtype.kind in "biu":
            data = data.astype(_dtype.get_default_dtype().np)
        elif data.dtype.kind == "b":
            data = data.astype(np.int64)
        elif data.dtype.kind in "iu":
            info = np.iinfo(data.dtype)
            if not info.min <= s <= info.max:  # PyTorch wraps; NumPy 2 would raise
                s = np.array(s).astype(data.dtype).item()
    elif isinstance(s, complex):
        if data.dtype not in _dtype.COMPLEX_NP:  # a complex scalar makes a real tensor complex
            ct = _dtype.result_type(t, s).np
            data = (data.astype(np.float32) if data.dtype is _dtype.BFLOAT16_NP
                    else data).astype(ct)
    if data.dtype is _dtype.CHALF_NP:
        # a number meets a complex32 tensor as a complex32 scalar (rounded to float16, as
        # PyTorch's kernels take it): NumPy would widen the result to complex64
        s = data.dtype.type(s)
    if ta is not None:
        return ta, None, data, s, t._device
    return None, tb, s, data, t._device


def broadcast_shape(a, b):
    """``np.broadcast_shapes`` with PyTorch's error text."""
    try:
        return np.broadcast_shapes(a, b)
    except ValueError:
        pass
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    for i in range(n - 1, -1, -1):
        if pa[i] != pb[i] and pa[i] != 1 and pb[i] != 1:
            raise RuntimeError(f"The size of tensor a ({pa[i]}) must match the size of tensor b "
                               f"({pb[i]}) at non-singleton dimension {i}")
    raise RuntimeError(f"shapes {tuple(a)} and {tuple(b)} are not broadcastable")


def _dtype_category(np_dtype) -> int:
    if np_dtype in _dtype.FLOATING_NP:
        return 2
    return {"b": 0, "u": 1, "i": 1}.get(np_dtype.kind, 3)


def broadcast_array(arr, shape):
    """A read-only broadcast view of ``arr`` with ``shape`` (``np.broadcast_to``, faster).

    ``np.broadcast_to`` costs ~3.7 us per call here; building the strided view directly is
    2.5x cheaper, which matters because every sum/mean backward expands its gradient.
    """
    shape = tuple(shape)
    if arr.shape == shape:
        return arr
    if arr.__class__ is not np.ndarray or not arr.flags.c_contiguous:
        return xp_of(arr).broadcast_to(arr, shape)
    lead = len(shape) - arr.ndim
    if lead < 0:
        raise RuntimeError(f"cannot broadcast shape {arr.shape} to {shape}")
    strides = [0] * lead
    for size, target, st in zip(arr.shape, shape[lead:], arr.strides):
        if size == target:
            strides.append(st)
        elif size == 1:
            strides.append(0)
        else:
            raise RuntimeError(f"The expanded size of the tensor ({target}) must match the "
                               f"existing size ({size}) at non-singleton dimension.")
    out = np.ndarray(shape, arr.dtype, arr, 0, tuple(strides))
    out.flags.writeable = False
    return out
