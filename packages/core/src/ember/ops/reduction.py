"""Reductions: sum, mean, var/std, prod, max/min, argmax, logsumexp, norm, all/any,
cumulative ops, sort/topk, median, unique, count_nonzero."""

from __future__ import annotations

import numpy as np

from .. import _dtype
from .._tensor import _make
from ..autograd.grad_mode import GRAD
from ..autograd.graph import make_node_class, record
from ._core import normalize_dims
from .registry import register

__all__ = ["sum", "mean"]


def _expand_back(g, shape, dims, keepdim):
    """Broadcast a reduced gradient back to the input's ``shape``."""
    if not keepdim and dims is not None and len(shape):
        for d in dims:
            g = g.unsqueeze(d)
    return g.expand(shape)


def _sum_bw(node, g):
    shape, dims, keepdim = node.ctx
    return (_expand_back(g, shape, dims, keepdim),)


SumBackward0 = make_node_class("SumBackward0", _sum_bw)
SumBackward1 = make_node_class("SumBackward1", _sum_bw)


def _sum_dtype(d, dtype):
    if dtype is not None:
        return _dtype.to_dtype(dtype).np
    if d.dtype.kind in "bui" and d.dtype != np.int64:
        return np.int64
    return None


@register("sum")
def sum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A001 - PyTorch's name
    """Sum over ``dim`` (all dims when None); integers and bools sum as int64."""
    d = input._data
    dims = normalize_dims(dim, d.ndim) if dim is not None else None
    if dims == () and dim is not None and not isinstance(dim, int) and d.ndim:
        dims = None  # sum(x, dim=[]) reduces everything, as in PyTorch
    r = d.sum(axis=dims, dtype=_sum_dtype(d, dtype), keepdims=keepdim)
    if input.requires_grad and GRAD.enabled:
        out = _make(r, input._device)
        node = SumBackward0 if dim is None else SumBackward1
        return record(node, out, (input,), (), (d.shape, dims, keepdim))
    return _make(r, input._device)


def _mean_bw(node, g):
    shape, dims, keepdim, n = node.ctx
    return (_expand_back(g / n, shape, dims, keepdim),)


MeanBackward0 = make_node_class("MeanBackward0", _mean_bw)
MeanBackward1 = make_node_class("MeanBackward1", _mean_bw)


@register("mean")
def mean(input, dim=None, keepdim=False, *, dtype=None):
    """Mean over ``dim``; integer inputs are an error unless ``dtype`` is floating."""
    d = input._data
    if dtype is not None:
        d = d.astype(_dtype.to_dtype(dtype).np)
    elif d.dtype.kind not in "f":
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a "
                           "floating point or complex dtype. Got: "
                           f"{_TORCH_NAMES.get(d.dtype.name, d.dtype.name)}")
    dims = normalize_dims(dim, d.ndim) if dim is not None else None
    if dims == () and dim is not None and d.ndim:
        dims = None
    r = d.mean(axis=dims, keepdims=keepdim)
    if input.requires_grad and GRAD.enabled:
        n = d.size if dims is None else int(np.prod([d.shape[i] for i in dims]))
        out = _make(r, input._device)
        return record(MeanBackward0 if dim is None else MeanBackward1, out, (input,), (),
                      (d.shape, dims, keepdim, n))
    return _make(r, input._device)


_TORCH_NAMES = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char",
                "uint8": "Byte", "bool": "Bool"}
