"""Convolutions with few output positions per image, as ONE product over the whole batch ("folded").

conv.py's products run per image: [Co, taps] @ im2col(x[n]) [taps, L] for L = oh * ow output positions. Deep
layers of image networks have few positions (ResNet-18 at 32x32 ends at 1x1), and a product whose N is 1-16 wastes
most of a 64-wide matmul tile: a 3x3 conv of 512 channels on 1x1 ran at 3.5 GFLOP/s on PoCL, 130 ms per training
step for one layer. Here the batch folds into the rows instead, (image, position) pairs against the taps:

    forward        Y [N*L, Co]   = colsT [N*L, taps] @ W^T [taps, Co],   out[n, c, l] = Y[n*L + l, c]
    weight grad    dW [Co, taps] = G^T [Co, N*L] @ colsT [N*L, taps],    G[n*L + l, c] = gy[n, c, l]
    input grad     dcolsT [N*L, taps] = G [N*L, Co] @ W [Co, taps],      then col2im

where colsT is im2col(x) with its last two dims swapped. The swaps are copies of size N * L * (taps or Co),
small where folding pays; with L = 1 they are views. Groups stay on conv.py's per-group products.
"""
from __future__ import annotations

from .. import backends
from ..backends.cpu_conv import Window
from ..tensor import Tensor
from . import shape as S

FOLD_POSITIONS = 32  # at most this many output positions per image: fold the batch into the product's rows


def folds(win: Window, groups: int) -> bool:
    """Whether a convolution with this window takes the folded products."""
    return groups == 1 and win.oh * win.ow <= FOLD_POSITIONS


def _empty(shape, like):
    return Tensor._empty(shape, like.dtype, like.device)


def _rows(t3):
    """[N, K, L] (any strides) as a contiguous [N * L, K]: row n * L + l holds t3[n, :, l]."""
    n, k, length = t3.shape
    rows = S.permute(t3, 0, 2, 1).contiguous()
    return rows._view((n * length, k), (k, 1), rows._offset)


def _product(out_rows: int, a, b, like):
    """a [R, K] @ b [K, C] (any strides) into a new contiguous [R, C], through the batched matmul primitive."""
    out = _empty((1, out_rows, b.shape[1]), like)
    a3 = a._view((1,) + tuple(a.shape), (0,) + tuple(a._strides), a._offset)
    b3 = b._view((1,) + tuple(b.shape), (0,) + tuple(b._strides), b._offset)
    backends.get(like.device).matmul(out, a3, b3)
    return out._view(tuple(out.shape[1:]), (out.shape[2], 1), out._offset)


def _t(m):
    """The transpose of a 2-D tensor, as a view."""
    return m._view((m.shape[1], m.shape[0]), (m._strides[1], m._strides[0]), m._offset)


def columns(x4, win: Window, columns_fn):
    """colsT: im2col(x4) (``columns_fn``, conv.py's) as [N * L, taps]."""
    return _rows(columns_fn(x4, win))


def conv(x4, w4, win: Window, columns_fn):
    """(out [N, Co, oh, ow] contiguous, colsT) of conv(x4, w4) without bias."""
    n, co = x4.shape[0], w4.shape[0]
    length = win.oh * win.ow
    cols_t = columns(x4, win, columns_fn)
    y = _product(n * length, cols_t, _t(S.reshape(w4, co, cols_t.shape[1])), x4)
    planes = y._view((n, co, length), (length * co, 1, co), y._offset).contiguous()
    return planes._view((n, co, win.oh, win.ow), (co * length, length, win.ow, 1), planes._offset), cols_t


def weight(x4, g4, win: Window, columns_fn, cols_t=None):
    """dW [Co, taps] = sum over images and positions of gy x im2col(x) (``cols_t``: the forward's colsT)."""
    n, co = g4.shape[:2]
    g = _rows(S.reshape(g4, n, co, win.oh * win.ow))
    cols_t = columns(x4, win, columns_fn) if cols_t is None else cols_t
    return _product(co, _t(g), cols_t, x4)


def transposed(out, x4, w4, win: Window) -> None:
    """out [N, Co', h, w] = conv_transpose(x4 [N, Cin, oh, ow], w4 [Cin, Co', kh, kw]) without bias: the columns
    X [N * L, Cin] @ W [Cin, Co' * kh * kw], then col2im."""
    n, cin = x4.shape[:2]
    length = win.oh * win.ow
    taps = w4.shape[1] * win.kh * win.kw
    dcols = _product(n * length, _rows(S.reshape(x4, n, cin, length)), S.reshape(w4, cin, taps), x4)
    cols = dcols._view((n, taps, length), (length * taps, 1, taps), dcols._offset).contiguous()
    backends.get(out.device).col2im(out, cols, win)
