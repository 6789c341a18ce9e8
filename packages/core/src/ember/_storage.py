"""Storages: the memory under tensors, as ``torch.UntypedStorage`` and ``torch.TypedStorage``.

Ember keeps no storage object beside every tensor: a tensor's array (NumPy or CuPy) views some
memory, and its storage is worked out when asked for (``Tensor.untyped_storage()``,
``storage_offset()``, ``as_strided``, ``set_``):

- a view (a tensor with ``_base``) has the storage of its root;
- a root's storage is the memory its array spans, unless ``_extra["storage"]`` names a storage
  that still holds the array: ``set_``, an in-place ``as_strided_``, ``as_strided_scatter``'s
  output and a ``detach()``ed view keep the storage of their source there, as in PyTorch.
  A storage that no longer holds the array (``t.data = other`` replaced it) is dropped.

An ``UntypedStorage`` is bytes: ``s[i]`` is an int in ``[0, 255]``, slices share memory, and
``data_ptr()``/``nbytes()`` say where the memory is. ``TypedStorage`` (deprecated in PyTorch,
and it warns here too) reads the same bytes as elements of a dtype; ``FloatStorage`` and the
other legacy names make and recognise typed storages of their dtype.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from . import _dtype
from ._device import device as _device_cls
from ._device import xp_of
from ._format import shape_str
from .backends import backend_of

__all__ = ["UntypedStorage", "TypedStorage", "storage_of", "array_span",
           "BoolStorage", "ByteStorage", "CharStorage", "ShortStorage", "IntStorage",
           "LongStorage", "HalfStorage", "BFloat16Storage", "FloatStorage", "DoubleStorage",
           "ComplexFloatStorage", "ComplexDoubleStorage"]

_CPU = _device_cls("cpu")


_UNSET_BO = object()


def _address(arr) -> int:
    iface = getattr(arr, "__array_interface__", None)
    if iface is not None:
        return iface["data"][0]
    return arr.data.ptr  # CuPy


def array_span(arr) -> tuple[int, int]:
    """``(lowest address, number of bytes)`` of the memory ``arr``'s elements cover."""
    if arr.size == 0:
        return _address(arr), 0
    lo = hi = _address(arr)
    for n, st in zip(arr.shape, arr.strides):
        if st < 0:
            lo += (n - 1) * st
        else:
            hi += (n - 1) * st
    return lo, hi - lo + arr.itemsize


