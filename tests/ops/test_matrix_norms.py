"""Matrix norms ('fro', 'nuc', +-2, +-1, +-inf) and singular values through ``clgrad.linalg`` and ``clgrad.norm``:
forward and backward against PyTorch (batched, other dims, keepdim), gradcheck, torch's errors."""
from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import grad_precision, quiet_gradcheck

import clgrad

torch = pytest.importorskip("torch")

ORDS = ["fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf]
A = np.random.RandomState(0).randn(3, 4)
B = np.random.RandomState(1).randn(2, 3, 4)

CALLS = {
    "matrix_norm": (A, lambda m, x, o: m.linalg.matrix_norm(x, o)),
    "matrix_norm_batched": (B, lambda m, x, o: m.linalg.matrix_norm(x, o)),
    "matrix_norm_dims_keepdim": (B, lambda m, x, o: m.linalg.matrix_norm(x, o, dim=(2, 0), keepdim=True)),
    "matrix_norm_dims": (B, lambda m, x, o: m.linalg.matrix_norm(x, o, dim=(-1, 1))),
    "linalg_norm": (A, lambda m, x, o: m.linalg.norm(x, o)),
    "linalg_norm_dims": (B, lambda m, x, o: m.linalg.norm(x, o, (0, 2))),
}


def _run(m, a, fn, o, dtype, device):
    x = m.tensor(a, dtype=getattr(m, dtype), device=device, requires_grad=True)
    out = fn(m, x, o)
    w = m.tensor(np.random.RandomState(2).rand(*out.shape), dtype=out.dtype, device=device)
    (out * w).sum().backward()
    return out, x.grad


@pytest.mark.parametrize("ord", ORDS, ids=str)
@pytest.mark.parametrize("call", list(CALLS))
def test_matrix_norm(device, call, ord):
    dtype, _ = grad_precision(device)
    a, fn = CALLS[call]
    want = _run(torch, a, fn, ord, dtype, "cpu")
    got = _run(clgrad, a, fn, ord, dtype, device)
    tol = dict(rtol=1e-9, atol=1e-12) if dtype == "float64" else dict(rtol=1e-4, atol=1e-5)
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape)
        np.testing.assert_allclose(g.detach().cpu().numpy(), w.detach().numpy(), **tol)


@pytest.mark.parametrize("p", ["nuc", "fro"])
def test_torch_norm_str(device, p):
    """``clgrad.norm(x, 'nuc')``: the whole 2-D input, or the 2-tuple ``dim``."""
    for a, kw in ((A, {}), (B, dict(dim=(0, 2), keepdim=True)), (B, dict(dim=(1, 2)))):
        want = torch.norm(torch.tensor(a), p, **kw)
        got = clgrad.norm(clgrad.tensor(a, device=device, dtype=clgrad.float32), p, **kw)
        np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-5)
    if p == "nuc":  # 'fro' without dim is the vector 2-norm of every element
        with pytest.raises(RuntimeError, match="dim must be a 2-tuple. Got 0 1 2"):
            clgrad.norm(clgrad.tensor(B, device=device, dtype=clgrad.float32), p)


@pytest.mark.parametrize("ord", ["nuc", 2, -2, 1, math.inf])
def test_gradcheck(device, ord):
    dtype, kw = grad_precision(device)
    x = clgrad.tensor(B, dtype=getattr(clgrad, dtype), device=device, requires_grad=True)
    assert quiet_gradcheck(clgrad.autograd.gradcheck, lambda t: clgrad.linalg.matrix_norm(t, ord), (x,), **kw)


def test_svdvals(device):
    s = clgrad.linalg.svdvals(clgrad.tensor(B, device=device, dtype=clgrad.float32))
    np.testing.assert_allclose(s.cpu().numpy(), torch.linalg.svdvals(torch.tensor(B)).numpy(), rtol=1e-5)
    assert s.device == clgrad.device(device)
    dtype, kw = grad_precision(device)
    x = clgrad.tensor(A, dtype=getattr(clgrad, dtype), device=device, requires_grad=True)
    assert quiet_gradcheck(clgrad.autograd.gradcheck, clgrad.linalg.svdvals, (x,), **kw)
    assert clgrad.linalg.svdvals(x).grad_fn.name() == "LinalgSvdBackward0"


def test_empty():
    for shape in ((0, 3), (3, 0), (2, 0, 0)):
        for o in ("fro", "nuc", 2, 1, math.inf):
            want = torch.linalg.matrix_norm(torch.zeros(shape), o)
            np.testing.assert_array_equal(clgrad.linalg.matrix_norm(clgrad.zeros(shape), o).numpy(), want.numpy())
    with pytest.raises(IndexError, match="amin"):
        clgrad.linalg.matrix_norm(clgrad.zeros(0, 3), -2)


@pytest.mark.parametrize("call, exc, message", [
    (lambda m: m.linalg.matrix_norm(m.zeros(3), "nuc"), RuntimeError, "at least 2 dimensions"),
    (lambda m: m.linalg.matrix_norm(m.zeros(3, 3), 3), RuntimeError, "Order 3 not supported"),
    (lambda m: m.linalg.matrix_norm(m.zeros(3, 3), "abc"), RuntimeError, "Order abc not supported"),
    (lambda m: m.linalg.matrix_norm(m.zeros(3, 3), "nuc", dim=(0, 0)), RuntimeError, "dims must be different"),
    (lambda m: m.linalg.matrix_norm(m.zeros(3, 3, dtype=m.int32)), RuntimeError, "Expected a floating point"),
    (lambda m: m.linalg.norm(m.zeros(2, 3, 4), 2), RuntimeError, "must be 1D or 2D. Got 3D"),
    (lambda m: m.linalg.norm(m.zeros(3), "fro"), RuntimeError, "at least 2 dimensions"),
    (lambda m: m.linalg.vector_norm(m.zeros(3), "fro"), TypeError, "must be Number, not str"),
])
def test_errors(call, exc, message):
    with pytest.raises(exc, match=message):
        call(torch)
    with pytest.raises(exc, match=message):
        call(clgrad)


@pytest.mark.parametrize("ord", [None, 2, 1, math.inf, 0, -1])
def test_vector_norms(device, ord):
    """linalg.norm picks the vector norm for one dim / a 1-D input; linalg.vector_norm any dims."""
    x = clgrad.tensor(B, device=device, dtype=clgrad.float32)
    t = torch.tensor(B, dtype=torch.float32)
    pairs = [(clgrad.linalg.norm(x, ord, dim=1, keepdim=True), torch.linalg.norm(t, ord, dim=1, keepdim=True)),
             (clgrad.linalg.norm(x[0, 0], ord), torch.linalg.norm(t[0, 0], ord))]
    if ord is not None:
        pairs.append((clgrad.linalg.vector_norm(x, ord, (0, 2)), torch.linalg.vector_norm(t, ord, (0, 2))))
    for got, want in pairs:
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-5)
