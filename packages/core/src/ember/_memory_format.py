"""``ember.memory_format``: how a tensor's elements are laid out in memory.

A channels-last tensor keeps PyTorch's logical shape ``(N, C, H, W)`` over memory that is
contiguous as ``(N, H, W, C)``: its array is a transposed view of an NHWC array, so
``stride()`` reads ``(H*W*C, 1, W*C, C)`` as in PyTorch, and NumPy's elementwise ops, which
follow their inputs' layout, keep it. ``channels_last_3d`` does the same for ``(N, C, D, H, W)``.

The helpers below work on the arrays of any backend (NumPy, CuPy) through their methods. A
layout is an "order": the axes from the outermost in memory to the innermost (``None`` for
C order, the common case, kept cheap).
"""

from __future__ import annotations

import numpy as np

from ._layout import NamedConstant

__all__ = ["memory_format", "contiguous_format", "preserve_format", "channels_last",
           "channels_last_3d"]


class memory_format(NamedConstant):
    """The memory layout a tensor is asked to have, like ``torch.memory_format``."""

    __slots__ = ()


memory_format.__module__ = "ember"

contiguous_format = memory_format._constant("contiguous_format")
preserve_format = memory_format._constant("preserve_format")
channels_last = memory_format._constant("channels_last")
channels_last_3d = memory_format._constant("channels_last_3d")

# the axes of the channels-last layouts, outermost in memory first
_ORDERS = {channels_last: (0, 2, 3, 1), channels_last_3d: (0, 2, 3, 4, 1)}


def check(fmt, fname: str) -> memory_format:
    """``fmt`` if it is a memory format, else PyTorch's ``TypeError`` naming ``fname``."""
    if fmt.__class__ is not memory_format:
        kind = type(fmt)
        name = f"ember.{kind.__name__}" if kind.__module__.startswith("ember") else kind.__name__
        raise TypeError(f"{fname}(): argument 'memory_format' must be ember.memory_format, "
                        f"not {name}")
    return fmt


def format_order(fmt: memory_format, ndim: int):
    """The order of ``fmt`` (contiguous or channels-last) for an ``ndim``-d tensor; PyTorch's
    error when a channels-last format does not fit ``ndim``."""
    if fmt is preserve_format:
        raise RuntimeError("unsupported memory format Preserve")
    order = _ORDERS.get(fmt)
    if order is not None and ndim != len(order):
        raise RuntimeError(f"required rank {len(order)} tensor to use {fmt._name} format")
    return order


def is_contiguous(arr, fmt: memory_format) -> bool:
    """Whether ``arr`` is laid out densely in ``fmt`` (size-1 dims' strides do not count)."""
    order = _ORDERS.get(fmt)
    if order is None:
        return bool(arr.flags.c_contiguous)
    if arr.ndim != len(order):
        return False
    if arr.size == 0:  # NumPy calls every empty array contiguous; PyTorch checks the strides
        expected = arr.itemsize
        for ax in reversed(order):
            if arr.shape[ax] != 1:
                if arr.strides[ax] != expected:
                    return False
                expected *= arr.shape[ax]
        return True
    return bool(arr.transpose(order).flags.c_contiguous)


def unit_dim_strides(shape, strides) -> tuple:
    """``strides`` with PyTorch's stride on a size-1 dim NumPy gives stride 0 (``x[None]``):
    the next dim's size times its stride (1 for the last dim), as ``unsqueeze`` and
    ``expand`` compute it (in elements or bytes, as ``strides`` are)."""
    out = list(strides)
    for d in range(len(shape) - 1, -1, -1):
        if shape[d] == 1 and out[d] == 0:
            out[d] = shape[d + 1] * out[d + 1] if d + 1 < len(shape) else 1
    return tuple(out)


def preserve_order(arr):
    """The order ``preserve_format`` gives a new tensor like ``arr``: ``arr``'s own when it is
    dense, else its axes sorted by stride (PyTorch's ``infer_dense_strides``: stride-0 axes
    stay in place; of equal strides the longer axis is the outer)."""
    if arr.flags.c_contiguous:
        return None
    strides, sizes = arr.strides, arr.shape
    if 0 in strides and 1 in sizes:  # the strides Tensor.stride() reports
        strides = unit_dim_strides(sizes, strides)
    inner_first = list(reversed(range(arr.ndim)))
    for i in range(1, arr.ndim):
        moving = i
        for j in range(i - 1, -1, -1):
            cmp = _outer_than(strides, sizes, inner_first[j], inner_first[moving])
            if cmp > 0:
                inner_first[j], inner_first[moving] = inner_first[moving], inner_first[j]
                moving = j
            elif cmp < 0:
                break
    order = tuple(reversed(inner_first))
    return None if order == tuple(range(arr.ndim)) else order


