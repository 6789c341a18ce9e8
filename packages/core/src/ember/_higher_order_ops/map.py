"""``torch._higher_order_ops.map``: a function over the leading dim of its inputs."""

from __future__ import annotations

from .._functorch._pytree import tree_flatten, tree_unflatten
from .._tensor import Tensor

__all__ = ["map"]


def map(f, xs, *args):
    """``stack([f(x_i, *args) for x_i in xs])``: ``xs`` a pytree of tensors sliced along their
    first dim (all of one length), the results stacked along a new first dim. Under a capture
    (``export``, ``jit.trace``) the calls are unrolled for the leading dim's length."""
    from ember import stack  # the public op, which a capture records

    leaves, spec = tree_flatten(xs)
    if not leaves or any(not isinstance(t, Tensor) for t in leaves):
        raise RuntimeError(f"Mapped xs can only consist of tensors. Got xs {xs}.")
    if any(t.dim() == 0 for t in leaves):
        raise RuntimeError("Mapped xs must have at least one dimension to map over")
    n = leaves[0].shape[0]
    if any(t.shape[0] != n for t in leaves):
        raise RuntimeError("Leaves of xs must have same leading dimension size")
    if n == 0:
        raise RuntimeError("Mapped xs must have a non-empty leading dimension")
    results = [f(tree_unflatten([t[i] for t in leaves], spec), *args) for i in range(n)]
    out_leaves = [tree_flatten(r)[0] for r in results]
    out_spec = tree_flatten(results[0])[1]
    return tree_unflatten([stack([o[k] for o in out_leaves]) for k in range(len(out_leaves[0]))],
                          out_spec)
