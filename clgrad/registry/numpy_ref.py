"""numpy references of the elementwise ops whose meaning is more than one numpy call: the C-style integer guards
(division by zero, INT_MIN / -1, shifts past the width), PyTorch's special values, and libm's erf. Each must give
the same answer as its C expression in ``elementwise.py`` (float16 computes in float32).
"""
from __future__ import annotations

import math

import numpy as np


def np_floor_divide(a, b):
    if a.dtype.kind in "iub" and b.dtype.kind in "iub":
        # C-style guard for division by zero and INT_MIN / -1, matching the OpenCL helper
        with np.errstate(all="ignore"):
            safe = np.where(b == 0, 1, b).astype(np.result_type(a, b))
            return np.where(b == 0, 0, np.floor_divide(a, safe))
    return np.floor_divide(a, b)


def np_trunc_divide(a, b):
    if a.dtype.kind in "iub" and b.dtype.kind in "iub":
        q = np_floor_divide(a, b)
        with np.errstate(all="ignore"):
            inexact = (b != 0) & (a - q * b != 0)
        return np.where(inexact & ((a < 0) != (b < 0)), q + 1, q)
    return np.trunc(a / b)


def np_remainder(a, b):
    if a.dtype.kind in "iub" and b.dtype.kind in "iub":
        with np.errstate(all="ignore"):
            safe = np.where(b == 0, 1, b).astype(np.result_type(a, b))
            return np.where(b == 0, 0, np.remainder(a, safe))
    # PyTorch's formula: a zero remainder keeps fmod's sign (that of a) where numpy gives copysign(0, b)
    mod = np.fmod(a, b)
    return np.where((mod != 0) & ((b < 0) != (mod < 0)), mod + b, mod)


def np_fmod(a, b):
    if a.dtype.kind in "iub" and b.dtype.kind in "iub":
        # x % -1 is 0 (and INT_MIN % -1 would trap); x % 0 gives 0, as the OpenCL guard does
        with np.errstate(all="ignore"):
            safe = np.where((b == 0) | (b == -1), 1, b).astype(np.result_type(a, b))
            return np.where(b == 0, 0, np.fmod(a, safe))
    return np.fmod(a, b)


def np_sign(a):
    # PyTorch's sign is (0 < a) - (a < 0): NaN gives 0, bool is the identity
    if a.dtype.kind == "b":
        return a
    return ((a > 0).astype(a.dtype) - (a < 0).astype(a.dtype)).astype(a.dtype)


def np_pow(a, b):
    if a.dtype.kind in "iub" and b.dtype.kind in "iub":
        # integers to negative powers: 1 and -1 stay defined, everything else becomes 0 (as PyTorch on GPU)
        a, b = np.broadcast_arrays(a, b)
        neg = b < 0
        with np.errstate(all="ignore"):
            out = np.power(a, np.where(neg, 0, b))
        odd = (b % 2) != 0
        special = np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0)).astype(out.dtype)
        return np.where(neg, special, out)
    if np.ndim(b) == 0 and np.ndim(a) > 0:
        # numpy turns a scalar (or stride-0) exponent 0.5 into sqrt, which differs from C's pow at -0 and -inf;
        # PyTorch's own shortcuts are pow_scalar_kernel's (registry/elementwise.py), where they apply
        b = np.full_like(a, b)
    return np.power(a, b)


def float_only(f):
    """Rounding functions are the identity on integers (numpy would return floats)."""
    return lambda a: a if a.dtype.kind in "iub" else f(a)


def np_clamp(a, lo, hi):
    return np.minimum(np.maximum(a, lo), hi)


def sigmoid(a):
    return 1 / (1 + np.exp(-a))


_ERF = np.frompyfunc(math.erf, 1, 1)
_ERFC = np.frompyfunc(math.erfc, 1, 1)


def np_erf(a):
    # no scipy at run time: libm's erf per element, which is what the OpenCL builtin approximates
    return np.asarray(_ERF(a)).astype(a.dtype)


def np_erfc(a):
    return np.asarray(_ERFC(a)).astype(a.dtype)


def np_gelu(a):
    return 0.5 * a * (1 + np_erf(a * a.dtype.type(math.sqrt(0.5))))


def np_gelu_tanh(a):
    k = a.dtype.type(-2 * math.sqrt(2 / math.pi))
    return a / (1 + np.exp(k * (a + a.dtype.type(0.044715) * a * a * a)))


def np_hardsigmoid(a):
    return np.minimum(np.maximum(a + 3, 0), 6) / a.dtype.type(6)


def np_hardtanh(a, lo, hi):
    return np.where(a < lo, lo, np.where(a > hi, hi, a))


def np_nan_to_num(a, nan, posinf, neginf):
    if a.dtype.kind != "f":
        return a
    return np.where(np.isnan(a), nan, np.where(np.isinf(a), np.where(a > 0, posinf, neginf), a))


def np_logit(a, eps):
    # eps < 0 means no clamping (torch.logit's eps=None)
    lo, hi = eps, 1 - eps
    a = np.where(eps >= 0, np.where(a < lo, lo, np.where(a > hi, hi, a)), a)
    return np.log(a / (1 - a))


def np_xlogy(a, b):
    return np.where(np.isnan(b), b, np.where(a == 0, a.dtype.type(0), a * np.log(b)))


def np_lerp(a, b, w):
    # PyTorch's two-sided formula (as its vectorized CPU kernel: signed zeros agree): exact at both ends
    return np.where(np.abs(w) < 0.5, a + w * (b - a), b + (w - 1) * (b - a))


def np_isclose(equal_nan):
    def f(a, b, rtol, atol):
        err = np.abs(a - b)
        close = (a == b) | (np.isfinite(err) & (err <= atol + np.abs(rtol * b)))
        return close | (np.isnan(a) & np.isnan(b)) if equal_nan else close

    return f


def shift(op):
    def f(a, b):
        bits = a.dtype.itemsize * 8
        out = op(a, np.clip(b, 0, bits - 1).astype(a.dtype))
        return np.where((b < 0) | (b >= bits), 0 if op is np.left_shift else np.where(a < 0, -1, 0), out).astype(a.dtype)

    return f


# ---- nn.functional's shrink/threshold activations --------------------------------------------------------------
def np_hardshrink(a, lambd):
    return np.where((a >= -lambd) & (a <= lambd), a.dtype.type(0), a)


def np_softshrink(a, lambd):
    return np.where(a > lambd, a - lambd, np.where(a < -lambd, a + lambd, a * 0))


def np_threshold(a, threshold, value):
    return np.where(a <= threshold, np.asarray(value).astype(a.dtype), a)
