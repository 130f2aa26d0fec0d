"""The special functions of issue 17's records in ``elementwise.py``: numpy mirrors of the looping helpers of
``kernels/special_fns.mako`` (same branches, same iteration counts, so the cpu backend agrees with the kernels:
erfinv/ndtri by Newton steps from Giles' guess, I0/I1 by series and asymptotic expansion, igamma by series and
continued fraction, Hurwitz zeta by Cephes' Euler-Maclaurin sum, J0/J1, the orthogonal polynomials); the C
expressions and references of the closed-form ones (ndtr, log_ndtr, sinc, entr, frexp...); their gradient rules
(Tensor methods only, PyTorch's derivatives.yaml formulas; ``Unimplemented`` marks a gradient PyTorch lacks).

A record is one C expression; a loop needs a helper, and ``kernels/elementwise.cl.mako`` includes
``special_fns.mako`` only into programs whose expressions call an ``spf_*`` function, so other ops' builds do not
pay for it. scipy is not a dependency: tests compare these with PyTorch (and scipy where installed).
"""
from __future__ import annotations

import math

import numpy as np

from .special import np_lgamma

_SQRTPI_2 = math.sqrt(math.pi) / 2
_2_SQRTPI = 2 / math.sqrt(math.pi)
_SQRT2 = math.sqrt(2.0)
_GILES_LO = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
             -0.00417768164, 0.246640727, 1.50140941)
_GILES_HI = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
             0.00943887047, 1.00167406, 2.83297682)
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
           -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15, 1.8152105401943546773e17,
           -7.1661652561756670113e18)
_ERF = np.frompyfunc(math.erf, 1, 1)
_ERFC = np.frompyfunc(math.erfc, 1, 1)


def _erf(x):
    return np.asarray(_ERF(x), dtype=np.float64).astype(x.dtype)


def _erfc(x):
    return np.asarray(_ERFC(x), dtype=np.float64).astype(x.dtype)


def _horner(coefs, w):
    p = np.full_like(w, coefs[0])
    for c in coefs[1:]:
        p = c + p * w
    return p


def _giles(w):
    with np.errstate(all="ignore"):
        return np.where(w < 5, _horner(_GILES_LO, w - 2.5), _horner(_GILES_HI, np.sqrt(w) - 3))


def np_erfinv(y):
    with np.errstate(all="ignore"):
        x = _giles(-np.log((1 - y) * (1 + y))) * y
        for _ in range(2):
            x = x - (_erf(x) - y) / (_2_SQRTPI * np.exp(-x * x))
        x = np.where(np.abs(y) == 1, np.copysign(np.inf, y), x)
    return np.where(np.isnan(y) | (np.abs(y) > 1), np.nan, x).astype(y.dtype)


def _erfcinv(q):
    with np.errstate(all="ignore"):
        lq = np.log(q)
        x = np.where(q > 1e-10, _giles(-np.log(q * (2 - q))) * (1 - q), np.sqrt(-lq - 0.5 * np.log(math.pi * -lq)))
        for _ in range(3):
            ex = np_erfcx(x)
            x = x + (np.log(ex) - x * x - lq) * ex * _SQRTPI_2
    return np.where(q == 0, np.inf, x)


def np_ndtri(p):
    with np.errstate(all="ignore"):
        mid = _SQRT2 * np_erfinv(2 * p - 1)
        tail = np.where(p < 0.5, -_SQRT2 * _erfcinv(2 * p), _SQRT2 * _erfcinv(2 * (1 - p)))
        out = np.where((p >= 0.25) & (p <= 0.75), mid, tail)
    return np.where(np.isnan(p) | (p < 0) | (p > 1), np.nan, out).astype(p.dtype)


def _bessel_ie(x, nu: int):
    ax = np.abs(x)
    with np.errstate(all="ignore"):
        q = ax * ax / 4
        t = ax / 2 if nu else np.ones_like(ax)
        series = t
        for k in range(1, 61):
            t = t * (q / (x.dtype.type(k) * x.dtype.type(k + nu)))
            series = series + t
        series = series * np.exp(-ax)
        t, mu = np.ones_like(ax), 4 * nu * nu
        asym = t
        for k in range(1, 31):
            t = t * ((x.dtype.type((2 * k - 1) ** 2) - mu) / (x.dtype.type(8 * k) * ax))
            asym = asym + t
        asym = asym / np.sqrt(x.dtype.type(2 * math.pi) * ax)
        s = np.where(ax <= 30, series, asym)
    return np.where(x < 0, -s, s) if nu else s


