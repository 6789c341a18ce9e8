"""Shape ops: view, reshape, expand, permute/transpose, squeeze/unsqueeze, flatten, and the
joins and splits (cat, stack, split, chunk, ...)."""

from __future__ import annotations

import numpy as np

from .._tensor import Tensor, _make
from ..autograd.grad_mode import GRAD
from ..autograd.graph import make_node_class, record
from ._core import sum_to_size, wrap_dim
from .registry import register, register_method
from .views import make_view

__all__ = ["reshape", "view", "expand", "unsqueeze", "transpose", "t", "permute"]


def _shape_arg(shape):
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
        shape = shape[0]
    return tuple(int(s) for s in shape)


def _infer_shape(shape, numel):
    """Resolve a single ``-1`` in ``shape`` (PyTorch's error text when it does not fit)."""
    if -1 not in shape:
        n = 1
        for s in shape:
            n *= s
        if n != numel:
            raise RuntimeError(f"shape '[{', '.join(map(str, shape))}]' is invalid for input of "
                               f"size {numel}")
        return shape
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    if known == 0 or numel % known:
        raise RuntimeError(f"shape '[{', '.join(map(str, shape))}]' is invalid for input of "
                           f"size {numel}")
    return tuple(numel // known if s == -1 else s for s in shape)


def _reshape_bw(node, g):
    return (g.reshape(node.ctx),)


ViewBackward0 = make_node_class("ViewBackward0", _reshape_bw)
ReshapeAliasBackward0 = make_node_class("ReshapeAliasBackward0", _reshape_bw)
UnsafeViewBackward0 = make_node_class("UnsafeViewBackward0", _reshape_bw)


def view(input, *shape):
    """A view with a new shape; an error where the strides do not allow one (use reshape)."""
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer, tuple, list)):
        from .. import _dtype

        return input.view_as_dtype(_dtype.to_dtype(shape[0]))
    shape = _infer_shape(_shape_arg(shape), input._data.size)
    arr = input._data.view()
    try:
        arr.shape = shape
    except AttributeError:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.") from None
    return make_view(input, arr, ViewBackward0, input._data.shape,
                     lambda b, s=shape: b.view(s))


register_method("view", view)


@register("reshape")
def reshape(input, *shape):
    """A tensor of the new shape: a view when the strides allow, a copy otherwise."""
    shape = _infer_shape(_shape_arg(shape), input._data.size)
    d = input._data
    if d.shape == shape:
        return make_view(input, d.view(), ViewBackward0, d.shape, lambda b: b)
    arr = d.reshape(shape)
    if np.shares_memory(arr, d) if arr.size and d.size else False:
        return make_view(input, arr, ViewBackward0, d.shape, lambda b, s=shape: b.reshape(s))
    out = _make(arr, input._device)
    if input.requires_grad and GRAD.enabled:
        record(UnsafeViewBackward0, out, (input,), (), d.shape)
    return out


def _expand_bw(node, g):
    return (sum_to_size(g, node.ctx),)


ExpandBackward0 = make_node_class("ExpandBackward0", _expand_bw)


def expand(input, *sizes):
    """A broadcast view (no copy); ``-1`` keeps a dimension."""
    sizes = _shape_arg(sizes)
    d = input._data
    if len(sizes) < d.ndim:
        raise RuntimeError(f"expand(torch.{input.type_name()}{{[{', '.join(map(str, d.shape))}]}}"
                           f", size=[{', '.join(map(str, sizes))}]): the number of sizes provided "
                           f"({len(sizes)}) must be greater or equal to the number of dimensions "
                           f"in the tensor ({d.ndim})")
    lead = len(sizes) - d.ndim
    target = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a "
                                   f"leading, non-existing dimension {i}")
            target.append(s)
            continue
        cur = d.shape[i - lead]
        if s == -1:
            s = cur
        elif cur != 1 and s != cur:
            raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing "
                               f"size ({cur}) at non-singleton dimension {i}.  Target sizes: "
                               f"[{', '.join(map(str, sizes))}].  Tensor sizes: "
                               f"[{', '.join(map(str, d.shape))}]")
        target.append(s)
    target = tuple(target)
    if target == d.shape:
        return make_view(input, d.view(), ViewBackward0, d.shape, lambda b: b)
    arr = np.broadcast_to(d, target) if isinstance(d, np.ndarray) else \
        _xp(input).broadcast_to(d, target)
    return make_view(input, arr, ExpandBackward0, d.shape, lambda b, s=target: b.expand(s))


def _xp(t):
    from ._core import xp_of

    return xp_of(t)


register_method("expand", expand)
register_method("expand_as", lambda self, other: expand(self, other._data.shape))


def _unsqueeze_bw(node, g):
    return (g.squeeze(node.ctx),)


UnsqueezeBackward0 = make_node_class("UnsqueezeBackward0", _unsqueeze_bw)


@register("unsqueeze")
def unsqueeze(input, dim):
    """Insert a size-one dimension at ``dim``."""
    d = input._data
    dim = wrap_dim(dim, d.ndim + 1)
    arr = d.reshape(d.shape[:dim] + (1,) + d.shape[dim:])
    return make_view(input, arr, UnsqueezeBackward0, dim, lambda b, k=dim: b.unsqueeze(k))


def _transpose_bw(node, g):
    d0, d1 = node.ctx
    return (g.transpose(d0, d1),)


TransposeBackward0 = make_node_class("TransposeBackward0", _transpose_bw)


@register("transpose", aliases=("swapaxes", "swapdims"))
def transpose(input, dim0, dim1):
    """Swap two dimensions (a view)."""
    d = input._data
    n = d.ndim
    d0, d1 = wrap_dim(dim0, n), wrap_dim(dim1, n)
    if n < 2:
        return make_view(input, d.view(), TransposeBackward0, (0, 0), lambda b: b)
    arr = d.swapaxes(d0, d1)
    return make_view(input, arr, TransposeBackward0, (d0, d1),
                     lambda b, a=d0, c=d1: b.transpose(a, c))


@register("t")
def t(input):
    """Transpose a tensor of at most 2 dimensions."""
    if input._data.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{input._data.ndim}D")
    return transpose(input, 0, 1) if input._data.ndim == 2 else transpose(input, 0, 0)


def _permute_bw(node, g):
    inv = np.argsort(node.ctx)
    return (g.permute(*[int(i) for i in inv]),)


PermuteBackward0 = make_node_class("PermuteBackward0", _permute_bw)


@register("permute")
def permute(input, *dims):
    """Reorder dimensions (a view)."""
    dims = _shape_arg(dims)
    n = input._data.ndim
    if len(dims) != n:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {n} is not equal to len(dims) = {len(dims)}")
    dims = tuple(wrap_dim(d, n) for d in dims)
    if len(set(dims)) != n:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    arr = input._data.transpose(dims)
    return make_view(input, arr, PermuteBackward0, dims, lambda b, p=dims: b.permute(*p))


register_method("T", property(lambda self: permute(self, *reversed(range(self._data.ndim)))))
register_method("mT", property(lambda self: transpose(self, -2, -1)))
