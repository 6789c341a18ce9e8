"""Checkpoints in a directory (PyTorch's ``FileSystemWriter``/``FileSystemReader``), in
PyTorch's layout: each rank writes ``__<rank>_<n>.distcp`` files holding its items one after
another (a tensor chunk as ``torch.save`` writes it, bytes as they are), and the coordinator
writes ``.metadata`` last (atomically), pickled under PyTorch's class names. So PyTorch loads
a checkpoint Ember saved and the reverse.

Reading never runs code: ``.metadata`` is unpickled admitting only the metadata classes,
sizes, dtypes, layouts and paths; every item loads with ``weights_only=True`` (PyTorch
unpickles bytes items with ``weights_only=False``).
"""

from __future__ import annotations

import dataclasses
import io
import os
import pathlib
import pickle
import uuid
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from ... import _dtype
from ..._layout import layout as _layout_cls
from ..._size import Size
from ...futures import Future
from ...serialization import _pickle
from .metadata import PICKLED, Metadata, StorageMeta
from .planner import LoadItemType, LoadPlan, LoadPlanner, SavePlan, SavePlanner, WriteItemType
from .storage import StorageReader, StorageWriter, WriteResult

__all__ = ["FileSystemWriter", "FileSystemReader", "SerializationFormat"]

DEFAULT_SUFFIX = ".distcp"
_metadata_fn = ".metadata"


class SerializationFormat(Enum):
    """How items are written: ``torch.save`` blobs (what ``FileSystemWriter`` writes) or
    safetensors (``HuggingFaceStorageWriter``)."""

    TORCH_SAVE = "torch_save"
    SAFETENSORS = "safetensors"


@dataclass
class _StorageInfo:
    """Where an item lies: a file of the checkpoint, a byte offset and a length."""

    relative_path: str
    offset: int
    length: int
    transform_descriptors: Sequence[str] | None = None

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass
class _StoragePrefix:
    """The file name prefix of one rank's data files."""

    prefix: str


_pickle._GLOBAL_PATHS[id(_StorageInfo)] = ("torch.distributed.checkpoint.filesystem",
                                           "_StorageInfo")


# -- the metadata file ----------------------------------------------------------------
def _layout_named(name: str):
    found = getattr(__import__("ember"), str(name).removeprefix("torch."), None)
    if not isinstance(found, _layout_cls):
        raise pickle.UnpicklingError(f"unknown layout {name!r} in checkpoint metadata")
    return found


def _path(*parts):
    return str(pathlib.PurePath(*parts))


_ALLOWED: dict = {("torch.distributed.checkpoint.metadata", n): c for n, c in PICKLED.items()}
_ALLOWED.update({
    ("torch.distributed.checkpoint.filesystem", "_StorageInfo"): _StorageInfo,
    ("torch", "Size"): Size,
    ("torch.serialization", "_get_layout"): _layout_named,
    **{("pathlib", n): _path for n in ("Path", "PosixPath", "WindowsPath", "PurePath",
                                       "PurePosixPath", "PureWindowsPath")},
    **{("torch", dt.name): dt for dt in _dtype.ALL_DTYPES},
})


class _Refused(pickle.UnpicklingError):
    """A global outside the metadata's allow-list."""


class _MetadataUnpickler(pickle.Unpickler):
    """Unpickles a ``.metadata`` file admitting only the names in ``_ALLOWED``."""

    def find_class(self, module: str, name: str):
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise _Refused(
                f"checkpoint metadata names {module}.{name}, which is not part of a "
                f"checkpoint's metadata: refusing to load it (loading never runs code)") from None


def _read_metadata(path) -> Metadata:
    with open(path, "rb") as f:
        try:
            metadata = _MetadataUnpickler(f).load()
        except _Refused as e:
            raise ValueError(f"{path}: {e}") from None
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError,
                IndexError, KeyError) as e:
            raise ValueError(f"{path} is not a readable checkpoint metadata file (truncated or "
                             f"corrupt): {type(e).__name__}: {e}") from None
    if not isinstance(metadata, Metadata):
        raise ValueError(f"{path} holds {type(metadata).__name__}, not checkpoint Metadata")
    return metadata


def _write_metadata(metadata: Metadata, f) -> None:
    pickler = _pickle.TorchPickler(f, protocol=4)
    pickler.dump(metadata)


def _fsync(f) -> None:
    f.flush()
    os.fsync(f.fileno())


# -- writer ----------------------------------------------------------------
def _tensor_blob(tensor) -> bytes:
    from ...serialization import save

    buf = io.BytesIO()
    save(tensor.detach().cpu().contiguous().clone(), buf)
    return buf.getvalue()


