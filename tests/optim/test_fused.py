"""Fused optimizer steps (one kernel per parameter on OpenCL) against the composed elementwise form.

The same start and gradients go to a contiguous parameter, which takes the fused kernel, and to a transposed
one, which takes the composed path; both must end equal, and the fused kernel must really have run."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
import clgrad.optim as optim
from clgrad import backends

CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.01, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.02, maximize=True, eps=1e-6)),
    ("AdamW", dict(lr=0.01, weight_decay=0.3, amsgrad=True)),
    ("AdamW", dict(lr=0.01, betas=(0.3, 0.4))),  # 1 - beta1 >= 0.5 takes lerp's other branch
]
STEPS = 5
PRIMITIVE = {"SGD": "sgd_step", "Adam": "adam_step", "AdamW": "adam_step"}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_fused_matches_composed(name, kw, dtype, device, monkeypatch):
    dt = getattr(clgrad, dtype)
    if device != "cpu" and dt is clgrad.float64 and not clgrad.opencl.get_device_properties(device).fp64:
        pytest.skip("the device lacks cl_khr_fp64")
    rng = np.random.default_rng(0)
    start = rng.standard_normal((6, 7))
    fused = clgrad.nn.Parameter(clgrad.tensor(start, dtype=dt, device=device))
    composed = clgrad.nn.Parameter(clgrad.tensor(start.T.copy(), dtype=dt, device=device).t())
    assert not composed.is_contiguous()
    opts = [getattr(optim, name)([p], **kw) for p in (fused, composed)]
    calls = []
    fused_optim = backends.get(clgrad.device(device)).fused_optim
    if fused_optim is not None:
        real = getattr(fused_optim, PRIMITIVE[name])
        monkeypatch.setattr(fused_optim, PRIMITIVE[name], lambda *a, **k: calls.append(1) or real(*a, **k))
    for _ in range(STEPS):
        grad = rng.standard_normal((6, 7))
        for p, opt in zip((fused, composed), opts):
            p.grad = clgrad.tensor(grad, dtype=dt, device=device)
            opt.step()
    tol = 1e-5 if dt is clgrad.float32 else 1e-12
    np.testing.assert_allclose(fused.detach().cpu().numpy(), composed.detach().cpu().numpy(), rtol=tol, atol=tol)
    for key, value in opts[0].state[fused].items():
        other = opts[1].state[composed][key]
        if isinstance(value, clgrad.Tensor):
            np.testing.assert_allclose(value.cpu().numpy(), other.cpu().numpy(), rtol=tol, atol=tol, err_msg=key)
        else:
            assert value == other
    # only OpenCL devices have the fused kernels; the composed parameter never takes them
    assert len(calls) == (STEPS if device != "cpu" else 0)
