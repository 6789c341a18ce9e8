"""What runs inside a DataLoader worker process: seeding, ``get_worker_info`` and the loop
that fetches the indices the main process sends and sends the data back."""

from __future__ import annotations

import os
import queue
import random
from dataclasses import dataclass

import numpy as np

from . import WORKER_POLL_INTERVAL, ExceptionWrapper
from .fetch import create_fetcher

__all__ = ["WorkerInfo", "get_worker_info"]


class WorkerInfo:
    """What a worker knows about itself: ``id``, ``num_workers``, ``seed``, ``dataset``
    (the worker's own copy). Read-only once made."""

    id: int
    num_workers: int
    seed: int
    dataset: object

    def __init__(self, **kwargs) -> None:
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs)
        self.__initialized = True

    def __setattr__(self, key, val) -> None:
        if self.__dict__.get("_WorkerInfo__initialized", False):
            raise RuntimeError(f"Cannot assign attributes to {self.__class__.__name__} objects")
        super().__setattr__(key, val)

    def __repr__(self) -> str:
        items = ", ".join(f"{k}={getattr(self, k)}" for k in self.__keys)
        return f"{self.__class__.__name__}({items})"


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """In a DataLoader worker process: its ``WorkerInfo``; in the main process: ``None``.

    Use it in ``IterableDataset.__iter__`` to shard the stream, or in ``worker_init_fn``.
    """
    return _worker_info


@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    """Sent by a worker whose IterableDataset copy is exhausted."""

    worker_id: int


@dataclass(frozen=True)
class _ResumeIteration:
    """Sent to persistent workers at the start of a new epoch (and echoed back)."""


class ManagerWatchdog:
    """Tells a worker whether the process that started it is still alive."""

    def __init__(self) -> None:
        self.manager_pid = os.getppid()
        self.manager_dead = False

    def is_alive(self) -> bool:
        if not self.manager_dead:
            self.manager_dead = os.getppid() != self.manager_pid
        return not self.manager_dead


def _numpy_seed(base_seed: int, worker_id: int) -> np.ndarray:
    """The seed of NumPy's legacy global RNG in a worker; PyTorch's ``_generate_state``, which
    is NumPy's SeedSequence over ``[worker_id, low word, high word, 0]``."""
    entropy = [worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32, 0]
    return np.random.SeedSequence(entropy).generate_state(4)


def _seed_worker(base_seed: int, worker_id: int) -> int:
    """Seed ``random``, ember and NumPy's global RNG the way PyTorch seeds its workers."""
    from ..._random import manual_seed

    seed = base_seed + worker_id
    random.seed(seed)
    manual_seed(seed)
    np.random.seed(_numpy_seed(base_seed, worker_id))
    return seed


def _worker_loop(iterable, dataset, index_queue, data_queue, done_event, auto_collation,
                 collate_fn, drop_last, base_seed, init_fn, worker_id, num_workers,
                 persistent_workers) -> None:
    """Fetch ``(task_idx, index)`` from ``index_queue``, put ``(task_idx, data)`` on
    ``data_queue``; errors travel as ``ExceptionWrapper``. ``None`` ends the loop."""
    global _worker_info
    try:
        seed = _seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)
        where = f"in DataLoader worker process {worker_id}"
        init_exception = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = create_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_exception = ExceptionWrapper(where=where)
        iteration_end = False
        watchdog = ManagerWatchdog()
        while watchdog.is_alive():
            try:
                r = index_queue.get(timeout=WORKER_POLL_INTERVAL)
            except queue.Empty:
                if done_event.is_set():
                    # shutting down but the final ``None`` never came (the main process's
                    # queue may have been finalized by the garbage collector first)
                    break
                continue
            if isinstance(r, _ResumeIteration):
                data_queue.put((r, None))
                iteration_end = False
                fetcher = create_fetcher(iterable, dataset, auto_collation, collate_fn,
                                         drop_last)
                continue
            if r is None:
                break
            if done_event.is_set() or iteration_end:
                continue  # wind-down: skip work until the final ``None``
            idx, index = r
            if init_exception is not None:
                data, init_exception = init_exception, None
            else:
                try:
                    data = fetcher.fetch(index)
                except Exception as e:
                    if isinstance(e, StopIteration) and iterable:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = ExceptionWrapper(where=where)
            data_queue.put((idx, data))
            del data, idx, index, r
    except KeyboardInterrupt:
        pass  # the main process raises it
    if done_event.is_set():
        data_queue.cancel_join_thread()
        data_queue.close()
