"""Running a checkpoint step on every rank and collecting failures (PyTorch's
``_DistWrapper``): each step's exceptions are gathered, and every rank raises one
``CheckpointException`` naming the ranks that failed, so no rank is left waiting."""

from __future__ import annotations

import pickle
from typing import Any

from .api import CheckpointException, _is_wrapped_exception, _wrap_exception


def _portable(exc: BaseException):
    """``exc`` wrapped with its traceback, made picklable (its text when it is not)."""
    wrapped = _wrap_exception(exc)
    try:
        pickle.dumps(wrapped)
        return wrapped
    except Exception:
        return _wrap_exception(RuntimeError(f"{type(exc).__name__}: {exc}"))


def _failures(results: list) -> dict:
    return {r: v for r, v in enumerate(results) if _is_wrapped_exception(v)}


class _DistWrapper:
    """Collectives over ``group`` for a checkpoint's steps, or their one-process forms when
    ``use_dist`` is False."""

    def __init__(self, group, use_dist: bool, coordinator_rank: int = 0) -> None:
        self.group = group
        self.use_dist = use_dist
        self.coordinator_rank = coordinator_rank
        if use_dist:
            from .. import distributed_c10d as c10d

            self.rank = c10d.get_rank(group)
            self.world_size = c10d.get_world_size(group)
        else:
            self.rank, self.world_size = 0, 1
        self.is_coordinator = self.rank == coordinator_rank

    def get_rank(self) -> int:
        """This rank in the group."""
        return self.rank

    def get_world_size(self) -> int:
        """The group's size."""
        return self.world_size

    def all_gather_object(self, obj) -> list:
        """Every rank's ``obj``."""
        if not self.use_dist:
            return [obj]
        from .. import distributed_c10d as c10d

        out: list = [None] * self.world_size
        c10d.all_gather_object(out, obj, group=self.group)
        return out

    def broadcast_object(self, obj):
        """The coordinator's ``obj``."""
        if not self.use_dist:
            return obj
        from .. import distributed_c10d as c10d

        box = [obj]
        c10d.broadcast_object_list(box, group=self.group, group_src=self.coordinator_rank)
        return box[0]

    def _run(self, fn, *args):
        try:
            return fn(*args)
        except BaseException as e:  # every rank learns of it
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            return _portable(e)

    def _coordinate(self, step: str, map_fun, reduce_fun) -> Any:
        """``reduce_fun`` of every rank's ``map_fun()``, computed on the coordinator and
        broadcast (a failure anywhere raises on every rank)."""
        gathered = self.all_gather_object(self._run(map_fun))
        result: Any = None
        if self.is_coordinator:
            failed = _failures(gathered)
            result = (CheckpointException(step, failed) if failed
                      else self._run(reduce_fun, gathered))
            if _is_wrapped_exception(result):
                result = CheckpointException(step, {self.rank: result})
        result = self.broadcast_object(result)
        if isinstance(result, CheckpointException):
            raise result
        return result

    def reduce_scatter(self, step: str, map_fun, reduce_fun) -> Any:
        """Each rank computes ``map_fun()``; the coordinator turns the list into one result
        per rank (``reduce_fun``), and each rank gets its own."""
        return self._coordinate(step, map_fun, reduce_fun)[self.rank]

    def all_reduce(self, step: str, map_fun, reduce_fun) -> Any:
        """Each rank computes ``map_fun()``; the coordinator reduces the list to one result
        that every rank returns."""
        return self._coordinate(step, map_fun, reduce_fun)

    def all_gather(self, step: str, map_fun) -> list:
        """Every rank's ``map_fun()``."""
        gathered = self.all_gather_object(self._run(map_fun))
        failed = _failures(gathered)
        if failed:
            raise CheckpointException(step, failed)
        return gathered

    def broadcast(self, step: str, map_fun) -> Any:
        """The coordinator's ``map_fun()``, on every rank."""
        result = self._run(map_fun) if self.is_coordinator else None
        result = self.broadcast_object(result)
        if _is_wrapped_exception(result):
            raise CheckpointException(step, {self.coordinator_rank: result})
        return result

    def barrier(self) -> None:
        """Wait for every rank."""
        if self.use_dist:
            from .. import distributed_c10d as c10d

            c10d.barrier(group=self.group)


def _use_dist(no_dist: bool, what: str) -> bool:
    """Whether a checkpoint runs over the process group (``no_dist`` off and one is up)."""
    if no_dist:
        return False
    from .. import distributed_c10d as c10d

    if c10d.is_available() and c10d.is_initialized():
        return True
    import warnings

    warnings.warn(f"torch.distributed is disabled, unavailable or uninitialized, assuming the "
                  f"intent is to {what} in a single process.", stacklevel=3)
    return False


def _storage(storage, checkpoint_id, reader: bool):
    """The storage writer/reader to use: the one given (reset to ``checkpoint_id``), or a
    file-system one at ``checkpoint_id``."""
    if storage is not None:
        storage.reset(checkpoint_id)
        return storage
    if checkpoint_id is None:
        raise RuntimeError("`checkpoint_id` must be specified if storage_writer/storage_reader "
                           "is None.")
    from .filesystem import FileSystemReader, FileSystemWriter

    cls = FileSystemReader if reader else FileSystemWriter
    if not cls.validate_checkpoint_id(checkpoint_id):
        raise RuntimeError(f"Cannot detect which StorageReader or StorageWriter to use. Please "
                           f"specify the storage_writer/storage_reader. ({checkpoint_id})")
    return cls(checkpoint_id)
