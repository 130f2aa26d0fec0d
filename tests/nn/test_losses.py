"""Loss layers against PyTorch: forward for each reduction, and gradients."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
import clgrad.nn as nn

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 3)).astype(np.float32)
Y = RNG.standard_normal((4, 3)).astype(np.float32)
P = 1 / (1 + np.exp(-X))
T01 = (RNG.random((4, 3)) > 0.5).astype(np.float32)
CLS = np.array([0, 2, 1, 2])
LOGP = X - np.log(np.exp(X).sum(1, keepdims=True))
PROB = np.exp(Y) / np.exp(Y).sum(1, keepdims=True)
SIGN = np.array([1.0, -1.0, 1.0, -1.0], np.float32)
W3 = np.array([0.5, 1.0, 2.0], np.float32)

# (constructor expression, inputs; the first input is differentiated)
LOSSES = [
    ("MSELoss", "", [X, Y]),
    ("L1Loss", "", [X, Y]),
    ("SmoothL1Loss", "beta=0.5", [X, Y]),
    ("HuberLoss", "delta=0.7", [X, Y]),
    ("CrossEntropyLoss", "", [X, CLS]),
    ("CrossEntropyLoss", "weight=W, label_smoothing=0.1, ignore_index=1", [X, CLS]),
    ("CrossEntropyLoss", "", [X, PROB]),
    ("NLLLoss", "weight=W", [LOGP.astype(np.float32), CLS]),
    ("BCELoss", "", [P.astype(np.float32), T01]),
    ("BCEWithLogitsLoss", "pos_weight=W", [X, T01]),
    ("KLDivLoss", "log_target=False", [LOGP.astype(np.float32), PROB.astype(np.float32)]),
    ("KLDivLoss", "log_target=True", [LOGP.astype(np.float32), np.log(PROB).astype(np.float32)]),
    ("CosineEmbeddingLoss", "margin=0.2", [X, Y, SIGN]),
]


def _build(lib, name, args, reduction, W):
    return eval(f"lib.{name}({args}{', ' if args else ''}reduction='{reduction}')")


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides")
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("name,args,inputs", LOSSES, ids=[f"{n}({a})" for n, a, _ in LOSSES])
def test_loss_matches_torch(device, name, args, inputs, reduction):
    loss = _build(nn, name, args, reduction, clgrad.tensor(W3, device=device))
    tloss = _build(torch.nn, name, args, reduction, torch.tensor(W3))
    xs = [clgrad.tensor(a, device=device) for a in inputs]
    txs = [torch.tensor(a) for a in inputs]
    xs[0].requires_grad_()
    txs[0].requires_grad_()
    out, tout = loss(*xs), tloss(*txs)
    np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy(), rtol=1e-4, atol=1e-6)
    out.sum().backward()
    tout.sum().backward()
    np.testing.assert_allclose(xs[0].grad.cpu().numpy(), txs[0].grad.numpy(), rtol=1e-4, atol=1e-6)


def test_legacy_size_average_and_reduce():
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated, please use "
                                         "reduction='sum' instead."):
        loss = nn.MSELoss(size_average=False)
    assert loss.reduction == "sum"
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert nn.NLLLoss(reduce=False).reduction == "none"
    with pytest.warns(UserWarning):
        assert nn.L1Loss(size_average=True, reduce=True).reduction == "mean"


def test_loss_repr_state_and_errors():
    ce = nn.CrossEntropyLoss(weight=clgrad.ones(3))
    assert list(ce.state_dict()) == list(torch.nn.CrossEntropyLoss(weight=torch.ones(3)).state_dict())
    assert repr(nn.MSELoss()) == "MSELoss()"
    with pytest.raises(ValueError, match="bogus is not a valid value for reduction"):
        nn.MSELoss(reduction="bogus")(clgrad.ones(2), clgrad.ones(2))
    with pytest.raises(ValueError, match="bogus is not a valid value for reduction"):
        nn.HuberLoss(reduction="bogus")(clgrad.ones(2), clgrad.ones(2))
    with pytest.raises(RuntimeError, match="huber_loss does not support non-positive values for delta."):
        nn.HuberLoss(delta=0)(clgrad.ones(2), clgrad.ones(2))
    with pytest.raises(RuntimeError, match="smooth_l1_loss does not support negative values for beta."):
        nn.SmoothL1Loss(beta=-1)(clgrad.ones(2), clgrad.ones(2))
    kl = nn.KLDivLoss(reduction="batchmean")
    logp, prob = clgrad.tensor(LOGP.astype(np.float32)), clgrad.tensor(PROB.astype(np.float32))
    expected = torch.nn.KLDivLoss(reduction="batchmean")(torch.tensor(LOGP), torch.tensor(PROB)).item()
    assert abs(float(kl(logp, prob)) - expected) < 1e-5
