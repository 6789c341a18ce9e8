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


def picked(input, values, indices, name, node_cls, ctx):
    """The ``(values, indices)`` named tuple of a selecting op, values recorded for autograd
    (the backward reads the indices, saved with a version check like PyTorch's)."""
    dev = input._device
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
