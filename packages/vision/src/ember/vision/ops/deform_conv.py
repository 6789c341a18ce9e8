"""Deformable convolution (v1 and v2), as in ``torchvision.ops.deform_conv``.

Each kernel tap reads the input at its regular position plus a learned offset, bilinearly
interpolated (v2 also scales it by a learned mask); the sampled columns then meet the weight in
one matrix product per weight group. Written with Tensor ops, so it is differentiable with
respect to the input, the offsets, the mask, the weight and the bias to any order. Where the
sampling grid leaves the image, neighbours outside it read zero, exactly as torchvision's
kernels do (and its gradients agree with theirs there too).
"""

from __future__ import annotations

import math

import ember
from ember import Tensor, nn
from ember.nn import init

from .roi_align import _pair

__all__ = ["deform_conv2d", "DeformConv2d"]

_KERNEL = "deform_conv2d_forward_kernel"


def _scalar_type(t: Tensor) -> str:
    """PyTorch's ScalarType name of ``t``'s dtype (``Float``, ``Int``)."""
    name = t.type().rpartition(".")[2]  # ember.FloatTensor, ember.cuda.FloatTensor
    if name != "Tensor":
        return name[: -len("Tensor")]
    return str(t.dtype).rpartition(".")[2]  # the dtypes without a legacy type (complex)


def _check(cond: bool, message: str) -> None:
    if not cond:
        raise RuntimeError(f"{_KERNEL}: {message}")


def _check_args(input, offset, weight, bias, mask, stride, padding, dilation, groups):
    """torchvision's kernel checks, in its order; returns the output's ``(out_h, out_w)``."""
    (stride_h, stride_w), (pad_h, pad_w), (dil_h, dil_w) = stride, padding, dilation
    n_weight_grps, n_offset_grps = groups
    _check(input.ndim == 4, f"expected a 4-D input, got {input.ndim}-D")
    _check(offset.ndim == 4, f"expected a 4-D offset, got {offset.ndim}-D")
    _check(mask is None or mask.ndim == 4, f"expected a 4-D mask, got {mask.ndim}-D"
           if mask is not None else "")
    _check(weight.ndim == 4, f"expected a 4-D weight, got {weight.ndim}-D")
    for t in (offset, weight, mask, bias):
        if t is not None and t.device != input.device:
            raise RuntimeError(
                f"Expected all tensors to be on the same device, but found at least two "
                f"devices, {input.device} and {t.device}!"
            )
    if not input.is_floating_point() or input.dtype == ember.bfloat16:
        raise RuntimeError(f"\"deformable_im2col\" not implemented for '{_scalar_type(input)}'")
    for t in (offset, weight, mask, bias):
        if t is not None and t.dtype != input.dtype:
            raise RuntimeError(
                f"expected scalar type {_scalar_type(input)} but found {_scalar_type(t)}"
            )
    batch, in_channels, in_h, in_w = input.shape
    weight_h, weight_w = weight.shape[2:]
    _check(weight_h > 0 and weight_w > 0, f"weight_h: {weight_h} weight_w: {weight_w}")
    _check(stride_h > 0 and stride_w > 0, f"stride_h: {stride_h} stride_w: {stride_w}")
    _check(pad_h >= 0 and pad_w >= 0, f"pad_h: {pad_h} pad_w: {pad_w}")
    _check(dil_h > 0 and dil_w > 0, f"dilation_h: {dil_h} dilation_w: {dil_w}")
    out_h = (in_h + 2 * pad_h - (dil_h * (weight_h - 1) + 1)) // stride_h + 1
    out_w = (in_w + 2 * pad_w - (dil_w * (weight_w - 1) + 1)) // stride_w + 1
    _check(weight.shape[1] * n_weight_grps == in_channels,
           f"weight.shape[1] * n_weight_grps ({weight.shape[1]} * {n_weight_grps}) must equal "
           f"the input channels ({in_channels})")
    _check(weight.shape[0] % n_weight_grps == 0,
           f"weight.shape[0] ({weight.shape[0]}) must be divisible by the number of weight "
           f"groups ({n_weight_grps})")
    _check(offset.shape[1] == n_offset_grps * 2 * weight_h * weight_w,
           f"offset.shape[1] is not valid: got: {offset.shape[1]} expected: "
           f"{n_offset_grps * 2 * weight_h * weight_w}")
    _check(mask is None or mask.shape[1] == n_offset_grps * weight_h * weight_w,
           f"mask.shape[1] is not valid: got: {mask.shape[1] if mask is not None else 0} "
           f"expected: {n_offset_grps * weight_h * weight_w}")
    _check(in_channels % n_offset_grps == 0,
           f"the input channels ({in_channels}) must be divisible by the number of offset "
           f"groups ({n_offset_grps})")
    _check(offset.shape[0] == batch, "invalid batch size of offset")
    _check(offset.shape[2] == out_h and offset.shape[3] == out_w,
           f"offset output dims: ({offset.shape[2]}, {offset.shape[3]}) - computed output "
           f"dims: ({out_h}, {out_w})")
    _check(mask is None or mask.shape[0] == batch, "invalid batch size of mask")
    _check(mask is None or (mask.shape[2] == out_h and mask.shape[3] == out_w),
           f"mask output dims: ({mask.shape[2] if mask is not None else 0}, "
           f"{mask.shape[3] if mask is not None else 0}) - computed output dims: "
           f"({out_h}, {out_w})")
    _check(out_h > 0 and out_w > 0,
           f"Calculated output size too small - out_h: {out_h} out_w: {out_w}")
    return out_h, out_w


