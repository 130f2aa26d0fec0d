"""``clgrad.linalg``: torch.linalg's namespace: norms, singular values, and the factorizations and solvers of
``ops/linalg_solve.py`` (triangular solves, Cholesky) and ``ops/linalg_lu.py`` (LU, solve, inv, det), all batched
and on the device.

>>> clgrad.linalg.matrix_norm(clgrad.eye(3), "nuc")  # tensor(3.)
>>> clgrad.linalg.solve(clgrad.eye(2) * 2, clgrad.ones(2))  # tensor([0.5000, 0.5000])
"""
from __future__ import annotations

from .ops.linalg import svdvals
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
from .ops.linalg_solve import LinAlgError, cholesky_ex, solve_triangular
from .ops.linalg_solve import linalg_cholesky as cholesky
from .ops.products import linalg_cross as cross
from .ops.products import linalg_vander as vander
from .ops.products import matrix_power, multi_dot, vecdot
from .ops.stats import linalg_norm as norm
from .ops.stats import matrix_norm, vector_norm

__all__ = ["norm", "matrix_norm", "vector_norm", "svdvals", "LinAlgError", "cholesky", "cholesky_ex",
           "solve_triangular", "lu", "lu_factor", "lu_factor_ex", "lu_solve", "solve", "solve_ex", "inv", "inv_ex",
           "det", "slogdet", "matrix_power", "cross", "vecdot", "multi_dot", "vander"]
