"""Tensor factories: tensor, as_tensor/asarray, from_numpy, zeros/ones/full/empty (and
``_like``), arange, range, linspace, logspace, eye, empty_strided, and the ``Tensor.new_*``
methods. Random factories live in ``_random.py``.

Every factory takes PyTorch's arguments (``dtype``, ``device``, ``requires_grad``, ``out``)
and infers dtypes as PyTorch does: bool, int64 for integers, the default float for floats.
"""

from __future__ import annotations

import builtins
import inspect
import math
import numbers
import operator
import warnings

import numpy as np

from . import _dtype, _settings
from . import _memory_format as _mf
from ._data_inference import data_to_array, np_to_dtype
from ._device import canonical_device, resolve_device, xp_of
from ._device import device as _device_cls
from ._format import shape_str
from ._front import front as numpy_names  # PyTorch's NumPy keyword names (x=, axis=)
from ._layout import strided
from ._tensor import CPU, Tensor, _make
from ._tensor_str import set_printoptions
from .backends import backend_of
from .ops._inplace import write_out
from .ops.registry import register_method

__all__ = ["tensor", "as_tensor", "asarray", "from_numpy", "zeros", "ones", "full", "empty",
           "zeros_like", "ones_like", "full_like", "empty_like", "empty_strided", "arange",
           "range", "linspace", "logspace", "eye", "set_printoptions", "from_dlpack"]


# -- shared helpers ---------------------------------------------------------------------------

def place(host_array: np.ndarray, dev) -> Tensor:
    """A tensor on ``dev`` holding ``host_array`` (NumPy); moves to other backends copy."""
    if dev is CPU:
        return _make(host_array, CPU)
    return _make(backend_of(dev).to_device(host_array, dev.index), dev)


def finish(t: Tensor, requires_grad: bool, out: Tensor | None = None,
           shared_ok: bool = False) -> Tensor:
    """Apply a factory's ``requires_grad=`` and ``out=`` to its freshly made result (``out``
    of another shape is resized silently, as PyTorch's factories do; ``shared_ok``: an
    expanded ``out`` is written through, as PyTorch's fills do)."""
    if requires_grad:
        if t._data.dtype not in _dtype.INEXACT_NP:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        t.requires_grad = True
    if out is not None:
        if isinstance(out, Tensor) and out._data.shape != t._data.shape and out._data.size:
            out.resize_(0)  # a factory's out= is resized without the deprecation warning
        return write_out(out, t, shared_ok=shared_ok)
    return t


def out_dtype(out, dtype, name: str | None = None):
    """A factory's dtype when ``out=`` is given: ``out``'s unless ``dtype`` is, which must
    then be ``out``'s (PyTorch's error otherwise); ``name``: the factory a wrong type's
    error names."""
    if out is None or not isinstance(out, Tensor):
        return dtype
    if dtype is None:
        return out.dtype
    dt = _dtype.to_dtype(dtype, name)
    if dt is not out.dtype:
        raise RuntimeError(f"dtype {_dtype.scalar_type_name(dt.np)} does not match dtype of out "
                           f"parameter ({_dtype.scalar_type_name(out._data.dtype)})")
    return dt


def tp_name(x) -> str:
    """The type name PyTorch's argument errors print (C's ``tp_name``): ``float``,
    ``Tensor``, ``numpy.ndarray``, ``numpy.float64``."""
    t = type(x)
    if t.__module__ == "builtins" or t.__flags__ & (1 << 9):  # Py_TPFLAGS_HEAPTYPE
        return t.__name__
    return f"{t.__module__}.{t.__name__}"


def _is_int_like(s) -> builtins.bool:
    """What PyTorch's argument parser takes as one int of a size: an int (not a bool), a
    NumPy integer, a one-element integer or bool tensor, an object with ``__index__``."""
    if type(s) is int:
        return True
    if isinstance(s, (builtins.bool, np.bool_)):
        return False
    if isinstance(s, Tensor):
        return s._data.size == 1 and s._data.dtype.kind in "iub"
    if isinstance(s, (numbers.Integral, np.integer)):
        return True
    try:  # what PyNumber_Index takes: a 0-dim integer array, a SymInt...
        operator.index(s)
    except Exception:
        return False
    return True


def check_size(size, name: str = "", position: int = 1, what: str = "size") -> tuple:
    """A size given positionally (``size`` is the tuple of positional arguments, as varargs
    or as one tuple/list/``ember.Size``), with PyTorch's argument errors and checks.
    ``position``: the argument's position in the messages."""
    if len(size) == 1:
        s0 = size[0]
        if isinstance(s0, (tuple, list)):
            if s0 and not _is_int_like(s0[0]):
                raise TypeError(f"{name}(): argument '{what}' (position {position}) must be "
                                f"tuple of ints, but found element of type {tp_name(s0[0])} "
                                "at pos 0")
            size = s0
        elif not _is_int_like(s0):
            raise TypeError(f"{name}(): argument '{what}' (position {position}) must be tuple "
                            f"of ints, not {tp_name(s0)}")
    elif size and not _is_int_like(size[0]):
        raise TypeError(f"{name}() takes 1 positional argument but {len(size)} were given")
    return _unpack_size(size, name, what)


def _unpack_size(size, name: str, what: str = "size") -> tuple:
    out = []
    for i, s in enumerate(size):
        if type(s) is not int:
            if isinstance(s, Tensor) and _is_int_like(s):
                if s._data.dtype.kind == "b":
                    raise RuntimeError("Expected scalar.isIntegral( false) to be true, but got "
                                       "false.  (Could this error message be improved?  If "
                                       "so, please report an enhancement request to "
                                       "PyTorch.)")
                s = s.item()
            elif i and isinstance(s, builtins.bool):
                s = int(s)  # past the first element, PyTorch's unpacking takes a bool
            elif not _is_int_like(s):
                raise _size_type_error(name, i, f"type must be tuple of ints,but got "
                                                f"{tp_name(s)}", what)
            s = int(s)
        if not _INT64_MIN <= s <= _INT64_MAX:
            raise _size_type_error(name, i, "Overflow when unpacking long long", what)
        out.append(s)
    for s in out:
        if s < 0:
            if name == "zeros":
                raise RuntimeError("zeros: Dimension size must be non-negative.")
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"[{shape_str(out)}]")
    return tuple(out)


def size_param(size, name: str, position: int = 1, what: str = "size") -> tuple:
    """A size argument that must be one tuple or list (``full``, ``randint``...)."""
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"{name}(): argument '{what}' (position {position}) must be tuple of "
                        f"ints, not {tp_name(size)}")
    return check_size((size,), name, position, what)


