"""cpu implementation of the ``random`` primitive (a mixin of CPUBackend)."""
from __future__ import annotations


class CPURandom:
    pass
