"""The pieces that the optimizers' functional forms (their ``_single_tensor_<name>`` loops)
share: hyper-parameters that may be tensors, scratch arrays, the walk over the parameters
(step counts, ``maximize``, weight decay, version counters), PyTorch's formulas for ``lerp_``
and the running average of squares, and ``fused=True``'s gradient unscaling.

Everything works on the arrays behind the tensors (NumPy or CuPy), in place, outside autograd.
"""

from __future__ import annotations

import numpy as np

from ember import Tensor


def _scalar(value):
    """A Python number from a float or a one-element tensor (``lr`` may be a tensor)."""
    return value.item() if isinstance(value, Tensor) else value


def _buffer(scratch: dict, like, slot: int = 0):
    """A scratch array shaped like ``like`` from ``scratch``: an optimizer passes its own dict,
    so the arrays are reused across steps; a direct call of a functional form, a fresh one."""
    key = (like.shape, like.dtype, type(like), slot)
    buf = scratch.get(key)
    if buf is None:
        buf = scratch[key] = like.copy()
    return buf


def _lerp_(out, end, weight: float, tmp) -> None:
    """``out.lerp_(end, weight)`` on arrays with PyTorch's formula (``tmp`` is scratch)."""
    np.subtract(end, out, out=tmp)
    if weight < 0.5:
        tmp *= weight
        out += tmp
    else:
        tmp *= 1 - weight
        np.subtract(end, tmp, out=out)


class _RealView:
    """A complex tensor seen as real pairs by the loops, like ``torch.view_as_real``: ``_data``
    is a ``(..., 2)`` real view of its array (writes land in the tensor) and
    ``_bump_version`` bumps the tensor's counter."""

    __slots__ = ("_data", "_tensor")

    def __init__(self, tensor: Tensor) -> None:
        self._tensor = tensor
        data = tensor._data
        self._data = data[..., None].view(data.real.dtype)

    def _bump_version(self) -> None:
        self._tensor._bump_version()


def _view_as_real(params, *lists):
    """PyTorch's ``_view_as_real``: where ``params[i]`` is complex, it and the ``i``-th entry
    of every list (its gradient and state) are seen as real pairs, so the element-wise
    updates (squares, square roots, signs, maxima) treat the real and imaginary parts as
    separate numbers. Returns the lists unchanged when no parameter is complex."""
    for p in params:  # (the common case, no complex parameter, in one plain loop)
        if p._data.dtype.kind == "c":
            break
    else:
        return (params, *lists)
    where = [i for i, p in enumerate(params) if p._data.dtype.kind == "c"]
    out = []
    for column in (params, *lists):
        column = list(column)
        for i in where:
            if i < len(column) and column[i] is not None and column[i]._data.dtype.kind == "c":
                column[i] = _RealView(column[i])
        out.append(column)
    return tuple(out)


def _grad_with_decay(d, g, maximize: bool, weight_decay: float):
    """The gradient array after ``maximize`` and coupled (L2) weight decay, as in PyTorch."""
    if maximize:
        g = -g
    if weight_decay != 0:
        g = g + weight_decay * d
    return g


def _walk_params(params, grads, state_steps, *, maximize: bool, weight_decay=0, lr=0.0,
                 decoupled_weight_decay: bool = False):
    """The walk over the parameters that every functional form's loop shares.

    Yields ``(i, d, g, step_t)`` for each parameter: its index, its array ``d``, the gradient
    array ``g`` after ``maximize`` and coupled (L2) weight decay, and the array of its ``step``
    state, already counted up. With ``decoupled_weight_decay`` (AdamW) the decay multiplies
    ``d`` by ``1 - lr * weight_decay`` before the yield instead of entering ``g``. The loop
    body updates ``d`` in place; when the loop asks for the next parameter, the walk bumps the
    version counter of the one just updated.
    """
    wd = _scalar(weight_decay)
    decoupled = decoupled_weight_decay and wd != 0
    shrink = 1 - _scalar(lr) * wd
    coupled_wd = 0 if decoupled else wd
    for i, param in enumerate(params):
        d = param._data
        step_t = state_steps[i]._data
        if type(step_t) is np.ndarray:
            step_t[()] = float(step_t) + 1  # the same value, 20x faster than a 0-d ufunc
        else:
            step_t += 1  # on the device: no round trip
        if decoupled:
            d *= shrink
        yield i, d, _grad_with_decay(d, grads[i]._data, maximize, coupled_wd), step_t
        param._bump_version()


def _ema_square_(avg, g, beta: float, tmp) -> None:
    """``avg.mul_(beta).addcmul_(g, g, value=1 - beta)`` on arrays: the running average of
    squares of Adam's ``exp_avg_sq``, RMSprop's and Adadelta's (``tmp`` is scratch)."""
    avg *= beta
    np.multiply(g, g, out=tmp)
    tmp *= 1 - beta
    avg += tmp


def _unscale_or_skip(grads, grad_scale, found_inf) -> bool:
    """``fused=True``'s gradient unscaling: True when ``found_inf`` says to skip the step
    (nothing changes then, the step counts included); else the gradients are divided by
    ``grad_scale`` in place, as PyTorch's fused kernels leave them."""
    if found_inf is not None and float(found_inf) != 0:
        return True
    if grad_scale is not None:
        scale = float(grad_scale)
        for g in grads:
            g._data /= scale
            g._bump_version()
    return False
