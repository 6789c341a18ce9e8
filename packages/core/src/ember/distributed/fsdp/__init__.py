"""``ember.distributed.fsdp``: the names of PyTorch's fully sharded data parallelism.

The policies (``MixedPrecisionPolicy``, ``OffloadPolicy``, ``CPUOffloadPolicy``) are PyTorch's
dataclasses; libraries import them at import time (HuggingFace transformers does whenever
``torch.distributed`` is available). Sharding a model itself, ``fully_shard`` (FSDP2) and
``FullyShardedDataParallel`` (FSDP1), is not in Ember yet: both raise, naming what to use
instead (``DistributedDataParallel`` with ``ZeroRedundancyOptimizer``, which shards the
optimizer state; or DTensor parameters with ``distribute_tensor``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["MixedPrecisionPolicy", "OffloadPolicy", "CPUOffloadPolicy", "FSDPModule",
           "fully_shard", "FullyShardedDataParallel", "ShardingStrategy", "StateDictType",
           "BackwardPrefetch", "UnshardHandle", "register_fsdp_forward_method"]

_MISSING = ("{} is not available in Ember yet (fully sharded data parallelism is not "
            "implemented): use ember.nn.parallel.DistributedDataParallel with "
            "ember.distributed.optim.ZeroRedundancyOptimizer (sharded optimizer state), or "
            "shard parameters yourself as DTensors (ember.distributed.tensor)")


@dataclass(frozen=True)
class MixedPrecisionPolicy:
    """FSDP2's mixed precision: the dtype parameters are gathered in, gradients reduced in,
    and outputs cast to."""

    param_dtype: object = None
    reduce_dtype: object = None
    output_dtype: object = None
    cast_forward_inputs: bool = True


@dataclass
class OffloadPolicy:
    """No offloading (FSDP2's default)."""


@dataclass
class CPUOffloadPolicy(OffloadPolicy):
    """Sharded parameters, gradients and optimizer state kept on the CPU."""

    pin_memory: bool = True


class FSDPModule:
    """The class ``fully_shard`` mixes into a module (no module is one in Ember)."""


class UnshardHandle:
    """What ``FSDPModule.unshard(async_op=True)`` returns in PyTorch."""

    def wait(self) -> None:
        return None


def fully_shard(module, *, mesh=None, reshard_after_forward=None, shard_placement_fn=None,
                mp_policy: MixedPrecisionPolicy = MixedPrecisionPolicy(),
                offload_policy: OffloadPolicy = OffloadPolicy(), ignored_params=None):
    """FSDP2 (not in Ember yet): raises, naming the alternatives."""
    raise NotImplementedError(_MISSING.format("fully_shard (FSDP2)"))


def register_fsdp_forward_method(module, method_name: str) -> None:
    raise NotImplementedError(_MISSING.format("register_fsdp_forward_method"))


class FullyShardedDataParallel:
    """FSDP1 (not in Ember yet): constructing one raises, naming the alternatives."""

    def __init__(self, module, *args, **kwargs):
        raise NotImplementedError(_MISSING.format("FullyShardedDataParallel"))


class ShardingStrategy(enum.Enum):
    FULL_SHARD = enum.auto()
    SHARD_GRAD_OP = enum.auto()
    NO_SHARD = enum.auto()
    HYBRID_SHARD = enum.auto()
    _HYBRID_SHARD_ZERO2 = enum.auto()


class StateDictType(enum.Enum):
    FULL_STATE_DICT = enum.auto()
    LOCAL_STATE_DICT = enum.auto()
    SHARDED_STATE_DICT = enum.auto()


class BackwardPrefetch(enum.Enum):
    BACKWARD_PRE = enum.auto()
    BACKWARD_POST = enum.auto()
