"""Adafactor, like ``torch.optim.Adafactor`` (PyTorch keeps it in ``torch/optim/_adafactor.py``)."""

from __future__ import annotations

import numpy as np

import ember

from ._single_tensor import _scalar
from ._validate import check_bound, check_lr_numel
from .optimizer import Optimizer

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """Adafactor (Shazeer & Stern), with PyTorch's use of ``lr`` and ``eps``.

    A matrix (or a batch of matrices) keeps factored second moments, one per row (``row_var``,
    shaped like the gradient with a last dimension of 1) and one per column (``col_var``, with
    a second-to-last dimension of 1); a vector or scalar keeps a full ``variance``. The decay of
    the second moment is ``1 - step ** beta2_decay``; the relative step size is
    ``min(lr, 1/sqrt(step))``, scaled by ``max(eps2, RMS(param))``; updates are clipped to
    an RMS of ``d``; ``weight_decay`` is decoupled and scaled by ``lr``.

    Args:
        params: an iterable of parameters or of dicts defining parameter groups.
        lr: the maximum relative step size and the weight-decay scale (default 1e-2).
        beta2_decay: the decay rate of beta2 (default -0.8).
        eps: ``(eps1, eps2)``: ``eps1`` stabilises the denominators (``None``: the machine
            epsilon of the parameters' dtype), ``eps2`` is the smallest parameter scale
            (default ``(None, 1e-3)``).
        d: the clipping threshold of the update's RMS (default 1.0).
        weight_decay: decoupled weight decay coefficient (default 0.0).
        foreach: accepted for compatibility.
        maximize: maximize the objective instead of minimizing it.

    Per-parameter state: ``step`` (0-dim CPU tensor) and ``row_var`` and ``col_var``
    (gradients of two or more dimensions) or ``variance``.
    """

    _legacy_group_defaults = {"foreach": None}
    _legacy_scalar_state = ("step",)

    def __init__(self, params, lr=1e-2, beta2_decay: float = -0.8,
                 eps: tuple[float | None, float] = (None, 1e-3), d: float = 1.0,
                 weight_decay: float = 0.0, *, foreach: bool | None = None,
                 maximize: bool = False) -> None:
        check_lr_numel(lr)
        check_bound(lr, "Learning rate")
        check_bound(beta2_decay, "beta2_decay", "<=")
        if eps[0] is not None:
            check_bound(eps[0], "epsilon1")
        check_bound(eps[1], "epsilon2")
        check_bound(d, "Clipping threshold d", bound=1)
        check_bound(weight_decay, "weight_decay")
        defaults = {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize}
        super().__init__(params, defaults)

    def _init_state(self, p, state, group) -> None:
        grad = p.grad
        state["step"] = self._step_tensor()
        if grad.dim() > 1:
            row_shape = list(grad.shape)
            row_shape[-1] = 1
            state["row_var"] = grad.new_zeros(row_shape)
            col_shape = list(grad.shape)
            col_shape[-2] = 1
            state["col_var"] = grad.new_zeros(col_shape)
        else:
            state["variance"] = ember.zeros_like(grad)

    def _step_group(self, group) -> None:
        params = self._params_with_state(group, "Adafactor")
        eps1, eps2 = group["eps"]
        for p in params:
            if eps1 is None:
                # as in PyTorch, the first parameter's dtype decides for the whole group
                eps1 = ember.finfo(p.dtype).eps
            self._adafactor_update(p._data, p._grad._data, self.state[p], group, eps1, eps2)
            p._bump_version()

    def _adafactor_update(self, d, g, state, group, eps1: float, eps2: float) -> None:
        lr = _scalar(group["lr"])
        if group["maximize"]:
            g = -g
        step_t = state["step"]._data
        step_t += 1
        step = float(step_t)
        one_minus_beta2 = step ** group["beta2_decay"]
        rho = min(lr, 1 / step**0.5)
        alpha = max(eps2, float(_norm(d)) / d.size**0.5) * rho
        wd = group["weight_decay"]
        if wd != 0:
            d *= 1 - lr * wd
        if g.ndim > 1:
            row_var, col_var = state["row_var"]._data, state["col_var"]._data
            self._lerp_(row_var, _mean_square(g, -1), one_minus_beta2, self._buffer(row_var))
            self._lerp_(col_var, _mean_square(g, -2), one_minus_beta2, self._buffer(col_var))
            var_estimate = row_var @ col_var
            row_mean = row_var.mean(axis=-2, keepdims=True)
            np.maximum(row_mean, eps1, out=row_mean)
            var_estimate /= row_mean
        else:
            variance = state["variance"]._data
            self._lerp_(variance, g * g, one_minus_beta2, self._buffer(variance))
            var_estimate = variance.copy()
        update = var_estimate
        np.maximum(update, eps1 * eps1, out=update)
        np.sqrt(update, out=update)
        np.divide(1, update, out=update)
        update *= g
        denom = max(1.0, float(_norm(update)) / (update.size**0.5 * group["d"]))
        update *= alpha / denom
        d -= update


def _norm(a):
    """The 2-norm of all elements of ``a``, in ``a``'s dtype."""
    flat = a.reshape(-1)
    return np.sqrt(flat @ flat)


def _mean_square(g, axis: int):
    """``norm(g, dim=axis, keepdim=True).square() / g.shape[axis]``, as PyTorch computes it."""
    row = np.sqrt((g * g).sum(axis=axis, keepdims=True))
    row *= row
    row /= g.shape[axis]
    return row
