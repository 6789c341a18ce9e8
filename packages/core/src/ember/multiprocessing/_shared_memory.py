"""Shared-memory segments: where ``share_memory_()`` puts a CPU storage, and how another
process maps the same memory from a handle.

A segment is a ``SharedSegment``: an ``mmap.mmap`` (``MAP_SHARED``) of a file in shared
memory, which keeps what it needs to hand the segment on. An array over a segment has the
segment at the end of its ``.base`` chain; that is how ``is_shared()`` knows, with no table
beside the arrays. A segment is unmapped when the last array over it is dropped.

The two sharing strategies are PyTorch's:

- ``"file_descriptor"`` (the default on Linux): the segment is an anonymous file
  (``memfd_create``; elsewhere a ``/dev/shm`` file unlinked at once), which never has a name
  in ``/dev/shm``. The segment keeps one descriptor open to send: a handle is a duplicate of
  it sent over a Unix socket (``multiprocessing.reduction.DupFd``; the sender must still be
  running when the receiver unpickles it, as in PyTorch). The kernel frees the memory when
  the last descriptor and the last mapping are gone, in every process, however they end.
  Each live segment costs two descriptors per process (the one kept to send, and the one
  ``mmap`` keeps): with many tensors shared at once, raise ``ulimit -n`` or use
  ``"file_system"``, as PyTorch advises.
- ``"file_system"``: a named POSIX shared-memory object (``shm_open``: ``/dev/shm/ember_...``
  on Linux), sent by name, so no descriptor stays open. Its first 64 bytes hold a reference
  count of the processes that map it (plus one per handle in flight), changed under
  ``flock``; the process that takes it to zero unlinks the name. Each name is registered
  with ``multiprocessing``'s resource tracker, which unlinks what is left when the whole
  family of processes has ended (one that crashed, a handle never received): PyTorch's
  ``torch_shm_manager`` does that job there.
"""

from __future__ import annotations

import mmap
import os
import secrets
import sys
import threading
import weakref

import numpy as np

from .._forksafe import held_across_fork

__all__ = ["SharedSegment", "new_segment", "segment_of", "share_storage_", "share_tensor_",
           "storage_is_shared", "tensor_is_shared", "send_handle", "attach",
           "ALL_STRATEGIES", "get_strategy", "set_strategy"]

if sys.platform.startswith("linux"):
    ALL_STRATEGIES = frozenset({"file_descriptor", "file_system"})
    _DEFAULT = "file_descriptor"
else:  # macOS has no file descriptor strategy in PyTorch either
    ALL_STRATEGIES = frozenset({"file_system"})
    _DEFAULT = "file_system"

_STRATEGY = [_DEFAULT]
_LOCK = held_across_fork(threading.RLock())  # one share_memory_ at a time (two threads
# sharing one tensor); a worker forked while another thread shares or rebuilds gets it free
#: file_system segments: the bytes before the data (the reference count, then padding to a
#: cache line, so that the data is 64-byte aligned in a page-aligned mapping)
HEADER = 64
_PREFIX = "/ember_"
#: the segments this process maps, made here or received, by handle key (fd strategy: the
#: file's (inode, device); file system strategy: the name): a segment received twice, or
#: received back, is mapped once, so that the tensors over it alias as in the sender
_MAPPED: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def _fd_key(fd: int) -> tuple:
    st = os.fstat(fd)
    return (st.st_ino, st.st_dev)


def get_strategy() -> str:
    """The current sharing strategy (``ember.multiprocessing.get_sharing_strategy``)."""
    return _STRATEGY[0]


def set_strategy(name: str) -> None:
    """Set the sharing strategy (``ember.multiprocessing.set_sharing_strategy``)."""
    if name not in ALL_STRATEGIES:
        raise AssertionError(f"invalid sharing strategy {name!r}, expected one of "
                             f"{set(ALL_STRATEGIES)}")
    if name == "file_system":
        # start the resource tracker now, so that processes forked from here on register
        # their names with this one (a child that started its own would unlink too early)
        from multiprocessing import resource_tracker

        resource_tracker.ensure_running()
    _STRATEGY[0] = name


