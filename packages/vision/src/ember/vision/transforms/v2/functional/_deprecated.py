"""Deprecated v2 functionals kept for compatibility (they warn, as torchvision's do)."""

from __future__ import annotations

import warnings

from ember.vision.transforms import functional as _F1


def to_tensor(inpt):
    """PIL image or ndarray to a float tensor in [0, 1] (deprecated)."""
    warnings.warn(
        "The function `to_tensor(...)` is deprecated and will be removed in a future release. "
        "Instead, please use `to_image(...)` followed by `to_dtype(..., dtype=torch.float32, "
        "scale=True)`.",
        stacklevel=2,
    )
    return _F1.to_tensor(inpt)


def get_image_size(inpt) -> list[int]:
    """``[width, height]`` (deprecated: use ``get_size``, which returns ``[h, w]``)."""
    warnings.warn(
        "The function `get_image_size(...)` is deprecated and will be removed in a future "
        "release. Instead, please use `get_size(...)` which returns `[h, w]` instead of `[w, h]`.",
        stacklevel=2,
    )
    return _F1.get_image_size(inpt)
