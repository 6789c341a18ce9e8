"""``ember.cuda.memory``: device-memory statistics over CuPy's memory pool, like
``torch.cuda.memory``.

CuPy's default memory pool plays the part of PyTorch's caching allocator:
``memory_allocated`` is the pool's bytes in use, ``memory_reserved`` the bytes it holds from
the driver, ``empty_cache`` hands its cached blocks back. CuPy counts no peaks or totals, so
Ember counts them by wrapping CuPy's allocator (``cupy.cuda.set_allocator``). The wrapper is
a Python call on every allocation, so it is put in place only once a program asks for a
statistic that needs it (``max_memory_allocated``, ``max_memory_reserved``,
``memory_stats``, ``reset_peak_memory_stats``, ...): peaks and totals count from then on.

Without CUDA, as in PyTorch: the queries answer 0 (``memory_stats`` an empty dict) and
``empty_cache`` does nothing; what needs a device (``reset_peak_memory_stats``,
``mem_get_info``, ...) raises the AssertionError that names the missing extra.
"""

from __future__ import annotations

import collections
import threading
import warnings
import weakref

from ._utils import backend, backend_or_none, device_index

__all__ = ["empty_cache", "memory_stats", "memory_stats_as_nested_dict",
           "reset_accumulated_memory_stats", "reset_peak_memory_stats",
           "reset_max_memory_allocated", "reset_max_memory_cached", "memory_allocated",
           "max_memory_allocated", "memory_reserved", "max_memory_reserved", "memory_cached",
           "max_memory_cached", "mem_get_info", "set_per_process_memory_fraction",
           "get_per_process_memory_fraction"]


# -- the counting allocator --------------------------------------------------------------------

class _Counts:
    """What the tracker knows of one device. ``bound_*`` are upper bounds of the current
    values: the pool is asked for the exact one only when a bound passes the peak."""

    __slots__ = ("peak_allocated", "bound_allocated", "peak_reserved", "bound_reserved",
                 "start_allocated", "allocated_bytes", "allocations", "ooms")

    def __init__(self, used: int, reserved: int):
        self.reset_peaks(used, reserved)
        self.reset_accumulated(used)

    def reset_peaks(self, used: int, reserved: int) -> None:
        self.peak_allocated = self.bound_allocated = used
        self.peak_reserved = self.bound_reserved = reserved

    def reset_accumulated(self, used: int) -> None:
        self.start_allocated = used  # freed = allocated_bytes - (current - start_allocated)
        self.allocated_bytes = self.allocations = self.ooms = 0


class _Tracker:
    """CuPy's current allocator wrapped to count, per device, the peaks and totals of its
    default memory pool. Exact peaks at one Python call per allocation: the pool's
    ``used_bytes`` is read only when the bytes handed out since the last reading could have
    passed the peak."""

    def __init__(self, cupy):
        self._cupy = cupy
        self._pool = cupy.get_default_memory_pool()
        memory = getattr(cupy.cuda, "memory", None)
        self._oom = getattr(memory, "OutOfMemoryError", MemoryError)
        self._lock = threading.Lock()
        self._devices: dict[int, _Counts] = {}
        self._inner = None
        self.install()

    def install(self) -> None:
        """Wrap CuPy's current allocator (again, if a program has set another since)."""
        current = self._cupy.cuda.get_allocator()
        if current != self.malloc:
            self._inner = current
            self._cupy.cuda.set_allocator(self.malloc)

    def malloc(self, size: int):
        try:
            ptr = self._inner(size)
        except self._oom:
            dev = self._cupy.cuda.runtime.getDevice()
            with self._lock:
                self._counts_after(dev, 0).ooms += 1
            raise
        nbytes = ptr.mem.size
        with self._lock:
            c = self._devices.get(ptr.device_id)
            if c is None:
                c = self._counts_after(ptr.device_id, nbytes)
            c.allocations += 1
            c.allocated_bytes += nbytes
            c.bound_allocated += nbytes
            if c.bound_allocated > c.peak_allocated:
                used = c.bound_allocated = self._pool.used_bytes()
                if used > c.peak_allocated:
                    c.peak_allocated = used
            c.bound_reserved += nbytes
            if c.bound_reserved > c.peak_reserved:
                reserved = c.bound_reserved = self._pool.total_bytes()
                if reserved > c.peak_reserved:
                    c.peak_reserved = reserved
        return ptr

    def _counts_after(self, dev: int, nbytes: int) -> _Counts:
        """The counts of the current device ``dev``, started (if new) as they stood before an
        allocation of ``nbytes`` that the pool already holds."""
        c = self._devices.get(dev)
        if c is None:
            used = max(self._pool.used_bytes() - nbytes, 0)
            c = self._devices[dev] = _Counts(used, self._pool.total_bytes())
        return c

    def counts(self, dev: int, used: int, reserved: int) -> _Counts:
        """The counts of device ``dev``, whose pool holds ``used``/``reserved`` bytes now
        (hold ``lock``)."""
        c = self._devices.get(dev)
        if c is None:
            c = self._devices[dev] = _Counts(used, reserved)
        return c

    @property
    def lock(self) -> threading.Lock:
        return self._lock


_trackers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # CuPy module -> tracker


def _tracker(be) -> _Tracker:
    """The tracker of backend ``be``'s CuPy, put in place on first use."""
    tracker = _trackers.get(be.xp)
    if tracker is None:
        tracker = _trackers[be.xp] = _Tracker(be.xp)
    else:
        tracker.install()
    return tracker


def _with_counts(be, device, fn):
    """``fn(counts, used, reserved)`` for ``device``'s pool now, under the tracker's lock."""
    dev = device_index(device)
    tracker = _tracker(be)
    used, reserved = be.memory_allocated(dev), be.memory_reserved(dev)
    with tracker.lock:
        return fn(tracker.counts(dev, used, reserved), used, reserved)


