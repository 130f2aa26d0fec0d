"""kl_divergence pairs against PyTorch's (values and gradients, float64), and the register_kl lookup."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
import clgrad.distributions as D
from tests.conftest import fp64_ok

torch = pytest.importorskip("torch")
TD = torch.distributions

R = np.random.default_rng(3)
POS1, POS2 = R.uniform(0.5, 2.5, (2, 3)), R.uniform(0.5, 2.5, (2, 3))
LOC1, LOC2 = R.normal(size=(2, 3)), R.normal(size=(2, 3))
P1, P2 = R.dirichlet(np.ones(4), size=2), R.dirichlet(np.ones(4), size=2)
M1, M2 = R.normal(size=(2, 3, 3)), R.normal(size=(3, 3))
COV1, COV2 = M1 @ M1.transpose(0, 2, 1) + 2 * np.eye(3), M2 @ M2.T + 2 * np.eye(3)

# (p class, p params, q class, q params)
PAIRS = [
    ("Normal", dict(loc=LOC1, scale=POS1), "Normal", dict(loc=LOC2, scale=POS2)),
    ("Categorical", dict(probs=P1), "Categorical", dict(logits=np.log(P2))),
    ("Bernoulli", dict(probs=POS1 / 3), "Bernoulli", dict(logits=LOC2)),
    ("MultivariateNormal", dict(loc=LOC1, covariance_matrix=COV1), "MultivariateNormal",
     dict(loc=LOC2[0], scale_tril=np.linalg.cholesky(COV2))),
    ("Beta", dict(concentration1=POS1, concentration0=POS2), "Beta", dict(concentration1=POS2, concentration0=POS1)),
    ("Gamma", dict(concentration=POS1, rate=POS2), "Gamma", dict(concentration=POS2, rate=POS1)),
    ("Dirichlet", dict(concentration=P1 * 4 + 0.5), "Dirichlet", dict(concentration=P2 * 3 + 0.5)),
    ("Uniform", dict(low=LOC1 - 1, high=LOC1 + 1), "Uniform", dict(low=LOC1 - 2, high=LOC1 + POS2)),
    ("Uniform", dict(low=LOC1 - 1, high=LOC1 + 1), "Normal", dict(loc=LOC2, scale=POS2)),
    ("Exponential", dict(rate=POS1), "Exponential", dict(rate=POS2)),
    ("Exponential", dict(rate=POS1), "Gamma", dict(concentration=POS2, rate=POS1)),
    ("Gamma", dict(concentration=POS1, rate=POS2), "Exponential", dict(rate=POS1)),
    ("Laplace", dict(loc=LOC1, scale=POS1), "Laplace", dict(loc=LOC2, scale=POS2)),
    ("Laplace", dict(loc=LOC1, scale=POS1), "Normal", dict(loc=LOC2, scale=POS2)),
    ("Poisson", dict(rate=POS1), "Poisson", dict(rate=POS2)),
    ("OneHotCategorical", dict(probs=P1), "OneHotCategorical", dict(probs=P2)),
]


def _make(lib, cls, params, device=None):
    if lib is TD:
        tensors = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    else:
        tensors = {k: clgrad.tensor(v, device=device, requires_grad=True) for k, v in params.items()}
    return getattr(lib, cls)(**tensors), tensors


@pytest.mark.parametrize("pair", PAIRS, ids=[f"{p}-{q}" for p, _, q, _ in PAIRS])
def test_kl_matches_torch(device, pair):
    if not fp64_ok(device):
        pytest.skip("no cl_khr_fp64")
    pc, pp, qc, qp = pair
    (p, p_t), (q, q_t) = _make(D, pc, pp, device), _make(D, qc, qp, device)
    (tp, tp_t), (tq, tq_t) = _make(TD, pc, pp), _make(TD, qc, qp)
    kl, tkl = D.kl_divergence(p, q), TD.kl_divergence(tp, tq)
    np.testing.assert_allclose(kl.detach().cpu().numpy(), tkl.detach().numpy(), rtol=1e-9, atol=1e-10)
    finite = torch.isfinite(tkl)
    tkl[finite].sum().backward()
    kl[clgrad.tensor(finite.numpy(), device=device)].sum().backward()
    for ours, theirs in [*zip(p_t.values(), tp_t.values()), *zip(q_t.values(), tq_t.values())]:
        want = np.zeros(theirs.shape) if theirs.grad is None else theirs.grad.numpy()
        got = np.zeros(theirs.shape) if ours.grad is None else ours.grad.cpu().numpy()
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-9)


def test_kl_outside_support_is_inf():
    p, q = D.Uniform(0.0, 2.0), D.Uniform(0.5, 3.0)
    assert D.kl_divergence(p, q).item() == float("inf")
    assert D.kl_divergence(D.Categorical(clgrad.tensor([0.5, 0.5])),
                           D.Categorical(clgrad.tensor([1.0, 0.0]))).item() == float("inf")


def test_unregistered_pair_raises_like_torch():
    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented for p type Normal and q type "
                                                  "Categorical"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Categorical(clgrad.tensor([0.5, 0.5])))


def test_register_kl_picks_the_most_specific_pair():
    class MyNormal(D.Normal):
        pass

    @D.register_kl(MyNormal, D.Normal)
    def _kl(p, q):
        return p.loc * 0 + 42.0

    try:
        assert D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(0.0, 1.0)).item() == 42.0
        assert D.kl_divergence(D.Normal(0.0, 1.0), MyNormal(0.0, 1.0)).item() == 0.0  # the Normal-Normal rule
    finally:
        from clgrad.distributions import kl

        del kl._KL_REGISTRY[MyNormal, D.Normal]
        kl._KL_MEMOIZE.clear()
    with pytest.raises(TypeError, match="Expected type_p to be a Distribution subclass"):
        D.register_kl(int, D.Normal)
