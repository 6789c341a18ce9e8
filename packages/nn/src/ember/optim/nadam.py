"""NAdam, like ``torch.optim.NAdam``."""

from __future__ import annotations

import numpy as np

import ember

from ._validate import check_betas, check_lr, check_nonneg
from .optimizer import Optimizer, _scalar

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """Adam with Nesterov momentum (Dozat), with PyTorch's ``momentum_decay`` schedule and
    ``decoupled_weight_decay`` flag. Per-parameter state: ``step``, ``mu_product`` (both float32
    0-dim CPU tensors), ``exp_avg``, ``exp_avg_sq``."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_lr(lr)
        check_nonneg(eps, "epsilon value")
        check_betas(betas)
        check_nonneg(weight_decay, "weight_decay value")
        check_nonneg(momentum_decay, "momentum_decay value")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay,
                    "decoupled_weight_decay": decoupled_weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _init_state(self, p, state, group) -> None:
        state["step"] = self._step_tensor()
        state["mu_product"] = ember.tensor(1.0, dtype=ember.float32)
        state["exp_avg"] = ember.zeros_like(p)
        state["exp_avg_sq"] = ember.zeros_like(p)

    def _update(self, d, g, state, group) -> None:
        lr = _scalar(group["lr"])
        beta1, beta2 = group["betas"]
        wd, momentum_decay = _scalar(group["weight_decay"]), group["momentum_decay"]
        step_t = state["step"]._data
        step_t += 1
        step = float(step_t)
        bias_correction2 = 1 - beta2**step
        if wd != 0 and group["decoupled_weight_decay"]:
            d *= 1 - lr * wd
        g = self._grad_with_decay(d, g, group)
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
        mu_product_t = state["mu_product"]._data
        mu_product_t *= mu  # in float32, as PyTorch keeps it
        mu_product = float(mu_product_t)
        mu_product_next = mu_product * mu_next
        m, v = state["exp_avg"]._data, state["exp_avg_sq"]._data
        tmp, denom = self._buffer(d, 0), self._buffer(d, 1)
        self._lerp_(m, g, 1 - beta1, tmp)
        v *= beta2
        np.multiply(g, g, out=tmp)
        tmp *= 1 - beta2
        v += tmp
        np.divide(v, bias_correction2, out=denom)
        np.sqrt(denom, out=denom)
        denom += group["eps"]
        np.divide(g, denom, out=tmp)
        tmp *= lr * (1.0 - mu) / (1.0 - mu_product)
        d -= tmp
        np.divide(m, denom, out=tmp)
        tmp *= lr * mu_next / (1.0 - mu_product_next)
        d -= tmp
