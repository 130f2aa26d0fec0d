"""The engine's grouped gradient accumulation (clgrad/autograd/_grad_sum.py): an input used k times gets the sum
of its k contributions, bit for bit the left-to-right float sum, in ceil((k - 1) / 7) launches on OpenCL devices;
contributions that cannot be grouped (another dtype, a broadcast shape, create_graph) are added as before."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
from clgrad.autograd import _grad_sum
from clgrad.profiler import profile
from tests.conftest import fp64_ok


def _uses(device, dtype, k, seed=0):
    """w used k times (w * c_i summed): w.grad and the contributions c_i as numpy arrays."""
    rng = np.random.default_rng(seed)
    cs = [rng.standard_normal((3, 5)).astype(dtype) for _ in range(k)]
    w = clgrad.tensor(np.ones((3, 5), dtype), device=device, requires_grad=True)
    loss = None
    for c in cs:
        term = (w * clgrad.tensor(c, device=device)).sum()
        loss = term if loss is None else loss + term
    return w, loss, cs


def _pairwise(monkeypatch, fn):
    """fn() with every contribution added as it arrives (grouping off): the engine's order, one add each."""
    with monkeypatch.context() as m:
        m.setattr(_grad_sum, "_groupable", lambda a, b: False)
        return fn()


@pytest.mark.parametrize("k", [1, 2, 7, 8, 9, 16, 100])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sum_is_bitwise_the_one_by_one_sum(device, k, dtype, monkeypatch):
    if dtype == np.float64 and not fp64_ok(device):
        pytest.skip("no fp64 on this device")

    def grad():
        w, loss, cs = _uses(device, dtype, k)
        loss.backward()
        return w.grad.cpu().numpy(), cs

    got, cs = grad()
    want, _ = _pairwise(monkeypatch, grad)
    assert got.dtype == dtype and got.shape == (3, 5)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, np.sum(cs, axis=0, dtype=np.float64), rtol=1e-5, atol=1e-5)


def test_launches_per_group(device, monkeypatch):
    if not device.startswith("opencl"):
        pytest.skip("counts OpenCL launches")
    w, loss, cs = _uses(device, np.float32, 100)
    with profile() as prof:
        loss.backward()
        clgrad.opencl.synchronize()
    counts = {e.key: e.count for e in prof.key_averages()}
    sums = {k: v for k, v in counts.items() if k.startswith("grad_sum")}
    # 100 contributions: 14 sums of 8 (each the previous sum and 7 more) and one of 2; no pairwise adds
    assert sum(sums.values()) == 15, counts
    assert sums.get("grad_sum8_float") == 14 and sums.get("grad_sum2_float") == 1, counts

    def pairwise():
        w, loss, _ = _uses(device, np.float32, 100)
        loss.backward()
        return w.grad.cpu().numpy()

    np.testing.assert_array_equal(w.grad.cpu().numpy(), _pairwise(monkeypatch, pairwise))


def test_ungroupable_contributions_still_add(device):
    """A broadcast contribution (w used as a row against a matrix), another dtype's path and create_graph."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 3)).astype(np.float32)
    w = clgrad.tensor(np.ones(3, np.float32), device=device, requires_grad=True)
    x = clgrad.tensor(a, device=device)
    loss = (w * x).sum() + (w * 2.0).sum() + (w * w).sum()
    if fp64_ok(device):  # a contribution that arrives in float64 and is cast to w's dtype
        loss = loss + (w.double() * 3).sum()
    (g,) = clgrad.autograd.grad(loss, w, create_graph=True)
    np.testing.assert_allclose(g.detach().cpu().numpy(), a.sum(0) + 4 + (3 if fp64_ok(device) else 0), rtol=1e-6)
    g.sum().backward()  # second order: the grouped sum is not used for grads that require grad
    np.testing.assert_allclose(w.grad.cpu().numpy(), np.full(3, 2.0), rtol=1e-6)
