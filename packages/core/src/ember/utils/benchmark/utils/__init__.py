"""``ember.utils.benchmark.utils``: the modules behind ``ember.utils.benchmark``, at
``torch.utils.benchmark.utils``'s paths (``common``, ``timer``, ``compare``)."""
