"""``F.normalize`` and the vector p-norms for every p (0, negative, fractional, +-inf), zeros in the input
included: forward and backward against PyTorch, gradcheck."""
from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import grad_precision, quiet_gradcheck

import clgrad
import clgrad.nn.functional as F

torch = pytest.importorskip("torch")

PS = [0, -1, -2, math.inf, -math.inf, 0.5, 1, 2, 3]


def _data():
    a = np.random.uniform(-2, 2, (3, 4))
    a[0, 1] = 0.0  # a zero element
    a[2, :] = 0.0  # a zero vector
    return a


def _both(a, dtype, device):
    return (torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=True),
            clgrad.tensor(a, dtype=getattr(clgrad, dtype), device=device, requires_grad=True))


def _compare(fn_torch, fn_clgrad, a, device, dtype):
    tx, cx = _both(a, dtype, device)
    want, got = fn_torch(tx), fn_clgrad(cx)
    tol = dict(rtol=1e-9, atol=1e-12) if dtype == "float64" else dict(rtol=1e-4, atol=1e-5)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy(), **tol)
    w = np.random.rand(*want.shape)
    (want * torch.tensor(w, dtype=want.dtype)).sum().backward()
    (got * clgrad.tensor(w, dtype=got.dtype, device=device)).sum().backward()
    if tx.grad is None:  # torch leaves the 0-norm's gradient undefined
        assert cx.grad is None
    else:
        np.testing.assert_allclose(cx.grad.cpu().numpy(), tx.grad.numpy(), **tol)


@pytest.mark.parametrize("fn", ["norm", "linalg.vector_norm"])
@pytest.mark.parametrize("dim", [None, 1, 0])
@pytest.mark.parametrize("p", PS)
def test_vector_norm(device, p, dim, fn):
    dtype, _ = grad_precision(device)
    if fn == "norm":
        _compare(lambda x: torch.norm(x, p, dim), lambda x: clgrad.norm(x, p, dim), _data(), device, dtype)
    else:
        _compare(lambda x: torch.linalg.vector_norm(x, p, dim, keepdim=True),
                 lambda x: clgrad.linalg.vector_norm(x, p, dim, keepdim=True), _data(), device, dtype)


@pytest.mark.parametrize("dim", [1, 0, -1])
@pytest.mark.parametrize("p", PS)
def test_normalize(device, p, dim):
    dtype, _ = grad_precision(device)
    _compare(lambda x: torch.nn.functional.normalize(x, p, dim), lambda x: F.normalize(x, p, dim), _data(), device,
             dtype)


@pytest.mark.parametrize("p", [-1, 0.5, 3, math.inf])
def test_normalize_gradcheck(device, p):
    dtype, kw = grad_precision(device)
    x = clgrad.tensor(np.random.uniform(0.5, 2, (2, 3)) * np.sign(np.random.randn(2, 3)), dtype=getattr(clgrad, dtype),
                      device=device, requires_grad=True)
    assert quiet_gradcheck(clgrad.autograd.gradcheck, lambda t: F.normalize(t, p, 1), (x,), **kw)


def test_normalize_eps_and_out():
    x = clgrad.tensor([[1e-14, 0.0], [3.0, 4.0]], dtype=clgrad.float64)
    want = torch.nn.functional.normalize(torch.tensor(x.numpy()), 2.0, 1, eps=1e-12)
    out = clgrad.empty((2, 2), dtype=clgrad.float64)
    F.normalize(x, 2.0, 1, 1e-12, out=out)
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-12)


# ---- batch/layer/group norm on empty inputs: torch returns an empty result, running stats untouched -------------
EMPTY_NORMS = {
    "batch_norm_train": lambda F, x, w, b, rm, rv: F.batch_norm(x, rm, rv, w, b, training=True),
    "batch_norm_train_no_stats": lambda F, x, w, b, rm, rv: F.batch_norm(x, None, None, w, b, training=True),
    "batch_norm_eval": lambda F, x, w, b, rm, rv: F.batch_norm(x, rm, rv, w, b, training=False),
    "layer_norm": lambda F, x, w, b, rm, rv: F.layer_norm(x, x.shape[-1:]),
    "group_norm": lambda F, x, w, b, rm, rv: F.group_norm(x, 1, w, b),
}


def _empty_norm(m, fn, shape, device):
    kw = dict(dtype=m.float32, device=device)
    C = shape[1] if len(shape) > 1 else shape[0]
    x = m.zeros(shape, requires_grad=True, **kw)
    w, b = m.ones(C, requires_grad=True, **kw), m.zeros(C, requires_grad=True, **kw)
    rm, rv = m.zeros(C, **kw), m.ones(C, **kw)
    y = fn(m.nn.functional, x, w, b, rm, rv)
    y.sum().backward()
    return y, x.grad, w.grad, b.grad, rm, rv


@pytest.mark.parametrize("shape", [(0,), (0, 3), (0, 3, 4), (2, 3, 0), (0, 1)])
@pytest.mark.parametrize("name", list(EMPTY_NORMS))
def test_empty_input(device, name, shape):
    try:
        want = _empty_norm(torch, EMPTY_NORMS[name], shape, "cpu")
    except Exception as e:  # noqa: BLE001 - clgrad raises the same type
        with pytest.raises(type(e)):
            _empty_norm(clgrad, EMPTY_NORMS[name], shape, device)
        return
    got = _empty_norm(clgrad, EMPTY_NORMS[name], shape, device)
    for what, g, w in zip(("out", "x.grad", "weight.grad", "bias.grad", "running_mean", "running_var"), got, want):
        if w is None:
            assert g is None, what
            continue
        assert tuple(g.shape) == tuple(w.shape), what
        # torch's group_norm weight gradient over an empty group is nan (0 * nan); an empty sum is 0 here
        np.testing.assert_array_equal(g.detach().cpu().numpy(), np.nan_to_num(w.detach().numpy()), err_msg=what)