def _size_keyword(size, name: str) -> tuple:
    """``size=`` given by keyword: a tuple or list only (PyTorch's error otherwise)."""
    if not isinstance(size, (tuple, list)) or (size and not _is_int_like(size[0])):
        raise TypeError(f"{name}(): argument 'size' must be tuple of ints, not "
                        f"{tp_name(size)}")
    return _unpack_size(size, name)


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _size_type_error(name: str, i: int, why: str, what: str = "size") -> TypeError:
    what = f"{name}(): argument '{what}'" if name else f"argument '{what}'"
    return TypeError(f"{what} failed to unpack the object at pos {i + 1} with error \"{why}\"")


def storage_nbytes(shape, itemsize: int) -> int:
    """The bytes of a new contiguous tensor of ``shape``, with PyTorch's error when the count
    overflows: its element count in unsigned 64 bits at any step, or its bytes in int64."""
    numel, overflowed = 1, False
    for s in shape:
        numel *= s
        overflowed = overflowed or numel >= 2**64
    nbytes = numel * itemsize
    if overflowed or nbytes > _INT64_MAX:
        raise RuntimeError("Storage size calculation overflowed with sizes=["
                           f"{shape_str(shape)}]")
    return nbytes


def raise_allocation_error(exc: Exception, shape, itemsize: int, dev) -> None:
    """Re-word a failed allocation of ``shape`` as PyTorch does: an overflowing size, or
    memory that runs out, is a RuntimeError naming the sizes or the bytes. Returns when
    ``exc`` (NumPy's or CuPy's ValueError/MemoryError) has another cause; the caller then
    re-raises it."""
    nbytes = storage_nbytes(shape, itemsize)
    if isinstance(exc, MemoryError):
        where = "DefaultCPUAllocator" if dev.type == "cpu" else f"{dev} allocator"
        raise RuntimeError(f"{where}: can't allocate memory: you tried to allocate {nbytes} "
                           "bytes.") from None


def allocating(make, shape, itemsize: int, dev, *args):
    """``make(*args)``, a new array of ``shape``; a failed allocation is reported as PyTorch
    does (``raise_allocation_error``)."""
    if dev.type != "cpu":  # CuPy's size count wraps where NumPy's refuses
        storage_nbytes(shape, itemsize)
    try:
        return make(*args)
    except (MemoryError, ValueError) as exc:
        raise_allocation_error(exc, shape, itemsize, dev)
        raise


def _dtype_or_default(dtype, name: str | None = None) -> _dtype.dtype:
    """``dtype`` (``name``: the factory its type error names), or the default float."""
    return _dtype.get_default_dtype() if dtype is None else _dtype.to_dtype(dtype, name)


#: C++ type names in PyTorch's "cannot be converted ... without overflow" errors


def _check_fill(value, dt: _dtype.dtype) -> None:
    """PyTorch's overflow check when a Python scalar is converted to ``dt``."""
    if value.__class__ is int:
        from .ops._promotion import check_int_scalar

        check_int_scalar(value)
    if dt is _dtype.bool or isinstance(value, (builtins.bool, np.bool_)):
        return
    if dt.is_complex or isinstance(value, complex):
        if isinstance(value, complex) and not dt.is_complex and value.imag:
            raise RuntimeError(f"value cannot be converted to type {_dtype.c_type_name(dt)} "
                               "without overflow")
        if dt.is_complex:  # each part within the part type's range (float16 for complex32)
            big = float(_dtype.np_finfo(dt.np).max)
            z = complex(value)
            if any(math.isfinite(p) and abs(p) > big for p in (z.real, z.imag)):
                raise RuntimeError(f"value cannot be converted to type "
                                   f"{_dtype.c_type_name(dt)} without overflow")
        return
    if dt.is_floating_point:
        if math.isfinite(value) and abs(value) > float(_dtype.np_finfo(dt.np).max):
            raise RuntimeError(f"value cannot be converted to type {_dtype.c_type_name(dt)} "
                               "without overflow")
        return
    info = np.iinfo(dt.np)
    lo = -info.max if info.min == 0 else info.min  # unsigned types accept wrapped negatives
    if not (math.isfinite(value) and lo <= value <= info.max):
        raise RuntimeError(f"value cannot be converted to type {_dtype.c_type_name(dt)} without "
                           "overflow")


def _scalar_value(x):
    """A Python number from a Python/NumPy scalar or a one-element tensor."""
    if isinstance(x, Tensor):
        return x.item()
    if isinstance(x, np.generic):
        return x.item()
    return x


def check_number(x, name: str, position: int, what: str) -> None:
    """PyTorch's check of a ``Number`` argument: a Python or NumPy number or a 0-dim
    tensor."""
    if type(x) in (int, float):
        return
    if isinstance(x, Tensor):
        ok = x._data.ndim == 0
    else:
        ok = isinstance(x, (numbers.Number, np.number, np.bool_))
    if not ok:
        raise TypeError(f"{name}(): argument '{what}' (position {position}) must be Number, "
                        f"not {tp_name(x)}")


def _scalar_dtype(x) -> _dtype.dtype:
    """The dtype PyTorch gives a fill value: bool, int64, or the default float (a NumPy bool
    reads as a float, as PyTorch's argument parser takes it)."""
    if isinstance(x, np.bool_):
        return _dtype.get_default_dtype()
    x = _scalar_value(x)
    if isinstance(x, builtins.bool):
        return _dtype.bool
    if isinstance(x, numbers.Integral):
        return _dtype.int64
    if isinstance(x, numbers.Real):
        return _dtype.get_default_dtype()
    if isinstance(x, numbers.Complex):
        return _dtype.default_complex_dtype()
    raise TypeError(f"expected a number, got {type(x).__name__}")


