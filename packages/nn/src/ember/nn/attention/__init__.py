"""Scaled-dot-product-attention backend selection (``torch.nn.attention``).

``SDPBackend`` names PyTorch's backends with its values and ``sdpa_kernel`` sets and restores
the enabled set (and, with ``set_priority=True``, their priority order) as PyTorch does: one
process-wide setting, as in PyTorch's global context. Ember has a single (math)
implementation of ``scaled_dot_product_attention``, and it always runs it: the setting is
recorded for code that reads it back, and does not change which kernel runs.

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


# the backends in PyTorch's listing order (``_backend_names``) and its default priority order
_ORDER = (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION,
          SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH, SDPBackend.OVERRIDEABLE)
_enabled = set(_ORDER)
_priority = [1, 2, 0, 3, 4]


def _cur_sdpa_kernel_backends(with_priority: bool = False) -> list:
    """The enabled backends, in listing order or (``with_priority``) in priority order."""
    backends = [b for b in _ORDER if b in _enabled]
    if with_priority:
        backends.sort(key=lambda b: _priority.index(int(b)))
    return backends


def _sdpa_kernel(backends, set_priority: bool = False) -> None:
    global _priority
    _enabled.clear()
    _enabled.update(b for b in _ORDER if b in backends)
    if set_priority:
        user = [int(b) for b in backends]
        _priority = user + [b for b in _priority if b not in user]


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    """Enable only ``backends`` (one ``SDPBackend`` or a list) inside the block; with
    ``set_priority`` their order is their priority. The previous setting comes back on exit.

    Ember always runs its math kernel whatever is enabled."""
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
