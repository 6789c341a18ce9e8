"""``linear(input, weight, bias)``: ``input @ weight.T + bias``, recorded as PyTorch does.

This is the hot path of every MLP: the forward is one matrix product with the bias added
in place into its fresh result; the backward is two matrix products and one sum, written
with Tensor ops so that double backward works.

The graph is PyTorch's, since tutorials print it: a 2-D input gives ``AddmmBackward0``
(``MmBackward0`` without bias) whose inputs are ``(bias, input, weight.t())``, the last
through a ``TBackward0`` node; other inputs are folded to 2-D around it (``ViewBackward0``
or ``UnsafeViewBackward0``), one matrix product rather than many small ones.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype, _native
from .._device import check_same_device
from .._format import shape_str
from .._parallel import native_threads, parallel_for
from .._tensor import Tensor, _make
from ..autograd.grad_mode import GRAD
from ..autograd.graph import make_node_class, record
from ._factories import shape_of, sum_to_size
from .linalg import _F32, _tname, gemm, native_sgemm, sgemm_takes
from .registry import register
from .shape import TBackward0, UnsafeViewBackward0, ViewBackward0, reshape

__all__ = ["linear"]


def _linear_backward(node, grad):
    """Gradients of ``b + x @ wt`` for ``(b, x, wt)``: ``sum(g)``, ``g @ wt.T`` and
    ``(g.T @ x).T``, the weight's product laid out as the weight (see ``_weight_t_bw``)."""
    x, w = node.saved
    bias_shape, handoff = node.ctx
    k = 0 if bias_shape is None else 1  # MmBackward0 has no bias input
    gb = gx = gwt = None
    if k and node.needs_grad(0):
        gb = grad.sum(0)
        if shape_of(gb) != bias_shape:
            gb = sum_to_size(gb, bias_shape)
    if node.needs_grad(k):
        gx = grad.matmul(w)
    if node.needs_grad(k + 1):
        gw = grad.mT.matmul(x)
        if GRAD.enabled or gw.__class__ is not Tensor:  # (or batched by vmap)
            gwt = gw.mT
        else:  # for weight.t()'s node, which then gives the weight ``gw`` itself
            handoff[0] = gw._data
            gwt = _make(gw._data.T, grad._device)
    return (gb, gx, gwt) if k else (gx, gwt)


AddmmBackward0, MmBackward0 = (make_node_class(n, _linear_backward)
                               for n in ("AddmmBackward0", "MmBackward0"))


def _weight_t_bw(node, grad):
    """``weight.t()``'s backward: the transpose back. When the gradient is the transposed
    view of the fresh ``(out, in)`` product that linear's backward has just handed over, that
    product itself is the weight's gradient: the leaf then adopts it without a copy."""
    handoff = node.ctx
    fresh = handoff[0]
    handoff[0] = None
    if fresh is not None and grad.__class__ is Tensor and grad._data.base is fresh \
            and not GRAD.enabled:
        return (_make(fresh, grad._device),)
    return (grad.t(),)


_WeightTBackward0 = make_node_class(TBackward0.__name__, _weight_t_bw)


def _check(xd, wd, bd):
    """PyTorch's errors for mismatched shapes or dtypes (only reached when something is off)."""
    if wd.ndim != 2:
        raise RuntimeError(f"linear(): expected weight to be 2-D, but got {wd.ndim}-D")
    if xd.ndim == 0:
        raise RuntimeError("both arguments to linear need to be at least 1D, but they are 0D "
                           "and 2D")
    if xd.shape[-1] != wd.shape[1]:
        rows = math.prod(xd.shape[:-1])
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{xd.shape[-1]} "
                           f"and {shape_str(wd.shape[::-1], 'x')})")
    if xd.dtype != wd.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_tname(xd)} "
                           f"!= {_tname(wd)}")
    if bd is not None and bd.dtype != xd.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_tname(bd)} "
                           f"!= {_tname(xd)}")


def _linear_vector(input, weight, bias):
    """A 1-D weight: ``input @ weight`` (a 0-d result for a 1-D input), plus ``bias``, as
    PyTorch's ``matmul`` path; its ``addmm`` paths (a 2-D input, or a contiguous input with a
    bias of 1 or more dims) refuse the vector."""
    xd = input._data
    if not xd.ndim:
        raise RuntimeError("both arguments to linear need to be at least 1D, but they are 0D "
                           "and 1D")
    if bias is not None and (xd.ndim == 2 or (bias._data.ndim and xd.flags.c_contiguous)):
        raise RuntimeError("mat2 must be a matrix, got 1-D tensor")
    out = input.matmul(weight)
    return out if bias is None else out + bias


