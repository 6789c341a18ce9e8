"""MViT, the Multiscale Vision Transformer, V1 and V2 (torchvision's ``models.video.mvit``).

From `Multiscale Vision Transformers <https://arxiv.org/abs/2104.11227>`__ and `MViTv2:
Improved Multiscale Vision Transformers for Classification and Detection
<https://arxiv.org/abs/2112.01526>`__. Tokens are a class token followed by the ``T*H*W`` patch
tokens; attention pools queries, keys and values with depthwise 3-d convolutions over that grid
(V2 adds the pooled query as a residual and decomposed relative position biases). Module names,
state_dict keys, default initialisation and constructor arguments follow torchvision's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import ember
import ember.fx
from ember import Tensor, nn
from ember.nn import functional as F

from ...ops.misc import MLP
from ...ops.stochastic_depth import StochasticDepth
from .._api import WeightsEnum
from .._utils import _build_model, _model_builder, _ovewrite_named_param
from ._meta import _kinetics400_weights, _video_classification

__all__ = [
    "MViT",
    "MViT_V1_B_Weights",
    "mvit_v1_b",
    "MViT_V2_S_Weights",
    "mvit_v2_s",
]


@dataclass
class MSBlockConfig:
    """One multiscale block: heads, input/output channels, and the kernels and strides of the
    query and key/value pooling (an empty list: no pooling)."""

    num_heads: int
    input_channels: int
    output_channels: int
    kernel_q: list[int]
    kernel_kv: list[int]
    stride_q: list[int]
    stride_kv: list[int]


def _prod(s: Sequence[int]) -> int:
    return math.prod(s)


def _unsqueeze(x: Tensor, target_dim: int, expand_dim: int) -> tuple[Tensor, int]:
    """``x`` with a unit axis at ``expand_dim`` when it has one dimension less than
    ``target_dim``; also its original number of dimensions."""
    tensor_dim = x.dim()
    if tensor_dim == target_dim - 1:
        x = x.unsqueeze(expand_dim)
    elif tensor_dim != target_dim:
        raise ValueError(f"Unsupported input dimension {x.shape}")
    return x, tensor_dim


def _squeeze(x: Tensor, target_dim: int, expand_dim: int, tensor_dim: int) -> Tensor:
    """Undo :func:`_unsqueeze`."""
    if tensor_dim == target_dim - 1:
        x = x.squeeze(expand_dim)
    return x


ember.fx.wrap("_unsqueeze")
ember.fx.wrap("_squeeze")


class Pool(nn.Module):
    """Pool the patch tokens of ``[B, heads, 1 + T*H*W, C]`` (or ``[B, 1 + T*H*W, C]``) over
    their ``T x H x W`` grid, the class token passed through; an optional norm (and
    activation) after the pooling, or before it with ``norm_before_pool``."""

    def __init__(
        self,
        pool: nn.Module,
        norm: nn.Module | None,
        activation: nn.Module | None = None,
        norm_before_pool: bool = False,
    ) -> None:
        super().__init__()
        self.pool = pool
        layers = []
        if norm is not None:
            layers.append(norm)
        if activation is not None:
            layers.append(activation)
        self.norm_act = nn.Sequential(*layers) if layers else None
        self.norm_before_pool = norm_before_pool

    def forward(self, x: Tensor, thw: tuple[int, int, int]) -> tuple[Tensor, tuple[int, int, int]]:
        x, tensor_dim = _unsqueeze(x, 4, 1)

        # separate the class token and lay the patch tokens out as a (B*N, C, T, H, W) volume
        class_token, x = ember.tensor_split(x, indices=(1,), dim=2)
        x = x.transpose(2, 3)
        B, N, C = x.shape[:3]
        x = x.reshape((B * N, C) + tuple(thw)).contiguous()

        # a norm before the pool can be folded into it when it is a batch norm
        if self.norm_before_pool and self.norm_act is not None:
            x = self.norm_act(x)

        # pool, and put the class token back in front
        x = self.pool(x)
        T, H, W = x.shape[2:]
        x = x.reshape(B, N, C, -1).transpose(2, 3)
        x = ember.cat((class_token, x), dim=2)

        if not self.norm_before_pool and self.norm_act is not None:
            x = self.norm_act(x)

        x = _squeeze(x, 4, 1, tensor_dim)
        return x, (T, H, W)


def _interpolate(embedding: Tensor, d: int) -> Tensor:
    """A ``[L, C]`` table resampled (linearly) to ``d`` rows."""
    if embedding.shape[0] == d:
        return embedding
    resized = F.interpolate(embedding.permute(1, 0).unsqueeze(0), size=d, mode="linear")
    return resized.squeeze(0).permute(1, 0)


def _rel_pos_table(rel_pos: Tensor, q_size: int, k_size: int) -> Tensor:
    """``[q_size, k_size, C]``: the table's row for each (query, key) position pair along one
    axis, the distances scaled up when queries and keys have different sizes."""
    q_ratio = max(k_size / q_size, 1.0)
    k_ratio = max(q_size / k_size, 1.0)
    dist = (
        ember.arange(q_size)[:, None] * q_ratio
        - (ember.arange(k_size)[None, :] + (1.0 - k_size)) * k_ratio
    )
    rel_pos = _interpolate(rel_pos, int(2 * max(q_size, k_size) - 1))
    return rel_pos[dist.long()]


def _add_rel_pos(
    attn: Tensor,
    q: Tensor,
    q_thw: tuple[int, int, int],
    k_thw: tuple[int, int, int],
    rel_pos_h: Tensor,
    rel_pos_w: Tensor,
    rel_pos_t: Tensor,
) -> Tensor:
    """``attn`` plus MViTv2's decomposed relative position bias between the patch tokens:
    each query's products with the tables of the H, W and T distances, summed over the axes
    (the class token's rows and columns unchanged)."""
    q_t, q_h, q_w = q_thw
    k_t, k_h, k_w = k_thw
    Rh = _rel_pos_table(rel_pos_h, q_h, k_h)
    Rw = _rel_pos_table(rel_pos_w, q_w, k_w)
    Rt = _rel_pos_table(rel_pos_t, q_t, k_t)

    B, n_head, _, dim = q.shape

    r_q = q[:, :, 1:].reshape(B, n_head, q_t, q_h, q_w, dim)
    rel_h_q = ember.einsum("bythwc,hkc->bythwk", r_q, Rh)  # [B, H, q_t, qh, qw, k_h]
    rel_w_q = ember.einsum("bythwc,wkc->bythwk", r_q, Rw)  # [B, H, q_t, qh, qw, k_w]
    # [B, H, q_t, q_h, q_w, dim] -> [q_t, B*H*q_h*q_w, dim]
    r_q = r_q.permute(2, 0, 1, 3, 4, 5).reshape(q_t, B * n_head * q_h * q_w, dim)
    # [q_t, B*H*q_h*q_w, dim] @ [q_t, dim, k_t] -> [B*H*q_h*q_w, q_t, k_t]
    rel_q_t = ember.matmul(r_q, Rt.transpose(1, 2)).transpose(0, 1)
    # -> [B, H, q_t, q_h, q_w, k_t]
    rel_q_t = rel_q_t.reshape(B, n_head, q_h, q_w, q_t, k_t).permute(0, 1, 4, 2, 3, 5)

    rel_pos = (
        rel_h_q[:, :, :, :, :, None, :, None]
        + rel_w_q[:, :, :, :, :, None, None, :]
        + rel_q_t[:, :, :, :, :, :, None, None]
    ).reshape(B, n_head, q_t * q_h * q_w, k_t * k_h * k_w)

    # torchvision adds in place to attn[:, :, 1:, 1:]; padding keeps the graph out of place
    return attn + F.pad(rel_pos, (1, 0, 1, 0))


def _add_shortcut(x: Tensor, shortcut: Tensor, residual_with_cls_embed: bool) -> Tensor:
    """``x + shortcut``, or, without ``residual_with_cls_embed``, on the patch tokens only."""
    if residual_with_cls_embed:
        return x + shortcut
    return ember.cat((x[:, :, :1, :], x[:, :, 1:, :] + shortcut[:, :, 1:, :]), dim=2)


ember.fx.wrap("_add_rel_pos")
ember.fx.wrap("_add_shortcut")


class MultiscaleAttention(nn.Module):
    """Multi-head self-attention whose queries and keys/values are pooled over the token grid
    (depthwise strided 3-d convolutions, each followed by the norm)."""

    def __init__(
        self,
        input_size: list[int],
        embed_dim: int,
        output_dim: int,
        num_heads: int,
        kernel_q: list[int],
        kernel_kv: list[int],
        stride_q: list[int],
        stride_kv: list[int],
        residual_pool: bool,
        residual_with_cls_embed: bool,
        rel_pos_embed: bool,
        dropout: float = 0.0,
        norm_layer: Callable[..., nn.Module] = nn.LayerNorm,
    ) -> None:
        super().__init__()
        self.embed_dim = embed_dim
        self.output_dim = output_dim
        self.num_heads = num_heads
        self.head_dim = output_dim // num_heads
        self.scaler = 1.0 / math.sqrt(self.head_dim)
        self.residual_pool = residual_pool
        self.residual_with_cls_embed = residual_with_cls_embed

        self.qkv = nn.Linear(embed_dim, 3 * output_dim)
        layers: list[nn.Module] = [nn.Linear(output_dim, output_dim)]
        if dropout > 0.0:
            layers.append(nn.Dropout(dropout, inplace=True))
        self.project = nn.Sequential(*layers)

        def pool(kernel: list[int], stride: list[int]) -> Pool:
            return Pool(
                nn.Conv3d(
                    self.head_dim,
                    self.head_dim,
                    kernel,
                    stride=stride,
                    padding=[int(k // 2) for k in kernel],
                    groups=self.head_dim,
                    bias=False,
                ),
                norm_layer(self.head_dim),
            )

        self.pool_q: nn.Module | None = None
        if _prod(kernel_q) > 1 or _prod(stride_q) > 1:
            self.pool_q = pool(kernel_q, stride_q)

        self.pool_k: nn.Module | None = None
        self.pool_v: nn.Module | None = None
        if _prod(kernel_kv) > 1 or _prod(stride_kv) > 1:
            self.pool_k = pool(kernel_kv, stride_kv)
            self.pool_v = pool(kernel_kv, stride_kv)

        self.rel_pos_h: nn.Parameter | None = None
        self.rel_pos_w: nn.Parameter | None = None
        self.rel_pos_t: nn.Parameter | None = None
        if rel_pos_embed:
            size = max(input_size[1:])
            q_size = size // stride_q[1] if len(stride_q) > 0 else size
            kv_size = size // stride_kv[1] if len(stride_kv) > 0 else size
            spatial_dim = 2 * max(q_size, kv_size) - 1
            temporal_dim = 2 * input_size[0] - 1
            self.rel_pos_h = nn.Parameter(ember.zeros(spatial_dim, self.head_dim))
            self.rel_pos_w = nn.Parameter(ember.zeros(spatial_dim, self.head_dim))
            self.rel_pos_t = nn.Parameter(ember.zeros(temporal_dim, self.head_dim))
            nn.init.trunc_normal_(self.rel_pos_h, std=0.02)
            nn.init.trunc_normal_(self.rel_pos_w, std=0.02)
            nn.init.trunc_normal_(self.rel_pos_t, std=0.02)

    def forward(self, x: Tensor, thw: tuple[int, int, int]) -> tuple[Tensor, tuple[int, int, int]]:
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).transpose(1, 3)
        q, k, v = qkv.unbind(dim=2)  # each [B, heads, N, head_dim]

        if self.pool_k is not None:
            k, k_thw = self.pool_k(k, thw)
        else:
            k_thw = thw
        if self.pool_v is not None:
            v = self.pool_v(v, thw)[0]
        if self.pool_q is not None:
            q, thw = self.pool_q(q, thw)

        attn = ember.matmul(self.scaler * q, k.transpose(2, 3))
        if self.rel_pos_h is not None and self.rel_pos_w is not None and self.rel_pos_t is not None:
            attn = _add_rel_pos(attn, q, thw, k_thw, self.rel_pos_h, self.rel_pos_w, self.rel_pos_t)
        attn = attn.softmax(dim=-1)

        x = ember.matmul(attn, v)
        if self.residual_pool:
            x = _add_shortcut(x, q, self.residual_with_cls_embed)
        x = x.transpose(1, 2).reshape(B, -1, self.output_dim)
        x = self.project(x)

        return x, thw


class MultiscaleBlock(nn.Module):
    """A transformer block of MViT: norm, multiscale attention, (pooled) residual, norm, MLP,
    residual; the channels change through a linear projection before or after the attention."""

    def __init__(
        self,
        input_size: list[int],
        cnf: MSBlockConfig,
        residual_pool: bool,
        residual_with_cls_embed: bool,
        rel_pos_embed: bool,
        proj_after_attn: bool,
        dropout: float = 0.0,
        stochastic_depth_prob: float = 0.0,
        norm_layer: Callable[..., nn.Module] = nn.LayerNorm,
    ) -> None:
        super().__init__()
        self.proj_after_attn = proj_after_attn

        self.pool_skip: nn.Module | None = None
        if _prod(cnf.stride_q) > 1:
            kernel_skip = [s + 1 if s > 1 else s for s in cnf.stride_q]
            padding_skip = [int(k // 2) for k in kernel_skip]
            self.pool_skip = Pool(
                nn.MaxPool3d(kernel_skip, stride=cnf.stride_q, padding=padding_skip), None
            )

        attn_dim = cnf.output_channels if proj_after_attn else cnf.input_channels

        self.norm1 = norm_layer(cnf.input_channels)
        self.norm2 = norm_layer(attn_dim)
        self.needs_transposal = isinstance(self.norm1, nn.BatchNorm1d)

        self.attn = MultiscaleAttention(
            input_size,
            cnf.input_channels,
            attn_dim,
            cnf.num_heads,
            kernel_q=cnf.kernel_q,
            kernel_kv=cnf.kernel_kv,
            stride_q=cnf.stride_q,
            stride_kv=cnf.stride_kv,
            rel_pos_embed=rel_pos_embed,
            residual_pool=residual_pool,
            residual_with_cls_embed=residual_with_cls_embed,
            dropout=dropout,
            norm_layer=norm_layer,
        )
        self.mlp = MLP(
            attn_dim,
            [4 * attn_dim, cnf.output_channels],
            activation_layer=nn.GELU,
            dropout=dropout,
            inplace=None,
        )

        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")

        self.project: nn.Module | None = None
        if cnf.input_channels != cnf.output_channels:
            self.project = nn.Linear(cnf.input_channels, cnf.output_channels)

    def _norm(self, norm: nn.Module, x: Tensor) -> Tensor:
        # a BatchNorm1d normalises the channels of [B, C, N]
        return norm(x.transpose(1, 2)).transpose(1, 2) if self.needs_transposal else norm(x)

    def forward(self, x: Tensor, thw: tuple[int, int, int]) -> tuple[Tensor, tuple[int, int, int]]:
        x_norm1 = self._norm(self.norm1, x)
        x_attn, thw_new = self.attn(x_norm1, thw)
        x = x if self.project is None or not self.proj_after_attn else self.project(x_norm1)
        x_skip = x if self.pool_skip is None else self.pool_skip(x, thw)[0]
        x = x_skip + self.stochastic_depth(x_attn)

        x_norm2 = self._norm(self.norm2, x)
        x_proj = x if self.project is None or self.proj_after_attn else self.project(x_norm2)

        return x_proj + self.stochastic_depth(self.mlp(x_norm2)), thw_new


class PositionalEncoding(nn.Module):
    """Prepend the class token; without relative position embeddings, add a learned position
    embedding (temporal + spatial per patch token, its own for the class token)."""

    def __init__(
        self,
        embed_size: int,
        spatial_size: tuple[int, int],
        temporal_size: int,
        rel_pos_embed: bool,
    ) -> None:
        super().__init__()
        self.spatial_size = spatial_size
        self.temporal_size = temporal_size

        self.class_token = nn.Parameter(ember.zeros(embed_size))
        self.spatial_pos: nn.Parameter | None = None
        self.temporal_pos: nn.Parameter | None = None
        self.class_pos: nn.Parameter | None = None
        if not rel_pos_embed:
            self.spatial_pos = nn.Parameter(
                ember.zeros(self.spatial_size[0] * self.spatial_size[1], embed_size)
            )
            self.temporal_pos = nn.Parameter(ember.zeros(self.temporal_size, embed_size))
            self.class_pos = nn.Parameter(ember.zeros(embed_size))

    def forward(self, x: Tensor) -> Tensor:
        class_token = self.class_token.expand(x.size(0), -1).unsqueeze(1)
        x = ember.cat((class_token, x), dim=1)

        if (
            self.spatial_pos is not None
            and self.temporal_pos is not None
            and self.class_pos is not None
        ):
            hw_size, embed_size = self.spatial_pos.shape
            pos_embedding = ember.repeat_interleave(self.temporal_pos, hw_size, dim=0)
            spatial = self.spatial_pos.unsqueeze(0).expand(self.temporal_size, -1, -1)
            pos_embedding = pos_embedding + spatial.reshape(-1, embed_size)
            pos_embedding = ember.cat((self.class_pos.unsqueeze(0), pos_embedding), dim=0)
            x = x + pos_embedding.unsqueeze(0)

        return x


class MViT(nn.Module):
    """MViT main class.

    Args:
        spatial_size (tuple of ints): The spacial size of the input as ``(H, W)``.
        temporal_size (int): The temporal size ``T`` of the input.
        block_setting (sequence of MSBlockConfig): The Network structure.
        residual_pool (bool): If True, use MViTv2 pooling residual connection.
        residual_with_cls_embed (bool): If True, the addition on the residual connection will
            include the class embedding.
        rel_pos_embed (bool): If True, use MViTv2's relative positional embeddings.
        proj_after_attn (bool): If True, apply the projection after the attention.
        dropout (float): Dropout rate. Default: 0.0.
        attention_dropout (float): Attention dropout rate. Default: 0.0.
        stochastic_depth_prob: (float): Stochastic depth rate. Default: 0.0.
        num_classes (int): The number of classes.
        block (callable, optional): Module specifying the layer which consists of the attention
            and mlp.
        norm_layer (callable, optional): Module specifying the normalization layer to use.
        patch_embed_kernel (tuple of ints): The kernel of the convolution that patchifies the
            input.
        patch_embed_stride (tuple of ints): The stride of the convolution that patchifies the
            input.
        patch_embed_padding (tuple of ints): The padding of the convolution that patchifies the
            input.

    Input: ``(B, 3, T, H, W)`` clips of exactly ``temporal_size`` x ``spatial_size`` (or
    ``(B, 3, H, W)`` images, taken as one frame).
    """

    def __init__(
        self,
        spatial_size: tuple[int, int],
        temporal_size: int,
        block_setting: Sequence[MSBlockConfig],
        residual_pool: bool,
        residual_with_cls_embed: bool,
        rel_pos_embed: bool,
        proj_after_attn: bool,
        dropout: float = 0.5,
        attention_dropout: float = 0.0,
        stochastic_depth_prob: float = 0.0,
        num_classes: int = 400,
        block: Callable[..., nn.Module] | None = None,
        norm_layer: Callable[..., nn.Module] | None = None,
        patch_embed_kernel: tuple[int, int, int] = (3, 7, 7),
        patch_embed_stride: tuple[int, int, int] = (2, 4, 4),
        patch_embed_padding: tuple[int, int, int] = (1, 3, 3),
    ) -> None:
        super().__init__()
        # The simplified parameterisation of Table 1 of the paper (torchvision's), not
        # PyTorchVideo's.
        total_stage_blocks = len(block_setting)
        if total_stage_blocks == 0:
            raise ValueError("The configuration parameter can't be empty.")

        if block is None:
            block = MultiscaleBlock
        if norm_layer is None:
            norm_layer = partial(nn.LayerNorm, eps=1e-6)

        # patch embedding
        self.conv_proj = nn.Conv3d(
            in_channels=3,
            out_channels=block_setting[0].input_channels,
            kernel_size=patch_embed_kernel,
            stride=patch_embed_stride,
            padding=patch_embed_padding,
        )

        input_size = [
            size // stride
            for size, stride in zip((temporal_size,) + spatial_size, self.conv_proj.stride)
        ]

        # spatio-temporal class positional encoding
        self.pos_encoding = PositionalEncoding(
            embed_size=block_setting[0].input_channels,
            spatial_size=(input_size[1], input_size[2]),
            temporal_size=input_size[0],
            rel_pos_embed=rel_pos_embed,
        )

        # encoder
        self.blocks = nn.ModuleList()
        for stage_block_id, cnf in enumerate(block_setting):
            # adjust stochastic depth probability based on the depth of the stage block
            sd_prob = stochastic_depth_prob * stage_block_id / (total_stage_blocks - 1.0)
            self.blocks.append(
                block(
                    input_size=input_size,
                    cnf=cnf,
                    residual_pool=residual_pool,
                    residual_with_cls_embed=residual_with_cls_embed,
                    rel_pos_embed=rel_pos_embed,
                    proj_after_attn=proj_after_attn,
                    dropout=attention_dropout,
                    stochastic_depth_prob=sd_prob,
                    norm_layer=norm_layer,
                )
            )
            if len(cnf.stride_q) > 0:
                input_size = [size // stride for size, stride in zip(input_size, cnf.stride_q)]
        self.norm = norm_layer(block_setting[-1].output_channels)

        # classifier
        self.head = nn.Sequential(
            nn.Dropout(dropout, inplace=True),
            nn.Linear(block_setting[-1].output_channels, num_classes),
        )

        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0.0)
            elif isinstance(m, nn.LayerNorm):
                if m.weight is not None:
                    nn.init.constant_(m.weight, 1.0)
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0.0)
            elif isinstance(m, PositionalEncoding):
                for weights in m.parameters():
                    nn.init.trunc_normal_(weights, std=0.02)

    def forward(self, x: Tensor) -> Tensor:
        # (B, C, H, W) -> (B, C, 1, H, W)
        x = _unsqueeze(x, 5, 2)[0]
        # patchify: (B, C, T, H, W) -> (B, embed_channels[0], T', H', W') -> (B, THW', C0)
        x = self.conv_proj(x)
        x = x.flatten(2).transpose(1, 2)

        x = self.pos_encoding(x)

        thw = (self.pos_encoding.temporal_size,) + self.pos_encoding.spatial_size
        for block in self.blocks:
            x, thw = block(x, thw)
        x = self.norm(x)

        # classify the class token
        x = x[:, 0]
        return self.head(x)


def _block_setting(config: dict[str, list]) -> list[MSBlockConfig]:
    """A builder's per-block table as :class:`MSBlockConfig` rows."""
    return [
        MSBlockConfig(**{key: values[i] for key, values in config.items()})
        for i in range(len(config["num_heads"]))
    ]


def _mvit(
    block_setting: list[MSBlockConfig],
    stochastic_depth_prob: float,
    weights: WeightsEnum | None,
    progress: bool,
    **kwargs: Any,
) -> MViT:
    if weights is not None:
        # a checkpoint fixes the input size its position embeddings were trained for
        assert weights.meta["min_size"][0] == weights.meta["min_size"][1]
        _ovewrite_named_param(kwargs, "spatial_size", weights.meta["min_size"])
        _ovewrite_named_param(kwargs, "temporal_size", weights.meta["min_temporal_size"])
    model_fn = partial(
        MViT,
        spatial_size=kwargs.pop("spatial_size", (224, 224)),
        temporal_size=kwargs.pop("temporal_size", 16),
        block_setting=block_setting,
        residual_pool=kwargs.pop("residual_pool", False),
        residual_with_cls_embed=kwargs.pop("residual_with_cls_embed", True),
        rel_pos_embed=kwargs.pop("rel_pos_embed", False),
        proj_after_attn=kwargs.pop("proj_after_attn", False),
        stochastic_depth_prob=stochastic_depth_prob,
    )
    return _build_model(model_fn, weights, progress, kwargs)


# Weights: checkpoints ported from the papers'. Rows: file, num_params, acc@1, acc@5, GFLOPS, MB.
def _kinetics(*row: Any, recipe: str) -> Any:
    return _kinetics400_weights(
        *row,
        transforms=_video_classification(
            crop_size=(224, 224),
            resize_size=(256,),
            mean=(0.45, 0.45, 0.45),
            std=(0.225, 0.225, 0.225),
        ),
        min_size=(224, 224),
        min_temporal_size=16,
        recipe=recipe,
        _docs=(
            "The weights were ported from the paper. The accuracies are estimated on video-level "
            "with parameters `frame_rate=7.5`, `clips_per_video=5`, and `clip_len=16`"
        ),
    )


class MViT_V1_B_Weights(WeightsEnum):
    KINETICS400_V1 = _kinetics(
        "mvit_v1_b-dbeb1030", 36610672, 78.477, 93.582, 70.599, 139.764,
        recipe="https://github.com/facebookresearch/pytorchvideo/blob/main/docs/source/model_zoo.md",
    )  # fmt: skip
    DEFAULT = KINETICS400_V1


class MViT_V2_S_Weights(WeightsEnum):
    KINETICS400_V1 = _kinetics(
        "mvit_v2_s-ae3be167", 34537744, 80.757, 94.665, 64.224, 131.884,
        recipe="https://github.com/facebookresearch/SlowFast/blob/main/MODEL_ZOO.md",
    )  # fmt: skip
    DEFAULT = KINETICS400_V1


# The 16 blocks of each variant: heads and channels per block; queries pooled (stride 1x2x2) at
# the three stage transitions, keys/values pooled to a fixed 1x8x8 stride over the first stage
# and then less and less.
_P3 = [3, 3, 3]
_HALVE = [1, 2, 2]
_KV_STRIDES = [[1, 8, 8]] + [[1, 4, 4]] * 2 + [[1, 2, 2]] * 11 + [[1, 1, 1]] * 2

_MVIT_V1_B_CONFIG: dict[str, list] = {
    "num_heads": [1, 2, 2, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 8, 8],
    "input_channels": [96] + [192] * 2 + [384] * 11 + [768] * 2,
    "output_channels": [192] * 2 + [384] * 11 + [768] * 3,
    "kernel_q": [[], _P3, [], _P3] + [[]] * 10 + [_P3, []],
    "kernel_kv": [_P3] * 16,
    "stride_q": [[], _HALVE, [], _HALVE] + [[]] * 10 + [_HALVE, []],
    "stride_kv": _KV_STRIDES,
}

_MVIT_V2_S_CONFIG: dict[str, list] = {
    "num_heads": [1, 2, 2, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 8, 8],
    "input_channels": [96] * 2 + [192] * 2 + [384] * 11 + [768],
    "output_channels": [96] + [192] * 2 + [384] * 11 + [768] * 2,
    "kernel_q": [_P3] * 16,
    "kernel_kv": [_P3] * 16,
    "stride_q": [[1, 1, 1], _HALVE, [1, 1, 1], _HALVE] + [[1, 1, 1]] * 10 + [_HALVE, [1, 1, 1]],
    "stride_kv": _KV_STRIDES,
}


@_model_builder("KINETICS400_V1")
def mvit_v1_b(
    *, weights: MViT_V1_B_Weights | None = None, progress: bool = True, **kwargs: Any
) -> MViT:
    """Constructs a base MViTV1 architecture from
    `Multiscale Vision Transformers <https://arxiv.org/abs/2104.11227>`__.
    """
    return _mvit(
        spatial_size=(224, 224),
        temporal_size=16,
        block_setting=_block_setting(_MVIT_V1_B_CONFIG),
        residual_pool=False,
        residual_with_cls_embed=False,
        stochastic_depth_prob=kwargs.pop("stochastic_depth_prob", 0.2),
        weights=weights,
        progress=progress,
        **kwargs,
    )


@_model_builder("KINETICS400_V1")
def mvit_v2_s(
    *, weights: MViT_V2_S_Weights | None = None, progress: bool = True, **kwargs: Any
) -> MViT:
    """Constructs a small MViTV2 architecture from
    `Multiscale Vision Transformers <https://arxiv.org/abs/2104.11227>`__ and
    `MViTv2: Improved Multiscale Vision Transformers for Classification
    and Detection <https://arxiv.org/abs/2112.01526>`__.
    """
    return _mvit(
        spatial_size=(224, 224),
        temporal_size=16,
        block_setting=_block_setting(_MVIT_V2_S_CONFIG),
        residual_pool=True,
        residual_with_cls_embed=False,
        rel_pos_embed=True,
        proj_after_attn=True,
        stochastic_depth_prob=kwargs.pop("stochastic_depth_prob", 0.2),
        weights=weights,
        progress=progress,
        **kwargs,
    )
