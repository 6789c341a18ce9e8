"""RMSprop, like ``torch.optim.RMSprop``, and its functional form ``rmsprop``."""

from __future__ import annotations

import numpy as np

import ember
from ember import Tensor

from ._single_tensor import _buffer, _ema_square_, _lerp_, _scalar, _view_as_real, _walk_params
from ._validate import check_functional_call, check_lr, check_nonneg
from .optimizer import Optimizer

__all__ = ["RMSprop", "rmsprop"]


class RMSprop(Optimizer):
    """RMSprop (Hinton), with PyTorch's ``centered`` and ``momentum`` options.

    Per-parameter state: ``step``, ``square_avg``, ``momentum_buffer`` (when ``momentum > 0``)
    and ``grad_avg`` (when ``centered``).
    """

    _sparse_grad_error = "RMSprop does not support sparse gradients"
    _legacy_scalar_state = ("step",)
    _zero_state = ("square_avg",)

    def __init__(self, params, lr=1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False,
                 capturable: bool = False, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_lr(lr)
        check_nonneg(eps, "epsilon value")
        check_nonneg(momentum, "momentum value")
        check_nonneg(weight_decay, "weight_decay value")
        check_nonneg(alpha, "alpha value")
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps,
                    "centered": centered, "weight_decay": weight_decay,
                    "capturable": capturable, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _init_state(self, p, state, group) -> None:
        super()._init_state(p, state, group)
        if group["momentum"] > 0:
            state["momentum_buffer"] = ember.zeros_like(p)
        if group["centered"]:
            state["grad_avg"] = ember.zeros_like(p)

    def _step_group(self, group) -> None:
        params, grads, square_avgs, grad_avgs, momentum_buffers, state_steps = \
            self._group_tensors(group, "square_avg", "grad_avg", "momentum_buffer", "step")
        _single_tensor_rmsprop(params, grads, square_avgs, grad_avgs, momentum_buffers,
                               state_steps, lr=group["lr"], alpha=group["alpha"],
                               eps=group["eps"], weight_decay=group["weight_decay"],
                               momentum=group["momentum"], centered=group["centered"],
                               maximize=group["maximize"], scratch=self._scratch)


def rmsprop(params: list[Tensor], grads: list[Tensor], square_avgs: list[Tensor],
            grad_avgs: list[Tensor], momentum_buffer_list: list[Tensor],
            state_steps: list[Tensor], foreach: bool | None = None, maximize: bool = False,
            differentiable: bool = False, capturable: bool = False, has_complex: bool = False,
            *, lr: float, alpha: float, eps: float, weight_decay: float, momentum: float,
            centered: bool) -> None:
    """Functional API that performs RMSprop algorithm computation (see :class:`RMSprop`):
    ``params``, ``square_avgs``, ``grad_avgs`` (used when ``centered``),
    ``momentum_buffer_list`` (used when ``momentum > 0``) and ``state_steps`` are updated
    in place."""
    check_functional_call(params, state_steps)
    _single_tensor_rmsprop(params, grads, square_avgs, grad_avgs, momentum_buffer_list,
                           state_steps, lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                           momentum=momentum, centered=centered, maximize=maximize,
                           scratch={})


def _single_tensor_rmsprop(params, grads, square_avgs, grad_avgs, momentum_buffer_list,
                           state_steps, *, lr, alpha, eps, weight_decay, momentum, centered,
                           maximize, scratch) -> None:
    lr = _scalar(lr)
    params, grads, square_avgs, grad_avgs, momentum_buffer_list = \
        _view_as_real(params, grads, square_avgs, grad_avgs, momentum_buffer_list)
    for i, d, g, _ in _walk_params(params, grads, state_steps, maximize=maximize,
                                   weight_decay=weight_decay):
        sq = square_avgs[i]._data
        tmp, avg = _buffer(scratch, d, 0), _buffer(scratch, d, 1)
        _ema_square_(sq, g, alpha, tmp)
        if centered:
            ga = grad_avgs[i]._data
            _lerp_(ga, g, 1 - alpha, tmp)
            np.multiply(ga, ga, out=tmp)
            np.subtract(sq, tmp, out=avg)
            np.sqrt(avg, out=avg)
        else:
            np.sqrt(sq, out=avg)
        avg += eps
        np.divide(g, avg, out=tmp)
        if momentum > 0:
            buf = momentum_buffer_list[i]._data
            buf *= momentum
            buf += tmp
            np.multiply(buf, lr, out=tmp)
        else:
            tmp *= lr
        d -= tmp
