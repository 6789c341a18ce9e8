"""``torch.__config__``: how this Ember was built and runs, as text (``show()``,
``parallel_info()``), for bug reports and for programs that read it (torch_geometric looks
for ``USE_MKL=OFF`` in ``show()``).

Ember is Python over NumPy (and CuPy on the GPU) with a few C kernels compiled on the
machine, so its "build" is the libraries it runs on: the lines name NumPy's BLAS as
threadpoolctl reports it, CuPy when it is installed, the C compiler and flags of
``ember._native``, and the settings PyTorch prints in its words (``BLAS_INFO``,
``USE_MKL``, ``USE_CUDA``...), each true of this installation.
"""

from __future__ import annotations

import os
import platform
import sys

__all__ = ["show", "parallel_info"]


def _blas() -> list[dict]:
    import numpy as np  # noqa: F401  (loads NumPy's BLAS, which threadpoolctl then finds)
    from threadpoolctl import threadpool_info

    return [lib for lib in threadpool_info() if lib.get("user_api") == "blas"]


def _blas_name(blas: list[dict]) -> str:
    return blas[0].get("internal_api", "unknown") if blas else "unknown"


def _cupy_version() -> str | None:
    if "cupy" not in sys.modules:
        import importlib.util

        if importlib.util.find_spec("cupy") is None:
            return None
    try:
        import cupy

        return cupy.__version__
    except Exception:  # installed but unusable here (no driver): say so
        return "installed, not importable"


def _mpi() -> bool:
    import importlib.util

    return importlib.util.find_spec("mpi4py") is not None


def _cxx_flags() -> str:
    """The flags Ember's C kernels are compiled with (``ember._native``)."""
    from ._native import _FLAGS

    return " ".join(_FLAGS)


def show() -> str:
    """A description of this Ember installation (PyTorch's ``torch.__config__.show()``)."""
    import numpy as np

    from . import _native, backends
    from ._naming import TORCH_API
    from .torch_version import __version__

    blas = _blas()
    name = _blas_name(blas)
    lines = ["Ember built with:",
             f"  - Python {platform.python_version()} ({platform.python_implementation()})",
             f"  - NumPy {np.__version__}"]
    for lib in blas:
        lines.append(f"  - BLAS: {lib.get('internal_api')} {lib.get('version') or ''} "
                     f"({lib.get('architecture') or 'unknown kernel'}, "
                     f"{lib.get('num_threads')} threads)".replace("  (", " ("))
    cupy = _cupy_version()
    lines.append(f"  - CuPy {cupy}" if cupy else "  - CuPy: not installed (no CUDA backend)")
    lines.append(f"  - C kernels (ember._native): {_native.status()}")
    lines.append("  - LAPACK is enabled (NumPy's linalg)")
    lines.append(f"  - CPU capability usage: {backends.cpu.get_cpu_capability()}")
    settings = {"BLAS_INFO": name, "LAPACK_INFO": name, "CXX_FLAGS": _cxx_flags(),
                "TORCH_VERSION": TORCH_API, "EMBER_VERSION": str(__version__),
                "USE_CUDA": int(bool(cupy)), "USE_CUDNN": "OFF", "USE_MKL":
                "ON" if name == "mkl" else "OFF", "USE_MKLDNN": "OFF", "USE_MPI":
                "ON" if _mpi() else "OFF", "USE_NCCL": "OFF", "USE_OPENMP":
                "ON" if name == "openblas" and any(lib.get("threading_layer") == "openmp"
                                                   for lib in blas) else "OFF",
                "USE_ROCM": "OFF"}
    lines.append("  - Build settings: " + ", ".join(f"{k}={v}" for k, v in settings.items())
                 + ", ")
    return "\n".join(lines) + "\n"


def parallel_info() -> str:
    """The thread settings Ember runs with (PyTorch's ``torch.__config__.parallel_info()``)."""
    from . import get_num_interop_threads, get_num_threads

    lines = ["Ember/Parallel:",
             f"\tember.get_num_threads() : {get_num_threads()}",
             f"\tember.get_num_interop_threads() : {get_num_interop_threads()}"]
    for lib in _blas():
        lines.append(f"{lib.get('internal_api')} {lib.get('version') or ''} "
                     f"({lib.get('threading_layer')} threading)")
        lines.append(f"\tmax threads : {lib.get('num_threads')}")
    lines.append(f"os.cpu_count() : {os.cpu_count()}")
    lines.append("Environment variables:")
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        lines.append(f"\t{var} : {os.environ.get(var, '[not set]')}")
    lines.append("Ember parallel backend: NumPy's BLAS threads and Ember's intra-op pool "
                 "(ember._parallel)")
    return "\n".join(lines) + "\n"
