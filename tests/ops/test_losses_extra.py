"""The losses of clgrad/ops/losses_extra.py against PyTorch: values and gradients for each reduction (hinges
exactly at their kink included), gradcheck, the legacy size_average/reduce pair, shapes and errors."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.autograd import gradcheck
from tests.conftest import fp64_ok
from tests.helpers import grad_precision

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RNG = np.random.default_rng(5)
X = RNG.standard_normal((4, 3))
Y = RNG.standard_normal((4, 3))
Z = RNG.standard_normal((4, 3))
VAR = RNG.uniform(0.1, 2.0, (4, 3))
VAR[0, 0] = 1e-9  # below eps: clamped, gradient unchanged
SIGN = np.array([[1.0, -1.0, 1.0], [-1.0, -1.0, 1.0], [1.0, 1.0, -1.0], [-1.0, 1.0, 1.0]])
COUNTS = np.array([[0.0, 1.0, 2.0], [3.0, 0.5, 1.0], [4.0, 2.0, 0.0], [1.0, 7.0, 2.5]])
CLS = np.array([0, 2, 1, 2])
ML = np.array([[2, -1, 0], [0, 1, 2], [-1, 0, 0], [1, 0, -1]])  # labels up to the first -1
KINK = X.copy()
KINK[0] = [1.0, 0.0, -0.5]  # target 0, margin 1: the hinge against class 1 is exactly 0
SIGN1 = SIGN[:, 0]
W3 = np.array([0.5, 1.0, 2.0])

# (id, function of (functional module, *tensors, reduction=...), inputs, indices of the differentiated inputs)
CASES = [
    ("gaussian", lambda f, x, y, v, **r: f.gaussian_nll_loss(x, y, v, **r), [X, Y, VAR], (0, 1, 2)),
    ("gaussian-full-homoscedastic", lambda f, x, y, v, **r: f.gaussian_nll_loss(x, y, v, full=True, **r),
     [X, Y, VAR[:, 0]], (0, 2)),
    ("gaussian-float-var", lambda f, x, y, **r: f.gaussian_nll_loss(x, y, 0.7, eps=1e-3, **r), [X, Y], (0, 1)),
    ("poisson-log", lambda f, x, t, **r: f.poisson_nll_loss(x, t, **r), [X, COUNTS], (0,)),
    ("poisson-rate-full", lambda f, x, t, **r: f.poisson_nll_loss(x, t, log_input=False, full=True, **r),
     [VAR, COUNTS], (0,)),
    ("hinge", lambda f, x, t, **r: f.hinge_embedding_loss(x, t, margin=0.5, **r), [X, SIGN], (0,)),
    ("hinge-kink", lambda f, x, t, **r: f.hinge_embedding_loss(x, t, **r), [SIGN * 0 + 1.0, -SIGN], (0,)),
    ("margin-ranking", lambda f, a, b, t, **r: f.margin_ranking_loss(a, b, t, margin=0.1, **r), [X[:, 0], Y[:, 0], SIGN1],
     (0, 1)),
    ("margin-ranking-kink", lambda f, a, b, t, **r: f.margin_ranking_loss(a, b, t, **r), [X[:, 0], X[:, 0], SIGN1],
     (0, 1)),
    ("multi-margin", lambda f, x, t, **r: f.multi_margin_loss(x, t, **r), [KINK, CLS], (0,)),
    ("multi-margin-p2-weight", lambda f, x, t, w, **r: f.multi_margin_loss(x, t, p=2, margin=0.7, weight=w, **r),
     [KINK, CLS, W3], (0,)),
    ("multi-margin-unbatched", lambda f, x, t, **r: f.multi_margin_loss(x, t, **r), [X[1], CLS[1]], (0,)),
    ("multilabel-margin", lambda f, x, t, **r: f.multilabel_margin_loss(x, t, **r), [X, ML], (0,)),
    ("multilabel-margin-unbatched", lambda f, x, t, **r: f.multilabel_margin_loss(x, t, **r), [X[0], ML[0]], (0,)),
    ("multilabel-soft-margin", lambda f, x, t, w, **r: f.multilabel_soft_margin_loss(x, t, weight=w, **r),
     [X, (SIGN + 1) / 2, W3], (0, 1)),
    ("soft-margin", lambda f, x, t, **r: f.soft_margin_loss(x, t, **r), [X, SIGN], (0,)),
    ("triplet", lambda f, a, p, n, **r: f.triplet_margin_loss(a, p, n, **r), [X, Y, Z], (0, 1, 2)),
    ("triplet-p1-swap", lambda f, a, p, n, **r: f.triplet_margin_loss(a, p, n, margin=2.0, p=1, swap=True, **r),
     [X, Y, Z], (0, 1, 2)),
    ("triplet-distance", lambda f, a, p, n, **r: f.triplet_margin_with_distance_loss(
        a, p, n, distance_function=lambda u, v: 1 - f.cosine_similarity(u, v), margin=0.5, swap=True, **r),
     [X, Y, Z], (0, 1, 2)),
    ("triplet-distance-default", lambda f, a, p, n, **r: f.triplet_margin_with_distance_loss(a, p, n, **r),
     [X, Y, Z], (0, 1, 2)),
]


def _tensors(lib, arrays, grads, device, dtype):
    out = []
    for k, a in enumerate(arrays):
        integral = a.dtype.kind == "i"
        if lib is torch:
            out.append(torch.tensor(a, dtype=torch.int64 if integral else torch.float64, requires_grad=k in grads))
        else:
            out.append(clgrad.tensor(a, dtype=clgrad.int64 if integral else dtype, device=device,
                                     requires_grad=k in grads))
    return out


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("name,fn,arrays,grads", CASES, ids=[c[0] for c in CASES])
def test_matches_torch_values_and_gradients(device, name, fn, arrays, grads, reduction):
    dtype = clgrad.float64 if fp64_ok(device) else clgrad.float32
    tol = dict(rtol=1e-9, atol=1e-11) if dtype is clgrad.float64 else dict(rtol=1e-4, atol=1e-5)
    xs, txs = _tensors(clgrad, arrays, grads, device, dtype), _tensors(torch, arrays, grads, device, dtype)
    out, tout = fn(F, *xs, reduction=reduction), fn(TF, *txs, reduction=reduction)
    assert tuple(out.shape) == tuple(tout.shape)
    np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy(), **tol)
    g = RNG.uniform(0.5, 1.5, tuple(tout.shape))
    out.backward(clgrad.tensor(g, dtype=dtype, device=device))
    tout.backward(torch.tensor(g))
    for k in grads:
        np.testing.assert_allclose(xs[k].grad.cpu().numpy(), txs[k].grad.numpy(), **tol, err_msg=f"input {k}")


GRAD_CASES = [c for c in CASES if "kink" not in c[0] and "unbatched" not in c[0]]


def _smooth(a):
    """The same kind of data away from the kinks and from var's clamp (finite differences must not cross them)."""
    if a is KINK:
        return X
    return np.maximum(a, 0.05) if a.dtype.kind == "f" and a.min() >= 0 else a


