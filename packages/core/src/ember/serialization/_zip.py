"""PyTorch's zip checkpoint container: ``<name>/data.pkl``, ``<name>/data/<key>`` raw
little-endian storages aligned to 64 bytes, ``<name>/version``, ``<name>/byteorder`` and
``<name>/.data/serialization_id``, written and read with :mod:`zipfile`."""

from __future__ import annotations

import mmap as _mmap
import os
import secrets
import struct
import sys
import zipfile
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np

ALIGNMENT = 64
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")  # zipfile's structFileHeader
_LOCAL_SIGNATURE = b"PK\003\004"


class ZipWriter:
    """Writes records into a PyTorch-style archive, each record's data 64-byte aligned."""

    def __init__(self, fileobj, archive_name: str):
        self.zip = zipfile.ZipFile(fileobj, mode="w", compression=zipfile.ZIP_STORED,
                                   allowZip64=True)
        self.prefix = archive_name

    def write_record(self, name: str, data, crc=None) -> None:
        """Write ``data`` (bytes, str or a contiguous array) as ``<archive>/<name>``;
        ``crc`` is its CRC-32 when already known (a future, computed beside the writes)."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        view = memoryview(data).cast("B") if not isinstance(data, bytes) else data
        info = zipfile.ZipInfo(f"{self.prefix}/{name}", date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_STORED
        info.file_size = len(view)
        info.extra = self._padding(info)
        with self.zip.open(info, mode="w") as dest:
            if crc is not None and hasattr(dest, "_crc") and hasattr(dest, "_fileobj"):
                # one buffer write; the CRC came from a worker thread (zlib releases the GIL)
                dest._fileobj.write(view)
                dest._file_size = dest._compress_size = len(view)
                dest._crc = crc.result()
            else:
                dest.write(view)

    def _padding(self, info: zipfile.ZipInfo) -> bytes:
        # the data starts after the 30-byte local header, the name and the extra field
        # (plus zipfile's zip64 field for large records): pad with an extra "FB" field
        zip64 = info.file_size * 1.05 > zipfile.ZIP64_LIMIT
        start = self.zip.fp.tell() + 30 + len(info.filename.encode("utf-8")) + (20 if zip64 else 0)
        pad = -start % ALIGNMENT
        if pad == 0:
            return b""
        if pad < 4:
            pad += ALIGNMENT
        return b"FB" + struct.pack("<H", pad - 4) + b"Z" * (pad - 4)

    def close(self) -> None:
        self.write_record("version", "3\n")
        self.write_record(".data/serialization_id", str(secrets.randbits(128)).zfill(40)[:40])
        self.zip.close()


def write_archive(fileobj, archive_name: str, pickled: bytes, storages: dict) -> None:
    """The whole archive in PyTorch's record order: data.pkl, format records, storages."""
    writer = ZipWriter(fileobj, archive_name)
    try:
        writer.write_record("data.pkl", pickled)
        writer.write_record(".format_version", "1")
        writer.write_record(".storage_alignment", str(ALIGNMENT))
        writer.write_record("byteorder", sys.byteorder)
        keys = sorted(storages, key=int)
        arrays = [np.ascontiguousarray(storages[key].array) for key in keys]
        with ThreadPoolExecutor(max_workers=1) as pool:
            crcs = [pool.submit(zlib.crc32, memoryview(a).cast("B")) for a in arrays]
            for key, arr, crc in zip(keys, arrays, crcs):
                writer.write_record(f"data/{key}", arr, crc)
        writer.close()
    except BaseException:
        writer.zip._didModify = False  # no central directory for a failed write
        writer.zip.close()
        raise


def _check_name(name: str) -> None:
    parts = name.replace("\\", "/").split("/")
    if name.startswith(("/", "\\")) or ".." in parts or (len(name) > 1 and name[1] == ":"):
        raise ValueError(f"unsafe path in checkpoint archive: {name!r}")


