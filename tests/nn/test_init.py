"""clgrad.nn.init and clgrad.nn.utils."""
from __future__ import annotations

import math

import numpy as np
import pytest

import clgrad
import clgrad.nn as nn
from clgrad.nn import init
from clgrad.nn.utils import clip_grad_norm_, clip_grad_value_, parameters_to_vector, vector_to_parameters

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("args", [("linear",), ("conv2d",), ("sigmoid",), ("tanh",), ("relu",), ("leaky_relu",),
                                  ("leaky_relu", 0.2), ("selu",)])
def test_calculate_gain_matches_torch(args):
    assert init.calculate_gain(*args) == pytest.approx(torch.nn.init.calculate_gain(*args))


def test_calculate_gain_errors():
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        init.calculate_gain("foo")
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)


# (initialiser, kwargs, shape, expected (low, high) bound or None, expected std or None)
SPREAD = [
    (init.uniform_, {"a": -2.0, "b": 3.0}, (200, 50), (-2.0, 3.0), 5 / math.sqrt(12)),
    (init.normal_, {"mean": 1.0, "std": 0.5}, (200, 50), None, 0.5),
    (init.xavier_uniform_, {}, (100, 300), (-math.sqrt(6 / 400), math.sqrt(6 / 400)), math.sqrt(2 / 400)),
    (init.xavier_normal_, {"gain": 2.0}, (100, 300), None, 2 * math.sqrt(2 / 400)),
    (init.kaiming_uniform_, {"nonlinearity": "relu"}, (100, 50, 2), (-math.sqrt(6 / 100), math.sqrt(6 / 100)),
     math.sqrt(2 / 100)),
    (init.kaiming_normal_, {"mode": "fan_out", "nonlinearity": "relu"}, (100, 50, 2), None, math.sqrt(2 / 200)),
    (init.trunc_normal_, {"std": 1.0, "a": -1.0, "b": 1.0}, (5000,), (-1.0, 1.0), 0.5379),
]


@pytest.mark.parametrize("fn,kwargs,shape,bounds,std", SPREAD, ids=[s[0].__name__ for s in SPREAD])
def test_random_initialisers(device, fn, kwargs, shape, bounds, std):
    t = nn.Parameter(clgrad.empty(shape, device=device))
    assert fn(t, **kwargs) is t
    assert t.is_leaf and t.grad_fn is None  # ran under no_grad
    v = t.detach().cpu().numpy()
    if bounds is not None:
        assert bounds[0] <= v.min() and v.max() <= bounds[1]
    assert abs(v.std() - std) < 0.05 * std


def test_deterministic_with_seed():
    clgrad.manual_seed(3)
    a = init.kaiming_uniform_(clgrad.empty(4, 4)).numpy().copy()
    clgrad.manual_seed(3)
    assert np.array_equal(a, init.kaiming_uniform_(clgrad.empty(4, 4)).numpy())


def test_constant_initialisers(device):
    t = clgrad.empty(3, 4, device=device)
    assert init.constant_(t, 2.5).cpu().numpy().tolist() == [[2.5] * 4] * 3
    assert init.zeros_(t).cpu().numpy().sum() == 0
    assert init.ones_(t).cpu().numpy().sum() == 12
    np.testing.assert_array_equal(init.eye_(t).cpu().numpy(), np.eye(3, 4))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(clgrad.empty(2, device=device))


@pytest.mark.parametrize("shape", [(4, 6), (6, 4), (3, 2, 2)])
def test_orthogonal(device, shape):
    t = init.orthogonal_(clgrad.empty(shape, device=device), gain=2.0)
    m = t.cpu().numpy().reshape(shape[0], -1)
    gram = m @ m.T if m.shape[0] <= m.shape[1] else m.T @ m
    np.testing.assert_allclose(gram, 4 * np.eye(min(m.shape)), atol=1e-5)
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
        init.orthogonal_(clgrad.empty(3))


def test_fan_errors():
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed for tensor with fewer than 2"):
        init.xavier_uniform_(clgrad.empty(3))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_normal_(clgrad.empty(3, 3), mode="fan_avg")
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_uniform_(clgrad.empty(0, 3))


def _grads(device):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in [(3, 4), (4,), (2, 2)]]
    params = [nn.Parameter(clgrad.ones(a.shape, device=device)) for a in arrays]
    tparams = [torch.nn.Parameter(torch.ones(a.shape)) for a in arrays]
    for p, tp, a in zip(params, tparams, arrays):
        p.grad = clgrad.tensor(a, device=device)
        tp.grad = torch.tensor(a)
    return params, tparams


@pytest.mark.parametrize("max_norm,norm_type", [(1.0, 2.0), (100.0, 2.0), (0.5, 1.0), (0.5, math.inf)])
def test_clip_grad_norm_matches_torch(device, max_norm, norm_type):
    params, tparams = _grads(device)
    total = clip_grad_norm_(params, max_norm, norm_type)
    ttotal = torch.nn.utils.clip_grad_norm_(tparams, max_norm, norm_type)
    assert float(total) == pytest.approx(float(ttotal), rel=1e-5)
    for p, tp in zip(params, tparams):
        np.testing.assert_allclose(p.grad.cpu().numpy(), tp.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_clip_grad_value_and_errors(device):
    params, tparams = _grads(device)
    clip_grad_value_(params, 0.5)
    torch.nn.utils.clip_grad_value_(tparams, 0.5)
    for p, tp in zip(params, tparams):
        np.testing.assert_allclose(p.grad.cpu().numpy(), tp.grad.numpy())
    params[0].grad = clgrad.full((3, 4), float("inf"), device=device)
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is non-finite"):
        clip_grad_norm_(params, 1.0, error_if_nonfinite=True)


def test_parameters_vector_roundtrip(device):
    lin = nn.Linear(3, 2).to(device)
    vec = parameters_to_vector(lin.parameters())
    assert tuple(vec.shape) == (8,)
    np.testing.assert_array_equal(vec[:6].cpu().numpy(), lin.weight.detach().cpu().numpy().reshape(-1))
    weight = lin.weight
    vector_to_parameters(clgrad.arange(8, dtype=clgrad.float32, device=device), lin.parameters())
    assert lin.weight is weight
    assert lin.bias.cpu().numpy().tolist() == [6.0, 7.0]
    with pytest.raises(TypeError, match="expected torch.Tensor, but got: list"):
        vector_to_parameters([1.0], lin.parameters())
