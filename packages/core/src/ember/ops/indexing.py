"""Indexing: ``Tensor.__getitem__`` / ``__setitem__`` and the index ops (index_put, gather,
scatter, scatter_add, scatter_reduce, index_select/add/copy/fill, masked_fill/select/scatter,
take, take_along_dim, put, nonzero, argwhere).

Every op here is one of two primitives over an *index spec*, an object that selects a region
of an array (``get``, ``set``, ``add`` on arrays; ``tget`` on tensors, differentiably):

- ``gather_by(input, spec)``: a copy of the region. Its backward scatters the gradient into
  zeros with accumulation (repeated indices sum, through ``xp.add.at``).
- ``scatter_by(input, spec, values, accumulate)``: ``input`` with the region overwritten (or
  incremented) by ``values``. Its backward: for ``input`` the gradient with the region zeroed
  (untouched when accumulating), for ``values`` the gradient's region.

Each is the other's backward, so gradients of any order come for free. The specs are
``BasicIndex`` (ints, slices, None, Ellipsis: a view) and ``AdvancedIndex`` (a basic view
followed by NumPy advanced indexing with integer arrays, bool masks and full slices).

PyTorch and NumPy differ in one place: PyTorch applies integers as ``select`` before the
advanced indices, so ``x[0, :, [1, 2]]`` keeps the sliced dimension first. ``_parse`` splits
such an index into a basic view and an advanced part to get PyTorch's placement.
"""

from __future__ import annotations

import inspect
import numbers
import operator
import warnings
from collections.abc import Sequence

import numpy as np

from .. import _dtype, _settings
from .._device import check_same_device, refuse_meta, xp_of
from .._dtype import scalar_type_name
from .._front import front
from .._sparse_tensor import SparseTensor as _Sparse
from .._tensor import Tensor, _make
from .._warn import user_stacklevel
from ..autograd.grad_mode import GRAD
from ..autograd.graph import make_node_class, record
from ._casts import cast_to
from ._factories import shape_of, sum_to_size
from ._inplace import (
    PARTIAL_OVERLAP,
    SHARED_WRITE,
    check_inplace_autograd,
    partial_overlap,
    rebase_history,
    same_owner,
    shared_alias,
    shares_elements,
    writable,
)
from ._promotion import check_int_scalar, wrap_dim
from ._signatures import check_binds
from .registry import register, register_method
from .views import make_view

__all__ = ["BasicIndex", "AdvancedIndex", "gather_by", "scatter_by", "scatter_inplace",
           "basic_view", "index_put", "gather", "scatter", "scatter_add", "scatter_reduce",
           "index_select", "index_add", "index_copy", "index_fill", "index_reduce",
           "masked_fill",
           "masked_select", "masked_scatter", "take", "take_along_dim", "put", "nonzero",
           "argwhere"]


# -- index specs ---------------------------------------------------------------------------

class BasicIndex:
    """A NumPy basic index (ints, slices, None, Ellipsis): the region is a view."""

    __slots__ = ("idx",)

    def __init__(self, idx):
        self.idx = idx

    def get(self, a):
        return a[self.idx]

    def set(self, a, v, xp):
        a[self.idx] = v

    def add(self, a, v, xp):
        a[self.idx] += v

    def tget(self, t):
        return t[self.idx]

    def lifted(self, k: int):
        """This index for arrays with ``k`` more leading dims (vmap's batch)."""
        idx = self.idx if isinstance(self.idx, tuple) else (self.idx,)
        return BasicIndex((slice(None),) * k + idx)


class AdvancedIndex:
    """``basic`` (a view; ``()`` for none) then ``adv``: integer arrays, bool masks and full
    slices, with NumPy's (and, after the split, PyTorch's) placement of the indexed dims."""

    __slots__ = ("basic", "adv")

    def __init__(self, basic, adv):
        self.basic = basic
        self.adv = adv

    def _view(self, a):
        return a[self.basic] if self.basic else a

    def get(self, a):
        return self._view(a)[self.adv]

    def set(self, a, v, xp):
        self._view(a)[self.adv] = v

    def add(self, a, v, xp):
        ufunc_at(xp, "add", self._view(a), self.adv, v)  # repeated indices accumulate

    def tget(self, t):
        if t.__class__ is not Tensor:  # batched by vmap: on its physical tensor
            return gather_by(t, self, IndexBackward0)
        if self.basic:
            t = basic_view(t, self.basic)
        return gather_by(t, AdvancedIndex((), self.adv), IndexBackward0)

    def lifted(self, k: int):
        """This index for arrays with ``k`` more leading dims (vmap's batch), or None where
        NumPy would not keep them in front (advanced indices apart from each other go
        first)."""
        pre = (slice(None),) * k
        adv = self.adv if isinstance(self.adv, tuple) else (self.adv,)
        pos = [i for i, it in enumerate(adv) if it.__class__ is not slice]
        if pos and pos[-1] - pos[0] + 1 != len(pos):
            return None
        basic = self.basic
        if basic:
            basic = pre + (basic if isinstance(basic, tuple) else (basic,))
        return AdvancedIndex(basic, pre + adv)


# -- specs over tensors batched by vmap ----------------------------------------------------

_NO_LIFT = ("vmap: this index has no form over a batch of examples (advanced indices apart "
            "from each other, or a 0-dim region): one example at a time")


def _batched(t) -> bool:
    """Whether ``t`` is a tensor batched by vmap (a gradient under ``jacrev``)."""
    from .._functorch._batched import is_batched

    return is_batched(t)


def _lift_call(t, spec, run):
    """``run(physical, lifted spec, batch shape)`` for a tensor ``t`` batched by vmap, the
    result wrapped back at ``t``'s levels: specs with a ``lifted(k)`` form (the index over
    ``k`` more leading dims); a vmap error where there is none (the caller's backward then
    runs per example)."""
    from .._functorch._batched import on_physical

    def physical(p, k):
        lifted = getattr(spec, "lifted", None)
        lifted = None if lifted is None else lifted(k)
        if lifted is None:
            raise RuntimeError(_NO_LIFT)
        return run(p, lifted, tuple(p.shape[:k]))

    return on_physical(t, physical)


# -- the two primitives --------------------------------------------------------------------

def gather_by(input: Tensor, spec, node_cls=None) -> Tensor:
    """A copy of ``spec``'s region of ``input``; backward scatters with accumulation."""
    if input.__class__ is not Tensor and _batched(input):
        return _lift_call(input, spec, lambda p, sp, lead: gather_by(p, sp, node_cls))
    d = input._data
    try:
        r = spec.get(d)
    except IndexError as exc:
        raise _spec_index_error(exc, spec, d) from None
    out = _make(r, input._device)
    if node_cls is not None and input.requires_grad and GRAD.enabled:
        record(node_cls, out, (input,), (), (d.shape, spec))
    return out


def _gather_bw(node, g):
    shape, spec = node.ctx
    return (scatter_by(None, spec, g, True, shape=shape),)


IndexBackward0 = make_node_class("IndexBackward0", _gather_bw)


def _strip_leading_ones(v):
    shape = v.shape
    k = 0
    while k < len(shape) and shape[k] == 1:
        k += 1
    return v.reshape(shape[k:]) if k else v


#: ``accumulate`` for the ops that PyTorch runs through its scatter kernels (scatter_add,
#: index_add's fast path): float16 and bfloat16 sum in float32 and round once, where index_put
#: and put (``accumulate=True``) round at every step
OPMATH = "opmath"


def _in_float32(a, dt, xp):
    """``a`` (an array or a number, as ``dt``: float16 or bfloat16) widened to float32 for a
    combining write."""
    return xp.asarray(a, dtype=dt).astype(np.float32)


#: PyTorch's deprecation warnings for the writes it still makes into expand's views
_EXPANDED_WRITE = ("Use of {} on expanded tensors is deprecated. Please clone() the tensor "
                   "before performing this operation. This also applies to advanced indexing "
                   "e.g. tensor[{}] = {}")
_EXPANDED_WARNED = {"index_put_": ("indices", "tensor"), "masked_fill_": ("mask", "scalar"),
                    "index_fill_": ("mask", "scalar")}


def _warn_expanded(name: str) -> None:
    warnings.warn(_EXPANDED_WRITE.format(name, *_EXPANDED_WARNED[name]), UserWarning,
                  stacklevel=user_stacklevel())


def _target(self: Tensor, spec, values, name: str):
    """``self``'s memory for this write. Where several of its elements are one location
    (expand's views), PyTorch writes through a basic index into a region without shared
    elements (``y[0] = 1``, not ``y[:] = 1``), and runs ``index_put_``/``masked_fill_``/
    ``index_fill_`` with a deprecation warning; everything else is refused."""
    arr = self._data
    alias = shared_alias(arr)
    if alias is None:
        raise RuntimeError(SHARED_WRITE)
    if name == "__setitem__" and spec.__class__ is BasicIndex:
        if shares_elements(spec.get(arr)):
            raise RuntimeError(SHARED_WRITE)  # PyTorch's fill_/copy_ into the region
        return alias
    if name == "__setitem__":
        name = "index_put_"
    if name not in _EXPANDED_WARNED:
        raise RuntimeError(SHARED_WRITE)
    _warn_expanded(name)
    if name == "index_put_" and _fills_one_mask(spec, values):
        _warn_expanded("masked_fill_")  # PyTorch's index_put_ runs it as masked_fill_
    return alias


def _write(spec, arr, v, accumulate, xp):
    """``arr[spec] = v`` (or ``+= v`` with repeated indices summing), PyTorch's errors."""
    if arr.__class__ is not np.ndarray and not writable(arr):  # NumPy checks its own
        raise RuntimeError(SHARED_WRITE)
    try:
        if accumulate:
            if hasattr(v, "shape"):
                v = _strip_leading_ones(v)
            if accumulate is OPMATH and arr.dtype in _dtype.OPMATH:
                wide = arr.astype(np.float32)
                spec.add(wide, _in_float32(v, arr.dtype, xp), xp)
                arr[...] = wide
            else:
                spec.add(arr, v, xp)
        else:
            spec.set(arr, v, xp)
    except IndexError as exc:
        raise _spec_index_error(exc, spec, arr) from None
    except ValueError as exc:
        msg = str(exc)
        if "read-only" in msg:
            raise RuntimeError(SHARED_WRITE) from None
        if "broadcast" in msg or "boolean array indexing assignment" in msg:
            region = spec.get(arr).shape
            if spec.__class__ is BasicIndex:  # PyTorch copies into the view: expand's error
                from .._tensor import CPU

                vshape = getattr(v, "shape", ())
                _make(np.broadcast_to(np.zeros((), arr.dtype), vshape), CPU).expand(region)
            raise RuntimeError(f"shape mismatch: value tensor of shape "
                               f"{_lst(getattr(v, 'shape', ()))} "
                               "cannot be broadcast to indexing result of shape "
                               f"{_lst(region)}") from None
        raise


def _values_array(self: Tensor, values):
    """``values`` (a tensor or a scalar) as an array or scalar for ``self``'s memory."""
    if isinstance(values, Tensor):
        v = values._data
        if values._device is not self._device:
            if values._device.type == "cpu" and v.ndim == 0:
                v = cast_to(values, self._device, None, False)._data
            else:
                check_same_device(self, values)
        if v.dtype is not self._data.dtype:
            v = v.astype(self._data.dtype)
        return v
    if isinstance(values, (bool, numbers.Number, np.generic)):
        return values
    raise TypeError(f"can't assign a {type(values).__name__} to a ember.{self.type_name()}")


