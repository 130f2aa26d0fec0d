"""cpu implementation of the ``conv`` primitives (an op family of CPUBackend): the numpy reference for
im2col/col2im (convolution through matmul), pooling and interpolation, each with its backward.

Every primitive works on 4-D [N, C, H, W] tensors (1-D ops add H = 1); inputs may have any strides, outputs are
contiguous. Arithmetic follows the OpenCL kernels: float16 accumulates in float32.
"""
from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import numpy as np

from .common import Window, cast, compute_np, view_of


class Interp(NamedTuple):
    """Per-axis interpolation tables, built on the host so that every backend samples the same points.

    Output index o along an axis reads inputs i0[o] and i1[o] with weights l0[o] and l1[o] (nearest: l1 = 0).
    For the race-free backward, r0[i]:r0[i+1] are the outputs with i0 == i and r1[i]:r1[i+1] those with
    i1 == i (both maps are non-decreasing, so each set is a range).
    """

    i0: np.ndarray
    i1: np.ndarray
    l0: np.ndarray
    l1: np.ndarray
    r0: np.ndarray
    r1: np.ndarray
    linear: bool  # False: nearest (l0 = 1, l1 = 0)
    key: tuple  # identifies the table (device copies are cached on it)


@lru_cache(maxsize=256)
def interp_table(size: int, out: int, scale, linear: bool, align_corners: bool, acc: str) -> Interp:
    """One axis' sample points, computed as PyTorch's cpu kernels do (float32 for nearest; the op's accumulate
    type for linear), so every backend samples exactly the same inputs."""
    dst = np.arange(out)
    if not linear:
        if out == size:
            i0 = dst
        elif out == 2 * size:
            i0 = dst >> 1
        else:
            s = np.float32(1.0 / scale) if scale and scale > 0 else np.float32(size) / np.float32(out)
            i0 = np.minimum(np.floor(dst.astype(np.float32) * s).astype(np.int64), size - 1)
        i1, l0, l1 = i0, np.ones(out, acc), np.zeros(out, acc)
    else:
        t = np.dtype(acc).type
        if align_corners:
            s = t(size - 1) / t(out - 1) if out > 1 else t(0)
            real = s * dst.astype(acc)
        else:
            s = t(1.0 / scale) if scale and scale > 0 else t(size) / t(out)
            real = np.maximum(s * (dst.astype(acc) + t(0.5)) - t(0.5), t(0))
        i0 = np.minimum(np.floor(real).astype(np.int64), size - 1)
        l1 = np.clip(real - i0.astype(acc), t(0), t(1)).astype(acc)
        l0 = (t(1) - l1).astype(acc)
        i1 = i0 + (i0 < size - 1)
    edges = np.arange(size + 1)
    arrays = (i0, i1, l0, l1, np.searchsorted(i0, edges), np.searchsorted(i1, edges))
    for a in arrays:
        a.flags.writeable = False  # cached and shared
    return Interp(*arrays, linear, (size, out, scale, linear, align_corners, acc))


def _padded(x: np.ndarray, win: Window, fill, dtype) -> np.ndarray:
    """``x`` [N, C, H, W] inside a ``fill``-padded array large enough for every window position."""
    n, c, h, w = x.shape
    hp = max(h + win.ph, (win.oh - 1) * win.sh + (win.kh - 1) * win.dh + 1)
    wp = max(w + win.pw, (win.ow - 1) * win.sw + (win.kw - 1) * win.dw + 1)
    out = np.full((n, c, hp, wp), fill, dtype)
    out[:, :, win.ph : win.ph + h, win.pw : win.pw + w] = x
    return out


def _tap(win: Window, ki: int, kj: int):
    """The slices of the padded array that kernel tap (ki, kj) sees over all output positions."""
    return (slice(ki * win.dh, ki * win.dh + (win.oh - 1) * win.sh + 1, win.sh),
            slice(kj * win.dw, kj * win.dw + (win.ow - 1) * win.sw + 1, win.sw))


def _taps(win: Window):
    return ((ki, kj) for ki in range(win.kh) for kj in range(win.kw))


def _store(out, values) -> None:
    np.copyto(view_of(out), cast(values, out.dtype), casting="unsafe")


def _host(t) -> np.ndarray:
    """A cpu tensor's values in its compute dtype (float16 computes in float32)."""
    return view_of(t).astype(compute_np(t.dtype), copy=False)


def _window_counts(size: int, k: int, s: int, p: int, out: int, include_pad: bool) -> np.ndarray:
    """Per output position along one axis: how many window elements avg_pool divides by (PyTorch's rule:
    padding counts, but the part of a ceil_mode window beyond the padding never does)."""
    start = np.arange(out) * s - p
    end = np.minimum(start + k, size + p)
    if include_pad:
        return end - start
    return np.minimum(end, size) - np.maximum(start, 0)


