"""3-D convolutions (``conv3d``, ``conv_transpose3d``) composed from the 2-D convolution, so autograd (of any
order) and every device come for free.

Depth is handled as an im2col along D: the kd depth taps of each output depth are stacked as channels (group-major,
then tap, then the group's channels), which turns the 3-D convolution into ONE 2-D convolution over N * Dout images
with kd times the channels (weight [Co, kd * C/groups, kh, kw]). A transposed 3-D convolution is the adjoint: one
transposed 2-D convolution produces every (depth position, tap) pair, and a 1-D ``fold`` (col2im along D) adds
each pair into its output depth.
"""
from __future__ import annotations

from ..amp.policy import autocast_lower
from .conv import (
    _check_conv_shapes,
    _conv_any,
    _conv_epilogue,
    _conv_prologue,
    _expand_param,
    _ints,
    _string_padding,
    _window,
)
from .guard import tensor_first
from .joins import stack
from .padding import pad as _pad
from .resample import fold as _fold

__all__ = ["conv3d", "conv_transpose3d"]
FUNCTIONAL = __all__


def _depth_columns(x, kd: int, sd: int, dd: int, pd: tuple, od: int, groups: int):
    """[N, C, D, H, W] -> [N * od, groups * kd * C/groups, H, W]: the kd depth taps of each output depth as channels."""
    n, c, _, h, w = x.shape
    if pd[0] or pd[1]:
        x = _pad(x, (0, 0, 0, 0, pd[0], pd[1]))
    if kd == 1 and sd == 1:
        taps = x.unsqueeze(2)  # [N, C, 1, od, H, W]
    else:
        last = sd * (od - 1) + 1
        taps = stack([x[:, :, t * dd:t * dd + last:sd] for t in range(kd)], 2)  # [N, C, kd, od, H, W]
    taps = taps.reshape(n, groups, c // groups, kd, od, h, w).permute(0, 4, 1, 3, 2, 5, 6)
    return taps.reshape(n * od, groups * kd * (c // groups), h, w)


@autocast_lower
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution of [N, C, D, H, W] (or unbatched [C, D, H, W]) with weight [Co, C/groups, kd, kh, kw].

    >>> F.conv3d(clgrad.ones(1, 2, 4, 5, 5), clgrad.ones(3, 2, 3, 3, 3), padding=1).shape
    clgrad.Size([1, 3, 4, 5, 5])
    """
    x, batched, k = _conv_prologue("conv3d", 3, input, weight, bias, groups)
    stride = _expand_param(_ints(stride, 3), "stride", k)
    dilation = _expand_param(_ints(dilation, 3), "dilation", k)
    before = None
    if isinstance(padding, str):
        before, padding = _string_padding(padding, weight, stride, dilation, k)
    padding = _expand_param(_ints(padding, 3), "padding", k)
    _check_conv_shapes(x, weight, bias, stride, padding, dilation, groups, False, (0,) * k)
    _conv_epilogue("conv3d", x, weight, bias)
    if before is None:
        before = padding
        out = [(n + 2 * p - d * (kk - 1) - 1) // s + 1
               for n, p, d, kk, s in zip(x.shape[2:], padding, dilation, weight.shape[2:], stride)]
    else:
        out = list(x.shape[2:])
    co, cg, kd = weight.shape[:3]
    after = max(0, (out[0] - 1) * stride[0] + dilation[0] * (kd - 1) + 1 - x.shape[2] - before[0])
    cols = _depth_columns(x, kd, stride[0], dilation[0], (before[0], after), out[0], groups)
    w2 = weight.permute(0, 2, 1, 3, 4).reshape(co, kd * cg, *weight.shape[3:])
    win = _window(tuple(weight.shape[3:]), stride[1:], before[1:], dilation[1:], out[1:])
    y = _conv_any(cols, w2, None, win, groups, False, None)  # [N * od, Co, oh, ow]
    y = y.reshape(x.shape[0], out[0], co, out[1], out[2]).permute(0, 2, 1, 3, 4)
    if bias is not None:
        y = y + bias.reshape(co, 1, 1, 1)
    y = y.contiguous()
    return y if batched else y.squeeze(0)


def _transpose_checks(input, weight, bias, stride, padding, output_padding, groups, dilation):
    if isinstance(padding, str):
        raise TypeError("conv_transpose3d(): argument 'padding' must be tuple of ints, not str")
    x, batched, k = _conv_prologue("conv_transpose3d", 3, input, weight, bias, groups)
    stride = _expand_param(_ints(stride, 3), "stride", k)
    padding = _expand_param(_ints(padding, 3), "padding", k)
    dilation = _expand_param(_ints(dilation, 3), "dilation", k)
    output_padding = _expand_param(_ints(output_padding, 3), "output_padding", k)
    _check_conv_shapes(x, weight, bias, stride, padding, dilation, groups, True, output_padding)
    _conv_epilogue("conv_transpose3d", x, weight, bias)
    if not all(o < s or o < d for o, s, d in zip(output_padding, stride, dilation)):
        names = ("depth", "height", "width")
        parts = [f"output_padding_{n}: {o}" for n, o in zip(names, output_padding)]
        parts += [f"stride_{n}: {s}" for n, s in zip(names, stride)]
        parts += [f"dilation_{n}: {d}" for n, d in zip(names, dilation)]
        raise RuntimeError("output padding must be smaller than either stride or dilation, but got " + " ".join(parts))
    size = [(n - 1) * s - 2 * p + d * (kk - 1) + o + 1
            for n, s, p, d, kk, o in zip(x.shape[2:], stride, padding, dilation, weight.shape[2:], output_padding)]
    if any(n < 1 for n in size):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, x.shape[2:]))}). Calculated output "
                           f"size per channel: ({' x '.join(map(str, size))}). Output size is too small")
    return x, batched, stride, padding, dilation, output_padding, size


@autocast_lower
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """3-D transposed convolution (the input gradient of conv3d); weight is [C, Co/groups, kd, kh, kw]."""
    x, batched, stride, padding, dilation, output_padding, size = _transpose_checks(
        input, weight, bias, stride, padding, output_padding, groups, dilation)
    n, cin, d = x.shape[:3]
    cog, kd = weight.shape[1], weight.shape[2]
    co = cog * groups
    # every (input depth, tap) pair through one transposed 2-D convolution: [N * D, groups * kd * Cog, Ho, Wo]
    x2 = x.permute(0, 2, 1, 3, 4).reshape(n * d, cin, *x.shape[3:])
    w2 = weight.permute(0, 2, 1, 3, 4).reshape(cin, kd * cog, *weight.shape[3:])
    win = _window(tuple(weight.shape[3:]), stride[1:], padding[1:], dilation[1:], tuple(x.shape[3:]))
    y = _conv_any(x2, w2, None, win, groups, True, tuple(size[1:]))
    ho, wo = size[1:]
    # col2im along depth: columns [N, (groups, Cog, Ho, Wo, kd), D] folded into the output depth
    cols = y.reshape(n, d, groups, kd, cog, ho, wo).permute(0, 2, 4, 5, 6, 3, 1).reshape(n, co * ho * wo * kd, d)
    # fold to the full length, then crop: output_padding can reveal positions that padding crops
    full = (d - 1) * stride[0] + dilation[0] * (kd - 1) + 1
    out = _fold(cols, (full, 1), (kd, 1), dilation=(dilation[0], 1), stride=(stride[0], 1))  # [N, Co*Ho*Wo, full, 1]
    out = out.reshape(n, co, ho, wo, full).permute(0, 1, 4, 2, 3)
    keep = min(size[0], full - padding[0])
    out = out[:, :, padding[0]:padding[0] + keep]
    if keep < size[0]:
        out = _pad(out, (0, 0, 0, 0, 0, size[0] - keep))
    if bias is not None:
        out = out + bias.reshape(co, 1, 1, 1)
    out = out.contiguous()
    return out if batched else out.squeeze(0)


def install(T) -> None:
    """PyTorch has none of these as Tensor methods."""


tensor_first(globals(), FUNCTIONAL)