def scatter_by(input, spec, values, accumulate: bool, node_cls=None, shape=None) -> Tensor:
    """``input`` with ``spec``'s region set to (or, ``accumulate``, incremented by)
    ``values``; ``input=None`` scatters into zeros of ``shape`` (values' dtype/device). A
    gradient batched by vmap (``input`` or ``values``, in backward code) scatters its
    physical tensor."""
    vt = values if isinstance(values, Tensor) else None
    if input is None and vt.__class__ is not Tensor and _batched(vt):
        return _lift_call(vt, spec, lambda p, sp, lead: scatter_by(
            None, sp, p, accumulate, node_cls, shape=lead + tuple(shape)))
    if input is not None and input.__class__ is not Tensor and _batched(input):
        if vt is not None and _batched(vt):
            raise RuntimeError(_NO_LIFT)
        return _lift_call(input, spec, lambda p, sp, lead: scatter_by(
            p, sp, values, accumulate, node_cls))
    if input is None:
        xp = xp_of(vt)
        out_arr = xp.zeros(shape, dtype=vt._data.dtype)
        dev = vt._device
        _write(spec, out_arr, vt._data, accumulate, xp)
    else:
        xp = xp_of(input)
        dev = input._device
        out_arr = input._data.copy()
        _write(spec, out_arr, _values_array(input, values), accumulate, xp)
    out = _make(out_arr, dev)
    if GRAD.enabled and ((input is not None and input.requires_grad) or
                         (vt is not None and vt.requires_grad)):
        vmeta = (vt._data.shape, vt.dtype) if vt is not None else None
        record(node_cls or IndexPutBackward0, out, (input, vt), (), (spec, accumulate, vmeta))
    return out


def _scatter_bw(node, g):
    spec, accumulate, vmeta = node.ctx
    if spec.__class__ is _LegacyReduce:
        raise RuntimeError("derivative for aten::scatter is not implemented")
    gi = gv = None
    if node.next_functions[0][0] is not None:
        gi = g if accumulate else scatter_by(g, spec, 0, False)
    if vmeta is not None and node.next_functions[1][0] is not None:
        gv = _fit_values(spec.tget(g), *vmeta)
    return gi, gv


def _fit_values(g, shape, dtype):
    """A region's gradient summed back to the shape of the values broadcast into it."""
    gshape = shape_of(g)
    if gshape != shape:
        stripped = shape
        while stripped and stripped[0] == 1 and len(stripped) > len(gshape):
            stripped = stripped[1:]
        g = sum_to_size(g, stripped)
        if stripped != shape:
            g = g.reshape(shape)
    if g._data.dtype is not dtype.np:
        g = cast_to(g, None, dtype, False) if g.__class__ is Tensor else g.to(dtype)
    return g


IndexPutBackward0 = make_node_class("IndexPutBackward0", _scatter_bw)


def _write_into(self: Tensor, spec, values, v, accumulate, xp, name: str) -> None:
    """``_write`` into ``self``'s memory; a refused write into memory that several elements
    share is retried where PyTorch makes it (``_target``)."""
    try:
        _write(spec, self._data, v, accumulate, xp)
    except RuntimeError as exc:
        if exc.args[0] is not SHARED_WRITE:
            raise
        _write(spec, _target(self, spec, values, name), v, accumulate, xp)


def scatter_inplace(self: Tensor, spec, values, accumulate: bool, node_cls=None,
                    name: str = "index_put_") -> Tensor:
    """The in-place ``scatter_by``: writes ``self``'s memory, bumps its version and, under
    autograd, rebases its history (through ``copy_slices`` when ``self`` is a view)."""
    vt = values if isinstance(values, Tensor) else None
    v = _values_array(self, values)
    xp = xp_of(self)
    if vt is not None and spec.__class__ is BasicIndex and isinstance(vt._data, np.ndarray) \
            and same_owner(self._data, vt._data) and partial_overlap(spec.get(self._data),
                                                                     vt._data):
        raise RuntimeError(PARTIAL_OVERLAP)  # x[1:] = x[:-1]: PyTorch's copy_ refuses it
    if not (GRAD.enabled and (self.requires_grad or (vt is not None and vt.requires_grad))):
        _write_into(self, spec, values, v, accumulate, xp, name)
        self._bump_version()
        return self
    if self.requires_grad and self.grad_fn is None and spec.__class__ is BasicIndex:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")  # PyTorch's setitem writes through a view
    check_inplace_autograd(self, name)
    old = _make(self._data, self._device)  # stands for self's old value in the graph
    old.requires_grad = self.requires_grad
    old.grad_fn = self.grad_fn
    nr = getattr(self, "_nr", 0)
    if nr:
        old._nr = nr
    _write_into(self, spec, values, v, accumulate, xp, name)
    self._bump_version()
    result = _make(self._data, self._device)
    vmeta = (vt._data.shape, vt.dtype) if vt is not None else None
    record(node_cls or IndexPutBackward0, result, (old, vt), (), (spec, accumulate, vmeta))
    rebase_history(self, result)
    return self


# -- parsing an index ----------------------------------------------------------------------

def _lst(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _index_error(exc, ndim: int) -> IndexError:
    """NumPy's (or CuPy's) IndexError in PyTorch's words."""
    msg = str(exc)
    if msg.startswith("Index "):  # CuPy capitalises NumPy's message
        msg = "i" + msg[1:]
    if "out of bounds for axis" in msg:
        return IndexError(msg.replace("for axis", "for dimension"))
    if msg.startswith("too many indices"):
        return IndexError(f"too many indices for tensor of dimension {ndim}")
    if msg.startswith("shape mismatch"):
        shapes = msg.split("shapes", 1)[1].strip().split(") (")
        dims = [s.strip("() ").rstrip(",") for s in shapes]
        return IndexError("shape mismatch: indexing tensors could not be broadcast together "
                          "with shapes " + ", ".join(f"[{d}]" for d in dims))
    return IndexError(msg)


def _spec_index_error(exc, spec, arr) -> IndexError:
    """``_index_error``, with PyTorch's words for an advanced index out of bounds."""
    if spec.__class__ is AdvancedIndex and "out of bounds" in str(exc):
        return _bounds_error(spec._view(arr).shape, spec.adv if isinstance(spec.adv, tuple)
                             else (spec.adv,))
    return _index_error(exc, arr.ndim)


def _check_slice(s: slice) -> slice:
    step = s.step
    if step is not None and int(step) <= 0:
        raise ValueError("step must be greater than zero" if int(step) < 0 else
                         "slice step cannot be zero")
    return s


def _as_device_array(t: Tensor, host):
    if t._device.type == "cpu":
        return host
    from ..backends import backend_of

    return backend_of(t._device).to_device(host, t._device.index)


def _is_sequence(obj) -> bool:
    """Whether PyTorch's indexing reads ``obj`` as a sequence of indices (lists, tuples,
    ranges, ``ember.Size``, NumPy arrays, and strings, which it then rejects)."""
    if isinstance(obj, (list, tuple, range, np.ndarray)):
        return True
    if isinstance(obj, (int, Tensor)) or obj is None:  # common, and quicker than the ABC
        return False
    return isinstance(obj, Sequence)


def _sequence_array(seq):
    """A sequence index as PyTorch converts it: bool and uint8 data keep their dtype, any
    other numbers become int64 (floats truncated); other data raise ``ember.tensor``'s
    errors."""
    a = seq if isinstance(seq, np.ndarray) else None
    if a is None:
        try:
            a = np.asarray(seq)
        except ValueError:  # ragged: ember.tensor names the bad length below
            pass
    if a is None or a.dtype.kind not in "biuf":
        from .._factory import tensor

        a = tensor(seq)._data
    if a.dtype in _dtype.FLOATING_NP:
        a = a.astype(np.int64)
    return a


def _index_array(t: Tensor, it):
    """An index tensor / ndarray / sequence as an integer or bool array on ``t``'s device."""
    if isinstance(it, Tensor):
        a = it._data
        if it._device is not t._device:
            if it._device.type != "cpu":
                raise RuntimeError("indices should be either on cpu or on the same device as "
                                   f"the indexed tensor ({t._device})")
            a = _as_device_array(t, a)
    else:
        a = _as_device_array(t, _sequence_array(it))
    kind = a.dtype.kind
    if kind == "b" or (kind == "i" and (a.dtype.itemsize >= 4 or not isinstance(it, Tensor))):
        return a
    if a.dtype == np.uint8:
        if a.ndim == 0:  # PyTorch reads a 0-dim byte tensor as a mask, without a warning
            return a.astype(bool)
        warnings.warn("indexing with dtype ember.uint8 is now deprecated, please use a dtype "
                      "ember.bool instead.", UserWarning, stacklevel=user_stacklevel())
        return a.astype(bool)
    if kind == "u" and not isinstance(it, Tensor):  # a NumPy array's (a tensor's: uint16+)
        return a
    raise IndexError("tensors used as indices must be long, int, byte or bool tensors")


def _sequence_as_tuple(index) -> bool:
    """PyTorch's rule: a tuple (``ember.Size`` too) is a tuple of indices, and so is, for
    legacy's sake, a short non-array sequence holding tensors, sequences, slices, None or
    Ellipsis (``x[[0, slice(None)]]`` is ``x[0, :]``)."""
    if isinstance(index, tuple):
        return True
    if isinstance(index, np.ndarray) or not _is_sequence(index) or len(index) >= 32:
        return False
    for it in index:
        if isinstance(it, (Tensor, slice)) or it is None or it is Ellipsis or \
                _is_sequence(it):
            warnings.warn(_NON_TUPLE_SEQUENCE, UserWarning, stacklevel=user_stacklevel())
            return True
    return False


_NON_TUPLE_SEQUENCE = (
    "Using a non-tuple sequence for multidimensional indexing is deprecated and will be "
    "changed in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be "
    "interpreted as tensor index, x[ember.tensor(seq)], which will result either in an error "
    "or a different result")


def _type_name(obj) -> str:
    """The type's name as CPython's ``tp_name`` gives it (``numpy.float64``, ``float``)."""
    cls = type(obj)
    heap_type = cls.__flags__ & (1 << 9)
    if heap_type or cls.__module__ == "builtins":
        return cls.__name__
    return f"{cls.__module__}.{cls.__name__}"


def _as_int(it) -> int:
    """An index that is not an int, slice, tensor or sequence, through ``__index__``."""
    try:
        return operator.index(it)
    except TypeError:
        raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                         f"Variables are valid indices (got {_type_name(it)})") from None