class SharedSegment(mmap.mmap):
    """A shared mapping of one segment. ``strategy``: how it is handed on; ``fd``: the
    descriptor kept to send (file descriptor strategy); ``name``: its POSIX name (file
    system strategy); ``data_offset``: where its data starts; ``nbytes``: the data's size."""

    strategy: str
    fd: int | None
    name: str | None
    data_offset: int
    nbytes: int

    def data(self, offset: int = 0, nbytes: int | None = None) -> np.ndarray:
        """The bytes of the data from ``offset`` (``nbytes`` of them; default: to the end)."""
        n = self.nbytes - offset if nbytes is None else nbytes
        return np.ndarray((n,), np.uint8, buffer=self, offset=self.data_offset + offset)

    def __repr__(self) -> str:
        where = self.name if self.name is not None else f"fd {self.fd}"
        return f"<ember shared segment {where}, {self.nbytes} bytes>"


# -- making and mapping segments ---------------------------------------------------------------

def _anonymous_file(nbytes: int) -> int:
    """A descriptor of an anonymous shared-memory file of ``nbytes`` bytes."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("ember-shared", os.MFD_CLOEXEC)
    else:
        from _posixshmem import shm_open, shm_unlink

        name = f"{_PREFIX}fd_{os.getpid()}_{secrets.token_hex(8)}"
        fd = shm_open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        shm_unlink(name)
    try:
        os.ftruncate(fd, nbytes)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _map(fd: int, size: int, strategy: str) -> SharedSegment:
    seg = SharedSegment(fd, size, flags=mmap.MAP_SHARED,
                        prot=mmap.PROT_READ | mmap.PROT_WRITE)
    seg.strategy = strategy
    seg.fd = None
    seg.name = None
    return seg


def _keep_fd(seg: SharedSegment, fd: int) -> None:
    seg.fd = fd
    weakref.finalize(seg, os.close, fd).atexit = False


def new_segment(nbytes: int) -> SharedSegment:
    """A new segment of at least ``nbytes`` data bytes (zeroed), made by the current
    strategy."""
    size = max(int(nbytes), 1)  # a mapping cannot be empty
    if _STRATEGY[0] == "file_descriptor":
        fd = _anonymous_file(size)
        try:
            seg = _map(fd, size, "file_descriptor")
        except BaseException:
            os.close(fd)
            raise
        _keep_fd(seg, fd)
        seg.data_offset = 0
        key = _fd_key(fd)
    else:
        from _posixshmem import shm_open
        from multiprocessing import resource_tracker

        name = f"{_PREFIX}{os.getpid()}_{secrets.token_hex(8)}"
        fd = shm_open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.ftruncate(fd, HEADER + size)
            seg = _map(fd, HEADER + size, "file_system")
        except BaseException:
            _unlink(name, tracked=False)
            raise
        finally:
            os.close(fd)
        seg[:8] = (1).to_bytes(8, "little")  # this process's reference; nobody else knows it
        resource_tracker.register(name, "shared_memory")
        _on_drop_release(seg, name)
        seg.name = name
        seg.data_offset = HEADER
        key = name
    seg.nbytes = int(nbytes)
    with _LOCK:
        _MAPPED[key] = seg  # a handle of it coming back maps to it
    return seg


def _unlink(name: str, tracked: bool = True) -> None:
    from _posixshmem import shm_unlink

    try:
        shm_unlink(name)
    except FileNotFoundError:
        return
    if tracked:
        from multiprocessing import resource_tracker

        resource_tracker.unregister(name, "shared_memory")


def _add_ref(name: str, delta: int) -> int | None:
    """Add ``delta`` to the reference count of segment ``name``; unlink it at zero. The new
    count, or None when the name is gone."""
    import fcntl
    from _posixshmem import shm_open

    try:
        fd = shm_open(name, os.O_RDWR, 0o600)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        count = int.from_bytes(os.pread(fd, 8, 0), "little") + delta
        os.pwrite(fd, max(count, 0).to_bytes(8, "little"), 0)
        if count <= 0:
            _unlink(name)
        return count
    finally:
        os.close(fd)  # and the lock with it


def _release(name: str, pid: int) -> None:
    if os.getpid() == pid:  # not in a child forked outside multiprocessing that inherited it
        _add_ref(name, -1)


def _on_drop_release(seg: SharedSegment, name: str) -> None:
    """Drop this process's reference to ``name`` when ``seg`` is unmapped, or at exit (also
    a multiprocessing child's exit, which skips ``atexit``; a forked child does not inherit
    it: multiprocessing clears the finalizers of a forked process)."""
    from multiprocessing import util

    util.Finalize(seg, _release, args=(name, os.getpid()), exitpriority=0)


def send_handle(seg: SharedSegment) -> tuple:
    """What a pickle carries to map ``seg`` in another process. File system strategy: one
    more reference, held by the handle until the receiver takes it over."""
    if seg.strategy == "file_descriptor":
        from multiprocessing.reduction import DupFd

        return ("file_descriptor", DupFd(seg.fd), seg.nbytes)
    if _add_ref(seg.name, 1) is None:
        raise RuntimeError(f"cannot send shared memory segment {seg.name}: it no longer exists "
                           "(a forked process used it after every owner dropped it)")
    return ("file_system", seg.name, seg.nbytes)


def attach(handle: tuple) -> SharedSegment:
    """The segment of a handle made by ``send_handle`` in another process, mapped here once
    (a second handle of a segment mapped already gives the same mapping)."""
    strategy, where, nbytes = handle
    if strategy == "file_descriptor":
        fd = where.detach()
        try:
            key = _fd_key(fd)
            with _LOCK:
                seg = _MAPPED.get(key)
                if seg is None:
                    seg = _map(fd, max(nbytes, 1), "file_descriptor")
                    _keep_fd(seg, fd)
                    fd = None
                    seg.data_offset, seg.nbytes = 0, nbytes
                    _MAPPED[key] = seg
                return seg
        finally:
            if fd is not None:
                os.close(fd)
    with _LOCK:
        seg = _MAPPED.get(where)
        if seg is not None:
            _add_ref(where, -1)  # the handle's reference: this process holds one already
            return seg
        from _posixshmem import shm_open

        fd = shm_open(where, os.O_RDWR, 0o600)
        try:
            seg = _map(fd, HEADER + max(nbytes, 1), "file_system")
        finally:
            os.close(fd)
        _on_drop_release(seg, where)  # the handle's reference is now this process's
        seg.name, seg.data_offset, seg.nbytes = where, HEADER, nbytes
        _MAPPED[where] = seg
        return seg


# -- arrays, storages and tensors ---------------------------------------------------------------

def segment_of(arr) -> SharedSegment | None:
    """The segment whose memory ``arr`` (a NumPy array) views, or None."""
    obj = arr
    while obj is not None:
        if isinstance(obj, SharedSegment):
            return obj
        obj = obj.obj if isinstance(obj, memoryview) else getattr(obj, "base", None)
    return None


def _address(arr) -> int:
    return arr.__array_interface__["data"][0]


def place_in(seg: SharedSegment, offset: int, arr) -> np.ndarray:
    """An array of ``arr``'s shape, dtype and strides over ``seg``'s data, its first element
    at byte ``offset``; read-only when ``arr`` is."""
    out = np.ndarray(arr.shape, arr.dtype, buffer=seg, offset=seg.data_offset + offset,
                     strides=arr.strides)
    if not arr.flags.writeable:
        out.flags.writeable = False
    return out


def where_in_segment(arr) -> tuple[SharedSegment, int]:
    """``(segment, byte offset of arr's first element in the segment's data)``."""
    seg = segment_of(arr)
    return seg, _address(arr) - _address(seg.data(0, 0))


def _on_cpu(device) -> bool:
    return device.type == "cpu"


def storage_is_shared(storage) -> bool:
    """``UntypedStorage.is_shared``: in a segment (CPU), always for CUDA (as in PyTorch)."""
    if storage.device.type == "cuda":
        return True
    return _on_cpu(storage.device) and segment_of(storage._anchor) is not None


def tensor_is_shared(t) -> bool:
    """``Tensor.is_shared``: the tensor's own memory is in a segment (CPU); always for CUDA."""
    if t.device.type == "cuda":
        return True
    return _on_cpu(t.device) and segment_of(t._data) is not None


