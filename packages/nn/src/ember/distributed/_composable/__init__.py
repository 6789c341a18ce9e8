"""PyTorch's ``torch.distributed._composable`` path, where FSDP2 was first published."""

__version__ = "0.1.0"  # ember-nn's
