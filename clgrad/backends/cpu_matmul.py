"""cpu implementation of the ``matmul`` primitive (a mixin of CPUBackend)."""
from __future__ import annotations


class CPUMatmul:
    pass
