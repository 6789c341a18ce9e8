"""``ember.multiprocessing``: Python's ``multiprocessing`` with Ember tensors shared between
processes through shared memory (``torch.multiprocessing``).

The API is the standard module's (``Process``, ``Queue``, ``SimpleQueue``, ``Pipe``,
``Pool``, ``Manager``, ``get_context``, ``set_start_method``, ``cpu_count``, ...), re-exported
unchanged, plus:

- on import, reducers registered with ``multiprocessing``'s pickler (see
  ``ember.multiprocessing.reductions``): a CPU tensor put on a queue or a pipe, or passed to
  a spawned process, moves to shared memory and travels as a handle, so the receiver's
  tensor views the same memory (the Hogwild pattern: ``model.share_memory()``, then train
  it from several processes);
- ``set_sharing_strategy`` / ``get_sharing_strategy`` / ``get_all_sharing_strategies``:
  ``"file_descriptor"`` (the default on Linux) or ``"file_system"``, as in PyTorch (see
  ``ember.multiprocessing._shared_memory`` for what each costs and how segments are freed);
- ``spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn")`` and
  ``start_processes``: run ``fn(i, *args)`` in ``nprocs`` processes, fail fast with the
  child's traceback (``ProcessRaisedException``) or its signal (``ProcessExitedException``).

``Tensor.share_memory_()`` / ``is_shared()`` and ``UntypedStorage.share_memory_()`` /
``is_shared()`` work without importing this module.
"""

import multiprocessing
from multiprocessing import *  # noqa: F403

from . import _shared_memory
from .reductions import init_reductions
from .spawn import (  # public without being in __all__, as in torch.multiprocessing
    ProcessContext,
    ProcessExitedException,
    ProcessRaisedException,
    SpawnContext,
    spawn,
    start_processes,
)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies"]
__all__ += multiprocessing.__all__


def set_sharing_strategy(new_strategy: str) -> None:
    """Set the strategy for sharing CPU tensors: one of ``get_all_sharing_strategies()``
    (``"file_descriptor"``: segments sent as file descriptors, freed by the kernel with the
    last descriptor; ``"file_system"``: segments sent by name, no descriptor kept open)."""
    _shared_memory.set_strategy(new_strategy)


def get_sharing_strategy() -> str:
    """The current strategy for sharing CPU tensors."""
    return _shared_memory.get_strategy()


def get_all_sharing_strategies() -> set:
    """The sharing strategies this system supports: ``{"file_descriptor", "file_system"}``
    on Linux, ``{"file_system"}`` elsewhere."""
    return set(_shared_memory.ALL_STRATEGIES)


init_reductions()
