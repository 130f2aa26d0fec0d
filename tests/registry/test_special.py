"""The special-function records against PyTorch over wide ranges (the generated registry tests cover (0.2, 3)):
lgamma, digamma (poles, reflection), polygamma orders 1-4, and the gamma sampler's gradient in every branch."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
from tests.conftest import fp64_ok

torch = pytest.importorskip("torch")

X = np.concatenate([np.linspace(-4.7, -0.05, 25), np.linspace(0.01, 30, 40), [1e-3, 100.0, 1e4, 0.0, -2.0]])


def _dt(device):
    return ("float64", 1e-12) if fp64_ok(device) else ("float32", 2e-5)


def test_lgamma_digamma_match_torch(device):
    dtype, tol = _dt(device)
    x = clgrad.tensor(X.astype(dtype), device=device)
    tx = torch.tensor(X.astype(dtype))
    np.testing.assert_allclose(x.lgamma().cpu().numpy(), tx.lgamma().numpy(), rtol=max(tol, 1e-13) * 10, atol=tol)
    # torch's digamma: -inf at 0, NaN at negative integers; near its root the absolute error counts
    np.testing.assert_allclose(x.digamma().cpu().numpy(), tx.digamma().numpy(), rtol=tol, atol=tol * 10)


@pytest.mark.parametrize("n", [1, 2, 4])
def test_polygamma_matches_torch(device, n):
    dtype, tol = _dt(device)
    # negative x down to -100 too: the terms below 1 are summed before the Euler-Maclaurin tail (they were not,
    # and polygamma(1, -9.7) was off by 1e9)
    xs = np.concatenate([X, [-9.7, -5.3, -100.25, -37.6]])
    xs = xs[(xs != 0) & (np.abs(xs - np.round(xs)) > 1e-3)]
    got = clgrad.polygamma(n, clgrad.tensor(xs.astype(dtype), device=device)).cpu().numpy()
    want = torch.polygamma(n, torch.tensor(xs.astype(dtype))).numpy()
    # torch's own trigamma is accurate to ~1e-9 (a shorter series)
    np.testing.assert_allclose(got, want, rtol=max(tol, 1e-9 if n == 1 else 1e-11))


def test_polygamma_front_end():
    x = clgrad.tensor([0.5, 2.0], dtype=clgrad.float64)
    np.testing.assert_allclose(clgrad.polygamma(0, x).numpy(), x.digamma().numpy())
    np.testing.assert_allclose(x.polygamma(1).numpy(), torch.polygamma(1, torch.tensor([0.5, 2.0], dtype=torch.float64)))
    with pytest.raises(RuntimeError, match="polygamma\\(n, x\\) does not support negative n"):
        clgrad.polygamma(-1, x)
    y = x.clone()
    y.polygamma_(2)
    np.testing.assert_allclose(y.numpy(), clgrad.polygamma(2, x).numpy())
    np.testing.assert_allclose(clgrad.mvlgamma(clgrad.tensor([2.5, 3.0], dtype=clgrad.float64), 3).numpy(),
                               torch.mvlgamma(torch.tensor([2.5, 3.0], dtype=torch.float64), 3).numpy())


def test_standard_gamma_grad_matches_torch_in_every_branch(device):
    dtype, tol = _dt(device)
    rng = np.random.default_rng(0)
    alpha = np.concatenate([rng.uniform(0.05, 8, 200), rng.uniform(8, 50, 200)])
    # small x (Taylor), near alpha (Rice), far from alpha (saddle point), the rest (rational)
    x = np.concatenate([rng.uniform(0.01, 0.8, 100), rng.gamma(alpha[100:300]), rng.uniform(0.8, 80, 100)])
    got = clgrad._standard_gamma_grad(clgrad.tensor(alpha.astype(dtype), device=device),
                                      clgrad.tensor(x.astype(dtype), device=device)).cpu().numpy()
    want = torch._standard_gamma_grad(torch.tensor(alpha), torch.tensor(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=max(tol, 1e-10) * (1 if dtype == "float64" else 50))
