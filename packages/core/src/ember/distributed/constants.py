"""``torch.distributed.constants``: the default timeouts of process groups. Ember's groups
wait 30 minutes on every backend, its NCCL groups included (PyTorch's CUDA builds give NCCL
10 minutes; its CPU builds have None here)."""

from datetime import timedelta

from .distributed_c10d import default_pg_timeout

__all__ = ["default_pg_timeout", "default_pg_nccl_timeout"]

default_pg_nccl_timeout: timedelta | None = timedelta(minutes=30)