def _sample_columns(input: Tensor, y: Tensor, x: Tensor, n_offset_grps: int) -> Tensor:
    """Bilinear samples of ``input`` ``(N, C, H, W)`` at rows ``y`` and columns ``x``
    ``(N, G, K, L)`` (per offset group ``G``, kernel tap ``K`` and output position ``L``):
    ``(N, C, K, L)``. A neighbour outside the image reads zero."""
    n, c, h, w = input.shape
    g = n_offset_grps
    cg = c // g
    # one row per (image, offset group, pixel), the group's channels along it
    table = input.reshape(n, g, cg, h * w).permute(0, 1, 3, 2).reshape(n * g * h * w, cg)
    with ember.no_grad():
        y0, x0 = ember.floor(y), ember.floor(x)
    ly, lx = y - y0, x - x0
    hy, hx = 1 - ly, 1 - lx
    base = (ember.arange(n * g, device=input.device) * (h * w)).reshape(n, g, 1, 1)
    columns = None
    for dy, wy in ((0, hy), (1, ly)):
        for dx, wx in ((0, hx), (1, lx)):
            with ember.no_grad():
                yi, xi = y0 + dy, x0 + dx
                inside = (yi >= 0) & (yi <= h - 1) & (xi >= 0) & (xi <= w - 1)
                pixel = ember.where(inside, yi * w + xi, ember.zeros_like(yi)).long() + base
            term = table[pixel] * (wy * wx * inside)[..., None]  # (N, G, K, L, Cg)
            columns = term if columns is None else columns + term
    k, length = y.shape[2:]
    return columns.permute(0, 1, 4, 2, 3).reshape(n, c, k, length)


