"""``ember.distributed``: process groups, collectives and data-parallel training on MPI.

``torch.distributed``'s API over mpi4py and MPICH (``pip install 'ember-core[distributed]'``),
and over CuPy's NCCL for GPU tensors. Start the ranks with the launcher::

    python -m ember.distributed.run --nproc-per-node 2 train.py

or with ``mpiexec -n 2 python train.py``; then ``init_process_group()`` in each.
See :mod:`ember.distributed.distributed_c10d` for what a wait does when a rank fails.
"""

from __future__ import annotations

from ._work import DistBackendError, DistError, DistNetworkError, DistStoreError, Work
from .distributed_c10d import *  # noqa: F403
from .distributed_c10d import __all__ as _c10d_all

__all__ = ["DistBackendError", "DistError", "DistNetworkError", "DistStoreError", "Work",
           *_c10d_all]
