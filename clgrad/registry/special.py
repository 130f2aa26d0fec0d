"""The special functions of the elementwise registry (lgamma's derivatives, the gamma sampler's gradient): the C
expressions the records in ``elementwise.py`` use, and their numpy references.

OpenCL C has ``lgamma`` but no digamma or polygamma, and a record is one C expression (no loops, no helpers), so
the series are written out here by Python and pasted in: the recurrence shifts the argument by a fixed ``N`` (the
terms 1/(x+k) unrolled), then the asymptotic expansion with Bernoulli-number coefficients (Horner form) finishes.
With N = 10 the truncation error is below 1e-15 relative for x > 0 (the next term of the series at x = 10).
Negative arguments use the reflection formula for digamma; polygamma(n >= 1) sums the Hurwitz zeta series; below 1 the
terms (x+j)^-s up to x + m >= 1 are summed by a loop helper (``spf_zeta_head`` in kernels/special_fns.mako, at most
65536 of them) before the unrolled shift, so it is accurate to ~1e-12 for negative x too. ``standard_gamma_grad`` is PyTorch's
``standard_gamma_grad_one`` (ATen/native/Distributions.h) branch for branch: the implicit reparameterization
gradient d sample / d alpha of a Gamma(alpha, 1) sample.

The numpy references compute the same formulas (with the same N), so the cpu backend agrees with the kernels;
tests/registry compares both with PyTorch's values.
"""
from __future__ import annotations

import math

import numpy as np

_N = 10  # recurrence shift
_PI = "K(3.14159265358979323846)"
# digamma's asymptotic series in z = 1/x^2: sum_k B_2k / (2k) z^k (PyTorch's calc_digamma coefficients)
_PSI = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)
# Hurwitz zeta's Euler-Maclaurin coefficients B_2j / (2j)!
_ZETA = (1 / 12, -1 / 720, 1 / 30240, -1 / 1209600, 1 / 47900160, -691 / 1307674368000, 1 / 74724249600)
# PyTorch's bivariate rational approximation of the gamma reparameterized gradient (rows: 1, u, u^2)
_UV = ((0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089, 0.0014179084),
       (0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113, -0.0035938915, -0.00058392623),
       (0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642, -0.0021309326, 0.00085092367,
        -1.5247877e-07))


def _k(c: float) -> str:
    return f"K({float(c)!r})"


def _horner(coefs, var: str) -> str:
    """c0 + var * (c1 + var * (... + var * cn)) in C."""
    expr = _k(coefs[-1])
    for c in reversed(coefs[:-1]):
        expr = f"({_k(c)} + {var} * {expr})"
    return expr


# ---- C expressions (``a``, ``b``: the operands; ``T`` the compute type) ---------------------------------------
def _psi_pos(x: str) -> str:
    """digamma(x) for x > 0: psi(x + N) by the asymptotic series, minus sum_k 1/(x + k)."""
    z = f"({x} + (T){_N})"
    w = f"((T)1 / ({z} * {z}))"
    recips = " + ".join(f"(T)1 / ({x} + (T){k})" for k in range(_N))
    return f"(log({z}) - K(0.5) / {z} - {w} * {_horner(_PSI, w)} - ({recips}))"


def digamma_c(x: str = "a") -> str:
    """digamma in C: -inf at +0 (+inf at -0), NaN at negative integers, reflection below 0, as PyTorch."""
    reflected = f"{_psi_pos(f'((T)1 - {x})')} - {_PI} / tan({_PI} * ({x} - trunc({x})))"
    return (f"({x} == (T)0 ? copysign((T)INFINITY, -{x}) : ({x} < (T)0 ? ({x} == trunc({x}) ? (T)NAN : {reflected})"
            f" : {_psi_pos(x)}))")


def _zeta(s: str, q: str) -> str:
    """Hurwitz zeta(s, q): sum_{k<N} (q+k)^-s, then Euler-Maclaurin at Q = q + N (the rising factorials of s nested
    into the Horner form)."""
    big_q = f"({q} + (T){_N})"
    u = f"((T)1 / ({big_q} * {big_q}))"
    inner = _k(_ZETA[-1])
    for j in range(len(_ZETA) - 1, 0, -1):
        inner = f"({_k(_ZETA[j - 1])} + {u} * ({s} + (T){2 * j - 1}) * ({s} + (T){2 * j}) * {inner})"
    head = " + ".join(f"pow({q} + (T){k}, -{s})" for k in range(_N))
    return f"({head} + pow({big_q}, -{s}) * ({big_q} / ({s} - (T)1) + K(0.5) + {s} / {big_q} * {inner}))"


