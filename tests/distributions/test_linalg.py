"""The composed Cholesky factorization and triangular solves MultivariateNormal uses, against numpy and PyTorch,
with gradcheck."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
from clgrad.autograd import gradcheck
from clgrad.ops import linalg_solve as L
from tests.helpers import grad_precision

R = np.random.default_rng(1)
M = R.normal(size=(2, 4, 4))
SPD = M @ M.transpose(0, 2, 1) + 4 * np.eye(4)


def test_cholesky_and_solves_match_numpy(device):
    dtype, _ = grad_precision(device)
    tol = 1e-10 if dtype == "float64" else 1e-4
    a = clgrad.tensor(SPD.astype(dtype), device=device)
    low = L.cholesky(a)
    np.testing.assert_allclose(low.cpu().numpy(), np.linalg.cholesky(SPD), rtol=tol, atol=tol)
    b = R.normal(size=(2, 4, 3))
    x = L.solve_triangular(low, clgrad.tensor(b.astype(dtype), device=device), upper=False)
    np.testing.assert_allclose(x.cpu().numpy(), np.linalg.solve(np.linalg.cholesky(SPD), b), rtol=tol, atol=tol)
    xu = L.solve_triangular(low.mT, clgrad.tensor(b.astype(dtype), device=device), upper=True)
    np.testing.assert_allclose(xu.cpu().numpy(), np.linalg.solve(np.linalg.cholesky(SPD).transpose(0, 2, 1), b),
                               rtol=tol, atol=tol)
    np.testing.assert_allclose(L.cholesky_inverse(low).cpu().numpy(), np.linalg.inv(SPD), rtol=tol * 10, atol=tol)


def test_cholesky_gradcheck_and_torch_gradient(device):
    dtype, kw = grad_precision(device)
    a = clgrad.tensor(SPD[0].astype(dtype), device=device, requires_grad=True)
    assert gradcheck(lambda m: L.cholesky((m + m.mT) / 2), (a,), **kw)  # a symmetric input, as torch's gradcheck
    b = clgrad.tensor(np.tril(SPD[1]).astype(dtype), device=device, requires_grad=True)
    rhs = clgrad.tensor(R.normal(size=(4, 2)).astype(dtype), device=device, requires_grad=True)
    assert gradcheck(lambda m, r: L.solve_triangular(m, r, upper=False), (b, rhs), **kw)
    torch = pytest.importorskip("torch")
    t = torch.tensor(SPD[0], requires_grad=True)
    torch.linalg.cholesky(t).sum().backward()
    L.cholesky(a).sum().backward()
    np.testing.assert_allclose(a.grad.cpu().numpy(), t.grad.numpy(), rtol=1e-6 if dtype == "float64" else 1e-3)


def test_not_positive_definite_raises_like_torch():
    torch = pytest.importorskip("torch")
    bad = np.array([[[1.0, 2.0], [2.0, 1.0]]] * 2)
    with pytest.raises(RuntimeError) as theirs:
        torch.linalg.cholesky(torch.tensor(bad))
    with pytest.raises(RuntimeError) as ours:
        L.cholesky(clgrad.tensor(bad))
    assert str(ours.value) == str(theirs.value)
    _, info = L.cholesky_ex(clgrad.tensor(bad))
    assert info.numpy().tolist() == torch.linalg.cholesky_ex(torch.tensor(bad)).info.numpy().tolist()
