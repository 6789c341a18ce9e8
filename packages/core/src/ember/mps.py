"""``ember.mps``: Apple's Metal GPUs (MPS). Ember has no MPS backend, so this answers as a
PyTorch build without MPS does: ``is_available()`` is False, ``device_count()`` 0,
``manual_seed`` does nothing, and the calls that need the backend raise PyTorch's error."""

from __future__ import annotations

__all__ = ["is_available", "device_count", "synchronize", "manual_seed", "seed",
           "get_rng_state", "set_rng_state", "empty_cache", "set_per_process_memory_fraction",
           "current_allocated_memory", "driver_allocated_memory", "recommended_max_memory",
           "compile_shader", "load_metallib"]


def _no_backend(call: str) -> RuntimeError:
    """PyTorch's error for ``call`` (its C++ name) without the MPS backend."""
    return RuntimeError(f"Cannot execute {call}() without MPS backend.")


def is_available() -> bool:
    """Whether an MPS device can be used: never in Ember."""
    return False


def device_count() -> int:
    """The number of MPS devices: 0."""
    return 0


def synchronize() -> None:
    """Wait for the MPS device; raises, as there is none."""
    raise _no_backend("deviceSynchronize")


def manual_seed(seed: int) -> None:
    """Seed the MPS generator: without MPS, nothing to do (``ember.manual_seed`` may call
    every device's seeding, so this must not fail)."""


def seed() -> None:
    """Seed the MPS generator randomly; raises, as there is none."""
    raise _no_backend("getDefaultGenerator")


def get_rng_state(device="mps"):
    """The MPS generator's state; raises, as there is none."""
    raise _no_backend("getDefaultGenerator")


def set_rng_state(new_state, device="mps") -> None:
    """Set the MPS generator's state; raises, as there is none."""
    raise _no_backend("getDefaultGenerator")


def empty_cache() -> None:
    """Release cached MPS memory; raises, as there is none."""
    raise _no_backend("emptyCache")


def set_per_process_memory_fraction(fraction: float) -> None:
    """Cap the MPS memory this process may take; raises, as there is none."""
    raise _no_backend("setMemoryFraction")


def current_allocated_memory() -> int:
    """Bytes of MPS memory held by tensors; raises, as there is none."""
    raise _no_backend("getCurrentAllocatedMemory")


def driver_allocated_memory() -> int:
    """Bytes of MPS memory the Metal driver holds; raises, as there is none."""
    raise _no_backend("getDriverAllocatedMemory")


def recommended_max_memory() -> int:
    """Metal's recommended working-set size; raises, as there is none."""
    raise _no_backend("getRecommendedMaxMemory")


def compile_shader(source: str):
    """Compile a Metal shader; raises, as MPS is not available."""
    raise RuntimeError("MPS is not available")


def load_metallib(source):
    """Load a compiled Metal library; raises, as MPS is not available."""
    raise RuntimeError("MPS is not available")