def _parse(t: Tensor, index):
    """``(basic, adv)``: a basic index tuple (applied as a view) and an advanced index tuple
    (None when the index is basic only)."""
    if index.__class__ is not tuple:
        index = tuple(index) if _sequence_as_tuple(index) else (index,)
    items = []
    has_int = has_adv = False
    ellipses = 0
    for it in index:
        c = it.__class__
        if c is int or it is None or it is Ellipsis:
            has_int = has_int or it is None or c is int
            ellipses += it is Ellipsis
        elif c is slice:
            _check_slice(it)
        elif c is bool:
            it = np.bool_(it)
            has_adv = True
        elif isinstance(it, (Tensor, np.ndarray)):
            a = it._data if isinstance(it, Tensor) else it
            if a.ndim == 0 and a.dtype.kind in "iu" and a.dtype != np.uint8:
                if t._data.ndim == 0 and isinstance(it, Tensor):
                    raise IndexError("too many indices for tensor of dimension 0")
                it = int(a)
                has_int = True
            else:
                it = _index_array(t, it)
                has_adv = True
        elif _is_sequence(it):
            it = _index_array(t, it)
            has_adv = True
        else:
            it = _as_int(it)
            has_int = True
        items.append(it)
    if ellipses > 1:
        items = _expand_ellipses(items, t._data.ndim, ellipses)
    if not has_adv:
        return _with_ellipsis(tuple(items)), None
    if not has_int:  # no ints or None: NumPy's placement is PyTorch's
        adv = tuple(items)
        _check_masks(t._data.shape, adv)
        _check_index_broadcast(t._data, adv)
        if t._data.__class__ is not np.ndarray:
            _check_index_bounds(t._data.shape, adv)
        return (), adv
    # PyTorch applies integers (selects) and None first: view with them, then index the rest
    basic, adv = [], []
    for it in items:
        if it.__class__ is int:
            basic.append(it)
        elif isinstance(it, (np.ndarray, np.bool_)) or hasattr(it, "dtype"):
            basic.extend([slice(None)] * (it.ndim if it.dtype.kind == "b" else 1))
            adv.append(it)
        elif it is None:
            basic.append(None)
            adv.append(slice(None))
        else:
            basic.append(it)
            adv.append(slice(None) if it is not Ellipsis else it)
    basic = _with_ellipsis(tuple(basic))
    try:
        view_shape = t._data[basic].shape
    except IndexError as exc:
        raise _index_error(exc, t._data.ndim) from None
    adv = tuple(adv)
    _check_masks(view_shape, adv)
    _check_index_broadcast(t._data, adv)
    if t._data.__class__ is not np.ndarray:
        _check_index_bounds(view_shape, adv)
    return basic, adv


def _expand_ellipses(items, ndim: int, ellipses: int):
    """PyTorch's reading of an index with several Ellipses: each spans the dims the other
    items leave (so all but one span none, or the index runs past the last dim)."""
    specified = sum((it.ndim if it.dtype.kind == "b" else 1) if hasattr(it, "dtype") else
                    (0 if it is None or it is Ellipsis else 1) for it in items)
    span = [slice(None)] * max(ndim - specified, 0)
    out = []
    for it in items:
        if it is Ellipsis:
            out.extend(span)
        else:
            out.append(it)
    excess = specified + len(span) * ellipses - ndim
    while excess > 0 and out and out[-1].__class__ is slice and out[-1] == slice(None):
        out.pop()  # past the last dim: the trailing spans select nothing
        excess -= 1
    if excess > 0:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    return out


def _indexed_dims(ndim: int, adv):
    """``(item, first dim it indexes)`` for the items of an advanced index (an Ellipsis spans
    what the others leave; None takes none; a k-dim mask takes k)."""
    consumed = [(it.ndim if it.dtype.kind == "b" else 1) if hasattr(it, "dtype") else
                (0 if it is Ellipsis or it is None else 1) for it in adv]
    pos = 0
    for k, it in enumerate(adv):
        if it is Ellipsis:
            pos = ndim - sum(consumed[k + 1:])
            continue
        yield it, pos
        pos += consumed[k]


def _check_index_bounds(shape, adv):
    """PyTorch's IndexError for an integer index outside its dim, checked before a device
    array is indexed: CuPy does not check (reads wrap, writes go out of bounds and poison the
    process with an illegal address). One reduction and a sync per index array."""
    for it, pos in _indexed_dims(len(shape), adv):
        if hasattr(it, "dtype") and it.dtype.kind in "iu" and pos < len(shape) and it.size:
            size = shape[pos]
            if int(it.min()) < -size or int(it.max()) >= size:
                raise _bounds_error(shape, adv)


def _bounds_error(shape, adv) -> IndexError:
    """PyTorch's IndexError for an advanced index with a value outside its dim: its kernel
    walks the elements of the broadcast index and, at each, the index tensors in order (a
    k-dim mask counts as k), naming the tensor's position among them as the "dimension"; an
    index into an empty dim has its own message."""
    checks = []  # (position among the index tensors, index array, size of its dim)
    j = 0
    for it, pos in _indexed_dims(len(shape), adv):
        if not hasattr(it, "dtype"):
            continue
        if it.dtype.kind == "b":
            j += max(it.ndim, 1)
            continue
        if pos < len(shape) and it.size:
            if shape[pos] == 0:
                return IndexError("index is out of bounds for dimension with size 0")
            checks.append((j, it, shape[pos]))
        j += 1
    bad = [(it < -size) | (it >= size) for _, it, size in checks]
    try:
        bad = np.broadcast_arrays(*[np.asarray(b) for b in bad])
    except ValueError:  # broadcast with a mask's indices: report in the tensors' order
        pass
    first = None
    for (jj, it, size), b in zip(checks, bad):
        flat = np.flatnonzero(np.asarray(b))
        if flat.size and (first is None or int(flat[0]) < first[0]):
            value = np.broadcast_to(np.asarray(it), b.shape).reshape(-1)[flat[0]]
            first = (int(flat[0]), jj, int(value), size)
    if first is None:
        return IndexError("index out of range")
    _, jj, value, size = first
    return IndexError(f"index {value} is out of bounds for dimension {jj} with size {size}")


def _check_masks(shape, adv):
    """PyTorch's error for a bool mask whose shape does not match the dims it indexes."""
    if not any(getattr(it, "dtype", None) is not None and it.dtype.kind == "b" and it.ndim
               for it in adv):
        return
    ndim = len(shape)
    for it, pos in _indexed_dims(ndim, adv):
        if hasattr(it, "dtype") and it.dtype.kind == "b" and it.ndim:
            for j, s in enumerate(it.shape):
                if pos + j >= ndim:
                    raise IndexError(f"too many indices for tensor of dimension {ndim}")
                if s != shape[pos + j]:
                    raise IndexError(f"The shape of the mask {_lst(it.shape)} at index {j} does "
                                     f"not match the shape of the indexed tensor {_lst(shape)} "
                                     f"at index {pos + j}")


def _check_index_broadcast(d, adv):
    """NumPy's check that the index arrays broadcast together, in PyTorch's words, made before
    a device array is indexed: CuPy raises a ValueError worded its own way. A k-dim mask
    stands for k index arrays of its number of True elements (one sync)."""
    if d.__class__ is np.ndarray:
        return  # NumPy's IndexError is reworded by ``_index_error``
    arrays = [it for it in adv if hasattr(it, "dtype") and (it.ndim or it.dtype.kind != "b")]
    if len(arrays) < 2:
        return
    shapes = []
    for it in arrays:
        if it.dtype.kind == "b":
            shapes.extend([(int(it.sum()),)] * it.ndim)
        else:
            shapes.append(tuple(it.shape))
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together "
                         "with shapes " + ", ".join(_lst(sh) for sh in shapes)) from None


def _with_ellipsis(idx: tuple) -> tuple:
    # a trailing Ellipsis makes NumPy return a 0-dim view instead of a scalar copy
    for it in idx:
        if it is Ellipsis:
            return idx
    return idx + (Ellipsis,)


# -- __getitem__ ---------------------------------------------------------------------------

def _basic_bw(node, g):
    shape, idx = node.ctx
    return (scatter_by(None, BasicIndex(idx), g, False, shape=shape),)


SelectBackward0 = make_node_class("SelectBackward0", _basic_bw)
SliceBackward0 = make_node_class("SliceBackward0", _basic_bw)
_UnsqueezeIndexBackward0 = make_node_class("UnsqueezeBackward0", _basic_bw)
AliasBackward0 = make_node_class("AliasBackward0", _basic_bw)


def _basic_node(idx):
    """The node PyTorch reports for a basic index: that of its last non-trivial item."""
    only_full = False
    for it in reversed(idx):
        if it is Ellipsis:
            continue
        if it is None:
            return _UnsqueezeIndexBackward0
        if it.__class__ is slice:
            if it.start is None and it.stop is None and it.step is None:
                only_full = True
                continue
            return SliceBackward0
        return SelectBackward0
    return SliceBackward0 if only_full else AliasBackward0


_FULL = slice(None)


def _unsqueeze_strides(d, idx: tuple, arr):
    """``arr`` (``d[idx]``) with PyTorch's strides for the dims that ``None`` adds: NumPy
    gives them stride 0, PyTorch applies the items left to right, each ``None`` an
    ``unsqueeze(dim)`` whose stride is ``size * stride`` of the dim it lands before (one
    element past the last dim), taken before a later integer removes that dim."""
    sizes, strides = list(d.shape), list(d.strides)
    dim = 0
    for it in idx:
        if it is None:
            st = d.itemsize if dim == len(sizes) else sizes[dim] * strides[dim]
            sizes.insert(dim, 1)
            strides.insert(dim, st)
            dim += 1
        elif it is Ellipsis:
            dim += d.ndim - sum(1 for i in idx if i is not None and i is not Ellipsis)
        elif it.__class__ is slice:
            start, stop, step = it.indices(sizes[dim])
            sizes[dim] = len(range(start, stop, step))
            strides[dim] *= step
            dim += 1
        else:  # an integer: select
            del sizes[dim], strides[dim]
    strides = tuple(strides)
    if strides == arr.strides or len(strides) != arr.ndim:
        return arr
    return _dtype.strided_view(xp_of(arr), arr, arr.shape, strides)


def basic_view(input: Tensor, idx: tuple, node_cls=None) -> Tensor:
    """The view ``input[idx]`` for a basic index tuple (ending in Ellipsis for 0-dim views)."""
    d = input._data
    try:
        arr = d[idx]
    except IndexError as exc:
        if d.ndim == 0 and str(exc).startswith("too many indices"):
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                             "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number"
                             ) from None
        raise _index_error(exc, d.ndim) from None
    if None in idx:
        for i in idx:  # (with only None, ... and ``:``, NumPy's stride 0 reads as PyTorch's)
            if i is not None and i is not Ellipsis and i != _FULL:
                arr = _unsqueeze_strides(d, idx, arr)
                break
    if input.requires_grad and GRAD.enabled:
        return make_view(input, arr, node_cls or _basic_node(idx), (d.shape, idx),
                         lambda b: b[idx])
    return make_view(input, arr, None, None, lambda b: b[idx])


def getitem(self: Tensor, index) -> Tensor:
    """``self[index]``: basic indices give a view, advanced ones a copy (PyTorch's rules)."""
    c = index.__class__
    if c is int:
        return basic_view(self, (index, Ellipsis), SelectBackward0)
    if c is slice:
        if index.step is not None:
            _check_slice(index)
        return basic_view(self, (index, Ellipsis), SliceBackward0)
    if c is tuple:
        ell = False
        for it in index:
            ci = it.__class__
            if ci is slice:
                if it.step is not None:
                    _check_slice(it)
            elif ci is not int and it is not None:
                if it is Ellipsis and not ell:
                    ell = True
                    continue
                break
        else:
            return basic_view(self, index if ell else index + (Ellipsis,))
    basic, adv = _parse(self, index)
    view = basic_view(self, basic) if basic else self
    if adv is None:
        return view
    if self._device.type == "meta" and any(
            getattr(it, "dtype", None) is not None and it.dtype.kind == "b" and it.ndim
            for it in adv):
        refuse_meta(self, "indexing with a boolean mask")
    return gather_by(view, AdvancedIndex((), adv), IndexBackward0)


