"""Intra-op parallelism for Ember's own CPU kernels (PyTorch's ``at::parallel_for``).

The BLAS behind matrix products has its own thread pool; everything else Ember computes on
the CPU is NumPy, one ufunc call at a time in the calling thread. NumPy releases the GIL
inside a ufunc's loop, so a kernel that works in blocks (``ops._special.blocked``: GELU and
its backward) or in independent rows (attention's softmax, layer norm) runs its pieces in
several threads at once: ``parallel_for(begin, end, grain, fn)`` calls ``fn(b, e)`` over
contiguous chunks of ``[begin, end)``, the calling thread taking the first chunk and the
pool's threads the others, and returns when all are done (the first exception raised in a
chunk is raised again in the caller, after every chunk has finished).

The thread count is ``ember.set_num_threads``'s (the BLAS pool's size, one setting for both,
as in PyTorch); until it is called, the BLAS pool's size when first asked (threadpoolctl), so
``OMP_NUM_THREADS`` / ``OPENBLAS_NUM_THREADS`` limit both. A chunk that itself calls
``parallel_for`` runs its work serially (no nested pools, no deadlock); a forked child starts
a pool of its own on first use.

A handoff through this pool costs ~70 us on a 2-core VM: the woken thread must take the GIL,
and CPython's timed condition waits wake slowly there (an untimed pthread wait: ~5 us). The
native kernels that split their own work (the direct convolutions) therefore use a pool of
their own, in C (``kernels.c``'s ``pool_for``), whose workers never touch Python; they take
``native_threads()`` threads (LeNet's 6 -> 16 conv forward on two threads: 0.23 -> 0.14 ms).
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from ._forksafe import reinit_in_child

__all__ = ["parallel_for", "get_num_threads", "set_num_threads", "note_threaded_blas",
           "blas_threads_busy", "native_threads"]

_lock = reinit_in_child(threading.Lock())
_local = threading.local()
# threads: the count in force (None until first asked); pool: (pid, size, executor) or None
_state: dict = {"threads": None, "pool": None}


def _blas_threads() -> int:
    try:
        import threadpoolctl
    except ImportError:  # pragma: no cover - a hard dependency of ember-core
        return 1
    counts = [lib.num_threads for lib in threadpoolctl.ThreadpoolController().select(
        user_api="blas").lib_controllers if lib.num_threads]
    return max(counts, default=1)


def get_num_threads() -> int:
    """The number of threads ``parallel_for`` uses (including the caller)."""
    n = _state["threads"]
    if n is None:
        with _lock:
            if _state["threads"] is None:
                _state["threads"] = max(1, _blas_threads())
            n = _state["threads"]
    return n


def set_num_threads(n: int) -> None:
    """Use ``n`` threads from now on (``ember.set_num_threads`` calls this); a pool of another
    size is shut down once its running chunks end."""
    with _lock:
        _state["threads"] = n
        pool, _state["pool"] = _state["pool"], None
    if pool is not None:
        pool[2].shutdown(wait=False)


#: OpenBLAS runs a product of at least this many multiply-adds on two threads or more (its
#: interface/gemm.c: 65536 * GEMM_MULTITHREAD_THRESHOLD (4) per thread)
BLAS_THREADED_MACS = 2 * 65536 * 4

#: After a product that it ran on its threads, OpenBLAS's (pthreads) worker threads spin
#: waiting for the next one for 2**28 TSC cycles (its default OPENBLAS_THREAD_TIMEOUT, read
#: once when NumPy loads it): ~0.1 s at 2.5 GHz, a core each. A kernel that splits its work
#: over Ember's threads meanwhile shares those cores with the spinning threads: LeNet's
#: training step, whose linear layers are threaded products, ran its sample-split
#: convolutions 16% slower than serial ones (5.9 -> 6.9 ms; with the timeout at 2**4 cycles,
#: 5.3 ms). Such kernels ask ``blas_threads_busy()`` and stay serial while it holds.
BLAS_SPIN_SECONDS = 0.12
_blas_last = [float("-inf")]
_monotonic = time.monotonic


def note_threaded_blas() -> None:
    """Record that a product OpenBLAS threads (``BLAS_THREADED_MACS`` or more) ran now."""
    _blas_last[0] = _monotonic()


def blas_threads_busy() -> bool:
    """Whether the BLAS's threads may still be spinning after a threaded product (see
    ``BLAS_SPIN_SECONDS``)."""
    return _monotonic() - _blas_last[0] < BLAS_SPIN_SECONDS


def native_threads(mind_blas: bool = True) -> int:
    """How many threads a native kernel that splits its own work (``kernels.c``'s pool) may
    take now: one inside a ``parallel_for`` chunk (no nesting) or, with ``mind_blas``, while
    the BLAS's threads may spin (``blas_threads_busy``: the convolutions' rule), else
    ``get_num_threads()``."""
    if getattr(_local, "inside", False) or (mind_blas and blas_threads_busy()):
        return 1
    return get_num_threads()


def _executor(size: int) -> ThreadPoolExecutor:
    pid = os.getpid()
    pool = _state["pool"]
    if pool is not None and pool[0] == pid and pool[1] == size:
        return pool[2]
    with _lock:
        pool = _state["pool"]
        if pool is None or pool[0] != pid or pool[1] != size:
            # a forked child inherits the parent's executor object but none of its threads
            executor = ThreadPoolExecutor(size, thread_name_prefix="ember-intraop",
                                          initializer=_mark_worker)
            _state["pool"] = pool = (pid, size, executor)
        return pool[2]


def _mark_worker() -> None:
    _local.inside = True


def parallel_for(begin: int, end: int, grain: int, fn) -> None:
    """``fn(b, e)`` over contiguous chunks of ``[begin, end)`` of at least ``grain`` items
    each, in up to ``get_num_threads()`` threads; serial when that is one, when the range
    has fewer than two grains, or when called from inside a chunk."""
    n = end - begin
    if n <= 0:
        return
    threads = _state["threads"] or get_num_threads()
    chunks = min(threads, n // max(grain, 1))
    if chunks <= 1 or getattr(_local, "inside", False):
        fn(begin, end)
        return
    bounds = [begin + n * i // chunks for i in range(chunks + 1)]
    executor = _executor(threads - 1)
    futures = [executor.submit(fn, bounds[i], bounds[i + 1]) for i in range(1, chunks)]
    error = None
    _local.inside = True
    try:
        fn(bounds[0], bounds[1])
    except BaseException as exc:  # wait for the others before raising: they use our arrays
        error = exc
    finally:
        _local.inside = False
    for future in futures:
        exc = future.exception()
        if exc is not None and error is None:
            error = exc
    if error is not None:
        raise error
