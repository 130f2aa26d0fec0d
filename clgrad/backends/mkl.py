"""``torch.backends.mkl``: clgrad does not link Intel MKL itself (numpy may, through its BLAS), so
``is_available()`` is False."""
from __future__ import annotations


def is_available() -> bool:
    return False
