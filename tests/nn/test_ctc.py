"""ctc_loss and nn.CTCLoss against torch: values and gradients (reductions, zero_infinity, padded and
concatenated targets, unbatched input, raw log_probs whose gradient is PyTorch's formula), on every device."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from tests.nn.torch_ref import check, float_name

RNG = np.random.default_rng(11)
T, N, C = 10, 3, 5


def _log_probs(normalized: bool = True):
    x = RNG.standard_normal((T, N, C))
    if normalized:
        x = x - np.log(np.exp(x).sum(-1, keepdims=True))
    return x


TARGETS = RNG.integers(1, C, (N, 6))
IL, TL = np.array([10, 8, 3]), np.array([4, 0, 6])  # an empty target; an impossible (infinite) one


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("normalized", [True, False])
def test_matches_torch(device, reduction, normalized):
    torch = pytest.importorskip("torch")

    def run(fn):
        return lambda lp, tg, il, tl: fn(lp, tg, il, tl, reduction=reduction, zero_infinity=True)

    check(device, run(F.ctc_loss), run(torch.nn.functional.ctc_loss), [_log_probs(normalized), TARGETS, IL, TL],
          grad=(0,))


def test_infinite_loss_without_zero_infinity(device):
    dt = float_name(device)
    lp = clgrad.tensor(_log_probs().astype(dt), device=device)
    loss = F.ctc_loss(lp, clgrad.tensor(TARGETS, device=device), IL.tolist(), TL.tolist(), reduction="none")
    assert np.isinf(loss.cpu().numpy()[2]) and np.isfinite(loss.cpu().numpy()[:2]).all()


def test_concatenated_targets_blank_and_unbatched(device):
    torch = pytest.importorskip("torch")
    tl = np.array([3, 2, 4])
    flat = RNG.integers(0, C - 1, int(tl.sum()))  # blank = C - 1
    check(device, lambda lp, tg: F.ctc_loss(lp, tg, [10, 9, 10], tl.tolist(), blank=C - 1),
          lambda lp, tg: torch.nn.functional.ctc_loss(lp, tg, [10, 9, 10], tl.tolist(), blank=C - 1),
          [_log_probs(), flat], grad=(0,))
    check(device, lambda lp, tg: F.ctc_loss(lp[:, 0], tg, [T], [3], reduction="none"),
          lambda lp, tg: torch.nn.functional.ctc_loss(lp[:, 0], tg, torch.tensor([T]), torch.tensor([3]),
                                                      reduction="none"),
          [_log_probs(), TARGETS[0, :3]], grad=(0,))


def test_module(device):
    torch = pytest.importorskip("torch")
    check(device, lambda lp: clgrad.nn.CTCLoss(zero_infinity=True)(lp, clgrad.tensor(TARGETS, device=lp.device),
                                                                   clgrad.tensor(IL), clgrad.tensor(TL)),
          lambda lp: torch.nn.CTCLoss(zero_infinity=True)(lp, torch.tensor(TARGETS), torch.tensor(IL),
                                                          torch.tensor(TL)),
          [_log_probs()], grad=(0,))


def test_errors(device):
    lp = clgrad.zeros(4, 1, 3, device=device)
    tg = clgrad.tensor([[1, 2]], device=device)
    with pytest.raises(RuntimeError, match="blank must be in label range"):
        F.ctc_loss(lp, tg, [4], [2], blank=3)
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 4"):
        F.ctc_loss(lp, tg, [5], [2])
    with pytest.raises(RuntimeError, match="Expected tensor to have size at least 3 at dimension 1"):
        F.ctc_loss(lp, tg, [4], [3])
    with pytest.raises(ValueError, match="is not a valid value for reduction"):
        F.ctc_loss(lp, tg, [4], [2], reduction="avg")
