"""``torch._higher_order_ops.cond``: :func:`ember.cond`."""

from .._cond import cond

__all__ = ["cond"]
