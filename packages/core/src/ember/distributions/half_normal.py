"""``HalfNormal``: ``|X|`` for a centred normal ``X``."""

from __future__ import annotations

import math

from ._half import _Half
from .normal import Normal

__all__ = ["HalfNormal"]


class HalfNormal(_Half):
    """``|X|`` with ``X ~ Normal(0, scale)``."""

    base = Normal

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)
