"""OpenCL implementation of the ``reduce`` primitive (a mixin of OpenCLBackend)."""
from __future__ import annotations


class CLReduce:
    pass
