"""Video Swin Transformer (torchvision's ``models.video.swin_transformer``).

From `Video Swin Transformer <https://arxiv.org/abs/2106.13230>`_: the 2-d Swin blocks and
patch merging of :mod:`ember.vision.models.swin_transformer` over ``[B, T, H, W, C]`` token
grids, with a 3-d shifted-window attention (windows adapt to inputs smaller than them) and a
3-d patch embedding. Module names, state_dict keys, default initialisation and constructor
arguments follow torchvision's.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import ember
import ember.fx
from ember import Tensor, nn
from ember.nn import functional as F

from .._api import WeightsEnum
from .._utils import _build_model, _model_builder
from ..swin_transformer import PatchMerging, SwinTransformerBlock
from ._meta import _kinetics400_weights, _video_classification

__all__ = [
    "SwinTransformer3d",
    "Swin3D_T_Weights",
    "Swin3D_S_Weights",
    "Swin3D_B_Weights",
    "swin3d_t",
    "swin3d_s",
    "swin3d_b",
]


def _get_window_and_shift_size(
    shift_size: list[int], size_dhw: list[int], window_size: list[int]
) -> tuple[list[int], list[int]]:
    """Shrink the window to the input along each axis the input does not exceed (no shift
    there); updates and returns the lists."""
    for i in range(3):
        if size_dhw[i] <= window_size[i]:
            window_size[i] = size_dhw[i]
            shift_size[i] = 0
    return window_size, shift_size


ember.fx.wrap("_get_window_and_shift_size")


def _get_relative_position_bias(
    relative_position_bias_table: Tensor, relative_position_index: Tensor, window_size: list[int]
) -> Tensor:
    """The table's rows for every (query, key) pair of a (possibly shrunk) window:
    ``[1, heads, V, V]`` with ``V`` the window's volume."""
    window_vol = window_size[0] * window_size[1] * window_size[2]
    # the index is kept 2-d so that a shrunk window takes its top-left block
    index = relative_position_index[:window_vol, :window_vol].flatten()
    relative_position_bias = relative_position_bias_table[index]
    relative_position_bias = relative_position_bias.view(window_vol, window_vol, -1)
    return relative_position_bias.permute(2, 0, 1).contiguous().unsqueeze(0)


ember.fx.wrap("_get_relative_position_bias")


def _compute_pad_size_3d(
    size_dhw: tuple[int, int, int], patch_size: tuple[int, int, int]
) -> tuple[int, int, int]:
    """Padding that takes each of ``size_dhw`` to a multiple of ``patch_size``."""
    pad_size = [(patch_size[i] - size_dhw[i] % patch_size[i]) % patch_size[i] for i in range(3)]
    return pad_size[0], pad_size[1], pad_size[2]


ember.fx.wrap("_compute_pad_size_3d")


