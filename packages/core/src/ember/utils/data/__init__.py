"""``ember.utils.data``: the same module as ``ember.data`` (PyTorch's import path)."""

from ember.data import *  # noqa: F401,F403
