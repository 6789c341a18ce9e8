"""``load``: fill a (sharded) state dict in place from a checkpoint, whatever sharding and
number of ranks saved it."""

from __future__ import annotations

import os
import warnings

from .default_planner import DefaultLoadPlanner
from .stateful import Stateful
from .utils import _DistWrapper, _storage, _use_dist

__all__ = ["load", "load_state_dict"]


def load(state_dict: dict, *, checkpoint_id: str | os.PathLike | None = None,
         storage_reader=None, planner=None, process_group=None, no_dist: bool = False) -> None:
    """Load a checkpoint into ``state_dict`` in place: every rank calls it with its own state
    dict (the keys and, for tensors, the shapes it wants; DTensors receive their shards);
    tensors are copied into, other values replaced, ``Stateful`` values get
    ``load_state_dict`` with their loaded state. A key the checkpoint lacks is an error (a
    ``DefaultLoadPlanner(allow_partial_load=True)`` skips it). Loading never runs code:
    non-tensor values load with ``weights_only=True``."""
    use_dist = _use_dist(no_dist, "load")
    reader = _storage(storage_reader, checkpoint_id, reader=True)
    statefuls = {k: v.state_dict() for k, v in state_dict.items() if isinstance(v, Stateful)}
    flat = {k: statefuls.get(k, v) for k, v in state_dict.items()}
    _load_state_dict(flat, reader, process_group, 0, use_dist, planner)
    for key, elem in state_dict.items():
        if key in statefuls:
            elem.load_state_dict(flat[key])
        elif flat[key] is not elem:
            state_dict[key] = flat[key]


def load_state_dict(state_dict: dict, storage_reader, process_group=None,
                    coordinator_rank: int = 0, no_dist: bool = False, planner=None) -> None:
    """Deprecated: ``load(state_dict, storage_reader=...)``."""
    warnings.warn("'load_state_dict' is deprecated and will be removed in future versions. "
                  "Please use 'load' instead.", FutureWarning, stacklevel=2)
    storage_reader.reset()
    _load_state_dict(state_dict, storage_reader, process_group, coordinator_rank,
                     not no_dist, planner)


def _load_state_dict(state_dict: dict, storage_reader, process_group, coordinator_rank: int,
                     use_dist: bool, planner) -> None:
    dist = _DistWrapper(process_group, use_dist, coordinator_rank)
    planner = DefaultLoadPlanner() if planner is None else planner

    def local_step():
        try:
            metadata = storage_reader.read_metadata()
        except FileNotFoundError as e:
            raise AssertionError(f"metadata is None; global metadata read failed: {e}") from None
        planner.set_up_planner(state_dict, metadata, dist.is_coordinator)
        storage_reader.set_up_storage_reader(metadata, dist.is_coordinator, rank=dist.rank)
        return storage_reader.prepare_local_plan(planner.create_local_plan())

    def global_step(all_local_plans):
        return storage_reader.prepare_global_plan(planner.create_global_plan(all_local_plans))

    central_plan = dist.reduce_scatter("plan", local_step, global_step)

    def read_data():
        final = planner.finish_plan(central_plan)
        storage_reader.read_data(final, planner).wait()

    dist.all_gather("read", read_data)