def _stats(c: _Counts, used: int, reserved: int) -> dict:
    stats = {
        "allocated_bytes.all.current": used,
        "allocated_bytes.all.peak": max(c.peak_allocated, used),
        "allocated_bytes.all.allocated": c.allocated_bytes,
        "allocated_bytes.all.freed": max(c.allocated_bytes - (used - c.start_allocated), 0),
        "allocation.all.allocated": c.allocations,
        "num_ooms": c.ooms,
        "reserved_bytes.all.current": reserved,
        "reserved_bytes.all.peak": max(c.peak_reserved, reserved),
    }
    return collections.OrderedDict(sorted(stats.items()))


# -- torch.cuda.memory ---------------------------------------------------------------------------

def empty_cache() -> None:
    """Release the cached, unused blocks of CuPy's memory pools to the driver, so that other
    programs can use them (no-op without CUDA)."""
    be = backend_or_none()
    if be is not None:
        be.empty_cache()


def memory_stats(device=None) -> dict:
    """CUDA memory-pool statistics of ``device`` (default: current) under PyTorch's key
    names, sorted: ``allocated_bytes.all.{current,peak,allocated,freed}``,
    ``reserved_bytes.all.{current,peak}``, ``allocation.all.allocated`` and ``num_ooms``.
    Peaks and totals count from the first call that needs them (see the module's doc);
    empty without CUDA."""
    be = backend_or_none()
    if be is None:
        return collections.OrderedDict()
    return _with_counts(be, device, _stats)


def memory_stats_as_nested_dict(device=None) -> dict:
    """``memory_stats`` as a nested dictionary (``{'allocated_bytes': {'all': {...}}}``)."""
    nested: dict = {}
    for key, value in memory_stats(device).items():
        *path, leaf = key.split(".")
        node = nested
        for part in path:
            node = node.setdefault(part, {})
        node[leaf] = value
    return nested


def reset_peak_memory_stats(device=None) -> None:
    """Restart the peaks (``max_memory_allocated``, ``max_memory_reserved``) from the current
    values of ``device``."""
    _with_counts(backend(), device, lambda c, used, reserved: c.reset_peaks(used, reserved))


def reset_accumulated_memory_stats(device=None) -> None:
    """Restart the totals (``allocated``/``freed`` bytes, allocation and OOM counts)."""
    _with_counts(backend(), device, lambda c, used, reserved: c.reset_accumulated(used))


def reset_max_memory_allocated(device=None) -> None:
    """Deprecated: calls ``reset_peak_memory_stats``, which resets all peaks."""
    warnings.warn("torch.cuda.reset_max_memory_allocated now calls "
                  "torch.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.",
                  FutureWarning, stacklevel=2)
    return reset_peak_memory_stats(device)


def reset_max_memory_cached(device=None) -> None:
    """Deprecated: calls ``reset_peak_memory_stats``, which resets all peaks."""
    warnings.warn("torch.cuda.reset_max_memory_cached now calls "
                  "torch.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.",
                  FutureWarning, stacklevel=2)
    return reset_peak_memory_stats(device)


def memory_allocated(device=None) -> int:
    """Bytes of device memory held by tensors (CuPy's pool, in use; 0 without CUDA)."""
    be = backend_or_none()
    return 0 if be is None else be.memory_allocated(device_index(device))


def max_memory_allocated(device=None) -> int:
    """The peak of ``memory_allocated`` since tracking started or the last
    ``reset_peak_memory_stats`` (0 without CUDA)."""
    return memory_stats(device).get("allocated_bytes.all.peak", 0)


def memory_reserved(device=None) -> int:
    """Bytes held by the caching allocator (CuPy's pool), in use or cached (0 without
    CUDA)."""
    be = backend_or_none()
    return 0 if be is None else be.memory_reserved(device_index(device))


def max_memory_reserved(device=None) -> int:
    """The peak of ``memory_reserved`` since tracking started or the last
    ``reset_peak_memory_stats`` (0 without CUDA)."""
    return memory_stats(device).get("reserved_bytes.all.peak", 0)


def memory_cached(device=None) -> int:
    """Deprecated alias of ``memory_reserved``."""
    warnings.warn("`torch.cuda.memory_cached` has been renamed to `torch.cuda.memory_reserved`",
                  FutureWarning, stacklevel=2)
    return memory_reserved(device)


def max_memory_cached(device=None) -> int:
    """Deprecated alias of ``max_memory_reserved``."""
    warnings.warn("`torch.cuda.max_memory_cached` has been renamed to "
                  "`torch.cuda.max_memory_reserved`", FutureWarning, stacklevel=2)
    return max_memory_reserved(device)


def mem_get_info(device=None) -> tuple:
    """``(free, total)`` bytes of device memory, as the driver reports them."""
    return backend().mem_get_info(device_index(device))


def set_per_process_memory_fraction(fraction, device=None) -> None:
    """Cap the memory pool of ``device`` at ``fraction`` of its total memory (CuPy's
    ``MemoryPool.set_limit``); an allocation past it raises an out-of-memory error."""
    be = backend()
    dev = device_index(device)
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if fraction < 0 or fraction > 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    with be.xp.cuda.Device(dev):
        be.xp.get_default_memory_pool().set_limit(fraction=fraction)


def get_per_process_memory_fraction(device=None) -> float:
    """The cap set by ``set_per_process_memory_fraction`` (1.0 when there is none)."""
    be = backend()
    dev = device_index(device)
    with be.xp.cuda.Device(dev):
        limit = be.xp.get_default_memory_pool().get_limit()
    if not limit:
        return 1.0
    return limit / be.mem_get_info(dev)[1]
