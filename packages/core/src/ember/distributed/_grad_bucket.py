"""``GradBucket``: what a DDP communication hook receives (``torch.distributed.GradBucket``)."""

from __future__ import annotations

__all__ = ["GradBucket"]


class GradBucket:
    """One bucket of a DDP reduction: ``buffer()`` is the flat gradient tensor of the
    bucket's parameters (``gradients()`` are views of it in their shapes); the hook returns a
    ``Future`` of the reduced flat tensor, which DDP copies back into the bucket."""

    def __init__(self, index: int, buffer, parameters: list, is_last: bool) -> None:
        self._index = index
        self._buffer = buffer
        self._parameters = list(parameters)
        self._is_last = is_last

    def index(self) -> int:
        """The bucket's position (0 is the first reduced; the last is reduced last)."""
        return self._index

    def buffer(self):
        return self._buffer

    def set_buffer(self, buffer) -> None:
        """Replace the flat tensor (a compression wrapper hands a cast copy on)."""
        self._buffer = buffer

    def gradients(self) -> list:
        """The parameters' gradients as views of ``buffer()``, in their shapes."""
        out, offset = [], 0
        for p in self._parameters:
            n = p.numel()
            out.append(self._buffer.narrow(0, offset, n).view(p.shape))
            offset += n
        return out

    def parameters(self) -> list:
        return list(self._parameters)

    def is_last(self) -> bool:
        return self._is_last

    def __repr__(self) -> str:
        return (f"GradBucket(index={self._index}, parameters={len(self._parameters)}, "
                f"numel={self._buffer.numel()})")
