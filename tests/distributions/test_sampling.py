"""Sampling: shapes for batch and sample shapes, reparameterized gradients (gradcheck at a fixed generator state),
sample moments of the implicitly reparameterized families, enumerate_support, expand, argument validation."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
import clgrad.distributions as D
from clgrad.autograd import gradcheck
from tests.helpers import grad_precision

torch = pytest.importorskip("torch")
TD = torch.distributions


def _t(x, device, dtype="float32", grad=False):
    return clgrad.tensor(np.asarray(x, dtype=dtype), device=device, requires_grad=grad)


def _all(device):
    pos, loc, probs = _t([[1.0, 2.0, 0.5]] * 2, device), _t([[0.0, 1.0, -1.0]] * 2, device), _t([[0.2, 0.3, 0.5]] * 2, device)
    cov = _t(np.eye(3) * 2 + 0.5, device)
    return {
        "Normal": D.Normal(loc, pos), "Uniform": D.Uniform(loc, loc + pos), "Exponential": D.Exponential(pos),
        "Laplace": D.Laplace(loc, pos), "Bernoulli": D.Bernoulli(probs), "Categorical": D.Categorical(probs),
        "OneHotCategorical": D.OneHotCategorical(probs), "Gamma": D.Gamma(pos, pos), "Beta": D.Beta(pos, pos),
        "Dirichlet": D.Dirichlet(pos), "MultivariateNormal": D.MultivariateNormal(loc, cov),
        "Independent": D.Independent(D.Normal(loc, pos), 1),
    }


def test_sample_shapes_and_support(device):
    for name, d in _all(device).items():
        for sample_shape in ((), (5,), (2, 3)):
            x = d.sample(sample_shape)
            assert tuple(x.shape) == tuple(sample_shape) + tuple(d.batch_shape) + tuple(d.event_shape), name
            assert bool(d.support.check(x).all().item()), name
            assert tuple(d.log_prob(x).shape) == tuple(sample_shape) + tuple(d.batch_shape), name
            assert not x.requires_grad
        if d.has_rsample:
            assert tuple(d.rsample((4,)).shape) == (4,) + tuple(d.batch_shape) + tuple(d.event_shape)


def test_expand_broadcasts_the_batch(device):
    for name, d in _all(device).items():
        e = d.expand((4,) + tuple(d.batch_shape))
        assert tuple(e.batch_shape) == (4,) + tuple(d.batch_shape), name
        assert tuple(e.sample().shape) == (4,) + tuple(d.batch_shape) + tuple(d.event_shape), name


def test_enumerate_support(device):
    probs = _t([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]], device)
    cat = D.Categorical(probs)
    assert cat.enumerate_support().cpu().numpy().tolist() == [[0, 0], [1, 1], [2, 2]]
    assert tuple(cat.enumerate_support(expand=False).shape) == (3, 1)
    assert tuple(D.Bernoulli(probs).enumerate_support().shape) == (2, 2, 3)
    assert tuple(D.OneHotCategorical(probs).enumerate_support().shape) == (3, 2, 3)


def _fixed(fn):
    def run(*params):
        clgrad.manual_seed(0)
        return fn(*params)

    return run


def test_rsample_gradcheck(device):
    dtype, kw = grad_precision(device)
    loc, scale = _t([0.5, -1.0], device, dtype, True), _t([1.5, 0.7], device, dtype, True)
    tril = _t([[1.2, 0.0], [0.3, 0.8]], device, dtype, True)
    assert gradcheck(_fixed(lambda m, s: D.Normal(m, s).rsample((3,))), (loc, scale), **kw)
    assert gradcheck(_fixed(lambda lo, w: D.Uniform(lo, lo + w).rsample((3,))), (loc, scale), **kw)
    assert gradcheck(_fixed(lambda r: D.Exponential(r).rsample((3,))), (scale,), **kw)
    assert gradcheck(_fixed(lambda m, s: D.Laplace(m, s).rsample((3,))), (loc, scale), **kw)
    assert gradcheck(_fixed(lambda m, L: D.MultivariateNormal(m, scale_tril=L.tril()).rsample((3,))), (loc, tril), **kw)


def test_implicit_reparameterization_gradient_in_expectation(device):
    """d/da E[x] for Gamma(a, b) is 1/b; for Beta(a, c) it is c/(a+c)^2: the mean of per-sample gradients (20k
    draws) is within a few standard errors."""
    clgrad.manual_seed(1)
    n = 20000
    a = _t([0.7, 3.0], device, grad=True)
    D.Gamma(a, 2.0).rsample((n,)).mean(0).sum().backward()
    np.testing.assert_allclose(a.grad.cpu().numpy(), [0.5, 0.5], atol=0.03)
    a = _t([0.8, 2.0], device, grad=True)
    D.Beta(a, _t([1.5, 2.0], device)).rsample((n,)).mean(0).sum().backward()
    np.testing.assert_allclose(a.grad.cpu().numpy(), [1.5 / 2.3**2, 2.0 / 16], atol=0.02)


def test_sample_moments(device):
    clgrad.manual_seed(2)
    n = 20000
    checks = [(D.Gamma(_t([0.3, 4.0], device), _t([1.0, 2.0], device)), [0.3, 2.0], [0.3, 1.0]),
              (D.Beta(_t([0.5, 3.0], device), _t([2.0, 1.0], device)), [0.2, 0.75], [0.16 / 3.5, 3 / 80]),
              (D.Dirichlet(_t([1.0, 2.0, 3.0], device)), [1 / 6, 2 / 6, 3 / 6], [5 / 252, 8 / 252, 9 / 252])]
    for d, mean, var in checks:
        x = d.sample((n,)).cpu().numpy().astype(np.float64)
        se = np.sqrt(np.asarray(var) / n)
        assert (np.abs(x.mean(0) - mean) < 4 * se).all(), (d, x.mean(0))
        assert (np.abs(x.var(0) - var) < 0.05 * np.asarray(var) + 4 * se).all(), (d, x.var(0))


def test_categorical_sampling_frequencies(device):
    clgrad.manual_seed(3)
    x = D.Categorical(logits=_t([0.0, 1.0, 2.0], device)).sample((20000,)).cpu().numpy()
    p = np.exp([0.0, 1.0, 2.0]) / np.exp([0.0, 1.0, 2.0]).sum()
    np.testing.assert_allclose(np.bincount(x, minlength=3) / 20000, p, atol=0.015)


@pytest.mark.parametrize("make", [
    lambda lib, t: lib.Normal(t([0.0]), t([-1.0])),
    lambda lib, t: lib.Bernoulli(probs=t([1.5])),
    lambda lib, t: lib.Categorical(probs=t([-0.5, 1.5])),
    lambda lib, t: lib.Gamma(t([1.0]), t([0.0])),
    lambda lib, t: lib.Dirichlet(t([1.0, -2.0])),
    lambda lib, t: lib.Uniform(t([1.0]), t([0.0])),
    lambda lib, t: lib.Beta(t([1.0]), t([-1.0])),
    lambda lib, t: lib.MultivariateNormal(t([0.0, 0.0]), scale_tril=t([[1.0, 0.0], [0.0, -1.0]])),
    lambda lib, t: lib.Bernoulli(probs=t([0.5]), logits=t([0.0])),
])
def test_invalid_parameters_raise_like_torch(make):
    with pytest.raises(ValueError) as theirs:
        make(TD, torch.tensor)
    with pytest.raises(ValueError) as ours:
        make(D, clgrad.tensor)
    head = str(theirs.value).split(" of distribution")[0].split(" (")[0]
    assert str(ours.value).startswith(head)


def test_invalid_values_raise_like_torch():
    d, td = D.Normal(clgrad.zeros(3), 1.0), TD.Normal(torch.zeros(3), 1.0)
    for bad in ([1.0, 2.0], [[1.0, 2.0, float("nan")]]):
        with pytest.raises(ValueError) as theirs:
            td.log_prob(torch.tensor(bad))
        with pytest.raises(ValueError) as ours:
            d.log_prob(clgrad.tensor(bad))
        assert str(ours.value).replace("clgrad.Size", "torch.Size").split("(")[0] == str(theirs.value).split("(")[0]
    with pytest.raises(ValueError, match="The value argument to log_prob must be a Tensor"):
        d.log_prob(1.0)
    with pytest.raises(ValueError, match="Expected value argument"):
        D.Categorical(clgrad.tensor([0.5, 0.5])).log_prob(clgrad.tensor(2))


def test_validation_can_be_turned_off():
    D.Distribution.set_default_validate_args(False)
    try:
        assert D.Normal(0.0, -1.0).scale.item() == -1.0
    finally:
        D.Distribution.set_default_validate_args(True)
    assert D.Normal(0.0, -1.0, validate_args=False).scale.item() == -1.0
    with pytest.raises(ValueError):
        D.Normal(0.0, -1.0)
