"""What runs inside a DataLoader worker process: seeding, ``get_worker_info``, dying with
the main process, and the loop that fetches the indices the main process sends and sends
the data back.

A worker must not outlive the process that started it, even when stuck in the dataset's
``__getitem__`` (in Python or in C) and even when that process was killed with SIGKILL, so
two mechanisms end it:

* on Linux, ``prctl(PR_SET_PDEATHSIG, SIGKILL)``: the kernel kills the worker the moment its
  parent dies. The "parent" is the *thread* that created the worker, so it is used only
  when that thread is the main thread, which lives as long as the process: a loader
  iterated first from a short-lived thread must keep its workers. Not for ``forkserver``
  workers either: their parent is the fork server, which outlives the main process as long
  as any of its children holds the pipe it watches (every worker does).
* everywhere, a daemon thread in the worker that checks every ``WATCHDOG_INTERVAL`` seconds
  whether the main process is alive and ends the worker with ``os._exit`` if not. It runs
  beside a dataset busy in pure Python (the GIL is handed over every few milliseconds) or
  blocked in C that releases the GIL (``time.sleep``, I/O).
"""

from __future__ import annotations

import ctypes
import os
import queue
import random
import signal
import sys
import threading
import time
from dataclasses import dataclass

import numpy as np

from .common import WATCHDOG_INTERVAL, WORKER_POLL_INTERVAL, ExceptionWrapper
from .fetch import create_fetcher

__all__ = ["WorkerInfo", "get_worker_info"]


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """What a worker knows about itself: ``id``, ``num_workers``, ``seed``, ``dataset``
    (the worker's own copy), ``rng`` (``None`` in a worker process) and ``worker_method``.
    Frozen, as in PyTorch."""

    id: int
    num_workers: int
    seed: int
    dataset: object
    rng: object = None
    worker_method: str | None = "multiprocessing"


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

    seed: int | None = None


@dataclass(frozen=True)
class _Manager:
    """The process that starts a worker (the one iterating the DataLoader), as the worker
    needs to know it to die with it."""

    pid: int
    #: the worker is its direct child (fork, spawn), not the fork server's
    is_parent: bool
    #: use PR_SET_PDEATHSIG: a direct child, started by the main thread (which lives as long
    #: as the process)
    death_signal: bool

    @classmethod
    def current(cls, ctx) -> _Manager:
        """This process, about to start workers from the current thread through ``ctx``."""
        is_parent = ctx.get_start_method() != "forkserver"
        main_thread = threading.current_thread() is threading.main_thread()
        return cls(os.getpid(), is_parent, is_parent and main_thread)


_PROCFS = os.path.exists("/proc/self/stat")


def _pid_alive(pid: int) -> bool:
    """The process exists and is not a zombie (a killed process stays one until reaped).
    POSIX only: a forkserver worker's check (there is no fork server on Windows)."""
    if _PROCFS:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                return f.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
        except FileNotFoundError:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, someone else's
        pass
    return True


class ManagerWatchdog:
    """Tells a worker whether the process that started it is still alive.

    A direct child (fork, spawn) checks that its parent is still the manager: an orphan is
    re-parented the moment its parent dies, however it died. A fork server's child checks
    that its parent (the server) is unchanged and that the manager's pid is alive.
    """

    def __init__(self, manager: _Manager | None = None) -> None:
        direct = manager is None or manager.is_parent
        self.parent_pid = manager.pid if manager is not None and direct else os.getppid()
        self.manager_pid = None if direct else manager.pid
        self.manager_dead = False

    def _check(self) -> bool:
        if os.getppid() != self.parent_pid:
            return False
        return self.manager_pid is None or _pid_alive(self.manager_pid)

    def is_alive(self) -> bool:
        if not self.manager_dead:
            self.manager_dead = not self._check()
        return not self.manager_dead


PR_SET_PDEATHSIG = 1


def _set_parent_death_signal(signum: int) -> bool:
    """Linux: have the kernel send ``signum`` to this process when its parent thread exits.
    False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return False
    prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
    return prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0) == 0


def _watch_manager(watchdog: ManagerWatchdog) -> None:
    while watchdog.is_alive():
        time.sleep(WATCHDOG_INTERVAL)
    os._exit(1)  # nobody is left to send work or read results


def _die_with_manager(manager: _Manager | None) -> ManagerWatchdog:
    """Make this worker end when ``manager`` does (see the module docstring); exit at once if
    it already has (it may die before the death signal is set)."""
    if manager is not None and manager.death_signal:
        _set_parent_death_signal(signal.SIGKILL)
    watchdog = ManagerWatchdog(manager)
    if not watchdog.is_alive():
        os._exit(1)
    threading.Thread(target=_watch_manager, args=(watchdog,), name="ember-manager-watchdog",
                     daemon=True).start()
    return watchdog


def _numpy_seed(base_seed: int, worker_id: int) -> np.ndarray:
    """The seed of NumPy's legacy global RNG in a worker; PyTorch's ``_generate_state``, which
    is NumPy's SeedSequence over ``[worker_id, low word, high word, 0]``."""
    entropy = [worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32, 0]
    return np.random.SeedSequence(entropy).generate_state(4)


def _generate_state(base_seed: int, worker_id: int) -> list:
    """The four 32-bit words that seed NumPy in worker ``worker_id`` (PyTorch's function of the
    same name)."""
    return [int(x) for x in _numpy_seed(base_seed, worker_id)]


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
                 persistent_workers, manager: _Manager | None = None) -> None:
    """Fetch ``(task_idx, index)`` from ``index_queue``, put ``(task_idx, data)`` on
    ``data_queue``; errors travel as ``ExceptionWrapper``. ``None`` ends the loop. The
    worker ends when ``manager`` does (see the module docstring). The CPU tensors of ``data``
    travel through shared memory (``ember.multiprocessing``'s reducers, registered here
    again for the tensor subclasses defined since, such as ``Parameter``)."""
    global _worker_info
    watchdog = _die_with_manager(manager)
    from ...multiprocessing import init_reductions

    init_reductions()
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
