"""The legacy tensor types: ``ember.FloatTensor``, ``ember.LongTensor``, ... .

As in PyTorch they are not the classes of the tensors they make. Calling one builds an
ordinary ``ember.Tensor`` of its dtype: ``ember.FloatTensor(2, 3)`` (uninitialised, like
``ember.empty``), ``ember.FloatTensor([1, 2])`` (data), ``ember.FloatTensor()`` (no elements),
``ember.FloatTensor(t)`` (an alias of ``t``, which must be float32 already). And
``isinstance(t, ember.FloatTensor)`` asks whether ``t`` is a float32 tensor on the CPU.
``Tensor.type()`` names them and converts to them.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np

from . import _dtype
from ._size import Size
from ._tensor import Tensor

__all__ = ["tensortype", "make_types", "legacy_new", "parse_type", "FloatTensor",
           "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor",
           "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"]

_BY_NAME = {_dtype.legacy_type_name(d): d for d in _dtype.ALL_DTYPES
            if _dtype.legacy_type_name(d)}
_ALL_BY_NAME = {f"{_dtype.scalar_type_name(d)}Tensor": d for d in _dtype.ALL_DTYPES}


class tensortype(type):
    """The metaclass of the legacy tensor types (PyTorch's ``torch.tensortype``)."""

    dtype: _dtype.dtype
    _device_type: str

    def __instancecheck__(cls, obj) -> bool:
        return (isinstance(obj, Tensor) and obj._data.dtype == cls.dtype.np
                and obj._device.type == cls._device_type)

    def __call__(cls, *args, device=None):
        if device is None:
            return legacy_new(args, cls.dtype, cls._device_type)
        from ._device import resolve_device

        device = resolve_device(device)
        if device.type != cls._device_type:
            raise RuntimeError(f"legacy constructor expects device type: {cls._device_type} "
                               f"but device type: {device.type} was passed")
        return legacy_new(args, cls.dtype, device)

    @property
    def is_cuda(cls) -> bool:
        return cls._device_type == "cuda"

    @property
    def is_sparse(cls) -> bool:
        return False

    @property
    def layout(cls):
        from ._layout import strided

        return strided


def make_types(device_type: str, module: str) -> dict:
    """The legacy types of ``device_type`` (``FloatTensor``, ...), named as ``module``'s."""
    return {name: tensortype(name, (), {
        "dtype": dt, "_device_type": device_type, "__module__": module,
        "__doc__": f"The legacy type of {dt} tensors on {device_type}: calling it makes an "
                   "ember.Tensor; isinstance() checks the dtype and device type."})
        for name, dt in _BY_NAME.items()}


_CPU_TYPES = make_types("cpu", "ember")
FloatTensor = _CPU_TYPES["FloatTensor"]
DoubleTensor = _CPU_TYPES["DoubleTensor"]
HalfTensor = _CPU_TYPES["HalfTensor"]
BFloat16Tensor = _CPU_TYPES["BFloat16Tensor"]
LongTensor = _CPU_TYPES["LongTensor"]
IntTensor = _CPU_TYPES["IntTensor"]
ShortTensor = _CPU_TYPES["ShortTensor"]
CharTensor = _CPU_TYPES["CharTensor"]
ByteTensor = _CPU_TYPES["ByteTensor"]
BoolTensor = _CPU_TYPES["BoolTensor"]


def legacy_new(args: tuple, dtype: _dtype.dtype, device=None, *,
               keep_dtype: bool = False) -> Tensor:
    """PyTorch's legacy constructor: ``()`` (no elements), sizes (ints or an ``ember.Size``),
    data (a sequence or NumPy array) or a tensor (an alias; of ``dtype`` unless
    ``keep_dtype``, as ``ember.Tensor(t)`` allows any)."""
    from . import _factory

    if len(args) == 1:
        arg = args[0]
        if isinstance(arg, Tensor):
            return _alias(arg, dtype, device, keep_dtype)
        if isinstance(arg, Size):
            return _factory.empty(arg, dtype=dtype, device=device)
        if not _is_int(arg):
            return _factory.tensor(_check_data(arg), dtype=dtype, device=device)
    return _factory.empty(_check_sizes(args), dtype=dtype, device=device)


def _is_int(x) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, (bool, np.bool_))


def _check_sizes(args: tuple) -> tuple:
    for i, s in enumerate(args):
        if not _is_int(s):
            raise TypeError(f"new(): argument 'size' failed to unpack the object at pos {i + 1} "
                            f"with error \"type must be tuple of ints,but got "
                            f"{type(s).__name__}\"")
    return tuple(int(s) for s in args) or (0,)


def _check_data(data):
    if isinstance(data, str):
        raise TypeError("new(): invalid data type 'str'")
    if not isinstance(data, (Sequence, np.ndarray)):
        raise TypeError(f"new(): data must be a sequence (got {_qualified_name(type(data))})")
    return data


def _alias(t: Tensor, dtype: _dtype.dtype, device, keep_dtype: bool) -> Tensor:
    from ._device import resolve_device

    want_type = t._device.type if device is None else resolve_device(device).type
    if t._device.type != want_type or (not keep_dtype and t.dtype is not dtype):
        raise TypeError(f"expected {_options(dtype, want_type)} (got "
                        f"{_options(t.dtype, t._device.type)})")
    return t[...]  # a view sharing data and version counter (AliasBackward0)


def _options(dtype: _dtype.dtype, device_type: str) -> str:
    return (f"TensorOptions(dtype={_dtype.options_type_name(dtype)}, device={device_type}, "
            "layout=Strided, "
            "requires_grad=false (default), pinned_memory=false (default), "
            "memory_format=(nullopt))")


def _qualified_name(cls: type) -> str:
    module = cls.__module__
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


def parse_type(spec) -> tuple[str, _dtype.dtype]:
    """``(device type, dtype)`` of a legacy type or its name (``'ember.cuda.FloatTensor'``;
    PyTorch's ``'torch.FloatTensor'`` too); ``ember.Tensor`` is the default dtype on the CPU.
    Anything else raises PyTorch's ``ValueError``."""
    if spec is Tensor:
        return "cpu", _dtype.get_default_dtype()
    if isinstance(spec, tensortype):
        return spec._device_type, spec.dtype
    if isinstance(spec, str):
        name = spec
    elif isinstance(spec, type):
        name = _qualified_name(spec)
    else:
        raise TypeError("dtype must be a type, str, or dtype object")
    parts = name.split(".")
    if 2 <= len(parts) <= 3 and parts[0] in ("ember", "torch"):
        # names of dtypes without a legacy class too (``'torch.ComplexFloatTensor'``)
        dt = _BY_NAME.get(parts[-1]) or _ALL_BY_NAME.get(parts[-1])
        device_type = parts[1] if len(parts) == 3 else "cpu"
        if dt is not None and (device_type == "cpu" or _is_device_type(device_type)):
            return device_type, dt
    raise ValueError(f"invalid type: '{name}'")


def _is_device_type(name: str) -> bool:
    from .backends import available_types

    return name == "cuda" or name in available_types()