class ZipReader:
    """Reads a PyTorch zip checkpoint, validating its directory before any data is read."""

    def __init__(self, fileobj, path: str | None = None, use_mmap: bool = False):
        try:
            self.zip = zipfile.ZipFile(fileobj)
        except (zipfile.BadZipFile, EOFError, OSError, ValueError, struct.error) as exc:
            raise RuntimeError("PytorchStreamReader failed reading zip archive: failed finding "
                               f"central directory ({exc})") from None
        self.fp = fileobj
        infos = self.zip.infolist()
        if not infos:
            raise RuntimeError("PytorchStreamReader failed reading zip archive: empty archive")
        self.entries: dict[str, zipfile.ZipInfo] = {}
        for info in infos:
            _check_name(info.filename)
            if info.filename in self.entries:
                raise ValueError(f"duplicate record in checkpoint archive: {info.filename!r}")
            self.entries[info.filename] = info
        self.prefix = infos[0].filename.split("/", 1)[0]
        for name in self.entries:
            if not name.startswith(self.prefix + "/"):
                raise ValueError(f"checkpoint records must share one top-level folder: "
                                 f"{name!r} is not under {self.prefix!r}")
        if self.record_name("data.pkl") not in self.entries:
            raise RuntimeError("PytorchStreamReader failed locating file data.pkl: file not found")
        self.file_size = _stream_size(fileobj)
        self.mmap = None
        if use_mmap:
            with open(path, "rb") as fh:
                self.mmap = _mmap.mmap(fh.fileno(), 0, access=_mmap.ACCESS_COPY)
        order = self.read_text("byteorder", "little")
        if order not in ("little", "big"):
            raise ValueError(f"invalid byteorder record {order!r}")
        self.swap = order != sys.byteorder

    def record_name(self, name: str) -> str:
        return f"{self.prefix}/{name}"

    def read_record(self, name: str, limit: int | None = None) -> bytes:
        info = self.entries[self.record_name(name)]
        if limit is not None and info.file_size > limit:
            raise ValueError(f"record {name!r} is too large ({info.file_size} bytes)")
        self._check_bounds(info)
        with self.zip.open(info) as fh:
            data = fh.read(info.file_size + 1)
        if len(data) != info.file_size:
            raise ValueError(f"record {name!r} is truncated or has a wrong size")
        return data

    def read_text(self, name: str, default: str) -> str:
        if self.record_name(name) not in self.entries:
            return default
        return self.read_record(name, limit=1024).decode("utf-8").strip()

    def _check_bounds(self, info: zipfile.ZipInfo) -> None:
        if self.file_size is not None and (
                info.header_offset + 30 + info.compress_size > self.file_size
                or (info.compress_type == zipfile.ZIP_STORED
                    and info.compress_size != info.file_size)):
            raise ValueError(f"record {info.filename!r} runs past the end of the file")

    def _data_offset(self, info: zipfile.ZipInfo) -> int:
        self.fp.seek(info.header_offset)
        header = self.fp.read(30)
        if len(header) != 30:
            raise ValueError(f"record {info.filename!r}: truncated local header")
        fields = _LOCAL_HEADER.unpack(header)
        if fields[0] != _LOCAL_SIGNATURE:
            raise ValueError(f"record {info.filename!r}: bad local header")
        start = info.header_offset + 30 + fields[10] + fields[11]
        if self.file_size is not None and start + info.file_size > self.file_size:
            raise ValueError(f"record {info.filename!r} runs past the end of the file")
        return start

    def read_storage(self, key: str, np_dtype: np.dtype, numel: int) -> np.ndarray:
        """The storage record ``data/<key>`` as a 1-D array of ``numel`` elements; its size is
        checked against the record's before anything is allocated."""
        name = self.record_name(f"data/{key}")
        info = self.entries.get(name)
        if info is None:
            raise RuntimeError(f"PytorchStreamReader failed locating file data/{key}: "
                               "file not found")
        nbytes = numel * np_dtype.itemsize
        if info.file_size != nbytes:
            raise ValueError(f"storage data/{key} holds {info.file_size} bytes but the "
                             f"checkpoint declares {numel} elements of {np_dtype} "
                             f"({nbytes} bytes)")
        self._check_bounds(info)
        if info.compress_type == zipfile.ZIP_STORED:
            start = self._data_offset(info)
            if self.mmap is not None:
                arr = np.frombuffer(self.mmap, np_dtype, count=numel, offset=start)
            else:
                arr = np.empty(numel, np_dtype)
                self.fp.seek(start)
                got = self.fp.readinto(memoryview(arr).cast("B")) if nbytes else 0
                if got != nbytes:
                    raise ValueError(f"storage data/{key} is truncated")
        else:
            with self.zip.open(info) as fh:
                raw = fh.read(nbytes + 1)
            if len(raw) != nbytes:
                raise ValueError(f"storage data/{key} is truncated")
            arr = np.frombuffer(raw, np_dtype).copy()
        if self.swap:
            arr = arr.byteswap()
        return arr


def _stream_size(fileobj) -> int | None:
    try:
        pos = fileobj.tell()
        end = fileobj.seek(0, os.SEEK_END)
        fileobj.seek(pos)
        return end
    except (OSError, AttributeError, ValueError):
        return None
