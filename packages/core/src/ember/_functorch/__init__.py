"""Internals of ``ember.func`` (PyTorch keeps the same in ``torch._functorch``): batched
tensors and vmap levels (``_batched``), ``vmap``, the autograd transforms
(``eager_transforms``), ``functional_call``. The public API is ``ember.func``."""
