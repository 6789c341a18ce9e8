"""``torch._higher_order_ops.associative_scan``: the inclusive scan of an associative
function."""

from __future__ import annotations

from .._functorch._pytree import tree_flatten, tree_unflatten
from .._tensor import Tensor

__all__ = ["associative_scan"]


def associative_scan(combine_fn, xs, dim: int, reverse: bool = False,
                     combine_mode: str = "pointwise"):
    """``out_i = combine_fn(out_{i-1}, x_i)`` along ``dim`` (``out_0 = x_0``; from the last slice
    with ``reverse``), ``combine_fn`` associative, over a pytree of tensors. ``"pointwise"``
    mode is PyTorch's GPU kernel and, as there, wants CUDA tensors; ``"generic"`` runs
    anywhere."""
    from ember import stack  # the public op, which a capture records

    if combine_mode not in ("pointwise", "generic"):
        raise ValueError(f"Combine_mode must either 'pointwise' or 'generic', but got "
                         f"{combine_mode}")
    leaves, spec = tree_flatten(xs)
    if not leaves or any(not isinstance(t, Tensor) for t in leaves):
        raise ValueError(f"xs leaves must be Tensors {xs}")
    if combine_mode == "pointwise" and any(t.device.type != "cuda" for t in leaves):
        raise ValueError("For combine_mode='pointwise', all input tensors need to be on CUDA "
                         "or XPU")
    if any(t.dim() == 0 or t.dim() <= dim for t in leaves):
        raise ValueError("All xs leaves must at least have 'dim' number of dimensions and "
                         "scan dimension > 0")
    n = leaves[0].shape[dim]
    if any(t.shape[dim] != n for t in leaves):
        raise ValueError("All xs leaves must have the same length along the scan dimension")
    order = list(range(n - 1, -1, -1) if reverse else range(n))
    out: list = [None] * n
    acc = None
    for i in order:
        x = tree_unflatten([t.select(dim, i) for t in leaves], spec)
        acc = x if acc is None else combine_fn(acc, x)
        out[i] = tree_flatten(acc)[0]
    return tree_unflatten([stack([o[k] for o in out], dim) for k in range(len(leaves))], spec)
