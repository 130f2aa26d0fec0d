"""cpu implementation of the ``linalg`` primitives (an op family of CPUBackend): numpy's LAPACK eigh and SVD, the
reference for ``kernels/linalg.cl.mako``'s Jacobi kernels."""
from __future__ import annotations

import numpy as np

from .common import view_of


class CPULinalg:
    PRIMITIVES = ("eigh", "svd_jacobi")

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
