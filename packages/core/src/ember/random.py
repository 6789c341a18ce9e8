"""``ember.random``: the default generator's seed and state, and ``fork_rng``
(``torch.random``).

These are the functions of ``ember._random``, where Ember's generators live, under PyTorch's
module path: ``manual_seed`` and ``seed`` seed every device's default generator,
``get_rng_state``/``set_rng_state`` save and restore the CPU one, and ``fork_rng`` restores
the CPU's and the accelerator devices' states when its block ends.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Generator as _Iterator

from ._random import (
    Generator,
    default_generator,  # noqa: F401
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)

__all__ = ["set_rng_state", "get_rng_state", "manual_seed", "seed", "initial_seed", "fork_rng",
           "thread_safe_generator"]

_fork_rng_warned_already = False


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type=None) -> _Iterator:
    """Fork the RNG: when the block ends, the CPU generator and those of ``devices`` (indices
    of ``device_type``, default: every device of the current accelerator) are back in the
    state they had when it began. ``enabled=False`` makes it a no-op."""
    global _fork_rng_warned_already
    if device_type == "meta":
        yield
        return
    from . import accelerator, get_device_module

    acc = accelerator.current_accelerator()
    device_type = device_type or (acc.type if acc is not None else "cuda")
    device_mod = get_device_module(device_type)
    if not enabled:
        yield
        return
    if devices is None:
        num_devices = device_mod.device_count()
        if num_devices > 1 and not _fork_rng_warned_already:
            upper = device_type.upper()
            warnings.warn(
                f"{upper} reports that you have {num_devices} available devices, and you have "
                f"used {_caller} without explicitly specifying which devices are being used. "
                f"For safety, we initialize *every* {upper} device by default, which can be "
                f"quite slow if you have a lot of {upper}s. If you know that you are only making "
                f"use of a few {upper} devices, set the environment variable "
                f"{upper}_VISIBLE_DEVICES or the '{_devices_kw}' keyword argument of {_caller} "
                "with the set of devices you are actually using. For example, if you are using "
                "CPU only, set device.upper()_VISIBLE_DEVICES= or devices=[]; if you are using "
                f"device 0 only, set {upper}_VISIBLE_DEVICES=0 or devices=[0].  To initialize "
                f"all devices and suppress this warning, set the '{_devices_kw}' keyword "
                f"argument to `range(ember.{device_type}.device_count())`.", stacklevel=3)
            _fork_rng_warned_already = True
        devices = list(range(num_devices))
    else:
        devices = list(devices)  # a generator would be used up by the first pass
    cpu_rng_state = get_rng_state()
    device_rng_states = [device_mod.get_rng_state(device) for device in devices]
    try:
        yield
    finally:
        set_rng_state(cpu_rng_state)
        for device, device_rng_state in zip(devices, device_rng_states):
            device_mod.set_rng_state(device_rng_state, device)


def thread_safe_generator() -> Generator | None:
    """The generator a ``DataLoader`` thread worker should draw from, or None (use the
    default generator). Ember's workers are processes, each with its own default generator
    seeded apart, so this is None everywhere, as PyTorch's is outside thread workers."""
    from .data import get_worker_info

    info = get_worker_info()
    if (info is not None and getattr(info, "worker_method", None) == "thread"
            and getattr(info, "rng", None) is not None):
        return info.rng.torch_generator
    return None

