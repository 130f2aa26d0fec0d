"""L-BFGS against PyTorch's on a small least-squares problem (float64, so both follow the same path; float32 on a
device without cl_khr_fp64, where both still take the same steps, to a looser tolerance)."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
import clgrad.optim as optim
from tests.conftest import fp64_ok
from tests.helpers import assert_close

torch = pytest.importorskip("torch")


def _problem(lib, device=None, dtype=np.float64):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((6, 4)).astype(dtype)
    b = rng.standard_normal(6).astype(dtype)
    kw = {"device": device} if device else {}
    A, B = lib.tensor(a, **kw), lib.tensor(b, **kw)
    x = lib.tensor(np.zeros(4, dtype), **kw).requires_grad_(True)
    y = lib.tensor(np.ones(2, dtype), **kw).requires_grad_(True)

    def loss_fn():
        r = A.matmul(x) - B
        return (r * r).sum() + ((y - 3.0) ** 4).sum() + (x * x).sum() * 0.1

    return [x, y], loss_fn


@pytest.mark.parametrize("kwargs", [dict(max_iter=4), dict(max_iter=5, history_size=2, lr=0.5),
                                    dict(max_iter=6, line_search_fn="strong_wolfe")])
def test_matches_torch(device, kwargs):
    dtype, rtol, atol = (np.float64, 1e-7, 1e-9) if fp64_ok(device) else (np.float32, 1e-4, 1e-5)
    params, loss_fn = _problem(clgrad, device, dtype)
    tparams, tloss_fn = _problem(torch, dtype=dtype)
    opt, topt = optim.LBFGS(params, **kwargs), torch.optim.LBFGS(tparams, **kwargs)

    def closure():
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        return loss

    def tclosure():
        topt.zero_grad()
        loss = tloss_fn()
        loss.backward()
        return loss

    for _ in range(3):
        loss, tloss = opt.step(closure), topt.step(tclosure)
        assert float(loss) == pytest.approx(float(tloss.detach()), rel=rtol)
        for p, q in zip(params, tparams):
            assert_close(p.detach(), q.detach().numpy(), rtol=rtol, atol=atol)
    state, tstate = opt.state[params[0]], topt.state[tparams[0]]
    assert state["func_evals"] == tstate["func_evals"] and state["n_iter"] == tstate["n_iter"]


def test_errors():
    p = clgrad.ones(2).requires_grad_(True)
    q = clgrad.ones(2).requires_grad_(True)
    with pytest.raises(ValueError, match="LBFGS doesn't support per-parameter options"):
        optim.LBFGS([{"params": [p]}, {"params": [q]}])
    opt = optim.LBFGS([p], line_search_fn="armijo")

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(closure)
