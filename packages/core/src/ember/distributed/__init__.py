"""``ember.distributed``: process groups, collectives and data-parallel training on MPI.

``torch.distributed``'s API over mpi4py and MPICH (``pip install 'ember-core[distributed]'``),
and over CuPy's NCCL for GPU tensors. Start the ranks with the launcher::

    python -m ember.distributed.run --nproc-per-node 2 train.py

or with ``mpiexec -n 2 python train.py``; then ``init_process_group()`` in each.
See :mod:`ember.distributed.distributed_c10d` for what a wait does when a rank fails.
"""

from __future__ import annotations

import os as _os
import sys as _sys

# ember-nn ships ember/distributed/optim/ (ZeroRedundancyOptimizer needs ember.optim): merge
# every ember/distributed/ folder on sys.path, as ember/__init__.py does for ember/
__path__ = list(__path__)
for _entry in _sys.path:
    if isinstance(_entry, str) and _os.path.isdir(_entry):
        _folder = _os.path.join(_entry, "ember", "distributed")
        if _folder not in __path__ and _os.path.isdir(_folder):
            __path__.append(_folder)
del _entry

from ._grad_bucket import GradBucket
from ._store import FileStore, HashStore, PrefixStore, QueueEmptyError, Store, TCPStore
from ._work import DistBackendError, DistError, DistNetworkError, DistStoreError, Work
from .device_mesh import DeviceMesh, init_device_mesh
from .distributed_c10d import *  # noqa: F403
from .distributed_c10d import __all__ as _c10d_all

__all__ = ["DeviceMesh", "GradBucket", "init_device_mesh", "Store", "HashStore", "FileStore",
           "TCPStore", "PrefixStore", "QueueEmptyError", "DistBackendError", "DistError",
           "DistNetworkError", "DistStoreError", "Work", *_c10d_all]


def __getattr__(name: str):
    if name in ("optim", "fsdp", "_composable"):  # ember-nn's (they need ember.nn/optim); a
        import importlib  # missing ember-nn is named

        return importlib.import_module(f"{__name__}.{name}")
    if name in ("tensor", "device_mesh", "algorithms", "_functional_collectives", "checkpoint",
                "constants", "_tensor", "rpc", "nn"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
