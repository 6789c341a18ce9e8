"""PyTorch's legacy (pre-1.6, non-zip) checkpoint format.

A file is a sequence of pickles: the magic number, the protocol version, a ``sys_info`` dict,
the object (storages as persistent ids), the list of storage keys; then for each key an
int64 element count followed by the raw storage bytes.
"""

from __future__ import annotations

import io
import pickle
import pickletools
import sys

import numpy as np

from . import _pickle

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001


def is_legacy(head: bytes) -> bool:
    """Whether ``head`` (the first bytes of a file) starts a legacy checkpoint: a pickle whose
    first value is the magic number."""
    return head[:2] in (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05") and \
        head[2:3] == pickle.LONG1


def _next_pickle(data: memoryview, pos: int) -> tuple[bytes, int]:
    buf = io.BytesIO(data[pos:])
    try:
        for op, _arg, _p in pickletools.genops(buf):
            if op.name == "STOP":
                break
        else:
            raise pickle.UnpicklingError("pickle data was truncated")
    except ValueError as exc:
        raise pickle.UnpicklingError(f"malformed pickle: {exc}") from None
    end = pos + buf.tell()
    return bytes(data[pos:end]), end


def _plain(blob: bytes):
    return _pickle.unpickle(blob, _no_storage, weights_only=True)


def _no_storage(*args):
    raise pickle.UnpicklingError("unexpected storage in a checkpoint header")


class _Anything:
    """Stands for every object while the first pass only collects the storages."""

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


class _RecordingUnpickler(_pickle.RestrictedUnpickler):
    def find_class(self, module, name):
        found = _pickle.ALLOWED_GLOBALS.get(f"{module}.{name}")
        if found is None and self.weights_only:
            super().find_class(module, name)  # raises, naming the global
        if isinstance(found, (_pickle.StorageType, _pickle._dtype.dtype)) or found == \
                _pickle.BFLOAT16:
            return found
        return _Anything


def load_legacy(fileobj, make_storage, weights_only: bool, pickle_module, encoding: str):
    """Load a legacy checkpoint; ``make_storage(host_array, dtype, location)`` places each
    storage (it applies ``map_location``)."""
    raw = bytearray(fileobj.read())
    data = memoryview(raw)
    blob, pos = _next_pickle(data, 0)
    if _plain(blob) != MAGIC_NUMBER:
        raise RuntimeError("Invalid magic number; corrupt file?")
    blob, pos = _next_pickle(data, pos)
    protocol = _plain(blob)
    if protocol != PROTOCOL_VERSION:
        raise RuntimeError(f"Invalid protocol version: {protocol}")
    blob, pos = _next_pickle(data, pos)
    sys_info = _plain(blob)
    little = sys_info.get("little_endian", True) if isinstance(sys_info, dict) else True
    main, pos = _next_pickle(data, pos)

    # pass 1: which storages (dtype, numel, location) the object declares
    declared: dict[str, tuple] = {}

    def record(dtype, key, location, numel, view):
        declared.setdefault(key, (dtype, numel, location))
        return None

    _pickle.check_pickle(main)
    recorder = _RecordingUnpickler(io.BytesIO(main), record, encoding=encoding)
    recorder.weights_only = weights_only
    try:
        recorder.load()
    except RecursionError:
        raise pickle.UnpicklingError("pickle nesting is too deep") from None
    blob, pos = _next_pickle(data, pos)
    keys = _plain(blob)
    if not isinstance(keys, list):
        raise pickle.UnpicklingError("invalid storage key list")

    storages: dict[str, _pickle.Storage] = {}
    for key in keys:
        key = key.decode("ascii") if isinstance(key, bytes) else str(key)
        if key not in declared or key in storages:
            raise ValueError(f"storage key {key!r} is not declared once by the checkpoint")
        dtype, numel, location = declared[key]
        np_dtype = np.dtype(np.uint16) if dtype == _pickle.BFLOAT16 else dtype.np
        if pos + 8 > len(raw):
            raise ValueError(f"storage {key!r} is truncated")
        count = int.from_bytes(data[pos:pos + 8], "little" if little else "big", signed=True)
        nbytes = numel * np_dtype.itemsize
        if count != numel:
            raise ValueError(f"storage {key!r} declares {numel} elements but its data record "
                             f"holds {count}")
        if pos + 8 + nbytes > len(raw):
            raise ValueError(f"storage {key!r} is truncated: {nbytes} bytes declared, "
                             f"{len(raw) - pos - 8} left in the file")
        arr = np.frombuffer(raw, np_dtype, count=numel, offset=pos + 8)
        if little != (sys.byteorder == "little"):
            arr = arr.byteswap()
        pos += 8 + nbytes
        storages[key] = make_storage(arr, dtype, location)
    missing = set(declared) - set(storages)
    if missing:
        raise ValueError(f"storages {sorted(missing)} have no data in the checkpoint")

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
                raise ValueError(f"storage view {view!r:.80} is out of bounds")
            views[view_key] = _pickle.Storage(storage.array[offset:offset + size],
                                              storage.device, storage.dtype)
        return views[view_key]

    return _pickle.unpickle(main, load_storage, weights_only, pickle_module, encoding)


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