def np_i0e(x):
    return _bessel_ie(x, 0)


def np_i1e(x):
    return _bessel_ie(x, 1)


def _bessel_i(x, nu):
    with np.errstate(all="ignore"):
        return (_bessel_ie(x, nu) * np.exp(np.abs(x))).astype(x.dtype)  # NaN at +-inf, as PyTorch


def np_i0(x):
    return _bessel_i(x, 0)


def np_i1(x):
    return _bessel_i(x, 1)


def _igamma(a, x, upper: bool):
    a, x = np.broadcast_arrays(a, x)
    dt = np.result_type(a, x)
    with np.errstate(all="ignore"):
        front = np.exp(a * np.log(x) - x - np_lgamma(a))
        ap, dl = a.copy(), 1 / a
        total = dl.copy()
        for _ in range(500):
            going = np.abs(dl) > np.abs(total) * 1e-17
            ap = np.where(going, ap + 1, ap)
            dl = np.where(going, dl * x / ap, dl)
            total = np.where(going, total + dl, total)
        p_series = total * front
        b, c, d = x + 1 - a, np.full_like(x, 1e30), 1 / (x + 1 - a)
        h, dl = d.copy(), np.zeros_like(x)
        for i in range(1, 501):
            going = np.abs(dl - 1) > 1e-17
            an = -dt.type(i) * (dt.type(i) - a)
            b2 = b + 2
            d2 = an * d + b2
            d2 = np.where(np.abs(d2) < 1e-30, dt.type(1e-30), d2)
            c2 = b2 + an / c
            c2 = np.where(np.abs(c2) < 1e-30, dt.type(1e-30), c2)
            d2 = 1 / d2
            b, c, d = np.where(going, b2, b), np.where(going, c2, c), np.where(going, d2, d)
            dl = np.where(going, d2 * c2, dl)
            h = np.where(going, h * dl, h)
        q_frac = front * h
        p = np.where(x < a + 1, p_series, 1 - q_frac)
        q = np.where(x < a + 1, 1 - p_series, q_frac)
        lo, hi = (1.0, 0.0) if upper else (0.0, 1.0)  # the values of P's 0 and 1
        out = q if upper else p
        # PyTorch's special values, the first that applies winning
        out = np.where(np.isinf(x), hi, out)
        out = np.where(np.isinf(a), np.where(np.isinf(x), np.nan, lo), out)
        out = np.where(x == 0, lo, out)
        out = np.where(a == 0, np.where(x > 0, hi, np.nan), out)
        out = np.where((x < 0) | (a < 0), np.nan, out)
    return out.astype(dt)


def np_igamma(a, x):
    return _igamma(a, x, False)


def np_igammac(a, x):
    return _igamma(a, x, True)


def np_zeta(x, q):
    x, q = np.broadcast_arrays(x, q)
    dt = np.result_type(x, q)
    with np.errstate(all="ignore"):
        s = np.power(q, -x)
        a, b = q.copy(), np.zeros_like(s)
        done = np.zeros(s.shape, bool)
        for i in range(2000):
            going = ((i < 9) | (a <= 9)) & ~done
            if not going.any():
                break
            a = np.where(going, a + 1, a)
            b = np.where(going, np.power(a, -x), b)
            s = np.where(going, s + b, s)
            done |= going & (np.abs(b / s) < 1.11022302462515654042e-16)
        early = s
        w = a
        s = s + b * w / (x - 1) - 0.5 * b
        f, k = np.ones_like(s), 0.0
        for coef in _ZETA_A:
            f = f * (x + k)
            b = b / w
            s = s + f * b / dt.type(coef)
            k += 1
            f = f * (x + k)
            b = b / w
            k += 1
        s = np.where(done, early, s)
        s = np.where((q <= 0) & (q == np.floor(q)), np.inf, np.where((q <= 0) & (x != np.floor(x)), np.nan, s))
        s = np.where(x < 1, np.nan, s)
        s = np.where(x == 1, np.inf, s)
    return s.astype(dt)


