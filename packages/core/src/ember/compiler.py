"""``ember.compiler`` (``torch.compiler``): ``disable``, ``reset``, ``is_compiling``.

``ember.compile`` itself is ``ember._compile.compile``; this namespace holds the helpers
PyTorch keeps beside it.
"""

from __future__ import annotations

from ._compile import disable, is_compiling, reset

__all__ = ["disable", "reset", "is_compiling", "is_dynamo_compiling"]


def is_dynamo_compiling() -> bool:
    """Same as :func:`is_compiling` (``torch.compiler.is_dynamo_compiling``)."""
    return is_compiling()
