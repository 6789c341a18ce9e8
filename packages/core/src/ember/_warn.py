"""Where a warning raised inside Ember points: the user's line, not Ember's own frames.

``warnings.warn(..., stacklevel=user_stacklevel())`` counts the frames from the caller up to
the first one outside the ``ember`` packages, the generated op fronts (``ember._front``)
included, so that a kernel's warning names the line that called ``ember.cross(...)`` (or
``torch.cross`` under ``ember.as_torch``) whether the kernel was reached through a front, a
module or another kernel, where a fixed ``stacklevel`` is right for one path only.
"""

from __future__ import annotations

import sys

__all__ = ["user_stacklevel"]


def _ours(name: str) -> bool:
    return name == "ember" or name.startswith("ember.")


def user_stacklevel() -> int:
    """The ``stacklevel`` of the first frame outside Ember, counted from the function that
    calls this (1: that function itself)."""
    frame = sys._getframe(1)
    level = 1
    while frame is not None and _ours(frame.f_globals.get("__name__", "")):
        frame = frame.f_back
        level += 1
    return level
