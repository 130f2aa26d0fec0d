"""``clgrad.special``: PyTorch's ``torch.special`` namespace. ``import clgrad as torch; torch.special.ndtr(x)``.

Most names are the elementwise ops of the registry under torch.special's spelling (``expit`` is ``sigmoid``,
``gammaln`` is ``lgamma``, ``gammainc`` is ``igamma``...); the functions only torch.special has (``erfcx``,
``ndtr``, ``i0e``, ``zeta``...) are the registry's ``special_*`` records, with PyTorch's node names
(``SpecialErfcxBackward0``).
"""
from __future__ import annotations

from .ops import math as _M
from .ops import pointwise as _P
from .ops.forms import round  # noqa: A004 - torch.special.round
from .ops.nnops import log_softmax as _log_softmax
from .ops.nnops import softmax as _softmax
from .ops.special import mvlgamma as _mvlgamma
from .ops.special import polygamma
from .ops.stats import logsumexp
from .registry import special_cephes as _SC
from .registry.special_fns import POLYNOMIALS as _BASE

_POLYNOMIALS = [*_BASE, *(f"shifted_{n}" for n in _BASE[:4])]

_CEPHES = [name for name, *_ in _SC.RECORDS]  # airy_ai, bessel_y0/y1, modified_bessel_k0/k1 and the scaled ones
__all__ = ["expm1", "exp2", "log1p", "logit", "xlogy", "xlog1py", "erf", "erfc", "erfcx", "erfinv", "ndtr", "ndtri",
           "log_ndtr", "i0", "i0e", "i1", "i1e", "gammaln", "digamma", "psi", "polygamma", "multigammaln", "zeta",
           "entr", "sinc", "round", "softmax", "log_softmax", "logsumexp", "gammainc", "gammaincc", "expit",
           "bessel_j0", "bessel_j1", "spherical_bessel_j0", *_CEPHES,
           "modified_bessel_i0", "modified_bessel_i1", *_POLYNOMIALS]

expm1, exp2, log1p, erf, erfc = (_M.FUNCS[n] for n in ("expm1", "exp2", "log1p", "erf", "erfc"))
erfinv, i0, sinc, xlogy, expit = (_M.FUNCS[n] for n in ("erfinv", "i0", "sinc", "xlogy", "sigmoid"))
gammaln, digamma, psi = _M.FUNCS["lgamma"], _M.FUNCS["digamma"], _M.FUNCS["digamma"]
gammainc, gammaincc = _M.FUNCS["igamma"], _M.FUNCS["igammac"]
logit = _M.logit


def _unary(op: str, doc: str):
    def fn(input, *, out=None):
        return _P.apply(op, input, out=out)

    fn.__name__, fn.__doc__ = op.removeprefix("special_"), doc
    return fn


def _binary(op: str, doc: str):
    def fn(input, other, *, out=None):
        return _P.apply(op, input, other, out=out)

    fn.__name__, fn.__doc__ = op.removeprefix("special_"), doc
    return fn


erfcx = _unary("special_erfcx", "The scaled complementary error function ``exp(x**2) * erfc(x)``.")
ndtr = _unary("special_ndtr", "The standard normal CDF: ``clgrad.special.ndtr(x)``.")
ndtri = _unary("special_ndtri", "The inverse of the standard normal CDF (the quantile function).")
log_ndtr = _unary("special_log_ndtr", "``log(ndtr(x))``, accurate far into both tails.")
i0e = _unary("special_i0e", "The exponentially scaled modified Bessel function ``exp(-|x|) * I0(x)``.")
i1 = _unary("special_i1", "The modified Bessel function of the first kind of order 1.")
i1e = _unary("special_i1e", "The exponentially scaled ``exp(-|x|) * I1(x)``.")
entr = _unary("special_entr", "Elementwise entropy ``-x * log(x)`` (0 at 0, -inf below 0).")
bessel_j0 = _unary("special_bessel_j0", "The Bessel function of the first kind of order 0 (no gradient, as PyTorch).")
bessel_j1 = _unary("special_bessel_j1", "The Bessel function of the first kind of order 1 (no gradient, as PyTorch).")
spherical_bessel_j0 = _unary("special_spherical_bessel_j0", "``sin(x) / x``, 1 at 0 and 0 at +-inf.")
modified_bessel_i0 = _unary("i0", "The modified Bessel function of the first kind of order 0 (``clgrad.i0``).")
modified_bessel_i1 = _unary("special_i1", "The modified Bessel function of the first kind of order 1.")
xlog1py = _binary("special_xlog1py", "``x * log1p(y)``, 0 where ``x == 0`` unless ``y`` is NaN.")


def zeta(input, other, *, out=None):
    """The Hurwitz zeta function ``sum_k (k + other) ** -input``: ``clgrad.special.zeta(2.0, x)``."""
    return _P.apply("special_zeta", input, other, out=out)


def multigammaln(input, p, *, out=None):
    """The log of the multivariate gamma function (``clgrad.mvlgamma``)."""
    result = _mvlgamma(input, p)
    return result if out is None else out.copy_(result)


def softmax(input, dim, *, dtype=None):
    """``clgrad.softmax`` with torch.special's signature (``dim`` required)."""
    return _softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    """``clgrad.log_softmax`` with torch.special's signature (``dim`` required)."""
    return _log_softmax(input, dim, dtype=dtype)


def _polynomial(name: str):
    def fn(input, n, *, out=None):
        return _P.apply(f"special_{name}", input, n, out=out)

    fn.__name__ = name
    fn.__doc__ = f"torch.special.{name}(input, n): the polynomial of degree ``n`` (truncated to an integer) at input."
    return fn


globals().update({name: _polynomial(name) for name in _POLYNOMIALS})


def _cephes(name: str):
    fn = _unary(f"special_{name}", f"torch.special.{name}(input): PyTorch's Cephes algorithm (no gradient, as PyTorch).")
    fn.__name__ = name
    return fn


globals().update({name: _cephes(name) for name in _CEPHES})