def _spec_of(self: Tensor, index):
    c = index.__class__
    if c is int or c is slice:
        if c is slice and index.step is not None:
            _check_slice(index)
        return BasicIndex((index, Ellipsis))
    basic, adv = _parse(self, index)
    if adv is None:
        return BasicIndex(basic)
    return AdvancedIndex(basic, adv)


def setitem(self: Tensor, index, value) -> None:
    """``self[index] = value``: a copy into the view for a basic index (``value`` is cast),
    ``index_put_`` for an advanced one (a tensor ``value`` must have ``self``'s dtype)."""
    spec = _spec_of(self, index)
    if not isinstance(value, Tensor):
        value = _setitem_scalar(self, value)
    elif value.requires_grad and self._data.dtype.kind not in "fcV" and GRAD.enabled:
        value = value.detach()  # an integer tensor takes the value, not its graph
    if spec.__class__ is BasicIndex:
        scatter_inplace(self, spec, value, False, CopySlicesBackward, "__setitem__")
        return
    if isinstance(value, Tensor) and value._data.dtype is not self._data.dtype and \
            _fills_one_mask(spec, value):  # PyTorch's index_put_ turns to masked_fill_
        value = value.reshape(()).to(self.dtype)
    if isinstance(value, Tensor) and value._data.dtype is not self._data.dtype:
        raise RuntimeError("Index put requires the source and destination dtypes match, got "
                           f"{scalar_type_name(self._data.dtype)} for the destination and "
                           f"{scalar_type_name(value._data.dtype)} for the source.")
    if self._data.dtype in _dtype.SHELL_NP:  # a bool mask and a number: PyTorch's masked_fill
        mask_fill = (isinstance(index, Tensor) and index._data.dtype.kind == "b"
                     and not (isinstance(value, Tensor) and value._data.ndim))
        _dtype.check_kernel("masked_fill" if mask_fill else "index_put", self._data.dtype)
    scatter_inplace(self, spec, value, False, CopySlicesBackward if spec.basic else None,
                    "__setitem__")


def _setitem_scalar(self: Tensor, value):
    """A non-tensor ``value`` for ``self[index] = value``: Python numbers (NumPy integers and
    float64) checked for overflow as PyTorch does; other objects refused in its words."""
    c = value.__class__
    if c is float or c is int:  # the common cases: a number that fits, no check needed
        limit = _FAST_LIMITS.get(self._data.dtype)
        if limit is not None and \
                -limit <= value < limit:
            return value
    if isinstance(value, (bool, int, float, complex, np.integer)) and \
            not isinstance(value, np.bool_):
        from .pointwise import _scalar_as

        if isinstance(value, np.integer):
            value = int(value)
        dt = self._data.dtype
        if dt in _HALF_NP and not isinstance(value, complex):
            # PyTorch's setitem rounds a real number to float16/bfloat16 without the check
            # (1e300 is written as inf), where float32 and fill_ refuse it
            return np.asarray(float(value)).astype(dt)[()]
        return _scalar_as(value, dt)
    raise TypeError(f"can't assign a {_type_name(value)} to a ember.{self.type_name()}")


_HALF_NP = (_dtype.float16.np, _dtype.bfloat16.np)


_INT64_LIMIT = 2 ** 63
#: the magnitude below which a Python number is written to a dtype as it is
_FAST_LIMITS = {np.dtype(np.float64): float("inf"), np.dtype(np.float32): 3.4028234663852886e38,
                np.dtype(np.int64): _INT64_LIMIT}


def _fills_one_mask(spec, value: Tensor) -> bool:
    """Whether PyTorch's index_put_ runs this write as masked_fill_ (any value dtype): one
    bool mask, full slices elsewhere, and a one-element value on the CPU."""
    if isinstance(value, Tensor) and (value._data.size != 1 or value._device.type != "cpu"):
        return False  # (a number is a one-element CPU tensor to PyTorch's index_put_)
    masks = 0
    for it in spec.adv:
        if hasattr(it, "dtype"):
            if it.dtype.kind != "b":
                return False
            masks += 1
    return masks == 1


# PyTorch's setitem writes through a view for a basic index (or the integers of a mixed one),
# so the base's node is a CopySlices
CopySlicesBackward = make_node_class("CopySlices", _scatter_bw)


register_method("__getitem__", getitem)
register_method("__setitem__", setitem)


# -- ops built on the primitives -----------------------------------------------------------

def _index_vector(name: str, index: Tensor, expected="int32/int64"):
    a = index._data
    if expected == "int64":
        if a.dtype != np.int64:
            raise _LONG_INDEX_ERRORS[name](a.dtype)
    elif a.dtype.kind != "i" or a.dtype.itemsize < 4:
        raise RuntimeError(f"{name}(): Expected dtype {expected} for index")
    return a


# the ops that take int64 indices only, each with PyTorch's words for another dtype
_LONG_INDEX_ERRORS = {
    "index_copy_": lambda dt: RuntimeError("index_copy_(): Expected a long tensor for index, "
                                           f"but got {scalar_type_name(dt)}"),
    "index_fill_": lambda dt: IndexError("index_fill_(): Expected dtype int64 for index."),
}


def _check_bounds(a, size: int, dim: int, negative_ok: bool, exc=RuntimeError, fmt=None):
    """Raise ``exc`` naming the first index outside ``[0, size)`` (``[-size, size)``)."""
    if not a.size:
        return
    lo = -size if negative_ok else 0
    if int(a.min()) < lo or int(a.max()) >= size:
        bad = a.reshape(-1)[((a < lo) | (a >= size)).reshape(-1)]
        first = int(bad[0])
        raise exc(fmt.format(first=first, size=size, dim=dim) if fmt else
                  f"index {first} is out of bounds for dimension {dim} with size {size}")


def _along_dim(shape, dim: int, idx, xp):
    """The advanced index that picks ``idx[i][j][k]`` along ``dim`` (gather's addressing)."""
    n = len(shape)
    items = []
    for k in range(n):
        if k == dim:
            items.append(idx)
        else:
            r = xp.arange(idx.shape[k]).reshape((1,) * k + (idx.shape[k],) + (1,) * (n - k - 1))
            items.append(r)
    return AdvancedIndex((), tuple(items))


def _dim_slice(dim: int, idx):
    return AdvancedIndex((), (slice(None),) * dim + (idx,))


def _dim_spec(input, dim: int, idx):
    """``_dim_slice`` of ``input``, whose 0-dim form counts as size 1 (PyTorch's rule for the
    index_* ops)."""
    if input._data.ndim == 0:
        return _ZeroDim(_dim_slice(0, idx))
    return _dim_slice(dim, idx)


def _scatter_op(name: str, plan, node_name: str, aliases=(), out: bool = True):
    """Register ``name`` (out of place) and ``name_`` (in place) from ``plan(input, ...) ->
    (input, spec, values, accumulate)``; PyTorch's dispatch error for a dtype its kernel lacks
    (``MISSING_KERNELS``, after the plan's argument checks; the scatter family's in
    ``_scatter_spec``). ``name`` has the plan's parameters (less ``inplace``) and, with
    ``out``, PyTorch's ``out=``."""
    node = make_node_class(node_name, _scatter_bw)
    missing = _dtype.missing_kernel(name)[1]

    def op(input, *args, **kwargs):
        input, spec, values, accumulate = plan(input, *args, **kwargs)
        if missing and input._data.dtype in missing:
            _dtype.check_kernel(name, input._data.dtype)
        return scatter_by(input, spec, values, accumulate, node)

    def op_(self, *args, **kwargs):
        target, spec, values, accumulate = plan(self, *args, inplace=True, **kwargs)
        if missing and self._data.dtype in missing:
            _dtype.check_kernel(name, self._data.dtype)
        return scatter_inplace(self, spec, values, accumulate, node, name + "_")

    op.__name__ = op.__qualname__ = name
    op.__doc__ = plan.__doc__
    op_.__name__ = op_.__qualname__ = name + "_"
    op_.__doc__ = f"In-place version of :func:`{name}`."
    op._node = node
    sig = inspect.signature(plan)
    op.__signature__ = op_.__signature__ = sig.replace(
        parameters=[p for p in sig.parameters.values() if p.name != "inplace"])
    # the in-place method's front: PyTorch's NumPy keyword names (t.scatter_(axis=0, ...))
    op_ = front(op_, name=name + "_", method=True)
    register(name, inplace=op_, aliases=aliases, out="same" if out else False)(op)
    return op, op_


# index_put --------------------------------------------------------------------------------

def _index_put_plan(input, indices, values, accumulate=False, inplace=False):
    """``input`` with ``input[indices] = values`` (``+=`` with ``accumulate``, where repeated
    indices sum). ``indices`` is a tuple of index tensors (None for a full slice)."""
    if not isinstance(values, Tensor):
        raise TypeError(f"index_put(): argument 'values' must be Tensor, not "
                        f"{type(values).__name__}")
    if values._data.dtype is not input._data.dtype:
        raise RuntimeError("Index put requires the source and destination dtypes match, got "
                           f"{scalar_type_name(input._data.dtype)} for the destination and "
                           f"{scalar_type_name(values._data.dtype)} for the source.")
    adv = tuple(slice(None) if i is None else _index_array(input, i) for i in indices)
    ndim = input._data.ndim
    if len(adv) > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim} (got {len(adv)})")
    _check_masks(input._data.shape, adv)
    if input._device.type == "meta" and any(
            getattr(it, "dtype", None) is not None and it.dtype.kind == "b" and it.ndim
            for it in adv):
        refuse_meta(input, "index_put with a boolean mask")
    return input, AdvancedIndex((), adv), values, accumulate


index_put, index_put_ = _scatter_op("index_put", _index_put_plan, "IndexPutBackward0")


# gather / scatter -------------------------------------------------------------------------

def _gather_checks(input, dim, index, name="gather"):
    a = _index_vector(name, index)
    d = input._data
    if max(a.ndim, 1) != max(d.ndim, 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input "
                           "tensor")
    dim = wrap_dim(dim, d.ndim)
    return dim, a


def _as_1d(t):
    return t.reshape(1) if t._data.ndim == 0 else t


@register("gather", out="same")
def gather(input, dim, index, *, sparse_grad=False):
    """Values along ``dim`` at ``index``: ``out[i][j] = input[index[i][j]][j]`` (dim 0).
    ``sparse_grad``: ``input``'s gradient is a sparse COO tensor (one element per element of
    ``index``, uncoalesced, as PyTorch's ``_gather_sparse_backward``)."""
    if sparse_grad and GRAD.enabled and isinstance(input, Tensor) and input.requires_grad:
        GRAD.enabled = False
        try:
            out = gather(input, dim, index)
        finally:
            GRAD.enabled = True
        record(GatherSparseBackward0, out, (input,), (),
               (input._data.shape, wrap_dim(dim, max(input._data.ndim, 1)), index._data))
        return out
    check_same_device(input, index)
    dim, a = _gather_checks(input, dim, index)
    _dtype.check_kernel("gather", input._data.dtype)
    if input._data.ndim == 0 or a.ndim == 0:
        return gather(_as_1d(input), 0, _as_1d(index)).reshape(index._data.shape)
    d = input._data
    for k in range(d.ndim):
        if k != dim and a.shape[k] > d.shape[k]:
            raise RuntimeError(f"Size does not match at dimension {k} expected index "
                               f"{_lst(a.shape)} to be no larger than self {_lst(d.shape)} "
                               f"apart from dimension {dim}")
    _check_bounds(a, d.shape[dim], dim, False)
    return gather_by(input, _along_dim(d.shape, dim, a, xp_of(input)), GatherBackward0)


