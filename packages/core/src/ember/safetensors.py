"""``ember.safetensors``: the safetensors format, mirroring ``safetensors.torch``.

Built on the ``safetensors`` package's NumPy layer (``safetensors.numpy`` and the lazy,
memory-mapped ``safe_open``): ember converts tensors to and from NumPy arrays (zero-copy on
the CPU) and leaves the format itself to the package, whose parser checks the header (length,
JSON, dtypes, shapes, offsets that must tile the data exactly) and raises
``safetensors.SafetensorError``, as ``safetensors.torch`` does. ``BF16`` tensors are
``ember.bfloat16`` both ways (``ml_dtypes`` arrays, which the package's NumPy layer reads and
writes); ``U16``, ``U32`` and ``U64`` are ``ember.uint16``, ``uint32``, ``uint64``;
``F8_E4M3``, ``F8_E5M2``, ``F8_E8M0``, ``F8_E4M3FNUZ`` and ``F8_E5M2FNUZ`` are the float8
dtypes (FP8 checkpoints); a tensor of a dtype Ember lacks (F4, F6...) raises ``TypeError``
naming it when it is read.
The format has no complex32 dtype: saving an ``ember.complex32`` tensor raises the
package's ``SafetensorError`` (``safetensors.torch`` raises ``KeyError``); save
``t.cfloat()`` or ``ember.view_as_real(t)`` instead. Files round-trip with
``safetensors.torch``; ``save_file`` writes atomically and durably.
"""

from __future__ import annotations

import os
from collections import defaultdict

import numpy as np

from ._dtype import (
    BFLOAT16_NP,
    float8_e4m3fn,
    float8_e4m3fnuz,
    float8_e5m2,
    float8_e5m2fnuz,
    float8_e8m0fnu,
)
from ._tensor import CPU, Tensor, _address, _make

__all__ = ["save_file", "load_file", "save", "load", "safe_open", "save_model", "load_model"]


def _st_numpy():
    import safetensors.numpy  # imported lazily: ``import ember`` must not need it

    return safetensors.numpy


#: the safetensors dtypes Ember has, as NumPy dtypes
_NUMPY_DTYPES = {"BOOL": np.dtype(np.bool_), "U8": np.dtype(np.uint8), "I8": np.dtype(np.int8),
                 "I16": np.dtype(np.int16), "I32": np.dtype(np.int32),
                 "I64": np.dtype(np.int64), "U16": np.dtype(np.uint16),
                 "U32": np.dtype(np.uint32), "U64": np.dtype(np.uint64),
                 "F16": np.dtype(np.float16), "BF16": BFLOAT16_NP,
                 "F32": np.dtype(np.float32), "F64": np.dtype(np.float64),
                 "C64": np.dtype(np.complex64), "F8_E4M3": float8_e4m3fn.np,
                 "F8_E5M2": float8_e5m2.np, "F8_E8M0": float8_e8m0fnu.np,
                 "F8_E4M3FNUZ": float8_e4m3fnuz.np, "F8_E5M2FNUZ": float8_e5m2fnuz.np}

#: the dtypes read from the file's bytes by Ember (``safe_open._read_raw``)
_RAW_DTYPES = frozenset(k for k in _NUMPY_DTYPES if k.startswith("F8_"))

_CONVERT = ("convert it first, e.g. with safetensors.torch: save_file({{k: {} for k, v in "
            "load_file(path).items()}}, new_path)")
_DTYPE_ADVICE = {  # by the dtype name's first letters
    "F": "Ember has no floats narrower than 8 bits; " + _CONVERT.format("v.float()"),
    "U": "Ember's unsigned integer dtypes are uint8, uint16, uint32 and uint64; "
         + _CONVERT.format("v.long()"),
}


def _numpy_dtype(name: str, st_dtype: str) -> np.dtype:
    """The NumPy dtype of tensor ``name``'s safetensors dtype, or a TypeError saying what to
    do when Ember lacks it."""
    dtype = _NUMPY_DTYPES.get(st_dtype)
    if dtype is None:
        advice = next((text for prefix, text in _DTYPE_ADVICE.items()
                       if st_dtype.startswith(prefix)), "convert it to a dtype Ember has")
        raise TypeError(f"safetensors: tensor {name!r} has dtype {st_dtype}, which Ember does "
                        f"not support yet ({advice})")
    return dtype


def _place(arr: np.ndarray, device) -> Tensor:
    from ._device import resolve_device
    from ._factory import place

    dev = resolve_device(device)
    return _make(arr, CPU) if dev is CPU else place(arr, dev)


def _owner(arr):
    """The array that owns ``arr``'s memory (the end of its ``.base`` chain)."""
    while getattr(arr, "base", None) is not None and hasattr(arr.base, "shape"):
        arr = arr.base
    return arr


