"""``torch.backends.cpu``: what vector instructions this CPU offers.

Ember's own C kernels are compiled on the machine for its CPU (``-march=native``) and NumPy's
BLAS picks its kernels at run time, so the capability is information, as PyTorch's is to a
program: ``"AVX512"`` (x86 with AVX-512 F/CD/BW/DQ/VL), ``"AVX2"`` (AVX2 and FMA),
``"DEFAULT"`` otherwise (and on other architectures). ``ATEN_CPU_CAPABILITY``
(``default``, ``avx2``, ``avx512``) lowers it, as it does PyTorch's dispatch.
"""

from __future__ import annotations

import functools
import os
import platform

__all__ = ["get_cpu_capability"]

_ORDER = ("DEFAULT", "AVX2", "AVX512")
_AVX512 = frozenset(("avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"))


def _cpu_flags() -> frozenset:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


@functools.lru_cache(maxsize=1)
def _detected() -> str:
    if platform.machine().lower() not in ("x86_64", "amd64", "i686", "x86"):
        return "DEFAULT"
    flags = _cpu_flags()
    if _AVX512 <= flags:
        return "AVX512"
    if {"avx2", "fma"} <= flags:
        return "AVX2"
    return "DEFAULT"


def get_cpu_capability() -> str:
    """``"AVX512"``, ``"AVX2"`` or ``"DEFAULT"``: the widest vector instruction set this
    CPU has (lowered by ``ATEN_CPU_CAPABILITY``)."""
    found = _detected()
    wanted = os.environ.get("ATEN_CPU_CAPABILITY", "").upper()
    if wanted in _ORDER and _ORDER.index(wanted) < _ORDER.index(found):
        return wanted
    return found
