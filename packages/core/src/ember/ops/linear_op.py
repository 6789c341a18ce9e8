"""``linear(input, weight, bias)``: ``input @ weight.T + bias`` as one recorded op.

This is the hot path of every MLP: the forward is one matrix product with the bias added
in place into its fresh result; the backward is two matrix products and one sum, written
with Tensor ops so that double backward works.
"""

from __future__ import annotations

from .._tensor import Tensor, _make
from ..autograd.grad_mode import GRAD
from ..autograd.graph import make_node_class, record
from ._core import check_same_device, sum_to_size
from .linalg import _shape_str, _tname
from .registry import register

__all__ = ["linear"]


def _linear_backward(node, grad):
    """Gradients of ``x @ w.T + b``: ``g @ w``, ``g.T @ x`` (batches folded), ``sum(g)``."""
    x, w = node.saved
    bias_shape = node.ctx
    gx = gw = gb = None
    if grad._data.ndim == 2:
        g2, x2 = grad, x
    else:
        out_f, in_f = w._data.shape
        g2, x2 = grad.reshape(-1, out_f), x.reshape(-1, in_f)
    if node.needs_grad(0):
        gx = g2.matmul(w)  # folded to 2-D like the forward: one product, not many small ones
        if gx._data.shape != x._data.shape:
            gx = gx.reshape(x._data.shape)
    if node.needs_grad(1):
        gw = g2.mT.matmul(x2)
    if bias_shape is not None and node.needs_grad(2):
        gb = g2.sum(0)
        if gb._data.shape != bias_shape:
            gb = sum_to_size(gb, bias_shape)
    return gx, gw, gb


AddmmBackward0, MmBackward0, LinearBackward0 = (
    make_node_class(n, _linear_backward)
    for n in ("AddmmBackward0", "MmBackward0", "LinearBackward0"))


def _check(xd, wd, bd):
    """PyTorch's errors for mismatched shapes or dtypes (only reached when something is off)."""
    if wd.ndim != 2:
        raise RuntimeError(f"linear(): expected weight to be 2-D, but got {wd.ndim}-D")
    if xd.ndim == 0:
        raise RuntimeError("both arguments to linear need to be at least 1D, but they are 0D "
                           "and 2D")
    if xd.shape[-1] != wd.shape[1]:
        rows = 1
        for s in xd.shape[:-1]:
            rows *= s
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{xd.shape[-1]} "
                           f"and {_shape_str(wd.shape[::-1])})")
    if xd.dtype != wd.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_tname(xd)} "
                           f"!= {_tname(wd)}")
    if bd is not None and bd.dtype != xd.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_tname(bd)} "
                           f"!= {_tname(xd)}")


@register("linear", method=False)
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
        _check(xd, wd, bd)
    if xd.ndim > 2 and xd.flags.c_contiguous:
        # one (N*L, in) @ (in, out) product: NumPy runs a batched 3-D matmul as many small
        # ones (measured 1.6x slower on sequence-shaped input)
        r = (xd.reshape(-1, xd.shape[-1]) @ wd.T).reshape(xd.shape[:-1] + (wd.shape[0],))
    else:
        r = xd @ wd.T
    if bd is not None:
        try:
            r += bd
        except ValueError:
            raise RuntimeError(
                f"The expanded size of the tensor ({r.shape[-1]}) must match the existing size "
                f"({bd.shape[-1] if bd.ndim else 1}) at non-singleton dimension {r.ndim - 1}.  "
                f"Target sizes: [{', '.join(map(str, r.shape))}].  Tensor sizes: "
                f"[{', '.join(map(str, bd.shape))}]") from None
    out = _make(r, dev)
    if (input.requires_grad or weight.requires_grad
            or (bias is not None and bias.requires_grad)) and GRAD.enabled:
        if xd.ndim == 2:
            node_cls = MmBackward0 if bias is None else AddmmBackward0
        else:
            node_cls = LinearBackward0
        record(node_cls, out, (input, weight, bias), (input, weight),
               None if bias is None else bd.shape)
    return out
