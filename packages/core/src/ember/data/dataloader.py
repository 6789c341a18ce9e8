"""``DataLoader``: batches from a dataset, in the main process or in worker processes.

With ``num_workers > 0`` each worker is a real process (``multiprocessing``; fork by default
on Linux, any start method through ``multiprocessing_context``) with its own index queue;
all share one result queue. ``prefetch_factor`` tasks per worker are kept in flight and
results are put back in sampler order. Batches come back through shared memory, as in
PyTorch: the reducers of ``ember.multiprocessing`` (registered in the main process and in
every worker) move a worker's CPU tensors into shared memory and put only handles on the
queue. While waiting, the main process polls its workers'
liveness, so a worker killed by a signal raises an error instead of hanging; the workers in
turn die with the main process, however it ends (see ``_utils/worker.py``).
"""

from __future__ import annotations

import itertools
import math
import multiprocessing
import os
import queue
import warnings
from collections.abc import Callable
from sys import modules as _modules
from typing import Any, Generic, TypeVar

from . import _utils
from ._utils import ExceptionWrapper
from ._utils.collate import default_collate, default_convert
from ._utils.fetch import create_fetcher
from ._utils.worker import (
    _IterableDatasetStopIteration,
    _Manager,
    _ResumeIteration,
    _worker_loop,
    get_worker_info,  # at torch.utils.data.dataloader too
)
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]

T_co = TypeVar("T_co", covariant=True)
# PyTorch's private aliases, which libraries import for their annotations (opacus)
_T_co = T_co
_T = TypeVar("_T")
_worker_init_fn_t = Callable[[int], None]
_collate_fn_t = Callable[[list[_T]], Any]


class _DatasetKind:
    """The two kinds of dataset a ``DataLoader`` reads (``torch.utils.data._DatasetKind``):
    ``Map`` (indexed, ``Dataset``) and ``Iterable`` (``IterableDataset``)."""

    Map = 0
    Iterable = 1

    @staticmethod
    def create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
        """The fetcher that turns sampler output into (collated) data for this kind."""
        return create_fetcher(kind != _DatasetKind.Map, dataset, auto_collation, collate_fn,
                              drop_last)


class _InfiniteConstantSampler(Sampler):
    """The sampler of an IterableDataset: ``None`` forever."""

    def __iter__(self):
        return itertools.repeat(None)


def _draw_base_seed(generator) -> int:
    """A seed in [0, 2**63) from ``generator`` (default: ``ember.default_generator``)."""
    from .. import _dtype
    from .._factory import empty

    return int(empty((), dtype=_dtype.int64).random_(generator=generator).item())


_FROZEN_AFTER_INIT = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                      "persistent_workers")