@pytest.mark.parametrize("name,fn,arrays,grads", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradcheck(device, name, fn, arrays, grads):
    dtype, kw = grad_precision(device)
    arrays = [_smooth(a) for a in arrays]
    xs = _tensors(clgrad, arrays, grads, device, getattr(clgrad, dtype))
    assert gradcheck(lambda *t: fn(F, *t, reduction="sum"), xs, **kw)


def test_legacy_size_average_and_reduce():
    x, t = clgrad.tensor(X), clgrad.tensor(SIGN)
    with pytest.warns(UserWarning, match="reduction='sum'"):
        got = F.soft_margin_loss(x, t, size_average=False)
    assert abs(got.item() - TF.soft_margin_loss(torch.tensor(X), torch.tensor(SIGN), reduction="sum").item()) < 1e-9
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert F.hinge_embedding_loss(x, t, reduce=False).shape == (4, 3)
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert F.multilabel_soft_margin_loss(x, t, reduce=False).shape == (4,)


ONES = clgrad.ones(2, 3)
ERRORS = [
    (lambda: F.gaussian_nll_loss(ONES, ONES, -ONES), ValueError, "var has negative entry/entries"),
    (lambda: F.gaussian_nll_loss(ONES, ONES, -1.0), ValueError, "var has negative entry/entries"),
    (lambda: F.gaussian_nll_loss(ONES, ONES, clgrad.ones(3, 3)), ValueError, "var is of incorrect size"),
    (lambda: F.gaussian_nll_loss(ONES, ONES, ONES, reduction="bad"), ValueError, "bad is not valid"),
    (lambda: F.poisson_nll_loss(ONES, ONES, reduction="bad"), ValueError, "bad is not a valid value for reduction"),
    (lambda: F.margin_ranking_loss(ONES, ONES, clgrad.ones(2)), RuntimeError,
     "margin_ranking_loss : All input tensors should have same dimension but got sizes"),
    (lambda: F.multi_margin_loss(ONES, clgrad.tensor([0, 1]), p=3), ValueError, "only p == 1 and p == 2 supported"),
    (lambda: F.multi_margin_loss(ONES, clgrad.tensor([0, 1]), weight=ONES), ValueError,
     "weight must be one-dimensional"),
    (lambda: F.multi_margin_loss(ONES, clgrad.tensor([0, 1, 2])), RuntimeError,
     r"inconsistent target size, expected 2 but got \[3\]"),
    (lambda: F.multi_margin_loss(ONES, clgrad.tensor([0, 3])), RuntimeError, "target out of range"),
    (lambda: F.multi_margin_loss(ONES, clgrad.tensor([0, 1]), weight=clgrad.ones(2)), RuntimeError,
     r"inconsistent weight size, expected 3 but got \[2\]"),
    (lambda: F.multi_margin_loss(clgrad.ones(2, 3, 1), clgrad.tensor([0, 1])), RuntimeError,
     r"Expected non-empty vector or matrix with optional 0-dim batch size, but got: \[2, 3, 1\]"),
    (lambda: F.multilabel_margin_loss(ONES, clgrad.tensor([0, 1])), RuntimeError,
     r"inconsistent target size: \[2\] for input of size: \[2, 3\]"),
    (lambda: F.multilabel_margin_loss(ONES, clgrad.tensor([[0, 3, -1], [0, -1, 0]])), RuntimeError,
     "target out of range"),
    (lambda: F.multilabel_soft_margin_loss(ONES, ONES, reduction="bad"), ValueError, "bad is not valid"),
    (lambda: F.triplet_margin_loss(ONES, ONES, ONES, margin=0), ValueError, "margin must be greater than 0, got 0"),
    (lambda: F.triplet_margin_loss(ONES, ONES, clgrad.ones(3)), RuntimeError,
     "expected to have the same number of dimensions, but got: anchor 2D, positive 2D, and negative 1D inputs"),
    (lambda: F.triplet_margin_with_distance_loss(ONES, ONES, ONES, margin=-1), ValueError,
     "margin must be greater than 0, got -1"),
    (lambda: F.triplet_margin_with_distance_loss(ONES, ONES, ONES, reduction="bad"), ValueError,
     "bad is not a valid value for reduction"),
    (lambda: F.multi_margin_loss([1.0], ONES), TypeError,
     r"multi_margin_loss\(\): argument 'input' \(position 1\) must be Tensor, not list"),
]


@pytest.mark.parametrize("call,exc,match", ERRORS)
def test_errors_match_pytorch(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_top_level_names_follow_torch():
    for name in ("poisson_nll_loss", "hinge_embedding_loss", "margin_ranking_loss", "triplet_margin_loss"):
        assert hasattr(torch, name) and callable(getattr(clgrad, name)), name
