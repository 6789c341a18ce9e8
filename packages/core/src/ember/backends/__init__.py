"""Device backends: one registry maps a device type to its array module and kernels.

A backend names its device type, its array module (``numpy``, ``cupy``) and optional fused
kernels. Nothing else in ember branches on the device: ops take the array module from the
tensor's backend (``xp``) and moves go through ``to_device``/``to_host``.

The submodules are also PyTorch's ``torch.backends.*`` for programs that ask about them:
``cuda`` (imported on first use, since it imports CuPy), ``cudnn``, ``mps``, ``openmp``,
``mkl`` and ``mkldnn``, each answering for this machine and for what Ember uses.
"""

from __future__ import annotations

import contextlib

import numpy as np

__all__ = ["Backend", "register_backend", "get_backend", "backend_of", "available_types"]


class Backend:
    """Base backend: NumPy arrays in host memory (the CPU)."""

    type = "cpu"
    xp = np
    kernels: dict = {}
    #: NumPy dtypes this backend's arrays cannot hold (CuPy has no bfloat16)
    unsupported_dtypes: frozenset = frozenset()

    def is_available(self) -> bool:
        return True

    def linalg_errors(self):
        """A context in which the array module's linear algebra raises
        ``numpy.linalg.LinAlgError`` on a singular or not positive-definite input, as NumPy's
        always does (CuPy skips the check, and its sync, unless asked)."""
        return _NO_CONTEXT

    def check_dtype(self, np_dtype) -> None:
        """Raise a TypeError naming the dtype when this backend's arrays cannot hold it."""
        if np_dtype in self.unsupported_dtypes:
            instead = "complex64" if np_dtype.name == "complex32" else "float16 or float32"
            raise TypeError(f"{self.type} tensors cannot hold {np_dtype.name}: the {self.type} "
                            f"backend's array module ({self.xp.__name__}) has no {np_dtype.name} "
                            f"dtype. Keep {np_dtype.name} tensors on the CPU, or use {instead} "
                            f"on {self.type}")

    def device_count(self) -> int:
        return 1

    def to_device(self, array, index: int | None):
        """A copy of ``array`` (a NumPy array, or another backend's) on this device."""
        return np.array(array, copy=True)

    def to_host(self, array) -> np.ndarray:
        """``array`` as a NumPy array (no copy where it already is one)."""
        return array

    def synchronize(self, index: int | None = None) -> None:
        pass

    def default_index(self, index: int | None) -> int | None:
        return None

    def manual_seed(self, seed: int) -> None:
        pass

    def allow_tf32_matmul(self, allowed: bool) -> None:
        """Whether float32 products may use TF32 (``set_float32_matmul_precision``); a
        backend without TF32 (NumPy: float32 products are always float32) ignores it."""


class CPUBackend(Backend):
    type = "cpu"


_REGISTRY: dict[str, Backend] = {}
_KNOWN = {"cpu", "cuda", "meta"}


def register_backend(backend: Backend) -> Backend:
    """Register ``backend`` under ``backend.type`` (replacing any backend of that type)."""
    _REGISTRY[backend.type] = backend
    _KNOWN.add(backend.type)
    return backend


def unregister_backend(type: str) -> None:
    _REGISTRY.pop(type, None)


def _known_type(type: str) -> bool:
    return type in _KNOWN


_NO_CONTEXT = contextlib.nullcontext()  # reusable: enters and exits without state


def available_types() -> list[str]:
    return list(_REGISTRY)


def get_backend(type: str) -> Backend:
    be = _REGISTRY.get(type)
    if be is None:
        if type == "cuda":
            from . import cuda as _cuda  # registers itself when CuPy imports

            be = _REGISTRY.get("cuda")
            if be is None:
                raise AssertionError(
                    "Ember not compiled with CUDA enabled: install the CuPy extra "
                    f"(pip install 'ember-core[cuda]') on a machine with a GPU ({_cuda.reason()})")
            return be
        if type == "meta":
            from .. import _meta  # registers itself: arrays without data

            return _REGISTRY["meta"]
        raise RuntimeError(f"no backend is registered for device type '{type}'")
    return be


def backend_of(dev) -> Backend:
    """The backend of an ``ember.device``."""
    be = _REGISTRY.get(dev.type)
    return be if be is not None else get_backend(dev.type)


register_backend(CPUBackend())

from ._malloc import malloc_tuned, restore_malloc_defaults, tune_malloc

tune_malloc()
__all__ += ["tune_malloc", "restore_malloc_defaults", "malloc_tuned"]

from . import cpu, cudnn, mkl, mkldnn, mps, openmp


def __getattr__(name: str):
    if name == "cuda":  # imported on first use: importing it imports CuPy
        import importlib

        return importlib.import_module(f"{__name__}.cuda")
    raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
