"""Repository-wide pytest hooks.

Tests marked ``gpu`` are skipped unless CuPy imports and sees at least one CUDA
device. The markers themselves are registered in ``pytest.ini``.
"""

from __future__ import annotations

import functools
import sys

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


@pytest.fixture(autouse=True)
def _torch_function_dispatch_off():
    """A test that defines a Tensor subclass turns ``__torch_function__`` dispatch on for the
    process (ember.overrides); turn it off again so later tests see plain functions."""
    yield
    overrides = sys.modules.get("ember.overrides")
    if overrides is not None and overrides.is_active():
        overrides._deactivate()
