"""Shape ops: views (view, reshape, expand, permute/transpose, squeeze/unsqueeze, flatten,
narrow, select, split, diagonal, as_strided, ...) and their in-place forms (``t_``,
``squeeze_``, ``as_strided_``, ...), the joins (cat, stack and their variants), and the
copying rearrangements (repeat, tile, flip, roll, rot90, tril/triu, diag, diag_embed).

Views go through ``make_view`` with a ``view_fn`` that replays them on the base, so that an
in-place op on a view writes through and rewrites the base's history. Selections (narrow,
select, split, unbind) are basic indexing (``indexing.basic_view``); their backward, and that
of diagonal, scatters the gradient into zeros (``indexing.scatter_by``).
"""

from __future__ import annotations

import dataclasses
import math
import operator

import numpy as np

from .. import _dtype
from .. import _memory_format as _mf
from .._device import check_same_device, refuse_meta, xp_of
from .._dtype import no_kernel, scalar_type_name
from .._format import shape_str
from .._size import Size
from .._sparse_tensor import _not_implemented, _SparseData
from .._tensor import Tensor, _make
from .._warn import user_stacklevel
from ..autograd.grad_mode import GRAD
from ..autograd.graph import make_node_class, record
from ._casts import cast_to
from ._factories import public, sum_to_size
from ._promotion import broadcast_shape, normalize_dims, wrap_dim
from ._signatures import check_binds
from .indexing import (
    BasicIndex,
    SelectBackward0,
    SliceBackward0,
    _scatter_bw,
    basic_view,
    scatter_by,
)
from .pointwise import copy_as
from .registry import register, register_method
from .views import StridedReplay, inplace_view, make_view, record_multi_output, storage_positions

__all__ = ["reshape", "view", "expand", "unsqueeze", "squeeze", "transpose", "t", "permute",
           "flatten", "unflatten", "ravel", "repeat", "tile", "broadcast_to",
           "broadcast_tensors", "broadcast_shapes", "cat", "stack", "hstack", "vstack",
           "dstack", "column_stack", "split", "tensor_split", "chunk", "narrow", "select",
           "unbind", "flip", "fliplr", "flipud", "roll", "rot90", "tril", "triu", "movedim",
           "diagonal", "diag", "diag_embed", "atleast_1d", "atleast_2d", "atleast_3d",
           "as_strided", "as_strided_", "as_strided_scatter", "unsafe_split",
           "unsafe_split_with_sizes", "unsafe_chunk"]


def _int_arg(fname, pname, pos, value) -> int:
    """``value`` as an int argument, or PyTorch's TypeError for one of another type."""
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{fname}(): argument '{pname}' (position {pos}) must be int, not "
                        f"{type(value).__name__}") from None


def _int_tuple(ints) -> tuple:
    """An int-list argument (a sequence, or one int as a method's varargs give it) as a
    tuple of Python ints."""
    if isinstance(ints, (tuple, list)):
        return tuple(map(operator.index, ints))
    return (operator.index(ints),)


def _infer_shape(shape, numel):
    """Resolve a single ``-1`` in ``shape`` (PyTorch's error text when it does not fit).

    The common shapes take the short way; a negative size other than ``-1`` passes here
    only when the product still fits, and the array's own reshape refuses it (see
    ``_view_array``, which reports it through ``_check_shape``)."""
    if -1 not in shape:
        n = 1
        for s in shape:
            n *= s
        if n != numel:
            _check_shape(shape, numel)
        return shape
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    if known <= 0 or numel % known or shape.count(-1) > 1:
        _check_shape(shape, numel)
    return tuple(numel // known if s == -1 else s for s in shape)


def _check_shape(shape, numel) -> None:
    """Raise PyTorch's error (``infer_size``'s, in its order) for a shape that does not fit
    ``numel`` elements; return when it does."""
    infer = None
    known = 1
    for k, s in enumerate(shape):
        if s == -1:
            if infer is not None:
                raise RuntimeError("only one dimension can be inferred")
            infer = k
        elif s >= 0:
            known *= s
        else:
            raise RuntimeError(f"invalid shape dimension {s} at index {k} of shape "
                               f"[{shape_str(shape)}]")
    if numel == known or (infer is not None and known > 0 and numel % known == 0):
        if infer is not None and known == 0:
            raise RuntimeError(f"cannot reshape tensor of 0 elements into shape "
                               f"[{shape_str(shape)}] because the unspecified dimension size "
                               "-1 can be any value and is ambiguous")
        return
    raise RuntimeError(f"shape '[{shape_str(shape)}]' is invalid for input of size {numel}")


def _reshape_bw(node, g):
    return (g.reshape(node.ctx),)


ViewBackward0 = make_node_class("ViewBackward0", _reshape_bw)
UnsafeViewBackward0 = make_node_class("UnsafeViewBackward0", _reshape_bw)


def _view_array(d, shape):
    """``d`` reshaped without a copy, or None when its strides do not allow it; with
    PyTorch's strides (``computeStride``), which NumPy's differ from on size-1 dims."""
    arr = d.view()
    try:
        arr.shape = shape
    except AttributeError:
        return None
    except ValueError:  # a negative size whose product still fits: PyTorch's error
        _check_shape(shape, d.size)
        raise
    if d.flags.c_contiguous and (1 not in d.shape or d.shape[-1] != 1 and arr.shape != d.shape) \
            or not d.size \
            or not d.ndim:
        # NumPy's strides are PyTorch's: a C-contiguous array takes the new shape's C strides
        # (``computeStride`` gives those too: one chunk; NumPy keeps the strides only of a
        # view to the same shape), and empty arrays keep none
        return arr
    strides = _view_strides(d, shape)
    if strides is None:
        return None
    if arr.strides != strides:
        arr = _strided_view(d, shape, strides)
    return arr


def _view_strides(d, shape):
    """PyTorch's ``computeStride``: the strides (bytes) of ``d`` viewed as ``shape``, or None
    when a dim of the view would span two chunks of ``d`` that are not contiguous with each
    other. Size-1 dims of ``d`` join any chunk; those of the view take the stride the chunk
    reaches there."""
    old_shape = d.shape
    old = d.strides
    if 0 in old and 1 in old_shape:  # the strides ``stride()`` reports for NumPy's newaxis
        old = _mf.unit_dim_strides(old_shape, old)
    new = [0] * len(shape)
    view_d = len(shape) - 1
    base = old[-1]
    tensor_numel = view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (old_shape[tensor_d - 1] != 1
                             and old[tensor_d - 1] != tensor_numel * base):
            while view_d >= 0 and (view_numel < tensor_numel or shape[view_d] == 1):
                new[view_d] = view_numel * base
                view_numel *= shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                base = old[tensor_d - 1]
                tensor_numel = view_numel = 1
    return tuple(new) if view_d == -1 else None


def _view_dtype(input, dtype):
    """The same memory read as ``dtype`` (the last dim rescales with the element size); not
    differentiable."""
    dt = _dtype.to_dtype(dtype)
    d = input._data
    old, new = d.itemsize, dt.np.itemsize
    if old != new:
        names = (f"{scalar_type_name(d.dtype)} as {scalar_type_name(dt.np)} "
                 "(different element sizes)")
        if d.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 to view {names}")
        strides = input.stride()
        if new > old:  # PyTorch's checks in its order
            ratio = new // old
            if d.shape[-1] % ratio:
                raise RuntimeError(f"self.size(-1) must be divisible by {ratio} to view "
                                   f"{names}, but got {d.shape[-1]}")
            if input.storage_offset() % ratio:
                raise RuntimeError(f"self.storage_offset() must be divisible by {ratio} to "
                                   f"view {names}, but got {input.storage_offset()}")
        if strides[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 to view {names}, but got "
                               f"{strides[-1]}")
        if new > old:
            for k, st in enumerate(strides[:-1]):
                if st % ratio:
                    raise RuntimeError(f"self.stride({k}) must be divisible by {ratio} to view "
                                       f"{names}, but got {st}")
    # a non-differentiable view, as in PyTorch: no ``_base``; the version counter and the
    # storage are shared
    from .._storage import storage_of

    out = _make(d.view(dt.np), input._device)
    vc = getattr(input, "_vc", None)
    if vc is None:
        vc = input._vc = [0]
    out._vc = vc
    out._extra = {"storage": storage_of(input)}
    return out


def view(input, size=None, dtype=None):
    """A view with a new shape (an error where the strides do not allow one: use reshape),
    or ``view(dtype)`` (``view(dtype=...)``): the same memory read as another dtype."""
    if isinstance(size, _dtype.dtype):
        return _view_dtype(input, size)
    if size is None or dtype is not None:
        return _view_dtype(input, _view_overload(size, dtype))
    shape = _infer_shape(_int_tuple(size), input._data.size)
    arr = _view_array(input._data, shape)
    if arr is None:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.")
    return make_view(input, arr, ViewBackward0, input._data.shape,
                     lambda b, s=shape: b.view(s))


def _view_overload(size, dtype):
    """``view``'s dtype overload given by keyword: the dtype, or PyTorch's error for a call
    that matches neither overload."""
    if size is None and isinstance(dtype, _dtype.dtype):
        return dtype
    got = ", ".join(f"{n}={type(v).__name__}" for n, v in (("size", size), ("dtype", dtype))
                    if v is not None)
    raise TypeError(f"view() received an invalid combination of arguments - got ({got}), but "
                    "expected one of:\n * (torch.dtype dtype)\n * (tuple of ints size)\n")


register_method("view", view, varargs=True)
register_method("view_as", lambda self, other: view(self, other._data.shape))


@register("reshape", varargs=True, tags=("view_if_possible",))
def reshape(input, shape):
    """A tensor of the new shape: a view when the strides allow, a copy otherwise."""
    shape = _infer_shape(_int_tuple(shape), input._data.size)
    d = input._data
    arr = _view_array(d, shape)
    if arr is not None:
        return make_view(input, arr, ViewBackward0, d.shape, lambda b, s=shape: b.reshape(s))
    out = _make(d.reshape(shape), input._device)
    if input.requires_grad and GRAD.enabled:
        record(UnsafeViewBackward0, out, (input,), (), d.shape)
    return out


register_method("reshape_as", lambda self, other: reshape(self, other._data.shape))


@register("ravel", tags=("view_if_possible",))
def ravel(input):
    """The elements as a contiguous 1-D tensor: a view of a contiguous input, else a copy
    (``contiguous().view(-1)``, as PyTorch; ``reshape`` would view more strided inputs)."""
    if not input._data.flags.c_contiguous:
        input = copy_as(input)
    return reshape(input, (-1,))


@register("flatten", tags=("view_if_possible",))
def flatten(input, start_dim=0, end_dim=-1):
    """Merge dims ``start_dim..end_dim`` into one (a view when the strides allow)."""
    d = input._data
    s = wrap_dim(start_dim, d.ndim)
    e = wrap_dim(end_dim, d.ndim)
    if d.ndim == 0:
        return reshape(input, (1,))
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    n = 1
    for k in range(s, e + 1):
        n *= d.shape[k]
    return reshape(input, d.shape[:s] + (n,) + d.shape[e + 1:])


@register("unflatten", view=True)
def unflatten(input, dim, sizes):
    """Split dim ``dim`` into ``sizes`` (one of them may be -1)."""
    d = input._data
    dim = wrap_dim(dim, d.ndim)
    sizes = _int_tuple(sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    try:
        if not d.ndim:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        size = d.shape[dim]
        inferred = _infer_shape(sizes, size)
    except (RuntimeError, IndexError) as exc:  # PyTorch's ``handle_unflatten_exception``
        if "is invalid for input of size" in str(exc):
            raise RuntimeError(f"unflatten: Provided sizes [{shape_str(sizes)}] don't multiply "
                               f"up to the size of dim {dim} ({size}) in the input tensor"
                               ) from None
        raise RuntimeError(f"unflatten got an unexpected error:\n{exc}") from None
    return view(input, d.shape[:dim] + inferred + d.shape[dim + 1:])


# -- expand / broadcast --------------------------------------------------------------------

def _expand_bw(node, g):
    return (sum_to_size(g, node.ctx),)


ExpandBackward0 = make_node_class("ExpandBackward0", _expand_bw)


def expand(input, size):
    """A broadcast view (no copy); ``-1`` keeps a dimension."""
    sizes = _int_tuple(size)
    d = input._data
    if len(sizes) < d.ndim:
        raise RuntimeError(f"expand(ember.{input.type_name()}{{[{shape_str(d.shape)}]}}, "
                           f"size=[{shape_str(sizes)}]): the number of sizes provided "
                           f"({len(sizes)}) must be greater or equal to the number of dimensions "
                           "in the tensor "
                           f"({d.ndim})")
    if sizes == d.shape:
        return make_view(input, d.view(), ViewBackward0, d.shape, lambda b: b)
    target, strides, repeats = _expand_geometry(sizes, d)
    if target == d.shape:
        return make_view(input, d.view(), ViewBackward0, d.shape, lambda b: b)
    if not repeats:
        # no element repeats (only new or kept dims of size 1, or sizes 0), so the view
        # stays writable, as PyTorch's (whose in-place ops refuse only a view with internal
        # overlap); ``arange(n).expand(1, -1)`` buffers are filled in place by their models'
        # init
        arr = _view_array(d, target) if math.prod(target) == d.size else None
        if arr is None or arr.strides != strides:
            arr = _strided_view(d, target, strides)
    else:
        arr = xp_of(input).broadcast_to(d, target)
        if 1 in target and arr.strides != strides:  # NumPy gives size-1 dims stride 0
            arr = _strided_view(arr, target, strides)
    return make_view(input, arr, ExpandBackward0, d.shape, lambda b, s=target: b.expand(s))


def _expand_geometry(sizes, d):
    """``(shape, strides in bytes, whether an element repeats)`` of ``d`` expanded to
    ``sizes``, as PyTorch's ``inferExpandGeometry`` (from the last dim, so its errors name
    the last mismatch)."""
    n = len(sizes)
    in_shape, in_strides = d.shape, d.strides
    lead = n - len(in_shape)
    shape, strides = [0] * n, [0] * n
    repeats = False
    for i in range(n - 1, -1, -1):
        k = i - lead
        if k >= 0:
            cur, st = in_shape[k], in_strides[k]
        else:
            cur, st = 1, (shape[i + 1] * strides[i + 1] if i + 1 < n else d.itemsize)
        s = sizes[i]
        if s == -1:
            if k < 0:
                raise RuntimeError(f"The expanded size of the tensor ({s}) isn't allowed in a "
                                   f"leading, non-existing dimension {i}")
            s = cur
        elif s != cur:
            if cur != 1:
                raise RuntimeError(f"The expanded size of the tensor ({s}) must match the "
                                   f"existing size ({cur}) at non-singleton dimension {i}.  "
                                   f"Target sizes: [{shape_str(sizes)}].  Tensor sizes: "
                                   f"[{shape_str(d.shape)}]")
            if s < 0:
                raise RuntimeError("numel: integer multiplication overflow")
            st = 0
            repeats = repeats or s > 1
        shape[i], strides[i] = s, st
    return tuple(shape), tuple(strides), repeats


register_method("expand", expand, varargs=True)
register_method("expand_as", lambda self, other: expand(self, other._data.shape))


def _sum_to_size(self, size):
    """``self`` summed down to ``size``, to which it must be expandable."""
    size = _int_tuple(size)
    shape = self._data.shape
    lead = len(shape) - len(size)
    if lead < 0 or any(s != 1 and s != n for s, n in zip(size, shape[lead:])):
        raise RuntimeError(f"size {{[{shape_str(size)}]}} is not expandable to size "
                           f"{{[{shape_str(shape)}]}}.")
    return sum_to_size(self, size)


register_method("sum_to_size", _sum_to_size, varargs=True)


def _resize_(self, size, *, memory_format=None):
    """Give ``self`` the shape ``size`` in place, as PyTorch does: its elements become those
    its storage holds from its storage offset on, laid out densely (in C order, or in
    ``memory_format``). The memory stays shared: a view stays a view of its base. A storage
    too small grows (the new bytes zeroed; uninitialised in PyTorch), and only ``self`` moves
    to it (see ``_grow_storage``). The same shape without a ``memory_format`` leaves the
    tensor as it is."""
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    size = _int_tuple(size)
    if any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(size)}: "
                           f"[{shape_str(size)}]")
    from .. import _memory_format as mf

    if memory_format is None:
        if size == self._data.shape:
            return self
        order = None
    else:
        order = mf.format_order(mf.check(memory_format, "resize_"), len(size))
    _restride(self, size, mf.dense_strides(size, order))
    self._bump_version()
    return self


