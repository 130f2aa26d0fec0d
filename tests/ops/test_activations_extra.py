"""nn.functional's remaining activations (clgrad/ops/activations.py and their registry records) against PyTorch:
values and gradients at the kinks (PyTorch's subgradients), gradcheck, errors, and the random ones' statistics."""
from __future__ import annotations

import math

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.autograd import gradcheck
from tests.conftest import fp64_ok
from tests.helpers import grad_precision

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RNG = np.random.default_rng(7)
# the kinks of every op below (0, +-0.5, 0.25), NaN-free, plus random values
KINKS = np.array([-2.0, -0.5, -0.3, 0.0, 0.25, 0.5, 0.7, 2.0])
X = np.concatenate([KINKS, RNG.uniform(-3, 3, 16)]).reshape(4, 6)
X3 = RNG.uniform(-2, 2, (2, 3, 4))
W3 = np.array([0.1, -0.4, 0.3])

# (id, function of (lib, functional module, *tensors), inputs): lib is clgrad or torch
CASES = [
    ("softsign", lambda lib, f, x: f.softsign(x), [X]),
    ("tanhshrink", lambda lib, f, x: f.tanhshrink(x), [X]),
    ("hardshrink", lambda lib, f, x: f.hardshrink(x, 0.5), [X]),
    ("hardshrink-method", lambda lib, f, x: x.hardshrink(0.25), [X]),
    ("softshrink", lambda lib, f, x: f.softshrink(x, 0.5), [X]),
    ("softshrink0", lambda lib, f, x: f.softshrink(x, 0.0), [X]),
    ("threshold", lambda lib, f, x: f.threshold(x, 0.25, -3.0), [X]),
    ("torch.threshold", lambda lib, f, x: lib.threshold(x, 0.5, 7.0), [X]),
    ("glu-last", lambda lib, f, x: f.glu(x), [X]),
    ("glu-dim1", lambda lib, f, x: f.glu(x, 0), [X3[:, :2]]),
    ("prelu-one", lambda lib, f, x, w: f.prelu(x, w), [X, np.array([0.2])]),
    ("prelu-channels", lambda lib, f, x, w: f.prelu(x, w), [X3, W3]),
    ("prelu-method", lambda lib, f, x, w: x.prelu(w), [X3, W3]),
    ("rrelu-eval", lambda lib, f, x: f.rrelu(x, 0.1, 0.3), [X]),
]


def _tensors(lib, arrays, device, dtype):
    if lib is torch:
        return [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    return [clgrad.tensor(a, dtype=dtype, device=device, requires_grad=True) for a in arrays]


@pytest.mark.parametrize("name,fn,arrays", CASES, ids=[c[0] for c in CASES])
def test_matches_torch_values_and_gradients(device, name, fn, arrays):
    dtype = clgrad.float64 if fp64_ok(device) else clgrad.float32
    tol = dict(rtol=1e-10, atol=1e-12) if dtype is clgrad.float64 else dict(rtol=2e-5, atol=1e-6)
    xs, txs = _tensors(clgrad, arrays, device, dtype), _tensors(torch, arrays, device, dtype)
    out, tout = fn(clgrad, F, *xs), fn(torch, TF, *txs)
    np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().cpu().numpy(), **tol)
    g = RNG.uniform(0.5, 1.5, tuple(tout.shape))
    out.backward(clgrad.tensor(g, dtype=dtype, device=device))
    tout.backward(torch.tensor(g))
    for x, tx in zip(xs, txs):
        np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.cpu().numpy(), **tol)


GRAD_CASES = [c for c in CASES if c[0] not in ("hardshrink-method", "softshrink0", "torch.threshold", "prelu-method")]


