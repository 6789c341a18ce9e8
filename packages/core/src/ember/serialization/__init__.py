"""``ember.save`` / ``ember.load``: PyTorch's checkpoint format, both ways.

Files written here load with ``torch.load(weights_only=True)`` and files written by
``torch.save`` (zip format, and the legacy pre-1.6 format) load here, without importing torch.
Loading is safe by default: only an allow-list of globals is resolved, which the user may
extend (``add_safe_globals``, ``safe_globals``); ``get_unsafe_globals_in_checkpoint`` lists
what a file needs beyond it without loading anything.
"""

from __future__ import annotations

import contextlib
import enum
import io
import os
import pickle
import re
import secrets
import socket
import struct
import sys
import time
import warnings
import zipfile
import zlib
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from . import _legacy, _location, _pickle, _safe_globals, _scan, _unpickler, _zip
from ._location import restore_location as default_restore_location
from ._pickle import (
    ALLOWED_GLOBALS,
    UNSAFE_MESSAGE,
    Storage,
    StorageType,
    register_parameter_class,
)
from ._safe_globals import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals

__all__ = ["save", "load", "Storage", "StorageType", "ALLOWED_GLOBALS", "DEFAULT_PROTOCOL",
           "UNSAFE_MESSAGE", "add_safe_globals", "clear_safe_globals", "get_safe_globals",
           "safe_globals", "get_unsafe_globals_in_checkpoint", "LoadEndianness",
           "get_default_load_endianness", "set_default_load_endianness",
           "default_restore_location", "atomic_write", "atomic_path", "register_parameter_class"]

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
    is_path = isinstance(f, (str, os.PathLike))
    if not is_path and not hasattr(f, "write"):
        raise AttributeError("expected 'f' to be string, path, or a file-like object with a "
                             "'write' attribute")
    if is_path:
        _check_parent_directory(os.fspath(f), _use_new_zipfile_serialization)
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

    if is_path:
        with atomic_write(f) as fh:
            write(fh)
    else:
        write(f)


def _check_parent_directory(path, zip_format: bool) -> None:
    """PyTorch's errors for a path whose directory does not exist: its zip writer's
    RuntimeError (ASCII names), else ``open``'s FileNotFoundError."""
    parent = os.path.dirname(path)
    if not parent or os.path.isdir(parent):
        return
    if zip_format and isinstance(path, str) and path.isascii():
        raise RuntimeError(f"Parent directory {parent} does not exist.")
    raise FileNotFoundError(2, "No such file or directory", path)


# -- loading ----------------------------------------------------------------------------------

class LoadEndianness(enum.Enum):
    """The byte order assumed for a zip checkpoint without a ``byteorder`` record."""

    NATIVE = 1
    LITTLE = 2
    BIG = 3


_load_endianness: LoadEndianness | None = None


def get_default_load_endianness() -> LoadEndianness | None:
    """The byte order assumed for zip checkpoints without a byteorder record (None, the
    default, means little-endian, as PyTorch writes)."""
    return _load_endianness


def set_default_load_endianness(endianness: LoadEndianness | None) -> None:
    """Set the byte order assumed for zip checkpoints without a byteorder record."""
    global _load_endianness
    if not isinstance(endianness, LoadEndianness) and endianness is not None:
        raise TypeError("Invalid argument type in function set_default_load_endianness")
    _load_endianness = endianness


def _fallback_byteorder() -> str:
    if _load_endianness is LoadEndianness.BIG:
        return "big"
    return sys.byteorder if _load_endianness is LoadEndianness.NATIVE else "little"


_UNPICKLER_ARGS = frozenset({"encoding", "errors", "fix_imports", "buffers"})


class _Options(NamedTuple):
    """What one ``ember.load`` call was asked for."""

    place: Callable  # (host_array, dtype, location) -> Storage, applying map_location
    weights_only: bool
    pickle_module: object
    load_args: dict
    mmap: bool
    check_crc32: bool


def _options(map_location, pickle_module, weights_only, mmap, check_crc32,
             pickle_load_args: dict) -> _Options:
    if weights_only is None:
        weights_only = True
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is "
                           "specified")
    if weights_only and pickle_load_args:
        warnings.warn("pickle_load_args only works if `weights_only=False`.", stacklevel=3)
        unexpected = [key for key in pickle_load_args if key != "encoding"]
        if unexpected:
            raise TypeError(f"load() got an unexpected keyword argument '{unexpected[0]}'")
    elif pickle_module in (None, pickle):
        unexpected = [key for key in pickle_load_args if key not in _UNPICKLER_ARGS]
        if unexpected:
            raise TypeError(f"'{unexpected[0]}' is an invalid keyword argument for Unpickler()")
    return _Options(_location.placer(map_location), bool(weights_only), pickle_module,
                    {"encoding": "utf-8", **pickle_load_args}, bool(mmap), check_crc32)


