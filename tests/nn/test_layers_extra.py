"""The added nn layers (activations, distances, losses, dropouts) against torch.nn: repr, state_dict names, forward
and input gradients, PReLU's learnt weight, training/eval behaviour and constructor errors."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
import clgrad.nn as nn

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(3)
X4 = RNG.standard_normal((2, 3, 2, 2)).astype(np.float32)
X = RNG.standard_normal((4, 6)).astype(np.float32)
Y = RNG.standard_normal((4, 6)).astype(np.float32)
Z = RNG.standard_normal((4, 6)).astype(np.float32)
SIGN = np.where(RNG.random((4, 6)) > 0.5, 1.0, -1.0).astype(np.float32)
CLS = np.array([0, 5, 2, 3])
ML = np.array([[1, 4, -1, 0, 0, 0], [0, 1, 2, 3, 4, 5], [5, -1, 0, 0, 0, 0], [-1, 0, 0, 0, 0, 0]])
VAR = RNG.uniform(0.2, 2.0, (4, 6)).astype(np.float32)

# (constructor arguments as source, forward inputs); the first input is differentiated
MODULES = [
    ("CELU", "alpha=0.5", [X]),
    ("CELU", "2.0, True", [X]),
    ("Hardsigmoid", "", [X]),
    ("Hardswish", "inplace=True", [X]),
    ("LogSigmoid", "", [X]),
    ("Softsign", "", [X]),
    ("Tanhshrink", "", [X]),
    ("Threshold", "0.1, 20", [X]),
    ("Threshold", "0.1, 20.0, True", [X]),
    ("Hardshrink", "", [X]),
    ("Softshrink", "0.3", [X]),
    ("GLU", "", [X]),
    ("GLU", "dim=0", [X]),
    ("PReLU", "", [X4]),
    ("PReLU", "3, 0.1", [X4]),
    ("RReLU", "0.1, 0.3", [X]),
    ("Softmax2d", "", [X4]),
    ("AlphaDropout", "0.2", [X]),
    ("FeatureAlphaDropout", "0.2, True", [X4]),
    ("Dropout3d", "", [X4]),
    ("CosineSimilarity", "", [X, Y]),
    ("CosineSimilarity", "dim=0, eps=1e-6", [X, Y]),
    ("PairwiseDistance", "", [X, Y]),
    ("PairwiseDistance", "p=1.0, eps=0, keepdim=True", [X, Y]),
    ("GaussianNLLLoss", "full=True, eps=1e-3", [X, Y, VAR]),
    ("PoissonNLLLoss", "log_input=True, full=True", [X, np.abs(Y) * 3]),
    ("HingeEmbeddingLoss", "margin=0.5", [X, SIGN]),
    ("MarginRankingLoss", "margin=0.2", [X[:, 0], Y[:, 0], SIGN[:, 0]]),
    ("MultiMarginLoss", "p=2, margin=0.5, weight=W", [X, CLS]),
    ("MultiLabelMarginLoss", "", [X, ML]),
    ("MultiLabelSoftMarginLoss", "weight=W", [X, (SIGN + 1) / 2]),
    ("SoftMarginLoss", "reduction='sum'", [X, SIGN]),
    ("TripletMarginLoss", "margin=0.5, p=1.0, swap=True", [X, Y, Z]),
    ("TripletMarginWithDistanceLoss", "margin=2.0, reduction='none'", [X, Y, Z]),
]


def _build(lib, name, args, weight):
    return eval(f"lib.{name}({args})", {"lib": lib, "W": weight})


def _inputs(lib, arrays):
    make = torch.tensor if lib is torch.nn else clgrad.tensor
    out = [make(a) for a in arrays]
    out[0].requires_grad_()
    return out


@pytest.mark.parametrize("name,args,arrays", MODULES, ids=[f"{n}({a})" for n, a, _ in MODULES])
def test_layer_matches_torch(name, args, arrays):
    w6 = np.linspace(0.5, 2.0, 6).astype(np.float32)
    mod, tmod = _build(nn, name, args, clgrad.tensor(w6)), _build(torch.nn, name, args, torch.tensor(w6))
    assert repr(mod) == repr(tmod)
    assert list(mod.state_dict()) == list(tmod.state_dict())
    mod.eval()
    tmod.eval()  # the random layers are deterministic in eval
    xs, txs = _inputs(nn, arrays), _inputs(torch.nn, arrays)
    # the layer gets a copy of the leaf, which in-place layers may overwrite
    out, tout = mod(xs[0] * 1, *xs[1:]), tmod(txs[0] * 1, *txs[1:])
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=2e-5, atol=1e-6)
    out.sum().backward()
    tout.sum().backward()
    np.testing.assert_allclose(xs[0].grad.numpy(), txs[0].grad.numpy(), rtol=2e-5, atol=1e-6)


def test_prelu_weight_learns_like_torch_and_loads_its_state(device):
    m, tm = nn.PReLU(3, init=0.2).to(device), torch.nn.PReLU(3, init=0.2)
    x = clgrad.tensor(X4, device=device)
    m(x).square().sum().backward()
    tm(torch.tensor(X4)).square().sum().backward()
    assert isinstance(m.weight, nn.Parameter) and m.weight.shape == (3,)
    np.testing.assert_allclose(m.weight.grad.cpu().numpy(), tm.weight.grad.numpy(), rtol=1e-5)
    tm.weight.data.uniform_(0.0, 0.5)
    m.load_state_dict({k: clgrad.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    np.testing.assert_allclose(m(x).detach().cpu().numpy(), tm(torch.tensor(X4)).detach().numpy(), rtol=1e-6)
    assert nn.PReLU(dtype=clgrad.float64).weight.dtype is clgrad.float64


def test_random_layers_train_and_eval():
    x = clgrad.tensor(X)
    r = nn.RReLU()
    assert r.training
    y = r(x).numpy()
    slope = y[X < 0] / X[X < 0]
    assert slope.min() >= 1 / 8 and slope.max() <= 1 / 3 and np.ptp(slope) > 0
    r.eval()
    np.testing.assert_allclose(r(x).numpy(), np.where(X > 0, X, X * (1 / 8 + 1 / 3) / 2), rtol=1e-6)
    for m in (nn.AlphaDropout(0.5), nn.FeatureAlphaDropout(0.5)):
        assert not np.array_equal(m(clgrad.tensor(X4)).numpy(), X4)
        assert m.eval()(x) is x


def test_triplet_with_distance_holds_its_distance_as_a_submodule():
    loss = nn.TripletMarginWithDistanceLoss()
    assert isinstance(loss.distance_function, nn.PairwiseDistance)
    assert [n for n, _ in loss.named_modules()] == ["", "distance_function"]
    custom = nn.TripletMarginWithDistanceLoss(distance_function=lambda a, b: (a - b).abs().sum(-1))
    a, p, n = (clgrad.tensor(v) for v in (X, Y, Z))
    want = np.maximum(np.abs(X - Y).sum(-1) - np.abs(X - Z).sum(-1) + 1.0, 0).mean()
    assert abs(custom(a, p, n).item() - want) < 1e-5


CONSTRUCTOR_ERRORS = [
    (lambda: nn.MultiMarginLoss(p=3), "only p == 1 and p == 2 supported"),
    (lambda: nn.MultiMarginLoss(weight=clgrad.ones(2, 2)),
     "MultiMarginLoss: expected weight to be None or 1D tensor, got 2D instead"),
    (lambda: nn.TripletMarginLoss(margin=0), "TripletMarginLoss: expected margin to be greater than 0, got 0 instead"),
    (lambda: nn.TripletMarginWithDistanceLoss(margin=-1.0),
     "TripletMarginWithDistanceLoss: expected margin to be greater than 0, got -1.0 instead"),
    (lambda: nn.AlphaDropout(1.5), "dropout probability has to be between 0 and 1, but got 1.5"),
    (lambda: nn.Softmax2d()(clgrad.ones(2, 2)), "Softmax2d: expected input to be 3D or 4D, got 2D instead"),
]


@pytest.mark.parametrize("call,match", CONSTRUCTOR_ERRORS)
def test_constructor_errors_match_torch(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_legacy_loss_arguments():
    with pytest.warns(UserWarning, match="reduction='sum'"):
        assert nn.HingeEmbeddingLoss(size_average=False).reduction == "sum"
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert nn.MultiLabelMarginLoss(reduce=False).reduction == "none"