def _restride(self, size, strides) -> None:
    """Point ``self`` at the geometry ``size``/``strides`` from its storage offset, growing
    the storage when it is too small (``resize_``)."""
    from .._storage import storage_of

    storage = storage_of(self)
    offset = self.storage_offset()
    d = self._data
    need = 0 if 0 in size else \
        (offset + sum((n - 1) * st for n, st in zip(size, strides)) + 1) * d.itemsize
    if need > storage.nbytes():
        storage = _grow_storage(self, storage, need)
    self._data = storage._typed(d.dtype, offset, size, strides)
    extra = self._extra_dict()
    if self._base is not None:  # still a view of its base, now by storage geometry
        extra["view_fn"] = StridedReplay(size, strides, offset)
        extra["strided"] = True
    else:
        extra["geom"] = True  # views made of it before no longer replay on it


def _grow_storage(self, storage, nbytes):
    """A storage of ``nbytes`` that starts with ``storage``'s bytes, now ``self``'s.

    PyTorch grows the storage itself, so that every tensor on it sees the new memory.
    Ember's storage is the memory of arrays, which cannot move under them: only ``self``
    moves, and a view becomes a tensor of its own memory (as after ``set_``); its base, its
    other views and older views of ``self`` keep the old memory."""
    from .._device import xp_of
    from .._storage import UntypedStorage

    dev = self._device
    buf = xp_of(dev).zeros(nbytes, dtype=np.uint8)
    old = storage._bytes()
    buf[:old.size] = old
    grown = UntypedStorage._over(buf, dev)
    extra = self._extra_dict()
    if self._base is not None:
        self._base = None
        extra.pop("view_fn", None)
        extra.pop("strided", None)
    extra["storage"] = grown
    return grown


register_method("resize_", _resize_, varargs=True)


@register("broadcast_to", varargs=True, view=True)
def broadcast_to(input, size):
    """``input.expand(size)``."""
    return expand(input, size)


def broadcast_shapes(*shapes):
    """The shape all ``shapes`` broadcast to (PyTorch's error when they do not)."""
    shapes = [(s,) if isinstance(s, (int, np.integer)) else tuple(s) for s in shapes
              if s is not None]
    for shape in shapes:
        for k, n in enumerate(shape):
            if not isinstance(n, (int, np.integer)):
                raise TypeError(f"ember.Size() takes an iterable of 'int' (item {k} is "
                                f"'{type(n).__name__}')")
    if not shapes:
        return Size(())
    common = [1] * max(len(s) for s in shapes)
    for k, shape in enumerate(shapes):
        for i in range(-1, -1 - len(shape), -1):
            if shape[i] == common[i]:
                continue
            if common[i] == 1:
                if shape[i] < 0:
                    raise ValueError("Attempting to broadcast a dimension with negative length!")
                common[i] = shape[i]
                continue
            if shape[i] != 1:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {shape[i]} "
                                   f"at {i}! Mismatching argument at index {k} had {shape}; but "
                                   f"expected shape should be broadcastable to {common}")
    return Size(common)


register("broadcast_shapes", method=False, differentiable=False)(broadcast_shapes)


@register("broadcast_tensors", method=False, view=True)
def broadcast_tensors(*tensors):
    """``tensors`` expanded (as views) to their common broadcast shape."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = ()
    for t in tensors:
        shape = broadcast_shape(shape, t._data.shape)
    # a tensor of the common shape already is returned itself, as PyTorch's expand_outplace
    return tuple(t if t._data.shape == shape else expand(t, shape) for t in tensors)


# -- unsqueeze / squeeze / transpose / permute ---------------------------------------------

def _unsqueeze_bw(node, g):
    return (g.squeeze(node.ctx),)


UnsqueezeBackward0 = make_node_class("UnsqueezeBackward0", _unsqueeze_bw)


@register("unsqueeze", view=True)
def unsqueeze(input, dim):
    """Insert a size-one dimension at ``dim``."""
    d = input._data
    if dim.__class__ is not int:
        dim = _int_arg("unsqueeze", "dim", 1, dim)
    dim = wrap_dim(dim, d.ndim + 1)
    if d.__class__ is _SparseData:  # a sparse tensor's array (ember._sparse_tensor): its own
        return input.unsqueeze(dim)
    shape = d.shape
    arr = d.reshape(shape[:dim] + (1,) + shape[dim:])  # never a copy: a size-1 dim
    # PyTorch's stride of the new dim (the array module's differs for a non-contiguous or
    # empty array; only ``stride()`` shows it)
    st = d.itemsize if dim == len(shape) else shape[dim] * d.strides[dim]
    # the other dims keep ``d``'s strides (a reshape may recompute those of its size-1 dims;
    # an empty array has none: the reshape's C strides stand in)
    old = d.strides if d.size else arr.strides[:dim] + arr.strides[dim + 1:]
    strides = old[:dim] + (st,) + old[dim:]
    if arr.strides != strides:
        arr = _strided_view(d, arr.shape, strides)
    return make_view(input, arr, UnsqueezeBackward0, dim, lambda b, k=dim: b.unsqueeze(k))


def _squeeze_bw(node, g):
    return (g.reshape(node.ctx),)


SqueezeBackward0 = make_node_class("SqueezeBackward0", _squeeze_bw)
SqueezeBackward1 = make_node_class("SqueezeBackward1", _squeeze_bw)
SqueezeBackward2 = make_node_class("SqueezeBackward2", _squeeze_bw)


@register("squeeze", varargs=True, view=True)
def squeeze(input, dim=None):
    """Remove size-one dims: all of them, or those in ``dim`` (an int or a tuple) that have
    size one (PyTorch 2: other dims in ``dim`` are left alone)."""
    d = input._data
    node, arr = _squeezed(d, dim, (SqueezeBackward0, SqueezeBackward1, SqueezeBackward2))
    return make_view(input, arr, node, d.shape, lambda b, a=dim: b.squeeze(a))


def _squeezed(d, dim, nodes):
    """``(node class, view)`` of ``squeeze(dim)`` on array ``d``; ``nodes``: the node classes
    of squeezing all dims, one int dim, a tuple of dims."""
    if dim is None:
        node = nodes[0]
        axes = tuple(k for k, s in enumerate(d.shape) if s == 1)
    else:
        node = nodes[1] if isinstance(dim, (int, np.integer)) else nodes[2]
        axes = tuple(k for k in normalize_dims(dim, d.ndim) if d.shape[k] == 1)
    return node, d.squeeze(axes) if axes else d.view()


def _transpose_bw(node, g):
    d0, d1 = node.ctx
    return (g.transpose(d0, d1),)


TransposeBackward0 = make_node_class("TransposeBackward0", _transpose_bw)


@register("transpose", view=True)
def transpose(input, dim0, dim1):
    """Swap two dimensions (a view)."""
    d = input._data
    n = d.ndim
    d0, d1 = wrap_dim(dim0, n), wrap_dim(dim1, n)
    try:
        arr = d.view() if n < 2 else d.swapaxes(d0, d1)
    except NotImplementedError:  # a sparse tensor's array refuses: its own transpose
        return input.transpose(d0, d1)
    if n < 2:
        return make_view(input, arr, TransposeBackward0, (0, 0), lambda b: b)
    return make_view(input, arr, TransposeBackward0, (d0, d1),
                     lambda b, a=d0, c=d1: b.transpose(a, c))


@register("swapaxes", view=True)
def swapaxes(input, axis0, axis1):
    """``transpose(axis0, axis1)``, with NumPy's argument names (a view)."""
    return transpose(input, axis0, axis1)