@pytest.mark.parametrize("name,fn,arrays", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradcheck(device, name, fn, arrays):
    dtype, kw = grad_precision(device)
    # random points away from the kinks: finite differences are meaningless across them
    xs = [clgrad.tensor(np.where(np.abs(a) > 0.05, a, 0.1).round(1) + RNG.uniform(0.01, 0.04, a.shape), dtype=dtype,
                        device=device, requires_grad=True) for a in arrays]
    assert gradcheck(lambda *t: fn(clgrad, F, *t), xs, **kw)


def test_nan_passes_and_kinks_keep_pytorch_signs():
    x = clgrad.tensor([float("nan"), -0.5, 0.5, -0.0])
    t = torch.tensor([float("nan"), -0.5, 0.5, -0.0])
    for name, args in [("softshrink", (0.5,)), ("hardshrink", (0.5,)), ("threshold", (0.5, 2.0)), ("softsign", ()),
                       ("tanhshrink", ())]:
        got, want = getattr(F, name)(x, *args).cpu().numpy(), getattr(TF, name)(t, *args).cpu().numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))  # softshrink(-0.5) is -0.0


def test_integer_inputs_follow_pytorch():
    i = clgrad.tensor([-2, 0, 3])
    ti = torch.tensor([-2, 0, 3])
    assert F.threshold(i, 0, 7).tolist() == TF.threshold(ti, 0, 7).tolist()
    assert F.threshold(i, 0, 7).dtype is clgrad.int64
    np.testing.assert_allclose(F.softsign(i).cpu().numpy(), TF.softsign(ti).cpu().numpy(), rtol=1e-6)
    np.testing.assert_allclose(F.tanhshrink(i).cpu().numpy(), TF.tanhshrink(ti).cpu().numpy(), rtol=1e-6)
    for fn in (F.hardshrink, F.softshrink):
        with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
            fn(i)
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        F.threshold(clgrad.tensor([True]), 0, 1)


ERRORS = [
    (lambda: F.softshrink(clgrad.ones(2), -1.0), RuntimeError,
     r"lambda must be in range \[0, 3.40282e\+38\] for input dtype Float, but found -1"),
    (lambda: F.glu(clgrad.ones(3)), RuntimeError, "Halving dimension must be even, but dimension 0 is size 3"),
    (lambda: F.glu(clgrad.tensor(1.0)), RuntimeError, "glu does not support scalars because halving size must be even"),
    (lambda: F.glu(clgrad.ones(2, 4), 5), IndexError, "Dimension out of range"),
    (lambda: F.prelu(clgrad.ones(2, 3), clgrad.ones(4)), RuntimeError,
     "Found parameter numbers = 4 and channel size = 3."),
    (lambda: F.prelu(clgrad.ones(3), clgrad.ones(3)), RuntimeError, "parameter numbers = 3 and channel size = 1"),
    (lambda: F.prelu(clgrad.ones(2, 3), clgrad.ones(1, 3)), RuntimeError,
     "prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = 2"),
    (lambda: F.prelu(clgrad.ones(3, dtype=clgrad.int64), clgrad.ones(1)), RuntimeError,
     "prelu: Type promoting not supported. Got Long and Float"),
    (lambda: F.rrelu(clgrad.ones(3), 0.5, 0.1, True), RuntimeError,
     "Lower bound should be less than or equal to the upper bound"),
    (lambda: F.alpha_dropout(clgrad.ones(3), 2), ValueError, "dropout probability has to be between 0 and 1, but got 2"),
    (lambda: F.feature_alpha_dropout(clgrad.ones(3), 0.5, True), RuntimeError,
     "Feature dropout requires at least 2 dimensions in the input"),
    (lambda: F.softsign([1.0]), TypeError, r"softsign\(\): .*list"),
    (lambda: F.glu([1.0, 2.0]), TypeError, r"glu\(\): argument 'input' \(position 1\) must be Tensor, not list"),
]