class FileSystemWriter(StorageWriter):
    """Writes a checkpoint into directory ``path`` (made if missing). ``single_file_per_rank``
    writes one data file per rank (else one per item); ``sync_files`` fsyncs them;
    ``overwrite=False`` refuses a directory that already holds a checkpoint.
    ``thread_count``/``per_thread_copy_ahead``/``cache_staged_state_dict`` are accepted for
    PyTorch's signature (one thread writes)."""

    def __init__(self, path: str | os.PathLike, single_file_per_rank: bool = True,
                 sync_files: bool = True, thread_count: int = 1,
                 per_thread_copy_ahead: int = 10_000_000, cache_staged_state_dict: bool = False,
                 overwrite: bool = True, _extensions=None, serialization_format=None) -> None:
        if serialization_format not in (None, SerializationFormat.TORCH_SAVE):
            raise ValueError(f"FileSystemWriter writes items as torch.save does; "
                             f"serialization_format={serialization_format} is "
                             f"HuggingFaceStorageWriter's")
        self.path = Path(path)
        self.single_file_per_rank = single_file_per_rank
        self.sync_files = sync_files
        self.thread_count = thread_count
        self.per_thread_copy_ahead = per_thread_copy_ahead
        self.cache_staged_state_dict = cache_staged_state_dict
        self.overwrite = overwrite
        self.save_id = str(uuid.uuid4())
        self.rank: int | None = None
        self.use_collectives = True

    @property
    def checkpoint_id(self) -> str | os.PathLike:
        """The directory written."""
        return self.path

    def reset(self, checkpoint_id: str | os.PathLike | None = None) -> None:
        """Write the next checkpoint (to ``checkpoint_id`` when given) with a new save id."""
        if checkpoint_id is not None:
            self.path = Path(checkpoint_id)
        self.save_id = str(uuid.uuid4())

    def set_up_storage_writer(self, is_coordinator: bool, *args, **kwargs) -> None:
        """Remember this rank (``rank=``) and whether ranks coordinate (``use_collectives=``)."""
        self.rank = kwargs.get("rank")
        self.use_collectives = kwargs.get("use_collectives", True)
        self.is_coordinator = is_coordinator

    def _metadata_path(self, rank: int | None = None) -> Path:
        return self.path / (_metadata_fn if rank is None else f"__{rank}{_metadata_fn}")

    def prepare_local_plan(self, plan: SavePlan) -> SavePlan:
        """Make the directory; an existing checkpoint there is overwritten (with PyTorch's
        warning) or refused (``overwrite=False``)."""
        self.path.mkdir(parents=True, exist_ok=True)
        existing = self._metadata_path(None if self.use_collectives else 0)
        if existing.exists():
            if not self.overwrite:
                raise RuntimeError(f"Checkpoint already exists and {self.overwrite=}.")
            warnings.warn(f"Detected an existing checkpoint in {self.path}, overwriting since "
                          f"{self.overwrite=}. Past version 2.5 of PyTorch, `overwrite` will "
                          f"default to False. Set this variable to True to maintain this "
                          f"functionality or False to raise when an existing checkpoint is found.",
                          stacklevel=2)
        if self.rank is not None and not self.use_collectives:
            plan = dataclasses.replace(plan, storage_data=_StoragePrefix(f"__{self.rank}_"))
        return plan

    def prepare_global_plan(self, plans: list[SavePlan]) -> list[SavePlan]:
        """Give rank ``i`` the file prefix ``__i_``."""
        return [dataclasses.replace(p, storage_data=_StoragePrefix(f"__{i}_"))
                if p.storage_data is None else p for i, p in enumerate(plans)]

    def write_data(self, plan: SavePlan, planner: SavePlanner) -> Future:
        """Write this rank's items (bytes first, then tensors, largest first)."""
        prefix = plan.storage_data.prefix
        items = sorted(plan.items, key=lambda it: (it.type != WriteItemType.BYTE_IO,
                                                   -(it.tensor_storage_size() or 0)))
        groups = [items] if self.single_file_per_rank else [[it] for it in items]
        results: list[WriteResult] = []
        for n, group in enumerate(groups):
            if not group and n:
                continue
            name = f"{prefix}{n}{DEFAULT_SUFFIX}"
            with open(self.path / name, "wb") as f:
                for item in group:
                    data = planner.resolve_data(item)
                    blob = data.getvalue() if isinstance(data, io.BytesIO) else _tensor_blob(data)
                    offset = f.tell()
                    f.write(blob)
                    results.append(WriteResult(item.index, len(blob),
                                               _StorageInfo(name, offset, len(blob))))
                if self.sync_files:
                    _fsync(f)
        fut: Future = Future()
        fut.set_result(results)
        return fut

    def finish(self, metadata: Metadata, results: list[list[WriteResult]]) -> None:
        """Record every item's location and write ``.metadata`` (to a temporary, renamed)."""
        metadata.storage_data = {wr.index: wr.storage_data for rank in results for wr in rank}
        metadata.storage_meta = self.storage_meta()
        final = self._metadata_path(None if self.use_collectives else self.rank)
        tmp = final.with_name(final.name + ".tmp")
        with open(tmp, "wb") as f:
            _write_metadata(metadata, f)
            if self.sync_files:
                _fsync(f)
        os.replace(tmp, final)

    def storage_meta(self) -> StorageMeta:
        """This checkpoint's directory and save id."""
        return StorageMeta(checkpoint_id=str(self.path), save_id=self.save_id)

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id: str | os.PathLike) -> bool:
        """A local path whose nearest existing parent is writable."""
        if isinstance(checkpoint_id, Path):
            return True
        if "://" in str(checkpoint_id):
            return False
        return any(p.exists() and os.access(p, os.W_OK) for p in Path(checkpoint_id).parents)

    def stage(self, state_dict: dict) -> dict:
        """A copy of ``state_dict`` with every tensor copied to host memory."""
        from .state_dict_saver import _stage

        return _stage(state_dict)


