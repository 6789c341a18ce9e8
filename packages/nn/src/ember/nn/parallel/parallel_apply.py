"""``parallel_apply`` and ``get_a_var`` (``torch.nn.parallel.parallel_apply``).

``parallel_apply(modules, inputs)`` calls ``modules[i](*inputs[i], **kwargs_tup[i])`` on
device ``devices[i]`` (or the device of the first tensor found in ``inputs[i]``), one thread
per module when there are several, with the caller's grad mode (Ember's grad mode is per
thread, as PyTorch's). An error in a replica is raised again in the caller as PyTorch does:
the same exception type, its message naming the replica and holding the original traceback.
As in PyTorch the devices are accelerator devices, so without one it raises.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import traceback
from collections.abc import Sequence
from typing import Any

import ember
from ember import Tensor

from ..modules.module import Module
from ._devices import NONE_AVAILABLE, accelerator_type, target_device

__all__ = ["get_a_var", "parallel_apply"]


def get_a_var(obj: Tensor | list[Any] | tuple[Any, ...] | dict[Any, Any]) -> Tensor | None:
    """The first tensor found in ``obj`` (tensors, lists, tuples and dicts, searched depth
    first), or None."""
    if isinstance(obj, Tensor):
        return obj
    if isinstance(obj, (list, tuple)):
        for result in map(get_a_var, obj):
            if isinstance(result, Tensor):
                return result
    if isinstance(obj, dict):
        for result in map(get_a_var, obj.items()):
            if isinstance(result, Tensor):
                return result
    return None


class _ExceptionWrapper:
    """An exception and its traceback, carried out of a worker thread (``torch._utils``)."""

    def __init__(self, where: str) -> None:
        exc_type, exc, tb = sys.exc_info()
        self.exc_type = exc_type
        self.exc_msg = "".join(traceback.format_exception(exc_type, exc, tb))
        self.where = where

    def reraise(self):
        if self.exc_type is None:  # made outside an ``except`` block: the message says why
            raise RuntimeError(f"Error {self.where}")
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception


def _device_context(device: ember.device):
    """Make ``device`` current while a replica runs (a CUDA device; others need nothing)."""
    if device.type == "cuda":
        return ember.accelerator.device_index(device.index)
    return contextlib.nullcontext()


def parallel_apply(modules: Sequence[Module], inputs: Sequence[Any],
                   kwargs_tup: Sequence[dict[str, Any]] | None = None,
                   devices: Sequence | None = None) -> list[Any]:
    """Apply each module of ``modules`` to its ``inputs`` (a tuple of positional arguments, or
    a single argument) on its device, in parallel threads; the outputs in order."""
    if len(modules) != len(inputs):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number "
                             f"of inputs {len(inputs)}")
    if kwargs_tup is not None:
        if len(modules) != len(kwargs_tup):
            raise AssertionError(f"The number of modules {len(modules)} is not equal to the "
                                 f"number of kwargs_tup {len(kwargs_tup)}")
    else:
        kwargs_tup = ({},) * len(modules)
    if devices is not None:
        if len(modules) != len(devices):
            raise AssertionError(f"The number of modules {len(modules)} is not equal to the "
                                 f"number of devices {len(devices)}")
    else:
        devices = [None] * len(modules)
    if accelerator_type() is None:
        raise RuntimeError(NONE_AVAILABLE)
    devices = [None if d is None else target_device(d) for d in devices]
    lock = threading.Lock()
    results: dict[int, Any] = {}
    grad_enabled = ember.is_grad_enabled()

    def _worker(i: int, module: Module, input: Any, kwargs: dict[str, Any], device) -> None:
        ember.set_grad_enabled(grad_enabled)
        if device is None:
            t = get_a_var(input)
            if t is None:
                with lock:
                    results[i] = _ExceptionWrapper(
                        where=f"in replica {i}, no device was provided and no tensor input was "
                              "found; device cannot be resolved")
                return
            device = t.device
        try:
            with _device_context(device):
                if not isinstance(input, (list, tuple)):  # a tensor is one argument
                    input = (input,)
                output = module(*input, **kwargs)
            with lock:
                results[i] = output
        except Exception:
            with lock:
                results[i] = _ExceptionWrapper(where=f"in replica {i} on device {device.index}")

    work = list(zip(modules, inputs, kwargs_tup, devices))
    if len(work) > 1:
        threads = [threading.Thread(target=_worker, args=(i, *args))
                   for i, args in enumerate(work)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    else:
        _worker(0, *work[0])

    outputs = []
    for i in range(len(inputs)):
        output = results[i]
        if isinstance(output, _ExceptionWrapper):
            output.reraise()
        outputs.append(output)
    return outputs
