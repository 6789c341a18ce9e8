"""Pickling ember objects the way PyTorch does, and the restricted unpickler that reads them.

Saving writes the ``torch.*`` globals PyTorch writes (``torch._utils._rebuild_tensor_v2``,
``torch.FloatStorage``, ``torch.float32``...) without importing torch: a small pure-Python
pickler writes those names for marker objects. Loading maps the same names back to ember
objects through an allow-list (``ALLOWED_GLOBALS``, of which only ``CALLABLE_GLOBALS`` may be
called); the unpickler that enforces it is in ``_unpickler.py``.
"""

from __future__ import annotations

import codecs
import collections
import pickle
import types

import numpy as np

from .. import _dtype
from .._device import device as _device_cls
from .._layout import layout as _layout_cls
from .._size import Size
from .._sparse_tensor import _SparseData
from .._tensor import CPU, Tensor, _address, _make
from ..backends import backend_of
from . import _sparse

# -- names PyTorch writes ---------------------------------------------------------------------

#: ember dtype -> the legacy storage class torch pickles for it
STORAGE_NAMES = {
    _dtype.float32: "FloatStorage", _dtype.float64: "DoubleStorage",
    _dtype.float16: "HalfStorage", _dtype.bfloat16: "BFloat16Storage",
    _dtype.int64: "LongStorage", _dtype.int32: "IntStorage", _dtype.int16: "ShortStorage",
    _dtype.int8: "CharStorage", _dtype.uint8: "ByteStorage", _dtype.bool: "BoolStorage",
    _dtype.complex64: "ComplexFloatStorage", _dtype.complex128: "ComplexDoubleStorage",
}


def storage_np_dtype(dtype) -> np.dtype:
    """The NumPy dtype a storage's raw bytes are read and written as: bfloat16's bytes as
    uint16 (``ml_dtypes`` arrays export no buffer), viewed back by :func:`from_raw`."""
    return np.dtype(np.uint16) if dtype is _dtype.bfloat16 else dtype.np


def raw(array: np.ndarray) -> np.ndarray:
    """A storage's array as its bytes can be written: a bfloat16 array viewed as uint16, a
    complex32, uint16/32/64 or float8 one as its bytes (PyTorch pickles them as untyped
    storages: ``V3_DTYPES``)."""
    if array.dtype == _dtype.BFLOAT16_NP:
        return array.view(np.uint16)
    if array.dtype == _dtype.CHALF_NP or array.dtype in _dtype.SHELL_NP \
            or array.dtype in _dtype.FLOAT8_NP:
        return array.view(np.uint8)
    return array


def from_raw(array: np.ndarray, dtype) -> np.ndarray:
    """The raw array read for a storage of ``dtype`` viewed as that dtype (no copy)."""
    return array.view(dtype.np) if array.dtype != dtype.np else array

_GLOBAL_PATHS: dict[int, tuple[str, str]] = {}  # id(marker) -> (module, name) to write


def _marker(module: str, name: str):
    def marker(*args):  # never called: it only stands for ``module.name`` in a pickle
        raise RuntimeError(f"{module}.{name} is a serialization marker")

    marker.__qualname__ = marker.__name__ = name
    _GLOBAL_PATHS[id(marker)] = (module, name)
    return marker


REBUILD_TENSOR_V2 = _marker("torch._utils", "_rebuild_tensor_v2")
REBUILD_PARAMETER = _marker("torch._utils", "_rebuild_parameter")
REBUILD_PARAMETER_WITH_STATE = _marker("torch._utils", "_rebuild_parameter_with_state")
REBUILD_FROM_TYPE_V2 = _marker("torch._tensor", "_rebuild_from_type_v2")
TORCH_TENSOR = _marker("torch", "Tensor")
TORCH_DEVICE = _marker("torch", "device")
TORCH_SIZE = _marker("torch", "Size")
REBUILD_SPARSE_TENSOR = _marker("torch._utils", "_rebuild_sparse_tensor")
GET_LAYOUT = _marker("torch.serialization", "_get_layout")
STORAGE_MARKERS = {dt: _marker("torch", name) for dt, name in STORAGE_NAMES.items()}
#: dtypes without a typed storage class (``torch.ComplexHalfStorage``, ``torch.UInt32Storage``
#: do not exist): PyTorch
#: pickles their tensors with ``_rebuild_tensor_v3``, whose storage is an ``UntypedStorage``
#: of bytes and whose last argument is the dtype
V3_DTYPES = frozenset({_dtype.complex32, _dtype.uint16, _dtype.uint32, _dtype.uint64,
                       *_dtype.FLOAT8_DTYPES})