def share_storage_(storage) -> None:
    """Move ``storage``'s bytes into a new segment (a no-op when they are in one already, and
    for storages not on the CPU). The storage object then views the segment."""
    if not _on_cpu(storage.device):
        return
    with _LOCK:
        if segment_of(storage._anchor) is not None:
            return
        old = storage._bytes()
        seg = new_segment(old.size)
        new = seg.data()
        new[...] = old
        storage._init(new, storage.device)


def _aliases(t) -> list:
    """The live tensors that share ``t``'s version counter: its base, the views of that
    base, the tensors ``detach()``ed from any of them, a ``Parameter`` made over one (``t``
    and its base among them). Ember keeps no list of them, so they are found as the
    garbage collector's referrers of the counter; only when something but ``t`` and its base
    holds it (the common cases, a fresh batch or a parameter, skip the search)."""
    import gc

    from .._tensor import Tensor

    vc = t._vc
    mine = [t] if t._base is None else [t, t._base]
    if vc is None or sys.getrefcount(vc) <= 2 + len(mine):  # vc here, the call's argument
        return mine
    found, dicts = {id(x): x for x in mine}, []
    for r in gc.get_referrers(vc):
        if isinstance(r, Tensor):  # an instance whose attributes live inline
            if r._vc is vc:
                found[id(r)] = r
        elif isinstance(r, dict) and r.get("_vc") is vc:
            dicts.append(r)
    if dicts:  # an instance whose __dict__ was made: its owner refers to that dict
        for r in gc.get_referrers(*dicts):
            if isinstance(r, Tensor) and r._vc is vc:
                found[id(r)] = r
    return list(found.values())


