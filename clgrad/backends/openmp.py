"""``torch.backends.openmp``: clgrad runs no OpenMP code of its own (the cpu backend is numpy, OpenCL devices
schedule their own threads), so ``is_available()`` is False."""
from __future__ import annotations


def is_available() -> bool:
    return False
