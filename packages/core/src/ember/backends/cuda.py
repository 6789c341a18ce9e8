"""The CUDA backend: CuPy arrays, thin. Registered only when CuPy imports and sees a GPU.

This module imports without CuPy (``reason()`` then says why there is no backend). Everything
CUDA-specific that ``ember.cuda`` offers (devices, memory pool, streams) goes through the
``CUDABackend`` methods below, so CuPy is touched in this one file.

It is also ``torch.backends.cuda`` for PyTorch programs: ``is_built()``, the cuBLAS flags
``matmul.allow_tf32`` & co., and the scaled-dot-product-attention switches
(``enable_flash_sdp``, ``math_sdp_enabled``, ... over ``ember._sdp``, the setting
``torch.nn.attention.sdpa_kernel`` changes too).
"""

from __future__ import annotations

import contextlib
import functools
import warnings

from .. import _sdp, _settings
from . import Backend, register_backend
from ._flags import CuBLASFlags

_why_not = ""

try:  # CuPy is the optional extra ``ember-core[cuda]``
    import cupy as _cupy
except Exception as exc:  # ImportError, or a CUDA runtime that fails to load
    _cupy = None
    _why_not = f"CuPy is not importable: {exc}"


_registered = False


def reason() -> str:
    """Why the CUDA backend is not registered ("" when it is)."""
    return "" if _registered else (_why_not or "CuPy found no CUDA device")


class CUDABackend(Backend):
    """CuPy arrays on a CUDA device; ``kernels`` holds fused elementwise kernels."""

    type = "cuda"

    def __init__(self, cupy):
        import ml_dtypes
        import numpy as np

        # CuPy has neither bfloat16, complex32 nor the float8 dtypes (ember's are ml_dtypes
        # arrays, host only)
        self.unsupported_dtypes = frozenset({np.dtype(ml_dtypes.bfloat16),
                                             np.dtype(ml_dtypes.complex32),
                                             *(np.dtype(getattr(ml_dtypes, name)) for name in (
                                                 "float8_e4m3fn", "float8_e4m3fnuz",
                                                 "float8_e5m2", "float8_e5m2fnuz",
                                                 "float8_e8m0fnu"))})
        from ..cuda import _kernels  # CuPy kernels, compiled on first use

        self.xp = cupy
        self.kernels = dict(_kernels.KERNELS)

    def is_available(self) -> bool:
        return self.device_count() > 0

    def linalg_errors(self):
        import cupyx  # CuPy's own; its linalg setting is per thread, so set it per call

        return cupyx.errstate(linalg="raise")

    def device_count(self) -> int:
        try:
            return self.xp.cuda.runtime.getDeviceCount()
        except Exception:
            return 0

    def default_index(self, index):
        return self.xp.cuda.runtime.getDevice() if index is None else index

    def to_device(self, array, index):
        self.check_dtype(array.dtype)
        with self.xp.cuda.Device(self.default_index(index)):
            return self.xp.array(array, copy=True)

    def to_host(self, array):
        return self.xp.asnumpy(array)

    def synchronize(self, index=None):
        with self.xp.cuda.Device(self.default_index(index)):
            self.xp.cuda.runtime.deviceSynchronize()

    def manual_seed(self, seed):
        self.xp.random.seed(seed)

    # -- what ember.cuda exposes ------------------------------------------------------------
    def set_device(self, index: int) -> None:
        self.xp.cuda.Device(index).use()

    def device_name(self, index: int) -> str:
        name = self.xp.cuda.runtime.getDeviceProperties(index)["name"]
        return name.decode() if isinstance(name, bytes) else str(name)

    def capability(self, index: int) -> tuple:
        props = self.xp.cuda.runtime.getDeviceProperties(index)
        return (int(props["major"]), int(props["minor"]))

    def memory_allocated(self, index: int) -> int:
        """Bytes held by tensors (CuPy's memory pool in use)."""
        with self.xp.cuda.Device(index):
            return int(self.xp.get_default_memory_pool().used_bytes())

    def memory_reserved(self, index: int) -> int:
        """Bytes the memory pool holds from the driver, in use or cached."""
        with self.xp.cuda.Device(index):
            return int(self.xp.get_default_memory_pool().total_bytes())

    def empty_cache(self) -> None:
        self.xp.get_default_memory_pool().free_all_blocks()
        self.xp.get_default_pinned_memory_pool().free_all_blocks()

    def mem_get_info(self, index: int) -> tuple:
        with self.xp.cuda.Device(index):
            free, total = self.xp.cuda.runtime.memGetInfo()
        return int(free), int(total)

    def new_stream(self, index: int, priority: int = 0):
        with self.xp.cuda.Device(index):
            return self.xp.cuda.Stream(non_blocking=True, priority=priority)

    def current_stream(self, index: int):
        with self.xp.cuda.Device(index):
            return self.xp.cuda.get_current_stream()

    def null_stream(self, index: int):
        with self.xp.cuda.Device(index):
            return self.xp.cuda.Stream.null

    def new_event(self, enable_timing: bool, blocking: bool):
        return self.xp.cuda.Event(block=blocking, disable_timing=not enable_timing)

    def elapsed_ms(self, start, end) -> float:
        return float(self.xp.cuda.get_elapsed_time(start, end))

    def allow_tf32_matmul(self, allowed: bool) -> None:
        """Let CuPy's float32 products use TF32 tensor cores (CuPy warns below sm_80)."""
        from cupy._core import _routines_linalg as linalg

        kind = linalg.COMPUTE_TYPE_TF32 if allowed else linalg.COMPUTE_TYPE_DEFAULT
        linalg.set_compute_type(self.xp.float32, kind)


FORKED_MESSAGE = ("Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
                  "multiprocessing, you must use the 'spawn' start method")