@register("swapdims", view=True)
def swapdims(input, dim0, dim1):
    """``transpose(dim0, dim1)`` (a view)."""
    return transpose(input, dim0, dim1)


def _t_bw(node, g):
    return (t(g) if g.__class__ is Tensor else g.t(),)


TBackward0 = make_node_class("TBackward0", _t_bw)


@register("t", view=True)
def t(input):
    """Transpose a tensor of at most 2 dimensions."""
    d = input._data
    if d.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {d.ndim}D")
    try:
        arr = d.T
    except NotImplementedError:  # a sparse tensor's array refuses: its own t()
        return input.t()
    return make_view(input, arr, TBackward0, None, t)


def _permute_bw(node, g):
    inv = np.argsort(node.ctx).tolist()
    return (permute(g, inv) if g.__class__ is Tensor else g.permute(inv),)


PermuteBackward0 = make_node_class("PermuteBackward0", _permute_bw)


@register("permute", varargs=True, view=True)
def permute(input, dims):
    """Reorder dimensions (a view)."""
    dims = _int_tuple(dims)
    if input._data.__class__ is _SparseData:
        return input.permute(dims)  # a sparse tensor's own (its array refuses)
    n = input._data.ndim
    if len(dims) != n:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {n} is not equal to len(dims) = {len(dims)}")
    dims = tuple(wrap_dim(d, n) for d in dims)
    if len(set(dims)) != n:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    arr = input._data.transpose(dims)
    return make_view(input, arr, PermuteBackward0, dims, lambda b, p=dims: permute(b, p))


_T_DEPRECATED = ("The use of `x.T` on tensors of dimension other than 2 to reverse their shape "
                 "is deprecated and it will throw an error in a future release. Consider "
                 "`x.mT` to transpose batches of matrices or "
                 "`x.permute(*ember.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of "
                 "a tensor.")


_WARNED_ONCE: set = set()  # PyTorch's TORCH_WARN_ONCE: each of these warnings once a process


def _warn_once(message: str) -> None:
    if message in _WARNED_ONCE:
        return
    _WARNED_ONCE.add(message)
    import warnings

    warnings.warn(message, UserWarning, stacklevel=user_stacklevel())


def _deprecated_0d(what: str, rest: str) -> None:
    _warn_once(f"{what} is deprecated on 0-D tensors. {rest}")


def _reversed_dims(self):
    """``Tensor.T``: the dims reversed (deprecated, with PyTorch's warning, unless 2-D)."""
    n = self._data.ndim
    if n != 2:
        if n == 0:
            _deprecated_0d("Tensor.T", "This function is the identity in these cases.")
        else:
            _warn_once(_T_DEPRECATED)
    return permute(self, tuple(range(n - 1, -1, -1)))


def _conj_reversed_dims(self):
    """``Tensor.H``: the conjugate transpose of a matrix (a 0-D tensor's ``conj()``)."""
    n = self._data.ndim
    if n == 0:
        _deprecated_0d("Tensor.H", "Consider using x.conj().")
        return self.conj()
    if n != 2:
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {n}-D "
                           "tensor." + (" For batches of matrices, consider using tensor.mH"
                                        if n > 2 else ""))
    return transpose(self, 0, 1).conj()


def _matrix_transpose(self):
    """``Tensor.mT``: the last two dims swapped."""
    return _matrix_transposed(self, "mT")


def _matrix_transposed(self, name: str):
    """``mT``, ``mH`` or ``adjoint()`` (``name``), with PyTorch's 0-D and 1-D rules."""
    n = self._data.ndim
    if n < 2:
        if n == 0:  # deprecated, the identity
            if name == "mT":
                _deprecated_0d("Tensor.mT", "This function is the identity in these cases.")
                return self
            _deprecated_0d("Tensor.mH" if name == "mH" else "adjoint()",
                           "Consider using x.conj().")
            return self.conj()
        what = "adjoint()" if name == "adjoint" else name
        raise RuntimeError(f"tensor.{what} is only supported on matrices or batches of matrices. "
                           f"Got {n}-D tensor.")
    out = transpose(self, -2, -1)
    return out if name == "mT" else out.conj()


register_method("T", property(_reversed_dims))
register_method("mT", property(_matrix_transpose))
register_method("H", property(_conj_reversed_dims))
register_method("mH", property(lambda self: _matrix_transposed(self, "mH")))


@register("movedim", aliases=("moveaxis",), view=True)
def movedim(input, source, destination):
    """Move dims ``source`` to positions ``destination`` (a view)."""
    n = input._data.ndim
    src = (source,) if isinstance(source, (int, np.integer)) else tuple(source)
    dst = (destination,) if isinstance(destination, (int, np.integer)) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} "
                           f"dims) should contain the same number of dims as destination "
                           f"({list(dst)} dims)")
    src = tuple(wrap_dim(s, n) for s in src)
    dst = tuple(wrap_dim(s, n) for s in dst)
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(src)})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(dst)})")
    if n == 0:  # dims 0 and -1 name the one pseudo-dim of a 0-d tensor
        return permute(input, ())
    order = [None] * n
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(k for k in range(n) if k not in src)
    order = [next(rest) if o is None else o for o in order]
    return permute(input, order)


# -- selections: narrow, select, unbind, split, chunk --------------------------------------

@register("narrow", view=True)
def narrow(input, dim, start, length):
    """The view of ``length`` elements from ``start`` along ``dim``."""
    d = input._data
    if d.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    dim = wrap_dim(dim, d.ndim)
    size = d.shape[dim]
    if isinstance(start, Tensor):
        if start._data.ndim or start._data.dtype.kind not in "iu":
            raise RuntimeError("start must be an 0-dim integral Tensor.")
        start = start.item()
    elif start.__class__ is not int:
        start = _int_arg("narrow", "start", 2, start)
    if length.__class__ is not int:
        length = _int_arg("narrow", "length", 3, length)
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], "
                         f"but got {start})")
    if start < 0:
        start += size
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size "
                           f"({size}).")
    return basic_view(input, (slice(None),) * dim + (slice(start, start + length), Ellipsis),
                      SliceBackward0)


@register("select", view=True)
def select(input, dim, index):
    """The view at ``index`` along ``dim`` (that dimension removed)."""
    d = input._data
    if d.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    dim = wrap_dim(dim, d.ndim)
    if index.__class__ is not int:
        index = _int_arg("select", "index", 2, index)
    size = d.shape[dim]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"[{shape_str(d.shape)}] at dimension {dim}")
    try:
        return basic_view(input, (slice(None),) * dim + (index, Ellipsis), SelectBackward0)
    except NotImplementedError:  # a sparse tensor's array (ember._sparse_tensor): its own
        if d.__class__ is not _SparseData:
            raise
        return input.select(dim, index)


@register("unbind", view=True)
def unbind(input, dim=0):
    """The views ``select(dim, i)`` for every ``i``."""
    d = input._data
    if d.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    dim = wrap_dim(dim, d.ndim)
    if d.__class__ is _SparseData:  # a sparse tensor's array: its own select
        return tuple(select(input, dim, i) for i in range(d.shape[dim]))
    lead = (slice(None),) * dim
    views = [_view_at(input, lead + (i, Ellipsis)) for i in range(d.shape[dim])]
    ctx = (dim, tuple(v._data.shape for v in views), input.dtype)
    return record_multi_output(input, views, UnbindBackward0, ctx)


def _view_at(input, idx):
    """The view ``input[idx]`` (a basic index tuple), an output of a multi-output node."""
    return make_view(input, input._data[idx], None, None, lambda b: b[idx], True)


def _split_at(input, dim, bounds, node_cls):
    """Views along ``dim`` between consecutive ``bounds``, outputs of one ``node_cls`` node
    (PyTorch's ``SplitBackward0`` / ``SplitWithSizesBackward0``)."""
    lead = (slice(None),) * dim
    views = [_view_at(input, lead + (slice(a, b), Ellipsis))
             for a, b in zip(bounds[:-1], bounds[1:])]
    ctx = (dim, tuple(v._data.shape for v in views), input.dtype)
    return record_multi_output(input, views, node_cls, ctx)


def split(tensor, split_size_or_sections, dim=0):
    """Views of ``split_size`` along ``dim`` (the last may be smaller), or of the sizes in a
    list."""
    d = tensor._data
    if d.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    dim = wrap_dim(dim, d.ndim)
    size = d.shape[dim]
    if isinstance(split_size_or_sections, Tensor) and split_size_or_sections._data.size == 1:
        split_size_or_sections = split_size_or_sections.item()  # as PyTorch's __index__
    if isinstance(split_size_or_sections, (int, np.integer)):
        step = int(split_size_or_sections)
        if step < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got split_size="
                               f"{step}")
        if step == 0:
            if size:
                raise RuntimeError("split_size can only be 0 if dimension size is 0, but got "
                                   f"dimension size of {size}")
            return _split_at(tensor, dim, [0, 0], SplitBackward0)
        bounds = list(range(0, size, step)) + [size]
        if size == 0:
            bounds = [0, 0]
        return _split_at(tensor, dim, bounds, SplitBackward0)
    if not hasattr(split_size_or_sections, "__iter__"):
        raise TypeError("split_with_sizes(): argument 'split_sizes' (position 2) must be tuple "
                        f"of ints, not {type(split_size_or_sections).__name__}")
    sizes = [operator.index(s) for s in split_size_or_sections]
    if any(s < 0 for s in sizes):
        raise RuntimeError("split_with_sizes expects split_sizes have only non-negative entries, "
                           f"but got split_sizes={sizes}")
    if sum(sizes) != size:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} "
                           f"(input tensor's size at dimension {dim}), but got split_sizes="
                           f"{sizes}")
    return _split_at(tensor, dim, [0, *np.cumsum(sizes).tolist()], SplitWithSizesBackward0)


split._ember_param_aliases = {"split_size_or_sections": ("split_size",)}  # Tensor.split's name
register("split", view=True)(split)


@register("split_with_sizes", view=True)
def split_with_sizes(input, split_sizes, dim=0):
    """Views of the sizes in ``split_sizes`` along ``dim``."""
    return split(input, list(split_sizes), dim)


def _split_spec(name, indices_or_sections, sections, indices, tensor_indices_or_sections=None):
    """The one of PyTorch's overloads' arguments (``sections``, ``indices``,
    ``tensor_indices_or_sections``; ``indices_or_sections`` positionally) that was given."""
    given = [v for v in (indices_or_sections, sections, indices, tensor_indices_or_sections)
             if v is not None]
    if len(given) != 1:
        raise TypeError(f"{name}() expects exactly one of 'sections' (an int), 'indices' (a "
                        f"sequence of ints) or 'tensor_indices_or_sections' (a tensor), got "
                        f"{len(given)}")
    return given[0]


