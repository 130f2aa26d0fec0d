"""cpu implementation of the ``linalg`` primitives (an op family of CPUBackend): numpy's LAPACK eigh and SVD, the
reference for ``kernels/linalg.cl.mako``'s Jacobi kernels, and the unblocked LU and Cholesky panels in numpy,
vectorized over the batch (the same operations in the same order as the kernels, so the same pivots)."""
from __future__ import annotations

import numpy as np

from .common import view_of


class CPULinalg:
    PRIMITIVES = ("eigh", "svd_jacobi", "getrf_panel", "potrf_panel", "trsm", "panels_ok")

    def panels_ok(self, a) -> bool:
        return True

    def __init__(self, backend):
        self.be = backend

    def eigh(self, w, v, a, upper: bool = False) -> None:
        """Eigenvalues ascending and eigenvectors of the symmetric ``a`` [B, n, n]; see interface.Backend.eigh."""
        if a.numel() == 0:
            return
        vals, vecs = np.linalg.eigh(view_of(a), UPLO="U" if upper else "L")
        view_of(w)[...] = vals
        view_of(v)[...] = vecs

    def svd_jacobi(self, s, v, a) -> None:
        """``a`` [B, m, n] (m >= n) <- A V, ``s`` its column norms descending, ``v`` V; see interface.Backend."""
        if a.numel() == 0:
            return
        u, vals, vh = np.linalg.svd(view_of(a), full_matrices=False)
        view_of(a)[...] = u * vals[..., None, :]
        view_of(s)[...] = vals
        view_of(v)[...] = np.swapaxes(vh, -1, -2)

    def getrf_panel(self, a, piv, k: int, e: int) -> None:
        """LU with partial pivoting of columns k..e-1 of ``a`` [B, m, c] in place; see interface.Backend."""
        if a.numel() == 0:
            return
        W, P = view_of(a), view_of(piv)
        at = np.arange(W.shape[0])
        for j in range(k, e):
            r = j + np.abs(W[:, j:, j]).argmax(1)  # the first largest (NaN first), as argmax
            P[:, j] = r + 1
            mine = W[:, j].copy()
            W[:, j] = W[at, r]
            W[at, r] = mine
            d = W[:, j, j]
            W[:, j + 1:, j] /= np.where(d != 0, d, 1)[:, None]  # a zero pivot has a zero column below: skipped
            W[:, j + 1:, j + 1:e] -= W[:, j + 1:, j, None] * W[:, j, None, j + 1:e]

    def potrf_panel(self, a, k: int, e: int) -> None:
        """Lower Cholesky of the diagonal blocks ``a[:, k:e, k:e]`` of ``a`` [B, n, n]; see interface.Backend."""
        if a.numel() == 0:
            return
        W = view_of(a)
        with np.errstate(invalid="ignore", divide="ignore"):
            for j in range(k, e):
                W[:, j:e, j] /= np.sqrt(W[:, j, j])[:, None]
                t = W[:, j + 1:e, j]
                W[:, j + 1:e, j + 1:e] -= t[:, :, None] * t[:, None, :]

    def trsm(self, a, b, upper: bool = False, unit: bool = False) -> None:
        """``b`` [B, n, k] <- X with A X = b for the triangle of ``a`` [B, n, n] (any strides); see interface."""
        if b.numel() == 0:
            return
        A, X = view_of(a), view_of(b)
        n = X.shape[1]
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):  # a singular A gives inf/NaN, as LAPACK
            for j in (range(n - 1, -1, -1) if upper else range(n)):
                if not unit:
                    X[:, j] /= A[:, j, j, None]
                rows = slice(0, j) if upper else slice(j + 1, n)
                X[:, rows] -= A[:, rows, j, None] * X[:, j, None, :]
