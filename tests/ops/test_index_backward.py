"""Backward of the index ops with duplicate indices (each filled/written entry counts once, each added one every
time), against PyTorch: index_fill, index_put (accumulate False/True), setitem, index_add, scatter, scatter_add,
masked_fill, gather, index_select."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import grad_precision, quiet_gradcheck

import clgrad

torch = pytest.importorskip("torch")

A = np.random.RandomState(0).rand(4, 3)
SRC = np.random.RandomState(1).rand(4, 3)
DUP = [1, 3, 1, 1]  # row 1 three times
SCAT = [[1, 3, 1], [1, 1, 1]]


def _setitem(y, index, value):
    y[index] = value
    return y


# name -> fn(module, x, value (0-d), src, device): every input requires grad
CASES = {
    "index_fill": lambda m, x, v, s, d: x.index_fill(0, m.tensor(DUP, device=d), v),
    "index_fill_dim1": lambda m, x, v, s, d: x.index_fill(1, m.tensor([0, 2, 0], device=d), v),
    "index_fill_number": lambda m, x, v, s, d: x.index_fill(0, m.tensor(DUP, device=d), 2.0),
    "index_add": lambda m, x, v, s, d: x.index_add(0, m.tensor(DUP, device=d), s, alpha=2.0),
    "index_add_dim1": lambda m, x, v, s, d: x.index_add(1, m.tensor([0, 0, 2], device=d), s[:, :3]),
    "index_put": lambda m, x, v, s, d: x.index_put((m.tensor(DUP, device=d),), s),
    "index_put_accumulate": lambda m, x, v, s, d: x.index_put((m.tensor(DUP, device=d),), s, accumulate=True),
    "index_put_2d": lambda m, x, v, s, d: x.index_put((m.tensor(DUP, device=d), m.tensor([0, 1, 0, 0], device=d)),
                                                       v.expand(4)),
    "index_put_2d_accumulate": lambda m, x, v, s, d: x.index_put(
        (m.tensor(DUP, device=d), m.tensor([0, 1, 0, 0], device=d)), v * s[:, 0], accumulate=True),
    "index_put_value": lambda m, x, v, s, d: x.index_put((m.tensor(DUP, device=d),), v),
    "index_put_mask": lambda m, x, v, s, d: x.index_put((m.tensor(A > 0.5, device=d),), v),
    "setitem": lambda m, x, v, s, d: _setitem(x * 1, m.tensor(DUP, device=d), s),
    "setitem_value": lambda m, x, v, s, d: _setitem(x * 1, m.tensor(DUP, device=d), v),
    "scatter": lambda m, x, v, s, d: x.scatter(0, m.tensor(SCAT, device=d), s[:2]),
    "scatter_value": lambda m, x, v, s, d: x.scatter(0, m.tensor(SCAT, device=d), 2.0),
    "scatter_add": lambda m, x, v, s, d: x.scatter_add(0, m.tensor(SCAT, device=d), s[:2]),
    "masked_fill": lambda m, x, v, s, d: x.masked_fill(m.tensor(A > 0.5, device=d), v),
    "masked_fill_broadcast": lambda m, x, v, s, d: x.masked_fill(m.tensor([True, False, True], device=d), v),
    "gather": lambda m, x, v, s, d: x.gather(0, m.tensor(SCAT, device=d)),
    "index_select": lambda m, x, v, s, d: x.index_select(0, m.tensor(DUP, device=d)),
}


def _grads(m, fn, dtype, device):
    dt = getattr(m, dtype)
    x = m.tensor(A, dtype=dt, device=device, requires_grad=True)
    v = m.tensor(2.5, dtype=dt, device=device, requires_grad=True)
    s = m.tensor(SRC, dtype=dt, device=device, requires_grad=True)
    out = fn(m, x, v, s, device)
    w = m.tensor(np.random.RandomState(2).rand(*out.shape), dtype=dt, device=device)
    (out * w).sum().backward()
    return [out] + [t.grad for t in (x, v, s)]


@pytest.mark.parametrize("name", list(CASES))
def test_duplicate_indices(device, name):
    dtype, _ = grad_precision(device)
    want = _grads(torch, CASES[name], dtype, "cpu")
    got = _grads(clgrad, CASES[name], dtype, device)
    rtol = 1e-10 if dtype == "float64" else 1e-5
    for what, g, w in zip(("out", "x.grad", "value.grad", "src.grad"), got, want):
        if w is None:
            assert g is None or not g.cpu().numpy().any(), what
            continue
        assert g is not None, what
        np.testing.assert_allclose(g.detach().cpu().numpy(), w.detach().numpy(), rtol=rtol, err_msg=what)


def test_index_fill_value_gradcheck(device):
    """d out / d value is the count of distinct filled entries; gradgradcheck through the mask."""
    dtype, kw = grad_precision(device)
    x = clgrad.tensor(A, dtype=getattr(clgrad, dtype), device=device, requires_grad=True)
    v = clgrad.tensor(0.5, dtype=getattr(clgrad, dtype), device=device, requires_grad=True)
    idx = clgrad.tensor([2, 0, 2, -2], device=device)  # -2 is row 2 again
    fn = lambda a, b: a.index_fill(0, idx, b) * a  # noqa: E731
    assert quiet_gradcheck(clgrad.autograd.gradcheck, fn, (x, v), **kw)
    assert quiet_gradcheck(clgrad.autograd.gradgradcheck, fn, (x, v), **kw)
    out = x.index_fill(0, idx, v)
    (gv,) = clgrad.autograd.grad(out.sum(), v)
    assert gv.item() == 6.0  # rows 0 and 2, three columns each