@register("tensor_split", view=True)
def tensor_split(input, indices_or_sections=None, dim=0, *, sections=None, indices=None,
                 tensor_indices_or_sections=None):
    """Views split into ``sections`` near-equal parts or at the ``indices`` along ``dim`` (a
    tensor: a 0-d one is the number of sections, a 1-D one the indices). Part ``k`` is
    ``input[indices[k-1]:indices[k]]``, empty where the indices descend."""
    spec = _split_spec("tensor_split", indices_or_sections, sections, indices,
                       tensor_indices_or_sections)
    d = input._data
    if d.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    dim = wrap_dim(dim, d.ndim)
    size = d.shape[dim]
    if isinstance(spec, Tensor):
        if spec._data.dtype != np.int64:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have dtype "
                               f"of long, but got {scalar_type_name(spec._data.dtype)}")
        if spec._data.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a "
                               "zero-dimensional or one-dimensional tensor, but got a tensor "
                               f"with {spec._data.ndim} dims")
        spec = spec.tolist()
    if isinstance(spec, (int, np.integer)):
        n = int(spec)
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        q, r = divmod(size, n)
        bounds = [0, *np.cumsum([q + 1] * r + [q] * (n - r)).tolist()]
        lead = (slice(None),) * dim
        return tuple(basic_view(input, lead + (slice(a, b), Ellipsis), SliceBackward0)
                     for a, b in zip(bounds[:-1], bounds[1:]))
    # NumPy's array_split: consecutive indices bound each part (clamped into [0, size]; a
    # part whose start lies past its end is empty)
    cuts = [min(max(int(i) + (size if int(i) < 0 else 0), 0), size) for i in spec]
    bounds = [0, *cuts, size]
    lead = (slice(None),) * dim
    return tuple(basic_view(input, lead + (slice(a, max(a, b)), Ellipsis), SliceBackward0)
                 for a, b in zip(bounds[:-1], bounds[1:]))


@register("chunk", view=True)
def chunk(input, chunks, dim=0):
    """At most ``chunks`` views of ``ceil(size / chunks)`` along ``dim``."""
    if input._data.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = input._data
    dim = wrap_dim(dim, d.ndim)
    size = d.shape[dim]
    if size == 0:
        return _split_at(input, dim, [0] * (chunks + 1), SplitBackward0)
    return split(input, -(-size // chunks), dim)


def _sections(name, input, spec, dim, min_dim):
    if input._data.ndim < min_dim:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dim} dimension, "
                           f"but got a tensor with {input._data.ndim} dimensions!")
    if isinstance(spec, (int, np.integer)) and spec and input._data.shape[dim] % spec:
        raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the size "
                           f"of the dimension {input._data.shape[dim]} is not divisible by the "
                           f"split_size {spec}!")
    return tensor_split(input, spec, dim)


@register("hsplit", varargs=True, view=True)
def hsplit(input, indices_or_sections=None, *, sections=None, indices=None):
    """``tensor_split`` along dim 1 (dim 0 for 1-D tensors) into ``sections`` equal parts or
    at ``indices``."""
    spec = _split_spec("hsplit", indices_or_sections, sections, indices)
    return _sections("hsplit", input, spec, 1 if input._data.ndim > 1 else 0, 1)


@register("vsplit", varargs=True, view=True)
def vsplit(input, indices_or_sections=None, *, sections=None, indices=None):
    """``tensor_split`` along dim 0 of a tensor of at least 2 dims, into ``sections`` equal
    parts or at ``indices``."""
    return _sections("vsplit", input, _split_spec("vsplit", indices_or_sections, sections,
                                                  indices), 0, 2)


@register("dsplit", varargs=True, view=True)
def dsplit(input, indices_or_sections=None, *, sections=None, indices=None):
    """``tensor_split`` along dim 2 of a tensor of at least 3 dims, into ``sections`` equal
    parts or at ``indices``."""
    return _sections("dsplit", input, _split_spec("dsplit", indices_or_sections, sections,
                                                  indices), 2, 3)


# -- joins ---------------------------------------------------------------------------------

def _tensor_list(name, tensors, empty_msg, exc=RuntimeError):
    if isinstance(tensors, Tensor):
        raise TypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, "
                        "not Tensor")
    tensors = list(tensors)
    if not tensors:
        raise exc(empty_msg)
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{_type_name(t)}")
    check_same_device(*tensors)
    return tensors


def _type_name(obj) -> str:
    """A type as PyTorch's argument errors name it (``numpy.ndarray``, ``int``)."""
    tp = type(obj)
    return tp.__name__ if tp.__module__ == "builtins" else f"{tp.__module__}.{tp.__name__}"


def _common_dtype(tensors):
    """PyTorch's promotion over all ``tensors`` (every one counts as dimensioned)."""
    dt = _dtype.FROM_NP[tensors[0]._data.dtype]
    for t in tensors[1:]:
        if t._data.dtype is not dt.np:
            dt = _dtype.promote_types(dt, _dtype.FROM_NP[t._data.dtype])
    return dt


def _arrays_as(tensors, dt):
    return [t._data if t._data.dtype is dt.np else t._data.astype(dt.np) for t in tensors]


def _cat_bw(node, g):
    dim, metas = node.ctx
    grads = []
    offset = 0
    for shape, dtype, skipped, needed in metas:
        if skipped:
            grads.append(_make(xp_of(g).zeros(shape, dtype=dtype.np), g._device)
                         if needed else None)
            continue
        n = shape[dim]
        if needed and g.__class__ is not Tensor:  # batched by vmap: the dispatching methods
            gi = g.narrow(dim, offset, n)
            grads.append(gi if gi.dtype is dtype else gi.to(dtype))
        elif needed:
            gi = basic_view(g, (slice(None),) * dim + (slice(offset, offset + n), Ellipsis),
                            SliceBackward0)
            if gi._data.dtype is not dtype.np:
                gi = cast_to(gi, None, dtype, False)
            grads.append(gi)
        else:
            grads.append(None)
        offset += n
    return tuple(grads)


CatBackward0 = make_node_class("CatBackward0", _cat_bw)


@register("cat", aliases=("concat", "concatenate"), method=False)
def cat(tensors, dim=0, *, axis=None, out=None):
    """Join ``tensors`` along an existing ``dim`` (dtypes promote; 1-D empty tensors are
    skipped, as PyTorch's legacy rule says)."""
    tensors = _tensor_list("cat", tensors, "ember.cat(): expected a non-empty list of Tensors",
                           ValueError)
    if axis is not None:
        dim = axis
    if tensors[0]._data.__class__ is _SparseData:  # ember._sparse_tensor: its own kernel
        from .._sparse_tensor import sparse_cat

        return _finish_join(sparse_cat(tensors, dim), out)
    for i, t in enumerate(tensors):
        if t._data.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be "
                               "concatenated")
    skipped = [t._data.ndim == 1 and t._data.size == 0 for t in tensors]
    kept = [t for t, s in zip(tensors, skipped) if not s]
    dt = _common_dtype(tensors)
    if not kept:
        r = xp_of(tensors[0]).zeros((0,), dtype=dt.np)
        return _finish_join(_make(r, tensors[0]._device), out)
    ref = kept[0]._data
    dim = wrap_dim(dim, ref.ndim)
    for i, t in enumerate(tensors):
        if skipped[i]:
            continue
        s = t._data.shape
        if len(s) != ref.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.ndim} "
                               f"and {len(s)}")
        for k in range(ref.ndim):
            if k != dim and s[k] != ref.shape[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {dim}. "
                                   f"Expected size {ref.shape[k]} but got size {s[k]} for "
                                   f"tensor number {i} in the list.")
    _refuse_sparse(kept, "concatenate")
    xp = xp_of(kept[0])
    r = xp.concatenate(_arrays_as(kept, dt), axis=dim)
    res = _make(r, kept[0]._device)
    if GRAD.enabled and any(t.requires_grad for t in tensors):
        metas = tuple((t._data.shape, t.dtype, s, t.requires_grad)
                      for t, s in zip(tensors, skipped))
        record(CatBackward0, res, tensors, (), (dim, metas))
    return _finish_join(res, out)


def _refuse_sparse(tensors, what):
    """PyTorch's error for a sparse operand of a dense join, raised before the array module
    sees it (NumPy lets the operand raise it; CuPy refuses it as an unsupported type first)."""
    for t in tensors:
        if t._data.__class__ is _SparseData:
            raise _not_implemented(what, t._device)


def _finish_join(res, out):
    if out is None:
        return res
    from .._factory import write_out

    if out.requires_grad and GRAD.enabled:
        raise RuntimeError("cat(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    return write_out(out, res)


def _stack_bw(node, g):
    dim, metas = node.ctx
    grads = []
    for i, (dtype, needed) in enumerate(metas):
        if not needed:
            grads.append(None)
            continue
        if g.__class__ is not Tensor:  # batched by vmap: the dispatching methods
            gi = g.select(dim, i)
            grads.append(gi if gi.dtype is dtype else gi.to(dtype))
            continue
        gi = select(g, dim, i)
        if gi._data.dtype is not dtype.np:
            gi = cast_to(gi, None, dtype, False)
        grads.append(gi)
    return tuple(grads)


StackBackward0 = make_node_class("StackBackward0", _stack_bw)


@register("stack", method=False)
def stack(tensors, dim=0, *, out=None):
    """Join equally shaped ``tensors`` along a new dimension ``dim``."""
    tensors = _tensor_list("stack", tensors, "stack expects a non-empty TensorList")
    if tensors[0]._data.__class__ is _SparseData:  # ember._sparse_tensor: its own kernel
        from .._sparse_tensor import sparse_stack

        return _finish_join(sparse_stack(tensors, dim), out)
    shape = tensors[0]._data.shape
    for i, t in enumerate(tensors[1:], 1):
        if t._data.shape != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"[{shape_str(shape)}] at entry 0 and [{shape_str(t._data.shape)}] "
                               f"at entry {i}")
    dim = wrap_dim(dim, len(shape) + 1)
    dt = _common_dtype(tensors)
    _refuse_sparse(tensors, "stack")
    r = xp_of(tensors[0]).stack(_arrays_as(tensors, dt), axis=dim)
    res = _make(r, tensors[0]._device)
    if GRAD.enabled and any(t.requires_grad for t in tensors):
        record(StackBackward0, res, tensors, (), (dim, tuple((t.dtype, t.requires_grad)
                                                             for t in tensors)))
    return _finish_join(res, out)


@register("hstack", method=False)
def hstack(tensors, *, out=None):
    """Join along dim 1 (dim 0 for 1-D tensors)."""
    ts = atleast_1d(*_tensor_list("hstack", tensors, "hstack expects a non-empty TensorList"))
    ts = ts if isinstance(ts, tuple) else (ts,)
    return cat(ts, 0 if ts[0]._data.ndim == 1 else 1, out=out)


@register("vstack", aliases=("row_stack",), method=False)
def vstack(tensors, *, out=None):
    """Join along dim 0 after making every tensor at least 2-D."""
    ts = atleast_2d(*_tensor_list("vstack", tensors, "vstack expects a non-empty TensorList"))
    return cat(ts if isinstance(ts, tuple) else (ts,), 0, out=out)


@register("dstack", method=False)
def dstack(tensors, *, out=None):
    """Join along dim 2 after making every tensor at least 3-D."""
    ts = atleast_3d(*_tensor_list("dstack", tensors, "dstack expects a non-empty TensorList"))
    return cat(ts if isinstance(ts, tuple) else (ts,), 2, out=out)


@register("column_stack", method=False)
def column_stack(tensors, *, out=None):
    """Join along dim 1, 0-D and 1-D tensors becoming columns."""
    ts = _tensor_list("column_stack", tensors, "column_stack expects a non-empty TensorList")
    ts = [reshape(t, (t._data.size, 1)) if t._data.ndim <= 1 else t for t in ts]
    return cat(ts, 1, out=out)


def _atleast(tensors, fix, name):
    try:
        if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
            return tuple(fix(t) for t in tensors[0])
        if len(tensors) == 1:
            return fix(tensors[0])
        return tuple(fix(t) for t in tensors)
    except AttributeError:  # something that is no tensor: PyTorch's parser refuses it
        if len(tensors) == 1 and not isinstance(tensors[0], (list, tuple)):
            check_binds(name, tensors)
        _check_tensor_list(tensors[0] if len(tensors) == 1 else tensors)
        raise


def _check_tensor_list(tensors) -> None:
    """PyTorch's parser error for a ``tuple of Tensors`` argument holding something else."""
    from .._factory import tp_name

    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{tp_name(t)}") from None


