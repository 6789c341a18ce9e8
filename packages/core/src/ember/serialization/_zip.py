"""PyTorch's zip checkpoint container: ``<name>/data.pkl``, ``<name>/data/<key>`` raw
little-endian storages aligned to 64 bytes, ``<name>/version``, ``<name>/byteorder`` and
``<name>/.data/serialization_id``. Written with :mod:`zipfile`; read with its directory
parser, then record by record at their offsets, checked (``ZipReader``)."""

from __future__ import annotations

import io
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

    def __init__(self, fileobj, archive_name: str, alignment: int = ALIGNMENT,
                 compute_crc32: bool = True):
        self.zip = zipfile.ZipFile(fileobj, mode="w", compression=zipfile.ZIP_STORED,
                                   allowZip64=True)
        self.prefix = archive_name
        self.alignment = alignment
        self.compute_crc32 = compute_crc32  # False: every record's CRC-32 is written as 0

    def _open(self, name: str, size: int):
        info = zipfile.ZipInfo(f"{self.prefix}/{name}", date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_STORED
        info.file_size = size
        info.extra = self._padding(info)
        return self.zip.open(info, mode="w")

    @staticmethod
    def _fast(dest) -> bool:
        """Whether zipfile's record writer has the fields that ``_written`` sets (CPython's
        ``_ZipWriteFile``), so that data can go to the archive's file without its CRC pass."""
        return hasattr(dest, "_crc") and hasattr(dest, "_fileobj")

    @staticmethod
    def _written(dest, size: int, crc: int) -> None:
        dest._file_size = dest._compress_size = size
        dest._crc = crc

    def write_record(self, name: str, data, crc=None) -> None:
        """Write ``data`` (bytes, str or a contiguous array) as ``<archive>/<name>``;
        ``crc`` is its CRC-32 when already known (a future, computed beside the writes)."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        view = memoryview(data).cast("B") if not isinstance(data, bytes) else data
        with self._open(name, len(view)) as dest:
            if (crc is not None or not self.compute_crc32) and self._fast(dest):
                # one buffer write; the CRC came from a worker thread (zlib releases the GIL)
                dest._fileobj.write(view)
                self._written(dest, len(view), crc.result() if self.compute_crc32 else 0)
            else:
                dest.write(view)

    def write_record_metadata(self, name: str, size: int) -> None:
        """A record of ``size`` bytes whose data is left unwritten (``skip_data``): a hole
        in a seekable file, zeros in a stream; its CRC-32 is 0, which loading does not
        check."""
        with self._open(name, size) as dest:
            if size and self._fast(dest) and self.zip._seekable:
                # a hole: zipfile writes the header when the record closes, then goes on here
                dest._fileobj.seek(size, io.SEEK_CUR)
                self._written(dest, size, 0)
            elif size and self._fast(dest):
                zeros = bytes(min(size, _CHUNK))
                for start in range(0, size, len(zeros)):
                    dest._fileobj.write(zeros[:size - start])
                self._written(dest, size, 0)
            else:
                dest.write(bytes(size))

    def _padding(self, info: zipfile.ZipInfo) -> bytes:
        # the data starts after the 30-byte local header, the name and the extra field
        # (plus zipfile's zip64 field for large records): pad with an extra "FB" field
        zip64 = info.file_size * 1.05 > zipfile.ZIP64_LIMIT
        start = self.zip.fp.tell() + 30 + len(info.filename.encode("utf-8")) + (20 if zip64 else 0)
        pad = -start % self.alignment
        if pad == 0:
            return b""
        if pad < 4:
            pad += self.alignment
        return b"FB" + struct.pack("<H", pad - 4) + b"Z" * (pad - 4)

    def close(self) -> None:
        self.write_record("version", "3\n")
        self.write_record(".data/serialization_id", str(secrets.randbits(128)).zfill(40)[:40])
        self.zip.close()


def write_archive(fileobj, archive_name: str, pickled: bytes, storages: dict, *,
                  alignment: int = ALIGNMENT, compute_crc32: bool = True,
                  skip_data: bool = False, byteorder_record: bool = True) -> None:
    """The whole archive in PyTorch's record order: data.pkl, format records, storages
    (their bytes left unwritten with ``skip_data``)."""
    writer = ZipWriter(fileobj, archive_name, alignment, compute_crc32)
    try:
        writer.write_record("data.pkl", pickled)
        writer.write_record(".format_version", "1")
        writer.write_record(".storage_alignment", str(alignment))
        if byteorder_record:
            writer.write_record("byteorder", sys.byteorder)
        keys = sorted(storages, key=int)
        if skip_data:
            for key in keys:
                writer.write_record_metadata(f"data/{key}", storages[key].array.nbytes)
            writer.close()
            return
        arrays = [np.ascontiguousarray(storages[key].array) for key in keys]
        if not compute_crc32:
            for key, arr in zip(keys, arrays):
                writer.write_record(f"data/{key}", arr)
            writer.close()
            return
        with ThreadPoolExecutor(max_workers=1) as pool:
            crcs = [pool.submit(zlib.crc32, memoryview(a).cast("B")) for a in arrays]
            for key, arr, crc in zip(keys, arrays, crcs):
                writer.write_record(f"data/{key}", arr, crc)
        writer.close()
    except BaseException:
        writer.zip._didModify = False  # no central directory for a failed write
        writer.zip.close()
        raise


# -- reading ----------------------------------------------------------------------------------

MAX_DEFLATE_RATIO = 1032  # deflate never turns one byte into more than 1032
_CHUNK = 1 << 20  # bytes read or inflated per step
PARALLEL_CRC_BYTES = 1 << 20  # larger records have their CRC-32 computed on worker threads,
CRC_PIECE = 4 << 20  # in pieces of this many bytes
_LOCAL_SIZE = _LOCAL_HEADER.size


def _corrupt(what: str) -> RuntimeError:
    return RuntimeError(f"PytorchStreamReader failed reading zip archive: {what}")


def _miniz_error(fileobj) -> str:
    """PyTorch's message for an archive whose directory cannot be read (miniz's words)."""
    try:
        small = fileobj.seek(0, io.SEEK_END) < 22  # shorter than an end-of-directory record
    except (OSError, ValueError, AttributeError):
        small = False
    return (f"{'not a ZIP archive' if small else 'failed finding central directory'}. This is "
            "an internal miniz error. If you are seeing this error, there is a high likelihood "
            "that your checkpoint file is corrupted. This can happen if the checkpoint was not "
            "saved properly, was transferred incorrectly, or the file was modified after saving.")


def _check_name(name: str) -> None:
    parts = name.replace("\\", "/").split("/")
    if name.startswith(("/", "\\")) or ".." in parts or (len(name) > 1 and name[1] == ":"):
        raise _corrupt(f"unsafe record name {name!r}")


def _check_record(info: zipfile.ZipInfo) -> None:
    """What the central directory says of a record, before anything is read."""
    name = info.filename
    if info.flag_bits & 0x1:
        raise RuntimeError(f"PytorchStreamReader failed retrieving file meta-data for {name}: "
                           "unsupported encryption")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise RuntimeError(f"PytorchStreamReader failed retrieving file meta-data for {name}: "
                           f"unsupported compression method {info.compress_type}")
    if info.compress_type == zipfile.ZIP_STORED and info.compress_size != info.file_size:
        raise _corrupt(f"record {name!r} is stored with {info.compress_size} bytes but "
                       f"declares {info.file_size}")
    if info.file_size > MAX_DEFLATE_RATIO * info.compress_size + 1024:
        raise _corrupt(f"record {name!r} declares {info.file_size} bytes from "
                       f"{info.compress_size} compressed bytes, more than deflate can produce")


class ZipReader:
    """Reads a PyTorch zip checkpoint, validating its whole directory before any data is
    read: record names, compression (stored or deflated; a deflated record cannot declare
    more than deflate can produce from its bytes), local headers, and that records neither
    overlap nor run past the central directory. A record is read by offset, never beyond
    its declared size, and its CRC-32 is checked unless ``check_crc32`` is False (a recorded
    CRC of 0 means none was computed, as ``torch.save`` writes under
    ``set_crc32_options(False)``). Large CRCs run on worker threads: call ``verify()``
    before trusting what was read, and ``close()`` at the end. Storages are read in the
    archive's ``byteorder``, or ``default_byteorder`` when it has no such record."""

    def __init__(self, fileobj, path: str | None = None, use_mmap: bool = False,
                 check_crc32: bool = True, default_byteorder: str = "little", *,
                 shared: bool = False, skip_data: bool = False):
        try:
            self.zip = zipfile.ZipFile(fileobj)
        except (zipfile.BadZipFile, EOFError, OSError, ValueError, struct.error):
            raise _corrupt(_miniz_error(fileobj)) from None
        self.fp = fileobj
        self.check_crc32 = check_crc32
        self._crcs = _CrcChecks()
        self.entries = self._index(self.zip.infolist())
        self._starts = self._locate(fileobj)
        self.mmap = None
        self.skip_data = skip_data  # storages are allocated, not read (``skip_data``)
        if use_mmap:  # MAP_SHARED: writes to the tensors go to the file
            with open(path, "r+b" if shared else "rb") as fh:
                self.mmap = _mmap.mmap(fh.fileno(), 0, access=_mmap.ACCESS_WRITE if shared
                                       else _mmap.ACCESS_COPY)
        order = self.read_text("byteorder", default_byteorder)
        if order not in ("little", "big"):
            raise _corrupt(f"invalid byteorder record {order!r}")
        self.swap = order != sys.byteorder

    def _index(self, infos: list) -> dict[str, zipfile.ZipInfo]:
        if not infos:
            raise _corrupt("empty archive")
        entries: dict[str, zipfile.ZipInfo] = {}
        self.prefix = infos[0].filename.split("/", 1)[0]
        for info in infos:
            _check_name(info.filename)
            if not info.filename.startswith(self.prefix + "/"):
                raise _corrupt(f"file in archive is not in a subdirectory {self.prefix}/: "
                               f"{info.filename}")
            if info.filename in entries:
                raise _corrupt(f"duplicate record {info.filename!r}")
            _check_record(info)
            entries[info.filename] = info
        if self.record_name("data.pkl") not in entries:
            raise RuntimeError("PytorchStreamReader failed locating file data.pkl: file not "
                               "found")
        return entries

    def _locate(self, fp) -> dict[str, int]:
        """Each record's data offset, from its local header; records must not overlap."""
        starts, spans = {}, []
        for name, info in self.entries.items():
            if info.header_offset < 0:  # zipfile adds the archive's offset: garbage can
                raise _corrupt(f"bad local header offset for record {name!r}")  # underflow
            fp.seek(info.header_offset)
            header = fp.read(_LOCAL_SIZE)
            if len(header) != _LOCAL_SIZE or header[:4] != _LOCAL_SIGNATURE:
                raise _corrupt(f"bad local header for record {name!r}")
            fields = _LOCAL_HEADER.unpack(header)
            encoding = "utf-8" if info.flag_bits & 0x800 else "cp437"
            if fp.read(fields[10]) != info.orig_filename.encode(encoding):
                raise _corrupt(f"record {name!r} has another name in its local header")
            starts[name] = info.header_offset + _LOCAL_SIZE + fields[10] + fields[11]
            spans.append((info.header_offset, starts[name] + info.compress_size, name))
        spans.sort()
        ends = [(getattr(self.zip, "start_dir", None), 0, "the central directory")]
        for (_, end, name), (next_start, _, next_name) in zip(spans, spans[1:] + ends):
            if next_start is not None and end > next_start:
                raise _corrupt(f"record {name!r} overlaps {next_name}")
        return starts

    def record_name(self, name: str) -> str:
        return f"{self.prefix}/{name}"

    def read_record(self, name: str, limit: int | None = None) -> bytes:
        """A small record's bytes (``data.pkl``, ``byteorder``)."""
        info = self.entries[self.record_name(name)]
        if limit is not None and info.file_size > limit:
            raise _corrupt(f"record {name!r} is too large ({info.file_size} bytes)")
        data = bytearray(info.file_size)
        self._read_into(info, memoryview(data))
        return bytes(data)

    def read_text(self, name: str, default: str) -> str:
        if self.record_name(name) not in self.entries:
            return default
        return self.read_record(name, limit=1024).decode("utf-8").strip()

    def read_storage(self, key: str, np_dtype: np.dtype, numel: int) -> np.ndarray:
        """The storage record ``data/<key>`` as a 1-D array of ``numel`` elements; its size is
        checked against the record's before anything is allocated or read."""
        name = self.record_name(f"data/{key}")
        info = self.entries.get(name)
        if info is None:
            raise RuntimeError(f"PytorchStreamReader failed locating file data/{key}: "
                               "file not found")
        nbytes = numel * np_dtype.itemsize
        if info.file_size != nbytes:
            raise RuntimeError(f"PytorchStreamReader failed reading file data/{key}: it holds "
                               f"{info.file_size} bytes but the checkpoint declares {numel} "
                               f"elements of {np_dtype} ({nbytes} bytes)")
        if self.skip_data:
            return np.empty(numel, np_dtype)
        if self.mmap is not None and info.compress_type == zipfile.ZIP_STORED:
            start = self._starts[name]
            arr = np.frombuffer(self.mmap, np_dtype, count=numel, offset=start)
            self._check_crc(info, memoryview(self.mmap)[start:start + nbytes])
        else:
            arr = np.empty(numel, np_dtype)
            self._read_into(info, memoryview(arr).cast("B"))
        return arr.byteswap() if self.swap else arr

    def _read_into(self, info: zipfile.ZipInfo, out: memoryview) -> None:
        """Fill ``out`` with the record's data, which must be exactly its size."""
        self.fp.seek(self._starts[info.filename])
        if info.compress_type == zipfile.ZIP_STORED:
            if _read_exact(self.fp, out) != len(out):
                raise _corrupt(f"record {info.filename!r} is truncated")
            self._check_crc(info, out)
            return
        try:
            crc = _inflate(self.fp, info, out)
        except zlib.error as exc:
            raise _corrupt(f"record {info.filename!r} is not valid deflate data ({exc})") \
                from None
        if self.check_crc32 and info.CRC:
            _compare_crc(info.filename, crc, info.CRC)

    def _check_crc(self, info: zipfile.ZipInfo, data: memoryview) -> None:
        if self.check_crc32 and info.CRC:
            self._crcs.check(info.filename, data, info.CRC)

    def verify(self) -> None:
        """Wait for the CRC-32 checks still running; raise if one failed."""
        self._crcs.finish()

    def close(self) -> None:
        self._crcs.close()


