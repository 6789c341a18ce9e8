"""``ember.compiler`` (``torch.compiler``): the helpers PyTorch keeps beside ``compile``.

``ember.compile`` itself is ``ember._compile.compile`` (also ``ember.compiler.compile``).
The hints (``allow_in_graph``, ``assume_constant_result``, ``substitute_in_graph``,
``set_stance``) and what each means for Ember's capture: ``ember._compile.hints``.
"""

from __future__ import annotations

import functools

from ._compile import compile, config, disable, is_compiling, list_backends, reset
from ._compile.hints import allow_in_graph, assume_constant_result, set_stance, substitute_in_graph

__all__ = ["compile", "config", "disable", "reset", "is_compiling", "is_dynamo_compiling",
           "is_exporting", "list_backends", "allow_in_graph", "assume_constant_result",
           "substitute_in_graph", "set_stance", "wrap_numpy", "nested_compile_region",
           "cudagraph_mark_step_begin", "set_enable_guard_collectives"]


def is_dynamo_compiling() -> bool:
    """Same as :func:`is_compiling` (``torch.compiler.is_dynamo_compiling``)."""
    return is_compiling()


def is_exporting() -> bool:
    """Whether this thread is capturing for ``ember.export`` (not ``ember.compile``, whose
    capture shares export's machinery, nor ``ember.jit.trace``)."""
    from ._compile._capture import current_compile
    from .export._capture import _LOCAL

    cap = _LOCAL.__dict__.get("capture")
    return cap is not None and cap.kind == "export" and current_compile() is None


def wrap_numpy(fn):
    """``fn``, a function over NumPy arrays, as one over tensors: tensor arguments (nested
    in lists, tuples and dicts too) arrive as arrays (``Tensor.numpy()``), returned arrays
    become tensors (``ember.as_tensor``). As in PyTorch's eager mode, no gradient flows
    through NumPy code."""
    import numpy as np

    from . import as_tensor
    from ._tensor import Tensor
    from .utils._pytree import tree_map_only

    @functools.wraps(fn)
    def wrap(*args, **kwargs):
        args, kwargs = tree_map_only(Tensor, lambda x: x.numpy(), (args, kwargs))
        out = fn(*args, **kwargs)
        return tree_map_only(np.ndarray, as_tensor, out)

    return wrap


def nested_compile_region(fn=None, *, options=None, max_reuse_entries: int = 8,
                          reuse_hash_fn=None):
    """Mark ``fn`` as a region compiled once and reused (``torch.compiler.
    nested_compile_region``); usable with or without arguments. Eager calls run ``fn``;
    Ember's capture records its ops at each call (the graph repeats them), which gives the
    same results."""
    def mark(f):
        @functools.wraps(f)
        def region(*args, **kwargs):
            return f(*args, **kwargs)

        region._ember_nested_compile_region = True
        return region

    return mark if fn is None else mark(fn)


def cudagraph_mark_step_begin() -> None:
    """Mark the start of a step for CUDA-graph trees (``mode="reduce-overhead"``). Ember's
    compile records no CUDA graphs, so there is nothing to mark: it does nothing."""


_GUARD_COLLECTIVES = [False]


def set_enable_guard_collectives(enabled: bool) -> bool:
    """Record whether guard evaluation should synchronise ranks; returns the previous
    setting. Ember's guards are local checks that never diverge between ranks running the
    same program on the same shapes, so no collective is issued either way."""
    prior, _GUARD_COLLECTIVES[0] = _GUARD_COLLECTIVES[0], bool(enabled)
    return prior
