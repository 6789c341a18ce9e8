"""Pickling ember objects the way PyTorch does, and the restricted unpickler that reads them.

Saving writes the ``torch.*`` globals PyTorch writes (``torch._utils._rebuild_tensor_v2``,
``torch.FloatStorage``, ``torch.float32``...) without importing torch: a small pure-Python
pickler writes those names for marker objects. Loading maps the same names back to ember
objects through an allow-list; any other global is refused and never imported or called.
"""

from __future__ import annotations

import _compat_pickle
import codecs
import collections
import importlib
import io
import pickle
import pickletools
import types

import numpy as np

from .. import _dtype
from .._device import device as _device_cls
from .._size import Size
from .._tensor import CPU, Tensor, _address, _make
from ..backends import backend_of

# -- names PyTorch writes ---------------------------------------------------------------------

#: ember dtype -> the legacy storage class torch pickles for it
STORAGE_NAMES = {
    _dtype.float32: "FloatStorage", _dtype.float64: "DoubleStorage",
    _dtype.float16: "HalfStorage", _dtype.int64: "LongStorage", _dtype.int32: "IntStorage",
    _dtype.int16: "ShortStorage", _dtype.int8: "CharStorage", _dtype.uint8: "ByteStorage",
    _dtype.bool: "BoolStorage",
}
BFLOAT16 = "bfloat16"  # read (upcast to float32), never written: ember has no bfloat16
MAX_PICKLE_OPS = 50_000_000
MAX_MARK_DEPTH = 10_000

_GLOBAL_PATHS: dict[int, tuple[str, str]] = {}  # id(marker) -> (module, name) to write


def _marker(module: str, name: str):
    def marker(*args):  # never called: it only stands for ``module.name`` in a pickle
        raise RuntimeError(f"{module}.{name} is a serialization marker")

    marker.__qualname__ = marker.__name__ = name
    _GLOBAL_PATHS[id(marker)] = (module, name)
    return marker


REBUILD_TENSOR_V2 = _marker("torch._utils", "_rebuild_tensor_v2")
REBUILD_PARAMETER = _marker("torch._utils", "_rebuild_parameter")
TORCH_DEVICE = _marker("torch", "device")
TORCH_SIZE = _marker("torch", "Size")
STORAGE_MARKERS = {dt: _marker("torch", name) for dt, name in STORAGE_NAMES.items()}
for _dt in _dtype.ALL_DTYPES:
    _GLOBAL_PATHS[id(_dt)] = ("torch", _dt.name)


class StorageRef:
    """What a tensor's storage pickles as: a persistent id naming a raw data record."""

    __slots__ = ("key", "dtype", "location", "array")

    def __init__(self, key: str, dtype, location: str, array: np.ndarray):
        self.key, self.dtype, self.location, self.array = key, dtype, location, array


def _parameter_class():
    try:
        return importlib.import_module("ember.nn.parameter").Parameter
    except ModuleNotFoundError:
        return None


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
            numel = obj.array.size
            if self.legacy:
                return ("storage", STORAGE_MARKERS[obj.dtype], obj.key, obj.location, numel, None)
            return ("storage", STORAGE_MARKERS[obj.dtype], obj.key, obj.location, numel)
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
            if self._param_cls is not None and isinstance(obj, self._param_cls):
                plain = _make(obj._data, obj._device)
                return REBUILD_PARAMETER, (plain, obj.requires_grad, collections.OrderedDict())
            return self._reduce_tensor(obj)
        if cls is _dtype.dtype:
            return obj.name
        if cls is _device_cls:
            args = (obj.type,) if obj.index is None else (obj.type, obj.index)
            return TORCH_DEVICE, args
        if cls is Size:
            return TORCH_SIZE, (tuple(obj),)
        return NotImplemented

    def _reduce_tensor(self, t: Tensor):
        ref, offset, strides = self._storage_of(t)
        return REBUILD_TENSOR_V2, (ref, offset, tuple(t._data.shape), strides,
                                   bool(t.requires_grad), collections.OrderedDict())

    def _new_ref(self, dt, location: str, flat) -> StorageRef:
        ref = StorageRef(str(len(self.storages)), dt, location, flat)
        self.storages[ref.key] = ref
        return ref

    def _storage_of(self, t: Tensor):
        """(storage ref, element offset, element strides) of ``t``, sharing storages."""
        arr = t._data
        dt = _dtype.FROM_NP[arr.dtype]
        location = str(t._device)
        if t._device.type == "cuda" and t._device.index is None:
            location = "cuda:0"
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
    if 0 not in size:
        extent = offset + sum((n - 1) * s for n, s in zip(size, stride))
        if extent >= numel:
            raise ValueError(f"tensor of size {list(size)}, stride {list(stride)} and storage "
                             f"offset {offset} is out of bounds for a storage of {numel} "
                             "elements")
    elif offset > numel:
        raise ValueError(f"storage offset {offset} is past the end of a storage of {numel} "
                         "elements")
    arr = storage.array
    item = arr.itemsize
    strides = tuple(s * item for s in stride)
    if isinstance(arr, np.ndarray):
        if 0 in size:
            data = np.empty(size, arr.dtype)
        else:
            data = np.ndarray(size, arr.dtype, buffer=arr, offset=offset * item, strides=strides)
    else:  # another backend's array module (CuPy)
        xp = backend_of(storage.device).xp
        data = xp.lib.stride_tricks.as_strided(arr[offset:], shape=size, strides=strides)
    t = _make(data, storage.device)
    if requires_grad and data.dtype.kind == "f":
        t.requires_grad = True
    return t


