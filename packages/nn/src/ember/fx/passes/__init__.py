"""``ember.fx.passes``: graph passes (``shape_prop``, ``split_module``)."""

from . import shape_prop, split_module

__all__ = ["shape_prop", "split_module"]
