"""Feature Pyramid Network (https://arxiv.org/abs/1612.03144), as in
``torchvision.ops.feature_pyramid_network``."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

from ember import Tensor, nn
from ember.nn import functional as F

from .misc import Conv2dNormActivation

__all__ = ["ExtraFPNBlock", "FeaturePyramidNetwork", "LastLevelMaxPool", "LastLevelP6P7"]


class ExtraFPNBlock(nn.Module):
    """Base class of the extra blocks after an FPN: ``forward(results, x, names)`` takes the
    FPN's outputs, the original feature maps and their names and returns the extended
    ``(results, names)``."""

    def forward(
        self, results: list[Tensor], x: list[Tensor], names: list[str]
    ) -> tuple[list[Tensor], list[str]]:
        pass


class FeaturePyramidNetwork(nn.Module):
    """An FPN over feature maps given as an ``OrderedDict`` in increasing depth: each level is
    a 1x1 lateral conv (``inner_blocks``) plus the upsampled coarser level, then a 3x3 conv
    (``layer_blocks``) to ``out_channels``; returns an ``OrderedDict`` with the same names,
    highest resolution first (plus what ``extra_blocks`` adds)."""

    _version = 2

    def __init__(
        self,
        in_channels_list: list[int],
        out_channels: int,
        extra_blocks: ExtraFPNBlock | None = None,
        norm_layer: Callable[..., nn.Module] | None = None,
    ):
        super().__init__()
        self.inner_blocks = nn.ModuleList()
        self.layer_blocks = nn.ModuleList()
        for in_channels in in_channels_list:
            if in_channels == 0:
                raise ValueError("in_channels=0 is currently not supported")
            inner_block_module = Conv2dNormActivation(
                in_channels, out_channels, kernel_size=1, padding=0, norm_layer=norm_layer,
                activation_layer=None,
            )
            layer_block_module = Conv2dNormActivation(
                out_channels, out_channels, kernel_size=3, norm_layer=norm_layer,
                activation_layer=None,
            )
            self.inner_blocks.append(inner_block_module)
            self.layer_blocks.append(layer_block_module)
        # initialize parameters now to avoid modifying the initialization of top_blocks
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_uniform_(m.weight, a=1)
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)
        if extra_blocks is not None:
            if not isinstance(extra_blocks, ExtraFPNBlock):
                raise TypeError(
                    f"extra_blocks should be of type ExtraFPNBlock not {type(extra_blocks)}"
                )
        self.extra_blocks = extra_blocks

    def _load_from_state_dict(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ):
        # version 1 checkpoints hold bare convs: "inner_blocks.0.weight" is now "...0.0.weight"
        version = local_metadata.get("version", None)
        if version is None or version < 2:
            num_blocks = len(self.inner_blocks)
            for block in ["inner_blocks", "layer_blocks"]:
                for i in range(num_blocks):
                    for kind in ["weight", "bias"]:
                        old_key = f"{prefix}{block}.{i}.{kind}"
                        new_key = f"{prefix}{block}.{i}.0.{kind}"
                        if old_key in state_dict:
                            state_dict[new_key] = state_dict.pop(old_key)
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )

    def get_result_from_inner_blocks(self, x: Tensor, idx: int) -> Tensor:
        """``self.inner_blocks[idx](x)``."""
        return self.inner_blocks[idx](x)

    def get_result_from_layer_blocks(self, x: Tensor, idx: int) -> Tensor:
        """``self.layer_blocks[idx](x)``."""
        return self.layer_blocks[idx](x)

    def forward(self, x: dict[str, Tensor]) -> dict[str, Tensor]:
        """The FPN of the feature maps ``x`` (``OrderedDict`` name -> ``Tensor``)."""
        names = list(x.keys())
        x = list(x.values())
        last_inner = self.get_result_from_inner_blocks(x[-1], -1)
        results = [self.get_result_from_layer_blocks(last_inner, -1)]
        for idx in range(len(x) - 2, -1, -1):
            inner_lateral = self.get_result_from_inner_blocks(x[idx], idx)
            feat_shape = inner_lateral.shape[-2:]
            inner_top_down = F.interpolate(last_inner, size=feat_shape, mode="nearest")
            last_inner = inner_lateral + inner_top_down
            results.insert(0, self.get_result_from_layer_blocks(last_inner, idx))
        if self.extra_blocks is not None:
            results, names = self.extra_blocks(results, x, names)
        return OrderedDict(list(zip(names, results)))


class LastLevelMaxPool(ExtraFPNBlock):
    """Adds ``"pool"``: the last FPN level subsampled by 2 (a 1x1 max pool of stride 2)."""

    def forward(
        self, x: list[Tensor], y: list[Tensor], names: list[str]
    ) -> tuple[list[Tensor], list[str]]:
        names.append("pool")
        x.append(F.max_pool2d(x[-1], kernel_size=1, stride=2, padding=0))
        return x, names


class LastLevelP6P7(ExtraFPNBlock):
    """RetinaNet's extra levels ``"p6"`` and ``"p7"``: 3x3 stride-2 convs on P5 (when
    ``in_channels == out_channels``) or on C5, the second after a ReLU."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.p6 = nn.Conv2d(in_channels, out_channels, 3, 2, 1)
        self.p7 = nn.Conv2d(out_channels, out_channels, 3, 2, 1)
        for module in [self.p6, self.p7]:
            nn.init.kaiming_uniform_(module.weight, a=1)
            nn.init.constant_(module.bias, 0)
        self.use_P5 = in_channels == out_channels

    def forward(
        self, p: list[Tensor], c: list[Tensor], names: list[str]
    ) -> tuple[list[Tensor], list[str]]:
        p5, c5 = p[-1], c[-1]
        x = p5 if self.use_P5 else c5
        p6 = self.p6(x)
        p7 = self.p7(F.relu(p6))
        p.extend([p6, p7])
        names.extend(["p6", "p7"])
        return p, names
