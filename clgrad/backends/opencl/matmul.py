"""OpenCL implementation of the ``matmul`` primitive (a mixin of OpenCLBackend)."""
from __future__ import annotations


class CLMatmul:
    pass
