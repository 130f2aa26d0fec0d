"""cpu implementation of the ``index`` primitives (an op family of CPUBackend): the reference semantics.

The ops layer describes every indexing op (getitem, index_put, gather, scatter, index_select, index_add,
index_fill) the same way: an index space of shape R, the data tensor restrided over R (stride 0 on the
indexed dims), and a list of ``(index, size, step)``: an int64 index tensor restrided over R, the size of
the dim it indexes and that dim's stride. Element i of the space then lives at
``data_offset + sum(coord * stride) + sum_k index_k[i] * step_k`` in the data's storage.
"""
from __future__ import annotations

import numpy as np

from .common import first_bad, is_scalar, view_of


def _positions(base, indices, wrap: bool):
    """Storage positions of every element of the index space, or (None, first bad index)."""
    shape = tuple(base.shape)
    pos = np.asarray(base._offset, np.int64)
    for d, (n, st) in enumerate(zip(shape, base._strides)):
        if n > 1 and st:
            pos = pos + (np.arange(n, dtype=np.int64) * st).reshape([-1 if i == d else 1 for i in range(len(shape))])
    hosts = [(view_of(t), size, step) for t, size, step in indices]
    bad = first_bad(hosts, wrap)
    if bad is not None:
        return None, bad
    for v, size, step in hosts:
        if wrap:
            v = np.where(v < 0, v + size, v)
        pos = pos + v * step
    return np.broadcast_to(pos, shape), None


_ACCUMULATE = {("add", False): np.add, ("mul", False): np.multiply,
               ("add", True): np.logical_or, ("mul", True): np.logical_and}


class CPUIndex:
    PRIMITIVES = ("index_gather", "index_put", "nonzero")

    def __init__(self, backend):
        self.be = backend

    def index_gather(self, out, src, indices, wrap: bool = True, checked: bool = True):
        """``out[i] = src.storage[src position of i]`` over the index space ``out.shape`` (= ``src.shape``).

        Returns None, or (k, value) of the first out-of-range index (nothing is written then); negative
        indices count from the end when ``wrap``.
        """
        if out.numel() == 0:
            return None
        pos, bad = _positions(src, indices, wrap)
        if bad is not None:
            return bad
        np.copyto(view_of(out), src._storage.data[pos])
        return None

    def index_put(self, dst, value, indices, mode: str = "store", wrap: bool = True, checked: bool = True):
        """``dst.storage[dst position of i] (op)= value[i]``; ``value`` is a tensor of dst's dtype restrided
        over the index space, or a numpy scalar of that dtype. ``mode`` 'store' (with duplicate positions
        the last write wins), 'add' or 'mul' (every duplicate counts; logical or/and on bool)."""
        if dst.numel() == 0:
            return None
        pos, bad = _positions(dst, indices, wrap)
        if bad is not None:
            return bad
        vals = np.asarray(value, dst.dtype.np) if is_scalar(value) else view_of(value)
        vals = np.broadcast_to(vals, pos.shape).reshape(-1)
        flat = dst._storage.data
        if mode == "store":
            flat[pos.reshape(-1)] = vals
        else:
            with np.errstate(all="ignore"):
                _ACCUMULATE[mode, dst.dtype.kind == "b"].at(flat, pos.reshape(-1), vals)
        return None

    def nonzero(self, src, alloc):
        """Coordinates of the nonzero elements of ``src`` (row-major order) written into ``alloc(count)``,
        an int64 tensor of shape (count, ndim)."""
        coords = np.argwhere(view_of(src))
        out = alloc(len(coords))
        if out.numel():
            np.copyto(view_of(out), coords)
        return out
