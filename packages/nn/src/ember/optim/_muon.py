"""Muon, like ``torch.optim.Muon`` (PyTorch keeps it in ``torch/optim/_muon.py``).

The Newton-Schulz orthogonalization runs in bfloat16 in PyTorch. NumPy and CuPy have no
bfloat16, so Ember keeps float32 arrays and rounds every intermediate to bfloat16
(round-to-nearest-even on the bit pattern) where PyTorch's bfloat16 tensors round, which gives
the same values up to the accumulation order inside the matrix products.
"""

from __future__ import annotations

import math

import numpy as np

import ember

from ._single_tensor import _scalar
from ._validate import check_bound, check_lr_numel
from .optimizer import Optimizer

__all__ = ["Muon"]

# Keller Jordan's coefficients (https://kellerjordan.github.io/posts/muon/), as in PyTorch
EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


def _round_bf16(a):
    """``a`` rounded to bfloat16 (round to nearest even), as a new float32 array."""
    a = a.astype(np.float32)  # a copy: float64 goes float -> bfloat16, as PyTorch converts it
    bits = a.view(np.uint32)
    nan = a != a
    bits += 0x7FFF + ((bits >> 16) & 1)
    bits &= 0xFFFF0000
    a[nan] = np.nan  # the carry of a NaN's payload may have turned it into a number
    return a


def _zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps: int, eps: float):
    """The quintic Newton-Schulz iteration that approximately orthogonalizes the 2-d ``grad``
    (its singular values end up near 1, roughly within 0.5..1.5), on bfloat16 values."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    x = _round_bf16(grad)
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.T
    # the spectral norm is at most the Frobenius norm (kept 2-d: a 0-d result is a NumPy scalar)
    norm = _round_bf16(np.sqrt((x * x).sum(keepdims=True)))
    x = _round_bf16(x / _round_bf16(np.maximum(norm, eps)))
    for _ in range(ns_steps):
        gram = _round_bf16(x @ x.T)
        gram_update = _round_bf16(gram * b + (gram @ gram) * c)
        x = _round_bf16(x * a + gram_update @ x)
    return x.T if tall else x


def _adjust_lr(lr: float, adjust_lr_fn: str | None, param_shape) -> float:
    """The learning rate scaled for a ``param_shape`` matrix ("original": Keller Jordan's
    ``sqrt(max(1, A/B))``; "match_rms_adamw": Moonshot's ``0.2 * sqrt(max(A, B))``)."""
    A, B = param_shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        adjusted_ratio = math.sqrt(max(1, A / B))
    elif adjust_lr_fn == "match_rms_adamw":
        adjusted_ratio = 0.2 * math.sqrt(max(A, B))
    else:
        adjusted_ratio = 1.0
    return lr * adjusted_ratio


class Muon(Optimizer):
    """Muon: momentum SGD whose update is orthogonalized by Newton-Schulz iterations.

    For the 2-d parameters of hidden layers only; optimize biases, embeddings and other
    parameters with a standard optimizer such as AdamW.

    Args:
        params: an iterable of 2-d parameters or of dicts defining parameter groups.
        lr: learning rate (default 1e-3).
        weight_decay: decoupled weight decay, scaled by ``lr`` (default 0.1).
        momentum: momentum factor (default 0.95).
        nesterov: use Nesterov momentum (default True).
        ns_coefficients: the coefficients ``(a, b, c)`` of the Newton-Schulz polynomial.
        eps: added to the norm before the iteration (default 1e-7).
        ns_steps: number of Newton-Schulz iterations (default 5).
        adjust_lr_fn: ``None`` or ``"original"`` (scale by ``sqrt(max(1, A/B))``) or
            ``"match_rms_adamw"`` (scale by ``0.2 * sqrt(max(A, B))``).

    Per-parameter state: ``momentum_buffer``.
    """

    def __init__(self, params, lr: float = 1e-3, weight_decay: float = 0.1,
                 momentum: float = 0.95, nesterov: bool = True,
                 ns_coefficients: tuple[float, float, float] = (DEFAULT_A, DEFAULT_B, DEFAULT_C),
                 eps: float = EPS, ns_steps: int = DEFAULT_NS_STEPS,
                 adjust_lr_fn: str | None = None) -> None:
        check_lr_numel(lr)
        check_bound(lr, "Learning rate")
        check_bound(momentum, "momentum")
        check_bound(weight_decay, "weight decay")
        if adjust_lr_fn is not None and adjust_lr_fn not in ["original", "match_rms_adamw"]:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = {"lr": lr, "weight_decay": weight_decay, "momentum": momentum,
                    "nesterov": nesterov, "ns_coefficients": ns_coefficients, "eps": eps,
                    "ns_steps": ns_steps, "adjust_lr_fn": adjust_lr_fn}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError("Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    def _init_state(self, p, state, group) -> None:
        state["momentum_buffer"] = ember.zeros_like(p._grad)

    def _step_group(self, group) -> None:
        params = self._params_with_state(group, "Muon")
        lr = _scalar(group["lr"])
        for p in params:
            self._muon_update(p._data, p._grad._data, self.state[p], group, lr)
            p._bump_version()

    def _muon_update(self, d, g, state, group, lr: float) -> None:
        if g.ndim != 2:
            raise ValueError("Param gradient must be a 2D matrix")
        momentum = group["momentum"]
        buf = state["momentum_buffer"]._data
        self._lerp_(buf, g, 1 - momentum, self._buffer(buf))
        if group["nesterov"]:
            update = g.copy()
            self._lerp_(update, buf, momentum, self._buffer(buf))
        else:
            update = buf
        update = _zeropower_via_newtonschulz(update, group["ns_coefficients"],
                                             group["ns_steps"], group["eps"])
        adjusted_lr = _adjust_lr(lr, group["adjust_lr_fn"], d.shape)
        d *= 1 - lr * group["weight_decay"]
        update = update.astype(d.dtype, copy=False)
        update *= adjusted_lr
        d -= update
