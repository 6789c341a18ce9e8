"""``torch._higher_order_ops.while_loop``: ``while cond_fn(*carried): carried =
body_fn(*carried)``."""

from __future__ import annotations

from .._tensor import Tensor
from ._common import check_same_metadata

__all__ = ["while_loop"]


def while_loop(cond_fn, body_fn, carried_inputs, additional_inputs=None):
    """Run ``body_fn`` on the carried values while ``cond_fn`` of them is true; returns the
    final carried values as a tuple. ``cond_fn`` gives a bool or a one-element bool tensor;
    ``body_fn`` returns as many values as it was given, tensors of the same shapes and dtypes
    (PyTorch's check); ``additional_inputs`` are passed to both after the carried values."""
    if not isinstance(carried_inputs, (tuple, list)):
        raise RuntimeError(f"carried_inputs must be a tuple or list, got "
                           f"{type(carried_inputs)}")
    extra = tuple(additional_inputs or ())
    carried = tuple(carried_inputs)
    while True:
        go = cond_fn(*carried, *extra)
        if isinstance(go, Tensor):
            if go.numel() != 1 or go.dtype.is_floating_point:
                raise RuntimeError(f"cond_fn must return a boolean scalar tensor or a boolean "
                                   f"but got {go.dtype} of shape {tuple(go.shape)}")
        if not go:
            return carried
        out = body_fn(*carried, *extra)
        out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        check_same_metadata("while_loop", out, carried)
        carried = out
