"""Shared argument checks of the optimizers, with PyTorch's messages.

PyTorch words its checks in two styles: ``Invalid epsilon value: -1`` (the classic optimizers,
:func:`check_nonneg`) and ``momentum should be >= 0 but is: -1`` (Adafactor and Muon,
:func:`check_bound`).
"""

from __future__ import annotations

import ember
from ember import Tensor


def check_lr_numel(lr) -> None:
    if isinstance(lr, ember.Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")


def check_lr(lr) -> None:
    """``Invalid learning rate: {lr}`` unless ``lr >= 0``; a tensor ``lr`` holds one element."""
    check_lr_numel(lr)
    check_nonneg(lr, "learning rate")


def check_nonneg(value, what: str) -> None:
    """``Invalid {what}: {value}`` unless ``value >= 0`` (e.g. what='epsilon value')."""
    if not 0.0 <= value:
        raise ValueError(f"Invalid {what}: {value}")


def check_bound(value, what: str, relation: str = ">=", bound: int = 0) -> None:
    """``{what} should be {relation} {bound} but is: {value}`` unless it is (``relation`` is
    ``">="`` or ``"<="``)."""
    ok = bound <= value if relation == ">=" else value <= bound
    if not ok:
        raise ValueError(f"{what} should be {relation} {bound} but is: {value}")


def check_betas(betas) -> None:
    for i in (0, 1):
        if not 0.0 <= betas[i] < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")


def check_adam_family(lr, eps, betas, weight_decay) -> None:
    """The checks the Adam family (Adam, Adamax, NAdam, RAdam) share, in PyTorch's order."""
    check_lr(lr)
    check_nonneg(eps, "epsilon value")
    check_betas(betas)
    check_nonneg(weight_decay, "weight_decay value")


def check_fused(fused, foreach, differentiable) -> None:
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


def check_fused_param(p) -> None:
    """PyTorch's ``_device_dtype_check_for_fused``: ``fused=True`` updates floating-point
    parameters only (a complex one raises at its first step)."""
    if not p.is_floating_point():
        raise RuntimeError("`fused=True` requires all the params to be floating point Tensors "
                           f"of supported devices: ['cuda', 'cpu'] but {p.dtype} and "
                           f"{p.device.type}")


def check_fused_group(optimizer, params, grads, sparse_message: str) -> None:
    """The checks of a ``fused=True`` group of SGD or Adagrad before its update: the
    parameters' dtype (on the first step only, as PyTorch's
    ``_need_device_dtype_check_for_fused``), then no sparse gradient."""
    if optimizer.__dict__.get("_need_device_dtype_check_for_fused", True) and params:
        for p in params:
            check_fused_param(p)
        optimizer._need_device_dtype_check_for_fused = False
    if any(g.__class__ is not Tensor and g.is_sparse for g in grads):
        raise RuntimeError(sparse_message)


def check_functional_call(params, state_steps=None, *, grad_scale=None, found_inf=None,
                          fused=False) -> None:
    """The checks of PyTorch's functional optimizers: ``state_steps`` hold tensors,
    ``grad_scale``/``found_inf`` come only with ``fused=True``, and no parameter is a leaf
    that autograd records (an in-place update of one raises, as in PyTorch)."""
    if state_steps is not None and not all(isinstance(t, Tensor) for t in state_steps):
        raise RuntimeError("API has changed, `state_steps` argument must contain a list of "
                           "singleton tensors")
    if (grad_scale is not None or found_inf is not None) and not fused:
        raise AssertionError("Expected grad_scale and found_inf to be None")
    if ember.is_grad_enabled() and any(p.requires_grad and p.grad_fn is None for p in params):
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
