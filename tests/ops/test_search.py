"""clgrad/ops/search.py on every device against PyTorch: searchsorted (left/right/side, sorter, out_int32, batched
rows, scalars, ties, empty), bucketize, isin (invert, scalars, NaN, mixed dtypes), and their errors."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
from tests.conftest import fp64_ok
from tests.helpers import assert_close, make

torch = pytest.importorskip("torch")


def _fdt(device):
    return "float64" if fp64_ok(device) else "float32"


def _both(device, fn, *arrays, layout="contiguous"):
    ours = fn(clgrad, *[make(a, device, layout) for a in arrays])
    theirs = fn(torch, *[torch.from_numpy(np.ascontiguousarray(a)) for a in arrays])
    assert_close(ours, theirs.numpy())


SEQ = np.array([1, 3, 3, 3, 5, 8])  # ties, so left and right differ
VALS = np.array([[0, 1, 3, 4], [5, 8, 9, -2]])


@pytest.mark.parametrize("kw", [{}, dict(right=True), dict(side="right"), dict(side="left"), dict(out_int32=True)],
                         ids=["left", "right", "side_right", "side_left", "int32"])
def test_searchsorted(device, kw):
    fdt = _fdt(device)
    _both(device, lambda L, s, v: L.searchsorted(s, v, **kw), SEQ, VALS)
    _both(device, lambda L, s, v: L.searchsorted(s, v, **kw), SEQ.astype(fdt), VALS.astype(fdt) + 0.5,
          layout="transposed")
    rows = np.sort(np.random.RandomState(0).randint(-3, 4, size=(2, 3, 5)), axis=-1)  # one sequence per row
    vals = np.random.RandomState(1).randint(-4, 5, size=(2, 3, 4))
    _both(device, lambda L, s, v: L.searchsorted(s, v, **kw), rows, vals)
    _both(device, lambda L, s, v: L.searchsorted(s, v, **kw), SEQ[:0], VALS)  # empty boundaries
    _both(device, lambda L, s, v: L.searchsorted(s, v, **kw), SEQ, VALS[:, :0])  # no values


def test_searchsorted_sorter_scalar_and_mixed_dtypes(device):
    fdt = _fdt(device)
    perm = np.random.RandomState(2).permutation(len(SEQ))
    shuffled = SEQ[perm]
    sorter = np.argsort(shuffled, kind="stable")
    _both(device, lambda L, s, v, o: L.searchsorted(s, v, sorter=o, right=True), shuffled, VALS, sorter)
    _both(device, lambda L, s, v: L.searchsorted(s, v), SEQ, VALS.astype(fdt) + 0.5)  # int boundaries, float values
    seq = make(SEQ, device)
    r = clgrad.searchsorted(seq, 3, right=True)
    assert r.shape == () and int(r.item()) == 4
    out = clgrad.empty(2, 4, dtype=clgrad.int64, device=device)
    assert clgrad.searchsorted(seq, make(VALS, device), out=out) is out
    assert_close(out, np.searchsorted(SEQ, VALS).astype(np.int64))


def test_searchsorted_errors(device):
    seq, v = make(SEQ, device), make(VALS, device)
    with pytest.raises(RuntimeError, match="side and right can't be set to opposites"):
        clgrad.searchsorted(seq, v, side="left", right=True)
    with pytest.raises(RuntimeError, match="side can only be 'left' or 'right' but got x"):
        clgrad.searchsorted(seq, v, side="x")
    with pytest.raises(RuntimeError, match="first N-1 dimensions of boundaries tensor and input value tensor must"):
        clgrad.searchsorted(clgrad.zeros(2, 3, device=device), clgrad.zeros(3, 3, device=device))
    with pytest.raises(RuntimeError, match="sorter must be a tensor of long dtype but got dtype Int"):
        clgrad.searchsorted(seq, v, sorter=seq.int())
    with pytest.raises(RuntimeError, match="boundary and sorter must have the same size"):
        clgrad.searchsorted(seq, v, sorter=seq[:2])
    with pytest.raises(RuntimeError, match=r"boundaries tensor must be 1 dimension, but got dim\(2\)"):
        clgrad.bucketize(v, v)


@pytest.mark.parametrize("right", [False, True])
def test_bucketize(device, right):
    fdt = _fdt(device)
    bounds = np.array([-1.0, 0.0, 0.0, 2.5], fdt)
    x = np.array([[-2.0, -1.0, 0.0], [0.5, 2.5, 7.0]], fdt)
    _both(device, lambda L, a, b: L.bucketize(a, b, right=right), x, bounds, layout="transposed")
    _both(device, lambda L, a, b: L.bucketize(a, b, right=right, out_int32=True), x[0, :0], bounds)
    r = clgrad.bucketize(0.0, make(bounds, device), right=right)
    assert r.shape == () and int(r.item()) == torch.bucketize(0.0, torch.from_numpy(bounds), right=right).item()


@pytest.mark.parametrize("invert", [False, True])
def test_isin(device, invert):
    fdt = _fdt(device)
    rng = np.random.RandomState(3)
    e, t = rng.randint(0, 6, size=(3, 4)), rng.randint(0, 6, size=5)
    _both(device, lambda L, a, b: L.isin(a, b, invert=invert), e, t, layout="transposed")
    _both(device, lambda L, a, b: L.isin(a, b, invert=invert, assume_unique=True), np.arange(5), np.arange(2, 9))
    f = np.array([1.0, np.nan, 2.5, 3.0], fdt)
    _both(device, lambda L, a, b: L.isin(a, b, invert=invert), f, np.array([np.nan, 3.0, 1.0], fdt))
    _both(device, lambda L, a, b: L.isin(a, b, invert=invert), f, np.array([1, 3]))  # float vs int
    _both(device, lambda L, a, b: L.isin(a, b, invert=invert), e, t[:0])  # nothing to find
    _both(device, lambda L, a, b: L.isin(a, b, invert=invert), e[:0], t)
    assert bool(clgrad.isin(3, make(t, device)).item()) == bool(torch.isin(3, torch.from_numpy(t)).item())
    _both(device, lambda L, a: L.isin(a, 3, invert=invert), e)
    with pytest.raises(TypeError):
        clgrad.isin(1, 2)
