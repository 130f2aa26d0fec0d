"""Each distribution against PyTorch's (float64): log_prob, entropy, mean, variance, mode and their gradients in
the parameters; sample shapes; argument validation with PyTorch's errors."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
import clgrad.distributions as D
from tests.conftest import fp64_ok

torch = pytest.importorskip("torch")
TD = torch.distributions

R = np.random.default_rng(7)
POS = R.uniform(0.5, 2.5, (2, 3))
LOC = R.normal(size=(2, 3))
PROBS = R.dirichlet(np.ones(4), size=2)
A = R.normal(size=(2, 3, 3))
COV = A @ A.transpose(0, 2, 1) + 3 * np.eye(3)

# name: (params {name: array}, extra kwargs, value where log_prob is evaluated, differentiable parameters)
CASES = {
    "Normal": (dict(loc=LOC, scale=POS), {}, LOC + 0.3),
    "Uniform": (dict(low=LOC - 1, high=LOC + POS), {}, LOC),
    "Exponential": (dict(rate=POS), {}, POS * 0.7),
    "Laplace": (dict(loc=LOC, scale=POS), {}, LOC - 0.4),
    "Bernoulli": (dict(probs=POS / 3), {}, (LOC > 0).astype(float)),
    "Bernoulli-logits": (dict(logits=LOC), {}, (LOC > 0).astype(float)),
    "Categorical": (dict(probs=PROBS), {}, np.array([1, 3])),
    "Categorical-logits": (dict(logits=np.log(PROBS) + 0.5), {}, np.array([[0, 2], [3, 1]])),
    "OneHotCategorical": (dict(logits=np.log(PROBS)), {}, np.eye(4)[[2, 0]]),
    "Gamma": (dict(concentration=POS, rate=POS[::-1]), {}, POS * 1.3),
    "Beta": (dict(concentration1=POS, concentration0=POS[:, ::-1]), {}, POS / 3),
    "Dirichlet": (dict(concentration=PROBS * 5 + 0.5), {}, PROBS),
    "Poisson": (dict(rate=POS), {}, np.round(POS * 2)),
    "MultivariateNormal-cov": (dict(loc=LOC, covariance_matrix=COV), {}, LOC + 0.5),
    "MultivariateNormal-prec": (dict(loc=LOC, precision_matrix=COV), {}, LOC - 0.5),
    "MultivariateNormal-tril": (dict(loc=LOC, scale_tril=np.linalg.cholesky(COV)), {}, LOC * 2),
}
INTEGER_VALUES = ("Categorical", "Categorical-logits")


def _build(lib, name, params, device=None):
    cls = getattr(lib, name.split("-")[0])
    return cls(**params)


def _params(name, device, module):
    arrays = CASES[name][0]
    if module is torch:
        return {k: torch.tensor(np.ascontiguousarray(v), requires_grad=True) for k, v in arrays.items()}
    return {k: clgrad.tensor(np.ascontiguousarray(v), device=device, requires_grad=True) for k, v in arrays.items()}


def _value(name, device, module):
    v = CASES[name][2]
    if name in INTEGER_VALUES:
        return torch.tensor(v) if module is torch else clgrad.tensor(v, device=device)
    return torch.tensor(v) if module is torch else clgrad.tensor(v, device=device)


def _close(got, want, rtol=1e-9, atol=1e-10):
    np.testing.assert_allclose(np.asarray(got.detach().cpu().numpy(), dtype=np.float64),
                               want.detach().numpy().astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients_match_torch(device, name):
    if not fp64_ok(device):
        pytest.skip("no cl_khr_fp64")
    ours_p, theirs_p = _params(name, device, clgrad), _params(name, None, torch)
    ours, theirs = _build(D, name, ours_p), _build(TD, name, theirs_p)
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(ours.event_shape) == tuple(theirs.event_shape)
    lp, tlp = ours.log_prob(_value(name, device, clgrad)), theirs.log_prob(_value(name, None, torch))
    _close(lp, tlp)
    stats = ["mean", "variance", "mode"] + (["entropy"] if name != "Poisson" else [])
    for stat in stats:
        got, want = getattr(ours, stat), getattr(theirs, stat)
        got, want = (got(), want()) if callable(got) else (got, want)
        _close(got, want)
    # gradients of log_prob and entropy together w.r.t. every parameter
    ent = ours.entropy().sum() if name != "Poisson" else 0
    tent = theirs.entropy().sum() if name != "Poisson" else 0
    (lp.sum() + ent).backward()
    (tlp.sum() + tent).backward()
    for k in ours_p:
        _close(ours_p[k].grad, theirs_p[k].grad, rtol=1e-8, atol=1e-9)
