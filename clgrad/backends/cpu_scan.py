"""cpu implementation of the ``scan`` primitives (an op family of CPUBackend): scans, the stable row sort, and the
gather / scatter / bin-count helpers of sort-based ops. numpy is the reference the OpenCL kernels match."""
from __future__ import annotations

import numpy as np

from .. import dtypes as D
from .common import cast, view_of
from .cpu_reduce import acc_dtype


def _stable_order(a: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Stable argsort with NaN last ascending and first descending, as torch sorts.

    Descending is the reversal of an ascending stable sort of the reversed row: ties then come out in their
    original order, and NaN (numpy's largest) comes first.
    """
    if not descending:
        return np.argsort(a, axis=axis, kind="stable")
    n = a.shape[axis]
    rev = np.flip(np.argsort(np.flip(a, axis), axis=axis, kind="stable"), axis)
    return (n - 1) - rev


def _as_3d(t_shape, dim: int):
    """(outer, size, inner) of a shape around ``dim`` (a 0-dim tensor is one element)."""
    if not t_shape:
        return 1, 1, 1
    outer = int(np.prod(t_shape[:dim], dtype=np.int64))
    inner = int(np.prod(t_shape[dim + 1:], dtype=np.int64))
    return outer, t_shape[dim], inner


class CPUScan:
    PRIMITIVES = ("scan", "sort", "gather_dim", "scatter_dim", "bincount")

    def __init__(self, backend):
        self.be = backend

    def scan(self, op: str, src, dim: int, out, reverse: bool = False) -> None:
        """Inclusive ``op`` (sum or prod) scan of ``src`` along ``dim`` into ``out`` (same shape, any layout),
        accumulating as the reductions do (float32 for float16, int64 wrapping for integers); ``reverse``
        scans from the end of each row (the gradient of cumsum)."""
        if out.numel() == 0:
            return
        a = view_of(src)
        if a.ndim == 0:
            a = a.reshape(1)
        acc = acc_dtype(op, src.dtype, out.dtype).np
        if op == "sum" and acc == np.float32 and src.dtype not in D.HALF_FLOATS:
            acc = np.dtype(np.float64)  # a better reference than the kernels' float32, like cpu sums
        if reverse:
            a = np.flip(a, dim)
        with np.errstate(all="ignore"):
            res = (np.cumsum if op == "sum" else np.cumprod)(a.astype(acc, copy=False), axis=dim, dtype=acc)
        if reverse:
            res = np.flip(res, dim)
        np.copyto(view_of(out), cast(res, out.dtype).reshape(out.shape), casting="unsafe")

    def sort(self, src, dim: int, descending: bool, values, indices) -> None:
        """Stable sort of ``src`` along ``dim``: ``values`` (src's dtype) and their positions ``indices`` (int64).
        NaN sorts last ascending and first descending; equal keys keep their order."""
        if src.numel() == 0:
            return
        a = view_of(src).reshape(src.shape or (1,))
        order = _stable_order(a, dim, descending)
        np.copyto(view_of(indices), order.reshape(indices.shape))
        np.copyto(view_of(values), np.take_along_axis(a, order, dim).reshape(values.shape))

    def gather_dim(self, src, dim: int, index, out) -> None:
        """``out[..., j, ...] = src[..., index[..., j, ...], ...]`` with ``index`` shaped like ``out``."""
        if out.numel() == 0:
            return
        a = view_of(src).reshape(_as_3d(src.shape, dim))
        idx = view_of(index).reshape(_as_3d(index.shape, dim))
        np.copyto(view_of(out), np.take_along_axis(a, idx, 1).reshape(out.shape))

    def scatter_dim(self, src, dim: int, index, out, mask=None) -> None:
        """``out[..., index[..., j, ...], ...] = src[..., j, ...]`` where ``mask`` (same shape) is nonzero; ``src``
        None writes ``j`` itself. Indices are distinct per row (a permutation or a subset of one)."""
        if index.numel() == 0:
            return
        o3 = view_of(out).reshape(_as_3d(out.shape, dim))
        idx = view_of(index).reshape(_as_3d(index.shape, dim))
        if src is None:
            vals = np.broadcast_to(np.arange(idx.shape[1]).reshape(1, -1, 1), idx.shape)
        else:
            vals = view_of(src).reshape(idx.shape)
        outer, _, inner = np.indices(idx.shape, sparse=True)
        keep = np.ones(idx.shape, bool) if mask is None else view_of(mask).reshape(idx.shape) != 0
        o3[np.broadcast_to(outer, idx.shape)[keep], idx[keep], np.broadcast_to(inner, idx.shape)[keep]] = vals[keep]
        np.copyto(view_of(out), o3.reshape(out.shape))

    def bincount(self, input, weights, out) -> None:
        """``out[b]``: how many entries of the 1-D int ``input`` equal ``b``, or the sum of their ``weights``
        (already in ``out``'s dtype)."""
        if out.numel() == 0:
            return
        w = None if weights is None else view_of(weights).astype(np.float64)
        res = np.bincount(view_of(input).astype(np.int64), w, minlength=out.numel())
        np.copyto(view_of(out), res.astype(out.dtype.np))
