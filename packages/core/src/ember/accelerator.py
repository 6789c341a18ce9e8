"""``ember.accelerator``: the current accelerator, as ``torch.accelerator``.

Ember's one accelerator is CUDA through CuPy. As in PyTorch, ``current_accelerator()`` says
what Ember is built for (``cuda`` when CuPy imports, else None) and ``is_available()``
whether a device is there too; without an accelerator, the calls that need a device raise
PyTorch's error. Everything goes through ``ember.cuda``.
"""

from __future__ import annotations

import warnings

from . import cuda as _cuda
from ._device import device as _device_cls

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index",
           "current_device_idx", "set_device_index", "set_device_idx", "device_index",
           "synchronize", "current_stream", "empty_cache", "memory_allocated",
           "memory_reserved", "get_memory_info"]

_NONE_AVAILABLE = "Cannot access accelerator device when none is available."


def current_accelerator(check_available: bool = False) -> _device_cls | None:
    """The accelerator Ember is built for, ``device(type='cuda')`` when CuPy imports, else
    None; with ``check_available=True``, also None when no device is there."""
    from .backends import cuda as cuda_backend

    if not cuda_backend.is_built():
        return None
    if check_available and not is_available():
        return None
    return _device_cls("cuda")


def is_available() -> bool:
    """Whether an accelerator is there to use: CuPy imports and sees a CUDA device."""
    return current_accelerator() is not None and _cuda.is_available()


def device_count() -> int:
    """The number of accelerator devices (0 without one)."""
    return _cuda.device_count() if current_accelerator() is not None else 0


def _require_accelerator() -> None:
    if current_accelerator() is None:
        raise RuntimeError(_NONE_AVAILABLE)


def current_device_index() -> int:
    """The index of the current accelerator device."""
    _require_accelerator()
    return _cuda.current_device()


def _device_index(device, optional: bool) -> int:
    """An int, ``'cuda:1'`` or ``ember.device`` as a device index of the accelerator."""
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        device = _device_cls(device)
    index = None
    if isinstance(device, _device_cls):
        accelerator = current_accelerator()
        if accelerator is None:
            raise RuntimeError("Accelerator expected")
        if accelerator.type != device.type:
            raise ValueError(f"{device.type} doesn't match the current accelerator "
                             f"{accelerator}.")
        index = device.index
    if index is None:
        if not optional:
            raise ValueError("Expected an ember.device with a specified index or an integer, "
                             f"but got:{device}")
        return current_device_index()
    return index


def _accelerator_index(device) -> int:
    """``device`` (default: the current one) as an index, requiring an accelerator."""
    index = _device_index(device, optional=True)
    _require_accelerator()
    return index


def set_device_index(device, /) -> None:
    """Make ``device`` (an index, or an accelerator device with one) the current device;
    a negative index is a no-op."""
    index = _device_index(device, optional=False)
    if index < 0:
        return
    _require_accelerator()
    _cuda.set_device(index)


def current_device_idx() -> int:
    """Deprecated alias of ``current_device_index``."""
    warnings.warn("Use `current_device_index` instead.", FutureWarning, stacklevel=2)
    return current_device_index()


def set_device_idx(device, /) -> None:
    """Deprecated alias of ``set_device_index``."""
    warnings.warn("Use `set_device_index` instead.", FutureWarning, stacklevel=2)
    set_device_index(device)


class device_index:
    """Context manager making device index ``device`` current inside the block (None: no-op)."""

    def __init__(self, device: int | None, /) -> None:
        self.idx = device
        self.prev_idx = -1

    def __enter__(self) -> None:
        if self.idx is not None:
            self.prev_idx = current_device_index()
            set_device_index(self.idx)

    def __exit__(self, *exc_info: object) -> None:
        if self.idx is not None:
            set_device_index(self.prev_idx)


def synchronize(device=None, /) -> None:
    """Wait until every kernel queued on ``device`` (default: the current one) has finished."""
    _cuda.synchronize(_accelerator_index(device))


def current_stream(device=None, /):
    """The current stream of ``device`` (default: the current device)."""
    return _cuda.current_stream(_accelerator_index(device))


def empty_cache() -> None:
    """Give the cached, unused accelerator memory back to the driver."""
    _require_accelerator()
    _cuda.empty_cache()


def memory_allocated(device=None, /) -> int:
    """Bytes of accelerator memory held by tensors on ``device``."""
    return _cuda.memory_allocated(_accelerator_index(device))


def memory_reserved(device=None, /) -> int:
    """Bytes of accelerator memory the caching allocator holds on ``device``."""
    return _cuda.memory_reserved(_accelerator_index(device))


def get_memory_info(device=None, /) -> tuple[int, int]:
    """``(free, total)`` bytes of ``device``'s memory, as the driver reports them."""
    return _cuda.mem_get_info(_accelerator_index(device))
