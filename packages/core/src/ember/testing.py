"""``ember.testing``: ``assert_close`` and the NumPy-backed test device.

No GPU is lent to this project, so the tests register a second device type backed by NumPy
(``register_test_device()``). It behaves as a separate device: moves copy, mixing it with the
CPU in one op raises PyTorch's error, and every device path (``.to``, ``map_location``,
optimizer state, DataLoader) runs through it.
"""

from __future__ import annotations

import numpy as np

from .backends import Backend, register_backend, unregister_backend

__all__ = ["NumpyTestBackend", "register_test_device", "unregister_test_device",
           "assert_close"]


class NumpyTestBackend(Backend):
    """A device whose arrays are NumPy arrays in host memory, kept apart from the CPU's."""

    def __init__(self, type: str = "testdev", count: int = 2):  # noqa: A002
        self.type = type
        self.count = count
        self.xp = np
        self.kernels = {}

    def device_count(self) -> int:
        return self.count

    def default_index(self, index):
        return 0 if index is None else index

    def to_device(self, array, index):
        if index is not None and index >= self.count:
            raise RuntimeError(f"{self.type}: invalid device ordinal {index}")
        return np.array(array, copy=True)

    def to_host(self, array):
        return array


def register_test_device(type: str = "testdev", count: int = 2) -> NumpyTestBackend:  # noqa: A002
    """Register (or re-register) the NumPy-backed test device type ``type``."""
    return register_backend(NumpyTestBackend(type, count))


def unregister_test_device(type: str = "testdev") -> None:  # noqa: A002
    unregister_backend(type)


def assert_close(actual, expected, *, rtol=None, atol=None, equal_nan=False,
                 check_dtype=True, check_device=True, msg=None) -> None:
    """Like ``torch.testing.assert_close``: dtype-aware default tolerances."""
    from ._tensor import Tensor

    def host(x):
        return x._host() if isinstance(x, Tensor) else np.asarray(x)

    if isinstance(actual, Tensor) and isinstance(expected, Tensor):
        if check_dtype and actual.dtype is not expected.dtype:
            raise AssertionError(f"The values for attribute 'dtype' do not match: "
                                 f"{actual.dtype} != {expected.dtype}.")
        if check_device and actual.device != expected.device:
            raise AssertionError(f"The values for attribute 'device' do not match: "
                                 f"{actual.device} != {expected.device}.")
    a, e = host(actual), host(expected)
    if a.shape != e.shape:
        raise AssertionError(f"The values for attribute 'shape' do not match: {a.shape} != "
                             f"{e.shape}.")
    tol = {np.dtype(np.float16): (1e-3, 1e-5), np.dtype(np.float32): (1.3e-6, 1e-5),
           np.dtype(np.float64): (1e-7, 1e-7)}
    dr, da = tol.get(a.dtype, (0.0, 0.0))
    rtol = dr if rtol is None else rtol
    atol = da if atol is None else atol
    if a.dtype.kind in "biu" and e.dtype.kind in "biu":
        ok = np.array_equal(a, e)
    else:
        ok = np.allclose(a.astype(np.float64), e.astype(np.float64), rtol=rtol, atol=atol,
                         equal_nan=equal_nan)
    if not ok:
        diff = np.abs(a.astype(np.float64) - e.astype(np.float64))
        raise AssertionError(msg or f"Tensor-likes are not close!\n\nMismatched elements: "
                             f"{int((~np.isclose(a, e, rtol=rtol, atol=atol)).sum())} / {a.size}"
                             f"\nGreatest absolute difference: {np.nanmax(diff)}")