GatherBackward0 = make_node_class("GatherBackward0", _gather_bw)


def _gather_sparse_bw(node, g):
    """``gather(..., sparse_grad=True)``'s backward: a COO tensor of ``input``'s shape with
    ``g``'s elements at the gathered coordinates (``index``'s own along ``dim``)."""
    from .._sparse_tensor import make_sparse

    shape, dim, a = node.ctx
    xp = xp_of(g)
    if not shape:  # a 0-d input: its one element, no sparse dims
        idx = xp.zeros((0, a.size), dtype=np.int64)
    else:
        a = a.reshape(1) if a.ndim == 0 else a
        grids = list(xp.meshgrid(*(xp.arange(k) for k in a.shape), indexing="ij"))
        grids[dim] = a
        idx = xp.stack([x.reshape(-1) for x in grids]).astype(np.int64, copy=False)
    values = g.reshape(-1).clone()  # (one element or none: coalesced, as PyTorch marks it)
    return (make_sparse(idx, values, tuple(shape), coalesced=idx.shape[1] <= 1),)


#: gather's node when ``sparse_grad=True`` (PyTorch's name, another backward)
GatherSparseBackward0 = make_node_class("GatherBackward0", _gather_sparse_bw)


def _scatter_spec(name, input, dim, index, src):
    check_same_device(input, index, src if isinstance(src, Tensor) else None)
    _dtype.check_kernel("scatter" if src is not None else "scatter_value", input._data.dtype)
    a = index._data
    if a.dtype.kind != "i" or a.dtype.itemsize < 4:
        raise RuntimeError("scatter(): Expected dtype int32/int64 for index")
    d = input._data
    if max(a.ndim, 1) != max(d.ndim, 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as self "
                           "tensor")
    dim = wrap_dim(dim, d.ndim)
    if d.ndim == 0 or a.ndim == 0:
        a = a.reshape(1)
    shape = d.shape if d.ndim else (1,)
    src_shape = None
    if isinstance(src, Tensor):
        if src._data.dtype is not d.dtype:
            raise RuntimeError(f"{name}(): Expected self.dtype to be equal to src.dtype")
        src_shape = src._data.shape or (1,)
    for k in range(len(shape)):
        if (k != dim and a.shape[k] > shape[k]) or (src_shape is not None and
                                                     a.shape[k] > src_shape[k]):
            raise RuntimeError(f"Expected index {_lst(a.shape)} to be no larger than self "
                               f"{_lst(shape)} apart from dimension {dim}" +
                               (f" and to be no larger size than src {_lst(src_shape)}"
                                if src_shape is not None else ""))
    _check_bounds(a, shape[dim], dim, False)
    spec = _along_dim(shape, dim, a, xp_of(input))
    if d.ndim == 0:
        spec = _ZeroDim(spec)
    values = src
    if isinstance(src, Tensor):
        if src._data.ndim == 0:
            values = src.reshape(1)
        if values._data.shape != a.shape:
            values = basic_view(values, tuple(slice(0, n) for n in a.shape) + (Ellipsis,))
    return spec, values


class _ZeroDim:
    """A spec over a 0-dim tensor seen as shape ``(1,)``."""

    __slots__ = ("inner",)

    def __init__(self, inner):
        self.inner = inner

    def get(self, a):
        return self.inner.get(a.reshape(1))

    def set(self, a, v, xp):
        self.inner.set(a.reshape(1), v, xp)

    def add(self, a, v, xp):
        self.inner.add(a.reshape(1), v, xp)

    def tget(self, t):
        return self.inner.tget(t.reshape(1))


def _scatter_plan(input, dim, index, src=None, value=None, *, reduce=None, inplace=False):
    """``input`` with ``src`` (or the scalar ``value``) written along ``dim`` at ``index``:
    ``out[index[i][j]][j] = src[i][j]`` (dim 0); ``reduce='add'`` accumulates."""
    if src is not None and not isinstance(src, Tensor):
        src, value = None, src
    if src is None and value is None:
        raise TypeError("scatter() missing required argument 'src' or 'value'")
    spec, values = _scatter_spec("scatter", input, dim, index, src if src is not None else None)
    if src is None:
        values = value.item() if isinstance(value, Tensor) else value
    if reduce is None:
        return input, spec, values, False
    if reduce in ("add", "multiply"):
        if src is not None and not _WARNED["scatter_reduce"]:
            _WARNED["scatter_reduce"] = True  # PyTorch warns once per process
            warnings.warn("The reduce argument of ember.scatter with Tensor src is deprecated "
                          "and will be removed in a future PyTorch release. Use "
                          "ember.scatter_reduce instead for more reduction options.",
                          UserWarning, stacklevel=user_stacklevel())
        return input, _LegacyReduce(spec, reduce), values, False
    raise RuntimeError("reduce argument must be either add or multiply.")


_WARNED = {"scatter_reduce": False}


class _LegacyReduce:
    """``scatter(reduce='add'|'multiply')``: the region is combined with the values through
    ``ufunc.at``; like PyTorch, its derivative is not implemented."""

    __slots__ = ("inner", "ufunc")

    def __init__(self, inner, reduce):
        self.inner = inner
        self.ufunc = "add" if reduce == "add" else "multiply"

    def get(self, a):
        return self.inner.get(a)

    def set(self, a, v, xp):
        v = _strip_leading_ones(v) if hasattr(v, "shape") else v
        if a.dtype in _dtype.OPMATH:  # combined in float32, rounded once (PyTorch's opmath)
            wide = a.astype(np.float32)
            ufunc_at(xp, self.ufunc, self.inner._view(wide), self.inner.adv,
                     _in_float32(v, a.dtype, xp))
            a[...] = wide
            return
        ufunc_at(xp, self.ufunc, self.inner._view(a), self.inner.adv, v)


scatter, scatter_ = _scatter_op("scatter", _scatter_plan, "ScatterBackward0")


def _scatter_add_plan(input, dim, index, src, inplace=False):
    """``input`` plus ``src`` added along ``dim`` at ``index`` (repeated indices sum)."""
    if not isinstance(src, Tensor):
        raise TypeError("scatter_add(): argument 'src' (position 3) must be Tensor, not "
                        f"{type(src).__name__}")
    spec, values = _scatter_spec("scatter_add", input, dim, index, src)
    return input, spec, values, OPMATH


scatter_add, scatter_add_ = _scatter_op("scatter_add", _scatter_add_plan, "ScatterAddBackward0")


# scatter_reduce ---------------------------------------------------------------------------

_REDUCE_UFUNC = {"sum": "add", "prod": "multiply", "mean": "add", "amax": "maximum",
                 "amin": "minimum"}