def deform_conv2d(
    input: Tensor,
    offset: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: tuple[int, int] = (1, 1),
    padding: tuple[int, int] = (0, 0),
    dilation: tuple[int, int] = (1, 1),
    mask: Tensor | None = None,
) -> Tensor:
    r"""Deformable Convolution v2 (https://arxiv.org/abs/1811.11168) when ``mask`` is given,
    v1 (https://arxiv.org/abs/1703.06211) when it is None.

    Args:
        input: ``Tensor[batch_size, in_channels, in_height, in_width]``.
        offset: ``Tensor[batch_size, 2 * offset_groups * kernel_height * kernel_width,
            out_height, out_width]``: the ``(dy, dx)`` added to each kernel tap's position.
        weight: ``Tensor[out_channels, in_channels // groups, kernel_height, kernel_width]``.
        bias: ``Tensor[out_channels]`` or None. Default: None.
        stride, padding, dilation: int or ``(int, int)``, as for a convolution.
        mask: ``Tensor[batch_size, offset_groups * kernel_height * kernel_width, out_height,
            out_width]``, each tap's modulation, or None. Default: None.

    Returns:
        ``Tensor[batch_size, out_channels, out_height, out_width]``.

    Example::

        >>> input = ember.rand(4, 3, 10, 10)
        >>> weight = ember.rand(5, 3, 3, 3)
        >>> offset = ember.rand(4, 2 * 3 * 3, 8, 8)
        >>> mask = ember.rand(4, 3 * 3, 8, 8)
        >>> deform_conv2d(input, offset, weight, mask=mask).shape
        ember.Size([4, 5, 8, 8])
    """
    out_channels = weight.shape[0]
    stride_h, stride_w = _pair(stride)
    pad_h, pad_w = _pair(padding)
    dil_h, dil_w = _pair(dilation)
    weights_h, weights_w = weight.shape[-2:]
    _, n_in_channels, _, _ = input.shape
    n_offset_grps = offset.shape[1] // (2 * weights_h * weights_w)
    n_weight_grps = n_in_channels // weight.shape[1]
    if n_offset_grps == 0:
        raise RuntimeError(
            "the shape of the offset tensor at dimension 1 is not valid. It should "
            "be a multiple of 2 * weight.size[2] * weight.size[3].\n"
            f"Got offset.shape[1]={offset.shape[1]}, while 2 * weight.size[2] * "
            f"weight.size[3]={2 * weights_h * weights_w}"
        )
    out_h, out_w = _check_args(
        input, offset, weight, bias, mask, (stride_h, stride_w), (pad_h, pad_w),
        (dil_h, dil_w), (n_weight_grps, n_offset_grps),
    )
    batch = input.shape[0]
    taps = weights_h * weights_w
    length = out_h * out_w
    # each tap's regular position, (K, L)
    dev, dt = input.device, input.dtype
    rows = ember.arange(out_h, device=dev, dtype=dt) * stride_h - pad_h
    cols = ember.arange(out_w, device=dev, dtype=dt) * stride_w - pad_w
    tap_y = ember.arange(weights_h, device=dev, dtype=dt) * dil_h
    tap_x = ember.arange(weights_w, device=dev, dtype=dt) * dil_w
    grid_y = (tap_y[:, None, None, None] + rows[None, None, :, None]).expand(
        weights_h, weights_w, out_h, out_w).reshape(taps, length)
    grid_x = (tap_x[None, :, None, None] + cols[None, None, None, :]).expand(
        weights_h, weights_w, out_h, out_w).reshape(taps, length)
    offset = offset.reshape(batch, n_offset_grps, taps, 2, length)
    y = grid_y + offset[:, :, :, 0]
    x = grid_x + offset[:, :, :, 1]
    columns = _sample_columns(input, y, x, n_offset_grps)  # (N, C, K, L)
    if mask is not None:
        modulation = mask.reshape(batch, n_offset_grps, 1, taps, length)
        columns = (columns.reshape(batch, n_offset_grps, -1, taps, length) * modulation)
    columns = columns.reshape(batch, n_weight_grps, (n_in_channels // n_weight_grps) * taps,
                              length)
    w = weight.reshape(n_weight_grps, out_channels // n_weight_grps, -1)
    out = ember.matmul(w, columns).reshape(batch, out_channels, out_h, out_w)
    if bias is not None:
        out = out + bias.view(1, out_channels, 1, 1)
    return out


class DeformConv2d(nn.Module):
    """Module form of :func:`deform_conv2d`: ``forward(input, offset, mask=None)``."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int,
        stride: int = 1,
        padding: int = 0,
        dilation: int = 1,
        groups: int = 1,
        bias: bool = True,
    ):
        super().__init__()
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _pair(kernel_size)
        self.stride = _pair(stride)
        self.padding = _pair(padding)
        self.dilation = _pair(dilation)
        self.groups = groups
        self.weight = nn.Parameter(
            ember.empty(out_channels, in_channels // groups, self.kernel_size[0],
                        self.kernel_size[1])
        )
        if bias:
            self.bias = nn.Parameter(ember.empty(out_channels))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in)
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor, offset: Tensor, mask: Tensor | None = None) -> Tensor:
        return deform_conv2d(
            input, offset, self.weight, self.bias, stride=self.stride, padding=self.padding,
            dilation=self.dilation, mask=mask,
        )

    def __repr__(self) -> str:
        s = (
            f"{self.__class__.__name__}("
            f"{self.in_channels}"
            f", {self.out_channels}"
            f", kernel_size={self.kernel_size}"
            f", stride={self.stride}"
        )
        s += f", padding={self.padding}" if self.padding != (0, 0) else ""
        s += f", dilation={self.dilation}" if self.dilation != (1, 1) else ""
        s += f", groups={self.groups}" if self.groups != 1 else ""
        s += ", bias=False" if self.bias is None else ""
        s += ")"
        return s