#: elements per thread at least when the bias add splits its rows over the intra-op pool
_PARALLEL_ELEMENTS = 1 << 17


def _add_rows(r, bd):
    """``r += bd`` (``bd`` broadcast over the rows of the fresh product ``r``), its rows split
    over Ember's intra-op threads on NumPy when ``r`` is C-contiguous. (NumPy's matmul lays
    out the product of a strided N-d input like the input: its row view would be a copy, and
    the bias added to the copy alone -- a windowed attention's permuted input lost its bias.)"""
    if (r.__class__ is not np.ndarray or bd.ndim > 1 or r.size < 2 * _PARALLEL_ELEMENTS
            or not r.flags.c_contiguous):
        r += bd
        return
    rows = r.reshape(-1, r.shape[-1])

    def run(a, b):
        rows[a:b] += bd

    parallel_for(0, rows.shape[0], -(-_PARALLEL_ELEMENTS // max(rows.shape[1], 1)), run)


def _product(xd, wd, bd):
    """``xd @ wd.T + bd`` as arrays; float16 and bfloat16 through float32 BLAS, rounded once
    (PyTorch's CPU kernels accumulate in float; NumPy has no bfloat16 GEMM and runs float16
    without BLAS)."""
    if xd.dtype in _dtype.OPMATH:
        if xd.dtype is _BF16 and wd.dtype is _BF16:
            r = _bf16_few_rows(xd, wd, bd)
            if r is not None:
                return r
        wide = _dtype.widen
        return _dtype.narrow(_product_arrays(wide(xd), wide(wd), wide(bd)), xd.dtype)
    if xd.dtype is _dtype.CHALF_NP:
        raise _dtype.no_chalf_kernel("addmm_impl_cpu_")
    return _product_arrays(xd, wd, bd)


_BF16 = _dtype.BFLOAT16_NP
#: up to this many rows a bfloat16 product reads the weight as bfloat16 (kernels.c's
#: ember_linear_bf16_f32); beyond, the weight's float32 copy is amortised and BLAS is faster
_BF16_NATIVE_ROWS = 16


def _bf16_few_rows(xd, wd, bd):
    """``xd @ wd.T + bd`` of a bfloat16 input of a few rows and a C-contiguous bfloat16
    weight through ``ember_linear_bf16_f32`` (the weight widened in registers, each output
    one float32 sum, rounded to bfloat16 once, as the float32 BLAS formulation rounds it), or
    None where it does not apply (CPU NumPy arrays, a 1-D bias of the weight's rows only)."""
    if xd.__class__ is not np.ndarray or wd.__class__ is not np.ndarray or wd.ndim != 2 \
            or not wd.flags.c_contiguous:
        return None
    n, k = wd.shape
    if not k or not n or xd.shape[-1] != k:
        return None
    m = xd.size // k
    if not 0 < m <= _BF16_NATIVE_ROWS or (bd is not None and (
            bd.__class__ is not np.ndarray or bd.shape != (n,))):
        return None
    kernel = _native.kernel("ember_linear_bf16_f32")
    if kernel is None:
        return None
    x = np.ascontiguousarray(_dtype.widen(xd.reshape(m, k)))
    b = None if bd is None else np.ascontiguousarray(_dtype.widen(bd), dtype=_F32)
    out = np.empty((m, n), _F32)
    address = _native.address
    kernel(address(x), address(wd), None if b is None else address(b), address(out), m, n, k,
           native_threads())
    return out.astype(_BF16).reshape(xd.shape[:-1] + (n,))


def _fused(xd, wd, bd):
    """``xd @ wd.T + bd`` through kernels.c's product with the bias as its sums' start (one
    pass over the result fewer), or None where that product does not take it: a float32
    2-D (or C-contiguous N-d) input and weight and a matching contiguous 1-D bias only."""
    n, k = wd.shape
    if not k or not sgemm_takes(xd.size // k, k, n):
        return None
    if not (bd.__class__ is np.ndarray and xd.__class__ is np.ndarray and bd.dtype is _F32
            and xd.dtype is _F32 and wd.dtype is _F32 and bd.ndim == 1
            and bd.shape[0] == wd.shape[0] and bd.flags.c_contiguous):
        return None
    if xd.ndim == 2:
        return native_sgemm(xd, wd.T, bias=bd)
    if xd.ndim > 2 and xd.flags.c_contiguous:
        r = native_sgemm(xd.reshape(-1, xd.shape[-1]), wd.T, bias=bd)
        return None if r is None else r.reshape(xd.shape[:-1] + (wd.shape[0],))
    return None


def _product_arrays(xd, wd, bd):
    """``xd @ wd.T + bd`` as arrays of one dtype."""
    if bd is not None:
        r = _fused(xd, wd, bd)
        if r is not None:
            return r
    if xd.ndim > 2 and xd.flags.c_contiguous:
        # one (N*L, in) @ (in, out) product: NumPy runs a batched 3-D matmul as many small
        # ones (measured 1.6x slower on sequence-shaped input)
        r = gemm(xd.reshape(-1, xd.shape[-1]), wd.T).reshape(xd.shape[:-1] + (wd.shape[0],))
    else:
        r = gemm(xd, wd.T)
    if bd is not None:
        try:
            _add_rows(r, bd)
        except ValueError:
            raise RuntimeError(
                f"The expanded size of the tensor ({r.shape[-1]}) must match the existing size "
                f"({bd.shape[-1] if bd.ndim else 1}) at non-singleton dimension {r.ndim - 1}.  "
                f"Target sizes: [{shape_str(r.shape)}].  Tensor sizes: "
                f"[{shape_str(bd.shape)}]") from None
    return r


def _linear_2d(input, weight, bias):
    """The recorded product of a 2-D ``input``: ``AddmmBackward0`` (or ``MmBackward0``) over
    ``(bias, input, weight.t())``."""
    wd = weight._data
    out = _make(_product(input._data, wd, None if bias is None else bias._data),
                input._device)
    handoff = [None]
    wt = weight
    if weight.requires_grad:
        wt = _make(wd.T, weight._device)
        record(_WeightTBackward0, wt, (weight,), (), handoff)
    checked = (weight.requires_grad, input.requires_grad)  # each for the other's gradient
    if bias is None:
        return record(MmBackward0, out, (input, wt), (input, weight), (None, handoff),
                      checked=checked)
    return record(AddmmBackward0, out, (bias, input, wt), (input, weight),
                  (bias._data.shape, handoff), checked=checked)


def _reshaped(input, shape, node_cls):
    """``input``'s data in ``shape``, recorded as ``node_cls`` (a reshape's node) without
    making it a view: the output of linear is a fresh tensor for in-place ops."""
    out = _make(input._data.reshape(shape), input._device)
    if input.requires_grad:
        record(node_cls, out, (input,), (), input._data.shape)
    return out


def _linear_nd(input, weight, bias):
    """A 1-D or N-D ``input`` folded to 2-D: PyTorch's ``_flatten_nd_linear`` for a
    contiguous input with a bias, else its ``matmul`` fold and an added bias."""
    xd = input._data
    lead = xd.shape[:-1]
    x2 = reshape(input, (math.prod(lead), xd.shape[-1]))
    out_shape = lead + (weight._data.shape[0],)
    if bias is not None and xd.flags.c_contiguous:
        return _reshaped(_linear_2d(x2, weight, bias), out_shape, ViewBackward0)
    out = _reshaped(_linear_2d(x2, weight, None), out_shape, UnsafeViewBackward0)
    return out if bias is None else out + bias


@register("linear", out=True, method=False)
def linear(input, weight, bias=None):
    """Apply ``y = x A^T + b`` (``torch.nn.functional.linear``)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"linear(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    xd, wd = input._data, weight._data
    bd = None if bias is None else bias._data
    dev = input._device
    if weight._device is not dev or (bias is not None and bias._device is not dev):
        check_same_device(input, weight, bias)
    if wd.ndim != 2 or not xd.ndim or xd.shape[-1] != wd.shape[1] or xd.dtype is not wd.dtype \
            or (bd is not None and bd.dtype is not xd.dtype):
        if wd.ndim == 1:
            return _linear_vector(input, weight, bias)
        _check(xd, wd, bd)
    if not (GRAD.enabled and (input.requires_grad or weight.requires_grad
                              or (bias is not None and bias.requires_grad))):
        return _make(_product(xd, wd, bd), dev)
    if xd.ndim == 2:
        return _linear_2d(input, weight, bias)
    return _linear_nd(input, weight, bias)
