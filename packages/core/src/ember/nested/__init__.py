"""``ember.nested``: nested tensors, PyTorch's ``torch.nested``.

A nested tensor is a batch of tensors whose shapes differ in some dims (sentences of different
lengths, images of different sizes)::

    import ember
    nt = ember.nested.nested_tensor([ember.randn(2, 6), ember.randn(3, 6)])
    nt[1]                                  # the second component, (3, 6)
    ember.nn.functional.linear(nt, w)      # per component
    nt.to_padded_tensor(0.0)               # a regular (2, 3, 6) tensor

Two layouts: ``ember.strided`` (the default: a list of components) and ``ember.jagged`` (one
``values`` buffer and ``offsets`` along the one ragged dim; PyTorch's recommended layout).
Ops run component by component with autograd through them (``ember.nested._ops``); see
docs/nested.md for what is supported.

Importing this module (``ember.nested`` is imported on first use) defines the nested tensor
class; dispatch (``ember.overrides``), which every op then pays a little for, is turned on
only when the first nested tensor is made.
"""

from __future__ import annotations

import warnings

from .._layout import jagged, strided
from .._tensor import Tensor
from ._tensor import (
    NestedTensor,
    _jagged,
    _strided,
    jagged_from_components,
    ragged_dim_of,
)

__all__ = ["to_padded_tensor", "as_nested_tensor", "nested_tensor", "nested_tensor_from_jagged",
           "narrow", "masked_select"]


_WARNED = [False]


def _warn_strided() -> None:
    """PyTorch's once-per-process warning that the strided layout is a prototype."""
    if not _WARNED[0]:
        _WARNED[0] = True
        warnings.warn(
            "The PyTorch API of nested tensors is in prototype stage and will change in the "
            "near future. We recommend specifying layout=ember.jagged when constructing a "
            "nested tensor, as this layout receives active development.", UserWarning,
            stacklevel=3)


def _check_layout(layout, what: str = "nested tensors"):
    if layout is None:
        return strided
    if layout is not strided and layout is not jagged:
        raise RuntimeError(f"Specified layout is unsupported for {what}: {layout}")
    return layout


def _as_component(t, i: int):
    import ember

    if isinstance(t, NestedTensor):
        raise RuntimeError("nested_tensor(): a component cannot itself be a nested tensor")
    if not isinstance(t, Tensor):
        t = ember.tensor(t)
    return t


def nested_tensor(tensor_list, *, dtype=None, layout=None, device=None,
                  requires_grad: bool = False, pin_memory: bool = False) -> NestedTensor:
    """A nested tensor holding copies of the tensors in ``tensor_list`` (tensors, or data that
    ``ember.tensor`` takes), as a leaf: with ``requires_grad=True`` its gradient is a nested
    tensor of the same structure.

    ``layout``: ``ember.strided`` (default) or ``ember.jagged`` (the components may differ in
    one dim only)."""
    layout = _check_layout(layout)
    comps = []
    for i, t in enumerate(tensor_list):
        t = _as_component(t, i).detach()
        comps.append(t.to(device=device, dtype=dtype, copy=True))
    if pin_memory:
        comps = [c.pin_memory() for c in comps]
    if layout is jagged:
        if not comps:
            raise RuntimeError("Cannot construct a nested tensor from an empty tensor list")
        _check_ranks(comps)
        nt = jagged_from_components(comps, ragged_dim_of(comps, 1))
        return nt.requires_grad_(True) if requires_grad else nt
    _warn_strided()
    nt = _strided(comps, dtype=dtype, device=device)
    if requires_grad:
        nt.requires_grad_(True)
    return nt


def _check_ranks(comps) -> None:
    ndim = comps[0].dim()
    for c in comps:
        if c.dim() != ndim:
            raise RuntimeError(
                "When constructing a nested tensor, all tensors in list must have the same dim")
    if ndim == 0:
        raise RuntimeError("Cannot construct a nested tensor from scalars (0-dim tensors) with "
                           "the jagged layout")