def dense_order(arr):
    """The order of ``arr``'s axes from the outermost in memory when it is dense but not
    C-contiguous (channels-last, a permuted tensor): transposed by it, it is C-contiguous.
    None otherwise (C-contiguous, or not dense)."""
    if arr.ndim < 2 or arr.flags.c_contiguous:
        return None
    order = preserve_order(arr)
    if order is None or not arr.transpose(order).flags.c_contiguous:
        return None
    return order


def _outer_than(strides, sizes, a: int, b: int) -> int:
    """1 if axis ``a`` belongs outside axis ``b``, -1 if inside, 0 if undecided."""
    if strides[a] == 0 or strides[b] == 0:
        return 0
    if strides[a] != strides[b]:
        return 1 if strides[a] > strides[b] else -1
    return 1 if sizes[a] > sizes[b] else 0


def like_order(arr, fmt, fname: str):
    """The order of a new tensor made like ``arr`` with ``memory_format=fmt`` (``*_like``)."""
    if fmt is preserve_format or fmt is None:
        return None if arr.flags.c_contiguous else preserve_order(arr)
    return format_order(check(fmt, fname), arr.ndim)


def dense_strides(shape, order=None, itemsize: int = 1) -> tuple:
    """The strides (in elements, or bytes with ``itemsize``) of a fresh dense layout of
    ``shape`` whose axes are ``order`` from the outermost (C order when None), size-1 and
    empty dims included as PyTorch (and NumPy) compute them."""
    strides = [0] * len(shape)
    step = itemsize
    for ax in reversed(range(len(shape)) if order is None else order):
        strides[ax] = step
        step *= max(shape[ax], 1)
    return tuple(strides)


def as_fresh(arr, order):
    """``arr`` laid out in ``order`` (``None``: C order) with exactly the strides a fresh
    tensor gets, size-1 dims included; copied only when they differ."""
    if arr.strides == dense_strides(arr.shape, order, arr.itemsize):
        return arr
    return copy_as(arr, order)


def fresh_layout(arr, order):
    """``as_fresh``, with the common case cheap: a C-order result without size-1 dims is
    checked by its flag alone."""
    if order is None and 1 not in arr.shape:
        return arr if arr.flags.c_contiguous else arr.copy()
    return as_fresh(arr, order)


def copy_as(arr, order):
    """A copy of ``arr`` (always a new array) laid out in ``order``."""
    if order is None:
        return arr.copy()  # C order
    if arr.size == 0 and isinstance(arr, np.ndarray):
        # NumPy gives an empty array zero strides: set PyTorch's channels-last ones (raw sizes)
        strides = [0] * arr.ndim
        step = arr.itemsize
        for ax in reversed(order):
            strides[ax] = step
            step *= arr.shape[ax]
        return np.lib.stride_tricks.as_strided(np.empty(0, arr.dtype), arr.shape,
                                               tuple(strides))
    return arr.transpose(order).copy().transpose(inverse(order))


def inverse(order: tuple) -> tuple:
    """The permutation that undoes ``order``."""
    inv = [0] * len(order)
    for i, d in enumerate(order):
        inv[d] = i
    return tuple(inv)


#: the order PyTorch checks the axes in (innermost first) when it guesses a channels-last
#: layout from strides (``is_channels_last_strides_2d/3d``)
_CL_CHECKS = {4: (1, 3, 2, 0), 5: (1, 4, 3, 2, 0)}


def suggest_order(shape, strides):
    """The channels-last order PyTorch's ``suggest_memory_format`` reads from ``strides``
    (any unit) of a 4-d or 5-d ``shape``, else ``None`` (contiguous). Ambiguous layouts
    (size-1 axes) fall back to contiguous exactly as PyTorch's do: ``(N, 1, 1, 1)`` with equal
    strides, a zero channel stride."""
    checks = _CL_CHECKS.get(len(shape))
    if checks is None or strides[1] == 0:
        return None
    low = 0
    for d in checks:
        st = strides[d]
        if shape[d] == 0 or st < low or (d == 0 and low == strides[1]):
            return None
        low = st * shape[d] if shape[d] > 1 else st
    return _ORDERS[channels_last if len(shape) == 4 else channels_last_3d]


def suggest(arr):
    """``suggest_order`` of an array: the channels-last order it suggests, else ``None``.
    Cheap for the common case: a C-contiguous array with channels and a width (its innermost
    stride is below the channel block's, so it cannot read as channels-last)."""
    shape = arr.shape
    if len(shape) < 4 or (shape[1] > 1 and shape[-1] > 1 and arr.flags.c_contiguous):
        return None
    return suggest_order(shape, arr.strides)


