"""Separable resampling as small matrix products: ``interpolate``'s 'nearest-exact', 'bicubic', 'trilinear',
3-D 'nearest' and 'area' (and ``adaptive_avg_pool3d``).

Every one of these modes is separable: output[o1, o2, o3] is a weighted sum of inputs whose weight is the product
of one weight per axis. So each spatial axis is one [out, in] matrix W, built on the host exactly as PyTorch's cpu
kernels compute their source indices and weights (same float types, same clamping), and applied as
``x.transpose(axis, -1) @ W^T``, with no kernel of its own. Each mode is one linear Function with PyTorch's node
name (``UpsampleBicubic2DBackward0``...) whose backward is the adjoint product (W applied to the gradient) and
whose adjoint's backward is the op again, so gradients of any order exist (as for the 2-D kernels in pooling.py).
A matrix is out x in, so it stays small for image sizes.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..backends.cpu_conv import interp_table
from . import pooling as Pool
from .creation import tensor
from .linalg import matmul

CUBIC_A = -0.75  # PyTorch's (and OpenCV's) bicubic convolution constant


def _scale_value(scale, size: int, out: int, t):
    """compute_scales_value: 1 / scale_factor when given, else in / out, in the float type ``t``."""
    return t(1.0 / scale) if scale is not None and scale > 0 else t(size) / t(out)


def _nearest_exact(size: int, out: int, scale) -> np.ndarray:
    s = np.float64(_scale_value(scale, size, out, np.float32))  # a float scale times a double (dst + 0.5)
    src = np.floor(((np.arange(out) + 0.5) * s).astype(np.float32)).astype(np.int64)
    return np.minimum(src, size - 1)


def _one_hot(index: np.ndarray, size: int, acc) -> np.ndarray:
    w = np.zeros((len(index), size), acc)
    w[np.arange(len(index)), index] = 1
    return w


def _cubic_weights(t: np.ndarray) -> np.ndarray:
    """The four cubic-convolution weights of the inputs at floor - 1 .. floor + 2, for fractions t: [out, 4]."""
    a = t.dtype.type(CUBIC_A)

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    one = t.dtype.type(1)
    return np.stack([far(t + one), near(t), near(one - t), far(2 * one - t)], axis=1)


def _bicubic(size: int, out: int, scale, align_corners: bool, acc) -> np.ndarray:
    t = np.dtype(acc).type
    dst = np.arange(out).astype(acc)
    if align_corners:
        s = t(size - 1) / t(out - 1) if out > 1 else t(0)
        real = s * dst
    else:  # no clamping at 0 for cubic
        real = _scale_value(scale, size, out, t) * (dst + t(0.5)) - t(0.5)
    i0 = np.minimum(np.floor(real.astype(np.float32)).astype(np.int64), size - 1)
    lam = np.clip(real - i0.astype(acc), t(0), t(1)).astype(acc)
    w = np.zeros((out, size), acc)
    rows = np.arange(out)
    for j, wj in enumerate(_cubic_weights(lam).T):  # indices outside the input read its border
        np.add.at(w, (rows, np.clip(i0 - 1 + j, 0, size - 1)), wj)
    return w


def _area(size: int, out: int, acc) -> np.ndarray:
    """Adaptive average pooling along one axis: bin i averages inputs floor(i*in/out) .. ceil((i+1)*in/out) - 1."""
    w = np.zeros((out, size), acc)
    for i in range(out):
        lo, hi = (i * size) // out, -(-((i + 1) * size) // out)
        w[i, lo:hi] = 1.0 / (hi - lo)
    return w


def _linear(size: int, out: int, scale, align_corners: bool, acc) -> np.ndarray:
    tab = interp_table(size, out, scale, True, align_corners, acc)
    w = np.zeros((out, size), acc)
    rows = np.arange(out)
    np.add.at(w, (rows, tab.i0), tab.l0)
    np.add.at(w, (rows, tab.i1), tab.l1)
    return w


@lru_cache(maxsize=256)
def axis_matrix(mode: str, size: int, out: int, scale, align_corners: bool, acc: str) -> np.ndarray | None:
    """The [out, size] weights of one axis (None where the axis is copied unchanged). Cached; read-only."""
    if mode == "nearest":
        tab = interp_table(size, out, scale, False, False, acc)
        w = None if out == size else _one_hot(tab.i0, size, acc)
    elif mode == "nearest-exact":
        w = _one_hot(_nearest_exact(size, out, scale), size, acc)
    elif mode == "bicubic":
        w = _bicubic(size, out, scale, align_corners, acc)
    elif mode == "area":
        w = None if out == size else _area(size, out, acc)
    else:  # linear, bilinear, trilinear
        w = _linear(size, out, scale, align_corners, acc)
    if w is not None:
        w.flags.writeable = False
    return w


def _apply(t, mats, adjoint: bool):
    """``t`` with each (axis, W) of ``mats`` applied along its axis (negative: counted from the end): W, or W^T in
    reverse order (the adjoint)."""
    y = t
    for axis, w in reversed(mats) if adjoint else mats:
        m = tensor(w if adjoint else w.T, dtype=t.dtype, device=t.device)
        y = matmul(y.transpose(axis, -1), m).transpose(axis, -1)
    return y.contiguous() if y is not t else t.clone()


def _forward_raw(t, out_shape, mats):
    return _apply(t, mats, False)


def _adjoint_raw(g, in_shape, mats):
    return _apply(g, mats, True)


# one Function per PyTorch node name; each backward is the adjoint product, whose backward is the op again
NODES = {name: Pool._linear_pair(name, _forward_raw, _adjoint_raw)[0]
         for name in ("UpsampleNearestExact1D", "UpsampleNearestExact2D", "UpsampleNearestExact3D",
                      "UpsampleNearest3D", "UpsampleBicubic2D", "UpsampleTrilinear3D", "AdaptiveAvgPool3D")}
_NODE_OF = {"nearest-exact": "UpsampleNearestExact", "nearest": "UpsampleNearest", "bicubic": "UpsampleBicubic",
            "trilinear": "UpsampleTrilinear"}


def separable(x, mode: str, out_sizes, scales, align_corners: bool):
    """``x`` [..., *spatial] resampled to ``out_sizes`` (the trailing spatial dims) one axis at a time, each a
    matrix product."""
    acc = "float64" if x.dtype.itemsize == 8 else "float32"
    n = len(out_sizes)
    order = sorted(range(n), key=lambda k: out_sizes[k] / x.shape[k - n])  # shrink first: less work
    mats = tuple((k - n, w) for k in order
                 if (w := axis_matrix(mode, x.shape[k - n], out_sizes[k], scales[k], bool(align_corners), acc))
                 is not None)
    node = "AdaptiveAvgPool3D" if mode == "area" else f"{_NODE_OF[mode]}{n}D"
    return NODES[node].run(x, tuple(x.shape[:-n]) + tuple(out_sizes), mats)
