"""``DataParallel`` on a single device (``torch.nn.parallel.DataParallel``).

PyTorch's ``DataParallel`` replicates a module on several GPUs of one process and splits
each batch between them. Ember's runs the module on one device: on a machine without an
accelerator it calls the module as it is (as PyTorch does there); with one it moves the
module to ``device_ids[0]`` and the inputs with it. The wrapper keeps PyTorch's interface,
so its ``module`` attribute and ``state_dict`` keys (``module.<name>``) are PyTorch's. Asking
for several devices raises: use one process per device with ``DistributedDataParallel``.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import Any

import ember
from ember import Tensor

from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


def _accelerator_type() -> str | None:
    """The device type to run on: ``"cuda"`` when a GPU is available, else ``None``."""
    return "cuda" if ember.cuda.is_available() else None


def _device_index(device) -> int:
    """The index of ``device`` (an int, or a device whose index defaults to 0)."""
    if isinstance(device, int):
        return device
    device = ember.device(device)
    return 0 if device.index is None else device.index


def _single_device(device_type: str, device_ids) -> int:
    """The one device index of ``device_ids`` (``None``: device 0); several raise."""
    if device_ids is None:
        return 0
    device_ids = [_device_index(d) for d in device_ids]
    if not device_ids:
        raise RuntimeError("no available devices were found")
    if len(set(device_ids)) > 1:
        raise RuntimeError(
            f"DataParallel over several devices is not supported by Ember (device_ids="
            f"{device_ids}): it runs the module on one {device_type} device. Pass a single "
            "device (e.g. device_ids=[0]), or train on several devices with one process per "
            "device and DistributedDataParallel.")
    return device_ids[0]


def _to_device(obj, device):
    """``obj`` with every tensor inside (tuples, lists, dicts) moved to ``device``."""
    if isinstance(obj, Tensor):
        return obj.to(device)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # a namedtuple
        return type(obj)(*(_to_device(o, device) for o in obj))
    if isinstance(obj, (tuple, list)):
        return type(obj)(_to_device(o, device) for o in obj)
    if isinstance(obj, dict):
        return type(obj)((k, _to_device(v, device)) for k, v in obj.items())
    return obj


def _check_module_device(module: Module, device) -> None:
    for t in chain(module.parameters(), module.buffers()):
        if t.device != device:
            raise RuntimeError("module must have its parameters and buffers on device "
                               f"{device} (device_ids[0]) but found one of them on device: "
                               f"{t.device}")


class DataParallel(Module):
    """Run ``module`` on one device, with PyTorch's ``DataParallel`` interface.

    Without an accelerator, ``forward`` calls ``module(*inputs, **kwargs)`` and
    ``device_ids`` is ``[]``. With one, the module moves to ``device_ids[0]`` (default:
    device 0) and the inputs are moved there before each call; the output stays there.
    Several distinct ``device_ids`` raise ``RuntimeError``: Ember does not split batches
    across devices in one process (use ``DistributedDataParallel``, one process per device).

    The wrapped module is ``.module``, so state dict keys are prefixed ``module.`` as in
    PyTorch.

    Example::

        >>> net = DataParallel(ember.nn.Linear(4, 2))
        >>> list(net.state_dict())
        ['module.weight', 'module.bias']
        >>> net(ember.ones(3, 4)).shape
        ember.Size([3, 2])
    """

    def __init__(self, module: Module, device_ids: Sequence | None = None,
                 output_device=None, dim: int = 0) -> None:
        super().__init__()
        device_type = _accelerator_type()
        self.module = module
        self.dim = dim
        if device_type is None:
            self.device_ids = []
            return
        index = _single_device(device_type, device_ids)
        self.device_ids = [index]
        self.output_device = index if output_device is None else _device_index(output_device)
        self.src_device_obj = ember.device(device_type, index)
        self.module.to(self.src_device_obj)

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        _check_module_device(self.module, self.src_device_obj)
        inputs, kwargs = _to_device((inputs, kwargs), self.src_device_obj)
        return self.module(*inputs, **kwargs)


def data_parallel(module: Module, inputs: Any, device_ids: Sequence | None = None,
                  output_device=None, dim: int = 0, module_kwargs: Any | None = None) -> Any:
    """The functional form of ``DataParallel``: ``module(*inputs, **module_kwargs)`` with the
    inputs moved to the device ``device_ids[0]``, where the module must already be. As in
    PyTorch's single-device path the output stays there (``output_device`` is not used)."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    device_type = _accelerator_type()
    if device_type is None:
        raise RuntimeError("device type could not be determined")
    index = _single_device(device_type, device_ids)
    device = ember.device(device_type, index)
    _check_module_device(module, device)
    inputs, module_kwargs = _to_device((inputs, module_kwargs or {}), device)
    return module(*inputs, **module_kwargs)
