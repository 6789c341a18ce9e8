"""A small reader of MATLAB level 5 ``.mat`` files, enough for the datasets that ship them.

torchvision reads these files with ``scipy.io.loadmat``; Ember does not depend on SciPy, so
:func:`loadmat` here returns what ``scipy.io.loadmat(path)`` (or ``squeeze_me=True``) returns
for numeric, logical, character, cell and struct arrays: arrays keep the type they were
*stored* with (MATLAB saves a double matrix of small integers as ``uint8``, and SciPy's default
``mat_dtype=False`` returns it so), laid out in MATLAB's column-major order; character arrays
become arrays of ``str`` (one per row); cells are object arrays; structs are structured arrays
with one object field per struct field; sparse matrices come back as :class:`SparseMatrix` (a
stand-in for SciPy's ``csc_matrix`` with ``shape``, ``nnz`` and ``toarray()``). MATLAB objects
and function handles, MAT v4 and v7.3 (HDF5) files are refused with an error that names them.
"""

from __future__ import annotations

import os
import zlib
from typing import Any

import numpy as np

__all__ = ["loadmat", "SparseMatrix"]

# data types of a data element (miINT8 ...)
_MI_DTYPES = {
    1: "i1", 2: "u1", 3: "i2", 4: "u2", 5: "i4", 6: "u4", 7: "f4", 9: "f8", 12: "i8", 13: "u8",
    16: "u1",  # miUTF8
    17: "u2",  # miUTF16
    18: "u4",  # miUTF32
}
_MI_MATRIX, _MI_COMPRESSED = 14, 15
_MI_UTF8, _MI_UTF16, _MI_UTF32 = 16, 17, 18

# array classes (mxCELL_CLASS ...)
_MX_CELL, _MX_STRUCT, _MX_OBJECT, _MX_CHAR, _MX_SPARSE = 1, 2, 3, 4, 5
_MX_NUMERIC = set(range(6, 16))  # double, single, int8 ... uint64
_MX_NAMES = {3: "object", 16: "function handle", 17: "opaque object"}

_COMPLEX_FLAG, _LOGICAL_FLAG = 0x0800, 0x0200


class SparseMatrix:
    """A MATLAB sparse matrix in compressed sparse column form, as SciPy's ``csc_matrix``
    holds it: ``data``, ``indices`` (row of each value), ``indptr`` (where each column starts)."""

    def __init__(self, data: np.ndarray, indices: np.ndarray, indptr: np.ndarray,
                 shape: tuple[int, int]) -> None:
        self.data, self.indices, self.indptr, self.shape = data, indices, indptr, shape

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    def toarray(self) -> np.ndarray:
        out = np.zeros(self.shape, dtype=self.data.dtype)
        columns = np.repeat(np.arange(self.shape[1]), np.diff(self.indptr))
        out[self.indices[: self.nnz], columns] = self.data[: self.nnz]
        return out

    def __repr__(self) -> str:
        return f"<{self.shape[0]}x{self.shape[1]} sparse matrix of type {self.dtype} with " \
               f"{self.nnz} stored elements in Compressed Sparse Column format>"


