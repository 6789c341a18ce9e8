"""Adadelta, like ``torch.optim.Adadelta``, and its functional form ``adadelta``."""

from __future__ import annotations

import numpy as np

from ember import Tensor

from ._single_tensor import _buffer, _ema_square_, _scalar, _view_as_real, _walk_params
from ._validate import check_functional_call, check_lr, check_nonneg
from .optimizer import Optimizer

__all__ = ["Adadelta", "adadelta"]


class Adadelta(Optimizer):
    """Adadelta (Zeiler). Per-parameter state: ``step``, ``square_avg``, ``acc_delta``."""

    _sparse_grad_error = "Adadelta does not support sparse gradients"
    _zero_state = ("square_avg", "acc_delta")
    _legacy_scalar_state = ("step",)

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

    def _step_group(self, group) -> None:
        params, grads, square_avgs, acc_deltas, state_steps = self._group_tensors(
            group, "square_avg", "acc_delta", "step")
        _single_tensor_adadelta(params, grads, square_avgs, acc_deltas, state_steps,
                                lr=group["lr"], rho=group["rho"], eps=group["eps"],
                                weight_decay=group["weight_decay"],
                                maximize=group["maximize"], scratch=self._scratch)


def adadelta(params: list[Tensor], grads: list[Tensor], square_avgs: list[Tensor],
             acc_deltas: list[Tensor], state_steps: list[Tensor], capturable: bool = False,
             foreach: bool | None = None, differentiable: bool = False,
             has_complex: bool = False, *, lr: float, rho: float, eps: float,
             weight_decay: float, maximize: bool) -> None:
    """Functional API that performs Adadelta algorithm computation (see :class:`Adadelta`):
    ``params``, ``square_avgs``, ``acc_deltas`` and ``state_steps`` are updated in place."""
    check_functional_call(params, state_steps)
    _single_tensor_adadelta(params, grads, square_avgs, acc_deltas, state_steps, lr=lr,
                            rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                            scratch={})


def _single_tensor_adadelta(params, grads, square_avgs, acc_deltas, state_steps, *, lr, rho,
                            eps, weight_decay, maximize, scratch) -> None:
    lr = _scalar(lr)
    params, grads, square_avgs, acc_deltas = _view_as_real(params, grads, square_avgs, acc_deltas)
    for i, d, g, _ in _walk_params(params, grads, state_steps, maximize=maximize,
                                   weight_decay=weight_decay):
        sq, acc = square_avgs[i]._data, acc_deltas[i]._data
        tmp, delta = _buffer(scratch, d, 0), _buffer(scratch, d, 1)
        _ema_square_(sq, g, rho, tmp)
        np.add(sq, eps, out=tmp)
        np.sqrt(tmp, out=tmp)  # std
        np.add(acc, eps, out=delta)
        np.sqrt(delta, out=delta)
        delta /= tmp
        delta *= g
        _ema_square_(acc, delta, rho, tmp)
        delta *= lr
        d -= delta
