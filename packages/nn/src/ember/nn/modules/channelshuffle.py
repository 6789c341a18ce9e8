"""``ChannelShuffle`` (``torch.nn.modules.channelshuffle``)."""

from __future__ import annotations

from ember import Tensor

from .. import functional as F
from .module import Module

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    """Divide the channels of ``(N, C, *)`` into ``groups`` and interleave them (ShuffleNet):
    ``(N, g, C / g, *)`` becomes ``(N, C / g, g, *)``, flattened back to ``(N, C, *)``."""

    __constants__ = ["groups"]

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
