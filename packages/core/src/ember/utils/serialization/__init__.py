"""``torch.utils.serialization``: the options of ``ember.save`` and ``ember.load``
(``config``)."""

from . import config

__all__ = ["config"]
