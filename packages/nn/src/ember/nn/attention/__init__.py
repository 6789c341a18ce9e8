"""Scaled-dot-product-attention backend selection (``torch.nn.attention``).

``SDPBackend`` names PyTorch's backends with its values and ``sdpa_kernel`` sets and restores
the enabled set (and, with ``set_priority=True``, their priority order) as PyTorch does: one
process-wide setting, as in PyTorch's global context (``ember.backends.cuda``'s, which its
``enable_flash_sdp``-style switches share). Ember has one implementation of
``scaled_dot_product_attention``; the setting decides what PyTorch's choice among the enabled
backends shows: its error when none can run the inputs (on the CPU, only ``MATH`` and, for
4-D inputs without dropout, ``FLASH_ATTENTION`` can), and which saved tensors the backward
checks for in-place writes.

``ember.nn.attention.bias`` (``CausalBias``, ``causal_upper_left``, ``causal_lower_right``) is
imported on first use: defining its ``__torch_function__`` subclass turns on dispatch for the
process (``ember.overrides``), which a program that never uses it should not pay for. So is
``ember.nn.attention.flex_attention`` (``flex_attention``, ``create_block_mask``, ``BlockMask``),
which ``import ember.nn`` does not need.
"""

from __future__ import annotations

import contextlib
import enum
import importlib

from ember.backends import cuda as _cuda

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]

#: PyTorch's switch for warnings about why a fused kernel cannot run (Ember has none)
WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.IntEnum):
    """The backends of ``scaled_dot_product_attention``, with PyTorch's values."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    __str__ = enum.Enum.__str__


def _cur_sdpa_kernel_backends(with_priority: bool = False) -> list:
    """The enabled backends, in listing order or (``with_priority``) in priority order."""
    return [SDPBackend(b) for b in _cuda.sdpa_backends(with_priority)]


def _sdpa_kernel(backends, set_priority: bool = False) -> None:
    _cuda.set_sdpa_backends(backends, set_priority)


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    """Enable only ``backends`` (one ``SDPBackend`` or a list) inside the block; with
    ``set_priority`` their order is their priority. The previous setting comes back on exit.

    Ember runs its one kernel where PyTorch would run an enabled one, and raises PyTorch's
    error where none can run (``EFFICIENT_ATTENTION`` alone on the CPU)."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend "
                             f"instances, got {type(backends).__name__}")
    if isinstance(backends, SDPBackend):
        backends = [backends]
    backends = list(dict.fromkeys(backends))
    previous = _cur_sdpa_kernel_backends(with_priority=set_priority)
    try:
        _sdpa_kernel(backends, set_priority)
        yield {}
    finally:
        _sdpa_kernel(previous, set_priority)


_LAZY_SUBMODULES = ("bias", "flex_attention")


def __getattr__(name: str):
    if name in _LAZY_SUBMODULES:  # submodules, as in PyTorch; loaded on first use (docstring)
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
