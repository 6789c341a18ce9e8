"""``ember.backends.mkl``: whether Ember's CPU kernels run on Intel oneMKL."""

from __future__ import annotations

from .. import _settings

__all__ = ["is_available"]


def is_available() -> bool:
    """Whether NumPy's BLAS, behind Ember's CPU matrix products, is Intel's MKL."""
    return any(lib.get("internal_api") == "mkl" for lib in _settings.blas_info())
