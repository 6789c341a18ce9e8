"""Stochastic depth (https://arxiv.org/abs/1603.09382), as in
``torchvision.ops.stochastic_depth``."""

from __future__ import annotations

import ember
from ember import Tensor, nn

__all__ = ["stochastic_depth", "StochasticDepth"]


def stochastic_depth(input: Tensor, p: float, mode: str, training: bool = True) -> Tensor:
    """Randomly zero the residual branch ``input`` (``Tensor[N, ...]``) with probability ``p``:
    whole rows of the batch (``mode="row"``) or the whole input (``mode="batch"``); what
    survives is scaled by ``1 / (1 - p)``. The identity when not ``training``."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
    if mode not in ("batch", "row"):
        raise ValueError(f"mode has to be either 'batch' or 'row', but got {mode}")
    if not training or p == 0.0:
        return input
    survival_rate = 1.0 - p
    if mode == "row":
        size = [input.shape[0]] + [1] * (input.ndim - 1)
    else:
        size = [1] * input.ndim
    noise = ember.empty(size, dtype=input.dtype, device=input.device)
    noise = noise.bernoulli_(survival_rate)
    if survival_rate > 0.0:
        noise.div_(survival_rate)
    return input * noise


class StochasticDepth(nn.Module):
    """Module form of :func:`stochastic_depth`."""

    def __init__(self, p: float, mode: str) -> None:
        super().__init__()
        self.p = p
        self.mode = mode

    def forward(self, input: Tensor) -> Tensor:
        return stochastic_depth(input, self.p, self.mode, self.training)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(p={self.p}, mode={self.mode})"