@register("atleast_1d", method=False, tags=("view_if_possible",))
def atleast_1d(*tensors):
    """Each tensor with at least one dimension (0-D becomes shape ``[1]``)."""
    return _atleast(tensors, lambda t: reshape(t, (1,)) if t._data.ndim == 0 else t,
                    "atleast_1d")


@register("atleast_2d", method=False, tags=("view_if_possible",))
def atleast_2d(*tensors):
    """Each tensor with at least two dimensions (new dims in front)."""
    def fix(t):
        n = t._data.ndim
        return reshape(t, (1, 1)) if n == 0 else unsqueeze(t, 0) if n == 1 else t
    return _atleast(tensors, fix, "atleast_2d")


@register("atleast_3d", method=False, tags=("view_if_possible",))
def atleast_3d(*tensors):
    """Each tensor with at least three dimensions (``[n]`` becomes ``[1, n, 1]``, ``[m, n]``
    becomes ``[m, n, 1]``)."""
    def fix(t):
        n = t._data.ndim
        if n == 0:
            return reshape(t, (1, 1, 1))
        if n == 1:
            return unsqueeze(unsqueeze(t, 0), 2)
        return unsqueeze(t, 2) if n == 2 else t
    return _atleast(tensors, fix, "atleast_3d")


# -- copying rearrangements ----------------------------------------------------------------

def _repeat_bw(node, g):
    in_shape, reps = node.ctx
    padded = (1,) * (len(reps) - len(in_shape)) + tuple(in_shape)
    pairs = []
    for r, s in zip(reps, padded):
        pairs += [r, s]
    gs = g.reshape(pairs).sum(tuple(range(0, 2 * len(reps), 2)))
    return (gs.reshape(in_shape),)


RepeatBackward0 = make_node_class("RepeatBackward0", _repeat_bw)


def repeat(input, repeats):
    """The tensor tiled ``repeats[i]`` times along dim ``i`` (``repeats`` may add leading
    dims)."""
    reps = _int_tuple(repeats)
    d = input._data
    if len(reps) < d.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    if any(r < 0 for r in reps):
        target = tuple(a * b for a, b in zip((1,) * (len(reps) - d.ndim) + d.shape, reps))
        for n in target:
            if n < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {n}: "
                                   f"[{shape_str(target)}]")
    xp = xp_of(input)
    if xp is not np:  # CuPy's size count wraps where NumPy's refuses (an illegal address)
        from .._factory import storage_nbytes

        storage_nbytes(tuple(math.prod(p) for p in zip((1,) * (len(reps) - d.ndim) + d.shape,
                                                       reps)), d.itemsize)
    try:
        r = xp.tile(d, reps)
    except (MemoryError, ValueError) as exc:
        from .._factory import raise_allocation_error

        shape = tuple(math.prod(p) for p in zip((1,) * (len(reps) - d.ndim) + d.shape, reps))
        raise_allocation_error(exc, shape, d.itemsize, input._device)
        raise
    if not r.flags.c_contiguous:  # tiling once keeps the input's layout: PyTorch's is fresh
        r = xp.ascontiguousarray(r)
    out = _make(r, input._device)
    if input.requires_grad and GRAD.enabled:
        record(RepeatBackward0, out, (input,), (), (d.shape, reps))
    return out


register_method("repeat", repeat, varargs=True)


@register("tile", varargs=True)
def tile(input, dims):
    """``repeat`` with ``dims`` padded with leading ones to the tensor's rank."""
    dims = _int_tuple(dims)
    n = input._data.ndim
    if len(dims) < n:
        dims = (1,) * (n - len(dims)) + dims
    return repeat(input, dims)


def _flip_bw(node, g):
    return (flip(g, node.ctx) if g.__class__ is Tensor else g.flip(node.ctx),)


FlipBackward0 = make_node_class("FlipBackward0", _flip_bw)


_FLIP_GAPS = _dtype.missing_kernel("flip")[1]


def _flip_dispatches(d, axes) -> bool:
    """Whether PyTorch's CPU flip of array ``d`` along ``axes`` reaches its dtype dispatch
    (``flip_cpu``). It does not when nothing moves (no flipped dim longer than 1), nor for a
    vertical flip: the innermost dims (in memory order, coalesced as its TensorIterator does:
    not flipped, contiguous) are copied row by row whatever the dtype, if the next dim out
    is flipped."""
    order = sorted((k for k in range(d.ndim) if d.shape[k] > 1),
                   key=lambda k: abs(d.strides[k]))  # innermost first
    if not any(k in axes for k in order):
        return False
    inner = order[0]
    if inner in axes or abs(d.strides[inner]) != d.itemsize:
        return True
    for prev, k in zip(order, order[1:]):
        if k in axes:
            return False  # a vertical flip of contiguous rows: a memcpy
        if abs(d.strides[k]) != abs(d.strides[prev]) * d.shape[prev]:
            return True  # the rows end before the flipped dim: the dispatched kernel
    return True


def _flipped(d, axes):
    """A copy of array ``d`` reversed along ``axes``, laid out as PyTorch's
    ``empty_like(d)`` (``d``'s own stride order; C order when ``d`` is C-contiguous)."""
    idx = tuple(slice(None, None, -1) if k in axes else slice(None) for k in range(d.ndim))
    if d.flags.c_contiguous:
        return d[idx].copy()
    from .. import _memory_format as mf

    return mf.copy_as(d[idx], mf.preserve_order(d))


@register("flip", varargs=True)
def flip(input, dims):
    """A copy with the order of elements reversed along ``dims``."""
    d = input._data
    axes = normalize_dims(dims, d.ndim)
    if d.dtype in _FLIP_GAPS and _flip_dispatches(d, axes):
        _dtype.check_kernel("flip", d.dtype)
    out = _make(_flipped(d, axes), input._device)
    if input.requires_grad and GRAD.enabled:
        record(FlipBackward0, out, (input,), (), axes)
    return out


@register("fliplr")
def fliplr(input):
    """Flip along dim 1 (needs at least 2 dims)."""
    if input._data.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


@register("flipud")
def flipud(input):
    """Flip along dim 0 (needs at least 1 dim)."""
    if input._data.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


def _roll_bw(node, g):
    shifts, dims = node.ctx
    back = tuple(-s for s in shifts)
    return (roll(g, back, dims) if g.__class__ is Tensor else g.roll(back, dims),)


RollBackward0 = make_node_class("RollBackward0", _roll_bw)


@register("roll")
def roll(input, shifts, dims=None):
    """A copy with elements shifted circularly by ``shifts`` along ``dims`` (the flattened
    tensor when ``dims`` is None)."""
    if isinstance(shifts, (int, np.integer)):
        shifts = (int(shifts),)
    elif hasattr(shifts, "__iter__"):
        shifts = tuple(operator.index(s) for s in shifts)
    else:
        raise TypeError("roll(): argument 'shifts' (position 1) must be tuple of ints, not "
                        f"{type(shifts).__name__}")
    if not shifts:
        raise RuntimeError("`shifts` required")
    d = input._data
    if dims is not None and not isinstance(dims, (int, np.integer)) and not len(dims) \
            and len(shifts) == 1:
        dims = None  # as PyTorch: no dims with one shift rolls the flattened tensor
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        axes = None
    else:
        dims = (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims)
        if len(shifts) != len(dims):
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:"
                               f"{len(dims)}")
        if d.ndim == 0:
            raise IndexError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
        dims = axes = tuple(wrap_dim(k, d.ndim) for k in dims)
    r = xp_of(input).roll(d, shifts if axes is not None else shifts[0], axes)
    # PyTorch rolls by narrow and cat, whose result takes the input's suggested memory format
    # (channels-last stays, any other layout is C order); a flat roll is a view's, C order
    out = _make(_mf.fresh_layout(r, _mf.suggest(d) if axes is not None else None),
                input._device)
    if input.requires_grad and GRAD.enabled:
        record(RollBackward0, out, (input,), (), (shifts, dims))
    return out


def _rot90_bw(node, g):
    k, dims = node.ctx
    return (rot90(g, -k, dims),)


Rot90Backward0 = make_node_class("Rot90Backward0", _rot90_bw)


@register("rot90")
def rot90(input, k=1, dims=(0, 1)):
    """A copy rotated by 90 degrees ``k`` times in the plane of ``dims`` (from the first
    toward the second)."""
    dims = _int_tuple(dims)
    n = input._data.ndim
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if n < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {n}")
    a, b = dims
    d0, d1 = wrap_dim(a, n), wrap_dim(b, n)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {a} and "
                           f"dim1 = {b}")
    k = operator.index(k) % 4
    d = input._data
    if k and d.dtype in _FLIP_GAPS and _flip_dispatches(d, (d1,) if k == 1 else (d0, d1)
                                                        if k == 2 else (d0,)):
        _dtype.check_kernel("flip", d.dtype)  # PyTorch rotates by flip (then transpose)
    # PyTorch's layout: a flip (``d``'s stride order), transposed for an odd ``k``
    if k == 0:
        arr = d.copy()
    elif k == 2:
        arr = _flipped(d, (d0, d1))
    else:
        arr = _flipped(d, (d1,) if k == 1 else (d0,)).swapaxes(d0, d1)
    out = _make(arr, input._device)
    if input.requires_grad and GRAD.enabled:
        record(Rot90Backward0, out, (input,), (), (k, (d0, d1)))
    return out


def _tri_op(name, xp_name):
    def bw(node, g):
        return (getattr(g, name)(node.ctx),)

    node_cls = make_node_class(name.capitalize() + "Backward0", bw)

    def op(input, diagonal=0):
        d = input._data
        if d.ndim < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
        _dtype.check_kernel(name, d.dtype)
        # a new tensor in C order whatever the input's layout, as PyTorch's
        out = _make(_mf.fresh_layout(getattr(xp_of(input), xp_name)(d, diagonal), None),
                    input._device)
        if input.requires_grad and GRAD.enabled:
            record(node_cls, out, (input,), (), diagonal)
        return out

    op.__name__ = op.__qualname__ = name
    op.__doc__ = (f"The {'lower' if name == 'tril' else 'upper'} triangle of the last two dims "
                  "(on and " + ("below" if name == "tril" else "above") +
                  " diagonal ``diagonal``), the rest zeroed.")
    return register(name, inplace=True, out="same")(op)


tril = _tri_op("tril", "tril")
triu = _tri_op("triu", "triu")


# -- diagonals -----------------------------------------------------------------------------

class _StridedIndex:
    """An index spec for ``indexing.scatter_by`` whose region ``get(a)`` is a strided view of
    ``a`` (``tget(t)``: the view op on a tensor), each element of ``a`` in it at most once
    unless ``add`` says otherwise."""

    __slots__ = ()

    def set(self, a, v, xp):
        self.get(a)[...] = v

    def add(self, a, v, xp):
        view = self.get(a)
        view += v


def _strided_view(a, shape, strides):
    """``a``'s memory seen with ``shape`` and ``strides`` (bytes); writable where ``a`` is."""
    return _dtype.strided_view(np if a.__class__ is np.ndarray else xp_of(a), a, shape, strides)


@dataclasses.dataclass(slots=True, eq=False)
class DiagonalIndex(_StridedIndex):
    """The diagonal ``offset`` of dims ``dim1`` and ``dim2``: a strided view with those dims
    removed and the diagonal last."""

    offset: int
    dim1: int
    dim2: int

    def get(self, a):
        return _diagonal_array(a, self.offset, self.dim1, self.dim2)

    def lifted(self, k: int):
        """This diagonal of arrays with ``k`` more leading dims (vmap's batch)."""
        return DiagonalIndex(self.offset, self.dim1 + k, self.dim2 + k)

    def tget(self, t):
        if t.__class__ is not Tensor:  # batched by vmap: the dispatching method
            return t.diagonal(self.offset, self.dim1, self.dim2)
        return diagonal(t, self.offset, self.dim1, self.dim2)


