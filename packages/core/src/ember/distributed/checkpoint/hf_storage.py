"""Distributed checkpoints in HuggingFace's safetensors layout (PyTorch's
``torch.distributed.checkpoint.hf_storage``).

``HuggingFaceStorageWriter(path)`` writes the state dict's tensors as
``model-00001-of-0000N.safetensors`` files (``fqn_to_index_mapping`` says which tensor goes in
which file) and ``model.safetensors.index.json``: what ``from_pretrained`` reads. With
``save_distributed=True`` every rank writes its own shards (``shard-0000r-model-...``, each
tensor's offset in the file's ``DCP_SHARDING_INFO`` metadata), and ``enable_consolidation``
then joins them into whole tensors in ``path``. ``HuggingFaceStorageReader(path)`` loads any
such directory (a model downloaded from the Hub, or sharded files) into a state dict of
tensors or DTensors, each rank reading only the slices it holds.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..._size import Size
from ...futures import Future
from .filesystem import FileSystemReader, FileSystemWriter, _copy_into, _StorageInfo
from .metadata import (
    ChunkStorageMetadata,
    Metadata,
    MetadataIndex,
    StorageMeta,
    TensorProperties,
    TensorStorageMetadata,
)
from .planner import LoadPlan, LoadPlanner, SavePlan, SavePlanner, WriteItemType
from .storage import WriteResult

__all__ = ["HuggingFaceStorageWriter", "HuggingFaceStorageReader"]

_metadata_fn = "model.safetensors.index.json"
SUFFIX = ".safetensors"
CUSTOM_METADATA_KEY = "DCP_SHARDING_INFO"
DCP_VERSION_KEY = "DCP_VERSION"
HF_DCP_VERSION = 1.0
FORMAT_KEY, FORMAT_VALUE = "format", "pt"
SAVED_OFFSETS_KEY = "saved_offsets"
SHARDED_DIR_NAME = "sharded"


@dataclass
class _HFStorageInfo:
    """Where a tensor chunk lies: its file, shape and dtype."""

    relative_path: str
    shape: Any
    dtype: Any


def _gen_file_name(index: int, largest_index: int, shard_index: int | None = None) -> str:
    name = f"model-{index:05d}-of-{largest_index:05d}{SUFFIX}"
    return name if shard_index is None else f"shard-{shard_index:05d}-{name}"


def _ember_dtype(name: str, st_dtype: str):
    from ... import _dtype
    from ...safetensors import _numpy_dtype

    return _dtype.FROM_NP[_numpy_dtype(name, st_dtype)]


class HuggingFaceStorageWriter(FileSystemWriter):
    """Writes tensors as HuggingFace safetensors files (see the module docstring).
    ``save_distributed=False`` (the default) expects a full state dict saved from one rank
    (or the same on every rank: each tensor is written once)."""

    def __init__(self, path: str | os.PathLike, fqn_to_index_mapping: dict[str, int] | None = None,
                 thread_count: int = 1, save_distributed: bool = False,
                 enable_consolidation: bool = False, thread_count_consolidation: int = 1
                 ) -> None:
        super().__init__(path=path, thread_count=thread_count)
        self.fqn_to_index_mapping = fqn_to_index_mapping
        self.save_distributed = save_distributed
        self.enable_consolidation = enable_consolidation
        self.thread_count_consolidation = thread_count_consolidation
        self.consolidated_output_path: str | None = None
        if enable_consolidation:
            self.consolidated_output_path = str(self.path)
            self.path = self.path / SHARDED_DIR_NAME

    def prepare_local_plan(self, plan: SavePlan) -> SavePlan:
        """Make the directory (no ``.metadata`` check: this layout has none)."""
        self.path.mkdir(parents=True, exist_ok=True)
        return plan

    def prepare_global_plan(self, plans: list[SavePlan]) -> list[SavePlan]:
        """Give each rank the file mapping and (distributed saves) its shard index."""
        out = []
        for i, plan in enumerate(plans, start=1):
            data: dict = {}
            if self.fqn_to_index_mapping is not None:
                data["fqn_to_index_mapping"] = self.fqn_to_index_mapping
            if self.save_distributed:
                data["shard_index"] = i
            out.append(dataclasses.replace(plan, storage_data=data))
        return out

    def write_data(self, plan: SavePlan, planner: SavePlanner) -> Future:
        """Write this rank's tensors into the files the mapping names."""
        from ...safetensors import save

        results: list[WriteResult] = []
        mapping = plan.storage_data.get("fqn_to_index_mapping")
        shard = plan.storage_data.get("shard_index")
        largest = max(mapping.values()) if mapping else 1
        buckets: dict[int, list] = {}
        for item in plan.items:
            if item.type == WriteItemType.BYTE_IO:
                raise ValueError(f"HuggingFaceStorageWriter stores tensors only: "
                                 f"{item.index.fqn!r} is not a tensor")
            if mapping is not None and item.index.fqn not in mapping:
                raise KeyError(f"{item.index.fqn!r} is not in fqn_to_index_mapping")
            buckets.setdefault(mapping[item.index.fqn] if mapping else 1, []).append(item)
        for index, items in buckets.items():
            name = _gen_file_name(index, largest, shard)
            tensors, offsets = {}, {}
            for item in items:
                tensors[item.index.fqn] = planner.resolve_data(item).detach().cpu().contiguous()
                offsets[item.index.fqn] = {SAVED_OFFSETS_KEY: list(item.tensor_data.chunk.offsets)}
            blob = save(tensors, metadata={CUSTOM_METADATA_KEY: json.dumps(offsets),
                                           DCP_VERSION_KEY: str(HF_DCP_VERSION),
                                           FORMAT_KEY: FORMAT_VALUE})
            with open(self.path / name, "wb") as f:
                f.write(blob)
                if self.sync_files:
                    f.flush()
                    os.fsync(f.fileno())
            for item in items:
                nbytes = tensors[item.index.fqn].nbytes
                results.append(WriteResult(item.index, nbytes, _StorageInfo(name, 0, nbytes)))
        fut: Future = Future()
        fut.set_result(results)
        return fut

    def finish(self, metadata: Metadata, results: list[list[WriteResult]]) -> None:
        """Write ``model.safetensors.index.json`` (or join the shards: consolidation)."""
        if self.save_distributed:
            if self.enable_consolidation:
                mapping = self.fqn_to_index_mapping or dict.fromkeys(
                    metadata.state_dict_metadata, 1)
                consolidate_safetensors_files(str(self.path), self.consolidated_output_path,
                                              fqn_to_index_mapping=mapping)
            return
        weight_map = {wr.index.fqn: wr.storage_data.relative_path
                      for rank in results for wr in rank}
        total = sum(wr.storage_data.length for rank in results for wr in rank)
        with open(self.path / _metadata_fn, "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f,
                      indent=2)

    @property
    def metadata_path(self) -> str:
        """The index file's name."""
        return _metadata_fn