def _copy_into(planner: LoadPlanner, req, tensor) -> None:
    """Copy the read ``tensor`` into the region the planner gives ``req``."""
    target = planner.resolve_tensor(req).detach()
    if tuple(target.shape) != tuple(tensor.shape):
        raise AssertionError(f"req {req.storage_index} mismatch sizes {target.size()} vs "
                             f"{tensor.size()}")
    target.copy_(tensor)
    planner.commit_tensor(req, target)


# -- reader ----------------------------------------------------------------
class FileSystemReader(StorageReader):
    """Reads a checkpoint directory written by ``FileSystemWriter`` (Ember's or PyTorch's)."""

    def __init__(self, path: str | os.PathLike, _extension_registry=None) -> None:
        self.path = Path(path)
        self.storage_data: dict = {}
        self.load_id = str(uuid.uuid4())

    @property
    def checkpoint_id(self) -> str | os.PathLike:
        """The directory read."""
        return self.path

    def reset(self, checkpoint_id: str | os.PathLike | None = None) -> None:
        """Read the next checkpoint (from ``checkpoint_id`` when given)."""
        self.storage_data = {}
        if checkpoint_id is not None:
            self.path = Path(checkpoint_id)
        self.load_id = str(uuid.uuid4())

    def read_metadata(self, *args, **kwargs) -> Metadata:
        """The checkpoint's ``.metadata`` (``rank=r``: rank ``r``'s own ``__r.metadata``)."""
        rank = kwargs.get("rank")
        path = self.path / (_metadata_fn if rank is None else f"__{rank}{_metadata_fn}")
        metadata = _read_metadata(path)
        if getattr(metadata, "storage_meta", None) is None:
            metadata.storage_meta = StorageMeta()
        metadata.storage_meta.load_id = self.load_id
        return metadata

    def set_up_storage_reader(self, metadata: Metadata, is_coordinator: bool, *args,
                              **kwargs) -> None:
        """Take the items' locations from ``metadata``."""
        if metadata.storage_data is None:
            raise AssertionError("storage_data must not be None in metadata")
        self.storage_data = metadata.storage_data
        self.rank = kwargs.get("rank")

    def prepare_local_plan(self, plan: LoadPlan) -> LoadPlan:
        """The plan, unchanged."""
        return plan

    def prepare_global_plan(self, plans: list[LoadPlan]) -> list[LoadPlan]:
        """The plans, unchanged."""
        return plans

    def read_data(self, plan: LoadPlan, planner: LoadPlanner) -> Future:
        """Read each item of ``plan`` (file by file) into the planner's state dict."""
        from ...autograd.grad_mode import no_grad
        from ...serialization import load
        from .default_planner import narrow_tensor_by_index

        per_file: dict = {}
        for item in plan.items:
            try:
                info = self.storage_data[item.storage_index]
            except KeyError:
                raise ValueError(f"the checkpoint's metadata has no location for "
                                 f"{item.storage_index}") from None
            per_file.setdefault(info.relative_path, []).append(item)
        with no_grad():
            for name, items in per_file.items():
                path = self.path / name
                with open(path, "rb") as f:
                    size = os.fstat(f.fileno()).st_size
                    for req in items:
                        info = self.storage_data[req.storage_index]
                        if info.transform_descriptors:
                            raise ValueError(f"{path}: item {req.storage_index.fqn} was written "
                                             f"with transforms {info.transform_descriptors}, "
                                             f"which Ember does not read")
                        if info.offset + info.length > size:
                            raise ValueError(f"{path} is truncated: {req.storage_index.fqn} "
                                             f"needs bytes {info.offset}..."
                                             f"{info.offset + info.length}, the file has {size}")
                        f.seek(info.offset)
                        blob = io.BytesIO(f.read(info.length))
                        if req.type == LoadItemType.BYTE_IO:
                            planner.load_bytes(req, blob)
                            continue
                        tensor = load(blob, map_location="cpu", weights_only=True)
                        _copy_into(planner, req, narrow_tensor_by_index(
                            tensor, req.storage_offsets, req.lengths))
        fut: Future = Future()
        fut.set_result(None)
        return fut

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id: str | os.PathLike) -> bool:
        """A local path (existing or not)."""
        return isinstance(checkpoint_id, Path) or "://" not in str(checkpoint_id)
