"""What the reductions (``ops.reduction``) and the sorting ops (``ops.sorting``) share: the
shape of a result with its reduced dims kept, and the ops that pick elements.

A picking op (max/min along a dim, sort, topk, kthvalue, median, mode, cummax) returns
``(values, indices)``; its backward routes the gradient back to the picked indices with
``scatter`` (``select_bw``). Full-tensor max/min/median and amax/amin share the gradient
evenly among tied elements instead (``evenly_bw``), as PyTorch does.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype, _factory
from .. import return_types as _return_types
from .._device import xp_of
from .._dtype import scalar_type_name
from .._tensor import Tensor, _make
from ..autograd.grad_mode import GRAD
from ..autograd.graph import record
from ._factories import shape_of
from ._promotion import wrap_dim

__all__ = ["keep_shape", "keep", "const", "not_implemented_for_bool", "nonempty", "same_nan",
           "int_arg", "along", "route_back", "evenly_bw", "select_bw", "picked", "pick_along"]


def keep_shape(shape, dims):
    """``shape`` reduced over ``dims`` (None: all) with the reduced dims kept as size one."""
    if dims is None:
        return (1,) * len(shape)
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


def keep(t: Tensor, shape, dims, keepdim: bool = False) -> Tensor:
    """``t`` (reduced over ``dims`` of ``shape``) with the reduced dims back as size one."""
    if keepdim:
        return t
    ks = keep_shape(shape, dims)
    return t if shape_of(t) == ks else t.reshape(ks)


def const(arr, like: Tensor) -> Tensor:
    """An array computed from ``like`` as a tensor outside the graph (masks, counts)."""
    return _make(arr, like._device)


def not_implemented_for_bool(input, kernel):
    """PyTorch has no bool kernel for some selections; it says so in these words."""
    if input._data.dtype.kind == "b":
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')


def no_complex(input, message: str, error=RuntimeError) -> None:
    """Ordering ops refuse complex numbers (they have no order), in PyTorch's words."""
    if input._data.dtype in _dtype.COMPLEX_NP:
        raise error(message)


def no_complex_kernel(input, kernel: str) -> None:
    """``no_complex`` with PyTorch's dispatch error (``"kthvalue_cpu" not implemented for
    'ComplexFloat'``)."""
    dt = input._data.dtype
    if dt in _dtype.COMPLEX_NP:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{scalar_type_name(dt)}\'')


def nonempty(name, d, axis):
    if d.ndim and d.shape[axis] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {axis} to have non-zero size.")


def same_nan(a, b, xp):
    """``a == b`` where NaN equals NaN (the mask of the elements a reduction picked)."""
    mask = a == b
    if a.dtype in _dtype.FLOATING_NP:
        mask |= xp.isnan(a) & xp.isnan(b)
    return mask


#: PyTorch's TypeError for a ``dim`` of another type than int, by the ops that have more
#: than one overload (the others name the argument)
_OVERLOADED = {
    "max": "max() received an invalid combination of arguments - got (Tensor, {}), but "
           "expected one of:\n * (Tensor input, *, Tensor out = None)\n * (Tensor input, "
           "Tensor other, *, Tensor out = None)\n * (Tensor input, int dim, bool keepdim = "
           "False, *, tuple of Tensors out = None)\n",
    "sort": "sort() received an invalid combination of arguments - got (Tensor, {}), but "
            "expected one of:\n * (Tensor input, *, bool stable, int dim = -1, bool descending "
            "= False, tuple of Tensors out = None)\n * (Tensor input, int dim = -1, bool "
            "descending = False, *, tuple of Tensors out = None)\n",
    "argsort": "argsort() received an invalid combination of arguments - got (Tensor, {}), "
               "but expected one of:\n * (Tensor input, *, bool stable, int dim = -1, bool "
               "descending = False, Tensor out = None)\n * (Tensor input, int dim = -1, bool "
               "descending = False)\n",
}
_OVERLOADED["min"] = _OVERLOADED["max"].replace("max()", "min()")


