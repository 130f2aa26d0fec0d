"""cpu implementation of the ``nn`` primitives (an op family of CPUBackend): the numpy reference for
``backends/opencl/nn.py`` (same arguments, same results up to rounding)."""
from __future__ import annotations

import warnings

import numpy as np

from .. import dtypes as D
from .common import cast, view_of


def _acc_np(dt: D.dtype) -> np.dtype:
    return np.dtype(np.float32) if dt in D.HALF_FLOATS else dt.np


def _nll_into(loss, wt, logp: np.ndarray, target, weight, ignore_index: int) -> bool:
    """``loss = -w[t] * logp[n, t]`` and ``wt = w[t]`` (0 where ignored) for logp [N, C, d...] in the accumulation
    dtype; False if a target is out of range."""
    acc = logp.dtype
    xs = np.moveaxis(logp, 1, -1)  # [N, d..., C]
    t = view_of(target).astype(np.int64)
    C = logp.shape[1]
    keep = t != ignore_index
    if ((t[keep] < 0) | (t[keep] >= C)).any():
        return False
    safe = np.where(keep, t, 0)
    w = np.ones(C, acc) if weight is None else view_of(weight).astype(acc)
    wv = np.where(keep, w[safe] if C else 0, 0).astype(acc)
    picked = np.take_along_axis(xs, safe[..., None], -1)[..., 0] if C else np.zeros(t.shape, acc)
    with np.errstate(all="ignore"):
        np.copyto(view_of(loss), cast(np.where(keep, -wv * picked, 0), loss.dtype), casting="unsafe")
    np.copyto(view_of(wt), cast(wv, wt.dtype), casting="unsafe")
    return True


class CPUNN:
    PRIMITIVES = ("softmax", "nll", "xent", "xent_backward", "embedding", "embedding_backward", "moments")

    def __init__(self, backend):
        self.be = backend

    def softmax(self, mode: str, out, inputs, dim: int) -> None:
        """Row-wise ``mode`` along ``dim`` (see CLNN.softmax)."""
        if out.numel() == 0:
            return
        acc = _acc_np(out.dtype)
        a = [view_of(t).astype(acc) for t in inputs]
        with np.errstate(all="ignore"):
            if mode in ("softmax", "log_softmax"):
                # torch subtracts the (NaN-propagating) max first: an inf max makes the row NaN
                shifted = a[0] - np.max(a[0], axis=dim, keepdims=True)
                total = np.sum(np.exp(shifted), axis=dim, keepdims=True)
                res = np.exp(shifted) / total if mode == "softmax" else shifted - np.log(total)
            elif mode == "softmax_backward":
                g, y = a
                res = y * (g - np.sum(g * y, axis=dim, keepdims=True))
            else:
                g, y = a
                res = g - np.exp(y) * np.sum(g, axis=dim, keepdims=True)
        np.copyto(view_of(out), cast(res, out.dtype), casting="unsafe")

    def nll(self, loss, wt, x, target, weight, ignore_index: int, on_error) -> bool:
        """Per-sample nll pieces (see CLNN.nll); False if a target is out of range."""
        if loss.numel() == 0:
            return True
        return _nll_into(loss, wt, view_of(x).astype(_acc_np(x.dtype)), target, weight, ignore_index)

    def xent(self, loss, wt, lse, x, target, weight, ignore_index: int, on_error) -> bool:
        """Fused cross-entropy pieces (see CLNN.xent); False if a target is out of range."""
        if loss.numel() == 0:
            return True
        a = view_of(x).astype(_acc_np(x.dtype))
        with np.errstate(all="ignore"):
            m = np.max(a, axis=1, keepdims=True)
            logs = np.where(m == np.inf, np.nan, np.log(np.sum(np.exp(a - m), axis=1, keepdims=True)))
            logp = (a - m) - logs
        if not _nll_into(loss, wt, logp, target, weight, ignore_index):
            return False
        np.copyto(view_of(lse), cast(np.squeeze(m + logs, 1), lse.dtype), casting="unsafe")
        return True

    def xent_backward(self, out, x, target, wt, lse, grad, total, ignore_index: int) -> None:
        """Cross-entropy (x given) or nll (x None) gradient (see CLNN.xent_backward)."""
        if out.numel() == 0:
            return
        acc = _acc_np(out.dtype)
        t = view_of(target).astype(np.int64)
        with np.errstate(all="ignore"):
            g = view_of(grad).astype(acc)
            c = view_of(wt).astype(acc) * (g if total is None else g / view_of(total).astype(acc))
            c = np.where(t == ignore_index, 0, c)[:, None]
            hit = (np.arange(out.shape[1]).reshape((1, -1) + (1,) * (out.dim() - 2)) == t[:, None]) \
                & (t != ignore_index)[:, None]
            if x is None:
                res = np.where(hit, -c, 0)
            else:
                p = np.exp(view_of(x).astype(acc) - view_of(lse).astype(acc)[:, None])
                res = c * (p - hit)
        np.copyto(view_of(out), cast(np.broadcast_to(res, out.shape), out.dtype), casting="unsafe")

    def embedding(self, out, weight, idx, on_error) -> bool:
        """``out[n] = weight[idx[n]]`` (see CLNN.embedding); False if an index is out of range."""
        i = view_of(idx).astype(np.int64)
        if ((i < 0) | (i >= weight.shape[0])).any():
            return False
        np.copyto(view_of(out), view_of(weight)[i])
        return True

    def embedding_backward(self, acc, grad, idx, padding_idx: int) -> None:
        """``acc[idx[n]] += grad[n]`` except at ``padding_idx`` (see CLNN.embedding_backward)."""
        i = view_of(idx).astype(np.int64)
        keep = (i != padding_idx) & (i >= 0) & (i < acc.shape[0])
        np.add.at(view_of(acc), i[keep], view_of(grad)[keep].astype(acc.dtype.np))

    def moments(self, mean, var, x, dims) -> None:
        """Mean and biased variance over ``dims`` (see CLNN.moments), two-pass in float64, stored in the
        accumulation dtype."""
        if mean.numel() == 0:
            return
        a = view_of(x).astype(np.float64)  # float64, so that the sum of a float32 row can't overflow
        # shifted by each row's first element, so that a constant row's variance is exactly 0 (as Welford's)
        shift = a[tuple(slice(0, 1) if d in dims else slice(None) for d in range(a.ndim))] if a.size else 0.0
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # numpy's "Mean of empty slice": nan, as in PyTorch
            mu = np.mean(a - shift, axis=tuple(dims), keepdims=True)
            sq = np.mean(np.square(a - shift - mu), axis=tuple(dims), keepdims=True)
            mu = mu + shift
            # as the kernel: NaN where the mean squared overflows the accumulation dtype (PyTorch's Welford)
            sq[np.isinf(np.square(mu.astype(mean.dtype.np)))] = np.nan
            np.copyto(view_of(mean), mu)
            np.copyto(view_of(var), sq)
