"""Resilient backpropagation, like ``torch.optim.Rprop``, and its functional form ``rprop``."""

from __future__ import annotations

import numpy as np

import ember
from ember import Tensor

from ._single_tensor import _buffer, _scalar, _view_as_real, _walk_params
from ._validate import check_functional_call, check_lr
from .optimizer import _FLAG_DEFAULTS, Optimizer

__all__ = ["Rprop", "rprop"]


class Rprop(Optimizer):
    """The resilient backpropagation algorithm (Riedmiller & Braun).

    Each element keeps its own step size: it grows by ``etaplus`` while the gradient keeps its
    sign, shrinks by ``etaminus`` when the sign flips (and that element then skips the step),
    and stays within ``step_sizes``. The parameter moves by ``-sign(grad) * step_size``.

    Args:
        params: an iterable of parameters or of dicts defining parameter groups.
        lr: the initial step size (float or 1-element tensor, default 1e-2).
        etas: ``(etaminus, etaplus)``, the multiplicative decrease and increase factors
            (default ``(0.5, 1.2)``).
        step_sizes: the minimal and maximal step size (default ``(1e-6, 50)``).
        capturable, foreach, differentiable: accepted for compatibility.
        maximize: maximize the objective instead of minimizing it.

    Per-parameter state: ``step`` (0-dim CPU tensor, on the parameter's device with
    ``capturable=True``), ``prev`` (the previous gradient) and ``step_size``.
    """

    _sparse_grad_error = "Rprop does not support sparse gradients"
    _legacy_group_defaults = _FLAG_DEFAULTS
    _legacy_scalar_state = ("step",)

    def __init__(self, params, lr=1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    def _scalar_state_device(self, p, group):
        return p.device if group["capturable"] else None  # the CPU unless capturable

    def _init_state(self, p, state, group) -> None:
        state["step"] = self._step_tensor(self._scalar_state_device(p, group))
        state["prev"] = ember.zeros_like(p)
        lr = _scalar(group["lr"])
        # a complex parameter is two independent real numbers: both parts start at ``lr``
        state["step_size"] = ember.full_like(p.grad, complex(lr, lr) if p.is_complex() else lr)

    def _step_group(self, group) -> None:
        params, grads, prevs, step_sizes, state_steps = self._group_tensors(
            group, "prev", "step_size", "step")
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        _single_tensor_rprop(params, grads, prevs, step_sizes, state_steps,
                             step_size_min=step_size_min, step_size_max=step_size_max,
                             etaminus=etaminus, etaplus=etaplus, maximize=group["maximize"],
                             scratch=self._scratch)


def rprop(params: list[Tensor], grads: list[Tensor], prevs: list[Tensor],
          step_sizes: list[Tensor], state_steps: list[Tensor], foreach: bool | None = None,
          capturable: bool = False, maximize: bool = False, differentiable: bool = False,
          has_complex: bool = False, *, step_size_min: float, step_size_max: float,
          etaminus: float, etaplus: float) -> None:
    """Functional API that performs Rprop algorithm computation (see :class:`Rprop`):
    ``params``, ``prevs`` (the previous gradients), ``step_sizes`` and ``state_steps`` are
    updated in place."""
    check_functional_call(params, state_steps)
    _single_tensor_rprop(params, grads, prevs, step_sizes, state_steps,
                         step_size_min=step_size_min, step_size_max=step_size_max,
                         etaminus=etaminus, etaplus=etaplus, maximize=maximize, scratch={})


def _single_tensor_rprop(params, grads, prevs, step_sizes, state_steps, *, step_size_min,
                         step_size_max, etaminus, etaplus, maximize, scratch) -> None:
    params, grads, prevs, step_sizes = _view_as_real(params, grads, prevs, step_sizes)
    for i, d, g, _ in _walk_params(params, grads, state_steps, maximize=maximize):
        prev, step_size = prevs[i]._data, step_sizes[i]._data
        factor = _buffer(scratch, prev)
        np.multiply(g, prev, out=factor)
        np.sign(factor, out=factor)
        flipped = factor < 0
        factor[factor > 0] = etaplus
        factor[flipped] = etaminus
        factor[factor == 0] = 1
        step_size *= factor
        np.maximum(step_size, step_size_min, out=step_size)
        np.minimum(step_size, step_size_max, out=step_size)
        # where the sign flipped the gradient counts as zero: no step, and no flip next time
        prev[...] = g
        prev[flipped] = 0
        np.sign(prev, out=factor)
        factor *= step_size
        d -= factor
