"""Sampling helpers of RAFT (torchvision's ``models.optical_flow._utils``): ``grid_sample`` in
absolute pixel coordinates, the pixel-coordinates grid, and the flow upsampling."""

from __future__ import annotations

import ember
from ember import Tensor
from ember.nn import functional as F

__all__ = ["grid_sample", "make_coords_grid", "upsample_flow"]


def grid_sample(
    img: Tensor, absolute_grid: Tensor, mode: str = "bilinear", align_corners: bool | None = None
) -> Tensor:
    """Same as ember's ``grid_sample``, with absolute pixel coordinates instead of normalized
    coordinates."""
    h, w = img.shape[-2:]

    xgrid, ygrid = absolute_grid.split([1, 1], dim=-1)
    xgrid = 2 * xgrid / (w - 1) - 1
    # As in torchvision, a single-row input keeps its y coordinates (RAFT-Stereo reuses this).
    if h > 1:
        ygrid = 2 * ygrid / (h - 1) - 1
    normalized_grid = ember.cat([xgrid, ygrid], dim=-1)

    return F.grid_sample(img, normalized_grid, mode=mode, align_corners=align_corners)


def make_coords_grid(batch_size: int, h: int, w: int, device: str | ember.device = "cpu") -> Tensor:
    """``(batch_size, 2, h, w)`` float32 pixel coordinates, x (column) in channel 0, y in 1."""
    device = ember.device(device)
    coords = ember.meshgrid(
        ember.arange(h, device=device), ember.arange(w, device=device), indexing="ij"
    )
    coords = ember.stack(coords[::-1], dim=0).float()
    return coords[None].repeat(batch_size, 1, 1, 1)


def upsample_flow(flow: Tensor, up_mask: Tensor | None = None, factor: int = 8) -> Tensor:
    """Upsample flow by the input factor (default 8).

    If up_mask is None we just interpolate.
    If up_mask is specified, we upsample using a convex combination of its weights. See paper
    page 8 and appendix B.
    Note that in appendix B the picture assumes a downsample factor of 4 instead of 8.
    """
    batch_size, num_channels, h, w = flow.shape
    new_h, new_w = h * factor, w * factor

    if up_mask is None:
        return factor * F.interpolate(
            flow, size=(new_h, new_w), mode="bilinear", align_corners=True
        )

    up_mask = up_mask.view(batch_size, 1, 9, factor, factor, h, w)
    up_mask = ember.softmax(up_mask, dim=2)  # "convex" == weights sum to 1

    upsampled_flow = F.unfold(factor * flow, kernel_size=3, padding=1).view(
        batch_size, num_channels, 9, 1, 1, h, w
    )
    upsampled_flow = ember.sum(up_mask * upsampled_flow, dim=2)

    return upsampled_flow.permute(0, 1, 4, 2, 5, 3).reshape(batch_size, num_channels, new_h, new_w)
