"""Products: matmul (PyTorch's batching and 1-D rules), mm, bmm, mv, dot, outer, einsum,
tensordot, addmm, baddbmm."""

from __future__ import annotations

import numpy as np

from .._tensor import Tensor, _make
from ..autograd.grad_mode import GRAD
from ..autograd.graph import make_node_class, record
from ._core import coerce, sum_to_size
from .registry import register

__all__ = ["matmul"]


def _shape_str(shape) -> str:
    return "x".join(str(s) for s in shape)


def _matmul_bw(node, g):
    a, b = node.saved
    ad, bd = a._data, b._data
    ga = gb = None
    if ad.ndim == 1 and bd.ndim == 1:
        return (g * b if a.requires_grad else None, g * a if b.requires_grad else None)
    a2 = a.unsqueeze(0) if ad.ndim == 1 else a
    b2 = b.unsqueeze(-1) if bd.ndim == 1 else b
    g2 = g
    if ad.ndim == 1:
        g2 = g2.unsqueeze(-2)
    if bd.ndim == 1:
        g2 = g2.unsqueeze(-1)
    if a.requires_grad:
        ga = g2.matmul(b2.transpose(-1, -2))
        ga = sum_to_size(ga, a2._data.shape)
        if ad.ndim == 1:
            ga = ga.squeeze(0)
    if b.requires_grad:
        gb = a2.transpose(-1, -2).matmul(g2)
        gb = sum_to_size(gb, b2._data.shape)
        if bd.ndim == 1:
            gb = gb.squeeze(-1)
    return ga, gb


MmBackward0 = make_node_class("MmBackward0", _matmul_bw)
MatmulBackward0 = make_node_class("MatmulBackward0", _matmul_bw)


@register("matmul")
def matmul(input, other):
    """Matrix product with PyTorch's rules for 1-D operands and batch broadcasting."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError(f"matmul(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(other).__name__}")
    ad, bd = input._data, other._data
    dev = input._device
    if dev is not other._device or ad.dtype is not bd.dtype:
        if ad.dtype is not bd.dtype and dev is other._device:
            raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                               f"{_tname(ad)} != {_tname(bd)}")
        input, other, ad, bd, dev = coerce(input, other)
    if ad.ndim == 0 or bd.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{ad.ndim}D and {bd.ndim}D")
    ka = ad.shape[-1]
    kb = bd.shape[-2] if bd.ndim > 1 else bd.shape[0]
    if ka != kb:
        if ad.ndim == 1 and bd.ndim == 1:
            raise RuntimeError(f"inconsistent tensor size, expected tensor [{ad.shape[0]}] and "
                               f"src [{bd.shape[0]}] to have the same number of elements, but "
                               "got {ad.shape[0]} and {bd.shape[0]} elements respectively")
        sa = ad.shape if ad.ndim > 1 else (1,) + ad.shape
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_shape_str(sa[-2:])} "
                           f"and {_shape_str(bd.shape[-2:] if bd.ndim > 1 else bd.shape)})"
                           if ad.ndim <= 2 and bd.ndim <= 2 else
                           f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{_shape_str(ad.shape[:-2]) or 1}, {ka}] but got: "
                           f"[{_shape_str(bd.shape[:-2]) or 1}, {kb}].")
    if ad.dtype.kind == "b":
        raise RuntimeError('"addmm_impl_cpu_" not implemented for \'Bool\'')
    r = ad @ bd
    out = _make(r, dev)
    if GRAD.enabled and (input.requires_grad or other.requires_grad):
        node = MmBackward0 if ad.ndim == 2 and bd.ndim == 2 else MatmulBackward0
        record(node, out, (input, other), (input, other))
    return out


def _tname(a) -> str:
    return {"float32": "float", "float64": "double", "float16": "c10::Half", "int64": "long int",
            "int32": "int"}.get(a.dtype.name, a.dtype.name)