def share_tensor_(t) -> None:
    """Move the storage of ``t`` (that of its base, for a view) into a new segment, and make
    every tensor over that storage view it there, with its offset and strides: ``t``, its
    base, the other views of the base and the tensors detached from them (``_aliases``).
    Other arrays over the old memory (``t.numpy()``, ``ember.from_numpy``) keep it, as in
    PyTorch."""
    from .._storage import UntypedStorage, array_span, storage_of

    if not _on_cpu(t.device):
        return
    with _LOCK:
        if segment_of(t._data) is not None:
            return
        storage = storage_of(t)  # the storage that holds its base's array
        start, size = storage.data_ptr(), storage.nbytes()
        lo, n = array_span(t._data)
        if not (start <= lo and lo + n <= start + size):
            # a view whose base's memory was replaced since (``base.data = other``): the
            # view has memory of its own
            storage = UntypedStorage._over(t._data, t.device)
            start, size = storage.data_ptr(), storage.nbytes()
            moving = [t]
        else:
            moving = [x for x in _aliases(t) if x.device == t.device and
                      _inside(x._data, start, size)]
        offsets = [_address(x._data) - start for x in moving]
        share_storage_(storage)  # not in a segment: the arrays it holds are not
        seg, base = where_in_segment(storage._anchor)
        for x, offset in zip(moving, offsets):
            x._data = place_in(seg, base + offset, x._data)
            if x._base is None:
                x._extra_dict()["storage"] = storage


def _inside(arr, start: int, size: int) -> bool:
    from .._storage import array_span

    lo, n = array_span(arr)
    return start <= lo and lo + n <= start + size