def as_nested_tensor(ts, dtype=None, device=None, layout=None) -> NestedTensor:
    """A nested tensor from a list of tensors (or a tensor: its dim 0 is the batch) that keeps
    the autograd history: gradients flow back to ``ts``. A nested tensor of the requested
    dtype, device and layout is returned as it is."""
    layout = _check_layout(layout)
    if isinstance(ts, NestedTensor):
        if ts._layout is layout:
            return ts.to(device=device, dtype=dtype) if dtype or device else ts
        return as_nested_tensor(list(ts.unbind()), dtype, device, layout)
    if isinstance(ts, Tensor):
        if ts.dim() < 1:
            raise RuntimeError("as_nested_tensor(): a tensor input must have a batch dim")
        if layout is jagged:
            if ts.dim() < 2:
                raise RuntimeError("as_nested_tensor(): a jagged nested tensor needs at least "
                                   "a batch and a ragged dim")
            import ember

            values = ts.to(device=device, dtype=dtype).flatten(0, 1)
            b, n = ts.shape[0], ts.shape[1]
            offsets = ember.arange(0, (b + 1) * n, n, dtype=ember.int64, device=values.device)
            return _jagged(values, offsets)
        ts = ts.unbind(0)
    if not isinstance(ts, (list, tuple)) or not all(isinstance(t, Tensor) for t in ts):
        raise TypeError("as_nested_tensor(): expected a list of tensors or a tensor")
    comps = [t.to(device=device, dtype=dtype) for t in ts]
    if layout is jagged:
        if not comps:
            raise RuntimeError("Cannot construct a nested tensor from an empty tensor list")
        _check_ranks(comps)
        return jagged_from_components(comps, ragged_dim_of(comps, 1))
    _warn_strided()
    return _strided([c.clone() for c in comps], dtype=dtype, device=device)


def nested_tensor_from_jagged(values: Tensor, offsets: Tensor | None = None,
                              lengths: Tensor | None = None, jagged_dim: int | None = None,
                              min_seqlen: int | None = None,
                              max_seqlen: int | None = None) -> NestedTensor:
    """A jagged nested tensor viewing ``values``: component ``i`` is
    ``values.narrow(jagged_dim - 1, offsets[i], length)``, ``length`` from ``lengths`` when
    given (a non-contiguous view) else ``offsets[i + 1] - offsets[i]``. With ``lengths`` only,
    the offsets are their running sum. ``min_seqlen``/``max_seqlen`` are hints PyTorch's
    kernels cache; Ember accepts and ignores them."""
    import ember

    if offsets is None:
        if lengths is None:
            raise RuntimeError("nested_tensor_from_jagged(): At least one of offsets or "
                               "lengths is required.")
        offsets = ember.cat([ember.zeros(1, dtype=lengths.dtype, device=lengths.device),
                             lengths.cumsum(0)])
        lengths = None
    if jagged_dim is None:
        jagged_dim = 1
    elif jagged_dim < 1:
        raise ValueError(f"Expected jagged_dim >=1, but got {jagged_dim}.")
    return _jagged(values, offsets, lengths, jagged_dim)


