"""clgrad.amp.GradScaler against torch.amp.GradScaler("cpu"): the same scales, skipped steps and parameters over a
run with injected inf gradients; state_dict; the misuse errors; disabled and "cuda" scalers."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import clgrad

torch = pytest.importorskip("torch")


def _train(m, device, steps=6, growth_interval=2):
    kw = {} if m is torch else {"device": device}
    w = m.tensor([[0.5, -1.0], [2.0, 0.25]], **kw).requires_grad_(True)
    opt = m.optim.SGD([w], lr=0.01, momentum=0.9)
    scaler = m.amp.GradScaler("cpu" if m is torch else clgrad.device(device).type, init_scale=1024.0,
                              growth_interval=growth_interval)
    x = m.tensor([[1.0, 2.0], [3.0, 4.0]], **kw)
    scales, results = [], []
    for step in range(steps):
        loss = ((x @ w) ** 2).sum() * (math.inf if step == 2 else 1.0)  # step 2: inf gradients
        scaler.scale(loss).backward()
        if step == 4:
            scaler.unscale_(opt)  # an explicit unscale_ (e.g. before clipping), then step
        results.append(scaler.step(opt))
        scaler.update()
        opt.zero_grad()
        scales.append(scaler.get_scale())
    return w.detach().cpu().numpy() if m is clgrad else w.detach().numpy(), scales, scaler


def test_matches_torch(device):
    ours, scales, scaler = _train(clgrad, device)
    theirs, want, tscaler = _train(torch, device)
    assert scales == want  # grows every 2 clean steps, halves after the inf step
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)
    assert scaler.state_dict() == tscaler.state_dict()
    fresh = clgrad.amp.GradScaler("cpu")
    fresh.load_state_dict(scaler.state_dict())
    assert fresh.state_dict() == scaler.state_dict()


def test_misuse_errors_match_torch():
    def misuse(m, case):
        w = m.ones(2, requires_grad=True)
        opt = m.optim.SGD([w], lr=0.1)
        s = m.amp.GradScaler("cpu")
        if case == "update before scale":
            return s.update()
        s.scale((w * w).sum()).backward()
        if case == "unscale twice":
            s.unscale_(opt)
            s.unscale_(opt)
        elif case == "step twice":
            s.step(opt)
            s.step(opt)
        elif case == "unscale after step":
            s.step(opt)
            s.unscale_(opt)
        elif case == "closure":
            s.step(opt, closure=lambda: None)
        elif case == "empty state":
            m.amp.GradScaler("cpu").load_state_dict({})

    for case in ("update before scale", "unscale twice", "step twice", "unscale after step", "closure",
                 "empty state"):
        with pytest.raises((RuntimeError, AssertionError)) as want:
            misuse(torch, case)
        with pytest.raises(want.type) as got:
            misuse(clgrad, case)
        assert str(got.value) == str(want.value), case


def test_fp16_gradients_refused_and_disabled_scalers():
    w = clgrad.ones(2, dtype=clgrad.float16, requires_grad=True)
    opt = clgrad.optim.SGD([w], lr=0.1)
    s = clgrad.amp.GradScaler("cpu")
    s.scale(w.float().sum()).backward()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        s.step(opt)
    off = clgrad.amp.GradScaler("cpu", enabled=False)
    loss = clgrad.ones(())
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from clgrad.cuda.amp import GradScaler, autocast

        assert not GradScaler().is_enabled()
        with autocast():
            assert not clgrad.is_autocast_enabled()
    assert any("CUDA is not available" in str(c.message) for c in caught)
