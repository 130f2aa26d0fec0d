"""clgrad's own float32 log, log1p, expm1, erf, sin, cos, atan, atan2, atanh and hypot (kernels/elementwise.cl.mako:
PoCL's builtins are scalar calls that stop its vectorizer) against float64 numpy: within 2 ulp on a sample of every
float32 bit pattern, special values and signed zeros exact, through the public ops, their in-place forms and the
composed ops built on them."""
from __future__ import annotations

import math

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from tests.conftest import fp64_ok
from tests.helpers import to_numpy

REFS = {"log": np.log, "log1p": np.log1p, "expm1": np.expm1, "erf": np.vectorize(math.erf, otypes=[np.float64]),
        "sin": np.sin, "cos": np.cos, "atan": np.arctan, "atanh": np.arctanh}
NEEDS_FP64 = ("sin", "cos")  # their range reduction works in double: a device without fp64 keeps the builtins
SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, -1.5, 1e-45, -1e-45, 1e-40, -1e-40, 3.4e38, -3.4e38,
                    1e-8, -1e-8, 88.7, 89.0, -104.0, 0.5, -0.5, 0.41421356, -0.29289322, 1.0, 2.0, 0.78539816,
                    1048576.0, 1048575.9, 1e8, -1e10, 1e30], np.float32)


def _sample(step: int) -> np.ndarray:
    """Every ``step``-th float32 bit pattern (NaNs and infinities included)."""
    return np.arange(0, 1 << 32, step, dtype=np.uint64).astype(np.uint32).view(np.float32)


def _ulps(got: np.ndarray, want64: np.ndarray) -> float:
    finite = np.isfinite(want64) & (np.abs(want64) <= np.finfo(np.float32).max)
    spacing = np.spacing(np.abs(want64[finite]).astype(np.float32)).astype(np.float64)
    return float((np.abs(got[finite].astype(np.float64) - want64[finite]) / spacing).max())


@pytest.mark.parametrize("name", sorted(REFS))
def test_within_two_ulp(device, name):
    x = _sample(4099 if device != "cpu" else 65537)
    with np.errstate(all="ignore"):
        want = REFS[name](x.astype(np.float64))
    got = to_numpy(getattr(clgrad, name)(clgrad.tensor(x, device=device)))
    assert got.dtype == np.float32
    # cpu runs numpy's own float32 functions (its expm1 measured 2.3 ulp) and a device without fp64 the builtin
    # sin/cos: OpenCL's bounds there (3 ulp for log/expm1, 4 for sin/cos)
    own = device != "cpu" and (name not in NEEDS_FP64 or fp64_ok(device))
    assert _ulps(got, want) <= (2.0 if own else 4.0)
    with np.errstate(over="ignore"):
        w32 = want.astype(np.float32)
    inexact = ~np.isfinite(w32)  # infinities and NaNs where float64 says so
    np.testing.assert_array_equal(np.isnan(got[inexact]), np.isnan(w32[inexact]))
    np.testing.assert_array_equal(got[inexact & ~np.isnan(w32)], w32[inexact & ~np.isnan(w32)])


@pytest.mark.parametrize("name", sorted(REFS))
def test_special_values_and_signed_zeros(device, name):
    with np.errstate(all="ignore"):
        want = REFS[name](SPECIAL.astype(np.float64)).astype(np.float32)
    t = clgrad.tensor(SPECIAL, device=device)
    for got in (getattr(clgrad, name)(t), getattr(t.clone(), name + "_")()):
        got = to_numpy(got)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        exact = (want == 0) | np.isinf(want)
        np.testing.assert_array_equal(got[exact], want[exact])
        np.testing.assert_array_equal(np.signbit(got[exact]), np.signbit(want[exact]))
        close = ~exact & ~np.isnan(want)
        own = device != "cpu" and (name not in NEEDS_FP64 or fp64_ok(device))
        np.testing.assert_allclose(got[close], want[close], rtol=3e-7 if own else 5e-7, atol=0)


def test_atan2(device):
    """atan2 against float64 over random pairs of every magnitude (within 3 ulp: the ratio's rounding; OpenCL
    allows 6) and C99's special cases: signed zeros, infinities, NaN."""
    rng = np.random.default_rng(4)
    x = _sample(65537)
    y = rng.permutation(x)
    vals = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-45, 3e38], np.float32)
    sx, sy = (v.ravel() for v in np.meshgrid(vals, vals))
    x, y = np.concatenate([x, sx]), np.concatenate([y, sy])
    with np.errstate(all="ignore"):
        want = np.arctan2(y.astype(np.float64), x.astype(np.float64))
    got = to_numpy(clgrad.atan2(clgrad.tensor(y, device=device), clgrad.tensor(x, device=device)))
    assert _ulps(got, want) <= 3.0
    w32 = want.astype(np.float32)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(w32))
    zero = w32 == 0
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(w32[zero]))


def test_hypot(device):
    """hypot (in double where the device has fp64): correctly rounded against float64, no overflow or underflow,
    an infinity winning over NaN; complex abs goes through it."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(4096) * 10.0 ** rng.integers(-40, 38, 4096)).astype(np.float32)
    y = (rng.standard_normal(4096) * 10.0 ** rng.integers(-40, 38, 4096)).astype(np.float32)
    sx = np.array([np.inf, -np.inf, np.nan, np.nan, 0.0, -0.0, 3e38, 1e-45, 3.0], np.float32)
    sy = np.array([np.nan, 1.0, np.inf, 1.0, -0.0, 0.0, 3e38, 1e-45, 4.0], np.float32)
    x, y = np.concatenate([x, sx]), np.concatenate([y, sy])
    with np.errstate(all="ignore"):
        want = np.hypot(x.astype(np.float64), y.astype(np.float64)).astype(np.float32)
    got = to_numpy(clgrad.hypot(clgrad.tensor(x, device=device), clgrad.tensor(y, device=device)))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[~np.isnan(want)], want[~np.isnan(want)], rtol=2.5e-7, atol=0)


def test_composed_ops_match_float64(device):
    """softplus, logsigmoid, elu, mish, xlogy and gelu (log1p, expm1, log and erf inside) on a strided input."""
    rng = np.random.default_rng(0)
    base = (rng.standard_normal((6, 40)) * 8).astype(np.float32)
    x = clgrad.tensor(base, device=device).t()  # non-contiguous
    x64 = base.T.astype(np.float64)
    with np.errstate(all="ignore"):
        cases = {
            "softplus": (F.softplus(x), np.where(x64 > 20, x64, np.log1p(np.exp(x64)))),
            "logsigmoid": (F.logsigmoid(x), np.minimum(x64, 0) - np.log1p(np.exp(-np.abs(x64)))),
            "elu": (F.elu(x), np.where(x64 > 0, x64, np.expm1(x64))),
            "mish": (F.mish(x), x64 * np.tanh(np.log1p(np.exp(x64)))),
            "xlogy": (clgrad.xlogy(x.abs(), clgrad.tensor(np.float32(3.0), device=device)), np.abs(x64) * np.log(3.0)),
            "gelu": (F.gelu(x), 0.5 * x64 * (1 + REFS["erf"](x64 / math.sqrt(2.0)))),
        }
    for name, (got, want) in cases.items():
        np.testing.assert_allclose(to_numpy(got), want, rtol=2e-6, atol=1e-7, err_msg=name)