def _rebuild_tensor_v1(storage, storage_offset, size, stride) -> Tensor:
    return rebuild_tensor(storage, storage_offset, size, stride)


def rebuild_parameter(data, requires_grad=True, backward_hooks=None, state=None):
    """``torch._utils._rebuild_parameter``: an ``ember.nn.Parameter`` when ember-nn is
    installed, else a tensor with ``requires_grad``."""
    if not isinstance(data, Tensor):
        raise pickle.UnpicklingError(f"expected a tensor, got {type(data).__name__}")
    cls = _parameter_class()
    requires_grad = bool(requires_grad) and data._data.dtype.kind == "f"
    if cls is not None:
        p = Tensor._make_subclass(cls, data, requires_grad)
    else:
        p = data
        p.requires_grad = requires_grad
    if state:
        _set_state(p, state)
    return p


def _set_state(obj, state) -> None:
    if isinstance(state, tuple) and len(state) == 2:  # (dict state, slots state)
        state = {**(state[0] or {}), **(state[1] or {})}
    if not isinstance(state, dict):
        raise pickle.UnpicklingError(f"invalid object state of type {type(state).__name__}")
    for k, v in state.items():
        if not isinstance(k, str):
            raise pickle.UnpicklingError("invalid object state key")
        setattr(obj, k, v)


class _ParameterType:
    """``torch.nn.parameter.Parameter`` as read: rebuilt as ember's Parameter."""


def rebuild_from_type_v2(func, new_type, args, state):
    """``torch._tensor._rebuild_from_type_v2`` for plain tensors and parameters."""
    if not isinstance(args, tuple):
        raise pickle.UnpicklingError("invalid _rebuild_from_type_v2 arguments")
    ret = func(*args)
    if new_type is _ParameterType and isinstance(ret, Tensor):
        ret = rebuild_parameter(ret, ret.requires_grad)
    elif new_type is not Tensor:
        raise pickle.UnpicklingError(f"unsupported tensor type {new_type!r}")
    if state:
        _set_state(ret, state)
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
        "torch._utils._rebuild_tensor": _rebuild_tensor_v1,
        "torch._utils._rebuild_parameter": rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": rebuild_parameter,
        "torch._tensor._rebuild_from_type_v2": rebuild_from_type_v2,
        "torch.Tensor": Tensor, "torch._tensor.Tensor": Tensor,
        "torch.nn.parameter.Parameter": _ParameterType,
        "torch.device": _device_cls, "torch.Size": Size,
        "torch.storage.UntypedStorage": StorageType("UntypedStorage", _dtype.uint8),
        "torch.BFloat16Storage": StorageType("BFloat16Storage", BFLOAT16),
        f"torch.{BFLOAT16}": BFLOAT16,
    }
    for dt, name in STORAGE_NAMES.items():
        rc[f"torch.{name}"] = StorageType(name, dt)
        rc[f"torch.{dt.name}"] = dt
    return rc