class _Reader:
    """Walks the data elements of one byte string in the file's byte order."""

    def __init__(self, data: bytes, byte_order: str, path) -> None:
        self.data, self.order, self.path, self.pos = data, byte_order, path, 0

    def error(self, what: str) -> ValueError:
        return ValueError(f"{self.path} is not a readable MATLAB 5 file: {what}")

    def at_end(self) -> bool:
        return self.pos >= len(self.data)

    def _u32(self, offset: int) -> int:
        return int(np.frombuffer(self.data, self.order + "u4", 1, offset)[0])

    def read_tag(self) -> tuple[int, int, int]:
        """``(data type, byte count, offset of the data)``; moves past the padded element."""
        if self.pos + 8 > len(self.data):
            raise self.error("truncated element tag")
        first = self._u32(self.pos)
        if first >> 16:  # small data element: type and size packed in 4 bytes, data in 4
            mtype, nbytes, start = first & 0xFFFF, first >> 16, self.pos + 4
            if nbytes > 4:
                raise self.error("small data element larger than 4 bytes")
            self.pos += 8
        else:
            mtype, nbytes, start = first, self._u32(self.pos + 4), self.pos + 8
            end = start + nbytes
            self.pos = end if mtype == _MI_COMPRESSED else end + (-nbytes % 8)
        if start + nbytes > len(self.data):
            raise self.error("element runs past the end of the data")
        return mtype, nbytes, start

    def read_numeric(self) -> np.ndarray:
        mtype, nbytes, start = self.read_tag()
        if mtype not in _MI_DTYPES:
            raise self.error(f"unexpected data type {mtype} where numbers were expected")
        dtype = np.dtype(self.order + _MI_DTYPES[mtype] if mtype not in (1, 2, 16) else
                         _MI_DTYPES[mtype])
        if nbytes % dtype.itemsize:
            raise self.error("byte count is not a multiple of the item size")
        return np.frombuffer(self.data, dtype, nbytes // dtype.itemsize, start)

    def read_text(self) -> str:
        return self.read_numeric().tobytes().decode("utf-8", "replace")

    def read_char_data(self) -> np.ndarray:
        """Code points of a character array's data, whatever its storage type."""
        mtype, nbytes, start = self.read_tag()
        raw = self.data[start : start + nbytes]
        if mtype == _MI_UTF8:
            text = raw.decode("utf-8", "replace")
            return np.array([ord(c) for c in text], dtype=np.uint32)
        if mtype == _MI_UTF16:
            text = raw.decode("utf-16-be" if self.order == ">" else "utf-16-le", "replace")
            return np.array([ord(c) for c in text], dtype=np.uint32)
        if mtype not in _MI_DTYPES:
            raise self.error(f"unexpected data type {mtype} for characters")
        dtype = np.dtype(self.order + _MI_DTYPES[mtype])
        return np.frombuffer(raw, dtype).astype(np.uint32)


def _from_fortran(flat: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
    return flat.reshape(dims, order="F")


def _chars_to_strings(codes: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
    """A char array of ``dims`` as ``scipy.io.loadmat``'s ``chars_as_strings``: the last axis
    joined into strings."""
    if codes.size == 0:
        return np.array([], dtype="<U1")
    chars = _from_fortran(codes, dims)
    lead, n = chars.shape[:-1], chars.shape[-1]
    flat = chars.reshape(-1, n)
    strings = ["".join(map(chr, row)) for row in flat.tolist()]
    width = max(1, max(len(s) for s in strings))
    return np.array(strings, dtype=f"<U{width}").reshape(lead)


def _read_matrix(reader: _Reader) -> tuple[str, Any]:
    """One miMATRIX element's content (the tag already read): ``(name, value)``."""
    flags = reader.read_numeric()
    mx_class, is_complex = int(flags[0]) & 0xFF, bool(int(flags[0]) & _COMPLEX_FLAG)
    known = _MX_NUMERIC | {_MX_CELL, _MX_STRUCT, _MX_CHAR, _MX_SPARSE}
    if mx_class in _MX_NAMES or mx_class not in known:
        kind = _MX_NAMES.get(mx_class, f"array class {mx_class}")
        raise NotImplementedError(f"{reader.path}: reading a MATLAB {kind} is not supported")
    dims = tuple(int(d) for d in reader.read_numeric())
    name = reader.read_text()
    count = int(np.prod(dims))
    if mx_class in (_MX_CELL, _MX_STRUCT) and count * 8 > len(reader.data):
        raise reader.error(f"{count} elements cannot fit in {len(reader.data)} bytes")
    if mx_class == _MX_SPARSE:
        return name, _read_sparse(reader, dims, is_complex, bool(int(flags[0]) & _LOGICAL_FLAG))
    if mx_class in _MX_NUMERIC:
        real = reader.read_numeric()
        if is_complex:
            real = real + 1j * reader.read_numeric()
        return name, _from_fortran(real.copy(), dims)
    if mx_class == _MX_CHAR:
        return name, _chars_to_strings(reader.read_char_data(), dims)
    if mx_class == _MX_CELL:
        cells = np.empty(count, dtype=object)
        for i in range(count):
            cells[i] = _read_element(reader)[1]
        return name, _from_fortran(cells, dims)
    # struct: the length of each field name, the padded names, then each element's fields
    name_len = int(reader.read_numeric()[0])
    raw = reader.read_numeric().tobytes()
    fields = [raw[i : i + name_len].split(b"\0", 1)[0].decode() for i in range(0, len(raw),
                                                                              name_len or 1)]
    if not fields:  # a struct without fields: SciPy gives None for each element
        return name, np.full(dims, None, dtype=object)
    record = np.empty(count, dtype=[(f, object) for f in fields])
    for i in range(count):
        for f in fields:
            record[i][f] = _read_element(reader)[1]
    return name, _from_fortran(record, dims)


def _read_sparse(reader: _Reader, dims, is_complex: bool, logical: bool) -> SparseMatrix:
    if len(dims) != 2:
        raise reader.error("a sparse matrix must have 2 dimensions")
    rows = reader.read_numeric().astype(np.int64)
    indptr = reader.read_numeric().astype(np.int64)
    if logical:  # MATLAB may tag one byte per value as miDOUBLE here: read the bytes
        _, nbytes, start = reader.read_tag()
        values = np.frombuffer(reader.data, np.uint8, nbytes, start)
        if nbytes == 8 * len(rows) and nbytes != len(rows):
            values = np.frombuffer(reader.data, reader.order + "f8", nbytes // 8, start)
    else:
        values = reader.read_numeric()
    if is_complex:
        values = values + 1j * reader.read_numeric()
    if len(indptr) != dims[1] + 1 or indptr[-1] > min(len(rows), len(values)) or (
        np.any(np.diff(indptr) < 0) or np.any(rows[: indptr[-1]] >= dims[0])
    ):
        raise reader.error("inconsistent sparse matrix indices")
    data = values.astype(bool) if logical else values.astype(values.dtype.newbyteorder("="))
    return SparseMatrix(data, rows, indptr, (dims[0], dims[1]))


def _read_element(reader: _Reader) -> tuple[str, Any]:
    mtype, nbytes, start = reader.read_tag()
    if mtype == _MI_COMPRESSED:
        try:
            inner = zlib.decompress(reader.data[start : start + nbytes])
        except zlib.error as e:
            raise reader.error(f"bad compressed element ({e})") from None
        return _read_element(_Reader(inner, reader.order, reader.path))
    if mtype != _MI_MATRIX:
        raise reader.error(f"expected a matrix, found data type {mtype}")
    if nbytes == 0:  # an empty cell or field
        return "", np.empty((0, 0), dtype=np.float64)
    sub = _Reader(reader.data[start : start + nbytes], reader.order, reader.path)
    return _read_matrix(sub)


def _squeeze(value: Any) -> Any:
    """``squeeze_me=True``: drop length-1 axes, and a single item becomes that item."""
    if not isinstance(value, np.ndarray):
        return value
    if value.dtype.names is not None:  # struct: squeeze each field of each record
        for rec in value.reshape(-1):
            for f in value.dtype.names:
                rec[f] = _squeeze(rec[f])
    elif value.dtype == object:
        flat = value.reshape(-1)
        for i in range(flat.size):
            flat[i] = _squeeze(flat[i])
    if value.size == 0:
        return value.reshape(0)
    value = np.squeeze(value)
    if value.shape == () and value.dtype.names is None:  # a struct stays a 0-d array
        return value.item()
    return value


def loadmat(path, squeeze_me: bool = False) -> dict[str, Any]:
    """The variables of a MATLAB 5 ``.mat`` file by name, as ``scipy.io.loadmat`` gives them
    (with ``__header__``, ``__version__`` and ``__globals__``)."""
    with open(os.fspath(path), "rb") as f:
        data = f.read()
    if len(data) < 128:
        raise ValueError(f"{path} is not a MATLAB 5 file: too short")
    indicator = data[126:128]
    if indicator not in (b"IM", b"MI"):
        if data[:8] == b"\x89HDF\r\n\x1a\n" or data[512:520] == b"\x89HDF\r\n\x1a\n":
            raise NotImplementedError(f"{path} is a MATLAB 7.3 (HDF5) file; it is not supported")
        raise ValueError(f"{path} is not a MATLAB 5 file (a MAT v4 file is not supported)")
    order = "<" if indicator == b"IM" else ">"
    version = int(np.frombuffer(data, order + "u2", 1, 124)[0])
    out: dict[str, Any] = {
        "__header__": data[:116].rstrip(b" \0"),
        "__version__": f"{version >> 8}.{version & 0xFF}",
        "__globals__": [],
    }
    reader = _Reader(data, order, path)
    reader.pos = 128
    while not reader.at_end():
        name, value = _read_element(reader)
        out[name] = _squeeze(value) if squeeze_me else value
    return out
