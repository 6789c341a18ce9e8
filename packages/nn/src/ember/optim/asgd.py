"""Averaged SGD, like ``torch.optim.ASGD``, and its functional form ``asgd``."""

from __future__ import annotations

import numpy as np

import ember
from ember import Tensor

from ._single_tensor import _buffer, _scalar, _walk_params
from ._validate import check_functional_call, check_lr, check_nonneg
from .optimizer import _FLAG_DEFAULTS, Optimizer, _scalar_dtype

__all__ = ["ASGD", "asgd"]


class ASGD(Optimizer):
    """Averaged Stochastic Gradient Descent (Polyak & Juditsky).

    Args:
        params: an iterable of parameters or of dicts defining parameter groups.
        lr: learning rate (float or 1-element tensor, default 1e-2).
        lambd: decay term (default 1e-4).
        alpha: power for the ``eta`` update (default 0.75).
        t0: the step at which averaging starts (default 1e6).
        weight_decay: L2 penalty (default 0).
        foreach, differentiable, capturable: accepted for compatibility; the update is always
            PyTorch's single-tensor algorithm.
        maximize: maximize the objective instead of minimizing it.

    Per-parameter state: ``step``, ``eta`` and ``mu`` (0-dim tensors of the scalar dtype on the
    parameter's device, as PyTorch keeps them) and ``ax``, the running average of the parameter.

    Example:
        >>> w = ember.zeros(2, requires_grad=True)
        >>> opt = ASGD([w], lr=0.1, t0=0)
        >>> w.grad = ember.ones(2)
        >>> opt.step()
        >>> w
        tensor([-0.1000, -0.1000], requires_grad=True)
    """

    _sparse_grad_error = "ASGD does not support sparse gradients"
    _legacy_group_defaults = _FLAG_DEFAULTS
    _legacy_scalar_state = ("step", "eta", "mu")

    def __init__(self, params, lr=1e-2, lambd: float = 1e-4, alpha: float = 0.75,
                 t0: float = 1e6, weight_decay: float = 0, foreach: bool | None = None,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        check_lr(lr)
        check_nonneg(weight_decay, "weight_decay value")
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def _scalar_state_device(self, p, group):
        return p.device  # ASGD keeps ``step``, ``eta`` and ``mu`` beside the parameter

    def _init_state(self, p, state, group) -> None:
        dtype, device = _scalar_dtype(), self._scalar_state_device(p, group)
        state["step"] = ember.zeros((), dtype=dtype, device=device)
        state["eta"] = ember.tensor(_scalar(group["lr"]), dtype=dtype, device=device)
        state["mu"] = ember.ones((), dtype=dtype, device=device)
        state["ax"] = ember.zeros_like(p)

    def _step_group(self, group) -> None:
        params, grads, axs, mus, etas, state_steps = self._group_tensors(
            group, "ax", "mu", "eta", "step")
        _single_tensor_asgd(params, grads, axs, mus, etas, state_steps, lambd=group["lambd"],
                            lr=group["lr"], t0=group["t0"], alpha=group["alpha"],
                            weight_decay=group["weight_decay"], maximize=group["maximize"],
                            scratch=self._scratch)


def asgd(params: list[Tensor], grads: list[Tensor], axs: list[Tensor], mus: list[Tensor],
         etas: list[Tensor], state_steps: list[Tensor], foreach: bool | None = None,
         maximize: bool = False, differentiable: bool = False, capturable: bool = False,
         has_complex: bool = False, *, lambd: float, lr: float, t0: float, alpha: float,
         weight_decay: float) -> None:
    """Functional API that performs ASGD algorithm computation (see :class:`ASGD`):
    ``params``, the averages ``axs`` and the 0-dim ``mus``, ``etas`` and ``state_steps`` are
    updated in place."""
    check_functional_call(params)
    _single_tensor_asgd(params, grads, axs, mus, etas, state_steps, lambd=lambd, lr=lr, t0=t0,
                        alpha=alpha, weight_decay=weight_decay, maximize=maximize, scratch={})


def _single_tensor_asgd(params, grads, axs, mus, etas, state_steps, *, lambd, lr, t0, alpha,
                        weight_decay, maximize, scratch) -> None:
    lr = _scalar(lr)
    as_default = np.float64 if ember.get_default_dtype() == ember.float64 else np.float32
    for i, d, g, step_t in _walk_params(params, grads, state_steps, maximize=maximize,
                                        weight_decay=weight_decay):
        eta_t, mu_t = etas[i]._data, mus[i]._data
        eta = float(eta_t)  # the stored (float32) value, as PyTorch's ``eta.item()``
        tmp = _buffer(scratch, d)
        d *= 1 - lambd * eta  # decay term
        np.multiply(g, eta, out=tmp)
        d -= tmp
        ax = axs[i]._data
        mu = float(mu_t)
        if mu != 1:
            np.subtract(d, ax, out=tmp)
            tmp *= mu
            ax += tmp
        else:
            ax[...] = d
        step = float(step_t)
        # PyTorch makes the new values with ``torch.as_tensor(float)``: rounded to the
        # default dtype before they are copied into the state, whatever its dtype
        eta_t[...] = as_default(lr / ((1 + lambd * lr * step) ** alpha))
        mu_t[...] = as_default(1 / max(1, step - t0))
