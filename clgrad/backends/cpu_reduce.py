"""cpu implementation of the ``reduce`` primitive (an op family of CPUBackend); the accumulation rule that every
backend shares is ``common.acc_dtype``."""
from __future__ import annotations

import numpy as np

from ..registry.reductions import REDUCTIONS
from .common import acc_dtype, cast, view_of


class CPUReduce:
    PRIMITIVES = ("reduce",)

    def __init__(self, backend):
        self.be = backend

    def reduce(self, op: str, src, dims, out, out_idx=None) -> None:
        """Reduce ``src`` over ``dims`` into ``out`` (contiguous, ``src``'s shape with 1 on ``dims``).

        ``op`` is a key of ``registry.reductions.REDUCTIONS``; for max/min, ``out_idx`` (int64, same shape)
        also receives the first position of the result in the reduced dims (row-major over them).
        """
        if out.numel() == 0:
            return
        dims = tuple(dims)
        a = view_of(src)
        r = REDUCTIONS[op]
        acc = acc_dtype(op, src.dtype, out.dtype).np
        with np.errstate(all="ignore"):
            if r.mask:
                res = r.np(a != 0, axis=dims, keepdims=True)
            elif r.acc == "wide":
                if op == "sum" and acc.kind == "f":
                    # numpy sums pairwise only along a contiguous axis; float64 keeps the others accurate
                    acc = np.dtype(np.float64)
                res = r.np(a, axis=dims, keepdims=True, dtype=acc)
            elif out_idx is None:
                res = r.np(a.astype(acc, copy=False), axis=dims, keepdims=True)
            else:
                res, idx = _arg(r.np_arg, a.astype(acc, copy=False), dims, out.shape)
                np.copyto(view_of(out_idx), idx)
        np.copyto(view_of(out), cast(res, out.dtype), casting="unsafe")


def _arg(np_arg, a: np.ndarray, dims: tuple, kept_shape) -> tuple[np.ndarray, np.ndarray]:
    """max/min and their first index over ``dims`` (``np_arg``: np.argmax or np.argmin, which already treat NaN
    as the winner)."""
    a = np.moveaxis(a, dims, tuple(range(a.ndim - len(dims), a.ndim))).reshape(tuple(kept_shape) + (-1,))
    idx = np_arg(a, axis=-1)[..., None]
    return np.take_along_axis(a, idx, axis=-1)[..., 0], idx[..., 0]
