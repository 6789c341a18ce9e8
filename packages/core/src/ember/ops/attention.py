"""``scaled_dot_product_attention``, composed of Tensor ops (matmul, softmax, masked_fill),
so it is differentiable twice.

Rows whose scores are all masked out give zeros (output and gradients), as PyTorch 2.13's
CPU kernels do (its ``_safe_softmax``), not NaN.
"""

from __future__ import annotations

import math

import numpy as np

from .._device import check_same_device, xp_of
from .._dtype import scalar_type_name
from .._tensor import _make
from .registry import register

__all__ = ["scaled_dot_product_attention"]

_TORCH_DTYPE_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
                      "int64": "long int", "int32": "int", "bool": "bool"}


def _dtype_name(np_dtype) -> str:
    return _TORCH_DTYPE_NAMES.get(np_dtype.name, np_dtype.name)


def _check_inputs(query, key, value, attn_mask, dropout_p):
    q, k, v = query._data, key._data, value._data
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise RuntimeError("Expected query, key, and value to all be  at least 2 dimensional, "
                           f"but got query.dim: {q.ndim} key.dim: {k.ndim} and value.dim: "
                           f"{v.ndim} instead.")
    if not q.dtype == k.dtype == v.dtype:
        raise RuntimeError("Expected query, key, and value to have the same dtype, but got "
                           f"query.dtype: {_dtype_name(q.dtype)} key.dtype: "
                           f"{_dtype_name(k.dtype)} and value.dtype: {_dtype_name(v.dtype)} "
                           "instead.")
    if q.dtype.kind != "f":
        raise RuntimeError(f"expected scalar type Float but found {scalar_type_name(q.dtype)}")
    if attn_mask is not None:
        md = attn_mask._data.dtype
        if md.kind != "b" and md != q.dtype:
            raise RuntimeError("Expected attn_mask dtype to be bool or float or to match query "
                               f"dtype, but got attn_mask.dtype: {_dtype_name(md)} and  "
                               f"query.dtype: {_dtype_name(q.dtype)} instead.")
    if not 0.0 <= dropout_p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    check_same_device(query, key, value, attn_mask)


def _batch_error(q, other, size, got):
    """PyTorch's bmm wording for a last-dim mismatch of the two matrix products."""
    try:
        batch = math.prod(np.broadcast_shapes(q.shape[:-2], other.shape[:-2]))
    except ValueError:
        batch = math.prod(q.shape[:-2])
    raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                       f"[{batch}, {size}] but got: [{batch}, {got}].")


def _repeat_heads(t, groups):
    """``t.repeat_interleave(groups, dim=-3)`` with expand and reshape."""
    shape = t._data.shape
    h = shape[-3]
    wide = t.unsqueeze(-3).expand(*shape[:-3], h, groups, *shape[-2:])
    return wide.reshape(*shape[:-3], h * groups, *shape[-2:])


def _gqa(query, key, value):
    hq, hk, hv = query._data.shape[-3], key._data.shape[-3], value._data.shape[-3]
    if hq % hk or hq % hv:
        raise RuntimeError("Number of heads in key and value must divide the number of heads in ")
    if hk != hq:
        key = _repeat_heads(key, hq // hk)
    if hv != hq:
        value = _repeat_heads(value, hq // hv)
    return key, value


def _dropout_mask(like, p):
    """A constant tensor of ``0`` and ``1 / (1 - p)`` drawn by ember's default generator."""
    from .._factory import place
    from .._random import _rng, _uniform

    d = like._data
    if p >= 1.0:
        return _make(xp_of(like).zeros(d.shape, d.dtype), like._device)
    keep = (_uniform(_rng(None, like._device), d.shape, d.dtype) >= p).astype(d.dtype)
    keep *= 1.0 / (1.0 - p)
    return place(keep, like._device)


@register("scaled_dot_product_attention", method=False, function=False, random=True)
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """``softmax(query @ key^T * scale + mask) @ value``, as
    ``torch.nn.functional.scaled_dot_product_attention``.

    ``attn_mask``: bool (True takes part in attention) or float (added to the scores),
    broadcast to ``(..., L, S)``. ``is_causal`` masks with a lower-triangular (top-left
    aligned) mask. ``dropout_p`` drops attention weights with ember's default generator.
    ``enable_gqa`` repeats key/value heads (dim -3) to match the query's.
    """
    _check_inputs(query, key, value, attn_mask, dropout_p)
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    q, k, v = query._data, key._data, value._data
    if enable_gqa and q.ndim >= 3 and k.ndim >= 3 and v.ndim >= 3:
        key, value = _gqa(query, key, value)
        k, v = key._data, value._data
    if k.shape[-1] != q.shape[-1]:
        _batch_error(q, k, q.shape[-1], k.shape[-1])
    if v.shape[-2] != k.shape[-2]:
        _batch_error(q, v, k.shape[-2], v.shape[-2])
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    scores = query.matmul(key.transpose(-2, -1)) * scale
    L, S = q.shape[-2], k.shape[-2]
    if is_causal:
        xp = xp_of(query)
        attn_mask = _make(xp.tril(xp.ones((L, S), dtype=bool)), query._device)
    if attn_mask is not None:
        if attn_mask._data.dtype.kind == "b":
            scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            scores = scores + attn_mask
    dead = (scores._data == -np.inf).all(-1, keepdims=True) if attn_mask is not None else None
    if dead is not None and dead.any():  # fully masked rows: zeros, not NaN, and zero grads
        dead_t = _make(dead, query._device)
        weights = scores.masked_fill(dead_t, 0.0).softmax(-1).masked_fill(dead_t, 0.0)
    else:
        weights = scores.softmax(-1)
    if dropout_p > 0.0:
        weights = weights * _dropout_mask(weights, dropout_p)
    return weights.matmul(value)
