"""The safetensors writer of the golden-file scripts (tests/*/golden*.py): NumPy only, so that
the Python that writes the golden files needs no `safetensors` package (CMake finds any Python
with NumPy; the repository's packages come through PYTHONPATH, their dependencies do not)."""

from __future__ import annotations

import json
import os
import struct

import numpy as np

_DTYPES = {
    np.dtype("float16"): "F16",
    np.dtype("float32"): "F32",
    np.dtype("float64"): "F64",
    np.dtype("int64"): "I64",
    np.dtype("uint8"): "U8",
    np.dtype("bool"): "BOOL",
}


def save_safetensors(path: str, tensors: dict, metadata: dict | None = None) -> None:
    """``tensors`` (name -> array) to ``path`` in name order, with ``metadata`` (str -> str)
    as the header's "__metadata__"; written beside ``path`` and renamed into place."""
    header: dict = {} if metadata is None else {"__metadata__": metadata}
    offset = 0
    blobs = []
    for name in sorted(tensors):
        a = np.array(tensors[name], order="C")  # (ascontiguousarray would make a 0-d array 1-d)
        data = a.tobytes()
        header[name] = {"dtype": _DTYPES[a.dtype], "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    tmp = path + ".partial"
    with open(tmp, "wb") as fh:
        fh.write(struct.pack("<Q", len(text)))
        fh.write(text)
        for blob in blobs:
            fh.write(blob)
    os.replace(tmp, path)
