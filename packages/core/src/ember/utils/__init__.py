"""``ember.utils``: PyTorch's ``torch.utils`` import paths."""
