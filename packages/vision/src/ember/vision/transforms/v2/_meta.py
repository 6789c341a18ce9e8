"""Bounding-box and keypoint metadata transforms."""

from __future__ import annotations

from typing import Any

from ember.vision import tv_tensors

from . import functional as F
from ._transform import Transform


class ConvertBoundingBoxFormat(Transform):
    """Convert boxes to ``format``."""

    _transformed_types = (tv_tensors.BoundingBoxes,)

    def __init__(self, format) -> None:
        super().__init__()
        self.format = format

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return F.convert_bounding_box_format(inpt, new_format=self.format)


class ClampBoundingBoxes(Transform):
    """Clamp boxes to their canvas (``clamping_mode="auto"``: the boxes' own mode)."""

    _transformed_types = (tv_tensors.BoundingBoxes,)

    def __init__(self, clamping_mode="auto") -> None:
        super().__init__()
        self.clamping_mode = clamping_mode

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return F.clamp_bounding_boxes(inpt, clamping_mode=self.clamping_mode)


class ClampKeyPoints(Transform):
    """Clamp keypoints into their canvas."""

    _transformed_types = (tv_tensors.KeyPoints,)

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return F.clamp_keypoints(inpt)


class SetClampingMode(Transform):
    """Set the ``clamping_mode`` of the boxes (``"soft"``, ``"hard"`` or None)."""

    _transformed_types = (tv_tensors.BoundingBoxes,)

    def __init__(self, clamping_mode) -> None:
        super().__init__()
        self.clamping_mode = clamping_mode
        if self.clamping_mode not in (None, "soft", "hard"):
            raise ValueError(f"clamping_mode must be soft, hard or None, got {clamping_mode}")

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        out = inpt.clone()
        out.clamping_mode = self.clamping_mode
        return out
