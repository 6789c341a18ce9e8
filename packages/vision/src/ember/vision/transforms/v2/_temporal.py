"""Temporal transforms."""

from __future__ import annotations

from typing import Any

from ember import Tensor

from . import functional as F
from ._transform import Transform


class UniformTemporalSubsample(Transform):
    """Keep ``num_samples`` frames evenly spaced over a video's time dimension."""

    _transformed_types = (Tensor,)

    def __init__(self, num_samples: int):
        super().__init__()
        self.num_samples = num_samples

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.uniform_temporal_subsample, inpt, self.num_samples)
