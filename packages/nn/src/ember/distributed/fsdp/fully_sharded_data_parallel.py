"""FSDP1's module path (``torch.distributed.fsdp.fully_sharded_data_parallel``): libraries
import ``FullyShardedDataParallel`` from here for ``isinstance`` checks (HuggingFace
accelerate does when unwrapping a model). Constructing one raises: use ``fully_shard``."""

from . import BackwardPrefetch, FullyShardedDataParallel, ShardingStrategy, StateDictType

__all__ = ["FullyShardedDataParallel", "ShardingStrategy", "StateDictType",
           "BackwardPrefetch"]
