"""Casts and moves between dtypes and devices (``cast_to``: ``Tensor.to`` and friends),
differentiable (``ToCopyBackward0``)."""

from __future__ import annotations

from .. import _dtype
from .._device import canonical_device
from .._tensor import Tensor, _make
from ..autograd.grad_mode import GRAD
from ..autograd.graph import make_node_class, record
from ..backends import backend_of

__all__ = ["cast_to", "as_tensor_like"]


def _to_copy_backward(node, grad):
    src_dev, src_dtype = node.ctx
    g = grad
    if g._device is not src_dev:
        g = cast_to(g, src_dev, None, False)
    if g._data.dtype is not src_dtype.np:
        g = cast_to(g, None, src_dtype, False)
    return (g,)


ToCopyBackward0 = make_node_class("ToCopyBackward0", _to_copy_backward)


def cast_to(t: Tensor, device, dtype, copy: bool) -> Tensor:
    """``t`` on ``device`` with ``dtype`` (None keeps it); no copy unless needed or asked."""
    data = t._data
    src_dev = t._device
    dev = src_dev if device is None else canonical_device(device)
    np_dt = data.dtype if dtype is None else dtype.np
    if dev is src_dev and np_dt is data.dtype and not copy:
        return t
    if dev is not src_dev:
        host = backend_of(src_dev).to_host(data)
        if np_dt is not host.dtype:
            host = host.astype(np_dt)
        out_data = backend_of(dev).to_device(host, dev.index)
    else:
        out_data = data.astype(np_dt, copy=True)
    out = _make(out_data, dev)
    if t.requires_grad and GRAD.enabled:
        if out_data.dtype.kind != "f":
            return out
        record(ToCopyBackward0, out, (t,), (), (src_dev, _dtype.FROM_NP[data.dtype]))
    return out


def as_tensor_like(x, like: Tensor) -> Tensor:
    """A Python number / array ``x`` as a tensor on ``like``'s device."""
    if isinstance(x, Tensor):
        return x
    from .._factory import tensor

    return tensor(x, device=like._device)
