"""Sigmoid focal loss (RetinaNet), as in ``torchvision.ops.sigmoid_focal_loss``."""

from __future__ import annotations

from ember import Tensor
from ember.nn import functional as F

__all__ = ["sigmoid_focal_loss"]


def sigmoid_focal_loss(
    inputs: Tensor, targets: Tensor, alpha: float = 0.25, gamma: float = 2, reduction: str = "none"
) -> Tensor:
    """Binary cross-entropy down-weighted on well-classified examples by ``(1 - p_t) ** gamma``;
    ``alpha`` (or ``-1`` to disable) balances positives against negatives."""
    if not (0 <= alpha <= 1) and alpha != -1:
        raise ValueError(
            f"Invalid alpha value: {alpha}. alpha must be in the range [0,1] or -1 for ignore."
        )
    p = inputs.sigmoid()
    ce_loss = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce_loss * ((1 - p_t) ** gamma)
    if alpha >= 0:
        alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
        loss = alpha_t * loss
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(
        f"Invalid Value for arg 'reduction': '{reduction} \n "
        "Supported reduction modes: 'none', 'mean', 'sum'"
    )