def to_padded_tensor(input: NestedTensor, padding: float, output_size=None) -> Tensor:
    """A regular tensor: the components padded at their ends with ``padding`` to the largest
    size in each dim (or to ``output_size``, batch dim included) and stacked. Differentiable
    with respect to the components."""
    import ember

    from ..ops.nn_misc import pad

    if not isinstance(input, NestedTensor):
        raise RuntimeError("to_padded_tensor(): expected a nested tensor")
    comps = input._comps
    if not comps:
        return ember.empty(0, dtype=input.dtype, device=input.device)
    ndim = comps[0].dim()
    target = [max(c.shape[d] for c in comps) for d in range(ndim)]
    if output_size is not None:
        output_size = list(output_size)
        if len(output_size) != ndim + 1:
            raise RuntimeError("Length of output_size does not match NestedTensor dims. "
                               "Broadcasting is not supported.")
        if any(o < t for o, t in zip(output_size[1:], target)) or output_size[0] < len(comps):
            raise RuntimeError("Value in output_size is less than NestedTensor padded size. "
                               "Truncation is not supported.")
        target = output_size[1:]
    padded = []
    for c in comps:
        widths = []
        for d in reversed(range(ndim)):
            widths += [0, target[d] - c.shape[d]]
        padded.append(pad(c, widths, value=padding) if any(widths) else c)
    out = ember.stack(padded)
    if output_size is not None and output_size[0] > len(comps):
        fill = ember.full((output_size[0] - len(comps), *target), padding, dtype=out.dtype,
                          device=out.device)
        out = ember.cat([out, fill])
    return out


def narrow(tensor: Tensor, dim: int, start, length, layout=strided) -> NestedTensor:
    """A nested tensor of ``tensor``'s rows, each narrowed in ``dim`` to ``[start,
    start + length)`` (``start``/``length`` per row as tensors of shape ``(N,)``, jagged layout
    only). Strided: a copy. Jagged (``dim=1`` only): a non-contiguous view of ``tensor``."""
    import ember

    if not isinstance(start, (int, Tensor)):
        raise RuntimeError("start must be an integer or a tensor")
    if not isinstance(length, (int, Tensor)):
        raise RuntimeError("length must be an integer or a tensor")
    if layout is strided:
        if isinstance(start, Tensor) or isinstance(length, Tensor):
            raise RuntimeError("start and length must be integers for the strided layout NT "
                               "impl")
        if dim == 0:
            raise RuntimeError("narrow(): only non-batch dims can be narrowed")
        rows = [t.narrow(dim - 1, start, length) for t in tensor.unbind(0)]
        return as_nested_tensor(rows, layout=strided)
    if layout is jagged:
        if dim != 1:
            raise RuntimeError("jagged layout only supports dim=1")
        b, n = tensor.shape[0], tensor.shape[1]
        if isinstance(start, int):
            start = ember.tensor([start] * b, dtype=ember.int64, device=tensor.device)
        if isinstance(length, int):
            length = ember.tensor([length] * b, dtype=ember.int64, device=tensor.device)
        if start.numel() == 1:
            start = start.expand(b)
        if length.numel() == 1:
            length = length.expand(b)
        values = tensor.flatten(0, 1)
        base = ember.arange(0, b * n, n, dtype=ember.int64, device=tensor.device)
        offsets = ember.cat([start + base, (start[-1:] + base[-1:] + length[-1:])])
        return _jagged(values, offsets, length.to(ember.int64), 1)
    raise RuntimeError(f"Specified layout is unsupported for nested narrow: {layout}")


def masked_select(tensor: Tensor, mask: Tensor) -> NestedTensor:
    """A jagged nested tensor of the elements of ``tensor`` where ``mask`` is True, row by
    row: component ``i`` is ``tensor[i][mask[i]]`` (``tensor`` 2-D and strided)."""
    import ember

    if tensor.layout is not strided or isinstance(tensor, NestedTensor):
        raise RuntimeError(f"torch.nested.masked_select requires a strided tensor, given "
                           f"{tensor.layout}")
    if tensor.dim() != 2:
        raise RuntimeError(f"torch.nested.masked_select requires a 2D tensor, given "
                           f"{tensor.dim()}D")
    mask = ember.broadcast_to(mask, tensor.shape)
    values = ember.masked_select(tensor, mask)
    lengths = mask.sum(1)
    offsets = ember.cat([ember.zeros(1, dtype=lengths.dtype, device=lengths.device),
                         lengths.cumsum(0)])
    return _jagged(values, offsets)