@pytest.mark.parametrize("call,exc,match", ERRORS)
def test_errors_match_pytorch(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_bindings_exist_where_torch_has_them():
    for name in ("prelu", "rrelu", "rrelu_", "hardshrink", "threshold", "threshold_", "alpha_dropout",
                 "feature_alpha_dropout", "alpha_dropout_", "feature_alpha_dropout_"):
        assert hasattr(torch, name) and callable(getattr(clgrad, name)), name
    for name in ("prelu", "hardshrink"):
        assert hasattr(torch.Tensor, name) and callable(getattr(clgrad.Tensor, name)), name
    for name in ("glu", "softsign", "softshrink", "tanhshrink", "threshold_", "rrelu_", "feature_alpha_dropout"):
        assert hasattr(TF, name) and callable(getattr(F, name)), name


def test_threshold_inplace_and_autograd(device):
    x = clgrad.tensor([-1.0, 0.5, 2.0], device=device)
    assert F.threshold_(x, 0.5, 0.0) is x
    assert x.tolist() == [0.0, 0.0, 2.0]
    leaf = clgrad.tensor([-1.0, 0.5, 2.0], device=device, requires_grad=True)
    y = leaf * 1
    F.threshold(y, 0.0, 5.0, inplace=True).sum().backward()
    assert y.tolist() == [5.0, 0.5, 2.0]
    assert leaf.grad.tolist() == [0.0, 1.0, 1.0]


def test_rrelu_training_draws_slopes_in_range_and_uses_them_for_the_gradient(device):
    clgrad.manual_seed(3)
    dtype = clgrad.float64 if fp64_ok(device) else clgrad.float32
    x = clgrad.tensor(-np.linspace(0.5, 2.0, 400), dtype=dtype, device=device, requires_grad=True)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    slope = (y / x).detach().cpu().numpy()
    assert slope.min() >= 0.1 and slope.max() <= 0.3 and slope.std() > 0.04  # uniform: std 0.058
    y.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), slope, rtol=1e-6)
    pos = clgrad.tensor([1.0, 2.0], device=device)
    assert F.rrelu(pos, training=True).tolist() == [1.0, 2.0]
    clgrad.manual_seed(3)
    again = F.rrelu(x.detach(), 0.1, 0.3, training=True)
    np.testing.assert_array_equal(again.cpu().numpy(), y.detach().cpu().numpy())  # the same seed, the same slopes


@pytest.mark.parametrize("feature", [False, True])
def test_alpha_dropout_keeps_mean_and_variance(device, feature):
    clgrad.manual_seed(0)
    x = clgrad.randn(64, 32, 8, device=device)
    fn = F.feature_alpha_dropout if feature else F.alpha_dropout
    y = fn(x, 0.3, training=True).cpu().numpy()
    assert abs(y.mean()) < 0.1 and abs(y.std() - 1) < 0.1
    alpha = 1.7580993408473766
    a = 1 / math.sqrt((alpha**2 * 0.3 + 1) * 0.7)
    dropped = np.isclose(y, -alpha * a * 0.7)
    assert 0.25 < dropped.mean() < 0.35
    if feature:  # whole channels at once
        assert np.all(dropped.all(-1) | ~dropped.any(-1))
    kept = ~dropped
    np.testing.assert_allclose(y[kept], x.cpu().numpy()[kept] * a + alpha * a * 0.3, rtol=1e-5, atol=1e-6)
    assert fn(x, 0.3) is x  # training=False by default
    np.testing.assert_array_equal(fn(x, 1.0, training=True).cpu().numpy(), 0 * x.cpu().numpy())


def test_alpha_dropout_gradient_is_the_kept_scale():
    clgrad.manual_seed(1)
    x = clgrad.randn(200, dtype=clgrad.float64, requires_grad=True)
    y = F.alpha_dropout(x, 0.5, training=True)
    y.sum().backward()
    a = 1 / math.sqrt((1.7580993408473766**2 * 0.5 + 1) * 0.5)
    assert set(np.round(x.grad.cpu().numpy(), 12)) == {0.0, round(a, 12)}
