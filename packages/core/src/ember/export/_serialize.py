"""``ember.export.save`` / ``load``: one ``.ember`` file, a safetensors file whose tensors are
the weights and constants and whose metadata holds the program as JSON (FORMAT.md).

Loading parses JSON and tensors only: no pickle, no code from the file runs, and every op
name must be one of this Ember's registry ops, Tensor methods, kernels or factories.
"""

from __future__ import annotations

import json
import os
import struct

import numpy as np

from .._naming import bare as _bare
from ._graph import FormatError, Graph
from ._ops import UnknownOpError
from ._program import ExportedProgram, compile_graph

__all__ = ["save", "load", "FORMAT", "FORMAT_VERSION", "program_to_bytes",
           "program_from_bytes"]

FORMAT = "ember.export"
#: the newest version this Ember writes; a file gets the lowest version that holds its graph
#: (``Graph.format_version``: "2" only for nested results, "2.1" only for scalar values read
#: with ``Tensor.item``), so older readers keep reading every program without them
FORMAT_VERSION = "2.1"
#: the versions this Ember reads
READS = ("1", "2", "2.1")


def save(ep: ExportedProgram, f, *, extra_files: dict | None = None,
         opset_version: dict | None = None) -> None:
    """Write ``ep`` to ``f`` (a path or a binary file object) as one ``.ember`` file
    (``torch.export.save``): the graph as JSON in the safetensors metadata, the weights as
    its tensors. A path is written atomically. ``extra_files`` (name -> str) are stored too;
    ``opset_version`` is accepted for PyTorch's sake."""
    if not isinstance(ep, ExportedProgram):
        raise TypeError(f"The 'ep' parameter must be an instance of 'ExportedProgram', "
                        f"got '{type(ep).__name__}' instead.")
    data = program_to_bytes(ep, extra_files)
    if isinstance(f, (str, os.PathLike)):
        from ..serialization import atomic_path

        with atomic_path(f) as tmp, open(tmp, "wb") as fh:
            fh.write(data)
    else:
        f.write(data)


def program_to_bytes(ep: ExportedProgram, extra_files: dict | None = None) -> bytes:
    from safetensors.numpy import save as st_save

    arrays = {}
    for store in (ep.state_dict, ep.constants):
        for target, t in store.items():
            arrays[target] = np.array(t.detach().contiguous()._host(), copy=True)
    program = {"kind": ep.kind, "training": ep.training, "mutations": ep.mutations,
               "producer": _producer(), "graph": ep.graph.to_json()}
    if ep.module_names is not None:  # (readers that predate it ignore the key)
        program["modules"] = [[path, name] for path, name in ep.module_names]
    metadata = {"format": FORMAT, "format_version": ep.graph.format_version(),
                "graph": json.dumps(program, separators=(",", ":"), allow_nan=False)}
    if extra_files:
        metadata["extra_files"] = json.dumps({str(k): str(v) for k, v in extra_files.items()})
    return st_save(arrays, metadata=metadata)


def _producer() -> str:
    try:
        from importlib.metadata import version

        return f"ember-core {version('ember-core')}"
    except Exception:
        return "ember-core"


def load(f, *, extra_files: dict | None = None, expected_opset_version: dict | None = None,
         map_location=None) -> ExportedProgram:
    """Read an ``.ember`` file (a path or a binary file object) written by :func:`save` or
    ``ember.jit.save`` (``torch.export.load``). Weights go to the devices they were saved
    from, or to ``map_location`` (a device, or a dict old -> new). ``extra_files`` (a dict
    of names) is filled with the stored contents. Never runs code from the file: a file
    that is truncated, of an unknown format version, that names an op this Ember lacks or
    references a missing weight raises an error that says so."""
    name = os.fspath(f) if isinstance(f, (str, os.PathLike)) else getattr(f, "name", "<file>")
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            data = fh.read()
    elif isinstance(f, (bytes, bytearray)):
        data = bytes(f)
    else:
        data = f.read()
    return program_from_bytes(data, str(name), extra_files, map_location)


def _header(data: bytes, name: str) -> dict:
    if len(data) >= 4 and data[:4] == b"PK\x03\x04":
        raise FormatError(f"{name} is a zip archive (a TorchScript or torch.save file), not an "
                          "Ember program: Ember cannot run TorchScript; export the model again "
                          "with ember.export.export or ember.jit.trace")
    if len(data) < 8:
        raise FormatError(f"{name} is truncated: {len(data)} bytes, fewer than the 8 of a "
                          "safetensors header length")
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        raise FormatError(f"{name} is truncated: its header says {n} bytes of JSON, but only "
                          f"{len(data) - 8} bytes follow")
    try:
        header = json.loads(data[8:8 + n])
    except (UnicodeDecodeError, ValueError) as exc:
        raise FormatError(f"{name} is not an Ember program file (its header is not JSON: "
                          f"{exc})") from None
    if not isinstance(header, dict):
        raise FormatError(f"{name} is not an Ember program file (bad header)")
    end = 0
    for key, info in header.items():
        if key == "__metadata__":
            continue
        offsets = info.get("data_offsets") if isinstance(info, dict) else None
        if not (isinstance(offsets, list) and len(offsets) == 2
                and all(type(o) is int for o in offsets)):
            raise FormatError(f"{name}: tensor {key!r} has no valid data_offsets")
        end = max(end, offsets[1])
    have = len(data) - 8 - n
    if have < end:
        raise FormatError(f"{name} is truncated: its weights need {end} bytes, but the file "
                          f"holds {have} (it was cut short, e.g. by an interrupted copy)")
    return header


