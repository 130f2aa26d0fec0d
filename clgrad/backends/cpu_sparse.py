"""cpu implementation of the ``sparse`` primitive (an op family of CPUBackend): the reference for
``kernels/spmm.cl.mako``."""
from __future__ import annotations

import numpy as np

from .. import dtypes as D
from .common import cast, view_of


def csr_entries(ptr: np.ndarray, nnz: int):
    """(row, k) of every entry of a CSR matrix with row pointers ``ptr``, rows in order and each row's entries in k
    order; a row's range is clamped to [0, nnz), as the kernel clamps it."""
    starts = np.clip(ptr[:-1], 0, nnz)
    lengths = np.maximum(np.clip(ptr[1:], 0, nnz) - starts, 0)
    rows = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    first = np.cumsum(lengths) - lengths
    ks = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(first - starts, lengths)
    return rows, ks


class CPUSparse:
    PRIMITIVES = ("spmm",)

    def __init__(self, backend):
        self.be = backend

    def spmm(self, out, rowptr, cols, vals, dense) -> None:
        """out [M, N] = A @ dense for the CSR matrix A (``rowptr``, ``cols``, ``vals``); see interface.Backend.spmm."""
        if out.dtype is D.bool:
            raise NotImplementedError(f"sparse mm is not implemented for dtype bool on device {out.device}")
        M, N = out.shape
        if M * N == 0:
            return
        acc = np.float32 if out.dtype in D.HALF_FLOATS else out.dtype.np
        rows, ks = csr_entries(view_of(rowptr).astype(np.int64), cols.shape[0])
        c = view_of(cols).astype(np.int64)[ks]
        keep = (c >= 0) & (c < dense.shape[0])
        rows, ks, c = rows[keep], ks[keep], c[keep]
        total = np.zeros((M, N), acc)
        if len(rows):
            with np.errstate(all="ignore"):
                terms = view_of(vals)[ks].astype(acc)[:, None] * view_of(dense)[c].astype(acc)
                # the entries come row by row: one segment sum per nonempty row (np.add.at is ~10x slower)
                starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
                total[rows[starts]] = np.add.reduceat(terms, starts, axis=0)
        np.copyto(view_of(out), cast(total, out.dtype), casting="unsafe")
