"""``ember.utils.backcompat`` (``torch.utils.backcompat``): the switches of PyTorch's
warnings about behaviour that changed with broadcasting (``broadcast_warning``) and with
``keepdim``'s default (``keepdim_warning``). Both default to off; Ember stores the flags
(so programs that set them run) and emits neither warning.
"""

from __future__ import annotations

__all__ = ["broadcast_warning", "keepdim_warning"]


class Warning:  # PyTorch's name
    """A settable ``enabled`` flag."""

    def __init__(self) -> None:
        self._enabled = False

    def set_enabled(self, value) -> None:
        self._enabled = bool(value)

    def get_enabled(self) -> bool:
        return self._enabled

    enabled = property(get_enabled, set_enabled)


broadcast_warning = Warning()
keepdim_warning = Warning()
