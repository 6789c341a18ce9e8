"""RAdam, like ``torch.optim.RAdam``."""

from __future__ import annotations

import numpy as np

import ember

from ._validate import check_betas, check_lr, check_nonneg
from .optimizer import Optimizer, _scalar

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """Rectified Adam (Liu et al.), with PyTorch's ``decoupled_weight_decay`` flag.
    Per-parameter state: ``step``, ``exp_avg``, ``exp_avg_sq``."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_lr(lr)
        check_nonneg(eps, "epsilon value")
        check_betas(betas)
        check_nonneg(weight_decay, "weight_decay value")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _init_state(self, p, state, group) -> None:
        state["step"] = self._step_tensor()
        state["exp_avg"] = ember.zeros_like(p)
        state["exp_avg_sq"] = ember.zeros_like(p)

    def _update(self, d, g, state, group) -> None:
        lr = _scalar(group["lr"])
        beta1, beta2 = group["betas"]
        wd = _scalar(group["weight_decay"])
        step_t = state["step"]._data
        step_t += 1
        step = float(step_t)
        if wd != 0 and group["decoupled_weight_decay"]:
            d *= 1 - lr * wd
        g = self._grad_with_decay(d, g, group)
        m, v = state["exp_avg"]._data, state["exp_avg_sq"]._data
        tmp, upd = self._buffer(d, 0), self._buffer(d, 1)
        self._lerp_(m, g, 1 - beta1, tmp)
        v *= beta2
        np.multiply(g, g, out=tmp)
        tmp *= 1 - beta2
        v += tmp
        bias_correction1 = 1 - beta1**step
        bias_correction2 = 1 - beta2**step
        np.divide(m, bias_correction1, out=upd)  # bias-corrected exp_avg
        upd *= lr
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                    / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            np.sqrt(v, out=tmp)
            tmp += group["eps"]
            np.divide(bias_correction2**0.5, tmp, out=tmp)  # adaptive lr
            upd *= tmp
            upd *= rect
        d -= upd
