"""cpu implementation of the ``reduce`` primitive (a mixin of CPUBackend)."""
from __future__ import annotations


class CPUReduce:
    pass