def _chunks_of(files) -> dict:
    """fqn -> [(file, offsets, shape, safetensors dtype)] over safetensors ``files``."""
    from ...safetensors import safe_open

    found: dict = {}
    for path in files:
        with safe_open(path, framework="np") as f:
            extra = f.metadata() or {}
            info = json.loads(extra[CUSTOM_METADATA_KEY]) if extra.get(CUSTOM_METADATA_KEY) \
                else None
            for key in f.keys():
                piece = f.get_slice(key)
                shape = list(piece.get_shape())
                offsets = info[key][SAVED_OFFSETS_KEY] if info and key in info else [0] * len(shape)
                found.setdefault(key, []).append((str(path), offsets, shape, piece.get_dtype()))
    return found


def consolidate_safetensors_files(input_dir: str, output_dir: str, num_threads: int = 1,
                                  fqn_to_index_mapping: dict[str, int] | None = None) -> None:
    """Join the sharded safetensors files in ``input_dir`` into whole tensors, written to
    ``output_dir`` as ``model-0000i-of-0000N.safetensors`` (per ``fqn_to_index_mapping``;
    one file without it) with ``model.safetensors.index.json``."""
    from ...safetensors import _numpy_dtype, safe_open, save_file

    files = sorted(p for p in Path(input_dir).iterdir() if p.name.endswith(SUFFIX))
    chunks = _chunks_of(files)
    mapping = fqn_to_index_mapping or dict.fromkeys(chunks, 1)
    largest = max(mapping.values()) if mapping else 1
    per_file: dict[int, dict] = {}
    for fqn, parts in chunks.items():
        ndim = len(parts[0][2])
        size = [max(p[1][d] + p[2][d] for p in parts) for d in range(ndim)]
        whole = np.zeros(size, dtype=_numpy_dtype(fqn, parts[0][3]))
        for path, offsets, shape, _ in parts:
            with safe_open(path, framework="np") as f:
                whole[tuple(slice(o, o + s) for o, s in zip(offsets, shape))] = \
                    f.get_tensor(fqn)
        per_file.setdefault(mapping.get(fqn, 1), {})[fqn] = whole
    os.makedirs(output_dir, exist_ok=True)
    from ..._tensor import CPU, _make

    weight_map = {}
    for index, tensors in sorted(per_file.items()):
        name = _gen_file_name(index, largest)
        save_file({k: _make(v, CPU) for k, v in tensors.items()}, os.path.join(output_dir, name),
                  metadata={FORMAT_KEY: FORMAT_VALUE})
        weight_map.update(dict.fromkeys(tensors, name))
    total = sum(v.nbytes for t in per_file.values() for v in t.values())
    with open(os.path.join(output_dir, _metadata_fn), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)


