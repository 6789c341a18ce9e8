"""``torch.distributed._tensor.experimental``: the old path of
``torch.distributed.tensor.experimental`` (opacus imports ``implicit_replication`` here)."""

from ..tensor.experimental import implicit_replication, local_map

__all__ = ["implicit_replication", "local_map"]
