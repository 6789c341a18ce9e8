"""Gradient clipping (``torch.nn.utils.clip_grad``)."""

from __future__ import annotations

import types
import warnings

import ember
from ember import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm",
           "clip_grads_with_norm_"]


def _as_list(tensors) -> list:
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None) -> Tensor:
    """The ``norm_type`` norm of all ``tensors`` viewed as one vector."""
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return ember.tensor(0.0)
    first_device = tensors[0].device
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError("Tensors of the first list of nested Tensor lists are supposed to "
                               f"be defined but the {i}-th Tensor is not.")
    with ember.no_grad():
        norms = [ember.linalg.vector_norm(t, norm_type).to(first_device) for t in tensors]
        total = ember.linalg.vector_norm(ember.stack(norms), norm_type)
    if error_if_nonfinite and bool(ember.logical_or(total.isnan(), total.isinf())):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                           "`parameters` is non-finite, so it cannot be clipped. To disable "
                           "this error and scale the gradients by the non-finite norm anyway, "
                           "set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm: float, total_norm: Tensor,
                          foreach=None) -> None:
    """Scale gradients by ``min(1, max_norm / (total_norm + 1e-6))`` in place."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    max_norm = float(max_norm)
    if not grads:
        return
    with ember.no_grad():
        coef = max_norm / (total_norm + 1e-6)
        if not isinstance(coef, Tensor):
            raise TypeError(
                "clamp() received an invalid combination of arguments - got (float, "
                "max=float), but expected one of:\n"
                " * (Tensor input, Tensor min = None, Tensor max = None, *, Tensor out = None)\n"
                " * (Tensor input, Number min = None, Number max = None, *, Tensor out = None)\n")
        coef = ember.clamp(coef, max=1.0)
        for g in grads:
            g.mul_(coef.to(g.device))


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Clip the gradients of ``parameters`` to a total norm of at most ``max_norm``.

    Returns the total norm before clipping. ``foreach`` is accepted and ignored.
    """
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and not parameters:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.",
                          stacklevel=2)
    grads = [p.grad for p in parameters if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Deprecated alias of ``clip_grad_norm_``."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient to ``[-clip_value, clip_value]`` in place."""
    clip_value = float(clip_value)
    with ember.no_grad():
        for p in _as_list(parameters):
            if p.grad is not None:  # (as PyTorch's: a sparse gradient is its clamp_min_ error)
                p.grad.clamp_min_(-clip_value).clamp_max_(clip_value)
