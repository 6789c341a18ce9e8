"""Convert the weights of convolutions to a memory format, like ``torch.nn.utils.memory_format``."""

from __future__ import annotations

from typing import TypeVar

import ember

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]

_M = TypeVar("_M")


def _convert_weights(module, kinds: tuple, memory_format):
    if isinstance(module, kinds):
        if memory_format is ember.preserve_format:  # PyTorch's ``resize_`` refuses it
            raise RuntimeError("Unsupported memory formatPreserve")
        module.weight.data = module.weight.detach().clone(memory_format=memory_format)
    for child in module.children():
        _convert_weights(child, kinds, memory_format)
    return module


def convert_conv2d_weight_memory_format(module: _M, memory_format) -> _M:
    """Lay out the weights of every ``nn.Conv2d`` and ``nn.ConvTranspose2d`` in ``module``
    (itself included, recursively) in ``memory_format``, e.g. ``ember.channels_last``.

    Only the memory layout changes, not the meaning of the dimensions; the parameters stay the
    same objects. Unlike ``module.to(memory_format=...)``, which converts every 4-d tensor,
    only convolution weights are touched.

    Returns:
        ``module``, converted in place.
    """
    from ember.nn import Conv2d, ConvTranspose2d

    return _convert_weights(module, (Conv2d, ConvTranspose2d), memory_format)


def convert_conv3d_weight_memory_format(module: _M, memory_format) -> _M:
    """Lay out the weights of every ``nn.Conv3d`` and ``nn.ConvTranspose3d`` in ``module``
    (itself included, recursively) in ``memory_format``, e.g. ``ember.channels_last_3d``.

    Returns:
        ``module``, converted in place.
    """
    from ember.nn import Conv3d, ConvTranspose3d

    return _convert_weights(module, (Conv3d, ConvTranspose3d), memory_format)
