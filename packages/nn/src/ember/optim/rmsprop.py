"""RMSprop, like ``torch.optim.RMSprop``."""

from __future__ import annotations

import numpy as np

import ember

from ._validate import check_lr, check_nonneg
from .optimizer import Optimizer, _scalar

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop (Hinton), with PyTorch's ``centered`` and ``momentum`` options.

    Per-parameter state: ``step``, ``square_avg``, ``momentum_buffer`` (when ``momentum > 0``)
    and ``grad_avg`` (when ``centered``).
    """

    def __init__(self, params, lr=1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False,
                 capturable: bool = False, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_lr(lr)
        check_nonneg(eps, "epsilon value")
        check_nonneg(momentum, "momentum value")
        check_nonneg(weight_decay, "weight_decay value")
        check_nonneg(alpha, "alpha value")
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps,
                    "centered": centered, "weight_decay": weight_decay,
                    "capturable": capturable, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _init_state(self, p, state, group) -> None:
        state["step"] = self._step_tensor()
        state["square_avg"] = ember.zeros_like(p)
        if group["momentum"] > 0:
            state["momentum_buffer"] = ember.zeros_like(p)
        if group["centered"]:
            state["grad_avg"] = ember.zeros_like(p)

    def _update(self, d, g, state, group) -> None:
        lr = _scalar(group["lr"])
        alpha = group["alpha"]
        state["step"]._data += 1
        g = self._grad_with_decay(d, g, group)
        sq = state["square_avg"]._data
        tmp, avg = self._buffer(d, 0), self._buffer(d, 1)
        sq *= alpha
        np.multiply(g, g, out=tmp)
        tmp *= 1 - alpha
        sq += tmp
        if group["centered"]:
            ga = state["grad_avg"]._data
            self._lerp_(ga, g, 1 - alpha, tmp)
            np.multiply(ga, ga, out=tmp)
            np.subtract(sq, tmp, out=avg)
            np.sqrt(avg, out=avg)
        else:
            np.sqrt(sq, out=avg)
        avg += group["eps"]
        np.divide(g, avg, out=tmp)
        if group["momentum"] > 0:
            buf = state["momentum_buffer"]._data
            buf *= group["momentum"]
            buf += tmp
            np.multiply(buf, lr, out=tmp)
        else:
            tmp *= lr
        d -= tmp
