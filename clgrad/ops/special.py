"""Front ends of the special-function records whose PyTorch signatures the generated bindings can't give:
``polygamma(n, input)`` (the order is n first; ``x.polygamma(n)`` as a method) and ``_standard_gamma_grad``.
``lgamma`` and ``digamma`` are generated from their records (``clgrad.lgamma``, ``Tensor.digamma_`` ...)."""
from __future__ import annotations

import math
from numbers import Integral

from . import pointwise as P

__all__ = ["polygamma", "mvlgamma"]


def _order(n) -> int:
    if isinstance(n, bool) or not isinstance(n, Integral):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return int(n)


def polygamma(n, input, *, out=None):
    """The n-th derivative of digamma: ``clgrad.polygamma(1, x)`` is the trigamma function."""
    n = _order(n)
    if n == 0:
        return P.apply("digamma", input, out=out)
    return P.apply("polygamma", input, float(n), out=out)


def mvlgamma(input, p):
    """The log of the multivariate gamma function of dimension ``p``, elementwise: ``clgrad.mvlgamma(x, 2)``."""
    if isinstance(p, bool) or not isinstance(p, Integral) or p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    if (input <= (p - 1) / 2).any().item():
        raise RuntimeError("All elements must be greater than (p-1)/2")
    total = sum((input - j / 2).lgamma() for j in range(p))
    return total + p * (p - 1) / 4 * math.log(math.pi)


def _standard_gamma_grad(self, output):
    """d output / d self for ``output = clgrad._standard_gamma(self)``: PyTorch's implicit reparameterization."""
    return P.apply("standard_gamma_grad", self, output)


def _polygamma_method(self, n):
    return polygamma(n, self)


def _polygamma_inplace(self, n):
    return polygamma(n, self, out=self)


def _mvlgamma_method(self, p):
    return mvlgamma(self, p)


def install(T) -> None:
    """Attach ``polygamma``, ``polygamma_`` and ``mvlgamma`` to Tensor."""
    T.polygamma, T.polygamma_, T.mvlgamma = _polygamma_method, _polygamma_inplace, _mvlgamma_method
