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
import shutil
import socket
import struct
import sys
import tempfile
import threading
import time
import warnings
import zipfile
import zlib
from collections.abc import Callable
from typing import IO, NamedTuple

import numpy as np

from .._device import device as _device
from ..utils.serialization import config as _config
from . import _legacy, _location, _pickle, _safe_globals, _scan, _unpickler, _zip
from ._legacy import MAGIC_NUMBER, PROTOCOL_VERSION
from ._location import location_tag, register_package
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
           "default_restore_location", "atomic_write", "atomic_path", "register_parameter_class",
           "SourceChangeWarning", "mkdtemp", "register_package",
           "check_module_version_greater_or_equal", "validate_cuda_device",
           "validate_hpu_device", "location_tag", "normalize_storage_type",
           "storage_to_tensor_type", "get_crc32_options", "set_crc32_options",
           "get_default_mmap_options", "set_default_mmap_options", "skip_data"]

DEFAULT_PROTOCOL = 2
# PyTorch's module constants, which programs import (``torch.serialization.MAP_LOCATION`` in
# type hints, the legacy format's sizes and magic number)
LONG_SIZE, INT_SIZE, SHORT_SIZE = 8, 4, 2
STORAGE_KEY_SEPARATOR = ","
MAP_SHARED, MAP_PRIVATE = 1, 2  # mmap's flags on Linux and macOS (``set_default_mmap_options``)
FileLike = str | os.PathLike | IO[bytes]
STORAGE = Storage
MAP_LOCATION = Callable[[Storage, str], Storage] | _device | str | dict[str, str] | None


class SourceChangeWarning(Warning):
    """PyTorch warns with it when a full-pickle load finds a module's source changed since
    it was saved; Ember saves no source, so it is never raised here (programs filter it)."""


@contextlib.contextmanager
def mkdtemp():
    """A temporary directory, removed with its contents at the end of the block."""
    path = tempfile.mkdtemp()
    try:
        yield path
    finally:
        shutil.rmtree(path)


def check_module_version_greater_or_equal(module, req_version_tuple,
                                          error_if_malformed: bool = True) -> bool:
    """Whether ``module.__version__`` (``"x.y.z"``) is at least ``req_version_tuple``, its
    fields cast to the tuple's types; a version that cannot be compared raises RuntimeError
    (or warns and counts as met when ``error_if_malformed`` is False)."""
    try:
        fields = module.__version__.split(".")
        version = tuple(type(want)(fields[i]) for i, want in enumerate(req_version_tuple))
        return version >= req_version_tuple
    except Exception as exc:
        message = (f"'{module.__name__}' module version string is malformed "
                   f"'{module.__version__}' and cannot be compared with tuple "
                   f"{req_version_tuple!s}")
        if error_if_malformed:
            raise RuntimeError(message) from exc
        warnings.warn(message + ", but continuing assuming that requirement is met",
                      stacklevel=2)
        return True


def validate_cuda_device(location) -> int:
    """The CUDA device index of ``location`` (``"cuda:1"``), after checking that CUDA is
    available and has that device (PyTorch's errors)."""
    return _location.validate_device(location, "cuda")


def validate_hpu_device(location) -> int:
    """The HPU device index of ``location`` (Ember has no HPU backend: only parsed)."""
    return _location.validate_device(location, "hpu")


def normalize_storage_type(storage_type):
    """The ``ember.<Name>Storage`` class of a storage class of the same name."""
    from .. import _storage

    return getattr(_storage, storage_type.__name__)


def storage_to_tensor_type(storage):
    """The legacy tensor type of a typed storage (a float32 storage on the CPU ->
    ``ember.FloatTensor``, on CUDA -> ``ember.cuda.FloatTensor``)."""
    from .. import cuda

    name = _pickle.STORAGE_NAMES.get(getattr(storage, "dtype", None))
    if name is None:
        raise AttributeError(f"{type(storage).__name__} has no legacy tensor type")
    module = cuda if _device(storage.device).type == "cuda" else sys.modules["ember"]
    return getattr(module, name.replace("Storage", "Tensor"))


def get_crc32_options() -> bool:
    """Whether ``ember.save`` computes and writes each record's CRC-32 (default True)."""
    return _config.save.compute_crc32


def set_crc32_options(compute_crc32: bool) -> None:
    """Set whether ``ember.save`` computes each record's CRC-32; without, it writes 0, which
    ``ember.load`` and ``torch.load`` accept (unzip tools will report bad CRCs)."""
    _config.save.compute_crc32 = compute_crc32


def get_default_mmap_options() -> int | None:
    """The mmap flags of ``ember.load(mmap=True)``: ``MAP_PRIVATE`` (copy-on-write) unless
    set to ``MAP_SHARED``."""
    return _config.load.mmap_flags


