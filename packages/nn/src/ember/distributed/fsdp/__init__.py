"""``ember.distributed.fsdp``: fully sharded data parallelism (PyTorch's FSDP2).

``fully_shard`` (``_fully_shard``) keeps each parameter as a DTensor shard over the
data-parallel ranks and gathers it for the forward; ``MixedPrecisionPolicy``,
``OffloadPolicy`` and ``CPUOffloadPolicy`` are PyTorch's dataclasses. The older
``FullyShardedDataParallel`` wrapper (FSDP1, which PyTorch deprecates for ``fully_shard``)
is not in Ember: constructing one raises and names ``fully_shard``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["MixedPrecisionPolicy", "OffloadPolicy", "CPUOffloadPolicy", "FSDPModule",
           "fully_shard", "FullyShardedDataParallel", "ShardingStrategy", "StateDictType",
           "BackwardPrefetch", "UnshardHandle", "register_fsdp_forward_method"]

_FSDP1 = ("FullyShardedDataParallel (FSDP1) is not available in Ember: use "
          "ember.distributed.fsdp.fully_shard (FSDP2, which PyTorch recommends in its place), "
          "or DistributedDataParallel with ZeroRedundancyOptimizer")


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


class FullyShardedDataParallel:
    """FSDP1 (not in Ember): constructing one raises, naming ``fully_shard``."""

    def __init__(self, module, *args, **kwargs):
        raise NotImplementedError(_FSDP1)


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


# last: _fully_shard imports the policies above
from ._fully_shard import (
    FSDPModule,
    UnshardHandle,
    fully_shard,
    register_fsdp_forward_method,
)

__version__ = "0.1.0"  # ember-nn's
