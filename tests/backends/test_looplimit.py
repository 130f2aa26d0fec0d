"""Devices that stop a work-item's loops early (Mesa's llvmpipe: 65535 iterations in all, clgrad.backends.opencl.
looplimit): the launchers split their work so that no work-item loops past the limit, or refuse with a clear error.

``limited`` forces a small limit on any OpenCL device, so that the split paths run (and are checked against numpy)
everywhere; the tests without it use sizes past 65535 iterations per row, which a device with the real limit got
wrong before the splits.
"""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.backends.opencl import looplimit, programs, runtime
from tests.helpers import assert_close

LIMIT = 3000  # the forced limit: a budget of 1500 iterations per work-item


@pytest.fixture
def cl_dev(device):
    if device == "cpu":
        pytest.skip("OpenCL only")
    return runtime.get(int(device.split(":")[1]))


@pytest.fixture
def limited(cl_dev, monkeypatch):
    """The device under test with a forced loop limit; launchers cached without it are dropped before and after."""
    programs.invalidate()
    monkeypatch.setitem(looplimit._limits, cl_dev.index, LIMIT)
    yield cl_dev
    programs.invalidate()


def _t(a, device, **kw):
    return clgrad.tensor(a, device=device, **kw)


def test_probe(cl_dev):
    """llvmpipe is measured (65535 on Mesa 22.3); every other device has no limit and is not probed."""
    limit = looplimit.loop_limit(cl_dev)
    if "llvmpipe" in cl_dev.props.name.lower():
        assert limit is None or limit >= 1000
    else:
        assert limit is None and looplimit.budget(cl_dev) is None
    looplimit.check(cl_dev, 100, "a short loop")


def test_check_names_the_device_and_the_limit(limited):
    with pytest.raises(RuntimeError, match=f"opencl:{limited.index}.*after {LIMIT} iterations in all"):
        looplimit.check(limited, 10 * LIMIT, "a long loop")


@pytest.mark.parametrize("shape", [(5003,), (3, 2500), (40, 700)])
@pytest.mark.parametrize("row_sort", [None, True, False])
def test_sort_and_scan(limited, device, monkeypatch, shape, row_sort):
    from clgrad.backends.opencl import scan

    monkeypatch.setattr(scan, "ROW_SORT", row_sort)
    a = np.random.standard_normal(shape).astype(np.float32)
    v, i = _t(a, device).sort(-1)
    np.testing.assert_array_equal(v.cpu().numpy(), np.sort(a, -1, kind="stable"))
    np.testing.assert_array_equal(i.cpu().numpy(), np.argsort(a, -1, kind="stable"))
    assert_close(_t(a, device).cumsum(-1), np.cumsum(a.astype(np.float64), -1).astype(np.float32), rtol=1e-4,
                 atol=1e-3)
    ints = np.random.randint(-9, 9, shape)
    assert_close(_t(ints, device).cumsum(-1), np.cumsum(ints, -1))


