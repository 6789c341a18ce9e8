"""Stochastic gradient descent (optionally with momentum), like ``torch.optim.SGD``."""

from __future__ import annotations

import numpy as np

import ember
from ember._tensor import _make

from .optimizer import Optimizer, _scalar

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent, with PyTorch's momentum, dampening and Nesterov rules.

    The state of a parameter is its ``momentum_buffer`` (only when ``momentum != 0``).

    Example:
        >>> w = ember.zeros(3, requires_grad=True)
        >>> opt = SGD([w], lr=0.1, momentum=0.9)
        >>> w.grad = ember.ones(3)
        >>> opt.step()
        >>> w
        tensor([-0.1000, -0.1000, -0.1000], requires_grad=True)
    """

    def __init__(self, params, lr=1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay=0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        if isinstance(lr, ember.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening,
                    "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize,
                    "foreach": foreach, "differentiable": differentiable, "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        if fused:
            if differentiable:
                raise RuntimeError("`fused` does not support `differentiable`")
            if foreach:
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)

    def _step_group(self, group) -> None:
        # Own loop: SGD touches the state only with momentum (as PyTorch does), and its step is
        # the hot path of plain training loops, so hyper-parameters are read once per group.
        lr = _scalar(group["lr"])
        momentum = group["momentum"]
        dampening = group["dampening"]
        nesterov = group["nesterov"]
        plain = not group["maximize"] and _scalar(group["weight_decay"]) == 0
        state_of = self.state
        for p in group["params"]:
            grad = p._grad
            if grad is None:
                continue
            d = p._data
            g = grad._data if plain else self._grad_with_decay(d, grad._data, group)
            if momentum != 0:
                state = state_of[p]
                buf = state.get("momentum_buffer")
                if buf is None:
                    buf = _make(g.copy(), grad._device)
                    state["momentum_buffer"] = buf
                else:
                    b = buf._data
                    b *= momentum
                    if dampening == 0:
                        b += g
                    else:
                        tmp = self._buffer(d)
                        np.multiply(g, 1 - dampening, out=tmp)
                        b += tmp
                if nesterov:
                    g = g + momentum * buf._data
                else:
                    g = buf._data
            tmp = self._buffer(d)
            np.multiply(g, lr, out=tmp)
            np.subtract(d, tmp, out=d)
            p._bump_version()