def _bytes_of(anchor, xp):
    """A 1-D uint8 array over the memory ``anchor``'s elements span."""
    lo, nbytes = array_span(anchor)
    if nbytes == 0:
        return xp.empty((0,), dtype=np.uint8)
    # the element at the lowest address: the last index along negative strides
    first = anchor[tuple(slice(-1, None) if st < 0 else slice(0, 1) for st in anchor.strides)]
    item = anchor.itemsize
    flat = _dtype.as_strided(xp, first, (nbytes // item,), (item,))
    return flat.view(np.uint8)


def _to_byte(value) -> int:
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        raise RuntimeError("can only set storage content with a int types, but got "
                           f"{type(value).__name__} instead")
    return int(value) % 256


class UntypedStorage:
    """Bytes of memory on a device, like ``torch.UntypedStorage``.

    ``UntypedStorage(n)`` is ``n`` zeroed bytes (PyTorch leaves them uninitialised),
    ``UntypedStorage([1, 2, 300])`` takes ints modulo 256, ``UntypedStorage(b"ab")`` copies a
    bytes-like object. ``Tensor.untyped_storage()`` returns the storage a tensor views.
    """

    __slots__ = ("_anchor", "_device", "_flat", "_span", "_held", "__weakref__")

    def __init__(self, *args, device=None):
        from ._device import resolve_device

        dev = _CPU if device is None else resolve_device(device)
        if len(args) > 1:
            raise TypeError(f"UntypedStorage() takes at most 1 positional argument "
                            f"({len(args)} given)")
        if not args:
            host = np.zeros(0, dtype=np.uint8)
        elif isinstance(args[0], (numbers.Integral, np.integer)) and \
                not isinstance(args[0], bool):
            n = int(args[0])
            if n < 0:
                raise RuntimeError(f"Trying to create a storage of negative size {n}")
            host = np.zeros(n, dtype=np.uint8)
        elif isinstance(args[0], (bytes, bytearray, memoryview)):
            host = np.frombuffer(bytes(args[0]), dtype=np.uint8).copy()
        else:
            host = np.array([_to_byte(v) for v in args[0]], dtype=np.uint8)
        arr = host if dev.type == "cpu" else backend_of(dev).to_device(host, dev.index)
        self._init(arr, dev)

    def _init(self, anchor, dev) -> None:
        self._anchor = anchor
        self._device = dev
        self._flat = None
        self._span = None  # (first address, bytes), worked out once
        self._held = None  # the last array found inside (asked again for every offset)

    @classmethod
    def _over(cls, anchor, dev) -> UntypedStorage:
        """The storage of the memory ``anchor`` (an array of any dtype) spans."""
        s = object.__new__(cls)
        s._init(anchor, dev)
        return s

    @classmethod
    def from_file(cls, filename, shared: bool = False, nbytes: int = 0) -> UntypedStorage:
        """``nbytes`` bytes of the file ``filename`` mapped into memory (PyTorch's
        ``UntypedStorage.from_file``; the safetensors package loads ``pt`` files with it).
        With ``shared=False`` writes to the storage stay in this process (copy on write);
        with ``shared=True`` they reach the file, which grows to ``nbytes`` if shorter."""
        import os

        nbytes = int(nbytes)
        if nbytes < 0:
            raise RuntimeError(f"Trying to create a storage of negative size {nbytes}")
        path = os.fspath(filename)
        size = os.path.getsize(path)
        if size < nbytes:
            if not shared:
                raise RuntimeError(f"unexpected EOF, expected {nbytes - size} more bytes. "
                                   f"The file might be corrupted.")
            with open(path, "r+b") as f:
                f.truncate(nbytes)
        if nbytes == 0:
            return cls._over(np.zeros(0, dtype=np.uint8), _CPU)
        mapped = np.memmap(path, dtype=np.uint8, mode="r+" if shared else "c",
                           shape=(nbytes,))
        return cls._over(mapped.view(np.ndarray), _CPU)

    # -- where the memory is ------------------------------------------------------------
    def _bytes(self):
        flat = self._flat
        if flat is None:
            flat = self._flat = _bytes_of(self._anchor, xp_of(self._device))
        return flat

    def _where(self) -> tuple[int, int]:
        span = self._span
        if span is None:
            span = self._span = array_span(self._anchor)
        return span

    def data_ptr(self) -> int:
        """The address of the first byte."""
        return self._where()[0]

    def nbytes(self) -> int:
        """The number of bytes."""
        return self._where()[1]

    def size(self) -> int:
        """The number of bytes (an untyped storage's elements are bytes)."""
        return self.nbytes()

    def __len__(self) -> int:
        return self.nbytes()

    def element_size(self) -> int:
        return 1

    @property
    def device(self) -> _device_cls:
        return self._device

    @property
    def is_cuda(self) -> bool:
        return self._device.type == "cuda"

    @property
    def is_sparse(self) -> bool:
        return False

    def is_shared(self) -> bool:
        """Whether this storage is in memory shared between processes (``share_memory_()``, or
        received through an ``ember.multiprocessing`` queue). Always True for a CUDA storage,
        as in PyTorch."""
        from .multiprocessing._shared_memory import storage_is_shared

        return storage_is_shared(self)

    def share_memory_(self) -> UntypedStorage:
        """Move this storage to shared memory (POSIX shared memory, by the sharing strategy of
        ``ember.multiprocessing``) and return it. A no-op when it is there already and for
        storages not on the CPU (a CUDA storage is shared by handle).

        Tensors made over the old memory before keep it: ``Tensor.share_memory_()`` moves a
        tensor together with its storage.
        """
        from .multiprocessing._shared_memory import share_storage_

        share_storage_(self)
        return self

    def is_pinned(self, device=None) -> bool:
        """False: storages are not in pinned memory."""
        return False

    def get_device(self):
        """The device index (None on the CPU, as PyTorch's storages answer)."""
        return None if self._device.type == "cpu" else (self._device.index or 0)

    def type(self) -> str:
        return "ember.UntypedStorage"

    def untyped(self) -> UntypedStorage:
        return self

    def _holds(self, arr, dev) -> bool:
        """Whether ``arr`` (on ``dev``) lies inside this storage's memory."""
        if arr is self._held:
            return dev == self._device
        if dev != self._device:
            return False
        if arr.size:
            lo, n = array_span(arr)
            slo, sn = self._where()
            if not (slo <= lo and lo + n <= slo + sn):
                return False
        self._held = arr
        return True

    def _typed(self, np_dtype, offset: int, size: tuple, stride: tuple):
        """The array of ``np_dtype`` elements at element ``offset`` with ``size``/``stride``
        (in elements); the caller has checked that it fits."""
        b = self._bytes()
        item = np_dtype.itemsize
        n = b.size // item
        typed = b[:n * item].view(np_dtype)
        start = typed[min(offset, n):]
        xp = xp_of(self._device)
        return _dtype.as_strided(xp, start, tuple(size), tuple(s * item for s in stride))

    # -- bytes ----------------------------------------------------------------------------
    def _host(self, arr) -> np.ndarray:
        return arr if self._device.type == "cpu" else backend_of(self._device).to_host(arr)

    def __getitem__(self, idx):
        b = self._bytes()
        if isinstance(idx, slice):
            start, stop = _check_slice(idx, b.size)
            return UntypedStorage._over(b[start:max(stop, start)], self._device)
        i = _check_index(idx, b.size)
        return int(self._host(b[i:i + 1])[0])

    def __setitem__(self, idx, value) -> None:
        b = self._bytes()
        if isinstance(idx, slice):
            start, stop = _check_slice(idx, b.size)
            b[start:stop] = _to_byte(value)
            return
        i = _check_index(idx, b.size)
        b[i:i + 1] = _to_byte(value)

    def __iter__(self):
        return iter(self.tolist())

    def tolist(self) -> list:
        return self._host(self._bytes()).tolist()

    def fill_(self, value) -> UntypedStorage:
        self._bytes()[...] = _to_byte(value)
        return self

    def copy_(self, src, non_blocking: bool = False) -> UntypedStorage:
        """Copy ``src``'s bytes (a storage of the same size) into this storage."""
        src = src.untyped()
        if src.nbytes() != self.nbytes():
            raise RuntimeError(f"size does not match, self was {self.nbytes()} bytes but src "
                               f"was {src.nbytes()} bytes")
        data = src._bytes()
        if src._device != self._device:
            data = backend_of(src._device).to_host(data)
            if self._device.type != "cpu":
                data = backend_of(self._device).to_device(data, self._device.index)
        self._bytes()[...] = data
        return self

    def clone(self) -> UntypedStorage:
        return UntypedStorage._over(self._bytes().copy(), self._device)

    def to(self, *, device=None, non_blocking: bool = False) -> UntypedStorage:
        """This storage on ``device`` (itself when it is there already, else a copy)."""
        from ._device import resolve_device

        dev = self._device if device is None else resolve_device(device)
        if dev == self._device:
            return self
        host = self._host(self._bytes())
        arr = host.copy() if dev.type == "cpu" else backend_of(dev).to_device(host, dev.index)
        return UntypedStorage._over(arr, dev)

    def cpu(self) -> UntypedStorage:
        return self.to(device=_CPU)

    def resize_(self, size) -> UntypedStorage:
        """Resize to ``size`` bytes, keeping the first ones (new bytes are zero; PyTorch leaves
        them uninitialised). Tensors made over the old memory keep it."""
        n = int(size)
        if n < 0:
            raise RuntimeError(f"Trying to create a storage of negative size {n}")
        host = self._host(self._bytes())
        new = np.zeros(n, dtype=np.uint8)
        k = min(n, host.size)
        new[:k] = host[:k]
        dev = self._device
        arr = new if dev.type == "cpu" else backend_of(dev).to_device(new, dev.index)
        self._init(arr, dev)
        return self

    @classmethod
    def from_buffer(cls, buffer, byte_order=_UNSET_BO, dtype=None, count: int = -1,
                    offset: int = 0) -> UntypedStorage:
        """The bytes of ``count`` elements of ``dtype`` read from ``buffer`` (a bytes-like
        object) at byte ``offset``, in ``byte_order`` ('little', 'big' or 'native')."""
        if dtype is None:
            raise RuntimeError("argument 'dtype' cannot be None")
        dt = _dtype.to_dtype(dtype)
        if byte_order is _UNSET_BO:
            if dt.itemsize > 1:
                raise RuntimeError("function missing required argument 'byte_order' (pos 2)")
            byte_order = "native"
        arr = _from_buffer(buffer, byte_order, dt, count, offset)
        return cls._over(arr.view(np.uint8).reshape(-1), _CPU)

    def __repr__(self) -> str:
        head = f"[{self.type()}(device={self._device}) of size {self.nbytes()}]"
        items = self.tolist()
        return "\n".join([f" {v}" for v in items] + [head])

    __str__ = __repr__


def _from_buffer(buffer, byte_order, dt, count, offset) -> np.ndarray:
    """A native-order copy of ``count`` elements of ``dt`` in ``buffer`` from byte ``offset``
    (PyTorch's ``from_buffer`` checks and messages)."""
    if byte_order not in ("big", "little", "native"):
        raise ValueError(f"invalid byte_order '{byte_order}' (expected 'big', 'little', or "
                         f"'native')")
    raw = memoryview(buffer).cast("B")
    total = raw.nbytes
    offset = int(offset)
    count = int(count)
    item = dt.itemsize
    if offset < 0 or offset > total:
        raise ValueError(f"offset must be non-negative and no greater than buffer length "
                         f"({offset}) , but got {total}")
    if count < 0:
        if (total - offset) % item != 0:
            raise ValueError(f"buffer size ({total - offset}) must be a multiple of element "
                             f"size ({item})")
        count = (total - offset) // item
    if offset + count * item > total:
        raise ValueError(f"buffer has only {total - offset} elements after offset {offset}, "
                         f"but specified a size of {count}")
    npdt = np.dtype(dt.np)
    if byte_order != "native" and npdt.itemsize > 1:
        npdt = npdt.newbyteorder("<" if byte_order == "little" else ">")
    arr = np.frombuffer(raw, dtype=npdt, count=count, offset=offset)
    return arr.astype(dt.np)


def _check_slice(idx: slice, n: int) -> tuple:
    """``(start, stop)`` of a slice of a storage of ``n`` bytes (step 1 only, as PyTorch)."""
    start, stop, step = idx.indices(n)
    if step != 1:
        raise RuntimeError(f"Trying to slice with a step of {step}, but only a step of 1 is "
                           "supported")
    return start, stop


def _check_index(idx, n: int) -> int:
    i = int(idx)
    if not -n <= i < n:
        raise IndexError(f"index {i} out of range for storage of size {n}")
    return i % n if n else 0


# -- the storage of a tensor -----------------------------------------------------------------

def storage_of(t) -> UntypedStorage:
    """The storage of tensor ``t``: its root's explicit one while that still holds the root's
    array, else the memory the root's array spans (remembered on the root)."""
    root = t._base if t._base is not None else t
    extra = root._extra
    s = extra.get("storage") if extra else None
    if s is None or not s._holds(root._data, root._device):
        s = UntypedStorage._over(root._data, root._device)
        root._extra_dict()["storage"] = s
    return s


# -- typed storages (deprecated in PyTorch) ----------------------------------------------------

_warned_typed = [False]


def warn_typed_storage_removal(stacklevel: int = 2) -> None:
    """PyTorch's once-per-process warning that TypedStorage is deprecated."""
    if _warned_typed[0]:
        return
    _warned_typed[0] = True
    warnings.warn("TypedStorage is deprecated. It will be removed in the future and "
                  "UntypedStorage will be the only storage class. This should only matter to "
                  "you if you are using storages directly.  To access UntypedStorage directly, "
                  "use tensor.untyped_storage() instead of tensor.storage()", UserWarning,
                  stacklevel=stacklevel + 1)


class TypedStorage:
    """The elements of a dtype over an ``UntypedStorage`` (``torch.TypedStorage``,
    deprecated there: use ``Tensor.untyped_storage()``)."""

    is_sparse = False

    def __init__(self, *args, dtype=None, device=None, wrap_storage=None,
                 _internal: bool = False):
        if not _internal:
            warn_typed_storage_removal()
        dt = _dtype.get_default_dtype() if dtype is None else _dtype.to_dtype(dtype)
        if wrap_storage is not None:
            if args:
                raise RuntimeError("TypedStorage(): no positional arguments are allowed with "
                                   "'wrap_storage'")
            self._untyped_storage = wrap_storage.untyped()
        else:
            from ._factory import tensor

            if len(args) > 1:
                raise TypeError(f"TypedStorage() takes at most 1 positional argument "
                                f"({len(args)} given)")
            if not args:
                data = []
            elif isinstance(args[0], (numbers.Integral, np.integer)):
                data = np.zeros(int(args[0]), dtype=dt.np)
            else:
                data = args[0]
            t = tensor(data, dtype=dt, device=device)
            self._untyped_storage = storage_of(t)
        self.dtype = dt

    # -- sizes and places --------------------------------------------------------------
    @property
    def device(self) -> _device_cls:
        return self._untyped_storage.device

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    def element_size(self) -> int:
        return self.dtype.itemsize

    def size(self) -> int:
        return self._untyped_storage.nbytes() // self.dtype.itemsize

    def __len__(self) -> int:
        return self.size()

    def nbytes(self) -> int:
        return self._untyped_storage.nbytes()

    def data_ptr(self) -> int:
        return self._untyped_storage.data_ptr()

    def untyped(self) -> UntypedStorage:
        return self._untyped_storage

    def _get_legacy_storage_class(self):
        return _LEGACY_BY_DTYPE.get(self.dtype)

    def type(self) -> str:
        cls = self._get_legacy_storage_class()
        return f"ember.{cls.__name__}" if cls is not None else "ember.TypedStorage"

    # -- elements ------------------------------------------------------------------------
    def _elements(self):
        return self._untyped_storage._typed(self.dtype.np, 0, (self.size(),), (1,))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            raise RuntimeError("slices are only supported in UntypedStorage.__getitem__")
        i = _check_index(idx, self.size())
        return self._untyped_storage._host(self._elements()[i:i + 1])[0].item()

    def __setitem__(self, idx, value) -> None:
        el = self._elements()
        if isinstance(idx, slice):
            el[idx] = value
            return
        i = _check_index(idx, self.size())
        el[i:i + 1] = value

    def __iter__(self):
        return iter(self.tolist())

    def tolist(self) -> list:
        return self._untyped_storage._host(self._elements()).tolist()

    def fill_(self, value) -> TypedStorage:
        self._elements()[...] = value
        return self

    # -- the rest of PyTorch's TypedStorage API ------------------------------------------
    def is_shared(self) -> bool:
        return self._untyped_storage.is_shared()

    def share_memory_(self) -> TypedStorage:
        self._untyped_storage.share_memory_()
        return self

    def is_pinned(self, device=None) -> bool:
        return False

    def get_device(self):
        return self._untyped_storage.get_device()

    def pickle_storage_type(self) -> str:
        cls = self._get_legacy_storage_class()
        return cls.__name__ if cls is not None else "TypedStorage"

    def _new(self, untyped, dt=None) -> TypedStorage:
        return TypedStorage(wrap_storage=untyped, dtype=self.dtype if dt is None else dt,
                            _internal=True)

    def clone(self) -> TypedStorage:
        return self._new(self._untyped_storage.clone())

    def copy_(self, source, non_blocking: bool = False) -> TypedStorage:
        self._untyped_storage.copy_(source.untyped(), non_blocking)
        return self

    def resize_(self, size) -> None:
        self._untyped_storage.resize_(int(size) * self.dtype.itemsize)

    def to(self, *, device=None, non_blocking: bool = False) -> TypedStorage:
        return self._new(self._untyped_storage.to(device=device, non_blocking=non_blocking))

    def cpu(self) -> TypedStorage:
        return self.to(device=_CPU)

    def _to(self, dt) -> TypedStorage:
        dt = _dtype.to_dtype(dt)
        if dt == self.dtype:
            return self
        el = self._untyped_storage._host(self._elements())
        return TypedStorage(el.astype(dt.np), dtype=dt, device=self.device, _internal=True)

    def double(self):
        return self._to(_dtype.float64)

    def float(self):
        return self._to(_dtype.float32)

    def half(self):
        return self._to(_dtype.float16)

    def bfloat16(self):
        return self._to(_dtype.bfloat16)

    def long(self):
        return self._to(_dtype.int64)

    def int(self):
        return self._to(_dtype.int32)

    def short(self):
        return self._to(_dtype.int16)

    def char(self):
        return self._to(_dtype.int8)

    def byte(self):
        return self._to(_dtype.uint8)

    def bool(self):
        return self._to(_dtype.bool)

    def complex_float(self):
        return self._to(_dtype.complex64)

    def complex_double(self):
        return self._to(_dtype.complex128)

    @classmethod
    def from_buffer(cls, buffer, byte_order=None, dtype=None, count=-1,
                    offset=0) -> TypedStorage:
        """``count`` elements of ``dtype`` (the default dtype, or a legacy storage class's)
        read from ``buffer`` at byte ``offset`` in ``byte_order``."""
        warn_typed_storage_removal()
        dt = getattr(cls, "dtype", None) if isinstance(cls, _LegacyStorageMeta) else None
        if dt is None:
            dt = _dtype.get_default_dtype() if dtype is None else _dtype.to_dtype(dtype)
        arr = _from_buffer(buffer, "native" if byte_order is None else byte_order, dt, count,
                           offset)
        return TypedStorage(wrap_storage=UntypedStorage._over(arr, _CPU), dtype=dt,
                            _internal=True)

    def __repr__(self) -> str:
        head = (f"[ember.TypedStorage(dtype={self.dtype}, device={self.device}) of size "
                f"{self.size()}]")
        return "\n".join([f" {v}" for v in self.tolist()] + [head])

    __str__ = __repr__


class _LegacyStorageMeta(type):
    """The metaclass of ``ember.FloatStorage`` and friends: calling one makes a
    ``TypedStorage`` of its dtype; ``isinstance`` checks a typed storage's dtype."""

    dtype: _dtype.dtype

    def __call__(cls, *args, device=None, wrap_storage=None):
        return TypedStorage(*args, dtype=cls.dtype, device=device, wrap_storage=wrap_storage)

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, TypedStorage) and obj.dtype is cls.dtype


def _legacy(name: str, dt) -> type:
    return _LegacyStorageMeta(name, (TypedStorage,), {
        "dtype": dt, "__module__": "ember",
        "__doc__": f"The legacy storage type of {dt} (deprecated: TypedStorage)."})


BoolStorage = _legacy("BoolStorage", _dtype.bool)
ByteStorage = _legacy("ByteStorage", _dtype.uint8)
CharStorage = _legacy("CharStorage", _dtype.int8)
ShortStorage = _legacy("ShortStorage", _dtype.int16)
IntStorage = _legacy("IntStorage", _dtype.int32)
LongStorage = _legacy("LongStorage", _dtype.int64)
HalfStorage = _legacy("HalfStorage", _dtype.float16)
BFloat16Storage = _legacy("BFloat16Storage", _dtype.bfloat16)
FloatStorage = _legacy("FloatStorage", _dtype.float32)
DoubleStorage = _legacy("DoubleStorage", _dtype.float64)
ComplexFloatStorage = _legacy("ComplexFloatStorage", _dtype.complex64)
ComplexDoubleStorage = _legacy("ComplexDoubleStorage", _dtype.complex128)
_LEGACY_BY_DTYPE = {c.dtype: c for c in (BoolStorage, ByteStorage, CharStorage, ShortStorage,
                                         IntStorage, LongStorage, HalfStorage, BFloat16Storage,
                                         FloatStorage, DoubleStorage, ComplexFloatStorage,
                                         ComplexDoubleStorage)}

UntypedStorage.__module__ = "ember"
TypedStorage.__module__ = "ember"


# -- Tensor methods: untyped_storage, storage, set_, is_set_to, __setstate__ -------------------

def _untyped_storage(self) -> UntypedStorage:
    """The ``UntypedStorage`` whose memory this tensor views (shared with its base, and with
    the tensors it was ``set_`` to)."""
    return storage_of(self)


def _typed_storage(self) -> TypedStorage:
    """The storage as a ``TypedStorage`` of this tensor's dtype (deprecated, as in PyTorch:
    use ``untyped_storage()``)."""
    warn_typed_storage_removal(stacklevel=2)
    return _typed_storage_quiet(self)


def _typed_storage_quiet(self) -> TypedStorage:
    """``Tensor._typed_storage()``: :func:`_typed_storage` without the deprecation warning
    (PyTorch's internal spelling, which libraries call: Lightning's lazy checkpoint loader)."""
    return TypedStorage(wrap_storage=storage_of(self), dtype=self.dtype, _internal=True)


def _storage_type(self) -> type:
    """The legacy storage class of this tensor's dtype (``ember.FloatStorage``, ...;
    deprecated, as in PyTorch)."""
    warn_typed_storage_removal(stacklevel=2)
    return _LEGACY_BY_DTYPE[self.dtype]


def _same_storage(a, b) -> bool:
    sa, sb = storage_of(a), storage_of(b)
    return (sa.device == sb.device and sa.data_ptr() == sb.data_ptr()
            and sa.nbytes() == sb.nbytes())


def _is_set_to(self, tensor) -> bool:
    """Whether ``tensor`` views exactly this tensor's memory: the same storage, storage
    offset, size and strides."""
    from ._tensor import Tensor

    if not isinstance(tensor, Tensor):
        raise TypeError("is_set_to(): argument 'tensor' (position 1) must be Tensor, not "
                        f"{type(tensor).__name__}")
    return (_same_storage(self, tensor) and self._data.shape == tensor._data.shape
            and self.stride() == tensor.stride()
            and self.storage_offset() == tensor.storage_offset())


def _set_bw(node, grad):
    raise RuntimeError("derivative for set_ is not implemented")


_UNSET = object()
_SET_SIGNATURES = (" * ()\n * (ember.Storage source)\n * (ember.Storage source, int "
                   "storage_offset, tuple of ints size, tuple of ints stride = None)\n"
                   " * (Tensor source)\n"
                   " * (Tensor source, int storage_offset, tuple of ints size, tuple of ints "
                   "stride = None)\n")


def _set_args_error(args) -> TypeError:
    got = ", ".join(type(a).__name__ for a in args)
    return TypeError(f"set_() received an invalid combination of arguments - got ({got}), but "
                     f"expected one of:\n{_SET_SIGNATURES}")


def _contiguous_strides(size) -> tuple:
    strides, step = [], 1
    for n in reversed(size):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _set_(self, source=None, storage_offset=_UNSET, size=None, stride=None):
    """Make this tensor view other memory, in place: ``set_(tensor)`` takes ``tensor``'s
    storage, offset, size and strides; ``set_(storage, offset, size, stride)`` a place in a
    storage (``set_(storage)``: all of it, 1-D); ``set_()`` an empty storage.

    The tensor then shares that memory (not its version counter); a view stops being a view
    of its old base. Under autograd the result is not differentiable (PyTorch's
    ``NotImplemented`` node), and a leaf that requires grad raises.
    """
    import operator

    from ._dtype import options_type_name, scalar_type_name
    from ._tensor import Tensor
    from .autograd.grad_mode import GRAD
    from .autograd.graph import record
    from .ops._inplace import check_inplace_autograd

    geometry = storage_offset is not _UNSET or size is not None or stride is not None
    dt = self.dtype
    src = None
    if source is None:
        if geometry:
            raise _set_args_error((source,))
        storage = UntypedStorage._over(xp_of(self._device).empty((0,), dtype=dt.np),
                                       self._device)
        arr = storage._anchor
    elif isinstance(source, Tensor):
        if source.dtype is not dt:
            raise RuntimeError(f"Could not set tensor of type "
                               f"{options_type_name(source.dtype)} to a "
                               f"tensor of type {options_type_name(dt)}")
        src = source
        storage = storage_of(source)
        arr = source._data
    elif isinstance(source, (UntypedStorage, TypedStorage)):
        if isinstance(source, TypedStorage) and source.dtype is not dt:
            raise RuntimeError(f"Expected a Storage of type {options_type_name(dt)} or an "
                               f"UntypedStorage, but got type "
                               f"{scalar_type_name(source.dtype.np)} for "
                               "argument 1 'storage'")
        storage = source.untyped()
        arr = storage._typed(dt.np, 0, (storage.nbytes() // dt.itemsize,), (1,))
    else:
        raise _set_args_error((source,))
    if storage.device != self._device:
        raise RuntimeError(f"Attempted to set the storage of a tensor on device "
                           f"\"{self._device}\" to a storage on different device "
                           f"\"{storage.device}\".  This is no longer allowed; the devices "
                           "must match.")
    if geometry:
        if size is None:
            raise _set_args_error((source, storage_offset))
        offset = 0 if storage_offset is _UNSET else operator.index(storage_offset)
        size = tuple(operator.index(n) for n in size)
        stride = _contiguous_strides(size) if stride is None else \
            tuple(operator.index(s) for s in stride)
        if len(size) != len(stride):
            raise RuntimeError(f"unequal size length ({len(size)}) and stride length "
                               f"({len(stride)})")
        if offset < 0:
            raise RuntimeError(f"Tensor: invalid storage offset {offset}")
        if any(n < 0 for n in size):
            raise RuntimeError("numel: integer multiplication overflow")
        if 0 not in size and any(st < 0 and n > 1 for n, st in zip(size, stride)):
            raise RuntimeError(f"Storage size calculation overflowed with sizes="
                               f"[{shape_str(size)}] and strides=[{shape_str(stride)}]")
        item = dt.itemsize
        need = 0 if 0 in size else \
            (offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1) * item
        if need > storage.nbytes():
            raise RuntimeError(f"setStorage: sizes [{shape_str(size)}], strides "
                               f"[{shape_str(stride)}], storage offset {offset}, and "
                               f"itemsize {item} requiring a storage size of {need} are out of "
                               f"bounds for storage of size {storage.nbytes()}")
        arr = storage._typed(dt.np, offset, size, stride)
    track = GRAD.enabled and (self.requires_grad or (src is not None and src.requires_grad))
    if GRAD.enabled:
        check_inplace_autograd(self, "set_", track)
    old = None
    if track:
        from ._tensor import _make

        old = _make(self._data, self._device)
        old.requires_grad = self.requires_grad
        old.grad_fn = self.grad_fn
        old._nr = self._nr
    extra = self._extra_dict()
    if self._base is not None:  # now a tensor of its own memory (the version stays shared)
        self._base = None
        extra.pop("view_fn", None)
        extra.pop("strided", None)
    else:
        extra["geom"] = True  # views made of it before no longer replay on it
    self._data = arr
    extra["storage"] = storage
    if track:
        record(_SetNotImplemented, self, (old, src), (), None)
        self._nr = 0
    self._bump_version()
    return self


def _setstate(self, state) -> None:
    """Unpickling of PyTorch's legacy formats: a 4-tuple ``(storage, offset, size, stride)``
    is ``set_``; otherwise ``(requires_grad, _, backward_hooks)`` (a 5-tuple's first item
    being the data)."""
    if not self.is_leaf:
        raise RuntimeError("__setstate__ can be only called on leaf Tensors")
    if len(state) == 4:
        self.set_(*state)
        return
    if len(state) == 5:
        self.data = state[0]
        state = (state[3], state[4], state[2])
    self.requires_grad, _, self._backward_hooks = state


def _install_methods() -> None:
    from .autograd.graph import make_node_class
    from .ops.registry import register_method

    global _SetNotImplemented
    _SetNotImplemented = make_node_class("NotImplemented", _set_bw)
    for name, fn in (("untyped_storage", _untyped_storage), ("storage", _typed_storage),
                     ("_typed_storage", _typed_storage_quiet),
                     ("storage_type", _storage_type), ("is_set_to", _is_set_to),
                     ("set_", _set_), ("__setstate__", _setstate)):
        fn.__name__ = fn.__qualname__ = name
        register_method(name, fn)


_SetNotImplemented = None
_install_methods()
