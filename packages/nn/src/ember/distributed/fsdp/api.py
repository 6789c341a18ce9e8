"""FSDP1's configuration types (``torch.distributed.fsdp.api``): the sharding strategy,
backward prefetch, mixed precision, CPU offload and state-dict settings that
``FullyShardedDataParallel`` takes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum, auto

__all__ = [
    "ShardingStrategy",
    "BackwardPrefetch",
    "MixedPrecision",
    "CPUOffload",
    "StateDictType",
    "StateDictConfig",
    "FullStateDictConfig",
    "LocalStateDictConfig",
    "ShardedStateDictConfig",
    "OptimStateDictConfig",
    "FullOptimStateDictConfig",
    "LocalOptimStateDictConfig",
    "ShardedOptimStateDictConfig",
    "StateDictSettings",
]


class ShardingStrategy(Enum):
    """How ``FullyShardedDataParallel`` shards: ``FULL_SHARD`` (parameters, gradients and
    optimizer state sharded; parameters freed after forward and gathered again in
    backward), ``SHARD_GRAD_OP`` (kept gathered from forward to backward), ``NO_SHARD``
    (replicated, gradients all-reduced, as DDP), ``HYBRID_SHARD`` (``FULL_SHARD`` within a
    node, replicated across nodes) and ``_HYBRID_SHARD_ZERO2`` (``SHARD_GRAD_OP`` within a
    node)."""

    FULL_SHARD = auto()
    SHARD_GRAD_OP = auto()
    NO_SHARD = auto()
    HYBRID_SHARD = auto()
    _HYBRID_SHARD_ZERO2 = auto()


class BackwardPrefetch(Enum):
    """When the backward gathers the next parameters (a hint: Ember's collectives complete
    when called)."""

    BACKWARD_PRE = auto()
    BACKWARD_POST = auto()


def _batch_norm_classes() -> tuple:
    from ember.nn.modules.batchnorm import _BatchNorm

    return (_BatchNorm,)


@dataclass
class MixedPrecision:
    """FSDP1's mixed precision: parameters gathered in ``param_dtype``, gradients reduced
    in ``reduce_dtype``, buffers kept in ``buffer_dtype``; ``cast_root_forward_inputs``
    casts the root's floating inputs to ``param_dtype``, ``cast_forward_inputs`` every FSDP
    instance's. Modules of ``_module_classes_to_ignore`` (batch norm) are wrapped apart, in
    full precision, when an ``auto_wrap_policy`` is given."""

    param_dtype: object = None
    reduce_dtype: object = None
    buffer_dtype: object = None
    keep_low_precision_grads: bool = False
    cast_forward_inputs: bool = False
    cast_root_forward_inputs: bool = True
    _module_classes_to_ignore: Sequence[type] = _batch_norm_classes()


@dataclass
class CPUOffload:
    """Whether parameters (and gradients) live on the CPU between uses."""

    offload_params: bool = False


class StateDictType(Enum):
    """What ``state_dict()`` returns: whole tensors (``FULL_STATE_DICT``), DTensors
    (``SHARDED_STATE_DICT``) or this rank's shards (``LOCAL_STATE_DICT``)."""

    FULL_STATE_DICT = auto()
    LOCAL_STATE_DICT = auto()
    SHARDED_STATE_DICT = auto()


@dataclass
class StateDictConfig:
    """Base of the model state-dict configurations."""

    offload_to_cpu: bool = False


@dataclass
class FullStateDictConfig(StateDictConfig):
    """``rank0_only``: only rank 0 gets the full state dict, the others an empty one."""

    rank0_only: bool = False


@dataclass
class LocalStateDictConfig(StateDictConfig):
    pass


@dataclass
class ShardedStateDictConfig(StateDictConfig):
    _use_dtensor: bool = False


@dataclass
class OptimStateDictConfig:
    """Base of the optimizer state-dict configurations."""

    offload_to_cpu: bool = True


@dataclass
class FullOptimStateDictConfig(OptimStateDictConfig):
    rank0_only: bool = False


@dataclass
class LocalOptimStateDictConfig(OptimStateDictConfig):
    offload_to_cpu: bool = False


@dataclass
class ShardedOptimStateDictConfig(OptimStateDictConfig):
    _use_dtensor: bool = False


@dataclass
class StateDictSettings:
    state_dict_type: StateDictType
    state_dict_config: StateDictConfig
    optim_state_dict_config: OptimStateDictConfig
