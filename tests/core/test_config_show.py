"""``ember.__config__`` (``torch.__config__``) and ``ember.backends.cpu``: what this
installation is built on, in PyTorch's words where programs read them."""

import re

import numpy as np
import pytest
from threadpoolctl import threadpool_info

import ember


def _settings(text: str) -> dict:
    line = next(ln for ln in text.splitlines() if ln.startswith("  - Build settings: "))
    pairs = line[len("  - Build settings: "):].rstrip(", ").split(", ")
    return dict(p.split("=", 1) for p in pairs if "=" in p)


def test_show_names_this_installation():
    text = ember.__config__.show()
    assert text.startswith("Ember built with:\n") and f"NumPy {np.__version__}" in text
    blas = [lib for lib in threadpool_info() if lib["user_api"] == "blas"]
    settings = _settings(text)
    assert settings["BLAS_INFO"] == blas[0]["internal_api"]
    assert settings["USE_MKL"] == ("ON" if blas[0]["internal_api"] == "mkl" else "OFF")
    assert settings["TORCH_VERSION"] == "2.13.0"
    assert settings["USE_CUDA"] == ("1" if "CuPy " in text and "not installed" not in text
                                    else "0")
    assert f"CPU capability usage: {ember.backends.cpu.get_cpu_capability()}" in text
    assert "-march=native" in settings["CXX_FLAGS"] == ember.__config__._cxx_flags()
    # what torch_geometric reads: 'USE_MKL=OFF' in torch.__config__.show()
    assert ("USE_MKL=OFF" in text) == (blas[0]["internal_api"] != "mkl")


def test_parallel_info_follows_the_thread_settings():
    before = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        text = ember.__config__.parallel_info()
        assert "\tember.get_num_threads() : 1" in text
        assert re.search(r"os.cpu_count\(\) : \d+", text)
        assert "OMP_NUM_THREADS : " in text
    finally:
        ember.set_num_threads(before)


def test_cpu_capability(monkeypatch):
    from ember.backends import cpu

    found = cpu._detected()
    assert found in ("DEFAULT", "AVX2", "AVX512")
    flags = cpu._cpu_flags()
    if flags:  # x86 Linux: from /proc/cpuinfo
        assert (found == "AVX512") == (cpu._AVX512 <= flags)
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "default")
    assert cpu.get_cpu_capability() == "DEFAULT"
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx512")  # never raised above the CPU's
    assert cpu.get_cpu_capability() == found
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "nonsense")
    assert cpu.get_cpu_capability() == found


@pytest.mark.parity
def test_cpu_capability_matches_pytorch():
    torch = pytest.importorskip("torch")
    assert ember.backends.cpu.get_cpu_capability() == torch.backends.cpu.get_cpu_capability()