def polygamma_c() -> str:
    """polygamma(n = b, x = a) = (-1)^(n+1) n! zeta(n + 1, x); n = 0 is digamma."""
    tail = _zeta("(b + (T)1)", "(a + spf_zeta_steps(a))")  # shifted to >= 1 first: accurate below -2 too
    zeta = f"(fmod(b, (T)2) == (T)0 ? (T)-1 : (T)1) * tgamma(b + (T)1) * (spf_zeta_head(b + (T)1, a) + {tail})"
    return f"(b == (T)0 ? {digamma_c('a')} : {zeta})"


def _gamma_grad_taylor() -> str:
    # x < 0.8: the Taylor series of the incomplete gamma function, differentiated in alpha
    numer = [f"{_k((-1) ** i / math.factorial(i))}{''.join(' * b' for _ in range(i))}" for i in range(6)]
    s1 = " + ".join(f"{n} / (a + (T){i})" for i, n in enumerate(numer))
    s2 = " + ".join(f"{n} / ((a + (T){i}) * (a + (T){i}))" for i, n in enumerate(numer))
    result = (f"(-((log(b) - {digamma_c('a')}) * (pow(b, a) * ({s1})) - pow(b, a) * ({s2}))"
              f" / (pow(b, a - (T)1) * exp(-b)))")
    return f"(isnan({result}) ? (T)0 : {result})"


def _gamma_grad_rice() -> str:
    # alpha > 8 and x within 10% of alpha: Rice's saddle point expansion
    return ("(((T)1 + (T)24 * a * ((T)1 + (T)12 * a)) * ((T)1440 * (a * a) + (T)6 * b * ((T)53 - (T)120 * b)"
            " - (T)65 * b * b / a + a * ((T)107 + (T)3600 * b)) / ((T)1244160 * (a * a) * (a * a)))")


def _gamma_grad_saddle() -> str:
    term3 = "pow(b - a - a * log(b / a), (T)-1.5)"
    term23 = f"(b < a ? sqrt((T)8 * a) / (a - b) - {term3} : sqrt((T)8 * a) / (a - b) + {term3})"
    term1 = f"(log(b / a) * {term23} - sqrt((T)2 / a) * (a + b) / ((a - b) * (a - b)))"
    stirling = "((T)1 + (T)1 / ((T)12 * a) * ((T)1 + (T)1 / ((T)24 * a)))"
    return f"(-{stirling} * (b * {term1}) / sqrt((T)8 * a))"


def _gamma_grad_rational() -> str:
    u, v = "log(b / a)", "log(a)"
    cv = [f"({_k(_UV[0][i])} + {u} * ({_k(_UV[1][i])} + {u} * {_k(_UV[2][i])}))" for i in range(8)]
    p = f"({cv[0]} + {v} * ({cv[1]} + {v} * ({cv[2]} + {v} * {cv[3]})))"
    q = f"({cv[4]} + {v} * ({cv[5]} + {v} * ({cv[6]} + {v} * {cv[7]})))"
    return f"exp({p} / {q})"


def standard_gamma_grad_c() -> str:
    """d x / d alpha for x ~ Gamma(alpha = a, 1) at x = b, PyTorch's branches and float thresholds."""
    return (f"(b < (T)0.8f ? {_gamma_grad_taylor()} : (a > (T)8.0f ? ((T)0.9f * a <= b && b <= (T)1.1f * a ? "
            f"{_gamma_grad_rice()} : {_gamma_grad_saddle()}) : {_gamma_grad_rational()}))")


# ---- numpy references -----------------------------------------------------------------------------------------
def _poly(coefs, x):
    out = np.full_like(x, coefs[-1])
    for c in reversed(coefs[:-1]):
        out = c + x * out
    return out


def _lgamma1(x: float) -> float:
    if math.isnan(x) or math.isinf(x):
        return x if math.isnan(x) else math.inf
    return math.inf if x <= 0 and x == math.floor(x) else math.lgamma(x)


_LGAMMA = np.frompyfunc(_lgamma1, 1, 1)


