"""OpenCL implementation of the ``random`` primitive (a mixin of OpenCLBackend)."""
from __future__ import annotations


class CLRandom:
    pass