def iter_order(shape, operands):
    """The order (outermost axis first; ``None`` for C order) PyTorch's TensorIterator gives
    the new result of an elementwise op over ``operands`` (arrays, in the op's input order,
    broadcast to ``shape``): ``reorder_dimensions``' insertion sort of the axes, innermost
    first, where for each pair of axes the first operand with distinct nonzero strides there
    decides (a broadcast axis has stride 0 and no say; equal strides put the longer axis
    outside). Same-shaped operands that are all channels-last take ``fast_set_up``'s
    channels-last layout. NumPy lets C order win where operands disagree; PyTorch lets the
    first input win (``x_cl + x`` is channels-last)."""
    ndim = len(shape)
    if ndim < 2:
        return None
    st = operands[0].strides
    if operands[0].shape == shape and 1 not in shape and 0 not in st and len(set(st)) == ndim:
        # the first operand has distinct nonzero strides on every pair of axes, so it decides
        # each comparison: the sort is its own stride order (channels-last ones included)
        if ndim == 2:  # a transposed matrix, the usual case, without the sort
            return None if st[0] > st[1] else (1, 0)
        order = tuple(sorted(range(ndim), key=st.__getitem__, reverse=True))
        return None if order == tuple(range(ndim)) else order
    fast = len(shape) in _CL_CHECKS
    strides = []
    for a in operands:
        if a.ndim == 0:
            continue
        fast = fast and a.shape == shape
        st = a.strides
        if 0 in st and 1 in a.shape:
            st = unit_dim_strides(a.shape, st)
        lead = ndim - a.ndim
        strides.append((0,) * lead + tuple(
            0 if n == 1 and shape[lead + i] != 1 else s for i, (n, s) in enumerate(
                zip(a.shape, st))))
    if fast:
        fmt = channels_last if ndim == 4 else channels_last_3d
        if all(is_contiguous(a, fmt) for a in operands) and \
                not all(a.flags.c_contiguous for a in operands):
            return _ORDERS[fmt]

    def should_swap(d0, d1):  # d0 is inside d1 now: 1 to move it outside
        for st in strides:
            s0, s1 = st[d0], st[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 < s1:
                return -1
            if s0 > s1:
                return 1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    perm = list(range(ndim - 1, -1, -1))  # innermost first
    for i in range(1, ndim):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            cmp = should_swap(perm[d0], perm[d1])
            if cmp > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif cmp < 0:
                break
    order = tuple(reversed(perm))
    return None if order == tuple(range(ndim)) else order


def iter_layout(r, operands):
    """``r``, the result NumPy computed from ``operands``, laid out as PyTorch's
    TensorIterator would allocate it (``iter_order``): copied only where they differ. Called
    only when the first operand is not C-contiguous: otherwise NumPy's layout is PyTorch's."""
    if r.ndim < 2 or not r.size:
        return r
    order = iter_order(r.shape, operands)
    if order is None:
        return r if r.flags.c_contiguous else r.copy()
    if r.strides == dense_strides(r.shape, order, r.itemsize):
        return r
    return copy_as(r, order)


def iter_apply(fwd, a, b):
    """``fwd(a, b)`` (an elementwise op of two arrays, ``a`` not C-contiguous) computed
    straight into the layout ``iter_layout`` would copy it to: both operands permuted to
    ``iter_order`` (where ``a`` is dense, NumPy then writes C order there), the result
    permuted back. ``x.t() + y`` (16x16) 4.6 -> 2.8 us against a product and a copy."""
    shape = a.shape if a.shape == b.shape else np.broadcast_shapes(a.shape, b.shape)
    n = len(shape)
    if n < 2 or 0 in shape:
        return iter_layout(fwd(a, b), (a, b))
    order = iter_order(shape, (a, b))
    if order is None:
        r = fwd(a, b)
        return r if r.flags.c_contiguous else r.copy()
    if a.ndim < n:
        a = a.reshape((1,) * (n - a.ndim) + a.shape)
    if b.ndim < n:
        b = b.reshape((1,) * (n - b.ndim) + b.shape)
    r = fwd(a.transpose(order), b.transpose(order))
    if not r.flags.c_contiguous:  # a has gaps (a strided slice): NumPy chose another layout
        r = r.copy()
    return r.transpose(order if n == 2 else inverse(order))  # (1, 0) undoes itself


def preserve_copy(src, out):
    """``out``, NumPy's copy of ``src`` (``astype``: K order), laid out as PyTorch's
    ``preserve_format`` copies (``_to_copy``, ``clone``) lay it out: ``src``'s own layout when
    it is dense, else its dims ordered by stride with broadcast (stride-0) dims in C order
    (``infer_dense_strides``); NumPy's K order also sorts the stride-0 dims."""
    if src.flags.c_contiguous or not out.size:
        return out
    return as_fresh(out, preserve_order(src))
