"""Adamax, like ``torch.optim.Adamax``, and its functional form ``adamax``."""

from __future__ import annotations

import numpy as np

from ember import Tensor

from ._single_tensor import _buffer, _lerp_, _scalar, _view_as_real, _walk_params
from ._validate import check_adam_family, check_functional_call
from .optimizer import Optimizer

__all__ = ["Adamax", "adamax"]


class Adamax(Optimizer):
    """Adamax, Adam's infinity-norm variant. Per-parameter state: ``step``, ``exp_avg``,
    ``exp_inf``."""

    _sparse_grad_error = "Adamax does not support sparse gradients"
    _zero_state = ("exp_avg", "exp_inf")
    _legacy_scalar_state = ("step",)

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        check_adam_family(lr, eps, betas, weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    def _step_group(self, group) -> None:
        params, grads, exp_avgs, exp_infs, state_steps = self._group_tensors(
            group, "exp_avg", "exp_inf", "step")
        beta1, beta2 = group["betas"]
        _single_tensor_adamax(params, grads, exp_avgs, exp_infs, state_steps, eps=group["eps"],
                              beta1=beta1, beta2=beta2, lr=group["lr"],
                              weight_decay=group["weight_decay"], maximize=group["maximize"],
                              scratch=self._scratch)


def adamax(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
           exp_infs: list[Tensor], state_steps: list[Tensor], foreach: bool | None = None,
           maximize: bool = False, differentiable: bool = False, capturable: bool = False,
           has_complex: bool = False, *, eps: float, beta1: float, beta2: float, lr: float,
           weight_decay: float) -> None:
    """Functional API that performs Adamax algorithm computation (see :class:`Adamax`):
    ``params``, ``exp_avgs``, ``exp_infs`` and ``state_steps`` are updated in place."""
    check_functional_call(params, state_steps)
    _single_tensor_adamax(params, grads, exp_avgs, exp_infs, state_steps, eps=eps, beta1=beta1,
                          beta2=beta2, lr=lr, weight_decay=weight_decay, maximize=maximize,
                          scratch={})


def _single_tensor_adamax(params, grads, exp_avgs, exp_infs, state_steps, *, eps, beta1, beta2,
                          lr, weight_decay, maximize, scratch) -> None:
    lr = _scalar(lr)
    params, grads, exp_avgs, exp_infs = _view_as_real(params, grads, exp_avgs, exp_infs)
    for i, d, g, step_t in _walk_params(params, grads, state_steps, maximize=maximize,
                                        weight_decay=weight_decay):
        m, u = exp_avgs[i]._data, exp_infs[i]._data
        tmp = _buffer(scratch, d)
        _lerp_(m, g, 1 - beta1, tmp)
        u *= beta2
        np.abs(g, out=tmp)
        tmp += eps
        np.maximum(u, tmp, out=u)
        clr = lr / (1 - beta1 ** float(step_t))
        np.divide(m, u, out=tmp)
        tmp *= clr
        d -= tmp
