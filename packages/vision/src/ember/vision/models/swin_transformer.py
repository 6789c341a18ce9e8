"""Swin Transformer V1 and V2, ported from torchvision (BSD-3-Clause); module names and
state_dict keys match.

The shifted-window attention (padding to whole windows, cyclic shift, the attention mask
between the shifted regions, the relative position bias table of V1, and V2's continuous
position bias MLP over log-spaced coordinates with a clamped ``logit_scale``) follows
torchvision's ``shifted_window_attention`` step by step.
"""

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import ember
import ember.fx
from ember import Tensor, nn
from ember.nn import functional as F

from ..transforms.functional import InterpolationMode
from ._api import WeightsEnum
from ._layers import MLP, Permute, StochasticDepth
from ._meta import _classification, _imagenet_weights
from ._utils import _build_model, _model_builder

__all__ = [
    "SwinTransformer",
    "Swin_T_Weights",
    "Swin_S_Weights",
    "Swin_B_Weights",
    "Swin_V2_T_Weights",
    "Swin_V2_S_Weights",
    "Swin_V2_B_Weights",
    "swin_t",
    "swin_s",
    "swin_b",
    "swin_v2_t",
    "swin_v2_s",
    "swin_v2_b",
]


def _patch_merging_pad(x: Tensor) -> Tensor:
    """``[..., H, W, C]`` padded to even ``H`` and ``W``, its 2x2 neighbourhoods concatenated
    along channels: ``[..., H/2, W/2, 4*C]``."""
    H, W, _ = x.shape[-3:]
    x = F.pad(x, (0, 0, 0, W % 2, 0, H % 2))
    x0 = x[..., 0::2, 0::2, :]  # ... H/2 W/2 C
    x1 = x[..., 1::2, 0::2, :]  # ... H/2 W/2 C
    x2 = x[..., 0::2, 1::2, :]  # ... H/2 W/2 C
    x3 = x[..., 1::2, 1::2, :]  # ... H/2 W/2 C
    return ember.cat([x0, x1, x2, x3], -1)  # ... H/2 W/2 4*C


ember.fx.wrap("_patch_merging_pad")


def _get_relative_position_bias(
    relative_position_bias_table: Tensor, relative_position_index: Tensor, window_size: list[int]
) -> Tensor:
    """The table's rows gathered for every (query, key) pair of a window: ``[1, heads, N, N]``."""
    N = window_size[0] * window_size[1]
    relative_position_bias = relative_position_bias_table[relative_position_index]
    relative_position_bias = relative_position_bias.view(N, N, -1)
    return relative_position_bias.permute(2, 0, 1).contiguous().unsqueeze(0)


ember.fx.wrap("_get_relative_position_bias")


class PatchMerging(nn.Module):
    """Patch Merging Layer.

    Args:
        dim (int): Number of input channels.
        norm_layer (nn.Module): Normalization layer. Default: nn.LayerNorm.
    """

    def __init__(self, dim: int, norm_layer: Callable[..., nn.Module] = nn.LayerNorm):
        super().__init__()
        self.dim = dim
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = norm_layer(4 * dim)

    def forward(self, x: Tensor) -> Tensor:
        """``x``: ``[..., H, W, C]``; returns ``[..., H/2, W/2, 2*C]``."""
        x = _patch_merging_pad(x)
        x = self.norm(x)
        x = self.reduction(x)  # ... H/2 W/2 2*C
        return x


class PatchMergingV2(nn.Module):
    """Patch Merging Layer for Swin Transformer V2 (the norm after the reduction).

    Args:
        dim (int): Number of input channels.
        norm_layer (nn.Module): Normalization layer. Default: nn.LayerNorm.
    """

    def __init__(self, dim: int, norm_layer: Callable[..., nn.Module] = nn.LayerNorm):
        super().__init__()
        self.dim = dim
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = norm_layer(2 * dim)  # difference

    def forward(self, x: Tensor) -> Tensor:
        """``x``: ``[..., H, W, C]``; returns ``[..., H/2, W/2, 2*C]``."""
        x = _patch_merging_pad(x)
        x = self.reduction(x)  # ... H/2 W/2 2*C
        x = self.norm(x)
        return x


