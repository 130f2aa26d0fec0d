"""cpu implementation of the ``random`` primitives (an op family of CPUBackend)."""
from __future__ import annotations

import numpy as np

from . import philox
from .common import view_of

GAMMA_TAG = 0x67616D6D  # 'gamm': the fourth Philox counter word of the gamma sampler's blocks


class CPURandom:
    PRIMITIVES = ("random", "random_gamma")

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

    def random_gamma(self, out, alpha, seed: int, offset: int) -> None:
        """Fill ``out`` with Gamma(alpha, 1) samples, element i from the Philox counters of ``offset + i``."""
        if out.numel() == 0:
            return
        values = gamma(np.ascontiguousarray(view_of(alpha)).reshape(-1), seed, offset)
        np.copyto(view_of(out), values.reshape(out.shape))


def gamma(alpha: np.ndarray, seed: int, offset: int) -> np.ndarray:
    """The reference of the gamma kernel (random.cl.mako): Marsaglia-Tsang, each element's rejection rounds drawn
    from Philox counters (lo32(c), hi32(c), round, GAMMA_TAG), c = offset + i, in alpha's precision and operation
    order (the kernel disables contraction), until every element is accepted."""
    ft = alpha.dtype.type
    one = ft(1)
    counter = np.arange(alpha.size, dtype=np.uint64) + np.uint64(int(offset) & 0xFFFFFFFFFFFFFFFF)
    lo, hi = (counter & np.uint64(0xFFFFFFFF)).astype(np.uint32), (counter >> np.uint64(32)).astype(np.uint32)
    seed = int(seed) & 0xFFFFFFFFFFFFFFFF
    out = np.full(alpha.shape, np.finfo(ft).tiny, dtype=ft)
    out[np.isposinf(alpha)] = np.inf
    with np.errstate(all="ignore"):
        ab = np.where(alpha < 1, alpha + one, alpha)
        d = ab - one / ft(3)
        c = one / np.sqrt(ft(9) * d)
        pending = np.flatnonzero((alpha > 0) & np.isfinite(alpha))
        r = 0
        while pending.size:
            w0, w1, w2, w3 = philox.philox4x32_words(lo[pending], hi[pending], r, GAMMA_TAG, seed & 0xFFFFFFFF,
                                                     seed >> 32)
            x, u = _normal_uniform(ft, w0, w1, w2)
            dp, cp, ap = d[pending], c[pending], alpha[pending]
            t = one + cp * x
            t3 = t * t * t
            accept = (t > 0) & (np.log(u) < x * x / ft(2) + dp - dp * t3 + dp * np.log(t3))
            boost = np.where(ap < 1, np.power((w3.astype(ft) + one) * ft(2.0**-32), one / ap), one)
            got = pending[accept]
            out[got] = np.maximum(dp * t3 * boost, np.finfo(ft).tiny)[accept]
            pending = pending[~accept]
            r += 1
    return out


def _normal_uniform(ft, w0, w1, w2):
    """The standard normal (Box-Muller on words 0 and 1, as the ``normal`` stream) and a uniform in (0, 1]."""
    if ft is np.float64:
        u1 = (w0.astype(np.float64) + 1.0) * 2.0**-32
        x = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * (w1.astype(np.float64) * 2.0**-32))
        return x, (w2.astype(np.float64) + 1.0) * 2.0**-32
    f = np.float32
    u1 = (w0.astype(f) + f(1)) * f(2.0**-32)
    x = np.sqrt(f(-2) * np.log(u1)) * np.cos(f(2.0 * np.pi) * (w1.astype(f) * f(2.0**-32)))
    return x, (w2.astype(f) + f(1)) * f(2.0**-32)
