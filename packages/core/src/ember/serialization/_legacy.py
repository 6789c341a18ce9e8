"""PyTorch's legacy (pre-1.6, non-zip) checkpoint format.

A file is a sequence of pickles: the magic number, the protocol version, a ``sys_info`` dict,
the object (storages as persistent ids), the list of storage keys; then for each key an
int64 element count followed by the raw storage bytes.
"""

from __future__ import annotations

import io
import pickle
import sys

import numpy as np

from . import _pickle, _unpickler

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001


def _load_plain(stream):
    """One of the header pickles (magic number, protocol, sys_info, storage keys)."""
    return _unpickler.WeightsUnpickler(stream, _no_storage).load()


def _no_storage(*args):
    raise pickle.UnpicklingError("unexpected storage in a checkpoint header")


class _Placeholder:
    """Stands for a tensor while the first pass only collects the storages."""


_PLACEHOLDER = _Placeholder()
_TENSOR_BUILDERS = frozenset(id(_pickle.ALLOWED_GLOBALS[name]) for name in (
    "torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_tensor_v3",
    "torch._utils._rebuild_tensor",
    "torch._utils._rebuild_parameter", "torch._utils._rebuild_parameter_with_state",
    "torch._tensor._rebuild_from_type_v2", "torch.nn.parameter.Parameter",
    "torch._utils._rebuild_sparse_tensor"))


class _StorageRecorder(_unpickler.WeightsUnpickler):
    """Pass 1 over the object pickle (``weights_only=True``): every check of the real pass,
    but tensors are placeholders, so the storages' data (stored after it) is not needed."""

    def call(self, func, args):
        return _PLACEHOLDER if id(func) in _TENSOR_BUILDERS else super().call(func, args)

    def build(self, inst, state) -> None:
        if inst is not _PLACEHOLDER:
            super().build(inst, state)


class _Anything:
    """Stands for every object while the trusted first pass only collects the storages."""

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

    def __init__(self, *args, **kwargs):
        pass

    def __setstate__(self, state):
        pass

    def __setitem__(self, key, value):
        pass

    def append(self, value):
        pass

    def extend(self, values):
        pass


class _TrustedRecorder(_unpickler.FullUnpickler):
    """Pass 1 for ``weights_only=False``: only storage types and dtypes are resolved."""

    def find_class(self, module, name):
        found = _unpickler.resolve(module, name)[1]
        if isinstance(found, (_pickle.StorageType, _pickle._dtype.dtype)):
            return found
        return _Anything


def load_legacy(fileobj, make_storage, weights_only: bool, pickle_module, load_args: dict):
    """Load a legacy checkpoint; ``make_storage(host_array, dtype, location)`` places each
    storage (it applies ``map_location``); ``load_args`` are the unpickler's keyword
    arguments."""
    raw = bytearray(fileobj.read())
    stream = io.BytesIO(raw)
    magic = _load_plain(stream)
    if type(magic) is not int or magic != MAGIC_NUMBER:
        raise RuntimeError("Invalid magic number; corrupt file?")
    protocol = _load_plain(stream)
    if type(protocol) is not int or protocol != PROTOCOL_VERSION:
        raise RuntimeError(f"Invalid protocol version: {protocol!r:.80}")
    sys_info = _load_plain(stream)
    little = sys_info.get("little_endian", True) if isinstance(sys_info, dict) else True
    main_start = stream.tell()
    declared: dict[str, tuple] = {}

    def record(dtype, key, location, numel, view):
        declared.setdefault(key, (dtype, numel, location))
        return None

    # pass 1: which storages (dtype, numel, location) the object declares
    if weights_only:
        _StorageRecorder(stream, record, load_args.get("encoding", "utf-8")).load()
    else:
        _TrustedRecorder(stream, record, **load_args).load()
    main = bytes(raw[main_start:stream.tell()])
    keys = _load_plain(stream)
    if not isinstance(keys, list):
        raise pickle.UnpicklingError("invalid storage key list")
    storages = _read_storages(memoryview(raw), stream.tell(), keys, declared, little,
                              make_storage)
    return _unpickler.unpickle(main, _view_loader(storages), weights_only, pickle_module,
                               load_args)


def _read_storages(data: memoryview, pos: int, keys: list, declared: dict, little: bool,
                   make_storage) -> dict:
    """Each storage's element count and raw bytes, in ``keys`` order from ``pos``."""
    storages: dict[str, _pickle.Storage] = {}
    for key in keys:
        key = key.decode("ascii") if isinstance(key, bytes) else str(key)
        if key not in declared or key in storages:
            raise RuntimeError(f"storage key {key!r} is not declared once by the checkpoint")
        dtype, numel, location = declared[key]
        np_dtype = _pickle.storage_np_dtype(dtype)
        if pos + 8 > len(data):
            raise RuntimeError(f"unexpected EOF: storage {key!r} is truncated")
        count = int.from_bytes(data[pos:pos + 8], "little" if little else "big", signed=True)
        nbytes = numel * np_dtype.itemsize
        if count != numel:
            raise RuntimeError(f"storage has wrong byte size: storage {key!r} declares {numel} "
                               f"elements but its data record holds {count}")
        if pos + 8 + nbytes > len(data):
            raise RuntimeError(f"unexpected EOF: storage {key!r} is truncated, {nbytes} bytes "
                               f"declared, {len(data) - pos - 8} left in the file")
        arr = np.frombuffer(data.obj, np_dtype, count=numel, offset=pos + 8)
        if little != (sys.byteorder == "little"):
            arr = arr.byteswap()
        pos += 8 + nbytes
        storages[key] = make_storage(arr, dtype, location)
    missing = set(declared) - set(storages)
    if missing:
        raise RuntimeError(f"storages {sorted(missing)} have no data in the checkpoint")
    return storages


def _view_loader(storages: dict):
    views: dict[str, _pickle.Storage] = {}

    def load_storage(dtype, key, location, numel, view):
        storage = storages[key]
        if view is None:
            return storage
        if not (isinstance(view, tuple) and len(view) == 3):
            raise pickle.UnpicklingError(f"invalid storage view {view!r:.80}")
        view_key, offset, size = view
        if view_key not in views:
            if not (isinstance(offset, int) and isinstance(size, int) and 0 <= offset
                    and 0 <= size and offset + size <= len(storage)):
                raise RuntimeError(f"storage view {view!r:.80} is out of bounds")
            views[view_key] = _pickle.Storage(storage.array[offset:offset + size],
                                              storage.device, storage.dtype)
        return views[view_key]

    return load_storage


def write_legacy(fileobj, pickled: bytes, storages: dict, protocol: int) -> None:
    """Write the legacy format (``_use_new_zipfile_serialization=False``)."""
    sys_info = {"protocol_version": PROTOCOL_VERSION, "little_endian": sys.byteorder == "little",
                "type_sizes": {"short": 2, "int": 4, "long": 4}}
    for value in (MAGIC_NUMBER, PROTOCOL_VERSION, sys_info):
        pickle.dump(value, fileobj, protocol=protocol)
    fileobj.write(pickled)
    keys = sorted(storages, key=int)
    pickle.dump(keys, fileobj, protocol=protocol)
    for key in keys:
        arr = np.ascontiguousarray(storages[key].array)
        fileobj.write(int(arr.size).to_bytes(8, sys.byteorder, signed=True))
        fileobj.write(memoryview(arr).cast("B"))
