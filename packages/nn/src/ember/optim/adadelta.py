"""Adadelta, like ``torch.optim.Adadelta``."""

from __future__ import annotations

import numpy as np

import ember

from ._validate import check_lr, check_nonneg
from .optimizer import Optimizer, _scalar

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta (Zeiler). Per-parameter state: ``step``, ``square_avg``, ``acc_delta``."""

    def __init__(self, params, lr=1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_nonneg(eps, "epsilon value")
        check_nonneg(weight_decay, "weight_decay value")
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "capturable": capturable, "foreach": foreach,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _init_state(self, p, state, group) -> None:
        state["step"] = self._step_tensor()
        state["square_avg"] = ember.zeros_like(p)
        state["acc_delta"] = ember.zeros_like(p)

    def _update(self, d, g, state, group) -> None:
        rho, eps = group["rho"], group["eps"]
        state["step"]._data += 1
        g = self._grad_with_decay(d, g, group)
        sq, acc = state["square_avg"]._data, state["acc_delta"]._data
        tmp, delta = self._buffer(d, 0), self._buffer(d, 1)
        sq *= rho
        np.multiply(g, g, out=tmp)
        tmp *= 1 - rho
        sq += tmp
        np.add(sq, eps, out=tmp)
        np.sqrt(tmp, out=tmp)  # std
        np.add(acc, eps, out=delta)
        np.sqrt(delta, out=delta)
        delta /= tmp
        delta *= g
        acc *= rho
        np.multiply(delta, delta, out=tmp)
        tmp *= 1 - rho
        acc += tmp
        delta *= _scalar(group["lr"])
        d -= delta
