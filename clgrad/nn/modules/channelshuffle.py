"""ChannelShuffle: a module over ``F.channel_shuffle``."""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    """Splits the C channels of (N, C, *) into ``groups`` groups and interleaves them: ``nn.ChannelShuffle(2)``."""

    def __init__(self, groups: int):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