class DataLoader(Generic[T_co]):
    """Iterate over ``dataset`` in batches (like ``torch.utils.data.DataLoader``).

    ``batch_size`` samples per batch (``None``: no batching), ``shuffle`` or a custom
    ``sampler`` / ``batch_sampler``, ``collate_fn`` to merge samples, ``num_workers`` worker
    processes (each seeded ``base_seed + worker_id``; see ``get_worker_info``),
    ``prefetch_factor`` batches in flight per worker, ``persistent_workers`` to keep them
    across epochs, ``timeout`` seconds to wait for a batch. ``pin_memory`` is accepted (no
    effect without an accelerator).
    """

    __initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers: int = 0, collate_fn=None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None,
                 persistent_workers: bool = False, pin_memory_device: str = "",
                 in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set "
                             "prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        self._is_iterable = isinstance(dataset, IterableDataset)
        self._dataset_kind = _DatasetKind.Iterable if self._is_iterable else _DatasetKind.Map
        if self._is_iterable:  # the order is left to the dataset
            for option, value, given in (("shuffle", shuffle, shuffle not in {False, None}),
                                         ("sampler", sampler, sampler is not None),
                                         ("batch_sampler", batch_sampler,
                                          batch_sampler is not None)):
                if given:
                    raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                     f"{option} option, but got {option}={value}")
        else:
            shuffle = bool(shuffle)

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")

        if sampler is None:
            if self._is_iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.__initialized = True
        self._IterableDataset_len_called = None
        self._iterator = None
        self.check_worker_number_rationality()

    @property
    def multiprocessing_context(self):
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context) -> None:
        if context is not None:
            if self.num_workers <= 0:
                raise ValueError("multiprocessing_context can only be used with multi-process "
                                 "loading (num_workers > 0), but got "
                                 f"num_workers={self.num_workers}")
            if isinstance(context, str):
                valid = multiprocessing.get_all_start_methods()
                if context not in valid:
                    raise ValueError("multiprocessing_context option should specify a valid "
                                     f"start method in {valid!r}, but got "
                                     f"multiprocessing_context={context!r}")
                context = multiprocessing.get_context(context)
            if not isinstance(context, multiprocessing.context.BaseContext):
                raise TypeError("multiprocessing_context option should be a valid context "
                                "object or a string specifying the start method, but got "
                                f"multiprocessing_context={context}")
        self.__multiprocessing_context = context

    def __setattr__(self, attr, val) -> None:
        if self.__initialized and attr in _FROZEN_AFTER_INIT:
            raise ValueError(f"{attr} attribute should not be set after "
                             f"{self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self) -> int:
        if self._is_iterable:
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                length = (length // self.batch_size if self.drop_last
                          else math.ceil(length / self.batch_size))
            return length
        return len(self._index_sampler)

    def check_worker_number_rationality(self) -> None:
        """Warn when ``num_workers`` exceeds the CPUs this process may use."""
        if not self.num_workers:
            return
        cpuset_checked = hasattr(os, "sched_getaffinity")
        suggest = len(os.sched_getaffinity(0)) if cpuset_checked else os.cpu_count()
        if suggest is not None and self.num_workers <= suggest:
            return
        if suggest is None:
            suggested = ("DataLoader is not able to compute a suggested max number of worker in "
                         "current system.")
        else:
            suggested = (f"Our suggested max number of worker in current system is {suggest}"
                         f"{'' if cpuset_checked else ' (`cpuset` is not taken into account)'}, "
                         "which is smaller than what this DataLoader is going to create.")
        warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in "
                      f"total. {suggested} Please be aware that excessive worker creation might "
                      "get DataLoader running slow or even freeze, lower the worker number to "
                      "avoid potential slowness/freeze if necessary.", stacklevel=2)


def _distributed_settings() -> tuple:
    """``(world size, rank)`` of the default process group, ``(1, 0)`` without one."""
    from .. import distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size(), dist.get_rank()
    return 1, 0


class _BaseDataLoaderIter:
    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._shared_seed = None
        self._pg = None
        self._dataset_kind = loader._dataset_kind
        self._is_iterable = loader._is_iterable
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._world_size, self._rank = _distributed_settings()
        self._pin_memory = False
        self._pin_memory_device = None
        if loader.pin_memory:
            if loader.pin_memory_device:
                warnings.warn("pin_memory_device is deprecated, the current accelerator will be "
                              "used as the device,ignore "
                              f"pin_memory_device='{loader.pin_memory_device}'.", stacklevel=3)
            if _accelerator_available():
                self._pin_memory, self._pin_memory_device = True, "cuda"
            else:
                warnings.warn("'pin_memory' argument is set as true but no accelerator is "
                              "found, then device pinned memory won't be used.", stacklevel=3)
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = _draw_base_seed(loader.generator)
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0
        self._profile_name = f"enumerate(DataLoader)#{self.__class__.__name__}.__next__"

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter: bool = False) -> None:
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self):
        return next(self._sampler_iter)

    def _next_data(self):
        raise NotImplementedError

    def __next__(self, _profiled: bool = False):
        # the range PyTorch records per batch; no profiler can be active before its module
        # is imported (``import ember`` does not import it)
        prof = _modules.get("ember.autograd.profiler")
        if prof is not None and prof._ACTIVE[0] and not _profiled:
            with prof.record_function(self._profile_name):
                return self.__next__(True)
        data = self._next_data()
        self._num_yielded += 1
        if (self._is_iterable and self._IterableDataset_len_called is not None
                and self._num_yielded > self._IterableDataset_len_called):
            msg = (f"Length of IterableDataset {self._dataset} was reported to be "
                   f"{self._IterableDataset_len_called}(when accessing len(dataloader)), but "
                   f"{self._num_yielded} samples have been fetched. ")
            if self._num_workers > 0:
                msg += ("For multiprocessing data-loading, this could be caused by not properly "
                        "configuring the IterableDataset replica at each worker.")
            warnings.warn(msg, stacklevel=2)
        return data

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError("{} cannot be pickled", self.__class__.__name__)