class set_default_mmap_options:
    """Set the mmap flags of ``ember.load(mmap=True)`` to ``mmap.MAP_PRIVATE`` (writes to a
    loaded tensor stay in memory, the default) or ``mmap.MAP_SHARED`` (they go to the file,
    which must be writable); as a context manager, the previous flags return at its end."""

    def __init__(self, flags: int) -> None:
        if sys.platform == "win32":
            raise RuntimeError("Changing the default mmap options is currently not supported "
                               "for Windows")
        if flags != MAP_PRIVATE and flags != MAP_SHARED:
            raise ValueError("Invalid argument in function set_default_mmap_options, expected "
                             f"mmap.MAP_PRIVATE or mmap.MAP_SHARED, but got {flags}")
        self.prev = _config.load.mmap_flags
        _config.load.mmap_flags = flags

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        _config.load.mmap_flags = self.prev


class _SerializationLocal(threading.local):
    skip_data = False
    materialize_fake_tensors = False


_TLS = _SerializationLocal()


class skip_data:
    """Within the block, ``ember.save`` writes each storage's record without its bytes (the
    archive has its full layout; the data can be written in a separate pass) and
    ``ember.load`` allocates the storages without reading them (their contents are
    unspecified). Per thread, as PyTorch's. ``materialize_fake_tensors`` is accepted for
    PyTorch's signature: Ember has no fake tensors (meta tensors save as meta)."""

    def __init__(self, materialize_fake_tensors: bool = False):
        self.materialize_fake_tensors = materialize_fake_tensors

    def __enter__(self):
        self._old = (_TLS.skip_data, _TLS.materialize_fake_tensors)
        _TLS.skip_data, _TLS.materialize_fake_tensors = True, self.materialize_fake_tensors

    def __exit__(self, type, value, tb):
        _TLS.skip_data, _TLS.materialize_fake_tensors = self._old

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
    if not _use_new_zipfile_serialization and _TLS.skip_data:
        raise RuntimeError("Cannot use skip_data=True with _use_new_zipfile_serialization=False")
    if is_path:
        _check_parent_directory(os.fspath(f), _use_new_zipfile_serialization)
    alignment = _storage_alignment()
    buf = io.BytesIO()
    pickler = _pickle.TorchPickler(buf, pickle_protocol,
                                   legacy=not _use_new_zipfile_serialization)
    pickler.dump(obj)
    pickled = buf.getvalue()

    def write(fileobj):
        if _use_new_zipfile_serialization:
            _zip.write_archive(fileobj, _archive_name(f), pickled, pickler.storages,
                               alignment=alignment, compute_crc32=_config.save.compute_crc32,
                               skip_data=_TLS.skip_data,
                               byteorder_record=not _disable_byteorder_record)
        else:
            _legacy.write_legacy(fileobj, pickled, pickler.storages, pickle_protocol)

    if is_path:
        with atomic_write(f) as fh:
            write(fh)
    else:
        write(f)


def _storage_alignment() -> int:
    alignment = _config.save.storage_alignment
    if (not isinstance(alignment, int) or isinstance(alignment, bool) or alignment < 1
            or alignment & (alignment - 1)):
        raise ValueError("torch.utils.serialization.config.save.storage_alignment must be a "
                         f"positive power of two, got {alignment!r}")
    return alignment


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


def get_default_load_endianness() -> LoadEndianness | None:
    """The byte order assumed for zip checkpoints without a byteorder record (None, the
    default, means little-endian, as PyTorch writes; ``config.load.endianness``)."""
    return _config.load.endianness


def set_default_load_endianness(endianness: LoadEndianness | None) -> None:
    """Set the byte order assumed for zip checkpoints without a byteorder record."""
    if not isinstance(endianness, LoadEndianness) and endianness is not None:
        raise TypeError("Invalid argument type in function set_default_load_endianness")
    _config.load.endianness = endianness


def _fallback_byteorder() -> str:
    endianness = _config.load.endianness
    if endianness is LoadEndianness.BIG:
        return "big"
    return sys.byteorder if endianness is LoadEndianness.NATIVE else "little"


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
    if mmap is None:
        mmap = _config.load.mmap
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
    the storages of a file path (copy-on-write, or shared with the file after
    ``set_default_mmap_options(mmap.MAP_SHARED)``) instead of reading them; verifying their
    CRCs reads every page once, so pass ``check_crc32=False`` to keep an mmap load lazy (or
    to load a file whose checksums are wrong). ``mmap=None`` follows
    ``ember.utils.serialization.config.load.mmap`` (False). Legacy (pre-1.6) files have no
    checksums and cannot be mapped. Within ``skip_data()`` the storages are allocated and
    not read.
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
    reader = _zip.ZipReader(fileobj, path, opts.mmap, opts.check_crc32, _fallback_byteorder(),
                            shared=_config.load.mmap_flags == MAP_SHARED,
                            skip_data=_TLS.skip_data)
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
