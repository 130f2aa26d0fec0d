"""numpy mirrors of ``kernels/special_fns.mako``'s Cephes helpers (PyTorch's ATen/native/Math.h algorithms):
Airy Ai, Bessel Y0/Y1, modified Bessel K0/K1 and their exp(x)-scaled forms. Same tables
(``kernels/cephes.py``), same branches, every branch evaluated and the right one picked per element.
"""
from __future__ import annotations

import numpy as np

from ..kernels import cephes as C
from .special_fns import np_i0, np_i1

_2_PI = 0.636619772367581343075535053490057448
_SQRT_2_PI = 0.797884560802865355879892119868763737


def _polevl(z, coefs):
    p = np.zeros_like(z)
    for c in coefs:
        p = p * z + c
    return p


def _chbevl(z, coefs):
    a, p, q = np.full_like(z, coefs[0]), np.zeros_like(z), np.zeros_like(z)
    for c in coefs[1:]:
        p, q = q, a
        a = z * q - p + c
    return 0.5 * (a - p)


def _airy_series(x):
    f, g, k, m, n, t = (np.ones_like(x), x.copy(), np.ones_like(x), np.ones_like(x), x.copy(), np.ones_like(x))
    z, eps = x * x * x, np.finfo(x.dtype).eps
    for _ in range(60):
        go = t > eps
        if not go.any():
            break
        m2 = m * z / (k + 1)
        n2 = n * z / (k + 2)
        m2 = m2 / (k + 2)
        n2 = n2 / (k + 3)
        f2, g2 = f + m2, g + n2
        m, n, f, g = (np.where(go, a, b) for a, b in ((m2, m), (n2, n), (f2, f), (g2, g)))
        k = np.where(go, k + 3, k)
        t = np.where(go, np.abs(m / f), t)
    return 0.355028053887817239260 * f - 0.258819403792806798405 * g


def np_airy_ai(x):
    """PyTorch's airy_ai_forward (special_fns.mako's spf_airy_ai)."""
    f = x.dtype.type
    with np.errstate(all="ignore"):
        ax = np.abs(x)
        z = 1 / (f(-2) * x * np.sqrt(-x) / 3)
        zz = z * z
        t = f(-2) * x * np.sqrt(-x) / 3 + f(0.25 * np.pi)
        neg = f(5.64189583547756286948e-01) / np.sqrt(np.sqrt(-x)) * (
            np.sin(t) * (1 + zz * _polevl(zz, C.AIRY_AFN) / _polevl(zz, C.AIRY_AFD))
            - np.cos(t) * (z * _polevl(zz, C.AIRY_AGN) / _polevl(zz, C.AIRY_AGD)))
        zeta = f(2) * x * np.sqrt(x) / 3
        pos = (f(5.64189583547756286948e-01) * (_polevl(1 / zeta, C.AIRY_AN) / _polevl(1 / zeta, C.AIRY_AD))
               / (2 * np.sqrt(np.sqrt(x)) * np.exp(zeta)))
        mid = _airy_series(np.where(ax > 2.09, f(0), x))  # NaN and -2.09 itself take the series, as in C
        out = np.where(x < -2.09, neg, np.where(x >= 2.09, pos, mid))
        out = np.where(x > 103.892, f(0), out)
    return np.where(np.isinf(x), np.nan, out).astype(x.dtype)


def _cephes_j_small(x, nu: int):
    """PyTorch's bessel_j0/j1_forward for 0 <= x <= 5 (spf_cephes_j_small)."""
    xx = x * x
    if nu:
        return (_polevl(xx, C.J1_RP) / _polevl(xx, C.J1_RQ) * x * (xx - 1.46819706421238932572e+01)
                * (xx - 4.92184563216946036703e+01))
    out = (xx - 5.78318596294678452118e+00) * (xx - 3.04712623436620863991e+01) * _polevl(xx, C.J0_RP) / _polevl(
        xx, C.J0_RQ)
    return np.where(x < 0.00001, 1 - xx / 4, out)


def _bessel_y(x, nu: int):
    f = x.dtype.type
    with np.errstate(all="ignore"):
        xx = x * x
        if nu:
            small = x * (_polevl(xx, C.Y1_YP) / _polevl(xx, C.Y1_YQ)) + f(_2_PI) * (_cephes_j_small(x, 1) * np.log(x) - 1 / x)
            pp, pq, qp, qq, shift = C.J1_PP, C.J1_PQ, C.J1_QP, C.J1_QQ, 2.356194490192344928846982537459627163
        else:
            small = _polevl(xx, C.Y0_YP) / _polevl(xx, C.Y0_YQ) + f(_2_PI) * np.log(x) * _cephes_j_small(x, 0)
            pp, pq, qp, qq, shift = C.J0_PP, C.J0_PQ, C.J0_QP, C.J0_QQ, 0.785398163397448309615660845819875721
        w, s = 25 / xx, x - f(shift)
        p, q = _polevl(w, pp) / _polevl(w, pq), _polevl(w, qp) / _polevl(w, qq)
        big = (p * np.sin(s) + 5 / x * q * np.cos(s)) * f(_SQRT_2_PI) / np.sqrt(x)
        out = np.where(x <= 5, small, big)
        out = np.where(x == 0, -np.inf, np.where(x < 0, np.nan, out))
    return out.astype(x.dtype)


def np_bessel_y0(x):
    return _bessel_y(x, 0)


def np_bessel_y1(x):
    return _bessel_y(x, 1)


def _bessel_k(x, nu: int, scaled: bool):
    f = x.dtype.type
    with np.errstate(all="ignore"):
        z = x * x - 2
        if nu:
            small = np.log(f(0.5) * x) * np_i1(x) + _chbevl(z, C.K1_A) / x
            big = _chbevl(8 / x - 2, C.K1_B) / np.sqrt(x)
        else:
            small = _chbevl(z, C.K0_A) - np.log(f(0.5) * x) * np_i0(x)
            big = _chbevl(8 / x - 2, C.K0_B) / np.sqrt(x)
        small = small * np.exp(x) if scaled else small
        big = big if scaled else np.exp(-x) * big
        out = np.where(x <= 2, small, big)
        out = np.where(x == 0, np.inf, np.where(x < 0, np.nan, out))
    return out.astype(x.dtype)


def np_k0(x):
    return _bessel_k(x, 0, False)


def np_k1(x):
    return _bessel_k(x, 1, False)


def np_k0e(x):
    return _bessel_k(x, 0, True)


def np_k1e(x):
    return _bessel_k(x, 1, True)


#: (torch.special name, C expression, numpy reference, sample domain): one elementwise record each (no gradient, as
#: PyTorch), generated in ``elementwise.py``
RECORDS = (
    ("airy_ai", "spf_airy_ai(a)", np_airy_ai, (-10.0, 10.0)),
    ("bessel_y0", "spf_bessel_y(a, 0)", np_bessel_y0, (0.1, 30.0)),
    ("bessel_y1", "spf_bessel_y(a, 1)", np_bessel_y1, (0.1, 30.0)),
    ("modified_bessel_k0", "spf_bessel_k(a, 0, 0)", np_k0, (0.1, 10.0)),
    ("modified_bessel_k1", "spf_bessel_k(a, 1, 0)", np_k1, (0.1, 10.0)),
    ("scaled_modified_bessel_k0", "spf_bessel_k(a, 0, 1)", np_k0e, (0.1, 30.0)),
    ("scaled_modified_bessel_k1", "spf_bessel_k(a, 1, 1)", np_k1e, (0.1, 30.0)),
)