def _accelerator_available() -> bool:
    from .. import cuda

    return bool(cuda.is_available())


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        if self._timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        if self._num_workers != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires num_workers == 0")
        self._dataset_fetcher = create_fetcher(self._is_iterable, self._dataset,
                                               self._auto_collation, self._collate_fn,
                                               self._drop_last)

    def _next_data(self):
        index = self._next_index()  # may raise StopIteration
        data = self._dataset_fetcher.fetch(index)  # may raise StopIteration
        if self._pin_memory:
            data = _utils.pin_memory.pin_memory(data, self._pin_memory_device)
        return data


#: the queues of the live multi-process iterators, by ``id(iterator)``, until their workers
#: are shut down. Held here so that an iterator caught in a reference cycle (say, by the
#: traceback of an error it raised) never takes its queues into the garbage collector's
#: cycle: collecting a ``multiprocessing.Queue`` there closes its pipe twice, racing its
#: feeder thread. The iterator's ``__del__`` shuts the workers down and releases them.
_LIVE_QUEUES: dict = {}


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Workers, each with an index queue, one result queue, in-order reassembly.

    Task bookkeeping (as in PyTorch): ``_send_idx`` numbers the next task sent,
    ``_rcvd_idx`` the next one to return; ``_task_info[idx]`` is ``(worker_id,)`` while the
    task is outstanding and ``(worker_id, data)`` once it arrived out of order.
    """

    def __init__(self, loader: DataLoader) -> None:
        self._shutdown = True  # nothing to shut down until the workers exist
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        if self._num_workers <= 0:
            raise AssertionError("num_workers must be greater than 0 for "
                                 "MultiProcessingDataLoaderIter")
        if self._prefetch_factor <= 0:
            raise AssertionError("prefetch_factor must be greater than 0 for "
                                 "MultiProcessingDataLoaderIter")
        from .. import multiprocessing as ember_multiprocessing  # its reducers: shared memory

        ctx = loader.multiprocessing_context or ember_multiprocessing.get_context()
        self._worker_result_queue = ctx.Queue()
        self._data_queue = self._worker_result_queue
        self._workers_done_event = ctx.Event()
        self._index_queues = []
        self._workers = []
        self._workers_status = [True] * self._num_workers
        self._shutdown = False
        manager = _Manager.current(ctx)
        for i in range(self._num_workers):
            index_queue = ctx.Queue()
            index_queue.cancel_join_thread()
            w = ctx.Process(target=_worker_loop, args=(
                self._is_iterable, self._dataset, index_queue, self._worker_result_queue,
                self._workers_done_event, self._auto_collation, self._collate_fn,
                self._drop_last, self._base_seed, loader.worker_init_fn, i, self._num_workers,
                self._persistent_workers, manager))
            w.daemon = True
            w.start()
            self._index_queues.append(index_queue)
            self._workers.append(w)
        _LIVE_QUEUES[id(self)] = (self._worker_result_queue, *self._index_queues)
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter: bool = False) -> None:
        super()._reset(loader, first_iter)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info = {}
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            for q in self._index_queues:
                q.put(_ResumeIteration())
            pending = self._num_workers
            while pending > 0:
                idx, _ = self._get_data()
                if isinstance(idx, _ResumeIteration):
                    pending -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_get_data(self, timeout: float):
        """``(True, item)`` from the result queue, or ``(False, None)`` after ``timeout``;
        raises if a worker has died."""
        try:
            return True, self._data_queue.get(timeout=timeout)
        except Exception as e:
            failed = [w for wid, w in enumerate(self._workers)
                      if self._workers_status[wid] and not w.is_alive()]
            for wid, w in enumerate(self._workers):
                if w in failed:
                    self._mark_worker_as_unavailable(wid)
            if failed:
                pids = ", ".join(str(w.pid) for w in failed)
                raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited "
                                   "unexpectedly") from e
            if isinstance(e, queue.Empty):
                return False, None
            raise

    def _get_data(self):
        if self._timeout > 0:
            # wait in short slices so that a dead worker is noticed before the timeout
            remaining = self._timeout
            while remaining > 0:
                step = min(remaining, _utils.WORKER_POLL_INTERVAL)
                ok, data = self._try_get_data(step)
                if ok:
                    return data
                remaining -= step
            raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
        while True:
            ok, data = self._try_get_data(_utils.WORKER_POLL_INTERVAL)
            if ok:
                return data

    def _next_data(self):
        while True:
            # skip tasks of workers that ended (IterableDataset), stop when none are left
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info:
                    if len(info) == 2 or self._workers_status[info[0]]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration

            if len(self._task_info[self._rcvd_idx]) == 2:
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if self._is_iterable and isinstance(data, _IterableDatasetStopIteration):
                if self._persistent_workers:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                if not self._in_order:
                    worker_id = self._task_info.pop(idx)[0]
                    return self._process_data(data, worker_id)
                self._task_info[idx] += (data,)
            else:
                worker_id = self._task_info.pop(idx)[0]
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

    def _try_put_index(self) -> None:
        max_tasks = self._prefetch_factor * self._num_workers
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):  # the next active worker, if any
            wid = next(self._worker_queue_idx_cycle)
            if self._workers_status[wid] and (
                    self._in_order
                    or self._workers_num_tasks[wid] < max_tasks // sum(self._workers_status)):
                break
        else:
            return
        self._index_queues[wid].put((self._send_idx, index))
        self._task_info[self._send_idx] = (wid,)
        self._workers_num_tasks[wid] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _process_data(self, data, worker_id: int):
        self._workers_num_tasks[worker_id] -= 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        if self._pin_memory:
            data = _utils.pin_memory.pin_memory(data, self._pin_memory_device)
        return data

    def _mark_worker_as_unavailable(self, worker_id: int, shutdown: bool = False) -> None:
        """Tell worker ``worker_id`` to exit (its final ``None``) and stop sending it tasks."""
        self._index_queues[worker_id].put(None)
        self._workers_status[worker_id] = False

    def _shutdown_workers(self) -> None:
        """Stop the workers: final ``None`` to each, join with a timeout, terminate any
        straggler (and reap it), close the queues. Idempotent."""
        if getattr(self, "_shutdown", True):
            return
        self._shutdown = True
        if _utils is None or _utils.python_exit_status:
            return  # interpreter exit: multiprocessing terminates daemonic workers itself
        try:
            self._workers_done_event.set()
            for wid in range(len(self._workers)):
                if self._persistent_workers or self._workers_status[wid]:
                    self._mark_worker_as_unavailable(wid, shutdown=True)
            for w in self._workers:
                w.join(timeout=_utils.MP_STATUS_CHECK_INTERVAL)
            for q in self._index_queues:
                q.cancel_join_thread()
                q.close()
            self._worker_result_queue.cancel_join_thread()
            self._worker_result_queue.close()
        finally:
            for w in self._workers:
                if w.is_alive():
                    w.terminate()
                    w.join(timeout=_utils.MP_STATUS_CHECK_INTERVAL)
            _LIVE_QUEUES.pop(id(self), None)

    def __del__(self) -> None:
        self._shutdown_workers()