class HuggingFaceStorageReader(FileSystemReader):
    """Reads the safetensors files in ``path`` (whole tensors, or shards written with
    ``DCP_SHARDING_INFO``) as a checkpoint: any sharding of the state dict loads from them."""

    def __init__(self, path: str | os.PathLike, thread_count: int = 1) -> None:
        super().__init__(path=path)
        self.thread_count = thread_count

    def read_metadata(self, *args, **kwargs) -> Metadata:
        """Every tensor of the directory's safetensors files, with its chunks."""
        if not self.path.is_dir():
            raise FileNotFoundError(f"{self.path} is not a directory of safetensors files")
        files = sorted(p for p in self.path.iterdir() if p.name.endswith(SUFFIX))
        if not files:
            raise FileNotFoundError(f"no {SUFFIX} files in {self.path}")
        md: dict = {}
        storage: dict = {}
        for fqn, parts in _chunks_of(files).items():
            dtype = _ember_dtype(fqn, parts[0][3])
            ndim = len(parts[0][2])
            size = Size([max(p[1][d] + p[2][d] for p in parts) for d in range(ndim)])
            md[fqn] = TensorStorageMetadata(TensorProperties(dtype=dtype), size,
                                            [ChunkStorageMetadata(Size(o), Size(s))
                                             for _, o, s, _ in parts])
            for path, offsets, shape, _ in parts:
                storage[MetadataIndex(fqn, offsets)] = _HFStorageInfo(path, Size(shape), dtype)
        metadata = Metadata(state_dict_metadata=md, storage_data=storage)
        metadata.storage_meta = StorageMeta(load_id=self.load_id)
        return metadata

    def read_data(self, plan: LoadPlan, planner: LoadPlanner) -> Future:
        """Read each item's slice from its file into the state dict."""
        from ...autograd.grad_mode import no_grad
        from ...safetensors import safe_open

        per_file: dict = {}
        for item in plan.items:
            per_file.setdefault(self.storage_data[item.storage_index].relative_path,
                                []).append(item)
        with no_grad():
            for path, items in per_file.items():
                with safe_open(path, framework="pt") as f:
                    for req in items:
                        index = tuple(slice(o, o + n)
                                      for o, n in zip(req.storage_offsets, req.lengths))
                        _copy_into(planner, req, f.get_slice(req.storage_index.fqn)[index])
        fut: Future = Future()
        fut.set_result(None)
        return fut
