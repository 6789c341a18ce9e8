"""``functorch.experimental``: ``control_flow`` (``cond``, ``map``) and ``functionalize``."""

from ...func import functionalize
from . import control_flow

__all__ = ["control_flow", "functionalize"]
