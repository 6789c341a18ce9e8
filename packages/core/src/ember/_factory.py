"""Tensor factories: tensor, as_tensor, from_numpy, zeros/ones/full/empty (and ``_like``),
arange, linspace, logspace, eye. Random factories live in ``_random.py``."""

from __future__ import annotations

import numbers

import numpy as np

from . import _dtype
from ._device import device as _device_cls
from ._tensor import CPU, Tensor, _canonical_device, _make
from .backends import backend_of

__all__ = ["tensor", "as_tensor", "from_numpy", "zeros", "ones", "full", "empty",
           "zeros_like", "ones_like", "full_like", "empty_like"]

#: devices pushed by ``with ember.device(...)``
_device_stack: list = []


def resolve_device(device) -> _device_cls:
    if device is None:
        return _device_stack[-1] if _device_stack else CPU
    dev = device if device.__class__ is _device_cls else _device_cls(device)
    return _canonical_device(dev)


def place(host_array: np.ndarray, dev) -> Tensor:
    """A tensor on ``dev`` holding ``host_array`` (NumPy); moves to other backends copy."""
    if dev is CPU:
        return _make(host_array, CPU)
    return _make(backend_of(dev).to_device(host_array, dev.index), dev)


def _infer_np_dtype(data):
    """PyTorch's inference: bool, int64 for integers, default float for floats."""
    flat = data
    while isinstance(flat, (list, tuple)) and flat:
        flat = flat[0]
    return None if flat is None else flat


def _sequence_to_array(data, dt):
    try:
        arr = np.array(data)
    except ValueError as exc:
        raise ValueError(f"expected sequence of equal-length lists: {exc}") from None
    if arr.dtype == object:
        # lists of tensors (0-dim) or mixed
        try:
            arr = np.array([_to_host_scalar(x) for x in np.asarray(data, dtype=object).flat],
                           ).reshape(np.shape(data))
        except Exception:
            raise TypeError(f"Could not infer dtype of {type(data).__name__}") from None
    if dt is None:
        kind = arr.dtype.kind
        if kind == "f":
            arr = arr.astype(_dtype.get_default_dtype().np)
        elif kind in "iu":
            arr = arr.astype(np.int64)
        elif kind == "b":
            pass
        elif kind == "c":
            raise TypeError("complex tensors are not supported by ember")
        else:
            raise TypeError(f"Could not infer dtype of {arr.dtype}")
    return arr


def _to_host_scalar(x):
    if isinstance(x, Tensor):
        return x._host()
    return x


def tensor(data, *, dtype=None, device=None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """A new tensor copying ``data`` (number, nested sequence, array or tensor)."""
    dt = None if dtype is None else _dtype.to_dtype(dtype)
    dev = resolve_device(device)
    if isinstance(data, Tensor):
        arr = data._host().copy()
        if dt is not None:
            arr = arr.astype(dt.np)
        if device is None:
            dev = data._device
    elif isinstance(data, np.ndarray):
        arr = np.array(data, copy=True)
        if arr.dtype.kind == "f" and arr.dtype not in _dtype.FROM_NP:
            arr = arr.astype(np.float64)
        if dt is None:
            _dtype.from_numpy_dtype(arr.dtype)
    elif isinstance(data, (bool, np.bool_)):
        arr = np.array(bool(data))
    elif isinstance(data, numbers.Integral):
        arr = np.array(int(data), dtype=np.int64)
    elif isinstance(data, numbers.Real):
        arr = np.array(float(data), dtype=_dtype.get_default_dtype().np)
    elif isinstance(data, (list, tuple)):
        arr = _sequence_to_array(data, dt)
    elif isinstance(data, complex):
        raise TypeError("complex tensors are not supported by ember")
    elif hasattr(data, "__array__") or hasattr(data, "__dlpack__"):
        arr = np.array(data, copy=True)
    else:
        raise TypeError(f"Could not infer dtype of {type(data).__name__}")
    if dt is not None and arr.dtype != dt.np:
        arr = arr.astype(dt.np)
    t = place(arr, dev)
    if requires_grad:
        t.requires_grad_(True)
    return t


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """``data`` as a tensor, sharing memory with a tensor or NumPy array where possible."""
    dt = None if dtype is None else _dtype.to_dtype(dtype)
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dt) if (device is not None or dt is not None) \
            else data
    if isinstance(data, np.ndarray) and data.dtype in _dtype.FROM_NP:
        dev = resolve_device(device)
        if dev is CPU and (dt is None or dt.np == data.dtype):
            return _make(data, CPU)
        return place(data if dt is None else data.astype(dt.np), dev)
    return tensor(data, dtype=dt, device=device)


asarray = as_tensor


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A CPU tensor sharing ``ndarray``'s memory (writes go both ways)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    _dtype.from_numpy_dtype(ndarray.dtype)
    return _make(ndarray, CPU)


def _size(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    out = []
    for s in size:
        if isinstance(s, Tensor):
            s = s.item()
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"size must be a tuple of ints, but got {type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"[{', '.join(str(int(v)) for v in size)}]")
        out.append(int(s))
    return tuple(out)


def _new(fill, size, dtype, device, requires_grad, kind: str = "f"):
    dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    dev = resolve_device(device)
    shape = _size(size)
    xp = np if dev is CPU else backend_of(dev).xp
    if fill is None:
        arr = xp.empty(shape, dtype=dt.np)
    elif fill == 0:
        arr = xp.zeros(shape, dtype=dt.np)
    elif fill == 1:
        arr = xp.ones(shape, dtype=dt.np)
    else:
        arr = xp.full(shape, fill, dtype=dt.np)
    t = _make(arr, dev)
    if requires_grad:
        t.requires_grad_(True)
    return t


def zeros(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    return _new(0, size, dtype, device, requires_grad)


def ones(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    return _new(1, size, dtype, device, requires_grad)


def empty(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False, memory_format=None) -> Tensor:
    return _new(None, size, dtype, device, requires_grad)


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None,
         requires_grad=False) -> Tensor:
    if dtype is None:
        if isinstance(fill_value, (bool, np.bool_)):
            dtype = _dtype.bool
        elif isinstance(fill_value, numbers.Integral):
            dtype = _dtype.int64
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    return _new(fill_value, (size,) if not isinstance(size, (tuple, list)) else size, dtype,
                device, requires_grad)


def _like(t, dtype, device):
    return (dtype if dtype is not None else t.dtype,
            device if device is not None else t._device)


def zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None) -> Tensor:
    dt, dev = _like(input, dtype, device)
    return _new(0, input._data.shape, dt, dev, requires_grad)


def ones_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None) -> Tensor:
    dt, dev = _like(input, dtype, device)
    return _new(1, input._data.shape, dt, dev, requires_grad)


def empty_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None) -> Tensor:
    dt, dev = _like(input, dtype, device)
    return _new(None, input._data.shape, dt, dev, requires_grad)


def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None) -> Tensor:
    dt, dev = _like(input, dtype, device)
    return _new(fill_value, input._data.shape, dt, dev, requires_grad)
