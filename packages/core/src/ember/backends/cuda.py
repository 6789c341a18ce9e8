"""The CUDA backend: CuPy arrays, thin. Registered only when CuPy imports and sees a GPU."""

from __future__ import annotations

from . import Backend, register_backend

_why_not = ""

try:  # CuPy is the optional extra ``ember-core[cuda]``
    import cupy as _cupy
except Exception as exc:  # ImportError, or a CUDA runtime that fails to load
    _cupy = None
    _why_not = f"CuPy is not importable: {exc}"


def reason() -> str:
    return _why_not or "CuPy found no CUDA device"


class CUDABackend(Backend):
    """CuPy arrays on a CUDA device; ``kernels`` holds fused elementwise kernels."""

    type = "cuda"

    def __init__(self, cupy):
        self.xp = cupy
        self.kernels = {}

    def is_available(self) -> bool:
        return self.device_count() > 0

    def device_count(self) -> int:
        try:
            return self.xp.cuda.runtime.getDeviceCount()
        except Exception:
            return 0

    def default_index(self, index):
        return self.xp.cuda.runtime.getDevice() if index is None else index

    def to_device(self, array, index):
        with self.xp.cuda.Device(self.default_index(index)):
            return self.xp.array(array, copy=True)

    def to_host(self, array):
        return self.xp.asnumpy(array)

    def synchronize(self, index=None):
        with self.xp.cuda.Device(self.default_index(index)):
            self.xp.cuda.runtime.deviceSynchronize()

    def manual_seed(self, seed):
        self.xp.random.seed(seed)


def _register() -> None:
    global _why_not
    if _cupy is None:
        return
    backend = CUDABackend(_cupy)
    if backend.device_count() > 0:
        register_backend(backend)
    else:
        _why_not = "CuPy found no CUDA device"


_register()