# ---- closed forms: C expressions and references ----------------------------------------------------------
def np_erfcx(x):
    with np.errstate(all="ignore"):
        hi = x * x
        lo = _fma(x, x, -hi)
        direct = np.exp(hi) * (1 + lo) * _erfc(x)
        w = 1 / (2 * x * x)
        series = np.ones_like(x)
        for k in range(12, 0, -1):
            series = 1 - (2 * k - 1) * w * series
        asym = series / (x * x.dtype.type(math.sqrt(math.pi)))
        return np.where(x < -26.7, np.inf, np.where(x > 9, asym, direct)).astype(x.dtype)


def _fma(a, b, c):
    # exact a * b - hi in float64 through longdouble where numpy lacks fma (float32 inputs are exact in float64)
    if a.dtype == np.float32:
        return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(np.float32)
    return (a.astype(np.longdouble) * b.astype(np.longdouble) + c.astype(np.longdouble)).astype(a.dtype)


NDTR_C = "(K(0.5) * erfc(-a * K(0.70710678118654752440)))"


def np_ndtr(x):
    return (0.5 * _erfc(-x * x.dtype.type(math.sqrt(0.5)))).astype(x.dtype)


def log_ndtr_c() -> str:
    """PyTorch's calc_log_ndtr: log(erfcx(-x/sqrt2)/2) - x^2/2 below -1, log1p(-erfc(x/sqrt2)/2) above."""
    t = "(a * K(0.70710678118654752440))"
    return (f"(a < (T)-1 ? log(spf_erfcx(-{t}) / (T)2) - {t} * {t} : "
            f"log1p(-erfc({t}) / (T)2))")


def np_log_ndtr(x):
    t = x * x.dtype.type(math.sqrt(0.5))
    with np.errstate(all="ignore"):
        return np.where(x < -1, np.log(np_erfcx(-t) / 2) - t * t, np.log1p(-_erfc(t) / 2)).astype(x.dtype)


SINC_C = "(a == (T)0 ? (T)1 : sin(K(3.14159265358979323846) * a) / (K(3.14159265358979323846) * a))"


def np_sinc(x):
    with np.errstate(all="ignore"):
        y = x.dtype.type(math.pi) * x
        return np.where(x == 0, 1, np.sin(y) / y).astype(x.dtype)


ENTR_C = "(isnan(a) ? a : (a > (T)0 ? -a * log(a) : (a == (T)0 ? (T)0 : -(T)INFINITY)))"


def np_entr(x):
    with np.errstate(all="ignore"):
        return np.where(np.isnan(x), x, np.where(x > 0, -x * np.log(x), np.where(x == 0, 0, -np.inf))).astype(x.dtype)


LOGADDEXP2_C = ("((isinf(a) && a == b) ? a : fmax(a, b) + log1p(exp2(-fabs(a - b))) * "
                "K(1.44269504088896340736))")


def np_logaddexp(a, b):
    """log(e^a + e^b); equal infinities give themselves (PyTorch's rule: -inf, -inf -> -inf, not NaN)."""
    with np.errstate(all="ignore"):
        out = np.fmax(a, b) + np.log1p(np.exp(-np.abs(a - b)))
        return np.where(np.isinf(a) & (a == b), a, out).astype(np.result_type(a, b))


def np_logaddexp2(a, b):
    with np.errstate(all="ignore"):
        out = np.fmax(a, b) + np.log1p(np.exp2(-np.abs(a - b))) * (1 / math.log(2))
        return np.where(np.isinf(a) & (a == b), a, out).astype(np.result_type(a, b))


def np_xlog1py(a, b):
    with np.errstate(all="ignore"):
        return np.where(np.isnan(b), b, np.where(a == 0, 0, a * np.log1p(b))).astype(np.result_type(a, b))


# frexp: the exponent as a float (converted to int32 by the front end) and the mantissa
FREXP_EXP_C = "((a == (T)0 || !isfinite(a)) ? (T)0 : (T)(ilogb(a) + 1))"
FREXP_MANT_C = f"((a == (T)0 || !isfinite(a)) ? a : ldexp(a, -(int){FREXP_EXP_C}))"


def np_frexp_exponent(x):
    return np.frexp(x)[1].astype(x.dtype)


def np_frexp_mantissa(x):
    return np.frexp(x)[0].astype(x.dtype)


