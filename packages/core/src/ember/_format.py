"""The one formatter of shapes (and other int sequences) in PyTorch's error messages.

PyTorch spells a shape three ways: ``[2, 3]`` (``shape_str(s)`` in brackets), ``2x3``
(``shape_str(s, "x")``, matrix products) and ``(2 x 3)`` (``shape_str(s, " x ")``, convolution
sizes). A leaf module: anything in ember may import it.
"""

from __future__ import annotations

__all__ = ["shape_str"]


def shape_str(shape, sep: str = ", ") -> str:
    """``shape``'s sizes joined by ``sep``: ``shape_str((2, 3)) == "2, 3"``."""
    return sep.join(map(str, shape))