def _read_exact(fp, out: memoryview) -> int:
    done = 0
    while done < len(out):
        got = fp.readinto(out[done:])
        if not got:
            break
        done += got
    return done


def _inflate(fp, info: zipfile.ZipInfo, out: memoryview) -> int:
    """Inflate the record's raw deflate stream (``info.compress_size`` bytes at ``fp``'s
    position) into ``out``, which it must fill exactly: never more than ``len(out) + 1``
    bytes are produced. Returns the CRC-32 of the output."""
    name, total = info.filename, len(out)
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
    pending, left, pos, crc = b"", info.compress_size, 0, 0
    while not inflater.eof:
        if not pending and left:
            pending = fp.read(min(left, _CHUNK))
            left -= len(pending)
            if not pending:
                raise _corrupt(f"record {name!r} is truncated")
        chunk = inflater.decompress(pending, min(total - pos, _CHUNK) + 1)
        pending = inflater.unconsumed_tail
        if pos + len(chunk) > total:
            raise _corrupt(f"record {name!r} inflates to more than its declared {total} bytes")
        if not (chunk or pending or left):
            raise _corrupt(f"record {name!r} ends before its compressed stream does")
        out[pos:pos + len(chunk)] = chunk
        crc = zlib.crc32(chunk, crc)
        pos += len(chunk)
    if pos != total or left or pending or inflater.unused_data:
        raise _corrupt(f"record {name!r} inflates to {pos} bytes, not its declared {total}, "
                       "or has data after its compressed stream")
    return crc


