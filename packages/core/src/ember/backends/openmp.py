"""``ember.backends.openmp``: whether Ember's CPU kernels run on OpenMP threads."""

from __future__ import annotations

from .. import _settings

__all__ = ["is_available"]

# threadpoolctl's names for a BLAS threaded with OpenMP: OpenBLAS and BLIS say "openmp";
# MKL names its OpenMP runtime ("intel": libiomp, "gnu": libgomp, "pgi").
_OPENMP_LAYERS = frozenset({"openmp", "intel", "gnu", "pgi"})


def is_available() -> bool:
    """Whether Ember's CPU kernels use OpenMP: True only when NumPy's BLAS (the one
    multi-threaded part of them) is built on OpenMP, not on pthreads or TBB."""
    return any(lib.get("threading_layer") in _OPENMP_LAYERS for lib in _settings.blas_info())
