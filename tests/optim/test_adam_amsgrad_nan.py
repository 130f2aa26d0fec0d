"""Issue 19 item 10: AMSGrad's running maximum propagates a NaN gradient as ``torch.maximum`` does, in the fused
OpenCL kernel (contiguous parameters) and in the composed form (the cpu reference, non-contiguous parameters)."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import fp64_ok

import clgrad
import clgrad.optim as optim

NAN = float("nan")
GRADS = [[1.0, 1.0, 0.5, -2.0], [NAN, 1.0, 0.5, -2.0], [1.0, 2.0, 0.0, NAN], [0.5, 0.5, 0.5, 0.5]]


def _run(lib, device, name, dtype, layout):
    p = lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=getattr(lib, dtype), **({} if lib is not clgrad else
                                                                        {"device": device}))
    if layout == "transposed":
        p = p.t().contiguous().t()
    p = lib.nn.Parameter(p)
    opt = getattr(lib.optim, name)([p], lr=0.1, amsgrad=True, weight_decay=0.01)
    for g in GRADS:
        grad = lib.tensor(g, dtype=p.dtype).reshape(2, 2)
        p.grad = grad if lib is not clgrad else grad.to(device)
        opt.step()
    state = opt.state[p]
    return [np.asarray(t.detach().cpu().numpy()) for t in (p, state["max_exp_avg_sq"], state["exp_avg_sq"])]


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_amsgrad_propagates_nan_like_torch(device, name, layout):
    torch = pytest.importorskip("torch")
    dtype = "float64" if fp64_ok(device) else "float32"
    got = _run(clgrad, device, name, dtype, layout)
    want = _run(torch, device, name, dtype, layout)
    assert np.isnan(want[1]).sum() == 2, "the reference lost its NaNs"
    for g, w, what in zip(got, want, ("param", "max_exp_avg_sq", "exp_avg_sq")):
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=what)
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7, err_msg=what)


def test_fused_kernel_really_ran(device, monkeypatch):
    if device == "cpu":
        pytest.skip("only OpenCL devices have the fused kernel")
    fused = clgrad.backends.get(clgrad.device(device)).fused_optim
    calls = []
    real = fused.adam_step
    monkeypatch.setattr(fused, "adam_step", lambda *a, **k: calls.append(1) or real(*a, **k))
    p = clgrad.nn.Parameter(clgrad.ones(3, device=device))
    opt = optim.Adam([p], amsgrad=True)
    for g in ([1.0, NAN, 1.0], [1.0, 1.0, 1.0]):
        p.grad = clgrad.tensor(g, device=device)
        opt.step()
    assert calls == [1, 1]
    assert np.isnan(opt.state[p]["max_exp_avg_sq"].cpu().numpy()).tolist() == [False, True, False]