class _ForkedArrayModule:
    """CuPy's place in a child forked after CUDA started: every use raises PyTorch's error
    (the driver cannot run in a forked child; CuPy would fail with a bare
    cudaErrorInitializationError)."""

    def __getattr__(self, name):
        raise RuntimeError(FORKED_MESSAGE)


class _ForkedCUDABackend(CUDABackend):
    """The cuda backend in a forked child: device queries answer from the parent's count (as
    PyTorch's do, through NVML), anything that would touch the GPU raises."""

    def __init__(self, parent: CUDABackend, count: int):
        self.unsupported_dtypes = parent.unsupported_dtypes
        self.kernels = {}
        self.xp = _ForkedArrayModule()
        self._count = count

    def device_count(self) -> int:
        return self._count

    def default_index(self, index):
        raise RuntimeError(FORKED_MESSAGE)

    def to_device(self, array, index):
        raise RuntimeError(FORKED_MESSAGE)


def _after_fork_in_child() -> None:
    """Registered with ``os.register_at_fork``: a child forked from a process whose cuda
    backend is registered gets the forked stand-in (nothing changes for the CPU)."""
    from . import _REGISTRY

    be = _REGISTRY.get("cuda")
    if isinstance(be, CUDABackend) and not isinstance(be, _ForkedCUDABackend):
        register_backend(_ForkedCUDABackend(be, _COUNT[0]))


_COUNT = [0]


def _register() -> None:
    global _why_not, _registered
    if _cupy is None:
        return
    backend = CUDABackend(_cupy)
    count = backend.device_count()
    if count > 0:
        register_backend(backend)
        _registered = True
        _COUNT[0] = count
        import os

        os.register_at_fork(after_in_child=_after_fork_in_child)
        # Left alone at 'highest', so that CuPy's own CUPY_TF32 switch still works.
        if _settings.get_float32_matmul_precision() != "highest":
            backend.allow_tf32_matmul(True)
    else:
        _why_not = "CuPy found no CUDA device"


_register()


# -- torch.backends.cuda -----------------------------------------------------------------------

matmul = CuBLASFlags()


def is_built() -> bool:
    """Whether Ember can use CUDA here: CuPy imports (a GPU may still be missing)."""
    return _cupy is not None


def cuda_version() -> str | None:
    """CuPy's CUDA runtime version, e.g. '12.4' (``ember.version.cuda``); None without CuPy."""
    if _cupy is None:
        return None
    try:
        version = _cupy.cuda.runtime.runtimeGetVersion()
    except Exception:  # CuPy without a loadable CUDA runtime
        return None
    return f"{version // 1000}.{version % 1000 // 10}"


@functools.cache
def cudnn_version() -> int | None:
    """cuDNN's version as an int (e.g. 90100) when CuPy's cuDNN loads and a GPU is there."""
    if not _registered:
        return None
    try:
        from cupy.cuda import cudnn
    except Exception:  # not installed (``pip install nvidia-cudnn-cu12``) or fails to load
        return None
    return int(cudnn.getVersion())


# -- scaled dot product attention's backends (PyTorch's torch.backends.cuda switches) ---------

def _switches(backend: int, what: str):
    """``enable_<x>_sdp(enabled)`` and ``<x>_sdp_enabled()`` for one backend."""
    def enable(enabled: bool) -> None:
        if enabled:
            _sdp.enabled.add(backend)
        else:
            _sdp.enabled.discard(backend)

    def is_enabled() -> bool:
        return backend in _sdp.enabled

    enable.__doc__ = f"Enable or disable the {what} backend of scaled_dot_product_attention."
    is_enabled.__doc__ = f"Whether the {what} backend of scaled_dot_product_attention is on."
    return enable, is_enabled


enable_flash_sdp, flash_sdp_enabled = _switches(_sdp.FLASH, "flash-attention")
enable_mem_efficient_sdp, mem_efficient_sdp_enabled = _switches(
    _sdp.EFFICIENT, "memory-efficient (CUDA only in PyTorch)")
enable_math_sdp, math_sdp_enabled = _switches(_sdp.MATH, "math")
enable_cudnn_sdp, cudnn_sdp_enabled = _switches(_sdp.CUDNN, "cuDNN (CUDA only in PyTorch)")
enable_overrideable_sdp, overrideable_sdp_enabled = _switches(_sdp.OVERRIDEABLE, "overrideable")


def sdpa_backends(with_priority: bool = False) -> list:
    """The enabled backends' ``SDPBackend`` values, in PyTorch's listing order or in priority
    order (what ``torch.nn.attention`` reads through ``torch._C``)."""
    return _sdp.current(with_priority)


def set_sdpa_backends(backends, set_priority: bool = False) -> None:
    """Enable exactly ``backends`` (``SDPBackend`` values); with ``set_priority`` their order
    is their priority (``torch.nn.attention.sdpa_kernel``'s setting)."""
    _sdp.set_enabled(backends, set_priority)


@contextlib.contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True,
               enable_mem_efficient: bool = True, enable_cudnn: bool = True):
    """PyTorch's deprecated context manager: only the backends given True are enabled inside
    the block (use ``torch.nn.attention.sdpa_kernel``)."""
    warnings.warn(
        "`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this context "
        "manager will be removed. Please see `torch.nn.attention.sdpa_kernel()` for the new "
        "context manager, with updated signature.", FutureWarning, stacklevel=3)
    previous = _sdp.current()
    chosen = [b for b, on in ((_sdp.CUDNN, enable_cudnn), (_sdp.FLASH, enable_flash),
                              (_sdp.EFFICIENT, enable_mem_efficient), (_sdp.MATH, enable_math))
              if on]
    try:
        _sdp.set_enabled(chosen)
        yield {}
    finally:
        _sdp.set_enabled(previous)
