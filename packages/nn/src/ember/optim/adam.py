"""Adam, like ``torch.optim.Adam`` (``decoupled_weight_decay=True`` makes it AdamW)."""

from __future__ import annotations

import numpy as np

import ember

from ._validate import check_betas, check_fused, check_lr, check_nonneg
from .optimizer import Optimizer, _scalar

__all__ = ["Adam"]


class Adam(Optimizer):
    """Adam (Kingma & Ba), with PyTorch's ``amsgrad``, ``maximize`` and weight-decay options.

    Per-parameter state: ``step`` (float32 0-dim CPU tensor), ``exp_avg``, ``exp_avg_sq`` and,
    with ``amsgrad``, ``max_exp_avg_sq``. With ``decoupled_weight_decay=True`` the decay
    multiplies the parameter by ``1 - lr * weight_decay`` (AdamW) instead of entering the
    gradient.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False) -> None:
        check_lr(lr)
        check_nonneg(eps, "epsilon value")
        check_betas(betas)
        check_nonneg(weight_decay, "weight_decay value")
        if not ((isinstance(betas[0], float) and isinstance(betas[1], float))
                or (isinstance(betas[0], ember.Tensor) and isinstance(betas[1], ember.Tensor))):
            raise ValueError("betas must be either both floats or both Tensors")
        betas = tuple(_scalar(b) for b in betas)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach,
                    "capturable": capturable, "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)
        check_fused(fused, foreach, differentiable)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("decoupled_weight_decay", False)

    def _init_state(self, p, state, group) -> None:
        state["step"] = self._step_tensor()
        state["exp_avg"] = ember.zeros_like(p)
        state["exp_avg_sq"] = ember.zeros_like(p)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = ember.zeros_like(p)

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
        tmp = self._buffer(d)
        self._lerp_(m, g, 1 - beta1, tmp)
        v *= beta2
        np.multiply(g, g, out=tmp)
        tmp *= 1 - beta2
        v += tmp
        step_size = lr / (1 - beta1**step)
        bias_correction2_sqrt = (1 - beta2**step) ** 0.5
        if group["amsgrad"]:
            v_max = state["max_exp_avg_sq"]._data
            np.maximum(v_max, v, out=v_max)
            v = v_max
        np.sqrt(v, out=tmp)
        tmp /= bias_correction2_sqrt
        tmp += group["eps"]
        np.divide(m, tmp, out=tmp)
        tmp *= step_size
        d -= tmp
