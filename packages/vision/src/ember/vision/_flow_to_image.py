"""Optical flow visualisation (torchvision's ``utils.flow_to_image``).

The colour wheel is the one of Baker et al., "A Database and Evaluation Methodology for Optical
Flow" (ICCV 2007), as torchvision adapts it from
https://github.com/tomrunia/OpticalFlow_Visualization.
"""

from __future__ import annotations

import ember
from ember import Tensor

__all__ = ["flow_to_image"]


@ember.no_grad()
def flow_to_image(flow: Tensor) -> Tensor:
    """
    Converts a flow to an RGB image.

    Args:
        flow (Tensor): Flow of shape (N, 2, H, W) or (2, H, W) and dtype torch.float.

    Returns:
        img (Tensor): Image Tensor of dtype uint8 where each color corresponds
            to a given flow direction. Shape is (N, 3, H, W) or (3, H, W) depending on the input.
    """

    if flow.dtype != ember.float:
        raise ValueError(f"Flow should be of dtype torch.float, got {flow.dtype}.")

    orig_shape = flow.shape
    if flow.ndim == 3:
        flow = flow[None]  # Add batch dim

    if flow.ndim != 4 or flow.shape[1] != 2:
        raise ValueError(
            f"Input flow should have shape (2, H, W) or (N, 2, H, W), got {orig_shape}."
        )

    max_norm = ember.sum(flow.pow(2), dim=1).sqrt().max()
    epsilon = ember.finfo(flow.dtype).eps
    normalized_flow = flow / (max_norm + epsilon)
    img = _normalized_flow_to_image(normalized_flow)

    if len(orig_shape) == 3:
        img = img[0]  # Remove batch dim
    return img


@ember.no_grad()
def _normalized_flow_to_image(normalized_flow: Tensor) -> Tensor:
    """
    Converts a batch of normalized flow to an RGB image.

    Args:
        normalized_flow (Tensor): Normalized flow tensor of shape (N, 2, H, W)
    Returns:
       img (Tensor(N, 3, H, W)): Flow visualization image of dtype uint8.
    """

    N, _, H, W = normalized_flow.shape
    device = normalized_flow.device
    flow_image = ember.zeros((N, 3, H, W), dtype=ember.uint8, device=device)
    colorwheel = _make_colorwheel().to(device)  # shape [55x3]
    num_cols = colorwheel.shape[0]
    norm = ember.sum(normalized_flow.pow(2), dim=1).sqrt()
    a = ember.atan2(-normalized_flow[:, 1, :, :], -normalized_flow[:, 0, :, :]) / ember.pi
    fk = (a + 1) / 2 * (num_cols - 1)
    k0 = ember.floor(fk).to(ember.long)
    k1 = k0 + 1
    k1[k1 == num_cols] = 0
    f = fk - k0

    for c in range(colorwheel.shape[1]):
        tmp = colorwheel[:, c]
        col0 = tmp[k0] / 255.0
        col1 = tmp[k1] / 255.0
        col = (1 - f) * col0 + f * col1
        col = 1 - norm * (1 - col)
        flow_image[:, c, :, :] = ember.floor(255 * col)
    return flow_image


def _make_colorwheel() -> Tensor:
    """
    Generates a color wheel for optical flow visualization as presented in:
    Baker et al. "A Database and Evaluation Methodology for Optical Flow" (ICCV, 2007)
    URL: http://vision.middlebury.edu/flow/flowEval-iccv07.pdf.

    Returns:
        colorwheel (Tensor[55, 3]): Colorwheel Tensor.
    """

    RY = 15
    YG = 6
    GC = 4
    CB = 11
    BM = 13
    MR = 6

    ncols = RY + YG + GC + CB + BM + MR
    colorwheel = ember.zeros((ncols, 3))
    col = 0

    # RY
    colorwheel[0:RY, 0] = 255
    colorwheel[0:RY, 1] = ember.floor(255 * ember.arange(0, RY) / RY)
    col = col + RY
    # YG
    colorwheel[col : col + YG, 0] = 255 - ember.floor(255 * ember.arange(0, YG) / YG)
    colorwheel[col : col + YG, 1] = 255
    col = col + YG
    # GC
    colorwheel[col : col + GC, 1] = 255
    colorwheel[col : col + GC, 2] = ember.floor(255 * ember.arange(0, GC) / GC)
    col = col + GC
    # CB
    colorwheel[col : col + CB, 1] = 255 - ember.floor(255 * ember.arange(CB) / CB)
    colorwheel[col : col + CB, 2] = 255
    col = col + CB
    # BM
    colorwheel[col : col + BM, 2] = 255
    colorwheel[col : col + BM, 0] = ember.floor(255 * ember.arange(0, BM) / BM)
    col = col + BM
    # MR
    colorwheel[col : col + MR, 2] = 255 - ember.floor(255 * ember.arange(MR) / MR)
    colorwheel[col : col + MR, 0] = 255
    return colorwheel
