"""``skip_init``: build a module without initializing its parameters
(``torch.nn.utils.skip_init``)."""

from __future__ import annotations

import inspect

from ..modules.module import Module

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs) -> Module:
    """An instance of ``module_cls(*args, **kwargs)`` whose parameters and buffers hold
    uninitialized memory, for code that initializes them itself.

    The module class must accept a ``device`` argument; ``device`` (default ``"cpu"``) is
    where the tensors end up. Ember has no ``meta`` device, so the module is built on that
    device and its tensors are then swapped for empty ones (``Module.to_empty``): the result
    is PyTorch's, but the time of the default initialization is not saved.

    Example::

        >>> m = skip_init(ember.nn.Linear, 5, 1)
        >>> m.weight.shape
        ember.Size([1, 5])
    """
    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = final_device
    return module_cls(*args, **kwargs).to_empty(device=final_device)
