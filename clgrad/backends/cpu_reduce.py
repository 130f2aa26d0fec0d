"""cpu implementation of the ``reduce`` primitive (an op family of CPUBackend); the accumulation rule that every
backend shares is ``common.acc_dtype``."""
from __future__ import annotations

import numpy as np

from .common import IDENTITY, acc_dtype, cast, view_of  # noqa: F401 (IDENTITY: re-exported)

OPS = ("sum", "prod", "max", "min", "all", "any")


class CPUReduce:
    PRIMITIVES = ("reduce",)

    def __init__(self, backend):
        self.be = backend

    def reduce(self, op: str, src, dims, out, out_idx=None) -> None:
        """Reduce ``src`` over ``dims`` into ``out`` (contiguous, ``src``'s shape with 1 on ``dims``).

        ``op`` is one of sum/prod/max/min/all/any; for max/min, ``out_idx`` (int64, same shape) also
        receives the first position of the result in the reduced dims (row-major over them).
        """
        if out.numel() == 0:
            return
        dims = tuple(dims)
        a = view_of(src)
        acc = acc_dtype(op, src.dtype, out.dtype).np
        with np.errstate(all="ignore"):
            if op in ("all", "any"):
                res = getattr(np, op)(a != 0, axis=dims, keepdims=True)
            elif op in ("sum", "prod"):
                if op == "sum" and acc.kind == "f":
                    # numpy sums pairwise only along a contiguous axis; float64 keeps the others accurate
                    acc = np.dtype(np.float64)
                res = getattr(np, op)(a, axis=dims, keepdims=True, dtype=acc)
            elif out_idx is None:
                res = getattr(np, op)(a.astype(acc, copy=False), axis=dims, keepdims=True)
            else:
                res, idx = _arg(op, a.astype(acc, copy=False), dims, out.shape)
                np.copyto(view_of(out_idx), idx)
        np.copyto(view_of(out), cast(res, out.dtype), casting="unsafe")


def _arg(op: str, a: np.ndarray, dims: tuple, kept_shape) -> tuple[np.ndarray, np.ndarray]:
    """max/min and their first index over ``dims``; numpy's argmax already treats NaN as the winner."""
    a = np.moveaxis(a, dims, tuple(range(a.ndim - len(dims), a.ndim))).reshape(tuple(kept_shape) + (-1,))
    idx = (np.argmax if op == "max" else np.argmin)(a, axis=-1)[..., None]
    return np.take_along_axis(a, idx, axis=-1)[..., 0], idx[..., 0]
