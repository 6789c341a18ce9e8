"""DropBlock (https://arxiv.org/abs/1810.12890), as in ``torchvision.ops.drop_block``."""

from __future__ import annotations

import ember
from ember import Tensor, nn
from ember.nn import functional as F

__all__ = ["drop_block2d", "drop_block3d", "DropBlock2d", "DropBlock3d"]


def _drop_block(input: Tensor, p: float, block_size: int, inplace: bool, eps: float,
                training: bool, dims: int) -> Tensor:
    """Zero cubes of ``block_size`` (clipped to the input) around centres drawn with the rate
    that drops a fraction ``p`` of the elements, then rescale by the kept fraction."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}.")
    if input.ndim != dims + 2:
        raise ValueError(
            f"input should be {dims + 2} dimensional. Got {input.ndim} dimensions."
        )
    if not training or p == 0.0:
        return input
    spatial = tuple(input.shape[2:])
    block_size = min(block_size, *spatial)
    if block_size % 2 == 0:
        raise ValueError(f"block size should be odd. Got {block_size} which is even.")
    # the Bernoulli rate of block centres, over the positions where a whole block fits
    dropped, valid = p, 1
    for s in spatial:
        dropped *= s
        valid *= s - block_size + 1
    gamma = dropped / ((block_size**dims) * valid)
    noise = ember.empty(
        tuple(input.shape[:2]) + tuple(s - block_size + 1 for s in spatial),
        dtype=input.dtype, device=input.device,
    )
    noise.bernoulli_(gamma)
    noise = F.pad(noise, [block_size // 2] * (2 * dims), value=0)
    pool = F.max_pool2d if dims == 2 else F.max_pool3d
    noise = pool(noise, stride=(1,) * dims, kernel_size=(block_size,) * dims,
                 padding=block_size // 2)
    noise = 1 - noise
    normalize_scale = noise.numel() / (eps + noise.sum())
    if inplace:
        input.mul_(noise).mul_(normalize_scale)
    else:
        input = input * noise * normalize_scale
    return input


def drop_block2d(
    input: Tensor, p: float, block_size: int, inplace: bool = False, eps: float = 1e-06,
    training: bool = True,
) -> Tensor:
    """DropBlock on ``input`` ``(N, C, H, W)``: randomly zero square blocks of side
    ``block_size`` (odd) so that a fraction ``p`` of the elements is dropped, rescaling the
    rest; the identity when not ``training``."""
    return _drop_block(input, p, block_size, inplace, eps, training, 2)


def drop_block3d(
    input: Tensor, p: float, block_size: int, inplace: bool = False, eps: float = 1e-06,
    training: bool = True,
) -> Tensor:
    """DropBlock on ``input`` ``(N, C, D, H, W)``: :func:`drop_block2d` with cubes."""
    return _drop_block(input, p, block_size, inplace, eps, training, 3)


class DropBlock2d(nn.Module):
    """Module form of :func:`drop_block2d`."""

    def __init__(self, p: float, block_size: int, inplace: bool = False, eps: float = 1e-06):
        super().__init__()
        self.p = p
        self.block_size = block_size
        self.inplace = inplace
        self.eps = eps

    def forward(self, input: Tensor) -> Tensor:
        return drop_block2d(input, self.p, self.block_size, self.inplace, self.eps, self.training)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(p={self.p}, block_size={self.block_size}, "
                f"inplace={self.inplace})")


class DropBlock3d(DropBlock2d):
    """Module form of :func:`drop_block3d`."""

    def forward(self, input: Tensor) -> Tensor:
        return drop_block3d(input, self.p, self.block_size, self.inplace, self.eps, self.training)
