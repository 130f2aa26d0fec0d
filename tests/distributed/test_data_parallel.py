"""nn.parallel.DataParallel: splitting a batch over devices gives the bare module's outputs and gradients.

This machine has one working OpenCL device, so "several devices" are that device twice, cpu twice, and
cpu with the OpenCL device mixed (which exercises the real cross-device copies and gradient flow).
"""
from __future__ import annotations

import numpy as np
import pytest
from conftest import DEVICES

import clgrad
import clgrad.nn as nn
from clgrad.backends.opencl import runtime
from clgrad.nn.parallel import DataParallel, gather, replicate, scatter

OPENCL = [p.values[0] for p in DEVICES if p.values[0] != "cpu" and runtime.get(int(p.values[0][7:])).usable][:1]
LAYOUTS = [["cpu", "cpu"]] + [[d, d] for d in OPENCL] + [["cpu", d] for d in OPENCL] + [[d, "cpu"] for d in OPENCL]


def _net(dev):
    clgrad.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2)).to(dev)


def _grads(model):
    return [p.grad.cpu().numpy().copy() for p in model.parameters()]


@pytest.mark.parametrize("devices", LAYOUTS, ids=lambda ds: "+".join(ds))
@pytest.mark.parametrize("rows", [7, 1])
def test_matches_single_device(devices, rows):
    x = np.random.RandomState(1).randn(rows, 6).astype(np.float32)
    ref, model = _net(devices[0]), _net(devices[0])
    want = ref(clgrad.tensor(x, device=devices[0]))
    want.square().sum().backward()
    dp = DataParallel(model, device_ids=devices)
    inp = clgrad.tensor(x, device=devices[0], requires_grad=True)
    out = dp(inp)
    assert out.device == clgrad.device(devices[0]) and out.shape == (rows, 2)
    out.square().sum().backward()
    np.testing.assert_allclose(out.detach().cpu().numpy(), want.detach().cpu().numpy(), rtol=1e-5, atol=1e-6)
    for got, exp in zip(_grads(model), _grads(ref)):
        np.testing.assert_allclose(got, exp, rtol=1e-5, atol=1e-6)
    assert inp.grad is not None and inp.grad.shape == (rows, 6)


def test_replicas_are_differentiable_copies():
    model = _net("cpu")
    a, b = replicate(model, ["cpu", "cpu"])
    assert a[0].weight is model[0].weight  # same device: the parameter itself
    assert list(a.parameters()) == [] and a is not model


def test_scatter_gather_nested():
    x = clgrad.arange(10.0).reshape(5, 2)
    parts = scatter(({"x": x, "k": 3}, [x]), ["cpu", "cpu"])
    assert len(parts) == 2 and parts[0][0]["k"] == 3
    assert parts[0][0]["x"].shape == (3, 2) and parts[1][1][0].shape == (2, 2)
    back = gather([p[0] for p in parts], "cpu")
    np.testing.assert_array_equal(back["x"].numpy(), x.numpy())


def test_state_dict_prefix_and_module():
    model = _net("cpu")
    dp = DataParallel(model, device_ids=["cpu"])
    assert dp.module is model
    assert list(dp.state_dict()) == ["module." + k for k in model.state_dict()]


def test_module_on_wrong_device():
    if not OPENCL:
        pytest.skip("needs an OpenCL device")
    with pytest.raises(RuntimeError, match=r"module must have its parameters and buffers on device "
                                           rf"{OPENCL[0]} \(device_ids\[0\]\) but found one of them on device: cpu"):
        DataParallel(_net("cpu"), device_ids=[OPENCL[0], "cpu"])
