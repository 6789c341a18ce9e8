"""Where a checkpoint's bytes go (PyTorch's ``torch.distributed.checkpoint.storage``):
``StorageWriter``/``StorageReader`` turn plans into files (``FileSystemWriter`` and
``FileSystemReader`` are the built-in ones)."""

from __future__ import annotations

import abc
import os
from dataclasses import dataclass
from typing import Any

from .metadata import Metadata, MetadataIndex, StorageMeta
from .planner import LoadPlan, LoadPlanner, SavePlan, SavePlanner

__all__ = ["WriteResult", "StorageWriter", "StorageReader"]


@dataclass(frozen=True)
class WriteResult:
    """What writing one item produced: its index, size and where it lies."""

    index: MetadataIndex
    size_in_bytes: int
    storage_data: Any


class StorageWriter(abc.ABC):
    """Writes a save plan's items; the coordinator then writes the metadata (``finish``)."""

    @abc.abstractmethod
    def reset(self, checkpoint_id: str | os.PathLike | None = None) -> None:
        """Start a new checkpoint (at ``checkpoint_id`` when given)."""

    @abc.abstractmethod
    def set_up_storage_writer(self, is_coordinator: bool, *args: Any, **kwargs: Any) -> None:
        """Called on every rank before planning."""

    @abc.abstractmethod
    def prepare_local_plan(self, plan: SavePlan) -> SavePlan:
        """Add this storage's data to a rank's plan."""

    @abc.abstractmethod
    def prepare_global_plan(self, plans: list[SavePlan]) -> list[SavePlan]:
        """On the coordinator: add this storage's data to every rank's plan."""

    @abc.abstractmethod
    def write_data(self, plan: SavePlan, planner: SavePlanner):
        """Write ``plan``'s items; a future of their ``WriteResult`` list."""

    @abc.abstractmethod
    def finish(self, metadata: Metadata, results: list[list[WriteResult]]) -> None:
        """On the coordinator: record where everything went and commit the checkpoint."""

    @classmethod
    @abc.abstractmethod
    def validate_checkpoint_id(cls, checkpoint_id: str | os.PathLike) -> bool:
        """Whether this storage can write ``checkpoint_id``."""

    def storage_meta(self) -> StorageMeta | None:
        """The storage's own metadata, recorded in the checkpoint."""
        return None


class StorageReader(abc.ABC):
    """Reads a checkpoint's metadata and a load plan's items."""

    @abc.abstractmethod
    def reset(self, checkpoint_id: str | os.PathLike | None = None) -> None:
        """Read a new checkpoint (at ``checkpoint_id`` when given)."""

    @abc.abstractmethod
    def read_metadata(self, *args: Any, **kwargs: Any) -> Metadata:
        """The checkpoint's metadata."""

    @abc.abstractmethod
    def set_up_storage_reader(self, metadata: Metadata, is_coordinator: bool, *args: Any,
                              **kwargs: Any) -> None:
        """Called on every rank before planning."""

    @abc.abstractmethod
    def prepare_local_plan(self, plan: LoadPlan) -> LoadPlan:
        """Add this storage's data to a rank's plan."""

    @abc.abstractmethod
    def prepare_global_plan(self, plans: list[LoadPlan]) -> list[LoadPlan]:
        """On the coordinator: add this storage's data to every rank's plan."""

    @abc.abstractmethod
    def read_data(self, plan: LoadPlan, planner: LoadPlanner):
        """Read ``plan``'s items into the planner; a future completed when done."""

    @classmethod
    @abc.abstractmethod
    def validate_checkpoint_id(cls, checkpoint_id: str | os.PathLike) -> bool:
        """Whether this storage can read ``checkpoint_id``."""
