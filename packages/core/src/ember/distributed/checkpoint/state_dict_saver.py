"""``save`` / ``async_save``: write a (sharded) state dict as one checkpoint from every rank."""

from __future__ import annotations

import os
import threading
import warnings
from concurrent.futures import Future as _ConcurrentFuture
from enum import Enum
from typing import Any

from ..._tensor import Tensor
from .default_planner import DefaultSavePlanner
from .metadata import Metadata
from .stateful import Stateful
from .utils import _DistWrapper, _storage, _use_dist

__all__ = ["save", "async_save", "save_state_dict", "AsyncCheckpointerType", "AsyncSaveResponse"]

CURRENT_DCP_VERSION = "1.0.0"


class AsyncCheckpointerType(Enum):
    """How ``async_save`` runs the write: in a thread (Ember runs every kind in one)."""

    THREAD = "thread"
    PROCESS = "process"


class AsyncSaveResponse:
    """PyTorch's response type for staged async saves: the staging and upload futures."""

    def __init__(self, staging_completion, upload_completion) -> None:
        self.staging_completion = staging_completion
        self.upload_completion = upload_completion


def _stateful_to_state_dict(state_dict: dict) -> dict:
    """``state_dict`` with each ``Stateful`` value replaced by its ``state_dict()``."""
    return {k: (v.state_dict() if isinstance(v, Stateful) else v) for k, v in state_dict.items()}


def save(state_dict: dict, *, checkpoint_id: str | os.PathLike | None = None,
         storage_writer=None, planner=None, process_group=None, no_dist: bool = False,
         use_collectives: bool = True) -> Metadata:
    """Save ``state_dict`` (tensors, DTensors, nested dicts and lists, ``Stateful`` objects,
    other picklable values) as one checkpoint: every rank of ``process_group`` calls it with
    its own state dict; each writes its DTensor shards and a share of what all ranks hold,
    and the coordinator writes the metadata. Returns the checkpoint's ``Metadata``.

    Without an initialised process group (or with ``no_dist=True``) it saves from this
    process alone. ``checkpoint_id`` is the directory (a ``FileSystemWriter`` is made for it)
    unless a ``storage_writer`` is given."""
    use_dist = _use_dist(no_dist, "save")
    writer = _storage(storage_writer, checkpoint_id, reader=False)
    return _save_state_dict(_stateful_to_state_dict(state_dict), writer, process_group,
                            0, use_dist, planner, use_collectives)


def save_state_dict(state_dict: dict, storage_writer, process_group=None,
                    coordinator_rank: int = 0, no_dist: bool = False, planner=None) -> Metadata:
    """Deprecated: ``save(state_dict, storage_writer=...)``."""
    warnings.warn("'save_state_dict' is deprecated and will be removed in future versions."
                  "Please use 'save' instead.", FutureWarning, stacklevel=2)
    storage_writer.reset()
    return _save_state_dict(state_dict, storage_writer, process_group, coordinator_rank,
                            not no_dist, planner, True)


def _save_state_dict(state_dict: dict, storage_writer, process_group, coordinator_rank: int,
                     use_dist: bool, planner, use_collectives: bool) -> Metadata:
    dist = _DistWrapper(process_group, use_dist, coordinator_rank)
    planner = DefaultSavePlanner() if planner is None else planner
    storage_meta = storage_writer.storage_meta()
    found: dict[str, Any] = {}

    def local_step():
        planner.set_up_planner(state_dict, storage_meta, dist.is_coordinator)
        storage_writer.set_up_storage_writer(dist.is_coordinator, rank=dist.rank,
                                             use_collectives=use_collectives)
        return storage_writer.prepare_local_plan(planner.create_local_plan())

    def global_step(all_local_plans):
        plans, metadata = planner.create_global_plan(all_local_plans)
        found["metadata"] = metadata
        return storage_writer.prepare_global_plan(plans)

    central_plan = dist.reduce_scatter("plan", local_step, global_step)

    def write_data():
        final = planner.finish_plan(central_plan)
        return storage_writer.write_data(final, planner).wait()

    def finish_checkpoint(all_results):
        metadata = found["metadata"]
        metadata.version = CURRENT_DCP_VERSION
        storage_writer.finish(metadata=metadata, results=all_results)
        return metadata

    return dist.all_reduce("write", write_data, finish_checkpoint)


def _stage(obj):
    """A copy of a state dict whose tensors (a DTensor's local tensor) are host copies."""
    if isinstance(obj, Tensor):
        from ..tensor import DTensor

        if isinstance(obj, DTensor):
            local = obj._local_tensor.detach().cpu().clone()
            return DTensor._make(local, obj.device_mesh, obj.placements, tuple(obj.shape))
        return obj.detach().cpu().clone()
    if isinstance(obj, dict):
        staged = {k: _stage(v) for k, v in obj.items()}
        return staged if type(obj) is dict else type(obj)(staged)
    if isinstance(obj, list):
        return [_stage(v) for v in obj]
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return tuple(_stage(v) for v in obj)
    return obj


_ASYNC_GROUPS: dict = {}  # id(default group) -> (default group, its checkpointing twin)


def _async_group(process_group):
    """The group the background save runs its collectives on: for the default group, a twin
    over the same ranks (made collectively on first use, then cached), since MPI collectives
    of two threads must not share a communicator; a group the caller passes is used as it is
    (making a twin would need every rank of the job), so the caller keeps its own
    collectives off it until the save is done."""
    from .. import distributed_c10d as c10d

    if process_group is not None:
        return process_group
    base = c10d._default_group()
    entry = _ASYNC_GROUPS.get(id(base))
    if entry is None or entry[0] is not base:
        entry = _ASYNC_GROUPS[id(base)] = (base, c10d.new_group())
    return entry[1]


def async_save(state_dict: dict, *, checkpoint_id: str | os.PathLike | None = None,
               storage_writer=None, planner=None, process_group=None,
               async_checkpointer_type: AsyncCheckpointerType = AsyncCheckpointerType.THREAD,
               async_stager=None, no_dist: bool = False, use_collectives: bool = True
               ) -> _ConcurrentFuture:
    """``save`` in the background: the state dict is copied to host memory now (training may
    go on changing it), then written by a thread over its own process group. Returns a
    ``concurrent.futures.Future`` of the ``Metadata``. Every rank must call it, in the same
    order as its other collectives."""
    use_dist = _use_dist(no_dist, "save")
    writer = _storage(storage_writer, checkpoint_id, reader=False)
    staged = _stage(_stateful_to_state_dict(state_dict))
    group = _async_group(process_group) if use_dist else None
    future: _ConcurrentFuture = _ConcurrentFuture()

    def run() -> None:
        try:
            future.set_result(_save_state_dict(staged, writer, group, 0, use_dist, planner,
                                               use_collectives))
        except BaseException as e:
            future.set_exception(e)

    future.set_running_or_notify_cancel()
    threading.Thread(target=run, name="ember-dcp-async-save").start()
    return future