def _diagonal_array(a, offset, d1, d2):
    n1, n2 = a.shape[d1], a.shape[d2]
    if offset >= 0:
        length = max(min(n1, n2 - offset), 0)
        start = [0, offset]
    else:
        length = max(min(n1 + offset, n2), 0)
        start = [-offset, 0]
    if length:
        idx = [slice(None)] * a.ndim
        idx[d1], idx[d2] = slice(start[0], None), slice(start[1], None)
        a = a[tuple(idx)]
    keep = [k for k in range(a.ndim) if k != d1 and k != d2]
    shape = tuple(a.shape[k] for k in keep) + (length,)
    strides = tuple(a.strides[k] for k in keep) + (a.strides[d1] + a.strides[d2],)
    return _strided_view(a, shape, strides)


def _diag_dims(n, offset, dim1, dim2):
    d1, d2 = wrap_dim(dim1, n), wrap_dim(dim2, n)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return d1, d2


def _diagonal_bw(node, g):
    shape, spec = node.ctx
    return (scatter_by(None, spec, g, False, shape=shape),)


DiagonalBackward0 = make_node_class("DiagonalBackward0", _diagonal_bw)


@register("diagonal", view=True)
def diagonal(input, offset=0, dim1=0, dim2=1):
    """The view of the diagonal ``offset`` of dims ``dim1``/``dim2``, appended as the last
    dim."""
    d = input._data
    d1, d2 = _diag_dims(d.ndim, offset, dim1, dim2)
    spec = DiagonalIndex(int(offset), d1, d2)
    return make_view(input, spec.get(d), DiagonalBackward0, (d.shape, spec),
                     lambda b: diagonal(b, offset, d1, d2))


DiagEmbedBackward0 = make_node_class("DiagEmbedBackward0", _scatter_bw)


@register("diag_embed")
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """A tensor whose diagonals (``offset`` of ``dim1``/``dim2``) hold ``input``'s last dim,
    zeros elsewhere."""
    d = input._data
    n = d.ndim + 1
    d1, d2 = _diag_dims(n, offset, dim1, dim2)
    m = (d.shape[-1] if d.ndim else 1) + abs(int(offset))
    batch = iter(d.shape[:-1])
    shape = tuple(m if k in (d1, d2) else next(batch) for k in range(n))
    return scatter_by(None, DiagonalIndex(int(offset), d1, d2), input, False,
                      DiagEmbedBackward0, shape=shape)


@register("diag", out="same")
def diag(input, diagonal=0):
    """1-D input: a square matrix with it on diagonal ``diagonal``; 2-D input: that diagonal
    (a copy)."""
    n = input._data.ndim
    if n == 1:
        return diag_embed(input, diagonal, 0, 1)
    if n == 2:
        return copy_as(input.diagonal(diagonal))
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {n}D")


@register("diagonal_scatter")
def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """``input`` with its diagonal (as ``diagonal(offset, dim1, dim2)`` selects) set to
    ``src``."""
    d1, d2 = _diag_dims(input._data.ndim, offset, dim1, dim2)
    return scatter_by(input, DiagonalIndex(int(offset), d1, d2), src, False)


@register("select_scatter")
def select_scatter(input, src, dim, index):
    """``input`` with ``select(dim, index)`` set to ``src``."""
    dim = wrap_dim(dim, input._data.ndim)
    return scatter_by(input, BasicIndex((slice(None),) * dim + (int(index), Ellipsis)), src,
                      False)


@register("slice_scatter", out=True)
def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """``input`` with the slice ``start:end:step`` of ``dim`` set to ``src``."""
    try:
        axis = wrap_dim(dim, input._data.ndim)
        return scatter_by(input, BasicIndex((slice(None),) * axis + (slice(start, end, step),
                                                                     Ellipsis)), src, False)
    except (TypeError, AttributeError):  # arguments no signature takes: the parser's words
        check_binds("slice_scatter", (input, src, dim, start, end, step))
        raise


# -- repeat_interleave, diff, unfold, diagflat, fill_diagonal_ -----------------------------

def _repeats_array(repeats: Tensor):
    """``repeats``' array, 1-D, checked as PyTorch does (0-dim or 1-dim, integers)."""
    r = repeats._data
    if r.ndim > 1:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    if r.dtype not in (np.int32, np.int64):  # PyTorch's kernel has Int and Long cases only
        raise no_kernel("repeat_interleave_cpu", r.dtype)
    return r.reshape(-1)


@register("repeat_interleave", out=True)
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Repeat each element (each slice along ``dim``; the flattened input when ``dim`` is None)
    ``repeats`` times; ``repeat_interleave(repeats)`` alone gives the indices
    ``[0] * repeats[0] + [1] * repeats[1] + ...``."""
    from .indexing import select_slices

    if repeats is None:  # torch.repeat_interleave(repeats)
        if output_size is None:
            refuse_meta(input, "repeat_interleave with tensor repeats and no output_size")
        if input._data.ndim != 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        r = _repeats_array(input)
        if r.size and bool((r < 0).any()):
            raise RuntimeError("repeats can not be negative")
        xp = xp_of(input)
        if input._device.type == "meta":
            return _make(xp.empty(int(output_size), dtype=r.dtype), input._device)
        res = xp.repeat(xp.arange(r.size, dtype=r.dtype), r)
        if output_size is not None and res.size != int(output_size):
            raise RuntimeError("allocated size does not match required size")
        return _make(res, input._device)
    if dim is None:
        input = input.flatten()
        dim = 0
    d = input._data
    dim = wrap_dim(dim, d.ndim)
    size = d.shape[dim] if d.ndim else 1
    xp = xp_of(input)
    if isinstance(repeats, Tensor):
        check_same_device(input, repeats)
        r = _repeats_array(repeats)
        if r.size == 1:
            r = xp.full(size, r[0], dtype=np.int64)
        elif r.size != size:
            raise RuntimeError("repeats must have the same size as input along dim, but got "
                               f"repeats.size(0) = {r.size} and input.size({dim}) = {size}")
        if output_size is None:
            refuse_meta(repeats, "repeat_interleave with tensor repeats and no output_size")
    else:
        r = operator.index(repeats)
        if r < 0:
            raise RuntimeError("Repeats must be non-negative")
    if isinstance(r, int):  # one count for every slice
        idx = xp.repeat(xp.arange(size, dtype=np.int64), r)
    elif input._device.type == "meta":
        idx = xp.empty(int(output_size), dtype=np.int64)
    else:
        if r.size and bool((r < 0).any()):
            raise RuntimeError("repeats can not be negative")
        idx = xp.repeat(xp.arange(size, dtype=np.int64), r)
    if output_size is not None and idx.size != int(output_size):
        raise RuntimeError("allocated size does not match required size")
    if d.ndim == 0:
        input = input.reshape(1)
    return select_slices(input, dim, _make(idx, input._device))


@register("diff", out=True)
def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The ``n``-th forward difference along ``dim`` (``prepend``/``append`` joined first);
    booleans take ``!=`` (PyTorch's logical xor)."""
    nd = input._data.ndim
    if nd == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    n = operator.index(n)
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    dim = wrap_dim(dim, nd)
    parts = []
    for extra in (prepend, input, append):
        if extra is None:
            continue
        if extra._data.ndim != nd:
            raise RuntimeError("diff expects prepend or append to be the same dimension as "
                               "input")
        parts.append(extra)
    x = cat(parts, dim) if len(parts) > 1 else input
    if n == 0 and x is input:  # a new tensor, as PyTorch gives
        return copy_as(input)
    is_bool = x._data.dtype.kind == "b"
    for _ in range(n):
        length = x._data.shape[dim]
        if length == 0:
            break
        hi, lo = narrow(x, dim, 1, length - 1), narrow(x, dim, 0, length - 1)
        x = (hi != lo) if is_bool else hi - lo
    return x


@dataclasses.dataclass(slots=True, eq=False)
class UnfoldIndex(_StridedIndex):
    """The windows ``unfold(dim, size, step)`` selects: an overlapping strided view, so
    ``add`` sums the windows one offset at a time (overlaps accumulate)."""

    dim: int
    size: int
    step: int

    def get(self, a):
        return _unfold_array(a, self.dim, self.size, self.step)

    def add(self, a, v, xp):
        w = self.get(a)
        v = xp.broadcast_to(xp.asarray(v), w.shape)
        for k in range(self.size):
            w[..., k] += v[..., k]

    def tget(self, t):
        return unfold(t, self.dim, self.size, self.step)


def _unfold_array(a, dim, size, step):
    if a.ndim == 0:
        return a.reshape(1)
    n = a.shape[dim]
    count = (n - size) // step + 1
    shape = a.shape[:dim] + (count,) + a.shape[dim + 1:] + (size,)
    strides = a.strides[:dim] + (a.strides[dim] * step,) + a.strides[dim + 1:] + \
        (a.strides[dim],)
    return _strided_view(a, shape, strides)


def _unfold_bw(node, g):
    shape, spec = node.ctx
    if not shape:
        return (g.reshape(()),)
    from .indexing import index_add

    xp = xp_of(g)
    count = g._data.shape[spec.dim]
    starts = xp.arange(count, dtype=np.int64) * spec.step
    out = g.new_zeros(shape)
    for k in range(spec.size):
        out = index_add(out, spec.dim, _make(starts + k, g._device), g.select(-1, k))
    return (out,)


UnfoldBackward0 = make_node_class("UnfoldBackward0", _unfold_bw)


def unfold(input, dimension, size, step):
    """The view of all slices of length ``size`` along ``dimension``, ``step`` apart, as a new
    last dimension (``Tensor.unfold``)."""
    d = input._data
    dim = wrap_dim(dimension, d.ndim)
    size, step = operator.index(size), operator.index(step)
    n = d.shape[dim] if d.ndim else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {dim} is {n} but size is "
                           f"{size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    spec = UnfoldIndex(dim, size, step)
    return make_view(input, spec.get(d), UnfoldBackward0, (d.shape, spec),
                     lambda b, a=dim, s=size, p=step: unfold(b, a, s, p))


register_method("unfold", unfold)


@register("diagflat")
def diagflat(input, offset=0):
    """A square matrix with the flattened ``input`` on diagonal ``offset``."""
    return diag_embed(input.flatten(), offset, 0, 1)


