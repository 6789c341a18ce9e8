"""``ember.save`` / ``ember.load``: PyTorch's checkpoint format, both ways.

Files written here load with ``torch.load(weights_only=True)`` and files written by
``torch.save`` (zip format, and the legacy pre-1.6 format) load here, without importing torch.
Loading is safe by default: only an allow-list of globals is resolved.
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import re
import secrets
import socket
import struct
import time
import warnings
import zipfile
import zlib

import numpy as np

from .. import _dtype
from .._device import device as _device_cls
from .._tensor import CPU
from ..backends import backend_of
from . import _legacy, _pickle, _unpickler, _zip
from ._pickle import ALLOWED_GLOBALS, Storage, StorageType

__all__ = ["save", "load", "Storage", "StorageType", "ALLOWED_GLOBALS", "atomic_write",
           "atomic_path"]

DEFAULT_PROTOCOL = 2

# Errors of a malformed file outside the unpickler (which reports its own as
# UnpicklingError), turned into a RuntimeError naming the cause, as PyTorch's reader does;
# MemoryError too: PyTorch reports a failed allocation as a RuntimeError.
_PARSE_ERRORS = (KeyError, TypeError, IndexError, AttributeError, struct.error,
                 zipfile.BadZipFile, zlib.error, OverflowError, UnicodeError, MemoryError,
                 NotImplementedError)


# -- atomic, durable writes -------------------------------------------------------------------

def _host() -> str:
    """This machine in temporary names: a pid only means something on its own host (and in
    its own container), so saves on a shared filesystem never judge each other's."""
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:40] or "host"


def _temporary_pattern(name: str) -> re.Pattern:
    """Temporary files of this host's saves to ``name``: ``.{name}.{host}.{pid}.{random}.tmp``."""
    return re.compile(rf"\.{re.escape(name)}\.{re.escape(_host())}\.(\d+)\.[0-9a-f]+\.tmp\Z")


def _create_temporary(directory: str, name: str) -> str:
    while True:
        tmp = os.path.join(directory, f".{name}.{_host()}.{os.getpid()}."
                                      f"{secrets.token_hex(4)}.tmp")
        try:  # mode 0o666 less the umask, as open(path, "wb") would give the target
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL
                             | getattr(os, "O_BINARY", 0), 0o666))
            return tmp
        except FileExistsError:
            continue


def _pid_alive(pid: int) -> bool:
    if os.name != "posix" or pid <= 0:
        return True  # no cheap, harmless liveness check: assume alive, remove nothing
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it exists, under another user
        return True
    return True


def remove_stale_temporaries(path, before: float) -> list[str]:
    """Remove the temporary files that killed saves to ``path`` left behind: those named
    like this module's temporaries for that exact file and this host, last modified before
    ``before`` (a ``time.time()``), whose writing process is gone. A save running in another
    live process, or on another host, is never touched. Returns the removed paths (POSIX
    only; elsewhere none)."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    pattern = _temporary_pattern(os.path.basename(path))
    removed = []
    with os.scandir(directory) as entries:
        for entry in entries:
            match = pattern.match(entry.name)
            if match is None or _pid_alive(int(match.group(1))):
                continue
            with contextlib.suppress(FileNotFoundError):  # another save may remove it first
                if entry.stat(follow_symlinks=False).st_mtime < before:
                    os.unlink(entry.path)
                    removed.append(entry.path)
    return removed


def _fsync_file(path: str) -> None:
    fd = os.open(path, os.O_RDWR | getattr(os, "O_BINARY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_directory(directory: str) -> None:
    if os.name != "posix":
        return  # directories cannot be opened for fsync there
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError:  # some filesystems refuse fsync on directories (EINVAL): the data is safe
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary file name beside ``path`` (``.{name}.{host}.{pid}.{random}.tmp``); on
    success the file is flushed to disk (fsync) and replaces ``path`` (``os.replace``,
    then an fsync of the directory on POSIX), so that ``path`` holds either the old or the
    whole new contents even after a crash or a power loss. On an exception the temporary is
    removed and ``path`` is left untouched. Temporaries that earlier killed saves to
    ``path`` left behind are removed first (``remove_stale_temporaries``)."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    remove_stale_temporaries(path, before=time.time())
    tmp = _create_temporary(directory, os.path.basename(path))
    try:
        yield tmp
        _fsync_file(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_directory(directory)


@contextlib.contextmanager
def atomic_write(path):
    """A binary file object whose contents replace ``path`` atomically (see ``atomic_path``)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        yield fh


def _archive_name(f) -> str:
    if isinstance(f, (str, os.PathLike)):
        return os.path.splitext(os.path.basename(os.fspath(f)))[0] or "archive"
    return "archive"


def save(obj, f, pickle_module=pickle, pickle_protocol: int = DEFAULT_PROTOCOL,
         _use_new_zipfile_serialization: bool = True,
         _disable_byteorder_record: bool = False) -> None:
    """Save ``obj`` (tensors, state_dicts, nested containers) to ``f`` (a path or a binary
    file object) in PyTorch's checkpoint format; a path is written atomically."""
    buf = io.BytesIO()
    pickler = _pickle.TorchPickler(buf, pickle_protocol,
                                   legacy=not _use_new_zipfile_serialization)
    pickler.dump(obj)
    pickled = buf.getvalue()

    def write(fileobj):
        if _use_new_zipfile_serialization:
            _zip.write_archive(fileobj, _archive_name(f), pickled, pickler.storages)
        else:
            _legacy.write_legacy(fileobj, pickled, pickler.storages, pickle_protocol)

    if isinstance(f, (str, os.PathLike)):
        with atomic_write(f) as fh:
            write(fh)
    else:
        write(f)


# -- map_location -----------------------------------------------------------------------------

