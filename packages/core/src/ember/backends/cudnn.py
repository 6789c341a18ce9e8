"""``ember.backends.cudnn``: PyTorch's cuDNN switches, answering for this machine.

Ember calls no cuDNN kernel: its convolutions are matrix products (their float32 precision
follows ``ember.set_float32_matmul_precision``), so ``enabled``, ``benchmark``,
``deterministic`` and ``allow_tf32`` are stored and read back for PyTorch programs that set
them, and change nothing. ``is_available()`` and ``version()`` tell whether CuPy's cuDNN
loads on a GPU here.
"""

from __future__ import annotations

import contextlib
import sys
import types

from ._flags import BoolFlag

__all__ = ["is_available", "version", "flags", "set_flags"]

_FLAGS = ("enabled", "benchmark", "deterministic", "allow_tf32")


def is_available() -> bool:
    """Whether cuDNN can be used: CuPy's cuDNN bindings load and a CUDA device is there."""
    return version() is not None


def version() -> int | None:
    """cuDNN's version as an int (e.g. 90100), or None when it is not available."""
    from . import cuda

    return cuda.cudnn_version()


def set_flags(_enabled=None, _benchmark=None, _deterministic=None, _allow_tf32=None) -> tuple:
    """Set the flags that are not None; return the previous values of all four."""
    module = sys.modules[__name__]
    previous = tuple(getattr(module, name) for name in _FLAGS)
    for name, value in zip(_FLAGS, (_enabled, _benchmark, _deterministic, _allow_tf32)):
        if value is not None:
            setattr(module, name, value)
    return previous


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, deterministic=False, allow_tf32=True):
    """Set the four flags inside the ``with`` block (PyTorch's defaults), restore them after."""
    previous = tuple(getattr(sys.modules[__name__], name) for name in _FLAGS)
    try:
        set_flags(enabled, benchmark, deterministic, allow_tf32)
        yield
    finally:
        set_flags(*previous)


class _CudnnModule(types.ModuleType):
    enabled = BoolFlag(True, "set_enabled_cudnn")
    benchmark = BoolFlag(False, "set_benchmark_cudnn")
    deterministic = BoolFlag(False, "set_deterministic_cudnn")
    # sic: PyTorch 2.13 names the cuBLAS setter in this flag's error too
    allow_tf32 = BoolFlag(True, "set_allow_tf32_cublas")


sys.modules[__name__].__class__ = _CudnnModule