def _reduce_identity(reduce, dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype in _dtype.FLOATING_NP:
        return -np.inf if reduce == "amax" else np.inf
    info = np.iinfo(dtype) if dtype.kind in "iu" else None
    if info is None:
        return reduce == "amin"
    return info.min if reduce == "amax" else info.max


def ufunc_at(xp, name: str, target, index, values) -> None:
    """``xp.<name>.at(target, index, values)``: repeated indices combine. CuPy has ``at``
    for add, subtract, maximum and minimum only; a product there runs one vectorised pass per
    repetition of the most repeated index (``_ranked_at``). CuPy's ``add.at`` takes only
    int32/int64/uint32/uint64/float16/float32/float64 (others go through ``_wide_add_at``),
    and its ``maximum.at``/``minimum.at`` no float16, bool or small ints, drop NaNs and
    round float64 through float32 (all go through ``_extreme_at``)."""
    if xp is np:
        getattr(np, name).at(target, index, values)
    elif name == "multiply" and not _has_multiply_at(xp):
        _ranked_at(xp, "multiply", target, index, values)
    elif (name == "add" and target.dtype.kind in "fc"
          and _settings.are_deterministic_algorithms_enabled()):
        # use_deterministic_algorithms: CuPy's add.at is an atomic scatter whose float sums
        # depend on thread order; these passes sum in index order, as the CPU does
        _ranked_at(xp, "add", target, index, values)
    elif name in ("maximum", "minimum") and target.dtype == _dtype.BFLOAT16_NP:
        wide = target.astype(np.float32)  # exact: bfloat16 is float32's upper half
        _extreme_at(xp, name, wide, index, xp.asarray(values, dtype=target.dtype)
                    .astype(np.float32))
        target[...] = wide.astype(target.dtype)
    elif name in ("maximum", "minimum") and (target.dtype.kind in "biu" or (
            target.dtype.kind == "f" and target.dtype.itemsize in _KEY_MASK)):
        _extreme_at(xp, name, target, index, values)
    elif name == "add" and target.dtype.kind in "biuc" and target.dtype not in _ADD_AT_DTYPES:
        _wide_add_at(xp, target, index, values)
    else:
        getattr(xp, name).at(target, index, values)


_ADD_AT_DTYPES = frozenset(np.dtype(t) for t in (np.int32, np.int64, np.uint32, np.uint64,
                                                 np.float16, np.float32, np.float64))


def _wide_add_at(xp, target, index, values) -> None:
    """``add.at`` for the dtypes CuPy's lacks: bool and small integers summed as int64 and
    cast back (wrapping, and ``or`` for bool, as NumPy's), complex as its two float parts."""
    dt = target.dtype
    v = xp.asarray(values, dtype=dt)
    if dt.kind == "c":
        # each part in its own precision: complex32's float16 parts round at every add, as
        # PyTorch's sequential complex32 sums do
        part = _dtype.real_part(target).dtype
        # real_part/imag_part: complex32's .real/.imag are not its parts (ml_dtypes 0.7
        # gives .imag as read-only zeros, NumPy's answer for a real array)
        re = _dtype.real_part(target).astype(part)
        im = _dtype.imag_part(target).astype(part)
        xp.add.at(re, index, _dtype.real_part(v).astype(part))
        xp.add.at(im, index, _dtype.imag_part(v).astype(part))
        out = xp.empty(target.shape, dtype=dt)
        _dtype.real_part(out)[...] = re
        _dtype.imag_part(out)[...] = im
        target[...] = out
        return
    wide = target.astype(np.int64)
    xp.add.at(wide, index, v.astype(np.int64))
    target[...] = wide.astype(dt)


_EXTREME_AT_INTS = frozenset(np.dtype(t) for t in (np.int32, np.int64, np.uint32, np.uint64))
_KEY_MASK = {2: 0x7FFF, 4: 0x7FFFFFFF, 8: 0x7FFFFFFFFFFFFFFF}
_INT64 = np.iinfo(np.int64)


def _extreme_at(xp, name: str, target, index, values) -> None:
    """``maximum.at``/``minimum.at`` through CuPy's exact int64 atomics: a float becomes an
    int64 key with the float's order (its bits, the negatives' magnitude bits flipped), a NaN
    the key that always wins (NaN propagates, as NumPy's); integers and bool are widened."""
    dt = target.dtype
    v = xp.asarray(values, dtype=dt)
    if dt in _EXTREME_AT_INTS:
        getattr(xp, name).at(target, index, v)
        return
    if dt.kind != "f":  # bool and small integers: exact in int64
        wide = target.astype(np.int64)
        getattr(xp, name).at(wide, index, v.astype(np.int64))
        target[...] = wide.astype(dt)
        return
    bits = np.dtype(f"int{8 * dt.itemsize}")
    mask = _KEY_MASK[dt.itemsize]
    nan_key = _INT64.max if name == "maximum" else _INT64.min

    def key(a):
        i = xp.ascontiguousarray(a).view(bits).astype(np.int64)
        return xp.where(xp.isnan(a), nan_key, xp.where(i < 0, i ^ mask, i))

    k = key(target)
    getattr(xp, name).at(k, index, key(v))
    is_nan = k == nan_key
    k = xp.where(k < 0, k ^ mask, k)  # the key's map is its own inverse
    out = k.astype(bits).view(dt)
    target[...] = xp.where(is_nan, xp.asarray(np.nan, dtype=dt), out)


_MULTIPLY_AT: dict = {}


def _has_multiply_at(xp) -> bool:
    ok = _MULTIPLY_AT.get(xp)
    if ok is None:
        try:
            probe = xp.ones(2)
            xp.multiply.at(probe, xp.zeros(2, dtype=np.int64), 2.0)
            ok = bool((probe[0] == 4).item())
        except Exception:  # any failure means: not supported here
            ok = False
        _MULTIPLY_AT[xp] = ok
    return ok


def _ranked_at(xp, name: str, target, index, values) -> None:
    """``xp.<name>.at`` (multiply, or add) without ``ufunc.at``: the k-th occurrence of every
    target position is applied in pass k, so that within a pass the positions are distinct.
    The occurrences are applied in index order, as NumPy's ``at`` does: deterministic, and
    for add the same sums as the CPU's (an atomic scatter-add is neither)."""
    positions = xp.arange(target.size).reshape(target.shape)[index].reshape(-1)
    vals = xp.broadcast_to(xp.asarray(values, dtype=target.dtype),
                           target[index].shape).reshape(-1)
    n = positions.shape[0]
    if not n:
        return
    work = target if target.flags.c_contiguous else xp.ascontiguousarray(target)
    flat = work.reshape(-1)
    combine = operator.add if name == "add" else operator.mul
    order = xp.argsort(positions, kind="stable")
    sorted_pos = positions[order]
    first = xp.ones(n, dtype=bool)
    first[1:] = sorted_pos[1:] != sorted_pos[:-1]
    starts = xp.nonzero(first)[0]
    rank = xp.arange(n) - starts[xp.cumsum(first) - 1]
    for k in range(int(rank.max().item()) + 1):
        sel = order[rank == k]
        at = positions[sel]
        flat[at] = combine(flat[at], vals[sel])
    if work is not target:
        target[...] = work


def _scatter_reduce_arrays(d, spec, v, reduce, include_self, xp, opmath=False):
    """``d`` with ``v`` reduced into ``spec``'s region; ``opmath``: float16 and bfloat16 are
    reduced in float32 and rounded once (PyTorch's scatter kernels; its index_reduce rounds
    every step)."""
    if opmath and d.dtype in _dtype.OPMATH:
        return _scatter_reduce_arrays(d.astype(np.float32), spec, v.astype(np.float32),
                                      reduce, include_self, xp).astype(d.dtype)
    out = d.copy()
    if not include_self:
        spec.set(out, _reduce_identity(reduce, d.dtype), xp)
    ufunc_at(xp, _REDUCE_UFUNC[reduce], spec._view(out), spec.adv, v)
    if reduce == "mean":
        counts = xp.zeros(d.shape, dtype=np.int64)
        xp.add.at(counts, spec.adv, 1)
        if include_self:
            counts += 1
        counts = xp.maximum(counts, 1)
        out = out / counts if d.dtype in _dtype.FLOATING_NP else out // counts
        out = out.astype(d.dtype, copy=False)
    return out


_REDUCE_ALIASES = {"max": "amax", "min": "amin"}


@register("scatter_reduce", out=True, inplace=True)
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """Reduce ``src`` into ``input`` along ``dim`` at ``index`` with ``reduce`` ('sum',
    'prod', 'mean', 'amax', 'amin'); ``include_self`` counts ``input``'s own values."""
    reduce = _REDUCE_ALIASES.get(reduce, reduce)  # PyTorch's kernel reads max/min as amax/amin
    if reduce not in _REDUCE_UFUNC:
        raise RuntimeError("reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    if input._data.dtype in _dtype.SHELL_NP and reduce not in ("sum", "prod"):
        # PyTorch's sum and prod reductions are scatter's kernel, the others their own
        raise _dtype.no_kernel(f"scatter_gather_tensor_cpu_reduce_{reduce}", input._data.dtype)
    spec, values = _scatter_spec("scatter_reduce", input, dim, index, src)
    if input._data.ndim == 0:
        raise RuntimeError("scatter_reduce(): 0-dim tensors are not supported")
    out = _make(_scatter_reduce_arrays(input._data, spec, values._data, reduce, include_self,
                                       xp_of(input), opmath=True), input._device)
    if GRAD.enabled and (input.requires_grad or src.requires_grad):
        record(ScatterReduceBackward0, out, (input, values), (input, values),
               (wrap_dim(dim, input._data.ndim), index, reduce, include_self, spec),
               save_output=True)
    return out


def _reduce_into_bw(node, g, pick, redo, name, src_label):
    """The gradients of ``scatter_reduce`` / ``index_reduce`` (PyTorch's
    ``scatter_reduce_backward`` / ``index_reduce_backward``): ``pick(t)`` reads ``t`` at the
    positions ``src`` was reduced into, ``redo(self, src)`` re-runs the forward. Masks are
    constants built on arrays; the rest is Tensor ops, so gradients of every order follow."""
    self, src = node.saved
    _, _, reduce, include_self, spec = node.ctx
    xp = xp_of(self)
    sd, srd = self._data, src._data

    def const(a):
        return _make(a, self._device)

    if reduce == "sum":
        gs, gsrc = g, pick(g)
    elif reduce == "mean":
        n = (xp.ones if include_self else xp.zeros)(sd.shape, dtype=sd.dtype)
        ufunc_at(xp, "add", n, spec.adv, 1)
        n[n == 0] = 1
        gs = g / const(n)
        gsrc = pick(gs)
    elif reduce in ("amax", "amin"):  # ties share the gradient evenly
        rd = node.out_data
        self_is = (sd == rd).astype(sd.dtype)
        src_is = (srd == spec.get(rd)).astype(sd.dtype)
        n = self_is.copy()
        xp.add.at(n, spec.adv, src_is)
        distributed = g / const(n)
        gs = distributed * const(self_is)
        gsrc = pick(distributed) * const(src_is)
    else:  # prod: exclusive products, with single zeros handled as PyTorch does
        result = node.output()
        masked_self = self.masked_fill(const(sd == 0), 1)
        gs = g * redo(masked_self, src) / masked_self
        src_zero = srd == 0
        zeros = xp.zeros(sd.shape, dtype=np.int64)
        xp.add.at(zeros, spec.adv, src_zero)
        src_zeros = spec.get(zeros)
        single = src_zero & (src_zeros == 1)
        masked_src_result = redo(self, src.masked_fill(const(single), 1))
        one_zero = pick(g * masked_src_result)
        others = pick(g * result) / src.masked_fill(const(src_zero), 1)
        gsrc = one_zero.masked_fill(const(~single), 0) + others.masked_fill(const(single), 0)
        if gsrc.requires_grad and bool((src_zeros > 1).any().item()):
            gsrc = _delayed_error(gsrc, f"{name}(): Double backward is unsupported for "
                                  f"{src_label} when >1 zeros in {src_label} are scattered to "
                                  "the same position. This is because the gradient of "
                                  f"{src_label} at this position is 0 for first-order "
                                  "derivatives but non-zero for higher-order derivatives.")
    if not include_self:
        gs = scatter_by(gs, spec, 0, False)
    return gs, gsrc


def _delayed_error_bw(node, g):
    raise RuntimeError(node.ctx)


DelayedError = make_node_class("DelayedError", _delayed_error_bw)


def _delayed_error(t: Tensor, msg: str) -> Tensor:
    """``t``'s value, with a graph edge that raises ``msg`` if differentiated again."""
    return record(DelayedError, _make(t._data, t._device), (t,), (), msg)


def _scatter_reduce_bw(node, g):
    dim, index = node.ctx[0], node.ctx[1]
    reduce, include_self = node.ctx[2], node.ctx[3]
    return _reduce_into_bw(
        node, g, lambda t: t.gather(dim, index),
        lambda s, v: s.scatter_reduce(dim, index, v, reduce, include_self=include_self),
        "scatter_reduce", "src")


ScatterReduceBackward0 = make_node_class("ScatterReduceBackward0", _scatter_reduce_bw)


# index_reduce -----------------------------------------------------------------------------

_INDEX_REDUCE = ("prod", "mean", "amax", "amin")
_BETA_WARNED = []


def _index_reduce_checks(input, dim, index, source, reduce):
    if reduce not in _INDEX_REDUCE:
        raise RuntimeError("index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    check_same_device(input, index, source)
    a = index._data
    if a.ndim > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector, but got dim: "
                         f"{a.ndim} with type: {_pretty_any(a.dtype)} and size: "
                         f"{_lst(a.shape)}")
    if a.dtype.kind != "i" or a.dtype.itemsize < 4:
        raise RuntimeError("index_reduce_(): Expected dtype int32/int64 for index but got: "
                           f"{_pretty_any(a.dtype)}")
    d, s = input._data, source._data
    if s.dtype is not d.dtype:
        raise RuntimeError(f"index_reduce_(): self ({_pretty_any(d.dtype)}) and source "
                           f"({_pretty_any(s.dtype)}) must have the same scalar type")
    dim = wrap_dim(dim, d.ndim)
    n = s.shape[dim] if s.ndim else 1
    if a.size != n:
        raise RuntimeError(f"index_reduce_(): Number of indices ({a.size}) should be equal to "
                           f"source.size(dim): ({n}), for dim: {dim}")
    if s.ndim != d.ndim or any(s.shape[k] != d.shape[k] for k in range(d.ndim) if k != dim):
        raise RuntimeError("source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {_lst(d.shape)} "
                           f"source.shape = {_lst(s.shape)}")
    _check_bounds(a, d.shape[dim] if d.ndim else 1, dim, False, IndexError,
                  "index out of range in self")
    _dtype.check_kernel("index_reduce", d.dtype)
    return dim, a.reshape(-1)


def _pretty_any(dt) -> str:
    return scalar_type_name(dt) if dt.name in _PRETTY_OK else str(dt)


@register("index_reduce", out=True, inplace=True)
def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """Reduce the slices of ``source`` into the slices of ``input`` along ``dim`` at
    ``index`` with ``reduce`` ('prod', 'mean', 'amax', 'amin'); ``include_self`` counts
    ``input``'s own values (else slices that receive any source are reduced from scratch)."""
    dim, a = _index_reduce_checks(input, dim, index, source, reduce)
    if not _BETA_WARNED:
        _BETA_WARNED.append(True)
        warnings.warn("index_reduce() is in beta and the API may change at any time.",
                      UserWarning, stacklevel=user_stacklevel())
    if input._data.ndim == 0:
        return index_reduce(input.reshape(1), 0, index.reshape(-1), source.reshape(1), reduce,
                            include_self=include_self).reshape(())
    spec = _dim_slice(dim, a)
    out = _make(_scatter_reduce_arrays(input._data, spec, source._data, reduce, include_self,
                                       xp_of(input)), input._device)
    if GRAD.enabled and (input.requires_grad or source.requires_grad):
        record(IndexReduceBackward0, out, (input, source), (input, source),
               (dim, index, reduce, include_self, spec), save_output=True)
    return out


def _index_reduce_bw(node, g):
    dim, index = node.ctx[0], node.ctx[1]
    reduce, include_self = node.ctx[2], node.ctx[3]
    flat = index.reshape(-1)
    return _reduce_into_bw(
        node, g, lambda t: t.index_select(dim, flat),
        lambda s, v: index_reduce(s, dim, flat, v, reduce, include_self=include_self),
        "index_reduce", "source")


IndexReduceBackward0 = make_node_class("IndexReduceBackward0", _index_reduce_bw)


# index_select / index_add / index_copy / index_fill ---------------------------------------

def _dim_index(name, input, dim, index, exc=RuntimeError, expected="int32/int64",
               negative_ok=False, fmt=None):
    check_same_device(input, index)
    a = _index_vector(name, index, expected)
    if a.ndim > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector")
    d = input._data
    dim = wrap_dim(dim, d.ndim)
    size = d.shape[dim] if d.ndim else 1
    _check_bounds(a, size, dim, negative_ok, exc, fmt)
    return dim, a.reshape(-1)


@register("index_select", out="same")
def index_select(input, dim, index):
    """The slices of ``input`` along ``dim`` at the positions in the vector ``index``."""
    if input.__class__ is _Sparse:  # ember._sparse_tensor: its own kernel
        return input.index_select(dim, index)
    _dtype.check_kernel("index_select", input._data.dtype)
    return select_slices(input, dim, index)


def select_slices(input, dim, index):
    """``index_select`` for every dtype (ops whose PyTorch kernels select slices their own
    way, such as ``repeat_interleave``, compute where ``index_select`` refuses a dtype)."""
    ndim = input._data.ndim
    dim = wrap_dim(dim, ndim)
    # PyTorch's dim-1 kernel (inputs of two or more dims) words its bounds error its own way
    exc, fmt = (RuntimeError, "INDICES element is out of DATA bounds, id={first} axis_dim={size}"
                ) if dim == 1 and ndim > 1 else (IndexError, "index out of range in self")
    dim, a = _dim_index("index_select", input, dim, index, exc, "int32 or int64", fmt=fmt)
    if input._data.ndim == 0:  # a 0-dim result (PyTorch treats the input as size 1)
        if a.size != 1:
            raise RuntimeError("index_select(): Index to scalar can have only 1 value, got "
                               f"{a.size} value(s)")
        return gather_by(input.reshape(1), _dim_slice(0, a), IndexSelectBackward0).reshape(())
    r = xp_of(input).take(input._data, a, axis=dim)
    out = _make(r, input._device)
    if input.requires_grad and GRAD.enabled:
        record(IndexSelectBackward0, out, (input,), (), (input._data.shape, _dim_slice(dim, a)))
    return out


IndexSelectBackward0 = make_node_class("IndexSelectBackward0", _gather_bw)


def _index_add_plan(input, dim, index, source, *, alpha=1, inplace=False):
    """``input`` with ``alpha * source`` added to the slices along ``dim`` at ``index``
    (repeated indices sum)."""
    check_same_device(input, source)
    a = index._data
    if a.dtype.kind != "i" or a.dtype.itemsize < 4:
        got = scalar_type_name(a.dtype) if a.dtype.name in _PRETTY_OK else a.dtype
        raise RuntimeError(f"index_add_(): Expected dtype int32/int64 for index but got: {got}")
    if source._data.dtype is not input._data.dtype:
        raise RuntimeError(f"index_add_(): self ({scalar_type_name(input._data.dtype)}) and "
                           f"source ({scalar_type_name(source._data.dtype)}) must have the same "
                           "scalar type")
    exc, fmt = _index_add_bounds_error(input._data.ndim, dim, a.dtype, alpha)
    dim, a = _dim_index("index_add_", input, dim, index, exc, fmt=fmt)
    _check_source_shape(input, source, dim, a, "index_add_")
    values = source if alpha == 1 else source * alpha
    # float16 sums in float32, rounded once, where PyTorch runs scatter_add (see below); its
    # general loop rounds every step
    acc = True if exc is IndexError else OPMATH
    return input, _dim_spec(input, dim, a), _source_for(values, input), acc


def _index_add_bounds_error(ndim: int, dim: int, index_dtype, alpha):
    """The exception type and message PyTorch gives an out-of-range ``index_add_`` index.

    PyTorch runs ``index_add_`` as ``scatter_add_`` (a RuntimeError in scatter's words) when
    the input has two or more dims, ``dim`` is its first or last, the index is int64 and
    ``alpha`` is 1; its general loop raises IndexError.
    """
    dim = wrap_dim(dim, ndim)
    if ndim > 1 and dim in (0, ndim - 1) and index_dtype == np.int64 and alpha == 1:
        return RuntimeError, None
    return IndexError, "index out of range in self"


_PRETTY_OK = {"float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
              "uint8", "bool"}


def _source_for(source, input):
    return source.reshape(1) if source._data.ndim == 0 and input._data.ndim else source


def _check_source_shape(input, source, dim, a, name):
    d, s = input._data.shape, source._data.shape
    if name == "index_add_" and not len(d) and len(s):
        raise RuntimeError("source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = [] source.shape = {_lst(s)}")
    n = s[dim] if len(s) else 1
    if a.size != n:
        raise RuntimeError(f"{name}(): Number of indices ({a.size}) should be equal to "
                           f"source.size(dim): ({n}), for dim: {dim}")
    if len(s) and len(d) and (len(s) != len(d) or
                              any(s[k] != d[k] for k in range(len(d)) if k != dim)):
        raise RuntimeError("source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {_lst(d)} source.shape = "
                           f"{_lst(s)}")


index_add, index_add_ = _scatter_op("index_add", _index_add_plan, "IndexAddBackward0")


def _index_copy_plan(input, dim, index, source, inplace=False):
    """``input`` with the slices along ``dim`` at ``index`` replaced by ``source``'s."""
    check_same_device(input, source)
    if source._data.dtype is not input._data.dtype:
        raise RuntimeError("index_copy_(): self and source expected to have the same dtype, but "
                           f"got (self) {scalar_type_name(input._data.dtype)} and (source) "
                           f"{scalar_type_name(source._data.dtype)}")
    dim, a = _dim_index("index_copy_", input, dim, index, IndexError, "int64",
                        fmt="index_copy_(): index {first} is out of bounds for dimension {dim} "
                            "with size {size}")
    _check_source_shape(input, source, dim, a, "index_copy_")
    return input, _dim_spec(input, dim, a), _source_for(source, input), False


index_copy, index_copy_ = _scatter_op("index_copy", _index_copy_plan, "IndexCopyBackward0")


def _scalar_value(name, value):
    if isinstance(value, Tensor) and value._data.ndim:
        raise RuntimeError(f"{name} only supports a 0-dimensional value tensor, but got tensor "
                           f"with {value._data.ndim} dimension(s).")
    if value.__class__ is int:
        check_int_scalar(value)
    return value


def _index_fill_plan(input, dim, index, value, inplace=False):
    """``input`` with the slices along ``dim`` at ``index`` set to the scalar ``value``."""
    dim, a = _dim_index("index_fill_", input, dim, index, IndexError, "int64",
                        negative_ok=True)
    return input, _dim_spec(input, dim, a), _scalar_value("index_fill_", value), False


index_fill, index_fill_ = _scatter_op("index_fill", _index_fill_plan, "IndexFillBackward0")


# masked ops -------------------------------------------------------------------------------



def _mask_array(name, input, mask):
    if not isinstance(mask, Tensor):
        raise TypeError(f"{name}(): argument 'mask' must be Tensor, not {type(mask).__name__}")
    m = mask._data
    if m.dtype.kind != "b":
        if name == "masked_scatter_":  # its kernel names the dtype as a scalar type
            if m.dtype == np.uint8:
                warnings.warn("masked_scatter_ received a mask with dtype ember.uint8, this "
                              "behavior is now deprecated,please use a mask with dtype "
                              "ember.bool instead.", UserWarning, stacklevel=user_stacklevel())
            got = scalar_type_name(m.dtype)
        else:
            got = _dtype.options_type_name(m.dtype)
        raise RuntimeError(f"{name} only supports boolean masks, but got mask with dtype {got}")
    if mask._device is not input._device:
        if mask._device.type == "cpu" and m.ndim == 0:
            m = cast_to(mask, input._device, None, False)._data
        else:
            check_same_device(input, mask)
    return m


def _broadcast_input(input, mask, inplace):
    """``input`` expanded to the broadcast shape with ``mask`` (in place: mask must fit)."""
    shape = input._data.shape
    bshape = np.broadcast_shapes(shape, mask.shape)
    if bshape != shape:
        if inplace:
            raise RuntimeError(f"output with shape {_lst(shape)} doesn't match the broadcast "
                               f"shape {_lst(bshape)}")
        input = input.expand(bshape)
    if mask.shape != bshape:
        mask = xp_of(input).broadcast_to(mask, bshape)
    return input, mask


def _masked_fill_plan(input, mask, value, inplace=False):
    """``input`` with the elements where ``mask`` is True set to ``value`` (a scalar or a
    0-dim tensor); ``mask`` broadcasts."""
    m = _mask_array("masked_fill_", input, mask)
    value = _scalar_value("masked_fill_", value)
    input, m = _broadcast_input(input, m, inplace)
    return input, AdvancedIndex((), (m,)), value, False


masked_fill, masked_fill_ = _scatter_op("masked_fill", _masked_fill_plan, "MaskedFillBackward0")


def _masked_scatter_plan(input, mask, source, inplace=False):
    """``input`` with the elements where ``mask`` is True taken, in order, from ``source``."""
    m = _mask_array("masked_scatter_", input, mask)
    check_same_device(input, source)
    if source._data.dtype is not input._data.dtype:
        raise RuntimeError("masked_scatter: expected self and source to have same dtypes but "
                           f"got{scalar_type_name(input._data.dtype)} and "
                           f"{scalar_type_name(source._data.dtype)}")
    input, m = _broadcast_input(input, m, inplace)
    count = int(m.sum())
    if source._data.size < count:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    values = source.reshape(-1)
    if values._data.size != count:
        values = basic_view(values, (slice(0, count), Ellipsis))
    return input, AdvancedIndex((), (m,)), values, False


masked_scatter, masked_scatter_ = _scatter_op("masked_scatter", _masked_scatter_plan,
                                              "MaskedScatterBackward0", out=False)


@register("masked_select", out=True)
def masked_select(input, mask):
    """The elements of ``input`` where ``mask`` is True, as a 1-D tensor (both broadcast)."""
    if not isinstance(mask, Tensor) or mask._data.dtype.kind != "b":
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    refuse_meta(mask, "masked_select")
    check_same_device(input, mask)
    _dtype.check_kernel("masked_select", input._data.dtype)
    m = mask._data
    input, m = _broadcast_input(input, m, False)
    return gather_by(input, AdvancedIndex((), (m,)), MaskedSelectBackward0)


MaskedSelectBackward0 = make_node_class("MaskedSelectBackward0", _gather_bw)


# take / put / take_along_dim --------------------------------------------------------------

def _flat_spec(name, input, index):
    check_same_device(input, index)
    a = index._data
    if a.dtype != np.int64:
        got = scalar_type_name(a.dtype) if a.dtype.name in _PRETTY_OK else a.dtype
        raise RuntimeError(f"{name}(): Expected a long tensor for index, but got {got}")
    n = input._data.size
    _check_bounds(a, n, 0, True, IndexError,
                  "out of range: tried to access index {first} on a tensor of {size} elements.")
    xp = xp_of(input)
    shape = input._data.shape
    if not shape:
        return _ZeroDim(AdvancedIndex((), (a,)))
    flat = xp.where(a < 0, a + n, a) if a.size else a
    return AdvancedIndex((), xp.unravel_index(flat, shape))


@register("take", out=True)
def take(input, index):
    """``input`` seen as 1-D, indexed by ``index`` (result has ``index``'s shape)."""
    _dtype.check_kernel("take", input._data.dtype)
    return gather_by(input, _flat_spec("take", input, index), TakeBackward0)


TakeBackward0 = make_node_class("TakeBackward0", _gather_bw)


def _put_plan(input, index, source, accumulate=False, inplace=False):
    """``input`` seen as 1-D with ``source`` written at ``index`` (summed with
    ``accumulate``)."""
    if source._data.size != index._data.size:
        raise IndexError("put_(): Expected source and index to have the same number of "
                         f"elements, but got source.numel() = {source._data.size}, "
                         f"index.numel() = {index._data.size}")
    if source._data.dtype is not input._data.dtype:
        raise RuntimeError("put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {scalar_type_name(input._data.dtype)} and source.dtype = "
                           f"{scalar_type_name(source._data.dtype)}")
    spec = _flat_spec("put_", input, index)
    values = source.reshape(index._data.shape) if source._data.shape != index._data.shape \
        else source
    return input, spec, values, accumulate


put, put_ = _scatter_op("put", _put_plan, "PutBackward0", out=False)


@register("take_along_dim", out=True)
def take_along_dim(input, indices, dim=None):
    """``gather`` along ``dim`` with ``input`` and ``indices`` broadcast against each other
    (``dim=None``: over the flattened input)."""
    if indices._data.dtype != np.int64:
        raise RuntimeError("torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{scalar_type_name(indices._data.dtype)}")
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1))
    if input._data.ndim != indices._data.ndim:
        raise RuntimeError("torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {input._data.ndim} dimensions for "
                           f"input, and {indices._data.ndim} dimensions for indices")
    dim = wrap_dim(dim, input._data.ndim)
    s_in, s_idx = list(input._data.shape), list(indices._data.shape)
    n_in, n_idx = s_in[dim], s_idx[dim]
    s_in[dim] = s_idx[dim] = 1
    b = list(np.broadcast_shapes(tuple(s_in), tuple(s_idx)))
    b_in, b_idx = list(b), list(b)
    b_in[dim], b_idx[dim] = n_in, n_idx
    return gather(input.expand(b_in), dim, indices.expand(b_idx))