def load(f, map_location=None, pickle_module=None, *, weights_only: bool | None = True,
         mmap: bool | None = None, check_crc32: bool = True, **pickle_load_args):
    """Load an object saved with ``ember.save`` or ``torch.save``.

    ``weights_only=True`` (the default; None means True too) resolves only an allow-list of
    globals (tensors, storages, dtypes, devices, ``OrderedDict``...) and the user's
    (``add_safe_globals``, ``safe_globals``), calls only the rebuild functions, containers
    and user globals among them, and lets a pickled state set only the fields an object's
    class allows; anything else raises ``pickle.UnpicklingError`` without being imported or
    run, and so do opcodes a checkpoint never holds (see ``ember.serialization._unpickler``).

    ``weights_only=False`` is full pickle: it imports and runs whatever the file names, so
    a malicious file runs its code. Use it only for files from a trusted source; it is never
    chosen for you (passing ``pickle_module`` alone raises). ``pickle_load_args``
    (``encoding``, ``errors``...) go to the unpickler (only ``encoding`` with
    ``weights_only``).

    ``map_location`` is None (storages go back to where they were saved), a device or a
    str (everything goes there), a dict renaming saved locations (``{"cuda:0": "cpu"}``),
    or a callable ``(storage, location) -> storage or None`` (None: the default placement).

    A zip checkpoint's records are checked against its directory before they are read, and
    their CRC-32s are verified (``check_crc32=True``, the default, for ``mmap`` loads too): a
    damaged file raises ``RuntimeError`` instead of loading other numbers. ``mmap=True`` maps
    the storages of a file path (copy-on-write) instead of reading them; verifying their
    CRCs reads every page once, so pass ``check_crc32=False`` to keep an mmap load lazy (or
    to load a file whose checksums are wrong). Legacy (pre-1.6) files have no checksums and
    cannot be mapped.
    """
    opts = _options(map_location, pickle_module, weights_only, mmap, check_crc32,
                    pickle_load_args)
    with contextlib.ExitStack() as stack:
        fileobj, path = _opened(f, stack)
        try:
            return _load(fileobj, f, path, opts)
        except _location.MapLocationError as wrapped:  # raised by map_location: as it is
            raise wrapped.error from None
        except pickle.UnpicklingError as exc:
            if not opts.weights_only:
                raise
            raise pickle.UnpicklingError(_unpickler.weights_only_message(str(exc))) from None
        except _PARSE_ERRORS as exc:
            raise RuntimeError(f"failed to load checkpoint: {type(exc).__name__}: "
                               f"{exc}") from exc


def _opened(f, stack: contextlib.ExitStack):
    """``(binary file object, path or None)`` of ``f``, a path (opened in ``stack``) or a
    file object."""
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        return stack.enter_context(open(path, "rb")), path
    try:
        f.seek(f.tell())
    except (io.UnsupportedOperation, AttributeError) as exc:
        if "seek" in str(exc) or "tell" in str(exc):  # PyTorch's _check_seekable
            raise type(exc)(f"{exc}. You can only ember.load from a file that is seekable. "
                            "Please pre-load the data into a buffer like io.BytesIO and try to "
                            "load from it instead.") from None
        raise
    return f, None


def _is_zip(fileobj) -> bool:
    """Whether ``fileobj`` starts with a zip record (PyTorch's test), leaving it in place."""
    start = fileobj.tell()
    head = fileobj.read(4)
    fileobj.seek(start)
    return head == b"PK\x03\x04"


def _load(fileobj, f, path, opts: _Options):
    if not _is_zip(fileobj):  # the legacy format, as PyTorch decides
        if opts.mmap:
            name = f"{f}, " if isinstance(f, str) else ""
            raise RuntimeError("mmap can only be used with files saved with "
                               f"`ember.save({name}_use_new_zipfile_serialization=True), please "
                               "ember.save your checkpoint with this option in order to use "
                               "mmap.")
        return _legacy.load_legacy(fileobj, opts.place, opts.weights_only, opts.pickle_module,
                                   opts.load_args)
    if opts.mmap and path is None:
        raise ValueError("f must be a file path in order to use the mmap argument")
    reader = _zip.ZipReader(fileobj, path, opts.mmap, opts.check_crc32, _fallback_byteorder())
    try:
        return _load_zip(reader, opts)
    finally:
        reader.close()


def _is_torchscript(reader) -> bool:
    return reader.record_name("constants.pkl") in reader.entries


def _load_zip(reader, opts: _Options):
    if _is_torchscript(reader):
        if opts.weights_only:
            raise RuntimeError("Cannot use ``weights_only=True`` with TorchScript archives "
                               f"passed to ``ember.load``. {UNSAFE_MESSAGE}")
        raise RuntimeError("ember.load cannot load TorchScript archives: Ember has no "
                           "TorchScript runtime")
    loaded: dict[str, Storage] = {}

    def load_storage(dtype, key, location, numel, view):
        storage = loaded.get(key)
        if storage is None:
            np_dtype = _pickle.storage_np_dtype(dtype)
            storage = loaded[key] = opts.place(reader.read_storage(key, np_dtype, numel),
                                               dtype, location)
        return storage

    data = reader.read_record("data.pkl")
    result = _unpickler.unpickle(data, load_storage, opts.weights_only, opts.pickle_module,
                                 opts.load_args)
    reader.verify()
    return result


def get_unsafe_globals_in_checkpoint(f) -> list[str]:
    """The globals (``"module.qualname"``) a zip checkpoint's pickle names that a
    ``weights_only`` load would refuse: those neither allow-listed by default nor added with
    ``add_safe_globals``/``safe_globals`` (a ``torch.X`` name counts as added when the
    ``ember.X`` object is), and those of blocked modules. The pickle is read statically:
    nothing is imported or run. ``f`` is a path or a binary file object."""
    with contextlib.ExitStack() as stack:
        fileobj, path = _opened(f, stack)
        if not _is_zip(fileobj):
            raise ValueError("Expected input to be a checkpoint returned by ember.save")
        reader = _zip.ZipReader(fileobj, path)
        stack.callback(reader.close)
        if _is_torchscript(reader):
            raise ValueError("Expected input to be a checkpoint returned by ember.save but got "
                             "a torchscript checkpoint")
        data = reader.read_record("data.pkl")
        reader.verify()
    user = _safe_globals.UserGlobals()
    return sorted(name for name in _scan.globals_in_pickle(data)
                  if name.rsplit(".", 1)[0] in _safe_globals.BLOCKED_MODULES
                  or (name not in ALLOWED_GLOBALS and user.find(name) is None))
