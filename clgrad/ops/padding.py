"""``F.pad``: constant, reflect, replicate and circular padding, composed from views, copies and cat."""
from __future__ import annotations

from ..autograd.function import Function
from ..autograd.graph import needs_graph
from . import pointwise as P
from . import shape as S
from .guard import tensor_first
from .joins import _copy, _new, cat
from .rearrange import _flip_view, flip

FUNCTIONAL = ["pad"]


# ---- F.pad ---------------------------------------------------------------------------------------

_NOT_SUPPORTED = (
    "Padding size {} is not supported for {}D input tensor.\nSupported combinations for non-constant padding:\n"
    "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
    "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
    "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"
)


def _pad_dims(x, pad):
    """(dim, left, right) for each padded dim: the pad tuple lists the last dim first."""
    return [(x.dim() - 1 - i, pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)]


def _one_dim_pad(x, d, left, right) -> tuple:
    """A ``pad`` tuple that pads only dim ``d``."""
    pad = [0] * (2 * (x.dim() - d))
    pad[-2:] = [left, right]
    return tuple(pad)


def pad(input, pad, mode="constant", value=None):
    """Pad the last dims (``pad`` lists the last dim first: (left, right, top, bottom, ...)); ``constant``
    (negative amounts crop), ``reflect``, ``replicate`` or ``circular``: ``F.pad(x, (1, 1), value=0.5)``."""
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.dim():
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input dimension but got padding length "
            f"{len(pad)} and input of dimension {input.dim()}"
        )
    if mode == "constant":
        return _constant_pad(input, pad, 0 if value is None else value)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    k = len(pad) // 2
    if input.dim() not in (k + 1, k + 2):
        raise NotImplementedError(_NOT_SUPPORTED.format(len(pad), input.dim()))
    if mode == "circular":
        return _circular_pad(input, pad)
    _check_mode_pad(mode, input, pad)
    if needs_graph(input):
        return MODE_PADS[(mode, k)].apply(input, pad)
    return _mode_pad(mode, input, pad)


def _constant_pad(x, pad, value):
    if needs_graph(x):
        return ConstantPadNd.apply(x, pad, value)
    shape, src, place = list(x._shape), x, []
    for d, left, right in _pad_dims(x, pad):
        crop_l, crop_r = max(-left, 0), max(-right, 0)
        src = S.narrow(src, d, crop_l, x._shape[d] - crop_l - crop_r)  # raises for over-cropping
        shape[d] = x._shape[d] + left + right
        place.append((d, max(left, 0), src._shape[d]))
    out = _new(shape, x.dtype, x.device)
    if out.numel() != src.numel():
        P.fill(out, value)
    dst = out
    for d, start, n in place:
        dst = S.narrow(dst, d, start, n)
    _copy(dst, src)
    return out


class ConstantPadNd(Function):
    node_name = "ConstantPadNdBackward0"

    @staticmethod
    def forward(ctx, x, pad, value):
        ctx.pad = pad
        return _constant_pad(x, pad, value)

    @staticmethod
    def backward(ctx, grad):
        return _constant_pad(grad, tuple(-p for p in ctx.pad), 0), None, None


def _check_mode_pad(mode, x, pad):
    k = len(pad) // 2
    batch = x.dim() == k + 2
    if any(n == 0 for n in x._shape[1 if batch else 0 :]):
        raise RuntimeError(
            f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 batch size and other non-zero "
            f"dimensions for input, but got: {list(x._shape)}"
        )
    for i, (d, left, right) in enumerate(_pad_dims(x, pad)):
        if mode == "reflect" and (left >= x._shape[d] or right >= x._shape[d]):
            raise RuntimeError(
                f"Argument #{4 + 2 * i}: Padding size should be less than the corresponding input dimension, but got: "
                f"padding ({left}, {right}) at dimension {d} of input {list(x._shape)}"
            )
    dims = _pad_dims(x, pad)[::-1]
    out = [x._shape[d] + left + right for d, left, right in dims]
    if min(out) < 1:
        names = "DHW"[3 - k :]
        raise RuntimeError(
            "input (" + ", ".join(f"{c}: {x._shape[d]}" for c, (d, _, _) in zip(names, dims)) + ") is too small. "
            "Calculated output " + " ".join(f"{c}: {n}" for c, n in zip(names, out))
        )


