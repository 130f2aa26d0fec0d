"""Convolutions with few output positions per image, as ONE product over the whole batch ("folded").

conv.py's products run per image: [Co, taps] @ im2col(x[n]) [taps, L] for L = oh * ow output positions. Deep
layers of image networks have few positions (ResNet-18 at 32x32 ends at 1x1), and a product whose N is 1-16 wastes
most of a 64-wide matmul tile: a 3x3 conv of 512 channels on 1x1 ran at 3.5 GFLOP/s on PoCL, 130 ms per training
step for one layer. Here the batch folds into the product instead, as (image, position) pairs. im2col writes the
column matrix in whichever layout the product reads fastest (its output may have any strides), so no product
operand needs a transposed copy:

    forward        Y [Co, N*L]      = W [Co, taps] @ cols [taps, N*L],        out[n, c, l] = Y[c, n*L + l]
    weight grad    dW [Co, taps]    = G [Co, N*L] @ rows [N*L, taps],         G[c, n*L + l] = gy[n, c, l]
    input grad     drows [N*L, taps] = Gr [N*L, Co] @ W [Co, taps],           then col2im from drows

where cols and rows are im2col(x) as [taps, N, L] and [N, L, taps]. Each layout has both operands with a unit
stride along the dims the matmul kernel copies vector-wise (on PoCL these forms ran 1.3-2x faster than the same
products with a transposed operand). The remaining copies (gy and the output between [N, Co, L] and [Co, N, L]
or [N, L, Co]) are the size of the activations, not of the column matrix. Groups stay on conv.py's per-group
products.
"""
from __future__ import annotations

from .. import backends
from ..backends.cpu_conv import Window
from ..tensor import Tensor
from . import linalg
from . import shape as S

FOLD_POSITIONS = 32  # at most this many output positions per image: fold the batch into the product


def folds(win: Window, groups: int) -> bool:
    """Whether a convolution with this window takes the folded products."""
    return groups == 1 and win.oh * win.ow <= FOLD_POSITIONS


def _empty(shape, like):
    return Tensor._empty(shape, like.dtype, like.device)


def _product(a, b):
    """a [R, K] @ b [K, C] (any strides) into a new contiguous [R, C] (linalg's product of batched views)."""
    out = linalg._product("conv2d", *(t._view((1,) + tuple(t.shape), (0,) + tuple(t._strides), t._offset)
                                      for t in (a, b)))
    return out._view(tuple(out.shape[1:]), (out.shape[2], 1), out._offset)


def _columns(x4, win: Window, rows: bool):
    """im2col(x4) as a contiguous [N*L, taps] (``rows``) or [taps, N*L]."""
    n, c = x4.shape[:2]
    taps, length = c * win.kh * win.kw, win.oh * win.ow
    if rows:
        m = _empty((n * length, taps), x4)
        strides = (length * taps, 1, taps)
    else:
        m = _empty((taps, n * length), x4)
        strides = (length, n * length, 1)
    backends.get(x4.device).im2col(m._view((n, taps, length), strides, m._offset), x4, win)
    return m


def _matrix(t3, order):
    """A contiguous copy of [N, C, L] ``t3`` as [C, N*L] (order "cn") or [N*L, C] ("nc")."""
    n, c, length = t3.shape
    perm = (1, 0, 2) if order == "cn" else (0, 2, 1)
    m = S.permute(t3, *perm).contiguous()
    shape = (c, n * length) if order == "cn" else (n * length, c)
    return m._view(shape, (shape[1], 1), m._offset)


def conv(x4, w4, win: Window):
    """out [N, Co, oh, ow] (contiguous) = conv(x4, w4), without bias."""
    n, co = x4.shape[0], w4.shape[0]
    length = win.oh * win.ow
    cols = _columns(x4, win, rows=False)
    y = _product(S.reshape(w4, co, cols.shape[0]), cols)
    out = y._view((n, co, length), (length, n * length, 1), y._offset).contiguous()
    return out._view((n, co, win.oh, win.ow), (co * length, length, win.ow, 1), out._offset)


def weight(x4, g4, win: Window):
    """dW [Co, taps] = the sum over images and positions of gy x im2col(x)."""
    n, co = g4.shape[:2]
    g = _matrix(S.reshape(g4, n, co, win.oh * win.ow), "cn")
    return _product(g, _columns(x4, win, rows=True))


def transposed(out, x4, w4, win: Window) -> None:
    """out [N, Co', h, w] = conv_transpose(x4 [N, Cin, oh, ow], w4 [Cin, Co', kh, kw]) without bias: the columns
    X [N*L, Cin] @ W [Cin, Co' * kh * kw] as [N, L, taps], then col2im."""
    n, cin = x4.shape[:2]
    length = win.oh * win.ow
    taps = w4.shape[1] * win.kh * win.kw
    drows = _product(_matrix(S.reshape(x4, n, cin, length), "nc"), S.reshape(w4, cin, taps))
    cols = drows._view((n, taps, length), (length * taps, 1, taps), drows._offset)
    backends.get(out.device).col2im(out, cols, win)
