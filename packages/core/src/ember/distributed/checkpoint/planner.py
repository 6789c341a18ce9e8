"""The planning protocol of a checkpoint save or load (PyTorch's
``torch.distributed.checkpoint.planner``): every rank makes a local plan of items, the
coordinator turns all plans into a global one, and each rank carries out its part.

Save: ``set_up_planner`` (all ranks), ``create_local_plan`` (all), ``create_global_plan``
(coordinator; it also returns the ``Metadata``), ``finish_plan`` (all), then the storage
writer asks ``resolve_data`` for each item's data. Load: ``set_up_planner``,
``create_local_plan``, ``create_global_plan``, ``finish_plan``, then the storage reader calls
``load_bytes`` for bytes and ``resolve_tensor``/``commit_tensor`` around each tensor copy.
"""

from __future__ import annotations

import abc
import io
from dataclasses import dataclass
from enum import Enum, auto
from typing import Any

from .metadata import ChunkStorageMetadata, Metadata, MetadataIndex, StorageMeta, TensorProperties

__all__ = ["WriteItemType", "LoadItemType", "BytesIOWriteData", "TensorWriteData", "WriteItem",
           "ReadItem", "SavePlan", "LoadPlan", "SavePlanner", "LoadPlanner"]


class WriteItemType(Enum):
    """What a write item writes: a whole tensor, a shard of one, or bytes."""

    TENSOR = auto()
    SHARD = auto()
    BYTE_IO = auto()


class LoadItemType(Enum):
    """What a read item reads: a tensor region or bytes."""

    TENSOR = auto()
    BYTE_IO = auto()


@dataclass(frozen=True)
class BytesIOWriteData:
    """Size of a bytes item."""

    nbytes: int


@dataclass(frozen=True)
class TensorWriteData:
    """A tensor item's chunk, properties and the tensor's global size."""

    chunk: ChunkStorageMetadata
    properties: TensorProperties
    size: Any


@dataclass(frozen=True)
class WriteItem:
    """One thing to write: a tensor chunk or bytes, under ``index``."""

    index: MetadataIndex
    type: WriteItemType
    bytes_io_data: BytesIOWriteData | None = None
    tensor_data: TensorWriteData | None = None

    def tensor_storage_size(self) -> int | None:
        """Bytes of the tensor chunk this item writes (None for bytes items)."""
        if self.tensor_data is None:
            return None
        n = 1
        for s in self.tensor_data.chunk.sizes:
            n *= s
        return n * self.tensor_data.properties.dtype.itemsize


@dataclass(frozen=True)
class ReadItem:
    """Copy ``lengths`` elements from the stored chunk ``storage_index`` (starting at
    ``storage_offsets`` in it) into the state dict's ``dest_index`` at ``dest_offsets``."""

    type: LoadItemType
    dest_index: MetadataIndex
    dest_offsets: Any
    storage_index: MetadataIndex
    storage_offsets: Any
    lengths: Any


@dataclass(frozen=True)
class SavePlan:
    """A rank's write items, with the storage layer's and planner's data."""

    items: list[WriteItem]
    storage_data: Any = None
    planner_data: Any = None
    usable: bool = True


@dataclass
class LoadPlan:
    """A rank's read items, with the storage layer's and planner's data."""

    items: list[ReadItem]
    storage_data: Any = None
    planner_data: Any = None


class SavePlanner(abc.ABC):
    """Plans a save (see the module docstring for the order of calls)."""

    @abc.abstractmethod
    def set_up_planner(self, state_dict: dict, storage_meta: StorageMeta | None = None,
                       is_coordinator: bool = False) -> None:
        """Begin planning the save of ``state_dict``."""

    @abc.abstractmethod
    def create_local_plan(self) -> SavePlan:
        """This rank's write items."""

    @abc.abstractmethod
    def create_global_plan(self, all_plans: list[SavePlan]) -> tuple[list[SavePlan], Metadata]:
        """On the coordinator: the final plan of every rank and the checkpoint's metadata."""

    @abc.abstractmethod
    def finish_plan(self, new_plan: SavePlan) -> SavePlan:
        """This rank's plan as the coordinator decided it."""

    @abc.abstractmethod
    def resolve_data(self, write_item: WriteItem):
        """The data of ``write_item``: a tensor (on any device) or an ``io.BytesIO``."""


class LoadPlanner(abc.ABC):
    """Plans a load (see the module docstring for the order of calls)."""

    @abc.abstractmethod
    def set_up_planner(self, state_dict: dict, metadata: Metadata | None = None,
                       is_coordinator: bool = False) -> None:
        """Begin planning the load of ``state_dict`` (loaded in place) from ``metadata``."""

    @abc.abstractmethod
    def create_local_plan(self) -> LoadPlan:
        """This rank's read items."""

    @abc.abstractmethod
    def create_global_plan(self, global_plan: list[LoadPlan]) -> list[LoadPlan]:
        """On the coordinator: the final plan of every rank."""

    @abc.abstractmethod
    def finish_plan(self, central_plan: LoadPlan) -> LoadPlan:
        """This rank's plan as the coordinator decided it."""

    @abc.abstractmethod
    def load_bytes(self, read_item: ReadItem, value: io.BytesIO) -> None:
        """Store the bytes item read for ``read_item``."""

    @abc.abstractmethod
    def resolve_tensor(self, read_item: ReadItem):
        """The tensor region ``read_item`` is copied into."""

    @abc.abstractmethod
    def commit_tensor(self, read_item: ReadItem, tensor) -> None:
        """Called once the region from ``resolve_tensor`` holds the read data."""
