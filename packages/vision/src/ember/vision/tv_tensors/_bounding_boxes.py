"""BoundingBoxes and KeyPoints tv_tensors (they carry a canvas size, boxes a format)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any

import ember
from ember import Tensor

from ._tv_tensor import TVTensor

__all__ = ["BoundingBoxFormat", "BoundingBoxes", "KeyPoints", "is_rotated_bounding_format"]


class BoundingBoxFormat(Enum):
    """Coordinate formats of bounding boxes (the last three are rotated boxes)."""

    XYXY = "XYXY"
    XYWH = "XYWH"
    CXCYWH = "CXCYWH"
    XYWHR = "XYWHR"
    CXCYWHR = "CXCYWHR"
    XYXYXYXY = "XYXYXYXY"


def is_rotated_bounding_format(format: BoundingBoxFormat | str) -> bool:
    """Whether ``format`` is one of the rotated formats."""
    if isinstance(format, BoundingBoxFormat):
        return format in (
            BoundingBoxFormat.XYWHR,
            BoundingBoxFormat.CXCYWHR,
            BoundingBoxFormat.XYXYXYXY,
        )
    elif isinstance(format, str):
        return format in ("XYWHR", "CXCYWHR", "XYXYXYXY")
    else:
        raise ValueError(f"format should be str or BoundingBoxFormat, got {type(format)}")


def _flat(items) -> list:
    out: list = []
    for x in items:
        if isinstance(x, (list, tuple)):
            out.extend(_flat(x))
        elif isinstance(x, dict):
            out.extend(_flat(list(x.values())))
        else:
            out.append(x)
    return out


class BoundingBoxes(TVTensor):
    """Boxes ``(N, K)`` in ``format`` on a canvas of ``canvas_size`` ``(H, W)``;
    ``clamping_mode`` is ``"soft"`` (default), ``"hard"`` or None (never clamped)."""

    format: BoundingBoxFormat
    canvas_size: tuple[int, int]
    clamping_mode: str | None

    @classmethod
    def _wrap(cls, tensor: Tensor, *, format, canvas_size, clamping_mode="soft",
              check_dims: bool = True) -> BoundingBoxes:
        if check_dims:
            if tensor.ndim == 1:
                tensor = tensor.unsqueeze(0)
            elif tensor.ndim != 2:
                raise ValueError(f"Expected a 1D or 2D tensor, got {tensor.ndim}D")
        if clamping_mode is not None and clamping_mode not in ("hard", "soft"):
            raise ValueError(f"clamping_mode must be None, hard or soft, got {clamping_mode}.")
        if isinstance(format, str):
            format = BoundingBoxFormat[format.upper()]
        bounding_boxes = tensor.as_subclass(cls)
        bounding_boxes.format = format
        bounding_boxes.canvas_size = canvas_size
        bounding_boxes.clamping_mode = clamping_mode
        return bounding_boxes

    @classmethod
    def wrap(cls, tensor: Tensor, like: BoundingBoxes, **kwargs: Any) -> BoundingBoxes:
        return cls._wrap(
            tensor,
            format=kwargs.get("format", like.format),
            canvas_size=kwargs.get("canvas_size", like.canvas_size),
            clamping_mode=kwargs.get("clamping_mode", like.clamping_mode),
        )

    def __new__(cls, data: Any, *, format, canvas_size, clamping_mode="soft", dtype=None,
                device=None, requires_grad: bool | None = None) -> BoundingBoxes:
        tensor = cls._to_tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)
        if not ember.is_floating_point(tensor) and is_rotated_bounding_format(format):
            raise ValueError(
                f"Rotated bounding boxes should be floating point tensors, got {tensor.dtype}."
            )
        return cls._wrap(tensor, format=format, canvas_size=canvas_size,
                         clamping_mode=clamping_mode)

    @classmethod
    def _wrap_output(cls, output, args: Sequence[Any] = (),
                     kwargs: Mapping[str, Any] | None = None):
        flat_params = _flat(list(args) + (list(kwargs.values()) if kwargs else []))
        first = next(x for x in flat_params if isinstance(x, BoundingBoxes))
        meta = dict(format=first.format, canvas_size=first.canvas_size,
                    clamping_mode=first.clamping_mode)
        if isinstance(output, Tensor) and not isinstance(output, BoundingBoxes):
            output = BoundingBoxes._wrap(output, **meta, check_dims=False)
        elif isinstance(output, (tuple, list)):
            output = type(output)(BoundingBoxes._wrap(part, **meta, check_dims=False)
                                  for part in output)
        return output

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        return self._make_repr(format=self.format, canvas_size=self.canvas_size,
                               clamping_mode=self.clamping_mode)


class KeyPoints(TVTensor):
    """Points ``(..., 2)`` as ``(x, y)`` on a canvas of ``canvas_size`` ``(H, W)``."""

    canvas_size: tuple[int, int]

    @classmethod
    def _wrap(cls, tensor: Tensor, *, canvas_size, check_dims: bool = True) -> KeyPoints:
        if check_dims:
            if tensor.ndim == 1:
                tensor = tensor.unsqueeze(0)
            elif tensor.shape[-1] != 2:
                raise ValueError(f"Expected a tensor of shape (..., 2), not {tensor.shape}")
        points = tensor.as_subclass(cls)
        points.canvas_size = canvas_size
        return points

    @classmethod
    def wrap(cls, tensor: Tensor, like: KeyPoints, **kwargs: Any) -> KeyPoints:
        return cls._wrap(tensor, canvas_size=kwargs.get("canvas_size", like.canvas_size))

    def __new__(cls, data: Any, *, canvas_size, dtype=None, device=None,
                requires_grad: bool | None = None) -> KeyPoints:
        tensor = cls._to_tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)
        return cls._wrap(tensor, canvas_size=canvas_size)

    @classmethod
    def _wrap_output(cls, output, args: Sequence[Any] = (),
                     kwargs: Mapping[str, Any] | None = None):
        flat_params = _flat(list(args) + (list(kwargs.values()) if kwargs else []))
        canvas_size = next(x for x in flat_params if isinstance(x, KeyPoints)).canvas_size
        if isinstance(output, Tensor) and not isinstance(output, KeyPoints):
            output = KeyPoints._wrap(output, canvas_size=canvas_size, check_dims=False)
        elif isinstance(output, (tuple, list)):
            output = type(output)(KeyPoints._wrap(part, canvas_size=canvas_size, check_dims=False)
                                  for part in output)
        return output

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        return self._make_repr(canvas_size=self.canvas_size)
