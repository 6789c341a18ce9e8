"""Pickling of tensors and storages between processes through shared memory
(``torch.multiprocessing.reductions``).

``init_reductions()`` (run when ``ember.multiprocessing`` is imported) registers reducers
with ``multiprocessing.reduction.ForkingPickler``, the pickler of every ``multiprocessing``
queue, pipe, pool and of the arguments of a spawned process. A CPU tensor sent that way is
first moved into shared memory in the sender (``Tensor.share_memory_()``: the sender's
tensor stays there), then travels as a handle of its segment (a file descriptor or a name,
by the sharing strategy) with its offset, shape, strides, dtype and ``requires_grad``, so the
tensor rebuilt in the receiver views the same memory: a write in one process is seen in the
other. Tensors on other devices travel by value (PyTorch sends CUDA tensors by CUDA IPC
handle instead). Plain ``pickle`` is untouched: it copies the data, as before.

A ``Tensor`` subclass with a ``__reduce_ex__`` of its own (``ember.nn.Parameter``) is moved
to shared memory and then pickled by that hook, whose tensor argument travels as above, so a
parameter arrives as a parameter sharing the sender's memory. The subclasses registered are
those defined when ``init_reductions()`` runs (it runs again on every call); a subclass
defined later travels through its own ``__reduce_ex__`` alone: its data arrives in shared
memory but the sender's tensor is not moved (unless it was shared before).
"""

from __future__ import annotations

import numpy as np

from .._storage import TypedStorage, UntypedStorage, storage_of
from .._tensor import Tensor, _make
from . import _shared_memory as shm

__all__ = ["init_reductions", "reduce_tensor", "rebuild_tensor", "reduce_storage",
           "rebuild_storage", "reduce_typed_storage", "rebuild_typed_storage"]

try:  # loaded before any fork, so that a child never inherits it half-initialized (the
    # feeder thread of a Queue may be pickling, through DupFd, while the main thread forks)
    import multiprocessing.resource_sharer  # noqa: F401
except ImportError:  # pragma: no cover - platforms without fd passing
    pass

_NON_LEAF = ("Cowardly refusing to serialize non-leaf tensor which requires_grad, since "
             "autograd does not support crossing process boundaries.  If you just want to "
             "transfer the data, call detach() on the tensor before serializing (e.g., putting "
             "it on the queue).")


def _storage_handle(storage: UntypedStorage) -> tuple:
    """``(segment handle, byte offset of the storage in the segment's data, nbytes)`` of a
    storage in shared memory."""
    seg, offset = shm.where_in_segment(storage._anchor)
    return shm.send_handle(seg), offset, storage.nbytes()


def _attached_storage(handle: tuple, offset: int, nbytes: int) -> UntypedStorage:
    seg = shm.attach(handle)
    from .._device import device

    return UntypedStorage._over(seg.data(offset, nbytes), device("cpu"))


def reduce_tensor(t: Tensor):
    """The reducer of a ``Tensor`` (and of a subclass without a ``__reduce_ex__`` of its
    own): a CPU tensor moves to shared memory and travels as a handle; another device's
    travels by value."""
    if t.requires_grad and t.grad_fn is not None:
        raise RuntimeError(_NON_LEAF)
    if t.device.type != "cpu":
        return Tensor.__reduce_ex__(t, 2)
    t.share_memory_()
    storage = storage_of(t)
    handle, storage_offset, nbytes = _storage_handle(storage)
    arr = t._data
    offset = shm._address(arr) - storage.data_ptr()  # bytes from the storage's start
    meta = (offset, arr.shape, arr.strides, arr.dtype, bool(arr.flags.writeable),
            t.requires_grad)
    return (rebuild_tensor, (type(t), handle, storage_offset, nbytes, meta))


def rebuild_tensor(cls, handle, storage_offset: int, nbytes: int, meta) -> Tensor:
    """A tensor over the shared storage ``handle`` names (the receiving end of
    ``reduce_tensor``): a root tensor whose ``untyped_storage()`` is that whole storage."""
    offset, shape, strides, dtype, writeable, requires_grad = meta
    storage = _attached_storage(handle, storage_offset, nbytes)
    seg = shm.segment_of(storage._anchor)
    arr = np.ndarray(shape, dtype, buffer=seg,
                     offset=seg.data_offset + storage_offset + offset, strides=strides)
    if not writeable:
        arr.flags.writeable = False
    t = _make(arr, storage.device)
    t._extra = {"storage": storage}
    if cls is not Tensor:
        return cls._make_subclass(cls, t, requires_grad)
    if requires_grad:
        t.requires_grad = True
    return t


def _reduce_subclass_own_hook(t: Tensor):
    """A subclass with its own ``__reduce_ex__`` (``Parameter``): move it to shared memory,
    then pickle it by its hook (whose tensor argument is then a shared tensor)."""
    if t.requires_grad and t.grad_fn is not None:
        raise RuntimeError(_NON_LEAF)
    if type(t).share_memory_ is Tensor.share_memory_:  # not a placeholder that refuses it
        t.share_memory_()
    return t.__reduce_ex__(2)


def reduce_storage(storage: UntypedStorage):
    """The reducer of an ``UntypedStorage``: moved to shared memory, sent as a handle (CPU);
    another device's by value."""
    if storage.device.type != "cpu":
        return (_storage_by_value, (bytes(storage._host(storage._bytes())),
                                    str(storage.device)))
    storage.share_memory_()
    return (rebuild_storage, _storage_handle(storage))


def rebuild_storage(handle, storage_offset: int, nbytes: int) -> UntypedStorage:
    """The receiving end of ``reduce_storage``."""
    return _attached_storage(handle, storage_offset, nbytes)


def _storage_by_value(data: bytes, device: str) -> UntypedStorage:
    return UntypedStorage(data, device=device)


def reduce_typed_storage(storage: TypedStorage):
    """The reducer of a ``TypedStorage``: its untyped storage (shared) and its dtype."""
    return (rebuild_typed_storage, (storage._untyped_storage, storage.dtype))


def rebuild_typed_storage(untyped: UntypedStorage, dtype) -> TypedStorage:
    """The receiving end of ``reduce_typed_storage``."""
    return TypedStorage(wrap_storage=untyped, dtype=dtype, _internal=True)


def _subclasses(cls) -> list:
    found, todo = [], list(cls.__subclasses__())
    while todo:
        sub = todo.pop()
        found.append(sub)
        todo.extend(sub.__subclasses__())
    return found


def init_reductions() -> None:
    """Register the reducers of tensors (with the subclasses defined so far) and storages
    with ``ForkingPickler``."""
    from multiprocessing.reduction import ForkingPickler

    ForkingPickler.register(Tensor, reduce_tensor)
    for cls in _subclasses(Tensor):
        own = cls.__reduce_ex__ is not Tensor.__reduce_ex__
        ForkingPickler.register(cls, _reduce_subclass_own_hook if own else reduce_tensor)
    ForkingPickler.register(UntypedStorage, reduce_storage)
    ForkingPickler.register(TypedStorage, reduce_typed_storage)