def _find_shared_tensors(state_dict: dict) -> list[set]:
    """Groups of names whose tensors share memory (more than one name per group): the
    tensors' own arrays, on their device (a host copy would have its own, reusable id)."""
    groups: dict = defaultdict(set)
    for name, t in state_dict.items():
        arr = t._data
        if arr.size:
            groups[id(_owner(arr))].add(name)
    return [names for names in groups.values() if len(names) > 1]


def _to_numpy(tensors: dict) -> dict:
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, ember.Tensor] but received "
                         f"{type(tensors)}")
    shared = _find_shared_tensors(tensors)
    if shared:
        raise RuntimeError(
            f"Some tensors share memory, this will lead to duplicate memory on disk and "
            f"potential differences when loading them again: {shared}.\nA potential way to "
            "correctly save your model is to use `save_model`.\nMore information at "
            "https://huggingface.co/docs/safetensors/torch_shared_tensors")
    out = {}
    for name, t in tensors.items():
        if not isinstance(t, Tensor):
            raise ValueError(f"Key `{name}` is invalid, expected ember.Tensor but received "
                             f"{type(t)}")
        if not t.is_contiguous():
            raise ValueError(
                f"You are trying to save a non contiguous tensor: `{name}` which is not "
                "allowed. It either means you are trying to save tensors which are reference "
                "of each other in which case it's recommended to save only the full tensors, "
                "and reslice at load time, or simply call `.contiguous()` on your tensor to "
                "pack it before saving.")
        out[name] = t._host()
    return out


def save(tensors: dict, metadata: dict | None = None) -> bytes:
    """The safetensors bytes of ``tensors`` (a dict of name -> tensor)."""
    return _st_numpy().save(_to_numpy(tensors), metadata=metadata)


def save_file(tensors: dict, filename, metadata: dict | None = None) -> None:
    """Write ``tensors`` to ``filename`` in the safetensors format, atomically and durably
    (``ember.serialization.atomic_path``: fsync, rename, and removal of the temporaries
    killed saves left)."""
    from .serialization import atomic_path

    arrays = _to_numpy(tensors)
    with atomic_path(filename) as tmp:
        _st_numpy().save_file(arrays, tmp, metadata=metadata)


def load(data: bytes) -> dict:
    """The tensors of safetensors ``data`` (bytes), on the CPU."""
    from safetensors import deserialize

    out = {}
    for name, view in deserialize(data):
        arr = np.frombuffer(view["data"], _numpy_dtype(name, view["dtype"]))
        out[name] = _make(arr.reshape(view["shape"]), CPU)
    return out


def load_file(filename, device="cpu") -> dict:
    """The tensors of the safetensors file ``filename``, on ``device``."""
    with safe_open(filename, framework="pt", device=device) as f:
        return {k: f.get_tensor(k) for k in f.keys()}


class _Slice:
    """A lazily read tensor of a safetensors file: index it to read a part."""

    def __init__(self, name: str, inner, convert, raw=None):
        self._name, self._inner, self._convert = name, inner, convert
        self._raw = raw  # reads the whole tensor, for dtypes the package's NumPy layer lacks

    def get_shape(self) -> list:
        return self._inner.get_shape()

    def get_dtype(self) -> str:
        return self._inner.get_dtype()

    def __getitem__(self, index):
        _numpy_dtype(self._name, self.get_dtype())
        if self._raw is not None:
            return self._convert(np.ascontiguousarray(self._raw()[index]))
        return self._convert(np.asarray(self._inner[index]))


