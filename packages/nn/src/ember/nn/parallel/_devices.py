"""Device arguments of the ``torch.nn.parallel`` helpers (PyTorch's ``_get_device_index``).

An int is an index of the accelerator (``cuda`` when a GPU is there); a device or a string
names its device outright, and the CPU is refused with PyTorch's error, since these helpers
move tensors between accelerator devices. The accelerator is the one ``DataParallel`` uses
(``data_parallel._accelerator_type``), so that both agree (and tests can stand a NumPy-backed
device in for CUDA in one place).
"""

from __future__ import annotations

import importlib

import ember

# the module, not the function of the same name that ``ember.nn.parallel`` exports
_data_parallel = importlib.import_module("ember.nn.parallel.data_parallel")

NONE_AVAILABLE = "Cannot access accelerator device when none is available."


def accelerator_type() -> str | None:
    """The device type ints refer to, or None without an accelerator."""
    return _data_parallel._accelerator_type()


def target_device(device) -> ember.device:
    """``device`` (an int, a string, an ``ember.device`` or None: the current one) as an
    accelerator device; the CPU raises ``ValueError`` as in PyTorch."""
    if isinstance(device, str):
        device = ember.device(device)
    if isinstance(device, ember.device):
        if device.type == "cpu":
            raise ValueError(f"Expected a non cpu device, but got: {device}")
        return device if device.index is not None else ember.device(device.type, 0)
    device_type = accelerator_type()
    if device_type is None:
        raise RuntimeError(NONE_AVAILABLE)
    return ember.device(device_type, 0 if device is None else int(device))