def _edge(mode, x, d, side, count):
    """The view whose values fill ``count`` padded positions on ``side`` of dim ``d``."""
    n = x._shape[d]
    if mode == "replicate":  # one edge slice, broadcast by the copy
        return S.narrow(x, d, 0 if side == "left" else n - 1, 1)
    return _flip_view(S.narrow(x, d, 1 if side == "left" else n - 1 - count, count), [d])


def _mode_pad(mode, x, pad):
    """reflect/replicate: pad each dim by its positive amounts (one new tensor per dim), then crop negatives
    (PyTorch reflects the uncropped input)."""
    src = x
    for d, left, right in _pad_dims(x, pad):
        left_p, right_p, n = max(left, 0), max(right, 0), src._shape[d]
        shape = list(src._shape)
        shape[d] = n + left_p + right_p
        out = _new(shape, x.dtype, x.device)
        _copy(S.narrow(out, d, left_p, n), src)
        if left_p:
            _copy(S.narrow(out, d, 0, left_p), _edge(mode, src, d, "left", left_p))
        if right_p:
            _copy(S.narrow(out, d, left_p + n, right_p), _edge(mode, src, d, "right", right_p))
        src = out
    if any(p < 0 for p in pad):
        src = _constant_pad(src, tuple(min(p, 0) for p in pad), 0)
    return src


def _mode_unpad(mode, grad, shape, pad):
    """The gradient of ``_mode_pad``, in differentiable ops: each border slice is folded back (flipped for
    reflect, summed for replicate) onto the elements it copied, placed by zero padding."""
    g = _constant_pad(grad, tuple(-min(p, 0) for p in pad), 0) if any(p < 0 for p in pad) else grad
    for d, left, right in reversed(_pad_dims(g, pad)):
        left, right, n = max(left, 0), max(right, 0), shape[d]
        parts = [g.narrow(d, left, n)]
        for side, start, count in (("left", 0, left), ("right", left + n, right)):
            if not count:
                continue
            piece = g.narrow(d, start, count)
            if mode == "reflect":
                at = 1 if side == "left" else n - 1 - count
                piece = flip(piece, (d,))
            else:
                at = 0 if side == "left" else n - 1
                piece = piece.sum(d, keepdim=True)
            parts.append(_constant_pad(piece, _one_dim_pad(piece, d, at, n - at - piece.shape[d]), 0))
        g = parts[0]
        for p in parts[1:]:
            g = g + p
    return g


def _mode_function(mode, k):
    def forward(ctx, x, pad):
        ctx.shape, ctx.pad = x._shape, pad
        return _mode_pad(mode, x, pad)

    def backward(ctx, grad):
        return _mode_unpad(mode, grad, ctx.shape, ctx.pad), None

    title = {"reflect": "ReflectionPad", "replicate": "ReplicationPad"}[mode] + f"{k}D"
    return type(title, (Function,), {"node_name": f"{title}Backward0", "forward": staticmethod(forward),
                                     "backward": staticmethod(backward)})


MODE_PADS = {(mode, k): _mode_function(mode, k) for mode in ("reflect", "replicate") for k in (1, 2, 3)}


def _circular_pad(x, pad):
    """Crop negative amounts, then wrap around: a composition of narrow and cat (differentiable as is)."""
    for d, left, right in _pad_dims(x, pad):
        n = x.shape[d]
        if left > n or right > n:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        crop_l, crop_r = max(-left, 0), max(-right, 0)
        if crop_l or crop_r:
            x = x.narrow(d, crop_l, n - crop_l - crop_r)
        n, left, right = x.shape[d], max(left, 0), max(right, 0)
        if left > n or right > n:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        x = cat([x.narrow(d, n - left, left), x, x.narrow(d, 0, right)], d)
    return x


# a list or a number where a tensor belongs raises PyTorch's TypeError (see guard.py)
tensor_first(globals(), FUNCTIONAL)
