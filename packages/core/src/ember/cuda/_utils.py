"""What every part of ``ember.cuda`` needs: the CUDA backend and device-index arguments."""

from __future__ import annotations

from .._device import device as _device_cls
from ..backends import get_backend


def backend():
    """The CUDA backend; an AssertionError saying how to install it when there is none."""
    return get_backend("cuda")


def backend_or_none():
    """The CUDA backend when CuPy imports and sees a device, else None."""
    try:
        be = get_backend("cuda")
    except AssertionError:
        return None
    return be if be.is_available() else None


def current_index() -> int:
    """The index of the current CUDA device (raises without CUDA)."""
    return backend().default_index(None)


def device_index(dev=None) -> int:
    """A device argument (None, int, ``'cuda:1'``, ``ember.device``) as a CUDA index."""
    if dev is None:
        return current_index()
    if isinstance(dev, int) and not isinstance(dev, bool):
        return dev
    dev = _device_cls(dev)
    if dev.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {dev}")
    return current_index() if dev.index is None else dev.index