def _fill_diagonal_(self, fill_value, wrap=False):
    """Fill the main diagonal of ``self`` (2-D, or n-D with all dims equal) in place;
    ``wrap`` continues it past every ``cols + 1`` rows of a tall matrix, as NumPy does."""
    from .indexing import AdvancedIndex, scatter_inplace

    d = self._data
    nd = d.ndim
    if nd < 2:
        raise RuntimeError("dimensions must larger than 1")
    if nd > 2 and len(set(d.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    xp = xp_of(self)
    if nd == 2:
        rows, cols = d.shape
        end = rows * cols if wrap and rows > cols + 1 else min(rows, cols) * cols
        flat = np.arange(0, end, cols + 1)
    else:
        m = d.shape[0]
        flat = np.arange(m) * sum(m ** k for k in range(nd))
    idx = tuple(xp.asarray(i) for i in np.unravel_index(flat, d.shape))
    return scatter_inplace(self, AdvancedIndex((), idx), fill_value, False,
                           name="fill_diagonal_")


register_method("fill_diagonal_", _fill_diagonal_)


# -- small views, copies and predicates ---------------------------------------------------

@register("adjoint", view=True)
def adjoint(input):
    """The conjugate transpose of the last two dims (a view for real dtypes; Ember has no
    conjugate bit, so a complex tensor's is a copy)."""
    return _matrix_transposed(input, "adjoint")


@register("narrow_copy", out=True)
def narrow_copy(input, dim, start, length):
    """``narrow`` as a new tensor (not a view)."""
    if input._data.__class__ is _SparseData:  # a sparse tensor (ember._sparse_tensor)
        return input.narrow_copy(dim, start, length)
    return copy_as(narrow(input, dim, start, length))


def _new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None,
                       requires_grad=False, pin_memory=False):
    from .._factory import empty_strided, refuse_layout

    refuse_layout(layout if layout is not None else getattr(self, "_layout", None),
                  "new_empty_strided", device)
    return empty_strided(size, stride, dtype=self.dtype if dtype is None else dtype,
                         device=self.device if device is None else device,
                         requires_grad=requires_grad)


register_method("new_empty_strided", _new_empty_strided)


@register("resize_as_", differentiable=False)
def resize_as_(input, the_template, *, memory_format=None):
    """``resize_`` to ``the_template``'s shape."""
    return _resize_(input, the_template._data.shape, memory_format=memory_format)


register_method("type_as", lambda self, other: self.type(other.type()))


@register("is_same_size", differentiable=False)
def is_same_size(input, other):
    """Whether ``input`` and ``other`` have the same shape."""
    if not isinstance(other, Tensor):
        if not isinstance(input, Tensor):
            check_binds("is_same_size", (input, other))
        raise TypeError(f"is_same_size(): argument 'other' (position 1) must be Tensor, not "
                        f"{type(other).__name__}")
    try:
        return input._data.shape == other._data.shape
    except AttributeError:  # not a tensor first: PyTorch's parser refuses it
        check_binds("is_same_size", (input, other))
        raise


@register("is_inference", differentiable=False)
def is_inference(input):
    """Whether ``input`` is an inference tensor: always False, as Ember's tensors carry no
    inference-mode flag (tensors made under ``inference_mode`` are ordinary tensors)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"is_inference(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return False


def _is_nonzero(self):
    from .._settings import is_nonzero

    return is_nonzero(self)


register_method("is_nonzero", _is_nonzero)


def _contains(self, element):
    import numbers

    if isinstance(element, Tensor):  # PyTorch compares ``element == self`` (error order)
        return bool((element == self).any().item())
    if isinstance(element, (numbers.Number, np.generic)):
        return bool((self == element).any().item())
    raise RuntimeError("Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                       f"{type(element)}.")


register_method("__contains__", _contains)
register_method("__reversed__", lambda self: self if self._data.ndim == 0 else flip(self, 0))


# -- index/grid builders: tril/triu_indices, meshgrid, cartesian_prod, combinations --------

def _tri_indices(name, row, col, offset, dtype, device, layout=None):
    from .. import _dtype as dtypes
    from .._device import resolve_device, xp_of

    vals = []
    for pos, (what, v) in enumerate((("row", row), ("col", col), ("offset", offset)), 1):
        try:
            if isinstance(v, (bool, np.bool_)):
                raise TypeError
            vals.append(operator.index(v))
        except TypeError:
            from .._factory import tp_name

            raise TypeError(f"{name}(): argument '{what}' (position {pos}) must be int, not "
                            f"{tp_name(v)}") from None
    row, col, offset = vals
    from .._factory import refuse_layout

    refuse_layout(layout, name, device)
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    dt = dtypes.int64 if dtype is None else dtype
    if dt not in (dtypes.int64, dtypes.int32):
        raise NotImplementedError(f"\"{name}\" not implemented for "
                                  f"'{scalar_type_name(dt.np)}'")
    dev = resolve_device(device)
    r, c = (np.tril_indices if name == "tril_indices" else np.triu_indices)(row, offset, col)
    return _make(xp_of(dev).asarray(np.stack([r, c]).astype(dt.np).reshape(2, -1)), dev)


@register("tril_indices", method=False, differentiable=False)
def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The 2 x N coordinates of the lower triangle (on and below diagonal ``offset``) of a
    ``row`` x ``col`` matrix, in row-major order."""
    return _tri_indices("tril_indices", row, col, offset, dtype, device, layout)


@register("triu_indices", method=False, differentiable=False)
def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The 2 x N coordinates of the upper triangle (on and above diagonal ``offset``) of a
    ``row`` x ``col`` matrix, in row-major order."""
    return _tri_indices("triu_indices", row, col, offset, dtype, device, layout)


@register("meshgrid", method=False, view=True)
def meshgrid(*tensors, indexing=None):
    """Coordinate grids of 0/1-D tensors (expanded views); ``indexing`` 'ij' (the default,
    with PyTorch's warning when not given) or 'xy' (the first two dims swapped)."""
    import warnings

    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument.", UserWarning, stacklevel=user_stacklevel())
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError("torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        try:
            nd = t._data.ndim
        except AttributeError:
            _check_tensor_list(tensors)
            raise
        if nd > 1:
            raise RuntimeError("torch.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got: {t}")
    dt = tensors[0].dtype
    dev = tensors[0]._device
    for t in tensors[1:]:
        if t.dtype != dt:
            raise RuntimeError("torch.meshgrid: Expected all tensors in the tensor list to have "
                               "the same dtype.")
        if t._device is not dev:
            raise RuntimeError("torch.meshgrid: Expected all tensors in the tensor list to have "
                               "the same device.")
    swap = indexing == "xy" and len(tensors) >= 2
    order = list(tensors)
    if swap:
        order[0], order[1] = order[1], order[0]
    shape = tuple(max(t._data.size, 1) if t._data.ndim == 0 else t._data.shape[0]
                  for t in order)
    n = len(order)
    grids = []
    for k, t in enumerate(order):
        view_shape = [1] * n
        view_shape[k] = -1
        grids.append(expand(t.reshape(view_shape), shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


@register("cartesian_prod", method=False)
def cartesian_prod(*tensors):
    """The cartesian product of 1-D tensors: an N x len(tensors) tensor (one input is returned
    as it is)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for t in tensors:
        if t._data.ndim != 1:
            raise RuntimeError("Expect a 1D vector, but got shape "
                               f"[{shape_str(t._data.shape)}]")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.flatten() for g in grids], 1)


@register("combinations", method=False)
def combinations(input, r=2, with_replacement=False):
    """The length-``r`` combinations (with replacement when asked) of a 1-D tensor's
    elements, one per row, in itertools' order."""
    import itertools

    from .indexing import select_slices

    if input._data.ndim != 1:
        raise RuntimeError("Expect a 1D vector, but got shape "
                           f"[{shape_str(input._data.shape)}]")
    r = operator.index(r)
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty(0)
    _dtype.check_kernel("masked_select", input._data.dtype)  # PyTorch's combinations uses it
    n = input._data.shape[0]
    gen = itertools.combinations_with_replacement if with_replacement \
        else itertools.combinations
    combos = np.array(list(gen(range(n), r)), dtype=np.int64).reshape(-1, r)
    xp = xp_of(input)
    cols = [select_slices(input, 0, _make(xp.asarray(combos[:, k]), input._device))
            for k in range(r)]
    return stack(cols, 1)


@register("block_diag", method=False)
def block_diag(*tensors):
    """The block-diagonal matrix of 0/1/2-D tensors (a 0-D one is 1 x 1, a 1-D one a row),
    in their promoted dtype."""
    from .._factory import zeros

    mats = []
    for i, t in enumerate(tensors):
        nd = t._data.ndim
        if nd > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {nd} dimensions")
        mats.append(t.reshape(1, 1) if nd == 0 else t.reshape(1, -1) if nd == 1 else t)
    if not mats:
        return zeros(1, 0)
    dev = check_same_device(*mats)
    dt = _common_dtype(mats)
    mats = [m if m._data.dtype is dt.np else cast_to(m, None, dt, False) for m in mats]
    total = sum(m._data.shape[1] for m in mats)
    rows = []
    before = 0
    for m in mats:
        h, w = m._data.shape
        parts = []
        if before:
            parts.append(zeros(h, before, dtype=dt, device=dev))
        parts.append(m)
        after = total - before - w
        if after:
            parts.append(zeros(h, after, dtype=dt, device=dev))
        rows.append(cat(parts, 1) if len(parts) > 1 else m)
        before += w
    return cat(rows, 0)


# -- in-place views: t_, transpose_, squeeze_, unsqueeze_ ---------------------------------------
# The tensor itself takes the view's shape and strides (``views.inplace_view``); under autograd
# its history continues with the view's backward, which PyTorch names ``...Backward1`` (and
# ``SqueezeBackward3/4/5``) for the in-place forms.

TBackward1 = make_node_class("TBackward1", _t_bw)
TransposeBackward1 = make_node_class("TransposeBackward1", _transpose_bw)
UnsqueezeBackward1 = make_node_class("UnsqueezeBackward1", _unsqueeze_bw)
SqueezeBackward3 = make_node_class("SqueezeBackward3", _squeeze_bw)
SqueezeBackward4 = make_node_class("SqueezeBackward4", _squeeze_bw)
SqueezeBackward5 = make_node_class("SqueezeBackward5", _squeeze_bw)


def _t_(self):
    """``t()`` in place: ``self`` becomes its own transpose (at most 2 dims)."""
    d = self._data
    if d.ndim > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {d.ndim}D")
    return inplace_view(self, d.T, TBackward1, None, "t_")


def _transpose_(self, dim0, dim1):
    """``transpose(dim0, dim1)`` in place."""
    d = self._data
    n = d.ndim
    d0, d1 = wrap_dim(dim0, n), wrap_dim(dim1, n)
    if n < 2:
        return inplace_view(self, d.view(), TransposeBackward1, (0, 0), "transpose_")
    return inplace_view(self, d.swapaxes(d0, d1), TransposeBackward1, (d0, d1), "transpose_")


def _swapaxes_(self, axis0, axis1):
    """``swapaxes(axis0, axis1)`` in place (``transpose_``)."""
    return _transpose_(self, axis0, axis1)


def _swapdims_(self, dim0, dim1):
    """``swapdims(dim0, dim1)`` in place (``transpose_``)."""
    return _transpose_(self, dim0, dim1)


def _squeeze_(self, dim=None):
    """``squeeze(dim)`` in place: drop the size-one dims (of those in ``dim`` when given)."""
    d = self._data
    node, arr = _squeezed(d, dim, (SqueezeBackward3, SqueezeBackward4, SqueezeBackward5))
    return inplace_view(self, arr, node, d.shape, "squeeze_")


def _unsqueeze_(self, dim):
    """``unsqueeze(dim)`` in place: insert a size-one dim at ``dim``."""
    d = self._data
    dim = wrap_dim(dim, d.ndim + 1)
    return inplace_view(self, xp_of(self).expand_dims(d, dim), UnsqueezeBackward1, dim,
                        "unsqueeze_")


register_method("t_", _t_)
register_method("transpose_", _transpose_)
register_method("swapaxes_", _swapaxes_)
register_method("swapdims_", _swapdims_)
register_method("squeeze_", _squeeze_, varargs=True)
register_method("unsqueeze_", _unsqueeze_)


# -- as_strided: views by storage geometry ----------------------------------------------------

def _strided_geometry(input, size, stride, storage_offset):
    """``(size, stride, offset)`` checked as PyTorch does (the offset defaults to the
    input's own storage offset)."""
    size, stride = _int_tuple(size), _int_tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(n < 0 for n in size):
        raise RuntimeError("Storage size calculation overflowed with sizes="
                           f"[{shape_str(size)}] and strides=[{shape_str(stride)}]")
    if any(st < 0 for st in stride):
        raise RuntimeError("as_strided: Negative strides are not supported at the moment, got "
                           f"strides: [{shape_str(stride)}]")
    offset = input.storage_offset() if storage_offset is None else \
        operator.index(storage_offset)
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    return size, stride, offset


def _strided_array(input, size, stride, offset):
    """The array over ``input``'s storage with the geometry (PyTorch's error when it does not
    fit in the storage)."""
    from .._storage import storage_of

    storage = storage_of(input)
    item = input._data.itemsize
    need = 0 if 0 in size else \
        (offset + sum((n - 1) * st for n, st in zip(size, stride)) + 1) * item
    have = storage.nbytes()
    if input._device.type == "meta":  # no memory: the root tensor's own extent
        root = input if input._base is None else input._base
        have = root._data.size * item
    if need > have:
        raise RuntimeError(f"setStorage: sizes [{shape_str(size)}], strides "
                           f"[{shape_str(stride)}], storage offset {offset}, and itemsize {item} "
                           "requiring a storage size of "
                           f"{need} are out of bounds for storage of size {have}")
    return storage._typed(input._data.dtype, offset, size, stride)


def _geometry(t):
    return t._data.shape, t.stride(), t.storage_offset()


def _strided_grad(g, in_geom, out_geom):
    """The gradient of the input (``in_geom``) of a strided view (``out_geom``), geometries
    in storage elements: ``g`` is summed into the storage, then read back at the input's
    positions (divided by how often an overlapping input reads each position)."""
    from .._factory import zeros

    if not GRAD.enabled and g._data.__class__ is np.ndarray:
        fast = _strided_grad_dense(g._data, in_geom, out_geom)
        if fast is not None:
            return _make(fast, g._device)
    xp = xp_of(g)
    in_shape = in_geom[0]
    p_in = storage_positions(*in_geom, xp)
    p_out = storage_positions(*out_geom, xp)
    if p_in.size == 0 or p_out.size == 0:
        return zeros(in_shape, dtype=g.dtype, device=g._device)
    lo = min(int(p_in.min()), int(p_out.min()))
    n = max(int(p_in.max()), int(p_out.max())) - lo + 1
    p_in, p_out = p_in - lo, p_out - lo
    flat = zeros(n, dtype=g.dtype, device=g._device)
    flat = flat.index_add(0, _make(p_out, g._device), g.reshape(-1))
    gin = flat.index_select(0, _make(p_in, g._device))
    counts = xp.bincount(p_in, minlength=n)[p_in]
    if bool((counts > 1).any()):
        gin = gin / _make(counts.astype(g._data.dtype), g._device)
    return gin.reshape(in_shape)


def _span_if_disjoint(size, stride, offset):
    """The first and last storage positions of a geometry whose elements lie at distinct
    positions (non-negative strides), else None."""
    dims = sorted((st, n) for n, st in zip(size, stride) if n > 1)
    reach = 0  # the farthest position the inner dims reach from the start
    for st, n in dims:
        if st <= reach:
            return None
        reach += (n - 1) * st
    return offset, offset + reach


def _strided_grad_dense(g, in_geom, out_geom):
    """``_strided_grad`` for NumPy arrays outside autograd when neither geometry reads a
    position twice (the views that follow their root after an in-place op): ``g`` written
    into a buffer over the storage span, the input's elements read back. None otherwise."""
    if 0 in in_geom[0] or 0 in out_geom[0]:
        return None
    span_in = _span_if_disjoint(*in_geom)
    span_out = _span_if_disjoint(*out_geom)
    if span_in is None or span_out is None:
        return None
    lo = min(span_in[0], span_out[0])
    buf = np.zeros(max(span_in[1], span_out[1]) - lo + 1, g.dtype)
    item = buf.itemsize

    def region(geom):
        size, stride, offset = geom
        return np.lib.stride_tricks.as_strided(buf[offset - lo:], size,
                                               [st * item for st in stride])

    region(out_geom)[...] = g
    return region(in_geom).copy()


def _as_strided_bw(node, g):
    in_geom, out_geom = node.ctx
    return (_strided_grad(g, in_geom, out_geom),)


AsStridedBackward0 = make_node_class("AsStridedBackward0", _as_strided_bw)
AsStridedBackward1 = make_node_class("AsStridedBackward1", _as_strided_bw)


def as_strided_(input, size, stride, storage_offset=None):
    """``as_strided`` in place: ``input`` takes the geometry ``size``/``stride`` (in elements)
    at ``storage_offset`` of its storage."""
    size, stride, offset = _strided_geometry(input, size, stride, storage_offset)
    arr = _strided_array(input, size, stride, offset)
    ctx = None
    if input.requires_grad and GRAD.enabled:
        ctx = (_geometry(input), (size, stride, offset))
    return inplace_view(input, arr, AsStridedBackward1, ctx, "as_strided_")


@register("as_strided", inplace=as_strided_, view=True)
def as_strided(input, size, stride, storage_offset=None):
    """The view of ``input``'s storage with shape ``size`` and ``stride`` (in elements) from
    element ``storage_offset`` of the storage (default: ``input``'s own offset).

    Elements may overlap; the storage is the whole memory ``input`` shares with its base, so
    the view can reach elements ``input`` does not show. Prefer ``view``, ``expand``,
    ``unfold``, ... where they fit.
    """
    size, stride, offset = _strided_geometry(input, size, stride, storage_offset)
    arr = _strided_array(input, size, stride, offset)
    ctx = None
    if input.requires_grad and GRAD.enabled:
        ctx = (_geometry(input), (size, stride, offset))
    out = make_view(input, arr, AsStridedBackward0, ctx)
    extra = out._extra_dict()
    extra["view_fn"] = StridedReplay(size, stride, offset)
    extra["strided"] = True
    return out


def _clone_preserve_strides(input):
    """A copy of ``input``'s whole storage, viewed with ``input``'s geometry (a contiguous
    copy when ``input`` overlaps itself), as ``as_strided_scatter`` starts from in PyTorch."""
    from .._storage import UntypedStorage, storage_of

    d = input._data
    if any(st == 0 and n > 1 for n, st in zip(d.shape, d.strides)):
        return _make(d.copy(), input._device)
    storage = UntypedStorage._over(storage_of(input)._bytes().copy(), input._device)
    out = _make(storage._typed(d.dtype, input.storage_offset(), d.shape, input.stride()),
                input._device)
    out._extra = {"storage": storage}
    return out


def _as_strided_scatter_bw(node, g):
    from .._factory import zeros

    in_geom, region, src_dtype = node.ctx
    xp = xp_of(g)
    p_in = storage_positions(*in_geom, xp)
    p_reg = storage_positions(*region, xp)
    if p_in.size == 0 or p_reg.size == 0:
        gi = g if node.needs_grad(0) else None
        gs = zeros(region[0], dtype=src_dtype, device=g._device) if node.needs_grad(1) else None
        return gi, gs
    lo = min(int(p_in.min()), int(p_reg.min()))
    n = max(int(p_in.max()), int(p_reg.max())) - lo + 1
    p_in, p_reg = p_in - lo, p_reg - lo
    gi = gs = None
    if node.needs_grad(0):  # the input's elements that the region overwrote get nothing
        written = xp.zeros(n, dtype=bool)
        written[p_reg] = True
        keep = (~written[p_in]).reshape(in_geom[0]).astype(g._data.dtype)
        gi = g * _make(keep, g._device)
    if node.needs_grad(1):  # the region reads the output's elements at its positions
        flat = zeros(n, dtype=g.dtype, device=g._device)
        flat = flat.index_add(0, _make(p_in, g._device), g.reshape(-1))
        gs = flat.index_select(0, _make(p_reg, g._device)).reshape(region[0])
        if gs.dtype is not src_dtype:
            gs = cast_to(gs, None, src_dtype, False)
    return gi, gs


AsStridedScatterBackward0 = make_node_class("AsStridedScatterBackward0", _as_strided_scatter_bw)


@register("as_strided_scatter")
def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A copy of ``input`` (of its whole storage, keeping its geometry) whose
    ``as_strided(size, stride, storage_offset)`` region holds ``src``."""
    if not isinstance(src, Tensor):
        raise TypeError(f"as_strided_scatter(): argument 'src' (position 2) must be Tensor, "
                        f"not {type(src).__name__}")
    check_same_device(input, src)
    if input.requires_grad and not input.is_contiguous():
        raise RuntimeError("!self.requires_grad() || self.is_contiguous() INTERNAL ASSERT "
                           "FAILED: as_strided_scatter is currently only supported for "
                           "contiguous inputs")
    out = _clone_preserve_strides(input)
    size, stride, offset = _strided_geometry(out, size, stride, storage_offset)
    region = _strided_array(out, size, stride, offset)
    if tuple(src._data.shape) != size:
        raise RuntimeError("expected src to have a size equal to the slice of self. src size = "
                           f"[{shape_str(src._data.shape)}], slice size = [{shape_str(size)}]")
    sd = src._data
    region[...] = sd if sd.dtype == region.dtype else sd.astype(region.dtype)
    if GRAD.enabled and (input.requires_grad or src.requires_grad):
        record(AsStridedScatterBackward0, out, (input, src), (),
               (_geometry(out), (size, stride, offset), src.dtype))
    return out


# -- unsafe_split / unsafe_chunk: split without view tracking ----------------------------------

def _parts_of(node, grads):
    """The gradients of a multi-output split's parts, zeros for those without one (ctx:
    ``(dim, part shapes, dtype)``), and whether vmap batched them (dispatching joins)."""
    from .._factory import zeros

    dim, shapes, dtype = node.ctx
    if node._n_out == 1:
        grads = [grads]
    parts = [g if g is not None else zeros(shape, dtype=dtype, device=node.device)
             for g, shape in zip(grads, shapes)]
    return parts, any(p.__class__ is not Tensor for p in parts)


def _split_bw(node, grads):
    parts, batched = _parts_of(node, grads)
    return ((public("cat") if batched else cat)(parts, node.ctx[0]),)


def _unbind_bw(node, grads):
    parts, batched = _parts_of(node, grads)
    return ((public("stack") if batched else stack)(parts, node.ctx[0]),)


SplitBackward0 = make_node_class("SplitBackward0", _split_bw)
SplitWithSizesBackward0 = make_node_class("SplitWithSizesBackward0", _split_bw)
UnbindBackward0 = make_node_class("UnbindBackward0", _unbind_bw)
UnsafeSplitBackward0 = make_node_class("UnsafeSplitBackward0", _split_bw)
UnsafeSplitWithSizesBackward0 = make_node_class("UnsafeSplitWithSizesBackward0", _split_bw)


def _unsafe(input, views, dim, node_cls):
    """The arrays of ``views`` as tensors that share ``input``'s memory and storage but not
    its version counter, with one multi-output node (PyTorch's ``unsafe_*`` ops)."""
    from .._storage import storage_of

    storage = storage_of(input)
    outs = []
    for v in views:
        o = _make(v._data, input._device)
        o._extra = {"storage": storage}
        outs.append(o)
    ctx = (wrap_dim(dim, input._data.ndim), tuple(o._data.shape for o in outs), input.dtype)
    return record_multi_output(input, outs, node_cls, ctx)


def _no_grad_views(fn, *args):
    prev = GRAD.enabled
    GRAD.enabled = False
    try:
        return fn(*args)
    finally:
        GRAD.enabled = prev


@register("unsafe_split")
def unsafe_split(input, split_size, dim=0):
    """``split(input, split_size, dim)`` whose parts are not views: in-place changes to them
    are not checked against the input (see PyTorch's warning)."""
    if not isinstance(split_size, (int, np.integer)) or isinstance(split_size, bool):
        raise TypeError("unsafe_split(): argument 'split_size' (position 2) must be int, not "
                        f"{type(split_size).__name__}")
    return _unsafe(input, _no_grad_views(split, input, split_size, dim), dim,
                   UnsafeSplitBackward0)


@register("unsafe_split_with_sizes")
def unsafe_split_with_sizes(input, split_sizes, dim=0):
    """``split_with_sizes`` whose parts are not views (see ``unsafe_split``)."""
    return _unsafe(input, _no_grad_views(split, input, list(split_sizes), dim), dim,
                   UnsafeSplitWithSizesBackward0)


@register("unsafe_chunk")
def unsafe_chunk(input, chunks, dim=0):
    """``chunk`` whose parts are not views (see ``unsafe_split``)."""
    return _unsafe(input, _no_grad_views(chunk, input, chunks, dim), dim,
                   UnsafeSplitBackward0)
