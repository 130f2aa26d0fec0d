"""cpu implementation of the ``random`` primitive (an op family of CPUBackend)."""
from __future__ import annotations

import numpy as np

from . import philox
from .common import view_of


class CPURandom:
    PRIMITIVES = ("random",)

    def __init__(self, backend):
        self.be = backend

    def random(self, dist: str, out, seed: int, offset: int, p0, p1) -> None:
        """Fill ``out`` (any layout) with ``dist``: element i (row-major) uses Philox counter ``offset + i``.

        The numpy reference ``philox.sample`` defines the stream, so cpu and OpenCL results agree bit for bit.
        """
        n = out.numel()
        if n == 0:
            return
        values = philox.sample(dist, out.dtype.name, n, seed, offset, p0, p1)
        np.copyto(view_of(out), values.reshape(out.shape))
