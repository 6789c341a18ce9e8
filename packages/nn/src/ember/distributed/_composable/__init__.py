"""PyTorch's ``torch.distributed._composable`` path, where FSDP2 was first published."""
