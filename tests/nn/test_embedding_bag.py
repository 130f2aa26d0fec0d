"""embedding_bag and nn.EmbeddingBag against torch (sum/mean/max, offsets, include_last_offset, padding_idx,
per_sample_weights), with gradients, on every device."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from tests.nn.torch_ref import check, float_name, gradcheck

RNG = np.random.default_rng(3)
IDX = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0, 0])
CASES = list(itertools.product(("sum", "mean", "max"), (None, 4, -1), (False, True)))


@pytest.mark.parametrize("mode,pad,last", CASES, ids=["-".join(map(str, c)) for c in CASES])
def test_offsets_matches_torch(device, mode, pad, last):
    torch = pytest.importorskip("torch")
    offsets = np.array([0, 2, 2, 5] + ([10] if last else []))  # an empty bag; include_last_offset's end
    psw = RNG.standard_normal(10) if mode == "sum" else None
    arrays = [RNG.standard_normal((10, 3)), IDX, offsets, psw]

    def run(fn):
        return lambda w, i, o, p: fn(i, w, o, mode=mode, padding_idx=pad, include_last_offset=last,
                                     per_sample_weights=p)

    check(device, run(F.embedding_bag), run(torch.nn.functional.embedding_bag), arrays,
          grad=(0, 3) if psw is not None else (0,))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_2d_input_and_module(device, mode):
    torch = pytest.importorskip("torch")
    idx = RNG.integers(0, 6, (3, 4))
    check(device, lambda w, i: F.embedding_bag(i, w, mode=mode, max_norm=1.5),
          lambda w, i: torch.nn.functional.embedding_bag(i, w, mode=mode, max_norm=1.5),
          [RNG.standard_normal((6, 2)), idx], grad=(0,))
    dt = float_name(device)
    w = RNG.standard_normal((6, 2)).astype(dt)
    bag = clgrad.nn.EmbeddingBag.from_pretrained(clgrad.tensor(w, device=device), mode=mode)
    ref = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(w), mode=mode)
    assert not bag.weight.requires_grad
    np.testing.assert_allclose(bag(clgrad.tensor(idx, device=device)).cpu().numpy(),
                               ref(torch.tensor(idx)).numpy(), rtol=1e-5)


def test_module_parameters_and_empty_input(device):
    bag = clgrad.nn.EmbeddingBag(5, 3, mode="sum", padding_idx=2, device=device)
    assert tuple(bag.weight.shape) == (5, 3) and float(bag.weight[2].abs().sum()) == 0.0
    out = bag(clgrad.tensor([], dtype=clgrad.int64, device=device), clgrad.tensor([0, 0], device=device))
    assert tuple(out.shape) == (2, 3) and float(out.abs().sum()) == 0.0
    out.sum().backward()
    assert float(bag.weight.grad.abs().sum()) == 0.0


def test_gradcheck(device):
    idx = clgrad.tensor(IDX[:6], device=device)
    offsets = clgrad.tensor([0, 3], device=device)
    gradcheck(device, lambda w, p: F.embedding_bag(idx, w, offsets, mode="sum", per_sample_weights=p),
              [RNG.standard_normal((10, 2)), RNG.standard_normal(6)])


def test_errors(device):
    w = clgrad.zeros(5, 2, device=device)
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(clgrad.tensor([1, 2], device=device), w)
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        F.embedding_bag(clgrad.tensor([[1, 2]], device=device), w, clgrad.tensor([0], device=device))
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        F.embedding_bag(clgrad.tensor([[1, 2]], device=device), w, mode="min")
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for mode='sum'"):
        F.embedding_bag(clgrad.tensor([[1, 2]], device=device), w, per_sample_weights=clgrad.ones(1, 2))
