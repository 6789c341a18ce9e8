"""The backend registry and the CPU backend's malloc tuning."""

import sys

import pytest

import ember
from ember import backends


def test_registry_has_cpu_and_knows_cuda():
    assert "cpu" in backends.available_types()
    assert backends.get_backend("cpu").xp.__name__ == "numpy"
    assert ember.device("cuda").type == "cuda"  # a known type, even without a backend


def test_unknown_backend_type_is_an_error():
    with pytest.raises(RuntimeError, match="no backend is registered"):
        backends.get_backend("testdev-missing")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc mallopt is Linux-only")
def test_malloc_tuning_is_on_by_default_and_can_be_undone():
    assert backends.malloc_tuned()
    try:
        assert backends.restore_malloc_defaults()
        assert not backends.malloc_tuned()
    finally:
        assert backends.tune_malloc()
    assert backends.malloc_tuned()