def np_heaviside(a, b):
    return np.where(a == 0, b, (a > 0).astype(np.result_type(a, b))).astype(np.result_type(a, b))


def np_signbit(a):
    return np.signbit(a) if a.dtype.kind == "f" else a < 0


def np_gcd(a, b):
    return np.gcd(a, b).astype(np.result_type(a, b))


def np_lcm(a, b):
    with np.errstate(all="ignore"):
        return np.lcm(a, b).astype(np.result_type(a, b))


# ---- gradient rules (Tensor methods only; PyTorch's derivatives.yaml formulas) ----------------------------------
class Unimplemented:
    """A gradient PyTorch does not implement (igamma's in its first argument...): backward raises PyTorch's
    NotImplementedError when this input needs a gradient, and nothing happens otherwise."""

    def __init__(self, what: str):
        self.what = what

    def error(self) -> NotImplementedError:
        return NotImplementedError(f"the derivative for '{self.what}' is not implemented.")


def _is_tensor(x) -> bool:
    return hasattr(x, "_storage")


_SQRT_2PI = math.sqrt(2 * math.pi)


def sinc_grad(g, a, out):
    pa = a * math.pi
    return ((g * (pa * pa.cos() - pa.sin()) / (pa * a)).masked_fill(a == 0, 0.0),)


def logaddexp2_grad(g, a, b, out):
    return g * (a - out).exp2() if _is_tensor(a) else None, g * (b - out).exp2() if _is_tensor(b) else None


def xlog1py_grad(g, x, y, out):
    if not _is_tensor(x):
        gx = None
    elif _is_tensor(y):
        gx = (g * y.log1p()).masked_fill((x == 0) & (y <= -1), 0.0)
    else:
        gx = g * (math.log1p(y) if y > -1 else (-math.inf if y == -1 else math.nan))
        gx = gx.masked_fill((x == 0) & (y <= -1), 0.0) if y <= -1 else gx
    return gx, g * x / (y + 1) if _is_tensor(y) else None


def i1_grad(g, a, out):
    return ((g * (a.i0() - out / a)).where(a != 0, g * 0.5),)


def i1e_grad(g, a, out):
    return ((g * (a._special_i0e() - out * (a.sign() + 1 / a))).where(a != 0, g * 0.5),)


def igamma_grad(sign: float, name: str):
    def rule(g, a, x, out):
        # d/dx P(a, x) = x^(a-1) e^-x / Gamma(a)
        if not _is_tensor(x):
            return Unimplemented(f"{name}: input"), None
        lg = a.lgamma() if _is_tensor(a) else math.lgamma(a)
        return Unimplemented(f"{name}: input"), sign * g * ((a - 1) * x.log() - x - lg).exp()

    return rule


def zeta_grad(g, x, q, out):
    if not _is_tensor(q):
        return Unimplemented("zeta"), None
    return Unimplemented("zeta"), -g * x * q._special_zeta_of(x + 1)


def frexp_grad(g, a, out):
    return ((g * out / a).where(a != 0, g),)


def overloads(base: str):
    """PyTorch's node names of a binary special function: ``Backward1`` with a number first, ``Backward2`` with a
    number second (``SpecialZetaBackward1`` for ``zeta(2.0, q)``)."""
    def node(a, b):
        return f"{base}Backward{1 if not _is_tensor(a) else 2 if not _is_tensor(b) else 0}"

    return node


