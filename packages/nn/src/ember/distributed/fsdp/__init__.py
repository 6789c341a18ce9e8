"""``ember.distributed.fsdp``: fully sharded data parallelism, PyTorch's FSDP2 and FSDP1.

``fully_shard`` (``_fully_shard``, FSDP2) keeps each parameter as a DTensor shard over the
data-parallel ranks and gathers it for the forward; ``MixedPrecisionPolicy``,
``OffloadPolicy`` and ``CPUOffloadPolicy`` are PyTorch's dataclasses.

``FullyShardedDataParallel`` (``fully_sharded_data_parallel``, FSDP1, which PyTorch
deprecates for ``fully_shard`` but many programs still use) is the module wrapper, built on
the same machinery: its sharding strategies, auto-wrap policies (``wrap``), state-dict
types, ``summon_full_params``, ``no_sync``, ``clip_grad_norm_`` and optimizer state-dict
helpers are PyTorch's; its parameters are FSDP2's DTensor shards of the original
parameters, not flat parameters (see that module's docstring for the differences). The
configuration types are in ``api``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .api import (
    BackwardPrefetch,
    CPUOffload,
    FullOptimStateDictConfig,
    FullStateDictConfig,
    LocalOptimStateDictConfig,
    LocalStateDictConfig,
    MixedPrecision,
    OptimStateDictConfig,
    ShardedOptimStateDictConfig,
    ShardedStateDictConfig,
    ShardingStrategy,
    StateDictConfig,
    StateDictSettings,
    StateDictType,
)

__all__ = [
    "BackwardPrefetch", "CPUOffload", "FullOptimStateDictConfig", "FullStateDictConfig",
    "FullyShardedDataParallel", "LocalOptimStateDictConfig", "LocalStateDictConfig",
    "MixedPrecision", "OptimStateDictConfig", "OptimStateKeyType",
    "ShardedOptimStateDictConfig", "ShardedStateDictConfig", "ShardingStrategy",
    "StateDictConfig", "StateDictSettings", "StateDictType",
    "CPUOffloadPolicy", "FSDPModule", "fully_shard", "MixedPrecisionPolicy",
    "OffloadPolicy", "register_fsdp_forward_method", "UnshardHandle",
]


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


# last: _fully_shard imports the policies above
from ._fully_shard import (
    FSDPModule,
    UnshardHandle,
    fully_shard,
    register_fsdp_forward_method,
)
from .fully_sharded_data_parallel import (
    FullyShardedDataParallel,
    OptimStateKeyType,
)

__version__ = "0.1.0"  # ember-nn's
