"""The matmul kernel's nt_blocks form (OpenCL CPU devices): big products whose b is read along k (x @ W.T) copy b's
tiles as 16 x 16 blocks transposed in registers. Exact shapes, tails, batches, storage types and the choice of
kernel, against float64 numpy."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
from clgrad.backends.opencl import matmul as clmatmul
from clgrad.backends.opencl import programs, runtime
from tests.backends.test_oclgrind import ERROR_MARKERS


@pytest.fixture
def cl_device(device):
    if device == "cpu":
        pytest.skip("an OpenCL kernel form")
    return device


def _requested(monkeypatch) -> list:
    """The params of every matmul kernel requested from now on."""
    seen = []
    get = programs.get_kernel

    def spy(dev, template, name, arg_dtypes, params):
        if template == "matmul":
            seen.append(params)
        return get(dev, template, name, arg_dtypes, params)

    monkeypatch.setattr(programs, "get_kernel", spy)
    return seen


@pytest.mark.parametrize("shape", [(64, 2048, 160), (50, 1100, 170), (3, 96, 600, 70)],
                         ids=["whole-tiles", "tails", "batched"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_nt_products(cl_device, shape, dtype, monkeypatch):
    """x @ W.T (and a batch of them, W broadcast) with the blocks allowed from 1 multiply-add and not at all."""
    *batch, m, k, n = shape
    g = np.random.default_rng(3)
    x = g.standard_normal((*batch, m, k)).astype(np.float32)
    w = g.standard_normal((n, k)).astype(np.float32)
    results = []
    for work in (1, 1 << 62):
        monkeypatch.setattr(clmatmul, "NT_BLOCKS_WORK", work)
        clgrad.backends.get(clgrad.device(cl_device)).matmul.__self__._launchers.clear()
        seen = _requested(monkeypatch)
        cx = clgrad.tensor(x, device=cl_device).to(getattr(clgrad, dtype))
        cw = clgrad.tensor(w, device=cl_device).to(getattr(clgrad, dtype))
        got = (cx @ cw.t()).float().cpu().numpy()
        monkeypatch.undo()
        blocks = [p.get("nt_blocks", False) for p in seen]
        if work == 1 and runtime.get(clgrad.device(cl_device).index).props.platform == "Portable Computing Language":
            assert any(blocks), seen  # PoCL's tilings are a lone work-item of 16-wide vectors
        if work > 1:
            assert not any(blocks)
        xr = cx.float().cpu().numpy().astype(np.float64)
        wr = cw.float().cpu().numpy().astype(np.float64)
        ref = xr @ wr.T
        tol = {"float32": 1e-4, "float16": 2e-3, "bfloat16": 1e-2}[dtype]
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * np.abs(ref).max())
        results.append(got)
    if dtype == "float32":  # the same products in the same order of k: the two copies of b agree exactly
        np.testing.assert_array_equal(results[0], results[1])


@pytest.mark.oclgrind
def test_nt_blocks_oclgrind(cl_device, monkeypatch, capfd):
    """A small x @ W.T with the blocks allowed, under the simulator's memory checks (whole and tail tiles)."""
    monkeypatch.setattr(clmatmul, "NT_BLOCKS_WORK", 1)
    clgrad.backends.get(clgrad.device(cl_device)).matmul.__self__._launchers.clear()
    g = np.random.default_rng(4)
    x, w = g.standard_normal((20, 40)).astype(np.float32), g.standard_normal((40, 40)).astype(np.float32)
    got = (clgrad.tensor(x, device=cl_device) @ clgrad.tensor(w, device=cl_device).t()).cpu().numpy()
    np.testing.assert_allclose(got, x.astype(np.float64) @ w.T, rtol=1e-4, atol=1e-4)
    clgrad.opencl.synchronize()
    err = capfd.readouterr().err
    assert not [m for m in ERROR_MARKERS if m.lower() in err.lower()], err[:4000]
