"""Casts and moves between dtypes and devices (``cast_to``: ``Tensor.to`` and friends),
differentiable (``ToCopyBackward0``)."""

from __future__ import annotations

from .. import _dtype
from .. import _memory_format as _mf
from .._device import canonical_device
from .._tensor import Tensor, _make
from .._warn import user_stacklevel
from ..autograd.grad_mode import GRAD
from ..autograd.graph import make_node_class, record
from ..backends import backend_of

__all__ = ["cast_to", "as_tensor_like", "bfloat16_in_float32"]

_BOOL = _dtype.bool.np
_F64 = _dtype.float64.np
_CHALF = _dtype.CHALF_NP
_FLOAT8 = _dtype.FLOAT8_NP


def _to_copy_backward(node, grad):
    src_dev, src_dtype = node.ctx
    g = grad
    if g._device is not src_dev:
        g = cast_to(g, src_dev, None, False)
    if g._data.dtype is not src_dtype.np:
        if g._data.dtype in _dtype.COMPLEX_NP and not src_dtype.is_complex:
            g = g.real  # a real source of a complex copy: the gradient's real part
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
    if data.dtype in _dtype.COMPLEX_NP and np_dt not in _dtype.COMPLEX_NP \
            and np_dt is not _BOOL:  # to bool: nonzero real or imaginary part, no warning
        import warnings

        warnings.warn("Casting complex values to real discards the imaginary part",
                      UserWarning, stacklevel=user_stacklevel())
        data = _dtype.real_part(data)
    if data.dtype is _F64 and np_dt in _dtype.OPMATH:  # c10::Half/BFloat16 are made from a
        data = data.astype(_dtype.float32.np)         # float: float64 rounds twice, as there
    if dev is not src_dev:
        backend_of(dev).check_dtype(np_dt)
        host = backend_of(src_dev).to_host(data)
        if np_dt is not host.dtype:
            host = host.astype(np_dt) if host.dtype is not _CHALF and np_dt not in _FLOAT8 \
                else _dtype.astype(host, np_dt)
        out_data = backend_of(dev).to_device(host, dev.index)
    else:
        backend_of(dev).check_dtype(np_dt)
        out_data = data.astype(np_dt, copy=True) \
            if data.dtype is not _CHALF and np_dt not in _FLOAT8 \
            else _dtype.astype(data, np_dt)  # complex32 -> bool, PyTorch's float8 casts
        if not data.flags.c_contiguous:
            out_data = _mf.preserve_copy(data, out_data)
    out = _make(out_data, dev)
    if t.requires_grad and GRAD.enabled:
        if out_data.dtype not in _dtype.INEXACT_NP:
            return out
        record(ToCopyBackward0, out, (t,), (), (src_dev, _dtype.FROM_NP[t._data.dtype]))
    return out


def as_tensor_like(x, like: Tensor) -> Tensor:
    """A Python number / array ``x`` as a tensor on ``like``'s device."""
    if isinstance(x, Tensor):
        return x
    from .._factory import tensor

    return tensor(x, device=like._device)


def bfloat16_in_float32(fn):
    """``fn`` (an op written with Tensor ops or mixed array code) with its bfloat16 tensor
    arguments computed in float32 and its float32 tensor results rounded to bfloat16 once,
    as PyTorch's CPU kernels compute bfloat16 (opmath). The casts are differentiable
    (``ToCopyBackward0``): gradients of the bfloat16 inputs are bfloat16. Other dtypes call
    ``fn`` as it is."""
    import functools

    bf16, f32 = _dtype.bfloat16, _dtype.float32

    def widen(x):
        return cast_to(x, None, f32, False) \
            if isinstance(x, Tensor) and x._data.dtype is bf16.np else x

    def narrow(x):
        if isinstance(x, Tensor) and x._data.dtype is f32.np:
            return cast_to(x, None, bf16, False)
        if isinstance(x, tuple):
            return type(x)(*map(narrow, x)) if hasattr(x, "_fields") else tuple(map(narrow, x))
        return x

    @functools.wraps(fn)
    def run(*args, **kwargs):
        if not any(isinstance(x, Tensor) and x._data.dtype is bf16.np
                   for x in (*args, *kwargs.values())):
            return fn(*args, **kwargs)
        return narrow(fn(*map(widen, args), **{k: widen(v) for k, v in kwargs.items()}))

    return run