def _shifted_window_mask(
    x: Tensor, pad_H: int, pad_W: int, window_size: list[int], shift_size: list[int]
) -> Tensor:
    """``[num_windows, N, N]``: -100 between tokens of one shifted window that came from
    different regions of the unshifted map, 0 elsewhere."""
    attn_mask = x.new_zeros((pad_H, pad_W))
    h_slices = ((0, -window_size[0]), (-window_size[0], -shift_size[0]), (-shift_size[0], None))
    w_slices = ((0, -window_size[1]), (-window_size[1], -shift_size[1]), (-shift_size[1], None))
    count = 0
    for h in h_slices:
        for w in w_slices:
            attn_mask[h[0] : h[1], w[0] : w[1]] = count
            count += 1
    num_windows = (pad_H // window_size[0]) * (pad_W // window_size[1])
    attn_mask = attn_mask.view(
        pad_H // window_size[0], window_size[0], pad_W // window_size[1], window_size[1]
    )
    attn_mask = attn_mask.permute(0, 2, 1, 3).reshape(
        num_windows, window_size[0] * window_size[1]
    )
    attn_mask = attn_mask.unsqueeze(1) - attn_mask.unsqueeze(2)
    return attn_mask.masked_fill(attn_mask != 0, -100.0).masked_fill(attn_mask == 0, 0.0)


def shifted_window_attention(
    input: Tensor,
    qkv_weight: Tensor,
    proj_weight: Tensor,
    relative_position_bias: Tensor,
    window_size: list[int],
    num_heads: int,
    shift_size: list[int],
    attention_dropout: float = 0.0,
    dropout: float = 0.0,
    qkv_bias: Tensor | None = None,
    proj_bias: Tensor | None = None,
    logit_scale: Tensor | None = None,
    training: bool = True,
) -> Tensor:
    """Window based multi-head self attention (W-MSA) with relative position bias, shifted or
    not.

    Args:
        input (Tensor[N, H, W, C]): The input tensor or 4-dimensions.
        qkv_weight (Tensor[in_dim, out_dim]): The weight tensor of query, key, value.
        proj_weight (Tensor[out_dim, out_dim]): The weight tensor of projection.
        relative_position_bias (Tensor): The learned relative position bias added to attention.
        window_size (List[int]): Window size.
        num_heads (int): Number of attention heads.
        shift_size (List[int]): Shift size for shifted window attention.
        attention_dropout (float): Dropout ratio of attention weight. Default: 0.0.
        dropout (float): Dropout ratio of output. Default: 0.0.
        qkv_bias (Tensor[out_dim], optional): The bias tensor of query, key, value.
            Default: None.
        proj_bias (Tensor[out_dim], optional): The bias tensor of projection. Default: None.
        logit_scale (Tensor[out_dim], optional): Logit scale of cosine attention for Swin
            Transformer V2. Default: None.
        training (bool, optional): Training flag used by the dropout parameters. Default: True.

    Returns:
        Tensor[N, H, W, C]: The output tensor after shifted window attention.
    """
    B, H, W, C = input.shape
    # pad feature maps to multiples of window size
    pad_r = (window_size[1] - W % window_size[1]) % window_size[1]
    pad_b = (window_size[0] - H % window_size[0]) % window_size[0]
    x = F.pad(input, (0, 0, 0, pad_r, 0, pad_b))
    _, pad_H, pad_W, _ = x.shape

    shift_size = list(shift_size)
    # If window size is larger than feature size, there is no need to shift window
    if window_size[0] >= pad_H:
        shift_size[0] = 0
    if window_size[1] >= pad_W:
        shift_size[1] = 0

    # cyclic shift
    if sum(shift_size) > 0:
        x = ember.roll(x, shifts=(-shift_size[0], -shift_size[1]), dims=(1, 2))

    # partition windows
    num_windows = (pad_H // window_size[0]) * (pad_W // window_size[1])
    x = x.view(
        B, pad_H // window_size[0], window_size[0], pad_W // window_size[1], window_size[1], C
    )
    x = x.permute(0, 1, 3, 2, 4, 5).reshape(
        B * num_windows, window_size[0] * window_size[1], C
    )  # B*nW, Ws*Ws, C

    # multi-head attention
    if logit_scale is not None and qkv_bias is not None:
        # V2: the keys have no bias
        qkv_bias = qkv_bias.clone()
        length = qkv_bias.numel() // 3
        qkv_bias[length : 2 * length].zero_()
    qkv = F.linear(x, qkv_weight, qkv_bias)
    qkv = qkv.reshape(x.size(0), x.size(1), 3, num_heads, C // num_heads).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    if logit_scale is not None:
        # cosine attention
        attn = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
        logit_scale = ember.clamp(logit_scale, max=math.log(100.0)).exp()
        attn = attn * logit_scale
    else:
        q = q * (C // num_heads) ** -0.5
        attn = q.matmul(k.transpose(-2, -1))
    # add relative position bias
    attn = attn + relative_position_bias

    if sum(shift_size) > 0:
        attn_mask = _shifted_window_mask(x, pad_H, pad_W, window_size, shift_size)
        attn = attn.view(x.size(0) // num_windows, num_windows, num_heads, x.size(1), x.size(1))
        attn = attn + attn_mask.unsqueeze(1).unsqueeze(0)
        attn = attn.view(-1, num_heads, x.size(1), x.size(1))

    attn = F.softmax(attn, dim=-1)
    attn = F.dropout(attn, p=attention_dropout, training=training)

    x = attn.matmul(v).transpose(1, 2).reshape(x.size(0), x.size(1), C)
    x = F.linear(x, proj_weight, proj_bias)
    x = F.dropout(x, p=dropout, training=training)

    # reverse windows
    x = x.view(
        B, pad_H // window_size[0], pad_W // window_size[1], window_size[0], window_size[1], C
    )
    x = x.permute(0, 1, 3, 2, 4, 5).reshape(B, pad_H, pad_W, C)

    # reverse cyclic shift
    if sum(shift_size) > 0:
        x = ember.roll(x, shifts=(shift_size[0], shift_size[1]), dims=(1, 2))

    # unpad features
    return x[:, :H, :W, :].contiguous()


ember.fx.wrap("shifted_window_attention")


class ShiftedWindowAttention(nn.Module):
    """Window attention with a learned relative position bias table; see
    :func:`shifted_window_attention`."""

    def __init__(
        self,
        dim: int,
        window_size: list[int],
        shift_size: list[int],
        num_heads: int,
        qkv_bias: bool = True,
        proj_bias: bool = True,
        attention_dropout: float = 0.0,
        dropout: float = 0.0,
    ):
        super().__init__()
        if len(window_size) != 2 or len(shift_size) != 2:
            raise ValueError("window_size and shift_size must be of length 2")
        self.window_size = window_size
        self.shift_size = shift_size
        self.num_heads = num_heads
        self.attention_dropout = attention_dropout
        self.dropout = dropout

        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim, bias=proj_bias)

        self.define_relative_position_bias_table()
        self.define_relative_position_index()

    def define_relative_position_bias_table(self) -> None:
        # a parameter table of relative position bias: 2*Wh-1 * 2*Ww-1, nH
        self.relative_position_bias_table = nn.Parameter(
            ember.zeros(
                (2 * self.window_size[0] - 1) * (2 * self.window_size[1] - 1), self.num_heads
            )
        )
        nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)

    def define_relative_position_index(self) -> None:
        # pair-wise relative position index for each token inside the window
        coords_h = ember.arange(self.window_size[0])
        coords_w = ember.arange(self.window_size[1])
        coords = ember.stack(ember.meshgrid(coords_h, coords_w, indexing="ij"))  # 2, Wh, Ww
        coords_flatten = ember.flatten(coords, 1)  # 2, Wh*Ww
        relative_coords = coords_flatten[:, :, None] - coords_flatten[:, None, :]  # 2, N, N
        relative_coords = relative_coords.permute(1, 2, 0).contiguous()  # N, N, 2
        relative_coords[:, :, 0] += self.window_size[0] - 1  # shift to start from 0
        relative_coords[:, :, 1] += self.window_size[1] - 1
        relative_coords[:, :, 0] *= 2 * self.window_size[1] - 1
        relative_position_index = relative_coords.sum(-1).flatten()  # Wh*Ww*Wh*Ww
        self.register_buffer("relative_position_index", relative_position_index)

    def get_relative_position_bias(self) -> Tensor:
        return _get_relative_position_bias(
            self.relative_position_bias_table, self.relative_position_index, self.window_size
        )

    def forward(self, x: Tensor) -> Tensor:
        """``x``: ``[B, H, W, C]``; returns the same layout."""
        relative_position_bias = self.get_relative_position_bias()
        return shifted_window_attention(
            x,
            self.qkv.weight,
            self.proj.weight,
            relative_position_bias,
            self.window_size,
            self.num_heads,
            shift_size=self.shift_size,
            attention_dropout=self.attention_dropout,
            dropout=self.dropout,
            qkv_bias=self.qkv.bias,
            proj_bias=self.proj.bias,
            training=self.training,
        )


class ShiftedWindowAttentionV2(ShiftedWindowAttention):
    """Swin V2's window attention: scaled cosine attention and a continuous position bias
    (an MLP over log-spaced relative coordinates); see :func:`shifted_window_attention`."""

    def __init__(
        self,
        dim: int,
        window_size: list[int],
        shift_size: list[int],
        num_heads: int,
        qkv_bias: bool = True,
        proj_bias: bool = True,
        attention_dropout: float = 0.0,
        dropout: float = 0.0,
    ):
        super().__init__(
            dim,
            window_size,
            shift_size,
            num_heads,
            qkv_bias=qkv_bias,
            proj_bias=proj_bias,
            attention_dropout=attention_dropout,
            dropout=dropout,
        )

        self.logit_scale = nn.Parameter(ember.log(10 * ember.ones((num_heads, 1, 1))))
        # mlp to generate continuous relative position bias
        self.cpb_mlp = nn.Sequential(
            nn.Linear(2, 512, bias=True),
            nn.ReLU(inplace=True),
            nn.Linear(512, num_heads, bias=False),
        )
        if qkv_bias:
            length = self.qkv.bias.numel() // 3
            with ember.no_grad():
                self.qkv.bias[length : 2 * length].zero_()

    def define_relative_position_bias_table(self) -> None:
        # relative_coords_table: 1, 2*Wh-1, 2*Ww-1, 2
        relative_coords_h = ember.arange(
            -(self.window_size[0] - 1), self.window_size[0], dtype=ember.float32
        )
        relative_coords_w = ember.arange(
            -(self.window_size[1] - 1), self.window_size[1], dtype=ember.float32
        )
        relative_coords_table = ember.stack(
            ember.meshgrid([relative_coords_h, relative_coords_w], indexing="ij")
        )
        relative_coords_table = relative_coords_table.permute(1, 2, 0).contiguous().unsqueeze(0)

        relative_coords_table[:, :, :, 0] /= self.window_size[0] - 1
        relative_coords_table[:, :, :, 1] /= self.window_size[1] - 1

        relative_coords_table *= 8  # normalize to -8, 8
        relative_coords_table = (
            ember.sign(relative_coords_table)
            * ember.log2(ember.abs(relative_coords_table) + 1.0)
            / 3.0
        )
        self.register_buffer("relative_coords_table", relative_coords_table)

    def get_relative_position_bias(self) -> Tensor:
        relative_position_bias = _get_relative_position_bias(
            self.cpb_mlp(self.relative_coords_table).view(-1, self.num_heads),
            self.relative_position_index,
            self.window_size,
        )
        return 16 * ember.sigmoid(relative_position_bias)

    def forward(self, x: Tensor) -> Tensor:
        """``x``: ``[B, H, W, C]``; returns the same layout."""
        relative_position_bias = self.get_relative_position_bias()
        return shifted_window_attention(
            x,
            self.qkv.weight,
            self.proj.weight,
            relative_position_bias,
            self.window_size,
            self.num_heads,
            shift_size=self.shift_size,
            attention_dropout=self.attention_dropout,
            dropout=self.dropout,
            qkv_bias=self.qkv.bias,
            proj_bias=self.proj.bias,
            logit_scale=self.logit_scale,
            training=self.training,
        )


class SwinTransformerBlock(nn.Module):
    """Swin Transformer Block.

    Args:
        dim (int): Number of input channels.
        num_heads (int): Number of attention heads.
        window_size (List[int]): Window size.
        shift_size (List[int]): Shift size for shifted window attention.
        mlp_ratio (float): Ratio of mlp hidden dim to embedding dim. Default: 4.0.
        dropout (float): Dropout rate. Default: 0.0.
        attention_dropout (float): Attention dropout rate. Default: 0.0.
        stochastic_depth_prob: (float): Stochastic depth rate. Default: 0.0.
        norm_layer (nn.Module): Normalization layer.  Default: nn.LayerNorm.
        attn_layer (nn.Module): Attention layer. Default: ShiftedWindowAttention
    """

    def __init__(
        self,
        dim: int,
        num_heads: int,
        window_size: list[int],
        shift_size: list[int],
        mlp_ratio: float = 4.0,
        dropout: float = 0.0,
        attention_dropout: float = 0.0,
        stochastic_depth_prob: float = 0.0,
        norm_layer: Callable[..., nn.Module] = nn.LayerNorm,
        attn_layer: Callable[..., nn.Module] = ShiftedWindowAttention,
    ):
        super().__init__()

        self.norm1 = norm_layer(dim)
        self.attn = attn_layer(
            dim,
            window_size,
            shift_size,
            num_heads,
            attention_dropout=attention_dropout,
            dropout=dropout,
        )
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.norm2 = norm_layer(dim)
        self.mlp = MLP(
            dim, [int(dim * mlp_ratio), dim], activation_layer=nn.GELU, inplace=None,
            dropout=dropout,
        )  # fmt: skip

        for m in self.mlp.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.normal_(m.bias, std=1e-6)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.stochastic_depth(self.attn(self.norm1(x)))
        x = x + self.stochastic_depth(self.mlp(self.norm2(x)))
        return x


class SwinTransformerBlockV2(SwinTransformerBlock):
    """Swin Transformer V2 Block: the norms after the attention and the MLP (V1: before).

    Args: as :class:`SwinTransformerBlock`'s; ``attn_layer`` defaults to
    :class:`ShiftedWindowAttentionV2`.
    """

    def __init__(
        self,
        dim: int,
        num_heads: int,
        window_size: list[int],
        shift_size: list[int],
        mlp_ratio: float = 4.0,
        dropout: float = 0.0,
        attention_dropout: float = 0.0,
        stochastic_depth_prob: float = 0.0,
        norm_layer: Callable[..., nn.Module] = nn.LayerNorm,
        attn_layer: Callable[..., nn.Module] = ShiftedWindowAttentionV2,
    ):
        super().__init__(
            dim,
            num_heads,
            window_size,
            shift_size,
            mlp_ratio=mlp_ratio,
            dropout=dropout,
            attention_dropout=attention_dropout,
            stochastic_depth_prob=stochastic_depth_prob,
            norm_layer=norm_layer,
            attn_layer=attn_layer,
        )

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.stochastic_depth(self.norm1(self.attn(x)))
        x = x + self.stochastic_depth(self.norm2(self.mlp(x)))
        return x


class SwinTransformer(nn.Module):
    """Swin Transformer from `"Swin Transformer: Hierarchical Vision Transformer using Shifted
    Windows" <https://arxiv.org/abs/2103.14030>`_.

    Args:
        patch_size (List[int]): Patch size.
        embed_dim (int): Patch embedding dimension.
        depths (List(int)): Depth of each Swin Transformer layer.
        num_heads (List(int)): Number of attention heads in different layers.
        window_size (List[int]): Window size.
        mlp_ratio (float): Ratio of mlp hidden dim to embedding dim. Default: 4.0.
        dropout (float): Dropout rate. Default: 0.0.
        attention_dropout (float): Attention dropout rate. Default: 0.0.
        stochastic_depth_prob (float): Stochastic depth rate. Default: 0.1.
        num_classes (int): Number of classes for classification head. Default: 1000.
        block (nn.Module, optional): SwinTransformer Block. Default: None.
        norm_layer (nn.Module, optional): Normalization layer. Default: None.
        downsample_layer (nn.Module): Downsample layer (patch merging). Default: PatchMerging.
    """

    def __init__(
        self,
        patch_size: list[int],
        embed_dim: int,
        depths: list[int],
        num_heads: list[int],
        window_size: list[int],
        mlp_ratio: float = 4.0,
        dropout: float = 0.0,
        attention_dropout: float = 0.0,
        stochastic_depth_prob: float = 0.1,
        num_classes: int = 1000,
        norm_layer: Callable[..., nn.Module] | None = None,
        block: Callable[..., nn.Module] | None = None,
        downsample_layer: Callable[..., nn.Module] = PatchMerging,
    ):
        super().__init__()
        self.num_classes = num_classes

        if block is None:
            block = SwinTransformerBlock
        if norm_layer is None:
            norm_layer = partial(nn.LayerNorm, eps=1e-5)

        layers: list[nn.Module] = []
        # split image into non-overlapping patches
        patch = (patch_size[0], patch_size[1])
        layers.append(
            nn.Sequential(
                nn.Conv2d(3, embed_dim, kernel_size=patch, stride=patch),
                Permute([0, 2, 3, 1]),
                norm_layer(embed_dim),
            )
        )

        total_stage_blocks = sum(depths)
        stage_block_id = 0
        # build SwinTransformer blocks
        for i_stage in range(len(depths)):
            stage: list[nn.Module] = []
            dim = embed_dim * 2**i_stage
            for i_layer in range(depths[i_stage]):
                # adjust stochastic depth probability based on the depth of the stage block
                sd_prob = stochastic_depth_prob * float(stage_block_id) / (total_stage_blocks - 1)
                stage.append(
                    block(
                        dim,
                        num_heads[i_stage],
                        window_size=window_size,
                        shift_size=[0 if i_layer % 2 == 0 else w // 2 for w in window_size],
                        mlp_ratio=mlp_ratio,
                        dropout=dropout,
                        attention_dropout=attention_dropout,
                        stochastic_depth_prob=sd_prob,
                        norm_layer=norm_layer,
                    )
                )
                stage_block_id += 1
            layers.append(nn.Sequential(*stage))
            # add patch merging layer
            if i_stage < (len(depths) - 1):
                layers.append(downsample_layer(dim, norm_layer))
        self.features = nn.Sequential(*layers)

        num_features = embed_dim * 2 ** (len(depths) - 1)
        self.norm = norm_layer(num_features)
        self.permute = Permute([0, 3, 1, 2])  # B H W C -> B C H W
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten(1)
        self.head = nn.Linear(num_features, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, x: Tensor) -> Tensor:
        x = self.features(x)
        x = self.norm(x)
        x = self.permute(x)
        x = self.avgpool(x)
        x = self.flatten(x)
        x = self.head(x)
        return x


def _swin_transformer(
    patch_size: list[int],
    embed_dim: int,
    depths: list[int],
    num_heads: list[int],
    window_size: list[int],
    stochastic_depth_prob: float,
    weights: WeightsEnum | None,
    progress: bool,
    **kwargs: Any,
) -> SwinTransformer:
    model_fn = partial(
        SwinTransformer,
        patch_size=patch_size,
        embed_dim=embed_dim,
        depths=depths,
        num_heads=num_heads,
        window_size=window_size,
        stochastic_depth_prob=stochastic_depth_prob,
    )
    return _build_model(model_fn, weights, progress, kwargs)


# Each builder's architecture: embed_dim, depths, num_heads, stochastic depth probability. All
# use 4x4 patches; V1 has 7x7 windows, V2 8x8 windows, V2's blocks and patch merging.
_ARCHS: dict[str, tuple[int, list[int], list[int], float]] = {
    "swin_t": (96, [2, 2, 6, 2], [3, 6, 12, 24], 0.2),
    "swin_s": (96, [2, 2, 18, 2], [3, 6, 12, 24], 0.3),
    "swin_b": (128, [2, 2, 18, 2], [4, 8, 16, 32], 0.5),
    "swin_v2_t": (96, [2, 2, 6, 2], [3, 6, 12, 24], 0.2),
    "swin_v2_s": (96, [2, 2, 18, 2], [3, 6, 12, 24], 0.3),
    "swin_v2_b": (128, [2, 2, 18, 2], [4, 8, 16, 32], 0.5),
}


def _swin_arch(
    name: str, weights: WeightsEnum | None, progress: bool, kwargs: dict[str, Any]
) -> SwinTransformer:
    """The variant ``name``, built from its row of :data:`_ARCHS`."""
    embed_dim, depths, num_heads, stochastic_depth_prob = _ARCHS[name]
    build = partial(
        _swin_transformer,
        patch_size=[4, 4],
        embed_dim=embed_dim,
        depths=depths,
        num_heads=num_heads,
        stochastic_depth_prob=stochastic_depth_prob,
        weights=weights,
        progress=progress,
    )
    if name.startswith("swin_v2_"):
        return build(
            window_size=[8, 8],
            block=SwinTransformerBlockV2,
            downsample_layer=PatchMergingV2,
            **kwargs,
        )
    return build(window_size=[7, 7], **kwargs)


# Weights: torchvision's checkpoints, presets and metadata. Rows: file, num_params, acc@1, acc@5,
# GFLOPS, MB, and the resize size of the (bicubic) preset.
_DOCS = "These weights reproduce closely the results of the paper using a similar training recipe."
_RECIPE = "https://github.com/pytorch/vision/tree/main/references/classification#{}"


def _v1(*row: Any, resize_size: int) -> Any:
    return _imagenet_weights(
        *row,
        transforms=_classification(224, resize_size, interpolation=InterpolationMode.BICUBIC),
        min_size=(224, 224),
        recipe=_RECIPE.format("swintransformer"),
        _docs=_DOCS,
    )


def _v2(*row: Any, resize_size: int) -> Any:
    return _imagenet_weights(
        *row,
        transforms=_classification(256, resize_size, interpolation=InterpolationMode.BICUBIC),
        min_size=(256, 256),
        recipe=_RECIPE.format("swintransformer-v2"),
        _docs=_DOCS,
    )


class Swin_T_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("swin_t-704ceda3", 28288354, 81.474, 95.776, 4.491, 108.19, resize_size=232)
    DEFAULT = IMAGENET1K_V1


class Swin_S_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "swin_s-5e29d889", 49606258, 83.196, 96.360, 8.741, 189.786, resize_size=246
    )
    DEFAULT = IMAGENET1K_V1


class Swin_B_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1(
        "swin_b-68c6b09e", 87768224, 83.582, 96.640, 15.431, 335.364, resize_size=238
    )
    DEFAULT = IMAGENET1K_V1


class Swin_V2_T_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v2(
        "swin_v2_t-b137f0e2", 28351570, 82.072, 96.132, 5.94, 108.626, resize_size=260
    )
    DEFAULT = IMAGENET1K_V1


class Swin_V2_S_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v2(
        "swin_v2_s-637d8ceb", 49737442, 83.712, 96.816, 11.546, 190.675, resize_size=260
    )
    DEFAULT = IMAGENET1K_V1


class Swin_V2_B_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v2(
        "swin_v2_b-781e5279", 87930848, 84.112, 96.864, 20.325, 336.372, resize_size=272
    )
    DEFAULT = IMAGENET1K_V1


@_model_builder()
def swin_t(
    *, weights: Swin_T_Weights | None = None, progress: bool = True, **kwargs: Any
) -> SwinTransformer:
    """Constructs a swin_tiny architecture from
    `Swin Transformer: Hierarchical Vision Transformer using Shifted Windows
    <https://arxiv.org/abs/2103.14030>`_."""
    return _swin_arch("swin_t", weights, progress, kwargs)


@_model_builder()
def swin_s(
    *, weights: Swin_S_Weights | None = None, progress: bool = True, **kwargs: Any
) -> SwinTransformer:
    """Constructs a swin_small architecture from
    `Swin Transformer: Hierarchical Vision Transformer using Shifted Windows
    <https://arxiv.org/abs/2103.14030>`_."""
    return _swin_arch("swin_s", weights, progress, kwargs)


@_model_builder()
def swin_b(
    *, weights: Swin_B_Weights | None = None, progress: bool = True, **kwargs: Any
) -> SwinTransformer:
    """Constructs a swin_base architecture from
    `Swin Transformer: Hierarchical Vision Transformer using Shifted Windows
    <https://arxiv.org/abs/2103.14030>`_."""
    return _swin_arch("swin_b", weights, progress, kwargs)


@_model_builder()
def swin_v2_t(
    *, weights: Swin_V2_T_Weights | None = None, progress: bool = True, **kwargs: Any
) -> SwinTransformer:
    """Constructs a swin_v2_tiny architecture from
    `Swin Transformer V2: Scaling Up Capacity and Resolution
    <https://arxiv.org/abs/2111.09883>`_."""
    return _swin_arch("swin_v2_t", weights, progress, kwargs)


@_model_builder()
def swin_v2_s(
    *, weights: Swin_V2_S_Weights | None = None, progress: bool = True, **kwargs: Any
) -> SwinTransformer:
    """Constructs a swin_v2_small architecture from
    `Swin Transformer V2: Scaling Up Capacity and Resolution
    <https://arxiv.org/abs/2111.09883>`_."""
    return _swin_arch("swin_v2_s", weights, progress, kwargs)


@_model_builder()
def swin_v2_b(
    *, weights: Swin_V2_B_Weights | None = None, progress: bool = True, **kwargs: Any
) -> SwinTransformer:
    """Constructs a swin_v2_base architecture from
    `Swin Transformer V2: Scaling Up Capacity and Resolution
    <https://arxiv.org/abs/2111.09883>`_."""
    return _swin_arch("swin_v2_b", weights, progress, kwargs)