# nonzero ----------------------------------------------------------------------------------

@register("nonzero", out=True, differentiable=False)
def nonzero(input, *, as_tuple=False):
    """Indices of the non-zero elements: an ``(n, ndim)`` int64 tensor, or with ``as_tuple``
    one 1-D tensor per dimension."""
    d = input._data
    _dtype.check_kernel("nonzero", d.dtype)
    refuse_meta(input, "nonzero")
    xp = xp_of(input)
    if as_tuple:
        return tuple(_make(a.astype(np.int64, copy=False), input._device)
                     for a in xp.nonzero(d if d.ndim else d.reshape(1)))
    return _make(xp.argwhere(d).astype(np.int64, copy=False), input._device)


@register("argwhere", differentiable=False)
def argwhere(input):
    """``nonzero(input)``: an ``(n, ndim)`` tensor of the indices of non-zero elements."""
    return nonzero(input)


# -- searchsorted, bucketize, isin ---------------------------------------------------------

def _scalar_or_tensor(x, like):
    if isinstance(x, Tensor):
        check_same_device(like, x)
        return x._data, False
    if isinstance(x, (bool, numbers.Number, np.generic)):
        return xp_of(like).asarray(x), True
    raise TypeError(f"expected Tensor or Number, got {type(x).__name__}")


