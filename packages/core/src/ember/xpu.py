"""``ember.xpu``: Intel GPUs (XPU). Ember has no XPU backend, so this answers as a PyTorch
build without XPU does: nothing is available, the queries answer 0 or False, seeding and
``empty_cache`` do nothing, and whatever needs a device raises an AssertionError."""

from __future__ import annotations

__all__ = ["is_available", "is_initialized", "device_count", "is_bf16_supported",
           "is_tf32_supported", "get_arch_list", "init", "current_device", "set_device",
           "synchronize", "get_device_name", "get_device_capability", "get_device_properties",
           "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed", "empty_cache",
           "memory_allocated", "memory_reserved", "mem_get_info"]


def _not_compiled() -> AssertionError:
    """The error of every call that needs an XPU device (PyTorch's, for a build without)."""
    return AssertionError("Ember not compiled with XPU enabled")


def is_available() -> bool:
    """Whether an XPU device can be used: never in Ember."""
    return False


def is_initialized() -> bool:
    """Whether the XPU runtime is initialised: never in Ember."""
    return False


def device_count() -> int:
    """The number of XPU devices: 0."""
    return 0


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether the current XPU device supports bfloat16: False without one."""
    return False


def is_tf32_supported() -> bool:
    """Whether the current XPU device supports TF32: False without one."""
    return False


def get_arch_list() -> list[str]:
    """The XPU architectures Ember is built for: none."""
    return []


def init() -> None:
    """Initialise the XPU runtime; raises, as Ember has none."""
    raise _not_compiled()


def current_device() -> int:
    """The index of the current XPU device; raises, as there is none."""
    raise _not_compiled()


def set_device(device) -> None:
    """Make ``device`` the current XPU device; raises, as there is none."""
    raise _not_compiled()


def synchronize(device=None) -> None:
    """Wait for an XPU device; raises, as there is none."""
    raise _not_compiled()


def get_device_name(device=None) -> str:
    """The name of an XPU device; raises, as there is none."""
    raise _not_compiled()


def get_device_capability(device=None) -> dict:
    """The capability of an XPU device; raises, as there is none."""
    raise _not_compiled()


def get_device_properties(device=None):
    """The properties of an XPU device; raises, as there is none."""
    raise _not_compiled()


def manual_seed(seed: int) -> None:
    """Seed the current XPU device's generator: nothing to seed (PyTorch defers it too)."""


def manual_seed_all(seed: int) -> None:
    """Seed every XPU device's generator: nothing to seed."""


def seed() -> None:
    """Seed the current XPU device's generator randomly: nothing to seed."""


def seed_all() -> None:
    """Seed every XPU device's generator randomly: nothing to seed."""


def initial_seed() -> int:
    """The initial seed of the current XPU generator; raises, as there is none."""
    raise _not_compiled()


def empty_cache() -> None:
    """Release cached XPU memory: there is none."""


def memory_allocated(device=None) -> int:
    """Bytes of XPU memory held by tensors: 0."""
    return 0


def memory_reserved(device=None) -> int:
    """Bytes of XPU memory held by the caching allocator: 0."""
    return 0


def mem_get_info(device=None) -> tuple[int, int]:
    """``(free, total)`` bytes of an XPU device; raises, as there is none."""
    raise _not_compiled()
