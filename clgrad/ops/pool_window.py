"""The argmax of a max pooling over any windows, one spatial dim at a time, composed from gather and argmax.

A pooling window is separable: its max is the max over D of the max over H of the max over W. Each dim's windows
are given as an index table ``[planes or 1, O, K]`` (the K input positions of each of the O outputs); a position
outside the input is replaced by the window's first valid one, so no masking is needed and ties still resolve to
the first position. Reducing the last dim first keeps PyTorch's tie rule (the first maximum in (d, h, w) order).
The result is the flat index over the input's spatial dims, PyTorch's ``return_indices`` convention; the values
are then ``gather(x, indices)``, whose gradient (a scatter-add) is max pooling's backward, to any order.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as D
from ..autograd.grad_mode import no_grad
from . import creation
from .gather import gather


def sliding(size: int, out: int, k: int, stride: int, pad: int, dilation: int) -> np.ndarray:
    """[1, out, k] positions of a sliding window (``pad`` before the input), invalid ones -> the first valid."""
    pos = np.arange(out)[:, None] * stride - pad + np.arange(k)[None, :] * dilation
    return _fill_invalid(pos, (pos >= 0) & (pos < size))[None]


def adaptive(size: int, out: int) -> np.ndarray:
    """[1, out, K] positions of PyTorch's adaptive windows [floor(o*I/O), ceil((o+1)*I/O))."""
    o = np.arange(out)
    start, end = (o * size) // out, -((-(o + 1) * size) // out)
    k = int((end - start).max()) if out else 1
    pos = start[:, None] + np.arange(k)[None, :]
    return _fill_invalid(pos, pos < end[:, None])[None]


def _fill_invalid(pos: np.ndarray, valid: np.ndarray) -> np.ndarray:
    first = np.where(valid, pos, np.iinfo(np.int64).max).min(axis=1, keepdims=True)
    return np.where(valid, pos, first).astype(np.int64)


def box_argmax(x, tables, fi=None):
    """Flat argmax indices of max pooling ``x`` [P, *S] over windows ``tables`` (one per spatial dim, or None for a
    dim already reduced, whose flat indices ``fi`` [P, *S] then say where each value came from)."""
    with no_grad():
        v = x.detach()
        if fi is None:
            fi = creation.arange(int(np.prod(v.shape[1:])), dtype=D.int64, device=v.device).reshape(v.shape[1:])
            fi = fi.unsqueeze(0).expand(*v.shape)
        for d in reversed(range(len(tables))):
            if tables[d] is not None:
                v, fi = _reduce_dim(v, fi, d + 1, tables[d])
        return fi.contiguous()


def _reduce_dim(v, fi, dim: int, table: np.ndarray):
    """Max of v over each window of ``table`` along ``dim``; (values, their flat indices)."""
    planes, out, k = table.shape
    v, fi = v.movedim(dim, -1), fi.movedim(dim, -1)
    shape = tuple(v.shape[:-1]) + (out * k,)
    idx = creation.tensor(table.reshape(planes, out * k), dtype=D.int64, device=v.device)
    idx = idx.reshape((planes,) + (1,) * (v.dim() - 2) + (out * k,)).expand(*shape)
    sel = gather(v, -1, idx).reshape(*shape[:-1], out, k)
    best = sel.argmax(-1, keepdim=True)
    pos = gather(idx.reshape(*shape[:-1], out, k), -1, best).squeeze(-1)
    values = gather(sel, -1, best).squeeze(-1)
    return values.movedim(-1, dim), gather(fi, -1, pos).movedim(-1, dim)


def flat(t):
    """[P, *S] as [P, prod(S)] (explicit sizes: P may be 0)."""
    return t.reshape(t.shape[0], int(np.prod(t.shape[1:], dtype=np.int64)))


def take(x, fi):
    """``x`` [P, *S] at flat spatial indices ``fi`` [P, *O]: the pooled values, differentiable in x."""
    return gather(flat(x), 1, flat(fi)).reshape(fi.shape)