def tensor(data, *, dtype=None, device=None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """A new tensor copying ``data`` (number, nested sequence, array or tensor).

    The dtype is inferred as PyTorch does: bool, int64 for Python ints, the default float for
    Python floats, the array's or tensor's own dtype otherwise.
    """
    dt = None if dtype is None else _dtype.to_dtype(dtype, "tensor")
    if isinstance(data, Tensor):
        return _copy_constructed(data, dt, device, requires_grad, "ember.tensor")
    on_device = _wrap_device_array(data)
    if on_device is not None:
        return finish(_copy_tensor(on_device, dt, device), requires_grad)
    arr = data_to_array(data, dt)
    return finish(place(arr, resolve_device(device)), requires_grad)


def _copy_constructed(src: Tensor, dt, device, requires_grad: bool, factory: str) -> Tensor:
    """``factory(src)`` of a tensor ``src``: a detached copy, with PyTorch's warning."""
    warnings.warn("To copy construct from a tensor, it is recommended to use "
                  "sourceTensor.detach().clone() or sourceTensor.detach().clone()."
                  f"requires_grad_(True), rather than {factory}(sourceTensor).",
                  UserWarning, stacklevel=3)
    return finish(_copy_tensor(src, dt, device), requires_grad)


def _copy_tensor(src: Tensor, dt, device) -> Tensor:
    """A detached copy of ``src``, converted to ``dt`` and moved to ``device`` (None: keep)."""
    dev = src._device if device is None else resolve_device(device)
    data = src._data
    if dev is src._device:
        return _make(data.astype(data.dtype if dt is None else dt.np, copy=True), dev)
    host = backend_of(src._device).to_host(data)
    return place(host if dt is None else host.astype(dt.np), dev)


def _wrap_device_array(data) -> Tensor | None:
    """A CuPy array (``__cuda_array_interface__``) as a tensor sharing its memory on its
    CUDA device; None for anything else."""
    if not hasattr(data, "__cuda_array_interface__"):
        return None
    dev = canonical_device(_device_cls("cuda", int(data.device.id)))
    backend_of(dev)  # PyTorch-style error naming the CUDA extra when it is missing
    if data.dtype not in _dtype.FROM_NP:
        np_to_dtype(np.empty(0, dtype=data.dtype))
    return _make(data, dev)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """``data`` as a tensor, sharing memory with a tensor, NumPy or CuPy array where possible."""
    dt = None if dtype is None else _dtype.to_dtype(dtype, "as_tensor")
    wrapped = _wrap_device_array(data)
    if wrapped is not None:
        data = wrapped
    if isinstance(data, Tensor):
        if device is None and dt is None:
            return data
        return data.to(device=resolve_device(device) if device is not None else None, dtype=dt)
    if isinstance(data, np.ndarray):
        src = np_to_dtype(data)
        dev = resolve_device(device)
        if dev is CPU and (dt is None or dt is src):
            if not data.flags.writeable:
                warn_not_writable()
            return _make(data, CPU)
        return place(data if dt is None or dt is src else data.astype(dt.np), dev)
    return tensor(data, dtype=dt, device=device)


def asarray(obj, *, dtype=None, device=None, copy: bool | None = None,
            requires_grad: bool | None = None) -> Tensor:
    """``obj`` as a tensor, as ``torch.asarray``: a tensor, NumPy array or buffer is shared
    (``obj`` itself for a tensor) unless ``copy=True`` or ``dtype``/``device`` need a copy
    (``copy=False`` then raises); a scalar or sequence is copied (``copy=False`` raises).

    ``requires_grad``: ``None`` keeps ``obj``'s (and its history); ``True`` or ``False`` is
    set on the result, in place when the result is ``obj`` itself (a non-leaf is detached
    instead), as PyTorch does."""
    dt = None if dtype is None else _dtype.to_dtype(dtype, "asarray")
    src, readonly = _aliasable(obj, dt, copy)
    if src is None:
        if copy is False:
            raise ValueError("can't alias arbitrary sequence into a tensor.")
        return finish(tensor(obj, dtype=dt, device=device), builtins.bool(requires_grad))
    if isinstance(obj, np.generic):
        copy = None if copy else copy  # already a fresh tensor
    dev = None if device is None else resolve_device(device)
    wrong_device = dev is not None and dev is not src._device
    wrong_dtype = dt is not None and dt is not src.dtype
    if copy or (copy is None and (wrong_device or wrong_dtype)):
        t = src.to(device=dev, dtype=dt, copy=True) if wrong_device or wrong_dtype \
            else src.clone()
    else:
        if wrong_device:
            raise ValueError(f"can't alias tensor from device '{src.device}' to '{dev}'.")
        if wrong_dtype:
            raise ValueError(f"can't alias tensor with dtype "
                             f"'{_dtype.scalar_type_name(src._data.dtype)}' into dtype "
                             f"'{_dtype.scalar_type_name(dt.np)}'.")
        t = src
        if readonly:
            warn_not_writable()
    if requires_grad is None:
        if t is obj and copy is None and t.requires_grad and t.grad_fn is None:
            _warn_asarray_requires_grad()
    elif requires_grad:
        if not t.requires_grad:
            finish(t, True)
    elif t.requires_grad:
        if t.grad_fn is None:
            t.requires_grad_(False)
        else:
            t = t.detach()
    return t


def _aliasable(obj, dt, copy):
    """``(tensor, read_only)`` for what ``asarray`` may share: a tensor, a NumPy array, a
    CuPy array, a buffer (read as ``dt``); a NumPy scalar as a fresh tensor. ``(None, False)``
    for a scalar or sequence."""
    if isinstance(obj, Tensor):
        return obj, False
    if isinstance(obj, np.ndarray):
        np_to_dtype(obj)
        return _make(obj, CPU), not obj.flags.writeable
    if isinstance(obj, np.generic):
        if copy is False:
            raise RuntimeError("can't alias NumPy scalars. Either remove copy=False or "
                               "transform it in a ndarray. ")
        return _make(np.array(obj), CPU), False
    wrapped = _wrap_device_array(obj)
    if wrapped is not None:
        return wrapped, False
    if hasattr(obj, "__dlpack__"):
        return from_dlpack(obj), False
    if hasattr(obj, "__buffer__") or isinstance(obj, (bytes, bytearray, memoryview)):
        from ._creation import frombuffer

        return frombuffer(obj, dtype=_dtype_or_default(dt)), False  # (it warns if read-only)
    return None, False


_ONCE = {"asarray requires_grad": False, "not writable": False}


def _warn_asarray_requires_grad() -> None:
    if not _ONCE["asarray requires_grad"]:
        _ONCE["asarray requires_grad"] = True
        warnings.warn("ember.asarray: unspecified requires_grad now defaults to "
                      "obj.requires_grad instead of False. Pass requires_grad=False explicitly "
                      "to get the old behavior and silence this warning.", UserWarning,
                      stacklevel=3)


def warn_not_writable() -> None:
    """PyTorch's warning, once a program, that a shared NumPy array is read-only."""
    if not _ONCE["not writable"]:
        _ONCE["not writable"] = True
        warnings.warn("The given NumPy array is not writable, and PyTorch does not support "
                      "non-writable tensors. This means writing to this tensor will result in "
                      "undefined behavior. You may want to copy the array to protect its data "
                      "or make it writable before converting it to a tensor. This type of "
                      "warning will be suppressed for the rest of this program.", UserWarning,
                      stacklevel=3)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A CPU tensor sharing ``ndarray``'s memory (writes go both ways)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    np_to_dtype(ndarray)
    if not ndarray.flags.writeable:
        warn_not_writable()
    return _make(ndarray, CPU)


class _Capsule:
    """Adapts a bare DLPack capsule of host memory to the ``__dlpack__`` protocol (what
    ``np.from_dlpack`` reads)."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self) -> tuple:
        return (1, 0)


_INVALID_CAPSULE = ("from_dlpack received an invalid capsule. Note that DLTensor capsules can "
                    "be consumed only once, so you might have already constructed a tensor "
                    "from it once.")


def _capsule_device(capsule) -> tuple:
    """``(device type, index, unversioned)`` of the tensor in a DLPack capsule not yet
    consumed, read from its ``DLTensor`` (PyTorch's error when it is not such a capsule)."""
    import ctypes
    import datetime

    if type(capsule) is not type(datetime.datetime_CAPI):  # the PyCapsule type
        raise RuntimeError(_INVALID_CAPSULE)
    get_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(
        ("PyCapsule_GetName", ctypes.pythonapi))
    name = get_name(capsule)
    ptr_size = ctypes.sizeof(ctypes.c_void_p)
    if name == b"dltensor":  # DLManagedTensor: the DLTensor first
        offset = 0
    elif name == b"dltensor_versioned":  # DLManagedTensorVersioned: version, ctx, deleter, flags
        offset = 8 + 2 * ptr_size + 8
    else:  # "used_dltensor" (consumed) or not DLPack at all
        raise RuntimeError(_INVALID_CAPSULE)
    get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
        ("PyCapsule_GetPointer", ctypes.pythonapi))
    managed = get_pointer(capsule, name)
    # DLTensor: void *data, then DLDevice {int32 device_type, int32 device_id}
    device = (ctypes.c_int32 * 2).from_address(managed + offset + ptr_size)
    return int(device[0]), int(device[1]), offset == 0


class _WritableView:
    """The array interface of a read-only array with the read-only mark dropped (and the
    array kept alive): ``np.asarray`` of it is a writable array over the same memory."""

    def __init__(self, arr: np.ndarray):
        self.keep = arr
        interface = dict(arr.__array_interface__)
        interface["data"] = (interface["data"][0], False)
        self.__array_interface__ = interface


def _import_dlpack(ext, kind: int, index: int, legacy: bool = False) -> Tensor:
    """A tensor over the memory of ``ext`` (a ``__dlpack__`` object or a raw capsule, an
    unversioned one when ``legacy``) that lives on DLPack device ``(kind, index)``."""
    if kind == 1:  # kDLCPU
        arr = np.from_dlpack(ext if hasattr(ext, "__dlpack__") else _Capsule(ext))
        if legacy and not arr.flags.writeable:
            # NumPy marks what an unversioned capsule holds read-only (that DLPack cannot say
            # whether it is); PyTorch's from_dlpack writes through, and so does Ember's. (A
            # read-only NumPy array refuses to export such a capsule.)
            arr = np.asarray(_WritableView(arr)).view(arr.dtype)
        np_to_dtype(arr)
        return _make(arr, CPU)
    if kind in (2, 13):  # kDLCUDA, kDLCUDAManaged: through the CUDA backend (CuPy)
        dev = canonical_device(_device_cls("cuda", int(index)))
        # cupy.from_dlpack takes a raw capsule too (its documented backward compatibility)
        arr = backend_of(dev).xp.from_dlpack(ext)
        if arr.dtype not in _dtype.FROM_NP:
            np_to_dtype(np.empty(0, dtype=arr.dtype))
        return _make(arr, dev)
    raise RuntimeError(f"from_dlpack: unsupported DLPack device type {kind}")


def from_dlpack(ext_tensor, *, device=None, copy=None) -> Tensor:
    """A tensor sharing the memory of ``ext_tensor`` without a copy: any object with
    ``__dlpack__`` (a NumPy array, a torch tensor, a CuPy array), or a DLPack capsule (from
    ``ember.utils.dlpack.to_dlpack``, ``torch.utils.dlpack.to_dlpack``, ``__dlpack__()``),
    which is consumed: import a capsule once.

    ``device``: where the result goes (a copy when that is not where the data is);
    ``copy``: ``True`` always copies, ``False`` refuses to (an error when ``device`` asks for
    a move), ``None`` copies only when it must. Neither is accepted with a capsule.
    """
    if isinstance(ext_tensor, Tensor):
        t = ext_tensor
    elif hasattr(ext_tensor, "__dlpack__"):
        kind, index = ext_tensor.__dlpack_device__()
        t = _import_dlpack(ext_tensor, kind, index)
    else:
        if device is not None or copy is not None:
            raise AssertionError("device and copy kwargs not supported when ext_tensor is "
                                 "already a DLPack capsule.")
        kind, index, legacy = _capsule_device(ext_tensor)
        return _import_dlpack(ext_tensor, kind, index, legacy)
    if device is not None:
        target = resolve_device(device)
        if target != t.device:
            if copy is False:
                raise ValueError(f"cannot move DLPack tensor from device {t.device} to "
                                 f"{target} without copying. Set copy=None or copy=True.")
            return t.detach().to(target)
    if copy:
        return t.detach().clone()
    return t


# -- filled tensors ---------------------------------------------------------------------------

def _sparse_target(layout, out, name: str):
    """The sparse layout a factory builds: ``layout=``'s (checked: a TypeError for what is not
    a layout), else a sparse ``out=`` tensor's; None for a dense result."""
    lay = sparse_layout(layout, name)
    return out._layout if lay is None and _sparse_out(out) is not None else lay


def sparse_layout(layout, name: str):
    """A factory's ``layout=``: the sparse layout asked for, or None for a dense result (a
    TypeError for what is not a layout)."""
    if layout is None or layout is strided:
        return None
    from .sparse import _factories

    return _factories.check_layout(layout, name)


def refuse_layout(layout, name: str, device=None, dtype=None, size=(0,)) -> None:
    """A factory with no sparse form given ``layout=``: PyTorch's error for a sparse layout
    (``ember.sparse._factories.refuse``), a TypeError for what is not a layout."""
    lay = sparse_layout(layout, name)
    if lay is not None:
        from .sparse import _factories

        raise _factories.refuse(name, lay, resolve_device(device), dtype=dtype, size=size)


def like_sparse(name: str, input, layout, dt, dev, requires_grad: bool, memory_format, fill):
    """A ``*_like`` factory's sparse result (``ember.sparse._factories.like``), or None where
    its result is dense; ``fill(shape)``: the dense values a compressed pattern takes."""
    if layout is None and (input.__class__ is Tensor
                           or getattr(input, "_layout", strided) is strided):
        return None  # (a Parameter, a subclass: dense, no import)
    from .sparse import _factories

    return _factories.like(name, input, layout, dt, dev, requires_grad, memory_format, fill)


def like_order(input, memory_format, name: str):
    """The axis order of a ``*_like`` factory's dense result (None: C order; a sparse input's
    dense result is C-ordered)."""
    if getattr(input, "_layout", strided) is not strided:
        return None
    return _mf.like_order(input._data, memory_format, name)


def _sparse_out(out):
    """``out`` where it is a sparse tensor (its factory result is taken over), else None."""
    return out if out is not None and getattr(out, "_layout", strided) is not strided else None


_ZERO, _ONE = object(), object()


def size_args(args, size, name: str) -> tuple:
    """A factory's size from varargs or the ``size=`` keyword (an error when neither)."""
    if args:
        if size is not None:
            raise TypeError(f"{name}() got multiple values for argument 'size'")
        return check_size(args, name)
    if size is None:
        raise TypeError(f'{name}() missing 1 required positional arguments: "size"')
    return _size_keyword(size, name)


def _filled(fill, shape: tuple, dt: _dtype.dtype, dev, requires_grad, out=None,
            order=None) -> Tensor:
    """A new tensor of ``shape`` holding ``fill``; laid out in ``order`` (a memory format's
    axes, outermost first) when given, else C-contiguous."""
    xp = xp_of(dev)
    alloc_shape = shape if order is None else tuple(shape[d] for d in order)
    if dev is not CPU:
        backend_of(dev).check_dtype(dt.np)
        # NumPy refuses an overflowing size; CuPy's count wraps and allocates too little
        storage_nbytes(shape, dt.itemsize)
    try:
        if fill is None:
            arr = xp.empty(alloc_shape, dtype=dt.np)
            if _settings._deterministic["mode"]:  # (filled: utils.deterministic)
                value = _settings.fill_value_of_uninitialized(dt.np)
                if value is not None:
                    arr.fill(value)
        elif fill is _ZERO:
            arr = xp.zeros(alloc_shape, dtype=dt.np)
        elif fill is _ONE:
            arr = xp.ones(alloc_shape, dtype=dt.np)
        else:  # through NumPy's cast: PyTorch wraps -1 into uint8 and truncates 1.5 into ints
            with np.errstate(over="ignore", invalid="ignore"):
                arr = xp.full(alloc_shape, np.array(fill).astype(dt.np)[()], dtype=dt.np)
    except (MemoryError, ValueError) as exc:
        raise_allocation_error(exc, shape, dt.itemsize, dev)
        raise
    if order is not None:
        arr = arr.transpose(_mf.inverse(order))
    return finish(_make(arr, dev), requires_grad, out, shared_ok=True)  # (fills)


def zeros(*args, size=None, out=None, dtype=None, layout=None, device=None,
          requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A tensor of zeros of the given size (varargs, a tuple/list, or ``ember.Size``);
    ``layout=ember.sparse_coo`` (``sparse_csr``, ``sparse_csc``) makes a sparse tensor that
    stores no element (``ember.sparse._factories``)."""
    return _fill_factory("zeros", _ZERO, size_args(args, size, "zeros"),
                         _dtype_or_default(out_dtype(out, dtype), "zeros"), out, layout, device,
                         requires_grad)


def _fill_factory(name: str, fill, shape: tuple, dt: _dtype.dtype, out, layout, device,
                  requires_grad: bool, order=None) -> Tensor:
    """``zeros``/``ones``/``empty``/``full``: the dense fill, or, with a sparse ``layout=`` or
    ``out=``, the sparse factory's result (``ember.sparse._factories.make``)."""
    dev = resolve_device(device)
    if layout is not None or out is not None:
        lay = _sparse_target(layout, out, name)
        if lay is not None:
            from .sparse import _factories

            return _factories.make(name, lay, shape, dt, dev, requires_grad,
                                   lambda: _filled(fill, shape, dt, dev, False),
                                   _sparse_out(out))
    return _filled(fill, shape, dt, dev, requires_grad, out, order)


def ones(*args, size=None, out=None, dtype=None, layout=None, device=None,
         requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A tensor of ones of the given size."""
    return _fill_factory("ones", _ONE, size_args(args, size, "ones"),
                         _dtype_or_default(out_dtype(out, dtype), "ones"), out, layout, device,
                         requires_grad)


def empty(*args, size=None, out=None, dtype=None, layout=None, device=None,
          requires_grad: bool = False, pin_memory: bool = False, memory_format=None) -> Tensor:
    """An uninitialised tensor of the given size; ``memory_format=ember.channels_last`` lays
    a 4-d one out NHWC in memory (``channels_last_3d``: 5-d, NDHWC)."""
    shape = size_args(args, size, "empty")
    order = None if memory_format is None else \
        _mf.format_order(_mf.check(memory_format, "empty"), len(shape))
    return _fill_factory("empty", None, shape, _dtype_or_default(out_dtype(out, dtype), "empty"),
                         out, layout, device, requires_grad, order)


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None,
         requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A tensor of ``size`` filled with ``fill_value``; the dtype follows the value (bool,
    int64, or the default float) unless given."""
    shape = size_param(size, "full")
    check_number(fill_value, "full", 2, "fill_value")
    dtype = out_dtype(out, dtype)
    dt = _scalar_dtype(fill_value) if dtype is None else _dtype.to_dtype(dtype, "full")
    value = _scalar_value(fill_value)
    _check_fill(value, dt)
    return _fill_factory("full", value, shape, dt, out, layout, device, requires_grad)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None,
                  requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor with the given ``size`` and ``stride`` (in elements)."""
    shape = size_param(size, "empty_strided")
    refuse_layout(layout, "empty_strided", device)
    strides = _strides(stride, "empty_strided")
    if len(strides) != len(shape):
        raise RuntimeError(f"dimensionality of sizes ({len(shape)}) must match dimensionality "
                           f"of strides ({len(strides)})")
    if any(st < 0 for st in strides):
        raise RuntimeError(f"Storage size calculation overflowed with sizes=[{shape_str(shape)}]"
                           f" and strides=[{shape_str(strides)}]")
    dt = _dtype_or_default(dtype)
    dev = resolve_device(device)
    xp = xp_of(dev)
    extent = 1 + builtins.sum((n - 1) * s for n, s in zip(shape, strides)) \
        if all(shape) else 0
    buf = allocating(xp.empty, (extent,), dt.itemsize, dev, extent, dt.np)
    if _settings._deterministic["mode"]:
        value = _settings.fill_value_of_uninitialized(dt.np)
        if value is not None:
            buf.fill(value)
    arr = _dtype.as_strided(xp, buf, shape, tuple(s * dt.itemsize for s in strides))
    return finish(_make(arr, dev), requires_grad)


def _strides(stride, name: str) -> tuple:
    """A ``stride`` argument (position 2): a tuple or list of ints, negatives allowed."""
    if not isinstance(stride, (tuple, list)):
        raise TypeError(f"{name}(): argument 'stride' (position 2) must be tuple of ints, not "
                        f"{tp_name(stride)}")
    if stride and not _is_int_like(stride[0]):
        raise TypeError(f"{name}(): argument 'stride' (position 2) must be tuple of ints, but "
                        f"found element of type {tp_name(stride[0])} at pos 0")
    for i, st in enumerate(stride):
        if not _is_int_like(st):
            raise _size_type_error(name, i, f"type must be tuple of ints,but got {tp_name(st)}",
                                   "stride")
    return tuple(int(st) for st in stride)


def _like(input, dtype, device, name: str = "input"):
    """``(dtype, device)`` of a new tensor made like ``input`` (``*_like``, ``new_*``): its
    own unless given."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{tp_name(input)}")
    return (input.dtype if dtype is None else
            _dtype.to_dtype(dtype, None if name == "input" else name),
            input._device if device is None else resolve_device(device))


# The ``*_like`` factories lay their result out as ``memory_format`` says; the default,
# ``ember.preserve_format``, keeps ``input``'s layout (a channels-last input gives a
# channels-last result), as PyTorch does. ``pin_memory`` is accepted as by ``ember.zeros``
# (host memory is not page-locked: NumPy arrays have no such allocator).

@numpy_names
def zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad: bool = False,
               memory_format=_mf.preserve_format, pin_memory: bool = False) -> Tensor:
    """Zeros with ``input``'s shape and layout (and dtype/device unless given)."""
    dt, dev = _like(input, dtype, device, "zeros_like")
    return _filled_like("zeros_like", _ZERO, input, dt, dev, layout, requires_grad, memory_format)


@numpy_names
def ones_like(input, *, dtype=None, layout=None, device=None, requires_grad: bool = False,
              memory_format=_mf.preserve_format, pin_memory: bool = False) -> Tensor:
    """Ones with ``input``'s shape and layout (and dtype/device unless given)."""
    dt, dev = _like(input, dtype, device, "ones_like")
    return _filled_like("ones_like", _ONE, input, dt, dev, layout, requires_grad, memory_format)


@numpy_names
def empty_like(input, *, dtype=None, layout=None, device=None, requires_grad: bool = False,
               memory_format=_mf.preserve_format, pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor with ``input``'s shape and layout (and dtype/device unless
    given)."""
    dt, dev = _like(input, dtype, device, "empty_like")
    return _filled_like("empty_like", None, input, dt, dev, layout, requires_grad, memory_format)


@numpy_names
def full_like(input, fill_value, *, dtype=None, layout=None, device=None,
              requires_grad: bool = False, memory_format=_mf.preserve_format,
              pin_memory: bool = False) -> Tensor:
    """``fill_value`` with ``input``'s shape and layout (and dtype/device unless given)."""
    dt, dev = _like(input, dtype, device, "full_like")
    check_number(fill_value, "full_like", 2, "fill_value")
    value = _scalar_value(fill_value)
    _check_fill(value, dt)
    return _filled_like("full_like", value, input, dt, dev, layout, requires_grad, memory_format)


def _filled_like(name: str, fill, input, dt, dev, layout, requires_grad: bool, memory_format):
    """``zeros_like``/``ones_like``/``empty_like``/``full_like``: ``fill`` in ``input``'s shape,
    laid out as ``memory_format`` says, or the sparse result (``like_sparse``)."""
    r = like_sparse(name, input, layout, dt, dev, requires_grad, memory_format,
                    lambda shape: _filled(fill, shape, dt, dev, False))
    if r is not None:
        return r
    order = like_order(input, memory_format, name)
    return _filled(fill, input._data.shape, dt, dev, requires_grad, None, order)


# -- ranges -----------------------------------------------------------------------------------

def _range_args(args, start, end, step, name: str):
    """``(end)``, ``(start, end)`` or ``(start, end, step)`` as Python numbers."""
    if len(args) > 3:
        raise TypeError(f"{name}() takes at most 3 positional arguments ({len(args)} given)")
    if len(args) == 1 and end is None:
        end = args[0]
    elif args:
        start, end, step = (*args, *(start, end, step)[len(args):])[:3]
    if end is None:
        raise TypeError(f"{name}() missing required argument 'end'")
    start, end, step = (_scalar_value(v) for v in (0 if start is None else start, end,
                                                   1 if step is None else step))
    return start, end, step


def _fmt_num(x) -> str:
    """A number as C++'s ostream prints it (PyTorch's error messages)."""
    return f"{x:g}" if isinstance(x, float) else str(x)


def _check_range(start, end, step) -> None:
    if step == 0:
        raise RuntimeError("step must be nonzero")
    for v in (start, end):
        if not math.isfinite(v):
            raise RuntimeError(f"unsupported range: {_fmt_num(start)} -> {_fmt_num(end)}")
    if not ((step > 0 and end >= start) or (step < 0 and end <= start)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")


def _range_dtype(dtype, values, name: str = "arange") -> _dtype.dtype:
    if dtype is not None:
        return _dtype.to_dtype(dtype, name)
    if any(isinstance(v, float) for v in values):
        return _dtype.get_default_dtype()
    return _dtype.int64


def _stepped(xp, acc, start, step, n: int, dt: _dtype.dtype):
    """``start + i * step`` for ``i < n``, accumulated in ``acc`` (float64 or int64) and
    rounded to ``dt`` once."""
    return (start + xp.arange(n, dtype=acc) * acc(step)).astype(dt.np, copy=False)


def arange(*args, start=None, end=None, step=None, out=None, dtype=None, layout=None,
           device=None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """Values from ``start`` to ``end`` (exclusive) by ``step``: ``arange(end)``,
    ``arange(start, end)``, ``arange(start, end, step)``.

    int64 when every argument is an integer, else the default float. The length is
    ``ceil((end - start) / step)`` computed in double, as PyTorch does.
    """
    names = ("end",) if len(args) == 1 else ("start", "end", "step")
    for i, (what, v) in enumerate(zip(names, args)):
        check_number(v, "arange", i + 1, what)
    start, end, step = _range_args(args, start, end, step, "arange")
    refuse_layout(layout, "arange", device)
    dt = _range_dtype(out_dtype(out, dtype, "arange"), (start, end, step))
    if dt is _dtype.bool or dt.is_complex:
        raise NotImplementedError(f"\"arange_cpu\" not implemented for "
                                  f"'{_dtype.scalar_type_name(dt.np)}'")
    _dtype.check_kernel("arange", dt.np)
    if dt.is_floating_point:
        acc_start, acc_end, acc_step = float(start), float(end), float(step)
        _check_range(acc_start, acc_end, acc_step)
    else:  # integer types accumulate in int64 from truncated arguments
        _check_range(start, end, step)
        acc_start, acc_end, acc_step = int(start), int(end), int(step)
        if not (_INT64_MIN <= acc_start <= _INT64_MAX and _INT64_MIN <= acc_end <= _INT64_MAX
                and _INT64_MIN <= acc_step <= _INT64_MAX):
            raise RuntimeError("value cannot be converted to type int64_t without overflow")
        if dt is _dtype.int64:  # checked again after truncation, as PyTorch does
            if acc_step == 0:
                raise ValueError("step must be nonzero")
            _check_range(acc_start, acc_end, acc_step)
    if dt is _dtype.int64:  # exact integer length, as PyTorch computes it for int64
        sgn = 1 if acc_step > 0 else -1
        n = abs(acc_end - acc_start + acc_step - sgn) // abs(acc_step)
    else:
        n = math.ceil((float(end) - float(start)) / float(step))
    if n > _INT64_MAX:  # (compared in double, as PyTorch)
        raise RuntimeError("invalid size, possible overflow?")
    n = max(int(n), 0)
    dev = resolve_device(device)
    xp = xp_of(dev)
    acc = np.float64 if dt.is_floating_point else np.int64
    arr = allocating(_stepped, (n,), dt.itemsize, dev, xp, acc, acc_start, acc_step, n, dt)
    if isinstance(out, Tensor) and out._data.size != n:
        warnings.warn(f"The number of elements in the out tensor of shape "
                      f"[{shape_str(out._data.shape)}] is {out._data.size} which does not match "
                      f"the computed number of elements {n}. Note that this may occur as a "
                      "result of rounding error. The out tensor will be resized to a tensor of "
                      f"shape ({n},).", UserWarning, stacklevel=2)
    return finish(_make(arr, dev), requires_grad, out)


def range(*args, start=None, end=None, step=None, out=None, dtype=None, layout=None,
          device=None, requires_grad: bool = False) -> Tensor:
    """Deprecated: values from ``start`` to ``end`` *inclusive* by ``step`` (default float)."""
    if len(args) == 1 and end is None:
        raise TypeError('range() missing 1 required positional arguments: "end"')
    warnings.warn("ember.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "ember.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    start, end, step = _range_args(args, start, end, step, "range")
    refuse_layout(layout, "range", device)
    dt = _dtype_or_default(out_dtype(out, dtype, "range"), "range")
    if dt is _dtype.bool or dt.is_complex:
        raise NotImplementedError(f"\"range_cpu\" not implemented for "
                                  f"'{_dtype.scalar_type_name(dt.np)}'")
    _check_range(start, end, step)
    n = math.floor((float(end) - float(start)) / float(step)) + 1
    dev = resolve_device(device)
    xp = xp_of(dev)
    acc = np.float64 if dt.is_floating_point else np.int64
    return finish(_make(_stepped(xp, acc, acc(start), step, n, dt), dev), requires_grad, out)


_SPACING_SIGNATURES = {
    "linspace": "int steps, *, Tensor out = None, torch.dtype dtype = None, torch.layout layout "
                "= None, torch.device device = None, bool pin_memory = False, bool "
                "requires_grad = False)",
    "logspace": "int steps, float base = 10.0, *, Tensor out = None, torch.dtype dtype = None, "
                "torch.layout layout = None, torch.device device = None, bool pin_memory = "
                "False, bool requires_grad = False)"}


def _spacing_signature_error(name: str, args: tuple, kwargs: dict) -> TypeError:
    """PyTorch's argument parser error for linspace/logspace: the types got and the four
    signatures (start and end each a Tensor or a Number)."""
    got = [tp_name(a) if not isinstance(a, Tensor) else "Tensor" for a in args]
    got += [f"{k}={tp_name(v)}" for k, v in kwargs.items()]
    tail = _SPACING_SIGNATURES[name]
    lines = "".join(f" * ({a} start, {b} end, {tail}\n" for a, b in (
        ("Tensor", "Tensor"), ("Number", "Tensor"), ("Tensor", "Number"), ("Number", "Number")))
    return TypeError(f"{name}() received an invalid combination of arguments - got "
                     f"({', '.join(got)}), but expected one of:\n{lines}")


def _check_steps(steps) -> int:
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    return int(steps)


_MISSING = object()


def _spacing_args(start, end, steps, dtype, out, device, name: str, base=None) -> tuple:
    """linspace's and logspace's arguments: ``(steps, start, end, dtype, device, xp)``. The
    dtype is ``dtype``, else ``out``'s, else the default float, or the default complex dtype
    when ``start`` or ``end`` is complex."""
    if not (isinstance(start, (Tensor, numbers.Number, np.number, np.bool_))
            and isinstance(end, (Tensor, numbers.Number, np.number, np.bool_))
            and _is_int_like(steps)
            and (base is None or isinstance(base, (numbers.Real, np.number, Tensor))
                 and not isinstance(base, (complex, np.complexfloating)))):
        args = (start, end) if steps is _MISSING else (start, end, steps)
        raise _spacing_signature_error(name, args, {} if base is None or isinstance(
            base, (numbers.Real, np.number)) and not isinstance(base, complex)
            else {"base": base})
    for what, v in (("start", start), ("end", end)):
        if isinstance(v, Tensor) and v._data.ndim:
            raise RuntimeError(f"{name} only supports 0-dimensional start and end tensors, but "
                               f"got {what} with {v._data.ndim} dimension(s).")
    given = None if dtype is None else _dtype.to_dtype(dtype, name)
    if given is _dtype.bool:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for 'Bool'")
    steps = _check_steps(int(_scalar_value(steps)))
    start, end = _scalar_value(start), _scalar_value(end)
    is_complex = isinstance(start, complex) or isinstance(end, complex)
    if given is not None:
        dt = given
        if is_complex and not dt.is_complex:
            inferred = _dtype.default_complex_dtype()
            raise RuntimeError(f"torch.{name}(): inferred dtype {_dtype.c_type_name(inferred)} "
                               f"can't be safely cast to passed dtype "
                               f"{_dtype.scalar_type_name(dt.np)}")
    else:
        dt = out_dtype(out, None)
        if dt is None:
            dt = _dtype.default_complex_dtype() if is_complex else _dtype.get_default_dtype()
        elif is_complex and not dt.is_complex:
            raise RuntimeError(f"value cannot be converted to type {_dtype.c_type_name(dt)} "
                               "without overflow")
    out_dtype(out, given)  # (out's dtype must match a given one)
    dev = resolve_device(device)
    return steps, start, end, dt, dev, xp_of(dev)


def _spaced(start, end, steps: int, dt: _dtype.dtype, xp):
    """PyTorch's symmetric linspace: the first half counts up from ``start``, the second
    half down from ``end``. Floats and complex numbers compute in their own precision,
    integer types in double from truncated ends."""
    if dt.is_floating_point or dt.is_complex:
        ct = dt.np.type
        s, e = ct(start), ct(end)
    else:
        ct = np.float64
        s, e = ct(int(start)), ct(int(end))
    step = (e - s) / ct(steps - 1)
    idx = xp.arange(steps)
    up = s + step * idx.astype(ct)
    down = e - step * (steps - 1 - idx).astype(ct)
    return xp.where(idx < steps // 2, up, down)


def linspace(start, end, steps=_MISSING, *, out=None, dtype=None, layout=None, device=None,
             requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive (complex when
    ``start`` or ``end`` is)."""
    steps, start, end, dt, dev, xp = _spacing_args(start, end, steps, dtype, out, device,
                                                   "linspace")
    refuse_layout(layout, "linspace", device, size=(steps,))
    _dtype.check_kernel("linspace", dt.np)
    if steps == 1:
        arr = xp.full((1,), start, dtype=dt.np)
    elif steps == 0:
        arr = xp.empty((0,), dtype=dt.np)
    else:
        arr = _spaced(start, end, steps, dt, xp).astype(dt.np)
    return finish(_make(arr, dev), requires_grad, out)


def logspace(start, end, steps=_MISSING, base: float = 10.0, *, out=None, dtype=None,
             layout=None, device=None, requires_grad: bool = False,
             pin_memory: bool = False) -> Tensor:
    """``steps`` values ``base ** linspace(start, end, steps)`` (complex when ``start`` or
    ``end`` is)."""
    steps, start, end, dt, dev, xp = _spacing_args(start, end, steps, dtype, out, device,
                                                   "logspace", base)
    refuse_layout(layout, "logspace", device, size=(steps,))
    base = _scalar_value(base)
    if dt is _dtype.complex32:
        raise _dtype.no_chalf_kernel("logspace_cpu")
    if steps == 0:
        arr = xp.empty((0,), dtype=dt.np)
    elif dt.is_complex:  # in the dtype's precision, base ** (start + i * step), symmetric
        ct = dt.np.type
        b, s = ct(base), ct(start)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            if steps == 1:
                arr = xp.full((1,), b ** s, dtype=dt.np)
            else:
                arr = (b ** _spaced(start, end, steps, dt, xp)).astype(dt.np)
    elif steps == 1:
        arr = xp.full((1,), float(base) ** float(start)).astype(dt.np)
    else:
        if dt.is_floating_point:
            s, e = (float(np.asarray(v).astype(dt.np)) for v in (start, end))
            b = float(base)
        else:
            s, e = float(int(start)), float(int(end))
            b = float(np.float32(base))
        step = (e - s) / (steps - 1)
        idx = xp.arange(steps, dtype=np.float64)
        expo = xp.where(idx < steps // 2, s + step * idx, e - step * (steps - 1 - idx))
        with np.errstate(over="ignore", invalid="ignore"):
            arr = (b ** expo).astype(dt.np)
    return finish(_make(arr, dev), requires_grad, out)


def eye(n, m=_MISSING, *, out=None, dtype=None, layout=None, device=None,
        requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A 2-D tensor with ones on the diagonal (``n`` rows, ``m`` columns, default ``n``)."""
    if m is not _MISSING and not (_is_int_like(n) and _is_int_like(m)):
        tail = ("Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, "
                "torch.device device = None, bool pin_memory = False, bool requires_grad = "
                "False)\n")
        raise TypeError(f"eye() received an invalid combination of arguments - got "
                        f"({tp_name(n)}, {tp_name(m)}), but expected one of:\n * (int n, *, "
                        f"{tail} * (int n, int m, *, {tail}")
    if not _is_int_like(n):
        raise TypeError(f"eye(): argument 'n' (position 1) must be int, not {tp_name(n)}")
    n = int(_scalar_value(n))
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    m = n if m is _MISSING else int(_scalar_value(m))
    if m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    refuse_layout(layout, "eye", device)
    dt = _dtype_or_default(out_dtype(out, dtype))
    _dtype.check_kernel("eye", dt.np)
    dev = resolve_device(device)
    arr = allocating(xp_of(dev).eye, (n, m), dt.itemsize, dev, n, m, 0, dt.np)
    return finish(_make(arr, dev), requires_grad, out)


def _shown_signature(fn, **defaults) -> None:
    """What ``inspect`` reports for ``fn`` (and the C++ op table binds): its signature with the
    ``_MISSING`` sentinels shown as PyTorch's defaults (``inspect.Parameter.empty``: required).
    The sentinel tells an argument given as None (PyTorch's error) from one not given."""
    sig = inspect.signature(fn)
    fn.__signature__ = sig.replace(parameters=[
        p.replace(default=defaults[p.name]) if p.name in defaults else p
        for p in sig.parameters.values()])


_shown_signature(linspace, steps=inspect.Parameter.empty)
_shown_signature(logspace, steps=inspect.Parameter.empty)
_shown_signature(eye, m=None)


# -- Tensor.new_* -----------------------------------------------------------------------------

def new_tensor(self, data, *, dtype=None, device=None, requires_grad: bool = False,
               pin_memory: bool = False) -> Tensor:
    """A new tensor copying ``data``, with this tensor's dtype and device unless given."""
    dt, dev = _like(self, dtype, device)
    if isinstance(data, Tensor):
        return _copy_constructed(data, dt, dev, requires_grad, "tensor.new_tensor")
    return finish(place(data_to_array(data, dt), dev), requires_grad)


def new_zeros(self, *args, size=None, dtype=None, device=None, requires_grad: bool = False,
              layout=None, pin_memory: bool = False) -> Tensor:
    """Zeros of ``size`` with this tensor's dtype, device and layout unless given."""
    return _new_filled("new_zeros", self, _ZERO, size_args(args, size, "new_zeros"), dtype,
                       device, layout, requires_grad)


def _new_filled(name: str, self, fill, shape: tuple, dtype, device, layout,
                requires_grad: bool, dt=None) -> Tensor:
    """``Tensor.new_zeros``/``new_ones``/``new_empty``/``new_full``: ``self``'s dtype, device
    and layout unless given (a sparse layout: ``ember.sparse._factories.make``)."""
    dt_like, dev = _like(self, dtype, device, name)
    dt = dt_like if dt is None else dt
    if layout is None:
        layout = getattr(self, "_layout", None)
    if layout is not None and layout is not strided:
        from .sparse import _factories

        lay = _factories.check_layout(layout, name)
        if lay is not None:
            return _factories.make(name, lay, shape, dt, dev, requires_grad,
                                   lambda: _filled(fill, shape, dt, dev, False))
    return _filled(fill, shape, dt, dev, requires_grad)


def new_ones(self, *args, size=None, dtype=None, device=None, requires_grad: bool = False,
             layout=None, pin_memory: bool = False) -> Tensor:
    """Ones of ``size`` with this tensor's dtype, device and layout unless given."""
    return _new_filled("new_ones", self, _ONE, size_args(args, size, "new_ones"), dtype, device,
                       layout, requires_grad)


def new_empty(self, *args, size=None, dtype=None, device=None, requires_grad: bool = False,
              layout=None, pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor of ``size`` with this tensor's dtype, device and layout unless
    given."""
    return _new_filled("new_empty", self, None, size_args(args, size, "new_empty"), dtype,
                       device, layout, requires_grad)


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad: bool = False,
             layout=None, pin_memory: bool = False) -> Tensor:
    """``fill_value`` in a tensor of ``size`` with this tensor's dtype and device unless
    given."""
    dt, _ = _like(self, dtype, device, "new_full")
    value = _scalar_value(fill_value)
    _check_fill(value, dt)
    return _new_filled("new_full", self, value, size_param(size, "new_full"), dtype, device,
                       layout, requires_grad)


for _name, _fn in (("new_tensor", new_tensor), ("new_zeros", new_zeros),
                   ("new_ones", new_ones), ("new_empty", new_empty), ("new_full", new_full)):
    register_method(_name, _fn)