@register("searchsorted", method=False, differentiable=False)
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None, out=None):
    """Indices at which ``input``'s values would be inserted into the innermost dim of
    ``sorted_sequence`` to keep it sorted (the first such place; the last with ``right`` or
    ``side='right'``)."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError("torch.searchsorted(): side can only be 'left' or 'right' but "
                               f"got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to "
                               "opposites, got side of left while right was True")
        right = side == "right"
    try:
        seq = sorted_sequence._data
        vals, scalar = _scalar_or_tensor(input, sorted_sequence)
    except (AttributeError, TypeError):  # what no signature takes: PyTorch's parser refuses
        check_binds("searchsorted", (sorted_sequence, input),
                    {} if out is None else {"out": out})
        raise
    xp = xp_of(sorted_sequence)
    if seq.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive "
                           "dimension, but got 0 dimension")
    if sorter is not None:
        check_same_device(sorted_sequence, sorter)
        if sorter._data.shape != seq.shape:
            raise RuntimeError("torch.searchsorted(): boundary and sorter must have the same "
                               "size, but got boundary tensor "
                               f"{_lst(seq.shape)}and got sorter tensor "
                               f"{_lst(sorter._data.shape)}")
        if sorter._data.dtype != np.int64:
            raise RuntimeError("torch.searchsorted(): sorter must be a tensor of long dtype but "
                               f"got dtype {scalar_type_name(sorter._data.dtype)}")
        if sorter._data.size and not bool(((sorter._data >= 0)
                                           & (sorter._data < seq.shape[-1])).all()):
            raise RuntimeError("torch.searchsorted(): sorter index out of range")
        seq = xp.take_along_axis(seq, sorter._data, axis=-1)
    if seq.dtype in _dtype.SHELL_NP and (scalar or vals.dtype == seq.dtype):
        _dtype.check_kernel("searchsorted", seq.dtype)
    kind = seq.dtype.kind
    if kind in "bc" or vals.dtype.kind == "c":  # no kernel for the common dtype
        common = np.result_type(seq.dtype, np.complex64) if scalar and vals.dtype.kind == "c" \
            else seq.dtype if scalar else np.result_type(seq.dtype, vals.dtype)
        if common.kind in "bc":
            raise _dtype.no_kernel("searchsorted_out_cpu", common)
    if out is not None and out._data.dtype != (np.int32 if out_int32 else np.int64):
        raise RuntimeError("torch.searchsorted(): output tensor's dtype is wrong, it can only be "
                           "Int(int32) or Long(int64) depending on whether out_int32 flag is "
                           "True, but we got output tensor's dtype "
                           f"{scalar_type_name(out._data.dtype)} and out_int32 flag is "
                           f"{out_int32}")
    how = "right" if right else "left"
    if seq.ndim > 1 and (scalar or vals.ndim != seq.ndim or vals.shape[:-1] != seq.shape[:-1]):
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or "
                           "the first N-1 dimensions of boundaries tensor and input value "
                           "tensor must match, but we got boundaries tensor "
                           f"{_lst(seq.shape)} and input value tensor "
                           f"{_lst(getattr(vals, 'shape', ()))}")
    if kind == "f" and seq.shape[-1] and (
            (a := seq[0]) != a or (b := seq[-1]) != b if seq.ndim == 1
            else bool(xp.isnan(seq[..., ::seq.shape[-1] - 1 or 1]).any())):
        # NaN boundaries (at an end, as sorts put them): PyTorch's bisection (every comparison
        # with NaN false), not NumPy's search, which orders NaN last
        n = seq.shape[-1]
        s2 = seq.reshape(-1, n)
        v2 = vals.reshape(1, -1) if seq.ndim == 1 else vals.reshape(s2.shape[0], -1)
        lo = xp.zeros((s2.shape[0], v2.shape[1]), dtype=np.int64)
        hi = xp.full(lo.shape, n, dtype=np.int64)
        with np.errstate(invalid="ignore"):
            while bool((lo < hi).any()):
                mid = (lo + hi) >> 1
                at = xp.take_along_axis(s2, xp.minimum(mid, n - 1), axis=-1)
                up = ~(at > v2) if right else ~(at >= v2)
                active = lo < hi
                lo = xp.where(active & up, mid + 1, lo)
                hi = xp.where(active & ~up, mid, hi)
        res = lo.reshape(vals.shape)
    elif seq.ndim == 1:
        res = xp.searchsorted(seq, vals, side=how)
    else:
        s2 = seq.reshape(-1, seq.shape[-1])
        v2 = vals.reshape(-1, vals.shape[-1])
        res = xp.stack([xp.searchsorted(s2[i], v2[i], side=how) for i in range(s2.shape[0])]) \
            if s2.shape[0] else xp.zeros(v2.shape, dtype=np.int64)
        res = res.reshape(vals.shape)
    res = xp.asarray(res).astype(np.int32 if out_int32 else np.int64)
    result = _make(res, sorted_sequence._device)
    if out is not None:
        from ._inplace import write_out

        return write_out(out, result)
    return result


@register("bucketize", method=False, differentiable=False)
def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """The bucket of each element of ``input`` among the 1-D ``boundaries``: ``i`` with
    ``boundaries[i-1] < x <= boundaries[i]`` (``<=``/``<`` swapped with ``right``)."""
    if boundaries._data.ndim != 1:
        raise RuntimeError("boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries._data.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right, out=out)


@register("isin", out=True, method=False, differentiable=False)
def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """A bool tensor of ``elements``' shape: whether each element is in ``test_elements``
    (either may be a scalar)."""
    like = elements if isinstance(elements, Tensor) else test_elements
    try:
        e, _ = _scalar_or_tensor(elements, like)
        te, _ = _scalar_or_tensor(test_elements, like)
    except (TypeError, AttributeError):  # no signature takes them: PyTorch's parser's words
        check_binds("isin", (elements, test_elements),
                    {k: v for k, v in (("assume_unique", assume_unique), ("invert", invert))
                     if v is not False})
        raise
    if isinstance(elements, Tensor) and isinstance(test_elements, Tensor):
        _dtype.promote_types(elements.dtype, test_elements.dtype)  # PyTorch's promotion error
    _dtype.check_kernel("isin", like._data.dtype)
    xp = xp_of(like)
    res = xp.isin(e, te, assume_unique=assume_unique, invert=invert)
    return _make(xp.asarray(res), like._device)
