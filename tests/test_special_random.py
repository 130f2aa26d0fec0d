"""The gamma sampler (``random_gamma`` primitive): cpu and OpenCL agree, sample moments and a KS check against
the Gamma CDF, PyTorch's edge values, and the implicit reparameterization gradient."""
from __future__ import annotations

import math

import numpy as np
import pytest

import clgrad
from clgrad.backends import cpu_random
from tests.conftest import fp64_ok

ALPHAS = [0.1, 0.5, 1.0, 2.5, 30.0]


def _alpha(device, dtype="float32", n=20000):
    return clgrad.tensor(np.tile(np.asarray(ALPHAS, dtype=dtype), (n, 1)), device=device)


def test_device_agrees_with_the_numpy_reference(device):
    for dtype in ("float32", "float64") if fp64_ok(device) else ("float32",):
        a = _alpha(device, dtype, 400)
        x = clgrad._standard_gamma(a, generator=clgrad.Generator().manual_seed(5)).cpu().numpy()
        seed = clgrad.Generator().manual_seed(5)._take(a.numel())
        ref = cpu_random.gamma(np.asarray(a.cpu().numpy()).reshape(-1), *seed).reshape(x.shape)
        close = np.isclose(x, ref, rtol=1e-5 if dtype == "float32" else 1e-12, atol=0)
        assert close.mean() > 0.999  # an acceptance decided by one ulp of log() may differ between devices


def _gamma_cdf(x, a, terms=400):
    """Regularized lower incomplete gamma P(a, x) by its series (x moderate)."""
    term = np.full_like(x, 1.0 / a)
    total = term.copy()
    for k in range(1, terms):
        term = term * x / (a + k)
        total += term
    return np.exp(a * np.log(x) - x - math.lgamma(a)) * total


def test_moments_and_ks(device):
    clgrad.manual_seed(0)
    x = clgrad._standard_gamma(_alpha(device)).cpu().numpy().astype(np.float64)
    n = x.shape[0]
    for k, a in enumerate(ALPHAS):
        col = np.sort(x[:, k])
        assert abs(col.mean() - a) < 4 * math.sqrt(a / n), (a, col.mean())
        assert abs(col.var() - a) < 4 * math.sqrt((6 * a + 2 * a * a) / n), (a, col.var())  # Var of the variance
        d = np.abs(_gamma_cdf(col, a) - np.arange(1, n + 1) / n).max()
        assert d < 1.63 / math.sqrt(n), (a, d)  # Kolmogorov-Smirnov at the 1% level


def test_edge_values_follow_torch(device):
    a = clgrad.tensor([0.0, -1.0, float("nan"), float("inf")], device=device)
    x = clgrad._standard_gamma(a).cpu().numpy()
    tiny = np.finfo(np.float32).tiny
    assert x[:3].tolist() == [tiny] * 3 and x[3] == np.inf
    with pytest.raises(NotImplementedError):
        clgrad._standard_gamma(clgrad.tensor([1, 2], device=device))
    assert clgrad._standard_gamma(clgrad.tensor([2.0], dtype=clgrad.float16, device=device)).dtype is clgrad.float16


def test_gradient_is_standard_gamma_grad(device):
    a = clgrad.tensor([0.4, 3.0, 12.0], device=device, requires_grad=True)
    x = clgrad._standard_gamma(a)
    assert type(x.grad_fn).__name__ == "StandardGammaBackward0"
    x.sum().backward()
    np.testing.assert_allclose(a.grad.cpu().numpy(), clgrad._standard_gamma_grad(a.detach(), x.detach()).cpu().numpy())


def test_sample_dirichlet_sums_to_one(device):
    clgrad.manual_seed(0)
    x = clgrad._sample_dirichlet(clgrad.tensor([[0.5, 1.0, 2.0]] * 4, device=device))
    np.testing.assert_allclose(x.sum(-1).cpu().numpy(), 1.0, rtol=1e-6)
    assert (x.cpu().numpy() > 0).all()
