"""Adam, like ``torch.optim.Adam`` (``decoupled_weight_decay=True`` makes it AdamW), and its
functional form ``adam``."""

from __future__ import annotations

import numpy as np

import ember
from ember import Tensor
from ember.ops import api

from ._single_tensor import (
    _buffer,
    _ema_square_,
    _lerp_,
    _RealView,
    _scalar,
    _unscale_or_skip,
    _view_as_real,
    _walk_params,
)
from ._validate import check_adam_family, check_functional_call, check_fused, check_fused_param
from .optimizer import Optimizer

__all__ = ["Adam", "adam"]


class Adam(Optimizer):
    """Adam (Kingma & Ba), with PyTorch's ``amsgrad``, ``maximize`` and weight-decay options.

    Per-parameter state: ``step`` (float32 0-dim CPU tensor), ``exp_avg``, ``exp_avg_sq`` and,
    with ``amsgrad``, ``max_exp_avg_sq``. With ``decoupled_weight_decay=True`` the decay
    multiplies the parameter by ``1 - lr * weight_decay`` (AdamW) instead of entering the
    gradient.
    """

    _sparse_grad_error = ("Adam does not support sparse gradients, "
                          "please consider SparseAdam instead")
    _legacy_scalar_state = ("step",)
    _zero_state = ("exp_avg", "exp_avg_sq")
    _legacy_group_defaults = {"amsgrad": False, "maximize": False,
                              "decoupled_weight_decay": False}

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False) -> None:
        if isinstance(lr, Tensor) and foreach and not capturable:
            raise ValueError("lr as a Tensor is not supported for capturable=False and "
                             "foreach=True")
        check_adam_family(lr, eps, betas, weight_decay)
        if not ((isinstance(betas[0], float) and isinstance(betas[1], float))
                or (isinstance(betas[0], ember.Tensor) and isinstance(betas[1], ember.Tensor))):
            raise ValueError("betas must be either both floats or both Tensors")
        for i, beta in enumerate(betas):
            if isinstance(beta, Tensor):
                if foreach and not capturable:
                    raise ValueError(f"betas[{i}] as a Tensor is not supported for "
                                     "capturable=False and foreach=True")
                if beta.numel() != 1:
                    raise ValueError(f"Tensor betas[{i}] must be 1-element")
        # PyTorch's ``_to_scalar``: a 1-element tensor stays a tensor, made 0-dim
        betas = tuple(b.squeeze() if isinstance(b, Tensor) and b.dim() != 0 else b
                      for b in betas)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach,
                    "capturable": capturable, "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)
        check_fused(fused, foreach, differentiable)

    def _init_state(self, p, state, group) -> None:
        if group["fused"]:
            check_fused_param(p)
        super()._init_state(p, state, group)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = ember.zeros_like(p)

    def _step_group(self, group) -> None:
        params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps = \
            self._group_tensors(group, "exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step")
        beta1, beta2 = group["betas"]
        _single_tensor_adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
                            amsgrad=group["amsgrad"], beta1=beta1, beta2=beta2, lr=group["lr"],
                            weight_decay=group["weight_decay"], eps=group["eps"],
                            maximize=group["maximize"],
                            decoupled_weight_decay=group["decoupled_weight_decay"],
                            scratch=self._scratch)


def adam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
         exp_avg_sqs: list[Tensor], max_exp_avg_sqs: list[Tensor], state_steps: list[Tensor],
         foreach: bool | None = None, capturable: bool = False, differentiable: bool = False,
         fused: bool | None = None, grad_scale: Tensor | None = None,
         found_inf: Tensor | None = None, has_complex: bool = False,
         decoupled_weight_decay: bool = False, *, amsgrad: bool, beta1: float | Tensor,
         beta2: float | Tensor, lr: float | Tensor, weight_decay: float, eps: float,
         maximize: bool) -> None:
    """Functional API that performs Adam algorithm computation (see :class:`Adam`).

    Updates ``params``, ``exp_avgs``, ``exp_avg_sqs``, ``max_exp_avg_sqs`` (used with
    ``amsgrad``) and ``state_steps`` (0-dim tensors) in place. ``foreach``, ``capturable``
    and ``differentiable`` do not change the computation; ``fused=True`` takes
    ``grad_scale``/``found_inf``.
    """
    check_functional_call(params, state_steps, grad_scale=grad_scale, found_inf=found_inf,
                          fused=bool(fused))
    if fused and _unscale_or_skip(grads, grad_scale, found_inf):
        return
    _single_tensor_adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
                        amsgrad=amsgrad, beta1=beta1, beta2=beta2, lr=lr,
                        weight_decay=weight_decay, eps=eps, maximize=maximize,
                        decoupled_weight_decay=decoupled_weight_decay, scratch={})


def _single_tensor_adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, *,
                        amsgrad, beta1, beta2, lr, weight_decay, eps, maximize,
                        decoupled_weight_decay, scratch) -> None:
    lr, beta1, beta2 = _scalar(lr), _scalar(beta1), _scalar(beta2)
    fused = api.fused_kernel(params[0], "adam_step_") if params else None
    params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs = _view_as_real(
        params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs)
    if fused is not None and any(type(p) is _RealView for p in params):
        fused = None  # complex parameters: the array passes below, on their real pairs
    if fused is not None:  # a device with a one-pass Adam kernel (CUDA): no temporaries
        for i, param in enumerate(params):
            step_t = state_steps[i]._data
            step_t += 1
            fused(param._data, grads[i]._data, exp_avgs[i]._data, exp_avg_sqs[i]._data,
                  lr=lr, beta1=beta1, beta2=beta2, eps=_scalar(eps),
                  weight_decay=_scalar(weight_decay), step=float(step_t),
                  max_exp_avg_sq=max_exp_avg_sqs[i]._data if amsgrad else None,
                  maximize=maximize, decoupled=decoupled_weight_decay)
            param._bump_version()
        return
    native = api.native_kernel("ember_adam_f32") if params else None
    for i, d, g, step_t in _walk_params(params, grads, state_steps, maximize=maximize,
                                        weight_decay=weight_decay, lr=lr,
                                        decoupled_weight_decay=decoupled_weight_decay):
        step = float(step_t)
        m, v = exp_avgs[i]._data, exp_avg_sqs[i]._data
        v_max = max_exp_avg_sqs[i]._data if amsgrad else None
        if native is not None and api.native_arrays(d, g, m, v, v_max):
            # one pass per element (kernels.c), the same roundings as the passes below
            w1 = 1 - beta1
            api.native_chunks(native, d.size, [a if a is None else api.native_address(a)
                                               for a in (d, g, m, v, v_max)],
                              w1 < 0.5, w1, 1 - w1, beta2, 1 - beta2,
                              (1 - beta2**step) ** 0.5, _scalar(eps), lr / (1 - beta1**step))
            continue
        tmp = _buffer(scratch, d)
        _lerp_(m, g, 1 - beta1, tmp)
        _ema_square_(v, g, beta2, tmp)
        step_size = lr / (1 - beta1**step)
        bias_correction2_sqrt = (1 - beta2**step) ** 0.5
        if amsgrad:
            v_max = max_exp_avg_sqs[i]._data
            np.maximum(v_max, v, out=v_max)
            v = v_max
        np.sqrt(v, out=tmp)
        tmp /= bias_correction2_sqrt
        tmp += eps
        np.divide(m, tmp, out=tmp)
        tmp *= step_size
        d -= tmp
