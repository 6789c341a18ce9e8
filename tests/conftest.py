"""Repository-wide pytest hooks.

Tests marked ``gpu`` are skipped unless CuPy imports and sees at least one CUDA
device. The markers themselves are registered in ``pytest.ini``.
"""

from __future__ import annotations

import functools

import pytest


@functools.cache
def cuda_device_count() -> int:
    """Number of CUDA devices CuPy can see; 0 when CuPy or a driver is missing."""
    try:
        import cupy
    except Exception:  # ImportError, or a CuPy build that fails to load its CUDA libraries
        return 0
    try:
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # cupy.cuda.runtime.CUDARuntimeError: no driver or no device
        return 0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not gpu_items or cuda_device_count() > 0:
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU (CuPy with a visible device)")
    for item in gpu_items:
        item.add_marker(skip_gpu)
