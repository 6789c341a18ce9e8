"""NAdam, like ``torch.optim.NAdam``, and its functional form ``nadam``."""

from __future__ import annotations

import numpy as np

import ember
from ember import Tensor

from ._single_tensor import _buffer, _ema_square_, _lerp_, _scalar, _view_as_real, _walk_params
from ._validate import check_adam_family, check_functional_call, check_nonneg
from .optimizer import Optimizer

__all__ = ["NAdam", "nadam"]


class NAdam(Optimizer):
    """Adam with Nesterov momentum (Dozat), with PyTorch's ``momentum_decay`` schedule and
    ``decoupled_weight_decay`` flag. Per-parameter state: ``step``, ``mu_product`` (both float32
    0-dim CPU tensors), ``exp_avg``, ``exp_avg_sq``."""

    _sparse_grad_error = "NAdam does not support sparse gradients"
    _legacy_scalar_state = ("step", "mu_product")

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_adam_family(lr, eps, betas, weight_decay)
        check_nonneg(momentum_decay, "momentum_decay value")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay,
                    "decoupled_weight_decay": decoupled_weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _init_state(self, p, state, group) -> None:
        state["step"] = self._step_tensor()
        state["mu_product"] = ember.tensor(1.0, dtype=ember.float32, device="cpu")  # as step
        state["exp_avg"] = ember.zeros_like(p)
        state["exp_avg_sq"] = ember.zeros_like(p)

    def _step_group(self, group) -> None:
        params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps = self._group_tensors(
            group, "exp_avg", "exp_avg_sq", "mu_product", "step")
        beta1, beta2 = group["betas"]
        _single_tensor_nadam(params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps,
                             beta1=beta1, beta2=beta2, lr=group["lr"],
                             weight_decay=group["weight_decay"],
                             momentum_decay=group["momentum_decay"], eps=group["eps"],
                             decoupled_weight_decay=group["decoupled_weight_decay"],
                             maximize=group["maximize"], scratch=self._scratch)


def nadam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
          exp_avg_sqs: list[Tensor], mu_products: list[Tensor], state_steps: list[Tensor],
          decoupled_weight_decay: bool = False, foreach: bool | None = None,
          capturable: bool = False, differentiable: bool = False, has_complex: bool = False,
          maximize: bool = False, *, beta1: float, beta2: float, lr: float,
          weight_decay: float, momentum_decay: float, eps: float) -> None:
    """Functional API that performs NAdam algorithm computation (see :class:`NAdam`):
    ``params``, ``exp_avgs``, ``exp_avg_sqs``, ``mu_products`` and ``state_steps`` (0-dim
    tensors) are updated in place."""
    check_functional_call(params, state_steps)
    if not all(isinstance(t, Tensor) for t in mu_products):
        raise RuntimeError("API has changed, `mu_products` argument must contain a list of "
                           "singleton tensors")
    _single_tensor_nadam(params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps,
                         beta1=beta1, beta2=beta2, lr=lr, weight_decay=weight_decay,
                         momentum_decay=momentum_decay, eps=eps,
                         decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                         scratch={})


def _single_tensor_nadam(params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps, *,
                         beta1, beta2, lr, weight_decay, momentum_decay, eps,
                         decoupled_weight_decay, maximize, scratch) -> None:
    lr = _scalar(lr)
    params, grads, exp_avgs, exp_avg_sqs = _view_as_real(params, grads, exp_avgs, exp_avg_sqs)
    for i, d, g, step_t in _walk_params(params, grads, state_steps, maximize=maximize,
                                        weight_decay=weight_decay, lr=lr,
                                        decoupled_weight_decay=decoupled_weight_decay):
        step = float(step_t)
        bias_correction2 = 1 - beta2**step
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
        mu_product_t = mu_products[i]._data
        mu_product_t *= mu  # in float32, as PyTorch keeps it
        mu_product = float(mu_product_t)
        mu_product_next = mu_product * mu_next
        m, v = exp_avgs[i]._data, exp_avg_sqs[i]._data
        tmp, denom = _buffer(scratch, d, 0), _buffer(scratch, d, 1)
        _lerp_(m, g, 1 - beta1, tmp)
        _ema_square_(v, g, beta2, tmp)
        np.divide(v, bias_correction2, out=denom)
        np.sqrt(denom, out=denom)
        denom += eps
        np.divide(g, denom, out=tmp)
        tmp *= lr * (1.0 - mu) / (1.0 - mu_product)
        d -= tmp
        np.divide(m, denom, out=tmp)
        tmp *= lr * mu_next / (1.0 - mu_product_next)
        d -= tmp