def _compute_attention_mask_3d(
    x: Tensor,
    size_dhw: tuple[int, int, int],
    window_size: tuple[int, int, int],
    shift_size: tuple[int, int, int],
) -> Tensor:
    """``[num_windows, V, V]``: -100 between tokens of one shifted window that came from
    different regions of the unshifted grid, 0 elsewhere."""
    attn_mask = x.new_zeros(*size_dhw)
    num_windows = (
        (size_dhw[0] // window_size[0])
        * (size_dhw[1] // window_size[1])
        * (size_dhw[2] // window_size[2])
    )
    slices = [
        ((0, -window_size[i]), (-window_size[i], -shift_size[i]), (-shift_size[i], None))
        for i in range(3)
    ]
    count = 0
    for d in slices[0]:
        for h in slices[1]:
            for w in slices[2]:
                attn_mask[d[0] : d[1], h[0] : h[1], w[0] : w[1]] = count
                count += 1

    # partition the region labels into windows
    attn_mask = attn_mask.view(
        size_dhw[0] // window_size[0],
        window_size[0],
        size_dhw[1] // window_size[1],
        window_size[1],
        size_dhw[2] // window_size[2],
        window_size[2],
    )
    attn_mask = attn_mask.permute(0, 2, 4, 1, 3, 5).reshape(
        num_windows, window_size[0] * window_size[1] * window_size[2]
    )
    attn_mask = attn_mask.unsqueeze(1) - attn_mask.unsqueeze(2)
    return attn_mask.masked_fill(attn_mask != 0, -100.0).masked_fill(attn_mask == 0, 0.0)


ember.fx.wrap("_compute_attention_mask_3d")


def shifted_window_attention_3d(
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
    training: bool = True,
) -> Tensor:
    """
    Window based multi-head self attention (W-MSA) module with relative position bias.
    It supports both of shifted and non-shifted window.

    Args:
        input (Tensor[B, T, H, W, C]): The input tensor, 5-dimensions.
        qkv_weight (Tensor[in_dim, out_dim]): The weight tensor of query, key, value.
        proj_weight (Tensor[out_dim, out_dim]): The weight tensor of projection.
        relative_position_bias (Tensor): The learned relative position bias added to attention.
        window_size (List[int]): 3-dimensions window size, T, H, W .
        num_heads (int): Number of attention heads.
        shift_size (List[int]): Shift size for shifted window attention (T, H, W).
        attention_dropout (float): Dropout ratio of attention weight. Default: 0.0.
        dropout (float): Dropout ratio of output. Default: 0.0.
        qkv_bias (Tensor[out_dim], optional): The bias tensor of query, key, value. Default: None.
        proj_bias (Tensor[out_dim], optional): The bias tensor of projection. Default: None.
        training (bool, optional): Training flag used by the dropout parameters. Default: True.

    Returns:
        Tensor[B, T, H, W, C]: The output tensor after shifted window attention.
    """
    b, t, h, w, c = input.shape
    # pad feature maps to multiples of window size
    pad_size = _compute_pad_size_3d((t, h, w), (window_size[0], window_size[1], window_size[2]))
    x = F.pad(input, (0, 0, 0, pad_size[2], 0, pad_size[1], 0, pad_size[0]))
    _, tp, hp, wp, _ = x.shape
    padded_size = (tp, hp, wp)
    grid = [padded_size[i] // window_size[i] for i in range(3)]  # windows along T, H, W
    shifted = sum(shift_size) > 0

    # cyclic shift
    if shifted:
        x = ember.roll(x, shifts=(-shift_size[0], -shift_size[1], -shift_size[2]), dims=(1, 2, 3))

    # partition windows: B*nW, Wd*Wh*Ww, C
    num_windows = grid[0] * grid[1] * grid[2]
    window_vol = window_size[0] * window_size[1] * window_size[2]
    x = x.view(b, grid[0], window_size[0], grid[1], window_size[1], grid[2], window_size[2], c)
    x = x.permute(0, 1, 3, 5, 2, 4, 6, 7).reshape(b * num_windows, window_vol, c)

    # multi-head attention
    qkv = F.linear(x, qkv_weight, qkv_bias)
    qkv = qkv.reshape(x.size(0), x.size(1), 3, num_heads, c // num_heads).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    q = q * (c // num_heads) ** -0.5
    attn = q.matmul(k.transpose(-2, -1))
    # add relative position bias
    attn = attn + relative_position_bias

    if shifted:
        # mask attention between tokens that the cyclic shift brought together
        attn_mask = _compute_attention_mask_3d(
            x,
            (padded_size[0], padded_size[1], padded_size[2]),
            (window_size[0], window_size[1], window_size[2]),
            (shift_size[0], shift_size[1], shift_size[2]),
        )
        attn = attn.view(x.size(0) // num_windows, num_windows, num_heads, x.size(1), x.size(1))
        attn = attn + attn_mask.unsqueeze(1).unsqueeze(0)
        attn = attn.view(-1, num_heads, x.size(1), x.size(1))

    attn = F.softmax(attn, dim=-1)
    attn = F.dropout(attn, p=attention_dropout, training=training)

    x = attn.matmul(v).transpose(1, 2).reshape(x.size(0), x.size(1), c)
    x = F.linear(x, proj_weight, proj_bias)
    x = F.dropout(x, p=dropout, training=training)

    # reverse windows
    x = x.view(b, grid[0], grid[1], grid[2], window_size[0], window_size[1], window_size[2], c)
    x = x.permute(0, 1, 4, 2, 5, 3, 6, 7).reshape(b, tp, hp, wp, c)

    # reverse cyclic shift
    if shifted:
        x = ember.roll(x, shifts=(shift_size[0], shift_size[1], shift_size[2]), dims=(1, 2, 3))

    # unpad features
    return x[:, :t, :h, :w, :].contiguous()


ember.fx.wrap("shifted_window_attention_3d")


class ShiftedWindowAttention3d(nn.Module):
    """
    See :func:`shifted_window_attention_3d`.
    """

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
    ) -> None:
        super().__init__()
        if len(window_size) != 3 or len(shift_size) != 3:
            # torchvision's wording (it checks for length 3)
            raise ValueError("window_size and shift_size must be of length 2")

        self.window_size = window_size  # Wd, Wh, Ww
        self.shift_size = shift_size
        self.num_heads = num_heads
        self.attention_dropout = attention_dropout
        self.dropout = dropout

        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim, bias=proj_bias)

        self.define_relative_position_bias_table()
        self.define_relative_position_index()

    def define_relative_position_bias_table(self) -> None:
        # a parameter table of relative position bias: 2*Wd-1 * 2*Wh-1 * 2*Ww-1, nH
        wd, wh, ww = self.window_size
        self.relative_position_bias_table = nn.Parameter(
            ember.zeros((2 * wd - 1) * (2 * wh - 1) * (2 * ww - 1), self.num_heads)
        )
        nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)

    def define_relative_position_index(self) -> None:
        # pair-wise relative position index for each token inside the window
        coords_dhw = [ember.arange(self.window_size[i]) for i in range(3)]
        coords = ember.stack(ember.meshgrid(*coords_dhw, indexing="ij"))  # 3, Wd, Wh, Ww
        coords_flatten = ember.flatten(coords, 1)  # 3, V
        relative_coords = coords_flatten[:, :, None] - coords_flatten[:, None, :]  # 3, V, V
        relative_coords = relative_coords.permute(1, 2, 0).contiguous()  # V, V, 3
        relative_coords[:, :, 0] += self.window_size[0] - 1  # shift to start from 0
        relative_coords[:, :, 1] += self.window_size[1] - 1
        relative_coords[:, :, 2] += self.window_size[2] - 1
        relative_coords[:, :, 0] *= (2 * self.window_size[1] - 1) * (2 * self.window_size[2] - 1)
        relative_coords[:, :, 1] *= 2 * self.window_size[2] - 1
        # kept 2-d (V, V), unlike the 2-d model: windows may shrink to the input
        relative_position_index = relative_coords.sum(-1)
        self.register_buffer("relative_position_index", relative_position_index)

    def get_relative_position_bias(self, window_size: list[int]) -> Tensor:
        return _get_relative_position_bias(
            self.relative_position_bias_table, self.relative_position_index, window_size
        )

    def forward(self, x: Tensor) -> Tensor:
        """``x``: ``[B, T, H, W, C]``; returns the same layout."""
        _, t, h, w, _ = x.shape
        # windows larger than the input shrink to it
        window_size, shift_size = _get_window_and_shift_size(
            self.shift_size.copy(), [t, h, w], self.window_size.copy()
        )
        relative_position_bias = self.get_relative_position_bias(window_size)
        return shifted_window_attention_3d(
            x,
            self.qkv.weight,
            self.proj.weight,
            relative_position_bias,
            window_size,
            self.num_heads,
            shift_size=shift_size,
            attention_dropout=self.attention_dropout,
            dropout=self.dropout,
            qkv_bias=self.qkv.bias,
            proj_bias=self.proj.bias,
            training=self.training,
        )


class PatchEmbed3d(nn.Module):
    """Video to Patch Embedding.

    Args:
        patch_size (List[int]): Patch token size.
        in_channels (int): Number of input channels. Default: 3
        embed_dim (int): Number of linear projection output channels. Default: 96.
        norm_layer (nn.Module, optional): Normalization layer. Default: None
    """

    def __init__(
        self,
        patch_size: list[int],
        in_channels: int = 3,
        embed_dim: int = 96,
        norm_layer: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()
        self.tuple_patch_size = (patch_size[0], patch_size[1], patch_size[2])

        self.proj = nn.Conv3d(
            in_channels,
            embed_dim,
            kernel_size=self.tuple_patch_size,
            stride=self.tuple_patch_size,
        )
        self.norm = norm_layer(embed_dim) if norm_layer is not None else nn.Identity()

    def forward(self, x: Tensor) -> Tensor:
        """``x``: ``[B, C, T, H, W]`` (padded to whole patches); returns ``[B, T', H', W', D]``."""
        _, _, t, h, w = x.size()
        pad_size = _compute_pad_size_3d((t, h, w), self.tuple_patch_size)
        x = F.pad(x, (0, pad_size[2], 0, pad_size[1], 0, pad_size[0]))
        x = self.proj(x)  # B C T Wh Ww
        x = x.permute(0, 2, 3, 4, 1)  # B T Wh Ww C
        return self.norm(x)


class SwinTransformer3d(nn.Module):
    """
    Implements 3D Swin Transformer from the `"Video Swin Transformer"
    <https://arxiv.org/abs/2106.13230>`_ paper.

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
        num_classes (int): Number of classes for classification head. Default: 400.
        norm_layer (nn.Module, optional): Normalization layer. Default: None.
        block (nn.Module, optional): SwinTransformer Block. Default: None.
        downsample_layer (nn.Module): Downsample layer (patch merging). Default: PatchMerging.
        patch_embed (nn.Module, optional): Patch Embedding layer. Default: None.
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
        num_classes: int = 400,
        norm_layer: Callable[..., nn.Module] | None = None,
        block: Callable[..., nn.Module] | None = None,
        downsample_layer: Callable[..., nn.Module] = PatchMerging,
        patch_embed: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()
        self.num_classes = num_classes

        if block is None:
            block = partial(SwinTransformerBlock, attn_layer=ShiftedWindowAttention3d)
        if norm_layer is None:
            norm_layer = partial(nn.LayerNorm, eps=1e-5)
        if patch_embed is None:
            patch_embed = PatchEmbed3d

        # split the clip into non-overlapping patches
        self.patch_embed = patch_embed(
            patch_size=patch_size, embed_dim=embed_dim, norm_layer=norm_layer
        )
        self.pos_drop = nn.Dropout(p=dropout)

        layers: list[nn.Module] = []
        total_stage_blocks = sum(depths)
        stage_block_id = 0
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
                        attn_layer=ShiftedWindowAttention3d,
                    )
                )
                stage_block_id += 1
            layers.append(nn.Sequential(*stage))
            # patch merging between the stages
            if i_stage < (len(depths) - 1):
                layers.append(downsample_layer(dim, norm_layer))
        self.features = nn.Sequential(*layers)

        self.num_features = embed_dim * 2 ** (len(depths) - 1)
        self.norm = norm_layer(self.num_features)
        self.avgpool = nn.AdaptiveAvgPool3d(1)
        self.head = nn.Linear(self.num_features, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, x: Tensor) -> Tensor:
        # x: B C T H W
        x = self.patch_embed(x)  # B _T _H _W C
        x = self.pos_drop(x)
        x = self.features(x)  # B _T _H _W C
        x = self.norm(x)
        x = x.permute(0, 4, 1, 2, 3)  # B, C, _T, _H, _W
        x = self.avgpool(x)
        x = ember.flatten(x, 1)
        return self.head(x)


# Each builder's architecture: embed_dim, depths, num_heads. All use 2x4x4 patches, 8x7x7
# windows and a stochastic depth probability of 0.1.
_ARCHS: dict[str, tuple[int, list[int], list[int]]] = {
    "swin3d_t": (96, [2, 2, 6, 2], [3, 6, 12, 24]),
    "swin3d_s": (96, [2, 2, 18, 2], [3, 6, 12, 24]),
    "swin3d_b": (128, [2, 2, 18, 2], [4, 8, 16, 32]),
}


def _swin_transformer3d(
    name: str, weights: WeightsEnum | None, progress: bool, kwargs: dict[str, Any]
) -> SwinTransformer3d:
    """The variant ``name``, built from its row of :data:`_ARCHS`."""
    embed_dim, depths, num_heads = _ARCHS[name]
    model_fn = partial(
        SwinTransformer3d,
        patch_size=[2, 4, 4],
        embed_dim=embed_dim,
        depths=depths,
        num_heads=num_heads,
        window_size=[8, 7, 7],
        stochastic_depth_prob=0.1,
    )
    return _build_model(model_fn, weights, progress, kwargs)


# Weights: checkpoints ported from the paper's. Rows: file, num_params, acc@1, acc@5, GFLOPS, MB.
def _kinetics(*row: Any) -> Any:
    return _kinetics400_weights(
        *row,
        transforms=_video_classification(
            crop_size=(224, 224),
            resize_size=(256,),
            mean=(0.4850, 0.4560, 0.4060),
            std=(0.2290, 0.2240, 0.2250),
        ),
        min_size=(1, 1),
        min_temporal_size=1,
        recipe="https://github.com/SwinTransformer/Video-Swin-Transformer#kinetics-400",
        _docs=(
            "The weights were ported from the paper. The accuracies are estimated on video-level "
            "with parameters `frame_rate=15`, `clips_per_video=12`, and `clip_len=32`"
        ),
    )


class Swin3D_T_Weights(WeightsEnum):
    KINETICS400_V1 = _kinetics("swin3d_t-7615ae03", 28158070, 77.715, 93.519, 43.882, 121.543)
    DEFAULT = KINETICS400_V1


class Swin3D_S_Weights(WeightsEnum):
    KINETICS400_V1 = _kinetics("swin3d_s-da41c237", 49816678, 79.521, 94.158, 82.841, 218.288)
    DEFAULT = KINETICS400_V1


class Swin3D_B_Weights(WeightsEnum):
    KINETICS400_V1 = _kinetics("swin3d_b_1k-24f7c7c6", 88048984, 79.427, 94.386, 140.667, 364.134)
    KINETICS400_IMAGENET22K_V1 = _kinetics(
        "swin3d_b_22k-7c6ae6fa", 88048984, 81.643, 95.574, 140.667, 364.134
    )
    DEFAULT = KINETICS400_V1


@_model_builder("KINETICS400_V1")
def swin3d_t(
    *, weights: Swin3D_T_Weights | None = None, progress: bool = True, **kwargs: Any
) -> SwinTransformer3d:
    """Constructs a swin_tiny architecture from
    `Video Swin Transformer <https://arxiv.org/abs/2106.13230>`_.
    """
    return _swin_transformer3d("swin3d_t", weights, progress, kwargs)


@_model_builder("KINETICS400_V1")
def swin3d_s(
    *, weights: Swin3D_S_Weights | None = None, progress: bool = True, **kwargs: Any
) -> SwinTransformer3d:
    """Constructs a swin_small architecture from
    `Video Swin Transformer <https://arxiv.org/abs/2106.13230>`_.
    """
    return _swin_transformer3d("swin3d_s", weights, progress, kwargs)


@_model_builder("KINETICS400_V1")
def swin3d_b(
    *, weights: Swin3D_B_Weights | None = None, progress: bool = True, **kwargs: Any
) -> SwinTransformer3d:
    """Constructs a swin_base architecture from
    `Video Swin Transformer <https://arxiv.org/abs/2106.13230>`_.
    """
    return _swin_transformer3d("swin3d_b", weights, progress, kwargs)
