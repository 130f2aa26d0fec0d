"""``clgrad.linalg``: torch.linalg's namespace: norms, singular values, and the factorizations and solvers of
``ops/linalg_solve.py`` (triangular solves, Cholesky), ``ops/linalg_lu.py`` (LU, solve, inv, det),
``ops/linalg_qr.py`` (Householder QR), ``ops/linalg_svd.py`` (SVD, pinv, rank, cond, lstsq) and ``ops/linalg_eig.py``
(eigh, matrix_exp; eig on the host), all batched and on the device.

>>> clgrad.linalg.matrix_norm(clgrad.eye(3), "nuc")  # tensor(3.)
>>> clgrad.linalg.solve(clgrad.eye(2) * 2, clgrad.ones(2))  # tensor([0.5000, 0.5000])
"""
from __future__ import annotations

from .ops.linalg_eig import eig, eigh, eigvals, eigvalsh, matrix_exp
from .ops.linalg_ldl import ldl_factor, ldl_factor_ex, ldl_solve
from .ops.linalg_lu import (
    det,
    inv,
    inv_ex,
    lu,
    lu_factor,
    lu_factor_ex,
    lu_solve,
    slogdet,
    solve,
    solve_ex,
)
from .ops.linalg_qr import householder_product
from .ops.linalg_qr import linalg_qr as qr
from .ops.linalg_solve import LinAlgError, cholesky_ex, solve_triangular
from .ops.linalg_solve import linalg_cholesky as cholesky
from .ops.linalg_svd import cond, lstsq, matrix_rank, pinv, svdvals, tensorinv, tensorsolve
from .ops.linalg_svd import linalg_svd as svd
from .ops.products import linalg_cross as cross
from .ops.products import linalg_vander as vander
from .ops.products import matrix_power, multi_dot, vecdot
from .ops.stats import linalg_norm as norm
from .ops.stats import matrix_norm, vector_norm

__all__ = ["norm", "matrix_norm", "vector_norm", "svdvals", "LinAlgError", "cholesky", "cholesky_ex",
           "solve_triangular", "lu", "lu_factor", "lu_factor_ex", "lu_solve", "solve", "solve_ex", "inv", "inv_ex",
           "det", "slogdet", "matrix_power", "cross", "vecdot", "multi_dot", "vander",
           "qr", "householder_product", "eigh", "eigvalsh", "eig", "eigvals", "svd", "pinv", "matrix_rank", "cond",
           "lstsq", "tensorinv", "tensorsolve", "matrix_exp", "ldl_factor", "ldl_factor_ex", "ldl_solve"]