@pytest.mark.parametrize("shape", [(3, 5000), (50, 3000)])
def test_rows(limited, device, shape):
    """Softmax family and layer_norm rows longer than one work-item may loop over."""
    torch = pytest.importorskip("torch")
    a = np.random.standard_normal(shape).astype(np.float32)
    x, tx = _t(a, device, requires_grad=True), torch.tensor(a, requires_grad=True)
    target = np.random.randint(0, shape[1], shape[0])
    ours = [F.softmax(x, 1), F.log_softmax(x, 1), F.layer_norm(x, (shape[1],)),
            F.cross_entropy(x, _t(target, device))]
    theirs = [torch.nn.functional.softmax(tx, 1), torch.nn.functional.log_softmax(tx, 1),
              torch.nn.functional.layer_norm(tx, (shape[1],)), torch.nn.functional.cross_entropy(tx, torch.tensor(target))]
    sum(o.sum() * (k + 1) for k, o in enumerate(ours)).backward()
    sum(o.sum() * (k + 1) for k, o in enumerate(theirs)).backward()
    for o, t in zip(ours + [x.grad], theirs + [tx.grad]):
        assert_close(o, t.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_too_long_a_row_is_refused(limited, device):
    with pytest.raises(RuntimeError, match="a row of 300000 elements would loop"):
        F.softmax(clgrad.ones(2, 300000, device=device), 1)


@pytest.mark.parametrize("m,k,n", [(4, 3000, 5), (70, 2000, 33), (1, 5000, 40), (9, 4000, 1), (3, 17, 2)])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
def test_matmul_split_k(limited, device, m, k, n, dtype):
    a = np.random.randint(-3, 4, (m, k)).astype(dtype)  # small integers: every dtype's sum is exact
    b = np.random.randint(-3, 4, (k, n)).astype(dtype)
    want = (a.astype(np.int64) @ b.astype(np.int64)).astype(dtype)
    if dtype == "float16":  # the sums pass 2048: float16 rounds them, as a single pass does too
        got = (_t(a, device) @ _t(b, device)).cpu().numpy().astype(np.float64)
        np.testing.assert_allclose(got, want.astype(np.float64), rtol=2e-3, atol=4)
        return
    assert_close(_t(a, device) @ _t(b, device), want)


def test_matmul_split_layouts_batches_and_bias(limited, device):
    a = np.random.standard_normal((3, 6, 2500)).astype(np.float32)
    b = np.random.standard_normal((3, 2500, 7)).astype(np.float32)
    want = np.einsum("bmk,bkn->bmn", a.astype(np.float64), b)
    assert_close(clgrad.bmm(_t(a, device), _t(b, device)), want.astype(np.float32), rtol=1e-4, atol=1e-3)
    at = _t(np.ascontiguousarray(a.transpose(0, 2, 1)), device).transpose(1, 2)  # K-major a, a broadcast b
    assert_close(clgrad.matmul(at, _t(b[0], device)), np.einsum("bmk,kn->bmn", a.astype(np.float64), b[0]).astype(
        np.float32), rtol=1e-4, atol=1e-3)
    x, w, bias = (np.random.standard_normal(s).astype(np.float32) for s in ((5, 2500), (6, 2500), (6,)))
    assert_close(F.linear(_t(x, device), _t(w, device), _t(bias, device)),
                 (x.astype(np.float64) @ w.T + bias).astype(np.float32), rtol=1e-4, atol=1e-3)


def test_conv_weight_gradient_and_bias(limited, device):
    """The batch-summed product of a conv's weight gradient, im2col blocks, the bias over large planes."""
    torch = pytest.importorskip("torch")
    x = np.random.standard_normal((9, 2, 40, 41)).astype(np.float32)
    w = np.random.standard_normal((3, 2, 3, 3)).astype(np.float32)
    bias = np.random.standard_normal(3).astype(np.float32)
    ours = [_t(v, device, requires_grad=True) for v in (x, w, bias)]
    theirs = [torch.tensor(v, requires_grad=True) for v in (x, w, bias)]
    out, tout = F.conv2d(*ours, padding=1), torch.nn.functional.conv2d(*theirs, padding=1)
    out.backward(_t(np.ones(out.shape, np.float32), device))
    tout.backward(torch.ones(tout.shape))
    assert_close(out, tout.detach().numpy(), rtol=1e-4, atol=1e-4)
    for o, t in zip(ours, theirs):
        assert_close(o.grad, t.grad.numpy(), rtol=1e-4, atol=1e-3)


def test_pooling(limited, device):
    torch = pytest.importorskip("torch")
    x = np.random.standard_normal((2, 3, 50, 60)).astype(np.float32)
    ours, theirs = _t(x, device, requires_grad=True), torch.tensor(x, requires_grad=True)
    F.adaptive_avg_pool2d(ours, 1).sum().backward()  # a global average: a reduction on a limited device
    torch.nn.functional.adaptive_avg_pool2d(theirs, 1).sum().backward()
    assert_close(F.adaptive_avg_pool2d(ours, 1), torch.nn.functional.adaptive_avg_pool2d(theirs, 1).detach().numpy(),
                 rtol=1e-5, atol=1e-6)
    assert_close(ours.grad, theirs.grad.numpy())
    with pytest.raises(RuntimeError, match="pool kernel max_pool .* would loop about"):
        F.max_pool2d(ours, 40)


def test_weighted_bincount_and_serial_index_add(limited, device, monkeypatch):
    idx = np.random.randint(0, 7, 5000)
    w = np.random.standard_normal(5000).astype(np.float32)
    assert_close(clgrad.bincount(_t(idx, device), _t(w, device)), np.bincount(idx, w).astype(np.float32), rtol=1e-4,
                 atol=1e-4)
    monkeypatch.setattr(limited, "_int64_atomics", False, raising=False)  # one work-item applies the updates
    src = np.random.randint(-5, 5, 5000)
    got = clgrad.zeros(7, dtype=clgrad.int64, device=device).index_add_(0, _t(idx, device), _t(src, device))
    assert_close(got, np.bincount(idx, src, 7).astype(np.int64))


def test_long_loops_without_forcing(device):
    """Past 65535 iterations per row: llvmpipe returned wrong sorts, scans, rows and products here before."""
    a = np.random.standard_normal((2, 70001)).astype(np.float32)
    np.testing.assert_array_equal(_t(a, device).sort(-1)[0].cpu().numpy(), np.sort(a, -1))
    assert_close(_t(a, device).cumsum(-1), np.cumsum(a.astype(np.float64), -1).astype(np.float32), rtol=1e-3,
                 atol=1e-2)
    ln = (a - a.mean(1, keepdims=True)) / np.sqrt(a.var(1, keepdims=True) + 1e-5)
    assert_close(F.layer_norm(_t(a, device), (70001,)), ln, rtol=1e-3, atol=1e-3)
    b = np.random.standard_normal((70001, 3)).astype(np.float32)
    assert_close(_t(a, device) @ _t(b, device), (a.astype(np.float64) @ b).astype(np.float32), rtol=1e-3, atol=1e-2)


@pytest.mark.parametrize("n", [8, 16])
def test_jacobi_eigh_and_svd_split_their_sweeps(limited, device, n):
    """Under a loop limit the Jacobi kernels run a few sweeps per launch, carrying A and V over (several launches
    here), and give the same factorizations; a matrix whose one sweep and sort would not fit is refused."""
    rng = np.random.default_rng(n)
    a = rng.standard_normal((2, n, n)).astype(np.float32)
    x = _t(a, device)
    U, S, Vh = clgrad.linalg.svd(x, full_matrices=False)
    np.testing.assert_allclose(((U * S.unsqueeze(-2)) @ Vh).cpu().numpy(), a, atol=2e-5 * n)
    np.testing.assert_allclose(S.cpu().numpy(), np.linalg.svd(a, compute_uv=False), rtol=1e-4, atol=1e-5)
    sym = a @ a.transpose(0, 2, 1)
    w, V = clgrad.linalg.eigh(_t(sym, device))
    np.testing.assert_allclose(w.cpu().numpy(), np.linalg.eigvalsh(sym), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(((V * w.unsqueeze(-2)) @ V.mT).cpu().numpy(), sym, atol=1e-4 * n * n)
    with pytest.raises(RuntimeError, match="linalg.svd of 40x40 would loop about"):
        clgrad.linalg.svd(_t(rng.standard_normal((40, 40)).astype(np.float32), device))