def np_lgamma(a):
    # libm's lgamma per element (no scipy at run time), +inf at the poles as C's lgamma
    return np.asarray(_LGAMMA(a.astype(np.float64)), dtype=np.float64).astype(a.dtype)


def _np_psi_pos(x):
    z = x + _N
    w = 1 / (z * z)
    recips = sum(1 / (x + k) for k in range(_N))
    return np.log(z) - 0.5 / z - w * _poly(_PSI, w) - recips


def np_digamma(a):
    with np.errstate(all="ignore"):
        x = a.astype(np.float64)
        frac = x - np.trunc(x)
        neg = _np_psi_pos(1 - x) - math.pi / np.tan(math.pi * frac)
        out = np.where(x < 0, np.where(frac == 0, np.nan, neg), _np_psi_pos(x))
        out = np.where(x == 0, np.copysign(np.inf, -x), out)
    return out.astype(a.dtype)


def _np_zeta(s, q):
    big_q = q + _N
    u = 1 / (big_q * big_q)
    inner = np.full_like(q, _ZETA[-1])
    for j in range(len(_ZETA) - 1, 0, -1):
        inner = _ZETA[j - 1] + u * (s + 2 * j - 1) * (s + 2 * j) * inner
    head = sum(np.power(q + k, -s) for k in range(_N))
    return head + np.power(big_q, -s) * (big_q / (s - 1) + 0.5 + s / big_q * inner)


def _np_zeta_steps(x):
    with np.errstate(invalid="ignore"):
        return np.where(x < 1, np.minimum(np.ceil(1 - x), 65536), 0)


def _np_zeta_head(s, x):
    """sum_{j<m} (x+j)^-s with spf_zeta_steps' m: the terms below 1 that Euler-Maclaurin can't take."""
    m = _np_zeta_steps(x)
    acc = np.zeros_like(x)
    for j in range(int(m.max()) if m.size else 0):
        acc = acc + np.where(j < m, np.power(x + j, -s), 0)
    return acc


def np_polygamma(a, n):
    n = float(n)
    if n == 0:
        return np_digamma(a)
    with np.errstate(all="ignore"):
        x = a.astype(np.float64)
        zeta = _np_zeta_head(n + 1, x) + _np_zeta(n + 1, x + _np_zeta_steps(x))
        out = (1.0 if n % 2 else -1.0) * math.gamma(n + 1) * zeta
    return out.astype(a.dtype)


def np_standard_gamma_grad(alpha, x):
    a, b = np.broadcast_arrays(alpha.astype(np.float64), x.astype(np.float64))
    with np.errstate(all="ignore"):
        s1 = sum((-b) ** i / math.factorial(i) / (a + i) for i in range(6))
        s2 = sum((-b) ** i / math.factorial(i) / ((a + i) * (a + i)) for i in range(6))
        pxa = np.power(b, a)
        taylor = -((np.log(b) - np_digamma(a)) * (pxa * s1) - pxa * s2) / (np.power(b, a - 1) * np.exp(-b))
        taylor = np.where(np.isnan(taylor), 0.0, taylor)
        rice = ((1 + 24 * a * (1 + 12 * a)) * (1440 * a * a + 6 * b * (53 - 120 * b) - 65 * b * b / a
                                                + a * (107 + 3600 * b)) / (1244160 * a ** 4))
        term3 = np.power(b - a - a * np.log(b / a), -1.5)
        term23 = np.where(b < a, np.sqrt(8 * a) / (a - b) - term3, np.sqrt(8 * a) / (a - b) + term3)
        term1 = np.log(b / a) * term23 - np.sqrt(2 / a) * (a + b) / ((a - b) * (a - b))
        saddle = -(1 + 1 / (12 * a) * (1 + 1 / (24 * a))) * (b * term1) / np.sqrt(8 * a)
        u, v = np.log(b / a), np.log(a)
        cv = [_UV[0][i] + u * (_UV[1][i] + u * _UV[2][i]) for i in range(8)]
        rational = np.exp((cv[0] + v * (cv[1] + v * (cv[2] + v * cv[3])))
                          / (cv[4] + v * (cv[5] + v * (cv[6] + v * cv[7]))))
        near = (np.float32(0.9) * a <= b) & (b <= np.float32(1.1) * a)
        out = np.where(b < np.float32(0.8), taylor,
                       np.where(a > 8, np.where(near, rice, saddle), rational))
    return out.astype(np.result_type(alpha, x))
