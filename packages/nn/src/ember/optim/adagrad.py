"""Adagrad, like ``torch.optim.Adagrad``."""

from __future__ import annotations

import numpy as np

import ember

from ._validate import check_fused, check_lr, check_nonneg
from .optimizer import Optimizer, _scalar

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad (Duchi et al.). As in PyTorch, the state (``step``, ``sum``) is made for every
    parameter when the optimizer is constructed."""

    def __init__(self, params, lr=1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10,
                 foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        check_lr(lr)
        check_nonneg(lr_decay, "lr_decay value")
        check_nonneg(weight_decay, "weight_decay value")
        check_nonneg(initial_accumulator_value, "initial_accumulator_value value")
        check_nonneg(eps, "epsilon value")
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "fused": fused}
        super().__init__(params, defaults)
        check_fused(fused, foreach, differentiable)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, self.state[p], group)

    def _init_state(self, p, state, group) -> None:
        state["step"] = self._step_tensor()
        # PyTorch reads the accumulator's start from the defaults, not the group
        state["sum"] = ember.full_like(p, self.defaults["initial_accumulator_value"])

    def _update(self, d, g, state, group) -> None:
        step_t = state["step"]._data
        step_t += 1
        step = float(step_t)
        g = self._grad_with_decay(d, g, group)
        clr = _scalar(group["lr"]) / (1 + (step - 1) * group["lr_decay"])
        s = state["sum"]._data
        tmp, std = self._buffer(d, 0), self._buffer(d, 1)
        np.multiply(g, g, out=tmp)
        s += tmp
        np.sqrt(s, out=std)
        std += group["eps"]
        np.divide(g, std, out=tmp)
        tmp *= clr
        d -= tmp
