"""``clgrad.linalg``: the part of ``torch.linalg`` clgrad has so far (norms, singular values, products, powers,
Vandermonde matrices).

>>> clgrad.linalg.matrix_norm(clgrad.eye(3), "nuc")  # tensor(3.)
>>> clgrad.linalg.multi_dot([a, b, c])  # a @ b @ c in the cheapest order
"""
from __future__ import annotations

from .ops.linalg import svdvals
from .ops.products import linalg_cross as cross
from .ops.products import linalg_vander as vander
from .ops.products import matrix_power, multi_dot, vecdot
from .ops.stats import linalg_norm as norm
from .ops.stats import matrix_norm, vector_norm

__all__ = ["norm", "matrix_norm", "vector_norm", "svdvals", "cross", "vecdot", "multi_dot", "matrix_power", "vander"]
