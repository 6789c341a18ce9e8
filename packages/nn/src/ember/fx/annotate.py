"""``annotate``: give a traced value a type (``torch.fx.annotate``)."""

from __future__ import annotations

from typing import Any

from .proxy import Proxy

__all__ = ["annotate"]


def annotate(val: Any, type: Any) -> Any:
    """During tracing, set the type of the proxy ``val`` (``node.type``, which the graph's
    code prints as an annotation: ``x : int = ...``); other values pass unchanged. A value
    that has a type already (an annotated parameter, a second ``annotate``) raises."""
    if isinstance(val, Proxy):
        if val.node.type:
            raise RuntimeError(
                "Tried to annotate a value that already had a type on it! Existing type is "
                f"{val.node.type} and new type is {type}. This could happen if you tried to "
                "annotate a function parameter value (in which case you should use the type "
                "slot on the function signature) or you called annotate on the same value "
                "twice")
        val.node.type = type
    return val