def _compare_crc(name: str, got: int, expected: int) -> None:
    if got != expected:
        raise RuntimeError(
            f"PytorchStreamReader failed reading file {name}: CRC-32 mismatch ({got:#010x}, "
            f"recorded {expected:#010x}): the file is corrupted. ember.load(..., "
            "check_crc32=False) skips the check.")


class _CrcChecks:
    """CRC-32 checks of records: small ones at once, large ones in ``CRC_PIECE`` pieces on
    worker threads (zlib releases the GIL) while the loader goes on, all settled by
    ``finish()``."""

    def __init__(self):
        self._pool: ThreadPoolExecutor | None = None
        self._pending: list = []

    def check(self, name: str, data: memoryview, expected: int) -> None:
        if len(data) < PARALLEL_CRC_BYTES:
            _compare_crc(name, zlib.crc32(data), expected)
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1))
        pieces = [self._pool.submit(zlib.crc32, data[i:i + CRC_PIECE])
                  for i in range(0, len(data), CRC_PIECE)]
        self._pending.append((name, expected, pieces, len(data)))

    def finish(self) -> None:
        pending, self._pending = self._pending, []
        for name, expected, pieces, size in pending:
            crc = pieces[0].result()
            for i, piece in enumerate(pieces[1:], 1):
                crc = crc32_combine(crc, piece.result(), min(CRC_PIECE, size - i * CRC_PIECE))
            _compare_crc(name, crc, expected)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


