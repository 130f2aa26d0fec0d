"""Rearranging channels and pixels: ``pixel_shuffle``, ``pixel_unshuffle``, ``channel_shuffle``.

Each is a reshape that splits a dim (a view of a contiguous input), a permute (a view) and one copy into a fresh
contiguous tensor. Each is one autograd node with PyTorch's name whose backward is the inverse rearrangement, so
double backward works: pixel_shuffle and pixel_unshuffle undo each other, and shuffling C channels in ``g`` groups
is undone by shuffling them in ``C // g`` groups.
"""
from __future__ import annotations

from numbers import Integral

from ..autograd.function import Function
from ..autograd.graph import needs_graph
from . import shape as S
from .guard import tensor_first
from .joins import _fresh

__all__ = ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle"]
FUNCTIONAL = list(__all__)


def _factor(fn: str, name: str, value) -> int:
    if not isinstance(value, Integral) or isinstance(value, bool):
        raise TypeError(f"{fn}(): argument '{name}' (position 2) must be int, not {type(value).__name__}")
    if value <= 0:
        raise RuntimeError(f"{fn} expects a positive {name}, but got {value}")
    return int(value)


def _rearrange(x, split: tuple, perm: tuple, out_shape: tuple):
    """``x`` viewed as ``split``, permuted by ``perm`` and copied out contiguous as ``out_shape``."""
    return S.reshape(_fresh(S.permute(S.reshape(x, split), perm)), out_shape)


def _check_3d(fn: str, x) -> None:
    if x.dim() < 3:
        raise RuntimeError(f"{fn} expects input to have at least 3 dimensions, but got input with {x.dim()} "
                           "dimension(s)")


# ---- pixel_shuffle / pixel_unshuffle --------------------------------------------------------------


def pixel_shuffle(input, upscale_factor):
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r): sub-pixel convolution's upsampling step.

    >>> F.pixel_shuffle(clgrad.zeros(1, 9, 4, 4), 3).shape  # (1, 1, 12, 12)
    """
    r = _factor("pixel_shuffle", "upscale_factor", upscale_factor)
    _check_3d("pixel_shuffle", input)
    c = input.shape[-3]
    if c % (r * r):
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    if needs_graph(input):
        return PixelShuffle.apply(input, r)
    return _pixel_shuffle(input, r)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W): the inverse of ``pixel_shuffle``.

    >>> F.pixel_unshuffle(clgrad.zeros(1, 1, 12, 12), 3).shape  # (1, 9, 4, 4)
    """
    r = _factor("pixel_unshuffle", "downscale_factor", downscale_factor)
    _check_3d("pixel_unshuffle", input)
    for dim, what in ((-2, "height"), (-1, "width")):
        if input.shape[dim] % r:
            raise RuntimeError(f"pixel_unshuffle expects {what} to be divisible by downscale_factor, but "
                               f"input.size({dim})={input.shape[dim]} is not divisible by {r}")
    if needs_graph(input):
        return PixelUnshuffle.apply(input, r)
    return _pixel_unshuffle(input, r)


def _pixel_shuffle(x, r: int):
    *batch, c, h, w = x.shape
    b, oc = len(batch), c // (r * r)
    perm = tuple(range(b)) + (b, b + 3, b + 1, b + 4, b + 2)
    return _rearrange(x, (*batch, oc, r, r, h, w), perm, (*batch, oc, h * r, w * r))


def _pixel_unshuffle(x, r: int):
    *batch, c, h, w = x.shape
    b, oh, ow = len(batch), h // r, w // r
    perm = tuple(range(b)) + (b, b + 2, b + 4, b + 1, b + 3)
    return _rearrange(x, (*batch, c, oh, r, ow, r), perm, (*batch, c * r * r, oh, ow))


class PixelShuffle(Function):
    node_name = "PixelShuffleBackward0"

    @staticmethod
    def forward(ctx, x, r):
        ctx.r = r
        return _pixel_shuffle(x, r)

    @staticmethod
    def backward(ctx, grad):
        return pixel_unshuffle(grad, ctx.r), None


class PixelUnshuffle(Function):
    node_name = "PixelUnshuffleBackward0"

    @staticmethod
    def forward(ctx, x, r):
        ctx.r = r
        return _pixel_unshuffle(x, r)

    @staticmethod
    def backward(ctx, grad):
        return pixel_shuffle(grad, ctx.r), None


# ---- channel_shuffle --------------------------------------------------------------------------------


def channel_shuffle(input, groups):
    """(N, C, *) with the C channels split into ``groups`` groups, interleaved: ShuffleNet's channel shuffle.

    >>> F.channel_shuffle(clgrad.arange(6.0).reshape(1, 6, 1), 3).flatten()  # [0, 2, 4, 1, 3, 5]
    """
    if not isinstance(groups, Integral) or isinstance(groups, bool):
        raise TypeError(f"channel_shuffle(): argument 'groups' (position 2) must be int, not {type(groups).__name__}")
    if input.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    c = input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    if needs_graph(input):
        return ChannelShuffle.apply(input, int(groups))
    return _channel_shuffle(input, int(groups))


def _channel_shuffle(x, g: int):
    n, c, *rest = x.shape
    perm = (0, 2, 1) + tuple(range(3, x.dim() + 1))
    return _rearrange(x, (n, g, c // g, *rest), perm, tuple(x.shape))


class ChannelShuffle(Function):
    node_name = "ChannelShuffleBackward0"

    @staticmethod
    def forward(ctx, x, g):
        ctx.g = g
        return _channel_shuffle(x, g)

    @staticmethod
    def backward(ctx, grad):
        return channel_shuffle(grad, grad.shape[1] // ctx.g), None


# a list or a number where a tensor belongs raises PyTorch's TypeError (see guard.py)
tensor_first(globals(), __all__)
