"""``clgrad.linalg``: the part of ``torch.linalg`` clgrad has so far (products, powers, Vandermonde matrices).

>>> clgrad.linalg.multi_dot([a, b, c])  # a @ b @ c in the cheapest order
"""
from __future__ import annotations

from .ops.products import linalg_cross as cross
from .ops.products import linalg_vander as vander
from .ops.products import matrix_power, multi_dot, vecdot

__all__ = ["cross", "vecdot", "multi_dot", "matrix_power", "vander"]