def int_arg(value, fname: str, pos: int | None = 2, what: str = "dim"):
    """``value`` unless it is no int (a bool, a float, None, a tuple): then PyTorch's
    TypeError, for the call ``fname(input, ...)`` with ``value`` at position ``pos`` (None:
    a keyword-only argument)."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        tp = type(value).__name__
        if what == "dim" and fname in _OVERLOADED:
            raise TypeError(_OVERLOADED[fname].format(tp))
        where = "" if pos is None else f" (position {pos})"
        raise TypeError(f"{fname}(): argument '{what}'{where} must be int, not {tp}")
    return value


def along(d, dim, fname=None, pos=2):
    """``(array, axis, restore)``: a 0-dim array seen as 1-D for along-a-dim ops. ``fname``
    (and ``pos``): the op, whose TypeError a ``dim`` that is no int raises."""
    if dim.__class__ is not int and fname is not None:
        int_arg(dim, fname, pos)
    if d.ndim:
        return d, wrap_dim(dim, d.ndim), lambda a: a
    wrap_dim(dim, 0)
    return d.reshape(1), 0, lambda a: a.reshape(())


def route_back(g, indices, dim, shape, keepdim=True):
    """The gradient of picking ``indices`` along ``dim``: ``g`` scattered into zeros."""
    if not shape:
        return g.reshape(())
    if not keepdim:
        g = g.unsqueeze(dim)
        indices = indices.unsqueeze(dim)
    return _factory.zeros(shape, dtype=g.dtype, device=g.device).scatter(dim, indices, g)


def evenly_bw(node, g):
    """Full max/min/median and amax/amin: the gradient is shared evenly by the tied maxima."""
    (x,) = node.saved
    dims, keepdim = node.ctx
    xd = x._data
    shape = xd.shape
    mask = same_nan(xd, node.output(False)._data.reshape(keep_shape(shape, dims)), xp_of(x))
    count = mask.sum(axis=dims, keepdims=True)
    return (keep(g, shape, dims, keepdim) / const(count, x) * const(mask, x),)


def select_bw(node, g):
    """Ops that pick one element per slice: the gradient goes to the returned index."""
    (indices,) = node.saved
    dim, keepdim, shape = node.ctx
    return (route_back(g, indices, dim, shape, keepdim),)


def c_order(arr):
    """``arr`` laid out as PyTorch allocates a reduction's or a scan's result: C order, with
    C strides on its size-1 dims too (NumPy's results keep the input's layout: a cumsum of
    a channels-last tensor, ``sum(dim, keepdim=True)``'s kept dim)."""
    if not hasattr(arr, "flags") or not arr.ndim:
        return arr
    if not arr.flags.c_contiguous:
        return xp_of(arr).ascontiguousarray(arr)
    if 1 not in arr.shape or not arr.size:
        return arr
    # a stride 0 on a size-1 dim (NumPy's keepdims, einsum) is reported as the C stride by
    # ``Tensor.stride()`` (``_memory_format.unit_dim_strides``): only another stride there
    # needs the view rebuilt (``as_strided`` costs microseconds)
    strides, st, same = [], arr.itemsize, True
    for n, s in zip(reversed(arr.shape), reversed(arr.strides)):
        strides.append(st)
        if s != st and (n != 1 or s):
            same = False
        st *= n
    if same:
        return arr
    strides = tuple(reversed(strides))
    return _dtype.strided_view(xp_of(arr), arr, arr.shape, strides)


def like_layout(arr, like):
    """``arr`` (C order) laid out as ``empty_like(like)`` would be: ``like``'s strides when
    it is dense, else its dims ordered by stride (what PyTorch's sort returns)."""
    from .. import _memory_format as _mf

    if not hasattr(like, "flags") or like.flags.c_contiguous or arr.ndim < 2:
        return arr
    order = _mf.preserve_order(like)
    if order is None:
        return arr
    inverse = [0] * len(order)
    for k, ax in enumerate(order):
        inverse[ax] = k
    return xp_of(arr).ascontiguousarray(arr.transpose(order)).transpose(inverse)


def picked(input, values, indices, name, node_cls, ctx, like=None):
    """The ``(values, indices)`` named tuple of a selecting op, values recorded for autograd
    (the backward reads the indices, saved with a version check like PyTorch's). The
    results are in C order, or laid out as ``like`` (an array: sort's input) when given."""
    dev = input._device
    if like is None:
        values, indices = c_order(values), c_order(indices)
    else:
        values, indices = like_layout(values, like), like_layout(indices, like)
    vals, idx = _make(values, dev), _make(indices, dev)
    if input.requires_grad and GRAD.enabled:
        record(node_cls, vals, (input,), (idx,), ctx)
    return getattr(_return_types, name)(vals, idx)


def pick_along(input, dim, keepdim, name, index_of, node_cls, pos=2, empty_name=None):
    """Select one element per slice along ``dim``; ``index_of(a, axis, xp)`` returns the
    chosen positions with the axis kept as size one. ``pos``: the position of ``dim`` in
    ``name``'s call; ``empty_name``: the op the error of an empty dim names, if not ``name``."""
    d = input._data
    xp = xp_of(input)
    a, axis, restore = along(d, dim, name, pos)
    nonempty(empty_name or name, a, axis)
    idx = index_of(a, axis, xp).astype(np.int64, copy=False)
    values = xp.take_along_axis(a, idx, axis)
    if not keepdim:
        idx, values = idx.squeeze(axis), values.squeeze(axis)
    return picked(input, restore(values), restore(idx), name, node_cls,
                  (axis, keepdim, d.shape))
