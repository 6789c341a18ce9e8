"""Adagrad, like ``torch.optim.Adagrad``, and its functional form ``adagrad``."""

from __future__ import annotations

import numpy as np

import ember
from ember import Tensor

from ._single_tensor import _buffer, _scalar, _unscale_or_skip, _view_as_real, _walk_params
from ._validate import check_functional_call, check_fused, check_fused_group, check_lr, check_nonneg
from .optimizer import Optimizer

__all__ = ["Adagrad", "adagrad"]


class Adagrad(Optimizer):
    """Adagrad (Duchi et al.). As in PyTorch, the state (``step``, ``sum``) is made for every
    parameter when the optimizer is constructed."""

    _legacy_scalar_state = ("step",)

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

    def _step_group(self, group) -> None:
        params, grads, state_sums, state_steps = self._group_tensors(group, "sum", "step")
        if group["fused"]:
            check_fused_group(self, params, grads, "`fused` does not support sparse grad or "
                              "complex param")
        _single_tensor_adagrad(params, grads, state_sums, state_steps, lr=group["lr"],
                               weight_decay=group["weight_decay"], lr_decay=group["lr_decay"],
                               eps=group["eps"], maximize=group["maximize"],
                               scratch=self._scratch)


def adagrad(params: list[Tensor], grads: list[Tensor], state_sums: list[Tensor],
            state_steps: list[Tensor], fused: bool | None = None,
            grad_scale: Tensor | None = None, found_inf: Tensor | None = None,
            has_sparse_grad: bool = False, foreach: bool | None = None,
            differentiable: bool = False, has_complex: bool = False, *, lr: float,
            weight_decay: float, lr_decay: float, eps: float, maximize: bool) -> None:
    """Functional API that performs Adagrad algorithm computation (see :class:`Adagrad`):
    ``params``, ``state_sums`` and ``state_steps`` are updated in place; ``fused=True``
    takes ``grad_scale``/``found_inf``."""
    check_functional_call(params, state_steps, grad_scale=grad_scale, found_inf=found_inf,
                          fused=bool(fused))
    if fused and _unscale_or_skip(grads, grad_scale, found_inf):
        return
    _single_tensor_adagrad(params, grads, state_sums, state_steps, lr=lr,
                           weight_decay=weight_decay, lr_decay=lr_decay, eps=eps,
                           maximize=maximize, scratch={})


def _single_tensor_adagrad(params, grads, state_sums, state_steps, *, lr, weight_decay,
                           lr_decay, eps, maximize, scratch) -> None:
    lr = _scalar(lr)
    if any(g.__class__ is not Tensor and g.is_sparse for g in grads):
        _sparse_adagrad(params, grads, state_sums, state_steps, lr=lr,
                        weight_decay=weight_decay, lr_decay=lr_decay, eps=eps,
                        maximize=maximize)
        return
    params, grads, state_sums = _view_as_real(params, grads, state_sums)
    for i, d, g, step_t in _walk_params(params, grads, state_steps, maximize=maximize,
                                        weight_decay=weight_decay):
        step = float(step_t)
        clr = lr / (1 + (step - 1) * lr_decay)
        s = state_sums[i]._data
        tmp, std = _buffer(scratch, d, 0), _buffer(scratch, d, 1)
        np.multiply(g, g, out=tmp)
        s += tmp
        np.sqrt(s, out=std)
        std += eps
        np.divide(g, std, out=tmp)
        tmp *= clr
        d -= tmp


def _sparse_adagrad(params, grads, state_sums, state_steps, *, lr, weight_decay, lr_decay, eps,
                    maximize) -> None:
    """Adagrad on sparse gradients (``nn.Embedding(sparse=True)``), as PyTorch's: the sums
    and the parameter change only at the coalesced gradient's indices; weight decay is
    PyTorch's error."""
    with ember.no_grad():
        for i, param in enumerate(params):
            grad, step_t = grads[i], state_steps[i]
            if grad.__class__ is Tensor or not grad.is_sparse:  # a dense one in the group
                _single_tensor_adagrad([param], [grad], [state_sums[i]], [step_t], lr=lr,
                                       weight_decay=weight_decay, lr_decay=lr_decay, eps=eps,
                                       maximize=maximize, scratch={})
                continue
            step_t.add_(1)
            step = float(step_t)
            if weight_decay != 0:
                raise RuntimeError("weight_decay option is not compatible with sparse "
                                   "gradients")
            grad = (-grad if maximize else grad).coalesce()  # non-linear: unique indices
            values = grad._values()
            where = tuple(grad._indices())
            state_sums[i].index_put_(where, values * values, accumulate=True)
            std = state_sums[i][where].sqrt() + eps
            clr = lr / (1 + (step - 1) * lr_decay)
            param.index_put_(where, values / std * -clr, accumulate=True)
