"""``torch._higher_order_ops.scan``: a carried value through the slices of ``xs``."""

from __future__ import annotations

from .._functorch._pytree import tree_flatten, tree_unflatten
from .._tensor import Tensor

__all__ = ["scan"]


def _slices(leaves, dim: int, n: int):
    return [[t.select(dim, i) for t in leaves] for i in range(n)]


def scan(combine_fn, init, xs, *, dim: int = 0, reverse: bool = False,
         additional_inputs=None):
    """``carry, y_i = combine_fn(carry, x_i)`` over the slices ``x_i`` of ``xs`` along ``dim``
    (from the last with ``reverse``): returns ``(final carry, ys)``, the ``y_i`` stacked along
    ``dim`` at their slices' positions. ``init`` and ``xs`` are pytrees of tensors (``xs``'s
    leaves share the scanned length); ``combine_fn`` returns a carry of ``init``'s structure,
    shapes and dtypes."""
    from ember import stack  # the public op, which a capture records

    extra = tuple(additional_inputs or ())
    x_leaves, x_spec = tree_flatten(xs)
    init_leaves, init_spec = tree_flatten(init)
    if not x_leaves or any(not isinstance(t, Tensor) for t in x_leaves):
        raise RuntimeError("xs must be a pytree of tensors with at least one leaf")
    if any(not isinstance(t, Tensor) for t in init_leaves):
        raise RuntimeError("All init leaves must be a Tensor")
    if any(t.dim() <= dim or t.shape[dim] == 0 for t in x_leaves):
        raise RuntimeError("All xs leaves must at least have 'dim' number of dimensions and "
                           "scan dimension > 0")
    n = x_leaves[0].shape[dim]
    if any(t.shape[dim] != n for t in x_leaves):
        raise RuntimeError("All xs leaves must have the same length along the scan dimension")
    carry = init
    ys: list = [None] * n
    order = range(n - 1, -1, -1) if reverse else range(n)
    slices = _slices(x_leaves, dim, n)
    for i in order:
        out = combine_fn(carry, tree_unflatten(slices[i], x_spec), *extra)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise RuntimeError("combine_fn must return a tuple (next_carry, y)")
        carry, y = out
        carry_leaves, carry_spec = tree_flatten(carry)
        if carry_spec != init_spec:
            raise RuntimeError("The tree structure of the inits and the carries are not "
                               f"identical: {init_spec} vs {carry_spec}")
        for a, b in zip(carry_leaves, init_leaves):
            if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
                raise RuntimeError(f"The shape or dtype of a carry changed: "
                                   f"{tuple(b.shape)} {b.dtype} -> {tuple(a.shape)} {a.dtype}")
        ys[i] = y
    y_leaves = [tree_flatten(y)[0] for y in ys]
    y_spec = tree_flatten(ys[0])[1]
    stacked = [stack([leaves[k] for leaves in y_leaves], dim)
               for k in range(len(y_leaves[0]))]
    return carry, tree_unflatten(stacked, y_spec)