def _bessel_j(x, nu: int):
    """kernels/special_fns.mako's spf_bessel_j: series below 5, Miller's recurrence to 25, Hankel beyond."""
    ax = np.abs(x)
    f = x.dtype.type
    with np.errstate(all="ignore"):
        q, t = ax * ax / 4, (ax / 2 if nu else np.ones_like(ax))
        series = t
        for k in range(1, 31):
            t = t * (-q / (f(k) * f(k + nu)))
            series = series + t
        bjp, bj, total, j1 = np.zeros_like(ax), np.ones_like(ax), np.zeros_like(ax), np.zeros_like(ax)
        for k in range(70, 0, -1):
            bjp, bj = bj, f(2 * k) / ax * bj - bjp
            big = np.abs(bj) > 1e10
            bj, bjp = np.where(big, bj * f(1e-10), bj), np.where(big, bjp * f(1e-10), bjp)
            total, j1 = np.where(big, total * f(1e-10), total), np.where(big, j1 * f(1e-10), j1)
            if k == 2:
                j1 = bj
            if k > 2 and k % 2:
                total = total + 2 * bj
        miller = (j1 if nu else bj) / (bj + total)
        mu, t, p, qq = 4 * nu * nu, np.ones_like(ax), np.ones_like(ax), np.zeros_like(ax)
        for k in range(1, 20):
            t = t * ((f(mu) - f((2 * k - 1) ** 2)) / (f(8 * k) * ax))
            signed = -t if k & 2 else t
            if k & 1:
                qq = qq + signed
            else:
                p = p + signed
        c, s = np.cos(ax), np.sin(ax)
        cw, sw = (s - c, -(s + c)) if nu else (c + s, s - c)
        hankel = np.sqrt(f(2 / math.pi) / ax) * (p * cw - qq * sw) * f(math.sqrt(0.5))
        r = np.where(ax < 5, series, np.where(ax <= 25, miller, hankel))
    return (np.where(x < 0, -r, r) if nu else r).astype(x.dtype)


def np_bessel_j0(x):
    return _bessel_j(x, 0)


def np_bessel_j1(x):
    return _bessel_j(x, 1)


# ---- orthogonal polynomials: kernels/special_fns.mako's spf_poly, element by element in the compute dtype ------
POLYNOMIALS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
               "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p")


def _cheb(x, n, kind, f):
    sign = f(-1) if n & 1 else f(1)
    if x == 1:
        return f(n + 1) if kind == 1 else f(2 * n + 1) if kind == 3 else f(1)
    if x == -1:
        return sign * (f(n + 1) if kind == 1 else f(2 * n + 1) if kind == 2 else f(1))
    if n > 6 and abs(x) < 1:
        th = np.arccos(x)
        half = f(n) + f(0.5)
        return (np.cos(f(n) * th), np.sin(f(n + 1) * th) / np.sin(th), np.cos(half * th) / np.cos(th / f(2)),
                np.sin(half * th) / np.sin(th / f(2)))[kind]
    if n == 0:
        return f(1)
    p, q = f(1), (x, x + x, x + x - f(1), x + x + f(1))[kind]
    for _ in range(2, n + 1):
        p, q = q, (x + x) * q - p
    return q


def _poly1(x, nf, kind: int, f):
    if np.isnan(nf) or nf <= -1:  # PyTorch casts n to int64 first: a degree in (-1, 0) is 0
        return f(0)
    n = int(nf)
    if kind <= 3:
        return _cheb(x, n, kind, f)
    if (kind == 6 and x == 0) or n == 0:
        return f(1)
    if kind == 7 and abs(x) == 1:
        return f(1) if (x > 0 or not n & 1) else f(-1)
    p, q = f(1), (x + x if kind == 4 else f(1) - x if kind == 6 else x)
    for k in range(1, n):
        kk = f(k)
        if kind == 4:
            r = (x + x) * q - (kk + kk) * p
        elif kind == 5:
            r = x * q - kk * p
        elif kind == 6:
            r = ((kk + kk + (f(1) - x)) * q - kk * p) / (kk + f(1))
        else:
            r = ((kk + kk + f(1)) * x * q - kk * p) / (kk + f(1))
        p, q = q, r
    return q


def np_poly(kind: int, shifted: bool = False):
    """The numpy reference of spf_poly(x, n, kind) (a shifted Chebyshev polynomial at 2x - 1)."""
    def ref(x, n):
        x, n = np.broadcast_arrays(x, n)
        f = np.result_type(x, n).type
        with np.errstate(all="ignore"):
            y = x + x - f(1) if shifted else x
            out = [_poly1(f(a), f(b), kind, f) for a, b in zip(y.ravel(), n.ravel())]
        return np.array(out, dtype=f).reshape(x.shape)

    return ref


def poly_c(kind: int, shifted: bool = False) -> str:
    return f"spf_poly({'a + a - (T)1' if shifted else 'a'}, b, {kind})"


def np_spherical_j0(x):
    with np.errstate(all="ignore"):
        return np.where(np.isinf(x), 0, np.where(x == 0, 1, np.sin(x) / x)).astype(x.dtype)
