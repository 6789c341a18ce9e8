"""``fully_shard`` at its earlier import path (``torch.distributed._composable.fsdp``)."""

from ...fsdp import (
                     CPUOffloadPolicy,
                     FSDPModule,
                     MixedPrecisionPolicy,
                     OffloadPolicy,
                     fully_shard,
                     register_fsdp_forward_method,
)

__all__ = ["CPUOffloadPolicy", "FSDPModule", "MixedPrecisionPolicy", "OffloadPolicy",
           "fully_shard", "register_fsdp_forward_method"]