def program_from_bytes(data: bytes, name: str = "<bytes>", extra_files: dict | None = None,
                       map_location=None) -> ExportedProgram:
    header = _header(data, name)
    meta = header.get("__metadata__") or {}
    if meta.get("format") != FORMAT:
        raise FormatError(f"{name} is a safetensors file but not an Ember program (its "
                          f"metadata has format={meta.get('format')!r}, not {FORMAT!r}); "
                          "ember.safetensors.load_file reads plain weights")
    version = meta.get("format_version")
    if version not in READS:
        raise FormatError(f"{name} has format_version {version!r}; this Ember reads "
                          f"format_version {', '.join(READS)}: upgrade ember-core to load it")
    try:
        program = json.loads(meta.get("graph", ""))
    except ValueError as exc:
        raise FormatError(f"{name}: the program JSON is broken ({exc})") from None
    if not isinstance(program, dict) or program.get("kind") not in ("export", "jit"):
        raise FormatError(f"{name}: the program JSON needs a kind ('export' or 'jit')")
    graph = Graph.from_json(program.get("graph"))
    try:
        compile_graph(graph)  # every op resolves, every reference is defined
    except UnknownOpError as exc:
        raise FormatError(f"{name}: {exc}") from None
    tensors = _tensors(data, name)
    remap = _device_map(map_location)
    if remap is not None:
        _remap_devices(graph, remap)
    state_dict, constants = {}, {}
    for spec in graph.inputs:
        if spec.kind == "user_input":
            continue
        arr = tensors.get(spec.target)
        if arr is None:
            raise FormatError(f"{name}: graph input %{spec.name} ({spec.kind}) references "
                              f"the weight {spec.target!r}, which is not in the file")
        if list(arr.shape) != spec.meta.shape or _dtype_name(arr) != spec.meta.dtype:
            raise FormatError(f"{name}: weight {spec.target!r} is {_dtype_name(arr)}"
                              f"{list(arr.shape)} in the file, but the graph expects "
                              f"{spec.meta}")
        t = _place(arr, spec.meta.device, name)
        if spec.requires_grad:
            t.requires_grad_(True)
        store = state_dict if spec.kind == "parameter" or spec.kind == "buffer" \
            and spec.persistent else constants
        store[spec.target] = t
    if extra_files is not None:
        stored = json.loads(meta.get("extra_files", "{}"))
        for k in extra_files:
            extra_files[k] = stored.get(k, "")
    mutations = program.get("mutations") or {}
    return ExportedProgram(graph, state_dict, constants, kind=program["kind"],
                           training=program.get("training"), mutations=mutations,
                           module_names=_module_names(program.get("modules"), name))


def _module_names(modules, name: str) -> list | None:
    if modules is None:
        return None
    if not isinstance(modules, list) or not all(
            isinstance(m, list) and len(m) == 2 and all(isinstance(s, str) for s in m)
            for m in modules):
        raise FormatError(f"{name}: 'modules' must be a list of [path, class name] pairs")
    return [(path, cls) for path, cls in modules]


def _tensors(data: bytes, name: str) -> dict:
    from safetensors import SafetensorError
    from safetensors.numpy import load as st_load

    try:
        arrays = st_load(data)
    except (SafetensorError, ValueError, TypeError) as exc:
        raise FormatError(f"{name}: the weights cannot be read ({exc})") from None
    return {k: np.array(v, copy=True) for k, v in arrays.items()}


def _dtype_name(arr) -> str:
    from .. import _dtype

    try:
        return _bare(_dtype.from_numpy_dtype(arr.dtype))
    except (KeyError, TypeError, ValueError):
        return str(arr.dtype)


def _device_map(map_location):
    if map_location is None:
        return None
    from .._device import device as device_cls

    if isinstance(map_location, dict):
        return {str(device_cls(k)): str(device_cls(v)) for k, v in map_location.items()}
    return str(device_cls(map_location))


def _remap_devices(graph: Graph, remap) -> None:
    def new(dev: str) -> str:
        return remap.get(dev, dev) if isinstance(remap, dict) else remap

    for spec in graph.inputs:
        spec.meta.device = new(spec.meta.device)
    for node in graph.nodes:
        node.args = _remap_literal(node.args, new)
        node.kwargs = _remap_literal(node.kwargs, new)
        for o in node.outputs:
            if o is not None:
                o[1].device = new(o[1].device)


def _remap_literal(obj, new):
    if isinstance(obj, list):
        return [_remap_literal(x, new) for x in obj]
    if isinstance(obj, dict):
        if len(obj) == 1 and "device" in obj and isinstance(obj["device"], str):
            return {"device": new(obj["device"])}
        return {k: _remap_literal(v, new) for k, v in obj.items()}
    return obj


def _place(arr: np.ndarray, device: str, name: str):
    from .._device import device as device_cls
    from ..safetensors import _place as place

    try:
        dev = device_cls(device)
        return place(arr, dev)
    except (RuntimeError, ValueError, TypeError) as exc:
        raise FormatError(f"{name}: the weights were saved from device {device!r}, which this "
                          f"process cannot use ({exc}); pass map_location='cpu'") from None

