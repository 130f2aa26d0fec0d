"""``clgrad.linalg``: the part of ``torch.linalg`` clgrad has so far (norms, singular values).

>>> clgrad.linalg.matrix_norm(clgrad.eye(3), "nuc")  # tensor(3.)
"""
from __future__ import annotations

from .ops.linalg import svdvals
from .ops.stats import linalg_norm as norm
from .ops.stats import matrix_norm, vector_norm

__all__ = ["norm", "matrix_norm", "vector_norm", "svdvals"]