# -- CRC-32 of concatenated data from the parts' CRCs: zlib's crc32_combine (crc32.c), which
# Python's zlib does not expose. Polynomials over GF(2), bit-reflected as CRC-32 keeps them.

_POLY = 0xEDB88320


def _multmodp(a: int, b: int) -> int:
    """a * b modulo the CRC-32 polynomial; ``a`` is not 0."""
    m, p = 1 << 31, 0
    while True:
        if a & m:
            p ^= b
            if a & (m - 1) == 0:
                return p
        m >>= 1
        b = (b >> 1) ^ _POLY if b & 1 else b >> 1


def _powers_of_x() -> list[int]:
    table = [1 << 30]  # x^1, then x^2, x^4, x^8...
    for _ in range(31):
        table.append(_multmodp(table[-1], table[-1]))
    return table


_X2N = _powers_of_x()


def _x8nmodp(n: int) -> int:
    """x^(8n) modulo the polynomial: the shift past ``n`` bytes."""
    p, k = 1 << 31, 3  # x^0, and n counts bytes: 2^3 bits
    while n:
        if n & 1:
            p = _multmodp(_X2N[k & 31], p)
        n >>= 1
        k += 1
    return p


_PIECE_SHIFT = _x8nmodp(CRC_PIECE)


def crc32_combine(crc1: int, crc2: int, len2: int) -> int:
    """The CRC-32 of ``a + b`` from ``crc1 = crc32(a)``, ``crc2 = crc32(b)``, ``len(b)``."""
    shift = _PIECE_SHIFT if len2 == CRC_PIECE else _x8nmodp(len2)
    return _multmodp(shift, crc1) ^ crc2
