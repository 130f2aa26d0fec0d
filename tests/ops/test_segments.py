"""segment_reduce (lengths and offsets, every reduction, initial, axis) and histogramdd against torch, on every
device."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
from tests.nn.torch_ref import check, float_name, gradcheck

RNG = np.random.default_rng(29)
LENGTHS = np.array([0, 1, 2, 2])
OFFSETS = np.array([0, 0, 1, 3, 5])


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("by", ["lengths", "offsets"])
def test_segment_reduce(device, reduce, by):
    torch = pytest.importorskip("torch")
    seg = LENGTHS if by == "lengths" else OFFSETS

    def run(lib):
        return lambda d, s: lib.segment_reduce(d, reduce, initial=0.5, **{by: s})

    check(device, run(clgrad), run(torch), [RNG.standard_normal((5, 2)), seg], grad=(0,))


def test_segment_reduce_axis_and_empty_values(device):
    torch = pytest.importorskip("torch")
    check(device, lambda d, s: clgrad._segment_reduce(d.t(), "max", lengths=s, axis=0),
          lambda d, s: torch.segment_reduce(d.t(), "max", lengths=s, axis=0), [RNG.standard_normal((2, 5)), LENGTHS],
          grad=(0,))
    with pytest.raises(RuntimeError, match="Expected axis to be the last dimension of lengths"):
        clgrad.segment_reduce(clgrad.zeros(2, 5, device=device), "sum", lengths=clgrad.tensor(LENGTHS), axis=1)
    with pytest.raises(NotImplementedError, match="not batched ones"):
        clgrad.segment_reduce(clgrad.zeros(2, 5, device=device), "sum", lengths=clgrad.tensor([LENGTHS] * 2),
                              axis=1)
    data = clgrad.tensor(RNG.standard_normal(5).astype(float_name(device)), device=device)
    lengths = clgrad.tensor(LENGTHS, device=device)
    for reduce, empty in (("sum", 0.0), ("prod", 1.0), ("max", -np.inf), ("min", np.inf)):
        assert clgrad.segment_reduce(data, reduce, lengths=lengths)[0].item() == empty
    assert np.isnan(clgrad.segment_reduce(data, "mean", lengths=lengths)[0].item())
    with pytest.raises(RuntimeError, match="Expected all rows of lengths along axis to sum"):
        clgrad.segment_reduce(data, "sum", lengths=clgrad.tensor([1, 1], device=device))
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, max, min, mean or prod"):
        clgrad.segment_reduce(data, "median", lengths=lengths)


def test_segment_reduce_gradcheck(device):
    lengths = clgrad.tensor([2, 1, 2], device=device)
    gradcheck(device, lambda d: clgrad.segment_reduce(d, "prod", lengths=lengths), [RNG.standard_normal((5, 2))])


@pytest.mark.parametrize("case", ["counts", "density", "range_weight", "edges", "one_int"])
def test_histogramdd(device, case):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((30, 3))
    bins, kw, arrays = (2, 3, 2), {}, [x]
    if case == "density":
        kw = {"density": True}
    elif case == "range_weight":
        kw = {"range": [0.0, 1.0, -1.0, 1.0, 0.0, 2.0]}
        arrays = [x, RNG.random(30)]
    elif case == "edges":
        bins = None
        arrays = [x, np.array([-1.0, 0.0, 1.0]), np.array([-2.0, 0.5, 1.0, 3.0]), np.array([-0.5, 0.5])]
    elif case == "one_int":
        bins = 3

    def run(lib):
        def call(a, *rest):
            if case == "edges":
                r = lib.histogramdd(a, list(rest))
            elif case == "range_weight":
                r = lib.histogramdd(a, bins, weight=rest[0], **kw)
            else:
                r = lib.histogramdd(a, bins, **kw)
            return [r.hist, *r.bin_edges]
        return call

    check(device, run(clgrad), run(torch), arrays)


def test_histogramdd_errors(device):
    x = clgrad.zeros(4, 2, device=device)
    with pytest.raises(RuntimeError, match="expected 2 sequences of bin edges"):
        clgrad.histogramdd(x, [2, 2, 2])
    with pytest.raises(RuntimeError, match="range should have 4 elements"):
        clgrad.histogramdd(x, 2, range=[0.0, 1.0])
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        clgrad.histogramdd(clgrad.zeros(4, device=device), 2)
