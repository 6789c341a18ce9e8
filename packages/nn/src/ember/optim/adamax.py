"""Adamax, like ``torch.optim.Adamax``."""

from __future__ import annotations

import numpy as np

import ember

from ._validate import check_betas, check_lr, check_nonneg
from .optimizer import Optimizer, _scalar

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adamax, Adam's infinity-norm variant. Per-parameter state: ``step``, ``exp_avg``,
    ``exp_inf``."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        check_lr(lr)
        check_nonneg(eps, "epsilon value")
        check_betas(betas)
        check_nonneg(weight_decay, "weight_decay value")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    def _init_state(self, p, state, group) -> None:
        state["step"] = self._step_tensor()
        state["exp_avg"] = ember.zeros_like(p)
        state["exp_inf"] = ember.zeros_like(p)

    def _update(self, d, g, state, group) -> None:
        beta1, beta2 = group["betas"]
        step_t = state["step"]._data
        step_t += 1
        g = self._grad_with_decay(d, g, group)
        m, u = state["exp_avg"]._data, state["exp_inf"]._data
        tmp = self._buffer(d)
        self._lerp_(m, g, 1 - beta1, tmp)
        u *= beta2
        np.abs(g, out=tmp)
        tmp += group["eps"]
        np.maximum(u, tmp, out=u)
        clr = _scalar(group["lr"]) / (1 - beta1 ** float(step_t))
        np.divide(m, u, out=tmp)
        tmp *= clr
        d -= tmp