def _divisors(shape, win: Window, include_pad: bool, divisor: int | None) -> np.ndarray:
    if divisor:
        return np.float64(divisor)
    hc = _window_counts(shape[2], win.kh, win.sh, win.ph, win.oh, include_pad)
    wc = _window_counts(shape[3], win.kw, win.sw, win.pw, win.ow, include_pad)
    return np.outer(hc, wc)


def _adaptive_matrix(size: int, out: int) -> np.ndarray:
    """[out, size]: row o averages input[floor(o*size/out) : ceil((o+1)*size/out)]."""
    m = np.zeros((out, size))
    for o in range(out):
        lo, hi = (o * size) // out, -(-((o + 1) * size) // out)
        m[o, lo:hi] = 1.0 / (hi - lo)
    return m


def _interp_matrix(t: Interp, size: int) -> np.ndarray:
    """[out, size]: the dense form of one axis' interpolation table."""
    m = np.zeros((t.i0.shape[0], size), t.l0.dtype)
    rows = np.arange(t.i0.shape[0])
    np.add.at(m, (rows, t.i0), t.l0)
    np.add.at(m, (rows, t.i1), t.l1)
    return m


class CPUConv:
    PRIMITIVES = ("im2col", "matmul_sum", "conv_bias", "col2im", "max_pool2d", "max_pool2d_backward", "pool_gather", "avg_pool2d", "avg_pool2d_backward", "adaptive_avg_pool2d", "adaptive_avg_pool2d_backward", "upsample2d", "upsample2d_backward")

    def __init__(self, backend):
        self.be = backend

    def im2col(self, cols, x, win: Window) -> None:
        """cols [N, C*kh*kw, oh*ow] (any strides) = the window taps of x [N, C, H, W], zero outside x."""
        xv = view_of(x)
        n, c = xv.shape[:2]
        xp = _padded(xv, win, 0, xv.dtype)
        out = np.empty((n, c, win.kh, win.kw, win.oh, win.ow), xv.dtype)
        for ki, kj in _taps(win):
            out[:, :, ki, kj] = xp[(slice(None), slice(None)) + _tap(win, ki, kj)]
        view_of(cols)[...] = out.reshape(tuple(cols.shape))

    def matmul_sum(self, out, a, b) -> None:
        """out[z] (contiguous [Z, M, N]) = the sum of a[i] @ b[i] over chunk z of the batch (chunks of
        ceil(B / Z) batches): a convolution's weight gradient, summed over the samples."""
        z, per = out.shape[0], -(-a.shape[0] // max(out.shape[0], 1))
        x, y = (view_of(t).astype(compute_np(out.dtype), copy=False) for t in (a, b))
        parts = [np.matmul(x[i * per:(i + 1) * per], y[i * per:(i + 1) * per]).sum(0) for i in range(z)]
        np.copyto(view_of(out), cast(np.stack(parts), out.dtype), casting="unsafe")

    def conv_bias(self, out, bias) -> None:
        """out [N, C, ...] (contiguous) += bias [C] per channel, computed as the elementwise add would."""
        o = view_of(out)
        b = _host(bias).reshape((1, -1) + (1,) * (o.ndim - 2))
        _store(out, o.astype(b.dtype) + b)

    def col2im(self, out, cols, win: Window) -> None:
        """out [N, C, H, W] = the sum of cols' taps back at the input positions they came from (im2col's adjoint)."""
        n, c, h, w = out.shape
        src = _host(cols).reshape(n, c, win.kh, win.kw, win.oh, win.ow)
        acc = _padded(np.zeros((n, c, h, w), src.dtype), win, 0, src.dtype)
        for ki, kj in _taps(win):
            acc[(slice(None), slice(None)) + _tap(win, ki, kj)] += src[:, :, ki, kj]
        _store(out, acc[:, :, win.ph : win.ph + h, win.pw : win.pw + w])

    def max_pool2d(self, out, indices, x, win: Window) -> None:
        """PyTorch's scan: per window the first maximum wins, a NaN always replaces (so the last NaN wins);
        indices are flat h * W + w within each plane."""
        xv = _host(x)
        h, w = xv.shape[2:]
        xp = _padded(xv, win, -np.inf, xv.dtype)
        best = np.full(out.shape, -np.inf, xv.dtype)
        hs = np.arange(win.oh)[:, None] * win.sh - win.ph
        ws = np.arange(win.ow)[None, :] * win.sw - win.pw
        # the first in-bounds tap: PyTorch's index when nothing beats -inf
        h0 = hs + (np.maximum(-hs, 0) + win.dh - 1) // win.dh * win.dh
        w0 = ws + (np.maximum(-ws, 0) + win.dw - 1) // win.dw * win.dw
        idx = np.broadcast_to(h0 * w + w0, out.shape).astype(np.int64)
        with np.errstate(invalid="ignore"):
            for ki, kj in _taps(win):
                v = xp[(slice(None), slice(None)) + _tap(win, ki, kj)]
                take = (v > best) | np.isnan(v)
                best = np.where(take, v, best)
                idx = np.where(take, (hs + ki * win.dh) * w + ws + kj * win.dw, idx)
        _store(out, best)
        _store(indices, idx)

    def max_pool2d_backward(self, grad_in, grad_out, indices, win: Window) -> None:
        """grad_in [N, C, H, W] = grad_out summed into the positions ``indices`` name."""
        n, c, h, w = grad_in.shape
        g = _host(grad_out).reshape(n * c, -1)
        idx = view_of(indices).reshape(n * c, -1)
        keep = (idx >= 0) & (idx < h * w)  # a window with no element inside the input points nowhere
        acc = np.zeros((n * c, h * w), g.dtype)
        rows = np.broadcast_to(np.arange(n * c)[:, None], idx.shape)
        np.add.at(acc, (rows[keep], idx[keep]), g[keep])
        _store(grad_in, acc.reshape(n, c, h, w))

    def pool_gather(self, out, src, indices) -> None:
        """out [N, C, oh, ow] = src [N, C, H, W] at each plane's flat ``indices`` (max-pool backward's adjoint)."""
        n, c = out.shape[:2]
        flat = _host(src).reshape(n * c, -1)
        idx = view_of(indices).reshape(n * c, -1)
        keep = (idx >= 0) & (idx < flat.shape[1])
        got = np.take_along_axis(flat, np.where(keep, idx, 0), 1)
        _store(out, np.where(keep, got, 0).reshape(out.shape))

    def avg_pool2d(self, out, x, win: Window, include_pad: bool, divisor: int | None) -> None:
        xv = _host(x)
        xp = _padded(xv, win, 0, xv.dtype)
        acc = np.zeros(out.shape, xv.dtype)
        for ki, kj in _taps(win):
            acc += xp[(slice(None), slice(None)) + _tap(win, ki, kj)]
        _store(out, acc / _divisors(xv.shape, win, include_pad, divisor).astype(xv.dtype))

    def avg_pool2d_backward(self, grad_in, grad_out, win: Window, include_pad: bool, divisor: int | None) -> None:
        n, c, h, w = grad_in.shape
        g = _host(grad_out)
        g = g / _divisors(grad_in.shape, win, include_pad, divisor).astype(g.dtype)
        acc = _padded(np.zeros((n, c, h, w), g.dtype), win, 0, g.dtype)
        for ki, kj in _taps(win):
            acc[(slice(None), slice(None)) + _tap(win, ki, kj)] += g
        _store(grad_in, acc[:, :, win.ph : win.ph + h, win.pw : win.pw + w])

    def adaptive_avg_pool2d(self, out, x) -> None:
        xv = _host(x)
        mh, mw = _adaptive_matrix(xv.shape[2], out.shape[2]), _adaptive_matrix(xv.shape[3], out.shape[3])
        _store(out, np.einsum("oh,nchw,pw->ncop", mh.astype(xv.dtype), xv, mw.astype(xv.dtype)))

    def adaptive_avg_pool2d_backward(self, grad_in, grad_out) -> None:
        g = _host(grad_out)
        mh = _adaptive_matrix(grad_in.shape[2], g.shape[2]).astype(g.dtype)
        mw = _adaptive_matrix(grad_in.shape[3], g.shape[3]).astype(g.dtype)
        _store(grad_in, np.einsum("oh,ncop,pw->nchw", mh, g, mw))

    def upsample2d(self, out, x, th: Interp, tw: Interp) -> None:
        xv = _host(x)
        mh = _interp_matrix(th, xv.shape[2]).astype(xv.dtype)
        mw = _interp_matrix(tw, xv.shape[3]).astype(xv.dtype)
        _store(out, np.einsum("oh,nchw,pw->ncop", mh, xv, mw))

    def upsample2d_backward(self, grad_in, grad_out, th: Interp, tw: Interp) -> None:
        g = _host(grad_out)
        mh = _interp_matrix(th, grad_in.shape[2]).astype(g.dtype)
        mw = _interp_matrix(tw, grad_in.shape[3]).astype(g.dtype)
        _store(grad_in, np.einsum("oh,ncop,pw->nchw", mh, g, mw))