class safe_open:  # the safetensors API's name
    """Open a safetensors file lazily (memory-mapped); tensors are read one by one with
    ``get_tensor``/``get_slice``. ``framework`` is "pt" or "ember" (ember tensors) or "np"."""

    def __init__(self, filename, framework: str = "pt", device="cpu"):
        from safetensors import safe_open as _safe_open

        if framework not in ("pt", "torch", "ember", "np", "numpy"):
            raise ValueError(f"framework {framework!r} is not supported: use 'pt', 'ember' or "
                             "'np'")
        self._numpy = framework in ("np", "numpy")
        self._device = device
        self._filename = os.fspath(filename)
        self._file = _safe_open(self._filename, framework="np")
        self._header: dict | None = None

    def _convert(self, arr: np.ndarray):
        return arr if self._numpy else _place(arr, self._device)

    def keys(self) -> list:
        return list(self._file.keys())

    def offset_keys(self) -> list:
        return list(self._file.offset_keys()) if hasattr(self._file, "offset_keys") \
            else self.keys()

    def metadata(self) -> dict | None:
        return self._file.metadata()

    def get_tensor(self, name: str):
        st_dtype = self._file.get_slice(name).get_dtype()
        _numpy_dtype(name, st_dtype)
        if st_dtype in _RAW_DTYPES:
            return self._convert(self._read_raw(name))
        return self._convert(self._file.get_tensor(name))

    def get_slice(self, name: str) -> _Slice:
        inner = self._file.get_slice(name)
        raw = (lambda: self._read_raw(name)) if inner.get_dtype() in _RAW_DTYPES else None
        return _Slice(name, inner, self._convert, raw)

    def _read_raw(self, name: str) -> np.ndarray:
        """Tensor ``name`` read from the file's bytes (its header's offsets), for the
        dtypes the package's NumPy layer cannot make arrays of (the float8 ones: it asks
        NumPy, which has none, for them; Ember's are ``ml_dtypes``')."""
        import json

        with open(self._filename, "rb") as f:
            if self._header is None:
                size = int.from_bytes(f.read(8), "little")
                self._header = json.loads(f.read(size))
                self._header["__start__"] = 8 + size
            entry = self._header[name]
            begin, end = entry["data_offsets"]
            f.seek(self._header["__start__"] + begin)
            data = f.read(end - begin)
        dtype = _NUMPY_DTYPES[entry["dtype"]]
        return np.frombuffer(data, dtype=dtype).reshape(entry["shape"]).copy()

    def __enter__(self):
        self._file.__enter__()
        return self

    def __exit__(self, *exc):
        return self._file.__exit__(*exc)


def _covers_storage(t: Tensor) -> bool:
    arr = t._host()
    owner = _owner(arr)
    return _address(arr) == _address(owner) and arr.nbytes == owner.nbytes


def _remove_duplicate_names(state_dict: dict, *, preferred_names=None,
                            discard_names=None) -> dict:
    """For each group of shared tensors, the names to drop -> the name kept (which covers
    the whole storage), as ``safetensors.torch`` chooses them."""
    preferred_names = set(preferred_names or ())
    discard_names = set(discard_names or ())
    to_remove: dict = defaultdict(list)
    for shared in _find_shared_tensors(state_dict):
        complete = {name for name in shared if _covers_storage(state_dict[name])}
        if not complete:
            raise RuntimeError(
                "Error while trying to find names to remove to save state dict, but found no "
                f"suitable name to keep for saving amongst: {shared}. None is covering the "
                "entire storage.Refusing to save/load the model since you could be storing "
                "much more memory than needed. Please refer to "
                "https://huggingface.co/docs/safetensors/torch_shared_tensors for more "
                "information. Or open an issue.")
        keep_name = sorted(complete)[0]
        preferred = (complete - discard_names) & preferred_names or complete - discard_names
        if preferred:
            keep_name = sorted(preferred)[0]
        for name in sorted(shared):
            if name != keep_name:
                to_remove[keep_name].append(name)
    return to_remove


def save_model(model, filename, metadata: dict | None = None,
               force_contiguous: bool = False) -> None:
    """Save ``model.state_dict()`` to ``filename``, writing shared tensors once (the dropped
    names are recorded in the metadata, as ``safetensors.torch.save_model`` does)."""
    state_dict = model.state_dict()
    to_removes = _remove_duplicate_names(state_dict)
    metadata = dict(metadata or {})
    for kept_name, to_remove_group in to_removes.items():
        for to_remove in to_remove_group:
            metadata.setdefault(to_remove, kept_name)
            del state_dict[to_remove]
    if force_contiguous:
        state_dict = {k: v.contiguous() for k, v in state_dict.items()}
    try:
        save_file(state_dict, filename, metadata=metadata or None)
    except ValueError as exc:
        raise ValueError(f"{exc}\nYou can try setting `force_contiguous=True`") from exc


def load_model(model, filename, strict: bool = True, device="cpu") -> tuple[list, list]:
    """Load a safetensors file into ``model`` (names dropped by ``save_model`` for shared
    tensors are not reported missing). Returns ``(missing, unexpected)`` names."""
    state_dict = load_file(filename, device=device)
    model_state_dict = model.state_dict()
    to_removes = _remove_duplicate_names(model_state_dict, preferred_names=state_dict.keys())
    missing, unexpected = model.load_state_dict(state_dict, strict=False)
    missing = set(missing)
    for to_remove_group in to_removes.values():
        missing -= set(to_remove_group)
    if strict and (missing or unexpected):
        missing_keys = ", ".join(f'"{k}"' for k in sorted(missing))
        unexpected_keys = ", ".join(f'"{k}"' for k in sorted(unexpected))
        error = f"Error(s) in loading state_dict for {model.__class__.__name__}:"
        if missing:
            error += f"\n    Missing key(s) in state_dict: {missing_keys}"
        if unexpected:
            error += f"\n    Unexpected key(s) in state_dict: {unexpected_keys}"
        raise RuntimeError(error)
    return sorted(missing), list(unexpected)
