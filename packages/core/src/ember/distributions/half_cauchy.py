"""``HalfCauchy``: ``|X|`` for a centred Cauchy ``X``."""

from __future__ import annotations

import math

import ember

from ._half import _Half
from .cauchy import Cauchy

__all__ = ["HalfCauchy"]


class HalfCauchy(_Half):
    """``|X|`` with ``X ~ Cauchy(0, scale)``."""

    base = Cauchy

    @property
    def mean(self):
        return ember.full(self._extended_shape(), math.inf, dtype=self.scale.dtype,
                          device=self.scale.device)

    @property
    def variance(self):
        return self.base_dist.variance

    def _value(self, value):
        return ember.as_tensor(value, dtype=self.scale.dtype, device=self.scale.device)
