"""RAdam, like ``torch.optim.RAdam``, and its functional form ``radam``."""

from __future__ import annotations

import numpy as np

from ember import Tensor

from ._single_tensor import _buffer, _ema_square_, _lerp_, _scalar, _view_as_real, _walk_params
from ._validate import check_adam_family, check_functional_call
from .optimizer import Optimizer

__all__ = ["RAdam", "radam"]


class RAdam(Optimizer):
    """Rectified Adam (Liu et al.), with PyTorch's ``decoupled_weight_decay`` flag.
    Per-parameter state: ``step``, ``exp_avg``, ``exp_avg_sq``."""

    _sparse_grad_error = "RAdam does not support sparse gradients"
    _zero_state = ("exp_avg", "exp_avg_sq")
    _legacy_scalar_state = ("step",)

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_adam_family(lr, eps, betas, weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _step_group(self, group) -> None:
        params, grads, exp_avgs, exp_avg_sqs, state_steps = self._group_tensors(
            group, "exp_avg", "exp_avg_sq", "step")
        beta1, beta2 = group["betas"]
        _single_tensor_radam(params, grads, exp_avgs, exp_avg_sqs, state_steps, beta1=beta1,
                             beta2=beta2, lr=group["lr"], weight_decay=group["weight_decay"],
                             eps=group["eps"],
                             decoupled_weight_decay=group["decoupled_weight_decay"],
                             maximize=group["maximize"], scratch=self._scratch)


def radam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
          exp_avg_sqs: list[Tensor], state_steps: list[Tensor],
          decoupled_weight_decay: bool = False, foreach: bool | None = None,
          differentiable: bool = False, capturable: bool = False, has_complex: bool = False,
          maximize: bool = False, *, beta1: float, beta2: float, lr: float,
          weight_decay: float, eps: float) -> None:
    """Functional API that performs RAdam algorithm computation (see :class:`RAdam`):
    ``params``, ``exp_avgs``, ``exp_avg_sqs`` and ``state_steps`` are updated in place."""
    check_functional_call(params, state_steps)
    _single_tensor_radam(params, grads, exp_avgs, exp_avg_sqs, state_steps, beta1=beta1,
                         beta2=beta2, lr=lr, weight_decay=weight_decay, eps=eps,
                         decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                         scratch={})


def _single_tensor_radam(params, grads, exp_avgs, exp_avg_sqs, state_steps, *, beta1, beta2,
                         lr, weight_decay, eps, decoupled_weight_decay, maximize,
                         scratch) -> None:
    lr = _scalar(lr)
    rho_inf = 2 / (1 - beta2) - 1
    params, grads, exp_avgs, exp_avg_sqs = _view_as_real(params, grads, exp_avgs, exp_avg_sqs)
    for i, d, g, step_t in _walk_params(params, grads, state_steps, maximize=maximize,
                                        weight_decay=weight_decay, lr=lr,
                                        decoupled_weight_decay=decoupled_weight_decay):
        step = float(step_t)
        m, v = exp_avgs[i]._data, exp_avg_sqs[i]._data
        tmp, upd = _buffer(scratch, d, 0), _buffer(scratch, d, 1)
        _lerp_(m, g, 1 - beta1, tmp)
        _ema_square_(v, g, beta2, tmp)
        bias_correction1 = 1 - beta1**step
        bias_correction2 = 1 - beta2**step
        np.divide(m, bias_correction1, out=upd)  # bias-corrected exp_avg
        upd *= lr
        rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                    / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            np.sqrt(v, out=tmp)
            tmp += eps
            np.divide(bias_correction2**0.5, tmp, out=tmp)  # adaptive lr
            upd *= tmp
            upd *= rect
        d -= upd
