"""torch.special's Cephes functions (airy_ai, bessel_y0/y1, modified_bessel_k0/k1 and the scaled ones) and the
orthogonal polynomials' degree handling, against PyTorch over their ranges and at the edges, on every device.
The records' generated tests (forward against the numpy mirrors in two layouts) are in test_registry.py.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import clgrad
from tests.conftest import fp64_ok
from tests.helpers import assert_close

EDGES = [0.0, -0.0, math.inf, -math.inf, math.nan, -1.0, 1.0, 2.0, 5.0, -2.09, 2.09, 8.3203353, 103.9, 1e-6]
CEPHES = [
    ("airy_ai", (-60.0, 20.0)), ("bessel_y0", (0.0, 60.0)), ("bessel_y1", (0.0, 60.0)),
    ("modified_bessel_k0", (0.0, 40.0)), ("modified_bessel_k1", (0.0, 40.0)),
    ("scaled_modified_bessel_k0", (0.0, 400.0)), ("scaled_modified_bessel_k1", (0.0, 400.0)),
]


def _dtype(device) -> str:
    return "float64" if fp64_ok(device) else "float32"


@pytest.mark.parametrize("name,domain", CEPHES, ids=[c[0] for c in CEPHES])
def test_cephes_matches_torch(device, name, domain):
    torch = pytest.importorskip("torch")
    dt = _dtype(device)
    x = np.concatenate([np.linspace(*domain, 61), -np.linspace(*domain, 7), EDGES]).astype(dt)
    want = getattr(torch.special, name)(torch.from_numpy(x)).numpy()
    tol = {"float64": (1e-9, 1e-12), "float32": (2e-4, 1e-6)}[dt]  # oscillating tails: a relative error of x's ulp
    assert_close(getattr(clgrad.special, name)(clgrad.tensor(x, device=device)), want, *tol)


@pytest.mark.parametrize("name", [c[0] for c in CEPHES])
def test_cephes_dtypes_and_no_gradient(name):
    torch = pytest.importorskip("torch")
    x = clgrad.tensor([1, 2, 3])  # integers promote to the default float dtype, as PyTorch
    out = getattr(clgrad.special, name)(x)
    assert out.dtype is clgrad.float32
    assert_close(out, getattr(torch.special, name)(torch.tensor([1, 2, 3])).numpy())
    x = clgrad.tensor([1.5], requires_grad=True)
    getattr(clgrad.special, name)(x).sum().backward()
    assert x.grad is None  # PyTorch has no derivative for these either (the registry's NONDIFF passes nothing back)


def test_out_and_noncontiguous(device):
    torch = pytest.importorskip("torch")
    dt = _dtype(device)
    x = np.linspace(0.1, 9.0, 24).astype(dt).reshape(4, 6)
    t = clgrad.tensor(x, device=device).t()
    out = clgrad.empty((6, 4), dtype=t.dtype, device=device)
    clgrad.special.bessel_y1(t, out=out)
    assert_close(out, torch.special.bessel_y1(torch.from_numpy(x).t()).numpy(), 1e-6, 1e-9)


POLY = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
        "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
        "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"]


@pytest.mark.parametrize("name", POLY)
def test_polynomial_degrees_as_torch(device, name):
    """n is cast to int64 first (a degree in (-1, 0) is 0, below that the value is 0); n > 6 and |x| > 1 branches."""
    torch = pytest.importorskip("torch")
    dt = _dtype(device)
    x = np.array([-1.5, -1.0, -0.7, -0.2, 0.0, 0.3, 0.9, 1.0, 1.2, 2.5], dt)[:, None]
    n = np.array([-2.0, -1.0, -0.95, -0.3, 0.0, 0.4, 1.0, 2.7, 6.0, 7.0, 9.0, math.nan], dt)[None, :]
    want = getattr(torch.special, name)(torch.from_numpy(x), torch.from_numpy(n)).numpy()
    got = getattr(clgrad.special, name)(clgrad.tensor(x, device=device), clgrad.tensor(n, device=device))
    assert_close(got, want, *{"float64": (1e-9, 1e-9), "float32": (1e-4, 1e-4)}[dt])
    scalar_n = getattr(clgrad.special, name)(clgrad.tensor(x, device=device), -0.5)
    assert_close(scalar_n, np.ones_like(x))