REBUILD_TENSOR_V3 = _marker("torch._utils", "_rebuild_tensor_v3")
UNTYPED_STORAGE = _marker("torch.storage", "UntypedStorage")
for _dt in _dtype.ALL_DTYPES:
    _GLOBAL_PATHS[id(_dt)] = ("torch", _dt.name)


class StorageRef:
    """What a tensor's storage pickles as: a persistent id naming a raw data record (its
    ``array`` as :func:`raw` gives it: the bytes to write)."""

    __slots__ = ("key", "dtype", "location", "array")

    def __init__(self, key: str, dtype, location: str, array: np.ndarray):
        self.key, self.dtype, self.location, self.array = key, dtype, location, array


#: the class PyTorch's ``torch.nn.parameter.Parameter`` maps to (ember-nn registers its
#: ``Parameter`` at import; core never imports ember-nn)
_PARAMETER_CLASS: list = [None]


def register_parameter_class(cls) -> None:
    """Make ``cls`` (a ``Tensor`` subclass) the class that checkpoints' parameters load as and
    that is saved as PyTorch's ``torch._utils._rebuild_parameter`` (ember-nn registers
    ``ember.nn.Parameter``). Without one, parameters load as tensors with ``requires_grad``."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"expected a Tensor subclass, got {cls!r}")
    _PARAMETER_CLASS[0] = cls


def _parameter_class():
    """ember-nn's ``Parameter`` once ember-nn is imported, else None (core never imports
    ember-nn: tests/integration/test_layering.py)."""
    return _PARAMETER_CLASS[0]


class TorchPickler(pickle._Pickler):
    """A pickler writing ember tensors, dtypes, devices and sizes as PyTorch pickles them.

    Storages are collected in ``self.storages`` (key -> 1-D host array); a view and its base
    share one storage key, with the view's offset and strides recorded.
    """

    def __init__(self, file, protocol: int = 2, legacy: bool = False):
        super().__init__(file, protocol)
        self.legacy = legacy
        self.storages: dict[str, StorageRef] = {}
        self._by_owner: dict = {}  # (id(owner), dtype) -> StorageRef
        self._keep: list = []  # owners stay alive so their ids are not reused while pickling
        self._param_cls = _parameter_class()

    def persistent_id(self, obj):
        if obj.__class__ is StorageRef:
            numel = obj.array.size  # bytes for an untyped storage (``raw`` gives uint8)
            marker = UNTYPED_STORAGE if obj.dtype in V3_DTYPES else STORAGE_MARKERS[obj.dtype]
            if self.legacy:
                return ("storage", marker, obj.key, obj.location, numel, None)
            return ("storage", marker, obj.key, obj.location, numel)
        return None

    def save_global(self, obj, name=None):
        path = _GLOBAL_PATHS.get(id(obj))
        if path is None:
            return super().save_global(obj, name)
        module, qualname = path
        if self.proto >= 4:
            self.save(module)
            self.save(qualname)
            self.write(pickle.STACK_GLOBAL)
        else:
            self.write(pickle.GLOBAL + f"{module}\n{qualname}\n".encode())
        self.memoize(obj)

    def reducer_override(self, obj):
        cls = obj.__class__
        if isinstance(obj, Tensor):
            # attributes a user set on the tensor travel with it, as PyTorch pickles them
            state = {k: v for k, v in obj.__dict__.items() if not hasattr(cls, k)} \
                if obj.__dict__ else None
            if self._param_cls is not None and isinstance(obj, self._param_cls):
                plain = _make(obj._data, obj._device)
                if state:
                    return REBUILD_PARAMETER_WITH_STATE, (plain, obj.requires_grad,
                                                          collections.OrderedDict(), state)
                return REBUILD_PARAMETER, (plain, obj.requires_grad, collections.OrderedDict())
            if cls is not Tensor and obj._data.__class__ is _SparseData:
                return REBUILD_SPARSE_TENSOR, _sparse.reduce_args(obj)
            if state:
                func, args = self._reduce_tensor(obj)
                return REBUILD_FROM_TYPE_V2, (func, TORCH_TENSOR, args, state)
            return self._reduce_tensor(obj)
        if cls is _dtype.dtype:
            return obj.name
        if cls is _device_cls:
            args = (obj.type,) if obj.index is None else (obj.type, obj.index)
            return TORCH_DEVICE, args
        if cls is Size:
            return TORCH_SIZE, (tuple(obj),)
        if cls is _layout_cls:
            return GET_LAYOUT, (_sparse.layout_name(obj),)
        return NotImplemented

    def _reduce_tensor(self, t: Tensor):
        ref, offset, strides = self._storage_of(t)
        if not t._data.size:  # NumPy gives an empty array zero strides: PyTorch's strides
            strides = t.stride()
        args = (ref, offset, tuple(t._data.shape), strides, bool(t.requires_grad),
                collections.OrderedDict())
        if ref.dtype in V3_DTYPES:  # offset and strides stay in elements of the dtype
            return REBUILD_TENSOR_V3, (*args, ref.dtype)
        return REBUILD_TENSOR_V2, args

    def _new_ref(self, dt, location: str, flat) -> StorageRef:
        ref = StorageRef(str(len(self.storages)), dt, location, raw(flat))
        self.storages[ref.key] = ref
        return ref

    def _storage_of(self, t: Tensor):
        """(storage ref, element offset, element strides) of ``t``, sharing storages."""
        arr = t._data
        dt = _dtype.FROM_NP[arr.dtype]
        location = str(t._device)
        if t._device.type == "cuda" and t._device.index is None:
            location = "cuda:0"
        from . import _location

        if _location.custom_packages():  # serialization.register_package: ask the taggers
            location = _location.location_tag(t.untyped_storage())
        if isinstance(arr, np.ndarray):
            owner = arr
            while isinstance(owner.base, np.ndarray):
                owner = owner.base
            shared = _view_geometry(arr, owner)
            if shared is not None:
                key = (id(owner), dt)
                ref = self._by_owner.get(key)
                if ref is None:
                    flat = owner if owner.flags.c_contiguous else owner.T
                    ref = self._by_owner[key] = self._new_ref(dt, location, flat.reshape(-1))
                    self._keep.append(owner)
                return (ref, *shared)
            host = arr
        else:
            host = backend_of(t._device).to_host(arr)
        flat = np.ascontiguousarray(host).reshape(-1)
        item = arr.itemsize
        strides = tuple(s // item for s in np.ascontiguousarray(host).strides) if host.ndim else ()
        return self._new_ref(dt, location, flat), 0, strides


TorchPickler.dispatch = {**pickle._Pickler.dispatch, types.FunctionType: TorchPickler.save_global}


def _view_geometry(arr: np.ndarray, owner: np.ndarray):
    """(offset, strides) in elements of ``arr`` inside ``owner``'s memory, or None when
    ``arr`` cannot be described that way (other dtype, negative strides, non-contiguous
    owner)."""
    if owner.dtype != arr.dtype or not (owner.flags.c_contiguous or owner.flags.f_contiguous):
        return None
    item = arr.itemsize
    off = _address(arr) - _address(owner)
    if off < 0 or off % item or any(s < 0 or s % item for s in arr.strides):
        return None
    return off // item, tuple(s // item for s in arr.strides)


# -- loading ----------------------------------------------------------------------------------

class StorageType:
    """A ``torch.<X>Storage`` name read from a checkpoint, with its element dtype."""

    def __init__(self, name: str, dtype):
        self.name, self.dtype = name, dtype

    def __repr__(self) -> str:
        return f"StorageType(dtype={self.dtype})"


class Storage:
    """A loaded storage: a 1-D array of its dtype on its device (what ``map_location``
    callables receive and may move with ``.cpu()``, ``.cuda()`` or ``.to()``)."""

    def __init__(self, array, device, dtype):
        self.array, self.device, self.dtype = array, device, dtype
        self._untyped = None

    def untyped(self):
        """The ``UntypedStorage`` its tensors report (``untyped_storage()``,
        ``storage_offset()``): one for all the tensors that view it."""
        if self._untyped is None:
            from .._storage import UntypedStorage

            self._untyped = UntypedStorage._over(self.array, self.device)
        return self._untyped

    def __len__(self) -> int:
        return int(self.array.size)

    def nbytes(self) -> int:
        return int(self.array.nbytes)

    def to(self, device) -> Storage:
        from .._factory import resolve_device

        dev = resolve_device(device)
        if dev is self.device:
            return self
        host = backend_of(self.device).to_host(self.array)
        return Storage(host if dev is CPU else backend_of(dev).to_device(host, dev.index), dev,
                       self.dtype)

    def cpu(self) -> Storage:
        return self.to("cpu")

    def cuda(self, device=None) -> Storage:
        return self.to("cuda" if device is None else _device_cls("cuda", device)
                       if isinstance(device, int) else device)


def _check_ints(values, what: str) -> tuple:
    if not isinstance(values, (tuple, list)) or len(values) > 64:
        raise pickle.UnpicklingError(f"invalid tensor {what}: {values!r:.80}")
    for v in values:
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise pickle.UnpicklingError(f"invalid tensor {what}: {values!r:.80}")
    return tuple(values)


def rebuild_tensor(storage, storage_offset, size, stride, requires_grad=False,
                   backward_hooks=None, metadata=None) -> Tensor:
    """``torch._utils._rebuild_tensor_v2``: a tensor viewing ``storage`` (bounds-checked)."""
    if not isinstance(storage, Storage):
        raise pickle.UnpicklingError(f"expected a storage, got {type(storage).__name__}")
    size = _check_ints(size, "size")
    stride = _check_ints(stride, "stride")
    (offset,) = _check_ints((storage_offset,), "storage offset")
    if len(size) != len(stride):
        raise pickle.UnpicklingError(f"tensor size {size} and stride {stride} differ in length")
    numel = len(storage)
    if 0 not in size:  # RuntimeError, as PyTorch's set_() raises
        extent = offset + sum((n - 1) * s for n, s in zip(size, stride))
        if extent >= numel:
            raise RuntimeError(f"tensor of size {list(size)}, stride {list(stride)} and storage "
                               f"offset {offset} is out of bounds for a storage of {numel} "
                               "elements")
    elif offset > numel:
        raise RuntimeError(f"storage offset {offset} is past the end of a storage of {numel} "
                           "elements")
    arr = storage.array
    item = arr.itemsize
    strides = tuple(s * item for s in stride)
    if arr.__class__ is np.ndarray:  # (an empty tensor keeps its offset and strides too)
        data = np.ndarray(size, arr.dtype, buffer=arr, offset=offset * item, strides=strides)
    else:  # another backend's array module (CuPy, a test device's)
        xp = backend_of(storage.device).xp
        if 0 in size:
            data = xp.empty(size, dtype=arr.dtype)
        else:
            data = _dtype.as_strided(xp, arr[offset:], size, strides)
    t = _make(data, storage.device)
    if offset or data.size != numel or (numel and not data.flags.c_contiguous):
        # a view into a larger storage: its storage is the whole one, as PyTorch's
        # (storage_offset(), untyped_storage(), and the tensors sharing it)
        t._extra = {"storage": storage.untyped()}
    if requires_grad and data.dtype in _dtype.INEXACT_NP:
        t.requires_grad = True
    return t


def rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad=False,
                      backward_hooks=None, dtype=None, metadata=None) -> Tensor:
    """``torch._utils._rebuild_tensor_v3``: a tensor of ``dtype`` viewing an untyped storage
    (bytes), as PyTorch writes the dtypes that have no typed storage class (complex32).
    ``storage_offset`` and ``stride`` count elements of ``dtype``."""
    if not isinstance(dtype, _dtype.dtype):
        raise pickle.UnpicklingError(f"expected a dtype, got {type(dtype).__name__}")
    if not isinstance(storage, Storage):
        raise pickle.UnpicklingError(f"expected a storage, got {type(storage).__name__}")
    if storage.dtype is not dtype:
        arr = storage.array
        if arr.dtype != np.uint8 or arr.ndim != 1 or arr.size % dtype.itemsize:
            raise pickle.UnpicklingError(f"a storage of {arr.size} {arr.dtype} elements cannot "
                                         f"hold {dtype} elements")
        backend_of(storage.device).check_dtype(dtype.np)
        untyped = storage.untyped()
        storage = Storage(arr.view(dtype.np), storage.device, dtype)
        storage._untyped = untyped
    return rebuild_tensor(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                          metadata)


def _rebuild_tensor_v1(storage, storage_offset, size, stride) -> Tensor:
    return rebuild_tensor(storage, storage_offset, size, stride)


def rebuild_parameter(data, requires_grad=True, backward_hooks=None, state=None):
    """``torch._utils._rebuild_parameter`` (and ``_rebuild_parameter_with_state``): an
    ``ember.nn.Parameter`` when ember-nn is installed, else a tensor with ``requires_grad``.
    ``backward_hooks`` are ignored: PyTorch never serializes hooks."""
    if not isinstance(data, Tensor):
        raise pickle.UnpicklingError(f"expected a tensor, got {type(data).__name__}")
    cls = _parameter_class()
    requires_grad = bool(requires_grad) and data._data.dtype in _dtype.FLOATING_NP
    if cls is not None:
        p = Tensor._make_subclass(cls, data, requires_grad)
    else:
        p = data
        p.requires_grad = requires_grad
    if state:
        set_state(p, state)
    return p


#: state keys accepted and dropped: PyTorch writes hooks there but never serializes them
_DROPPED_STATE = frozenset({"_backward_hooks"})


def set_state(obj, state) -> None:
    """Apply a pickled object state (a dict, or PyTorch's ``(dict_state, slots_state)``) the
    way ``torch._utils._set_obj_state`` does, within what the object's class allows: a
    tensor's ``requires_grad``, and attributes its class does not define. Names the class
    defines (slots like ``_data``, properties like ``grad_fn``, class-level fields like
    ``_grad`` or ``_vc``, methods) are ignored, as PyTorch ignores fields it does not have:
    a checkpoint can add attributes but never replace the object's internals."""
    for key, value in _state_items(state):
        if key == "requires_grad" and isinstance(obj, Tensor):
            set_requires_grad(obj, value)
        elif key not in _DROPPED_STATE and not hasattr(type(obj), key):
            obj.__dict__[key] = value


def _state_items(state):
    parts = state if isinstance(state, tuple) else (state,)
    if len(parts) > 2 or not all(p is None or isinstance(p, dict) for p in parts):
        raise pickle.UnpicklingError(f"invalid object state of type {type(state).__name__}")
    for part in parts:
        for key, value in (part or {}).items():
            if type(key) is not str:
                raise pickle.UnpicklingError(f"invalid object state key {key!r:.80}")
            yield key, value


def set_requires_grad(t: Tensor, value) -> None:
    """``requires_grad`` from a checkpoint, checked as PyTorch checks it."""
    if type(value) is not bool:
        raise RuntimeError("requires_grad must be a bool")
    if value and t._data.dtype not in _dtype.INEXACT_NP:
        raise RuntimeError("only Tensors of floating point dtype can require gradients")
    t.requires_grad = value


def build_tensor(t: Tensor, state) -> None:
    """The BUILD opcode on a tensor: PyTorch's ``Tensor.__setstate__`` form
    ``(requires_grad, _, backward_hooks)``; legacy (pre-0.4) states are not supported."""
    if not (isinstance(state, tuple) and len(state) == 3):
        raise pickle.UnpicklingError(
            f"invalid tensor state of type {type(state).__name__} (a tensor's pickled state "
            "is (requires_grad, None, backward_hooks))")
    set_requires_grad(t, state[0])


class _ParameterType:
    """``torch.nn.parameter.Parameter`` as read: calling it (REDUCE, NEWOBJ) makes ember's
    Parameter, and it names the type in ``_rebuild_from_type_v2``."""

    def __new__(cls, data=None, requires_grad=True):
        return rebuild_parameter(data, requires_grad)


def rebuild_from_type_v2(func, new_type, args, state):
    """``torch._tensor._rebuild_from_type_v2`` for plain tensors and parameters."""
    if not isinstance(args, tuple) or (func is not rebuild_tensor and func is not
                                       rebuild_tensor_v3 and func is not _rebuild_tensor_v1):
        raise pickle.UnpicklingError("invalid _rebuild_from_type_v2 arguments")
    ret = func(*args)
    if new_type is _ParameterType:
        ret = rebuild_parameter(ret, ret.requires_grad)
    elif new_type is not Tensor:
        raise pickle.UnpicklingError(f"unsupported tensor type {new_type!r:.80}")
    if state:
        set_state(ret, state)
    return ret


def _safe_bytearray(*args):
    if len(args) > 1 or (args and not isinstance(args[0], (bytes, bytearray, list))):
        raise pickle.UnpicklingError("bytearray() is only allowed from bytes")
    return bytearray(*args)


def _safe_encode(obj, encoding="utf-8", errors="strict"):
    if not isinstance(obj, str) or encoding not in ("latin1", "latin-1", "utf-8", "utf8"):
        raise pickle.UnpicklingError(f"_codecs.encode is only allowed for text (got {encoding!r})")
    return codecs.encode(obj, encoding, errors)


def _make_allowed() -> dict:
    rc = {
        "collections.OrderedDict": collections.OrderedDict,
        "collections.Counter": collections.Counter,
        "builtins.set": set, "builtins.frozenset": frozenset, "builtins.complex": complex,
        "builtins.slice": slice, "builtins.bytearray": _safe_bytearray,
        "_codecs.encode": _safe_encode,
        "torch._utils._rebuild_tensor_v2": rebuild_tensor,
        "torch._utils._rebuild_tensor_v3": rebuild_tensor_v3,
        "torch._utils._rebuild_tensor": _rebuild_tensor_v1,
        "torch._utils._rebuild_parameter": rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": rebuild_parameter,
        "torch._tensor._rebuild_from_type_v2": rebuild_from_type_v2,
        "torch._utils._rebuild_sparse_tensor": _sparse.rebuild_sparse_tensor,
        "torch.serialization._get_layout": _sparse.get_layout,
        "torch.Tensor": Tensor, "torch._tensor.Tensor": Tensor,
        "torch.nn.parameter.Parameter": _ParameterType,
        "torch.device": _device_cls, "torch.Size": Size,
        "torch.storage.UntypedStorage": StorageType("UntypedStorage", _dtype.uint8),
    }
    for dt, name in STORAGE_NAMES.items():
        rc[f"torch.{name}"] = StorageType(name, dt)
    for dt in _dtype.ALL_DTYPES:
        rc[f"torch.{dt.name}"] = dt
    return rc


ALLOWED_GLOBALS = _make_allowed()

#: the allowed globals a pickle may call (REDUCE); the others are values (dtypes, storage
#: types, ``torch.Tensor`` as a type argument) that are never called
CALLABLE_GLOBALS = frozenset({
    "collections.OrderedDict", "collections.Counter", "builtins.set", "builtins.frozenset",
    "builtins.complex", "builtins.slice", "builtins.bytearray", "_codecs.encode",
    "torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_tensor_v3",
    "torch._utils._rebuild_tensor",
    "torch._utils._rebuild_parameter", "torch._utils._rebuild_parameter_with_state",
    "torch._tensor._rebuild_from_type_v2", "torch.device", "torch.Size",
    "torch.nn.parameter.Parameter", "torch._utils._rebuild_sparse_tensor",
    "torch.serialization._get_layout",
})

UNSAFE_MESSAGE = (
    "Re-running `ember.load` with `weights_only` set to `False` will likely succeed, but it can "
    "result in arbitrary code execution. Do it only if you got the file from a trusted source."
)