ALLOWED_GLOBALS = _make_allowed()

UNSAFE_MESSAGE = (
    "Re-running `ember.load` with `weights_only` set to `False` will likely succeed, but it can "
    "result in arbitrary code execution. Do it only if you got the file from a trusted source."
)


def check_pickle(data: bytes) -> None:
    """Refuse pickles that would make the unpickler allocate absurdly or nest without bound
    (a memo index far beyond the pickle's own size, too many marks) before running them."""
    ops = depth = 0
    try:
        for op, arg, _pos in pickletools.genops(io.BytesIO(data)):
            ops += 1
            name = op.name
            if name in ("PUT", "BINPUT", "LONG_BINPUT"):
                if not isinstance(arg, int) or arg < 0 or arg > ops:
                    raise pickle.UnpicklingError(f"invalid pickle memo index {arg!r}")
            elif name == "MARK":
                depth += 1
                if depth > MAX_MARK_DEPTH:
                    raise pickle.UnpicklingError("pickle nesting is too deep")
            elif op.stack_before and pickletools.markobject in op.stack_before:
                depth = max(depth - 1, 0)
            if ops > MAX_PICKLE_OPS:
                raise pickle.UnpicklingError("pickle is too long")
    except ValueError as exc:
        raise pickle.UnpicklingError(f"malformed pickle: {exc}") from None


class RestrictedUnpickler(pickle.Unpickler):
    """An unpickler resolving only allow-listed globals (``weights_only=True``); with
    ``weights_only=False`` other globals are imported, ``torch.*`` ones mapped to ember."""

    weights_only = True

    def __init__(self, file, storage_loader, **kwargs):
        super().__init__(file, **kwargs)
        self._storage_loader = storage_loader

    def find_class(self, module, name):
        # protocol 2 pickles name Python 2's modules (``__builtin__.set``)
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        module = _compat_pickle.IMPORT_MAPPING.get(module, module)
        full = f"{module}.{name}"
        found = ALLOWED_GLOBALS.get(full)
        if found is not None:
            return found
        if self.weights_only:
            raise pickle.UnpicklingError(
                f"Weights only load failed. {UNSAFE_MESSAGE}\nWeightsUnpickler error: "
                f"Unsupported global: GLOBAL {full} was not an allowed global by default.")
        if module == "torch" or module.startswith("torch."):
            module = "ember" + module[len("torch"):]
        return super().find_class(module, name)

    def persistent_load(self, pid):
        if not isinstance(pid, tuple) or len(pid) not in (5, 6) or pid[0] not in (
                "storage", b"storage"):
            raise pickle.UnpicklingError(f"Unknown saved id: {pid!r:.100}")
        storage_type, key, location, numel = pid[1:5]
        if isinstance(storage_type, StorageType):
            dtype = storage_type.dtype
        elif isinstance(storage_type, _dtype.dtype) or storage_type == BFLOAT16:
            dtype = storage_type
        else:
            raise pickle.UnpicklingError(f"invalid storage type {storage_type!r:.80}")
        if isinstance(location, bytes):
            location = location.decode("ascii")
        if isinstance(key, bytes):
            key = key.decode("ascii")
        if not isinstance(key, (str, int)) or not isinstance(location, str) \
                or not isinstance(numel, int) or numel < 0:
            raise pickle.UnpicklingError(f"invalid storage record {pid!r:.100}")
        view = pid[5] if len(pid) == 6 else None
        return self._storage_loader(dtype, str(key), location, numel, view)


def unpickle(data: bytes, storage_loader, weights_only: bool, pickle_module=None,
             encoding: str = "utf-8"):
    """Unpickle ``data`` (after ``check_pickle``) resolving storages through
    ``storage_loader(dtype, key, location, numel, view)``."""
    check_pickle(data)
    base = RestrictedUnpickler
    if not weights_only and pickle_module is not None and pickle_module is not pickle:
        base = type("Unpickler", (RestrictedUnpickler, pickle_module.Unpickler), {})
    unpickler = base(io.BytesIO(data), storage_loader, encoding=encoding)
    unpickler.weights_only = weights_only
    try:
        return unpickler.load()
    except RecursionError:
        raise pickle.UnpicklingError("pickle nesting is too deep") from None
