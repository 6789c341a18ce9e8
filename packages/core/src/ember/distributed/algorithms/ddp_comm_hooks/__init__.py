"""DDP communication hooks (PyTorch's ``torch.distributed.algorithms.ddp_comm_hooks``).

``ddp_model.register_comm_hook(state, hook)`` makes DDP call ``hook(state, bucket)`` for each
gradient bucket instead of its own averaging all-reduce; the hook returns a ``Future`` of the
reduced flat tensor. ``default_hooks``: ``allreduce_hook`` (what DDP does without a hook),
``fp16_compress_hook``/``bf16_compress_hook`` (reduce in half precision) and their wrappers;
``powerSGD_hook``: PowerSGD's low-rank gradient compression with error feedback.
"""

from . import default_hooks, powerSGD_hook

__all__ = ["default_hooks", "powerSGD_hook", "DDPCommHookType"]


class DDPCommHookType:
    """The built-in hooks by name (``register_ddp_comm_hook`` in PyTorch takes these)."""

    ALLREDUCE = "ALLREDUCE"
    FP16_COMPRESS = "FP16_COMPRESS"
    BF16_COMPRESS = "BF16_COMPRESS"
    POWER_SGD = "POWER_SGD"
    BATCHED_POWER_SGD = "BATCHED_POWER_SGD"