def _to_device(name: str):
    dev = _device_cls(name)
    if dev.type == "cpu":
        return CPU
    try:
        backend = backend_of(dev)
        available = backend.is_available()
    except (RuntimeError, ImportError, AssertionError):  # no backend for it here
        available = False
    if not available:
        if dev.type == "cuda":
            raise RuntimeError(
                "Attempting to deserialize object on a CUDA device but "
                "ember.cuda.is_available() is False. If you are running on a CPU-only machine, "
                "please use ember.load with map_location=ember.device('cpu') to map your "
                "storages to the CPU.")
        raise RuntimeError(f"Attempting to deserialize object on device {name!r}, which is "
                           "not available")
    from .._factory import resolve_device

    return resolve_device(dev)


def _placer(map_location):
    """``place(host_array, dtype, location) -> Storage`` applying ``map_location``."""

    def default(array, dtype, location):
        dev = _to_device(location)
        if dev is not CPU:
            array = backend_of(dev).to_device(array, dev.index)
        return Storage(array, dev, dtype)

    def place(array, dtype, location):
        if dtype == _pickle.BFLOAT16:  # ember has no bfloat16: widen exactly to float32
            array = (array.astype(np.uint32) << 16).view(np.float32)
            dtype = _dtype.float32
        if map_location is None:
            return default(array, dtype, location)
        if isinstance(map_location, (str, _device_cls)):
            return default(array, dtype, str(map_location))
        if isinstance(map_location, dict):
            return default(array, dtype, str(map_location.get(location, location)))
        if callable(map_location):
            result = map_location(Storage(array, CPU, dtype), location)
            if result is None:
                return default(array, dtype, location)
            if not isinstance(result, Storage):
                raise TypeError(f"map_location should return a storage or None, not "
                                f"{type(result).__name__}")
            return result
        raise ValueError(f"map_location should be a str, a device, a dict or a callable, not "
                         f"{type(map_location).__name__}")

    return place


def load(f, map_location=None, pickle_module=None, *, weights_only: bool | None = True,
         mmap: bool | None = None, check_crc32: bool = True, **pickle_load_args):
    """Load an object saved with ``ember.save`` or ``torch.save``.

    ``weights_only=True`` (the default) resolves only an allow-list of globals (tensors,
    storages, dtypes, devices, ``OrderedDict``...), calls only the rebuild functions and
    containers among them, and lets a pickled state set only the fields an object's class
    allows; anything else raises ``pickle.UnpicklingError`` without being imported or run,
    and so do opcodes a checkpoint never holds (see ``ember.serialization._unpickler``).
    ``weights_only=False`` is full pickle, for trusted files only. ``map_location`` is a
    device, a str, a dict of location renames, or a callable
    ``(storage, location) -> storage or None``.

    A zip checkpoint's records are checked against its directory before they are read, and
    their CRC-32s are verified (``check_crc32=True``, the default, for ``mmap`` loads too): a
    damaged file raises ``RuntimeError`` instead of loading other numbers. ``mmap=True`` maps
    the storages of a file path instead of reading them; verifying their CRCs reads every
    page once, so pass ``check_crc32=False`` to keep an mmap load lazy (or to load a file
    whose checksums are wrong). Legacy (pre-1.6) files have no checksums.
    """
    if weights_only is None:
        weights_only = True
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is "
                           "specified")
    if not weights_only:
        warnings.warn("ember.load(weights_only=False) runs arbitrary pickle code: use it only "
                      "for files from a trusted source", UserWarning, stacklevel=2)
    encoding = pickle_load_args.pop("encoding", "utf-8")
    if pickle_load_args:
        raise TypeError(f"load() got an unexpected keyword argument "
                        f"'{next(iter(pickle_load_args))}'")
    path = os.fspath(f) if isinstance(f, (str, os.PathLike)) else None
    if mmap and path is None:
        raise ValueError("f must be a file path in order to use the mmap argument")
    place = _placer(map_location)
    with contextlib.ExitStack() as stack:
        fileobj = stack.enter_context(open(path, "rb")) if path is not None else f
        try:
            return _load(fileobj, path, place, weights_only, pickle_module, encoding,
                         bool(mmap), check_crc32)
        except _PARSE_ERRORS as exc:
            raise RuntimeError(f"failed to load checkpoint: {type(exc).__name__}: "
                               f"{exc}") from exc


def _load(fileobj, path, place, weights_only, pickle_module, encoding, use_mmap, check_crc32):
    start = fileobj.tell()
    head = fileobj.read(4)
    fileobj.seek(start)
    if head != b"PK\x03\x04":  # not a zip: the legacy format, as PyTorch decides
        if use_mmap:
            raise RuntimeError("mmap can only be used with files saved with "
                               "`ember.save(_use_new_zipfile_serialization=True)`, please "
                               "torch.save your checkpoint with this option in order to "
                               "use mmap.")
        return _legacy.load_legacy(fileobj, place, weights_only, pickle_module, encoding)
    reader = _zip.ZipReader(fileobj, path, use_mmap, check_crc32)
    try:
        return _load_zip(reader, place, weights_only, pickle_module, encoding)
    finally:
        reader.close()


def _load_zip(reader, place, weights_only, pickle_module, encoding):
    loaded: dict[str, Storage] = {}

    def load_storage(dtype, key, location, numel, view):
        storage = loaded.get(key)
        if storage is None:
            np_dtype = np.dtype(np.uint16) if dtype == _pickle.BFLOAT16 else dtype.np
            storage = loaded[key] = place(reader.read_storage(key, np_dtype, numel), dtype,
                                          location)
        return storage

    data = reader.read_record("data.pkl")
    result = _unpickler.unpickle(data, load_storage, weights_only, pickle_module, encoding)
    reader.verify()
    return result
