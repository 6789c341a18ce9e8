"""``torch.distributed.nn``: collectives that autograd differentiates (``functional``).
``RemoteModule`` (RPC) is not provided: Ember has no RPC framework
(``ember.distributed.rpc.is_available()`` is False)."""

from .functional import (
    all_gather,
    all_reduce,
    all_to_all,
    all_to_all_single,
    broadcast,
    gather,
    reduce,
    reduce_scatter,
    scatter,
)

__all__ = ["all_gather", "all_reduce", "all_to_all", "all_to_all_single", "broadcast",
           "gather", "reduce", "reduce_scatter", "scatter", "functional"]
