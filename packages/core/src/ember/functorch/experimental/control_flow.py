"""``functorch.experimental.control_flow``: ``cond`` and ``map``, the higher-order ops'
former home (``ember._higher_order_ops``)."""

from ..._higher_order_ops import cond, map

__all__ = ["cond", "map"]
