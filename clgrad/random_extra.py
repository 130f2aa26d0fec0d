"""More in-place samplers: ``cauchy_``, ``geometric_`` and ``log_normal_``.

Each transforms the generator's Philox uniform or normal stream (``clgrad/random.py``) with elementwise
kernels, as ``exponential_`` does, so the underlying bits are the same on cpu and every OpenCL device; the
results agree up to the device's ``tan``/``log``/``exp`` rounding (a few ulp).
"""
from __future__ import annotations

import math

from . import dtypes as D
from .ops import pointwise as P
from .random import _check_writable, _g, _not_implemented, normal_, uniform_
from .tensor import Tensor

__all__: list[str] = []  # Tensor methods only, as in PyTorch


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Fill with samples from the Cauchy distribution: ``median + sigma * tan(pi * (U - 1/2))``."""
    if self.dtype.kind != "f":
        raise RuntimeError(
            "Cauchy distribution is a continuous probability distribution. dtype must be a floating point but you "
            f"specified {self.dtype.cpp_name}"
        )
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_g(sigma)}")
    uniform_(self, generator=generator)
    P.apply("sub", self, 0.5, out=self)
    P.apply("mul", self, math.pi, out=self)
    P.apply("tan", self, out=self)
    P.apply("mul", self, float(sigma), out=self)
    return P.apply("add", self, float(median), out=self)


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Fill with ``exp(N(mean, std**2))`` samples: ``t.log_normal_(0, 0.25)``."""
    if self.dtype.kind != "f":
        raise _not_implemented("log_normal_cpu", self.dtype)
    if not std > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_g(std)}")
    normal_(self, mean, std, generator=generator)
    return P.apply("exp", self, out=self)


def geometric_(self, p, *, generator=None):
    """Fill with the number of Bernoulli(``p``) trials up to the first success (1, 2, ...):
    ``ceil(log(1 - U) / log(1 - p))``. Integer tensors draw a float32 uniform (float64 needs fp64)."""
    if self.dtype is D.bool:
        raise _not_implemented("geometric_cpu", self.dtype)
    if not 0.0 < p < 1.0:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_g(p)}")
    _check_writable(self)
    u = self if self.dtype.kind == "f" else Tensor._empty(self.shape, D.float32, self.device)
    uniform_(u, generator=generator)
    P.apply("neg", u, out=u)
    P.apply("log1p", u, out=u)  # log(1 - U): U is in [0, 1), so this is finite and <= 0
    P.apply("mul", u, 1.0 / math.log1p(-p), out=u)
    P.apply("ceil", u, out=u)
    P.apply("clamp_min", u, 1.0, out=u)  # U == 0 gives 0 trials; the support starts at 1
    return u if u is self else P.cast_into(self, u)


def install(T) -> None:
    """Attach the samplers to Tensor."""
    T.cauchy_, T.log_normal_, T.geometric_ = cauchy_, log_normal_, geometric_
