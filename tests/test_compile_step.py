"""clgrad.compile(step, mode="reduce-overhead"): warm up, capture, replay; eager fallback (captured.py)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import clgrad
import clgrad.nn as nn
import clgrad.nn.functional as F
from clgrad.opencl import NotCapturable


def _setup(device, seed=0):
    clgrad.manual_seed(seed)
    model = nn.Sequential(nn.Conv2d(1, 3, 3), nn.ReLU(), nn.Flatten(), nn.Linear(3 * 4 * 4, 5), nn.Dropout(0.2)).to(device)
    return model, clgrad.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def _data(device, n=5, batch=4):
    rng = np.random.default_rng(0)
    return [(clgrad.tensor(rng.standard_normal((batch, 1, 6, 6)).astype(np.float32), device=device),
             clgrad.tensor(rng.integers(0, 5, batch), device=device)) for _ in range(n)]


def _make_step(model, opt, log=None):
    def train_step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if log is not None:
            log.append(loss.item())  # a host read: not capturable
        return loss
    return train_step


def _run(device, compiled: bool, data, **kw):
    model, opt = _setup(device)
    step = _make_step(model, opt, kw.pop("log", None))
    if compiled:
        step = clgrad.compile(step, mode="reduce-overhead", **kw)
    losses = [step(x, y).detach().cpu().numpy().copy() for x, y in data]
    return [p.detach().cpu().numpy() for p in model.parameters()], losses


def _opencl(device):
    if device == "cpu":
        pytest.skip("capture needs an OpenCL device (test_cpu_arguments_run_eagerly covers cpu)")
    return device


def test_training_step_replayed_bit_identical(device):
    device = _opencl(device)
    data = _data(device)
    eager_params, eager_losses = _run(device, False, data)
    params, losses = _run(device, True, data)
    for e, r in zip(eager_params, params):
        assert np.array_equal(e, r)
    for e, r in zip(eager_losses, losses):
        assert np.array_equal(e, r)


def test_new_signature_captures_again(device):
    device = _opencl(device)
    data = _data(device, 3, batch=4) + _data(device, 3, batch=2)
    eager_params, eager_losses = _run(device, False, data)
    model, opt = _setup(device)
    step = clgrad.compile(_make_step(model, opt), mode="reduce-overhead")
    losses = [step(x, y).detach().cpu().numpy().copy() for x, y in data]
    assert len(step.entries) == 2
    for e, r in zip(eager_params, model.parameters()):
        assert np.array_equal(e, r.detach().cpu().numpy())
    assert all(np.array_equal(e, r) for e, r in zip(eager_losses, losses))


def test_host_read_falls_back_to_eager_with_one_warning(device):
    device = _opencl(device)
    data = _data(device, 4)
    eager_log, log = [], []
    eager_params, _ = _run(device, False, data, log=eager_log)
    with pytest.warns(UserWarning, match="runs eagerly: item\\(\\) is not capturable") as record:
        params, _ = _run(device, True, data, log=log)
    assert len([w for w in record if "runs eagerly" in str(w.message)]) == 1
    assert log == eager_log
    assert all(np.array_equal(e, r) for e, r in zip(eager_params, params))


def test_fullgraph_raises(device):
    device = _opencl(device)
    with pytest.raises(NotCapturable, match="fullgraph=True.*item"):
        _run(device, True, _data(device, 3), log=[], fullgraph=True)
    assert not clgrad.opencl.is_current_stream_capturing()


def test_captured_module_inference(device):
    device = _opencl(device)
    clgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 2)).to(device)
    compiled = clgrad.compile(model, mode="reduce-overhead")
    assert compiled._orig_mod is model and list(compiled.state_dict()) == [f"_orig_mod.{k}" for k in model.state_dict()]
    rng = np.random.default_rng(3)
    xs = [clgrad.tensor(rng.standard_normal((3, 6)).astype(np.float32), device=device) for _ in range(3)]
    with clgrad.no_grad():
        for x in xs:
            assert np.array_equal(compiled(x).cpu().numpy(), model(x).cpu().numpy())
    assert len(compiled._step.entries) == 1
    out = compiled(xs[0])  # autograd records this forward: eager, with its graph
    assert out.grad_fn is not None


def test_cpu_arguments_run_eagerly(device):
    if device != "cpu":
        pytest.skip("the cpu case")
    step = clgrad.compile(lambda a: a * 2.0, mode="reduce-overhead")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        outs = [step(clgrad.ones(2)).numpy() for _ in range(3)]
    assert all(np.array_equal(o, [2, 2]) for o in outs)
    assert len([w for w in record if "not all on one OpenCL device" in str(w.message)]) == 1
    with pytest.raises(NotCapturable, match="fullgraph"):
        clgrad.compile(lambda a: a * 2.0, mode="reduce-overhead", fullgraph=True)(clgrad.ones(2))


def test_captured_module_keys_on_training_mode(device):
    device = _opencl(device)
    clgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 6), nn.Dropout(0.5)).to(device)
    compiled = clgrad.compile(model, mode="reduce-overhead")
    x = clgrad.ones(2, 6, device=device)
    with clgrad.no_grad():
        for _ in range(3):
            compiled(x)
        model.eval()
        outs = [compiled(x).cpu().numpy() for _ in range(3)]
        want = model(x).cpu().numpy()
    assert len(compiled._step.entries) == 2 and all(np.array_equal(o, want) for o in outs)
