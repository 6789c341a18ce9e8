"""``torch.fx.experimental``: ``optimization`` (``fuse``, the conv/linear + batch-norm
folding PyTorch's CPU tuning guide applies to an inference model)."""
