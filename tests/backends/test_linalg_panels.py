"""The unblocked panel primitives ``getrf_panel``, ``potrf_panel`` and ``trsm`` (backends/cpu_linalg.py,
backends/opencl/linalg.py, kernels/linalg.cl.mako) against the composed ops they replace, numpy and PyTorch, on odd
sizes, batches, singular and not positive-definite matrices."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
from clgrad import backends
from clgrad import dtypes as D
from clgrad.ops import linalg_lu, linalg_solve
from tests.conftest import fp64_ok
from tests.helpers import to_numpy

SIZES = (1, 3, 17, 64, 65, 130)
DTYPES = ("float32", "float64")
TOL = {"float32": 2e-4, "float64": 1e-11}


def _skip_fp64(device, dtype) -> None:
    if dtype == "float64" and not fp64_ok(device):
        pytest.skip(f"{device} has no cl_khr_fp64")


def _general(batch: int, m: int, n: int, seed: int) -> np.ndarray:
    """Random matrices; batch element 0 singular (a zero column, two equal rows) where it is big enough."""
    a = np.random.default_rng(seed).standard_normal((batch, m, n))
    if m > 2 and n > 2:
        a[0, :, 1] = 0
        a[0, 2] = a[0, 0]
    return a


def _panels(m: int, n: int):
    kmin = min(m, n)
    return [(k, min(k + 64, kmin)) for k in range(0, kmin, 64)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(n, n) for n in SIZES] + [(5, 3), (3, 7), (130, 66)])
def test_getrf_panel_matches_composed(device, dtype, shape):
    """Panel after panel, the primitive picks the composed ops' pivots and gives their values."""
    _skip_fp64(device, dtype)
    m, n = shape
    a = _general(3, m, n + 1, seed=m * 1000 + n)
    W = clgrad.tensor(a.astype(dtype), device=device)
    ref = W.clone()
    piv = clgrad.zeros((3, min(m, n)), dtype=D.int32, device=device)
    pivots = []
    for k, e in _panels(m, n):
        backends.get(W.device).getrf_panel(W, piv, k, e)
        linalg_lu._panel(ref, k, e, pivots)
    want = np.stack([to_numpy(p) for p in pivots], -1) + np.arange(1, min(m, n) + 1)
    np.testing.assert_array_equal(to_numpy(piv), want)
    scale = max(1.0, np.abs(to_numpy(ref)).max())
    np.testing.assert_allclose(to_numpy(W), to_numpy(ref), rtol=TOL[dtype], atol=TOL[dtype] * scale)


@pytest.mark.parametrize("n", SIZES)
def test_lu_factor_matches_torch(device, n):
    """The whole blocked factorization: LAPACK's pivots, LU and info, singular batch element included."""
    torch = pytest.importorskip("torch")
    dtype = "float64" if fp64_ok(device) else "float32"
    a = _general(2, n, n, seed=n)
    LU, piv, info = clgrad.linalg.lu_factor_ex(clgrad.tensor(a.astype(dtype), device=device))
    tLU, tpiv, tinfo = torch.linalg.lu_factor_ex(torch.from_numpy(a))
    np.testing.assert_array_equal(to_numpy(piv), tpiv.numpy())
    np.testing.assert_array_equal(to_numpy(info), tinfo.numpy())
    np.testing.assert_allclose(to_numpy(LU), tLU.numpy(), rtol=TOL[dtype], atol=TOL[dtype] * 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_potrf_panel(device, dtype, n):
    """The Cholesky panel as the composed ops on the lower triangle; cholesky_ex's factor and info as numpy's."""
    _skip_fp64(device, dtype)
    x = np.random.default_rng(n).standard_normal((2, n, n))
    a = x @ x.transpose(0, 2, 1) + n * np.eye(n)
    W = clgrad.tensor(np.tril(a).astype(dtype), device=device)
    ref = W.clone()
    for k in range(0, n, 64):
        backends.get(W.device).potrf_panel(W, k, min(k + 64, n))
        linalg_solve._panel(ref, k, min(k + 64, n))
    np.testing.assert_allclose(np.tril(to_numpy(W)), np.tril(to_numpy(ref)), rtol=TOL[dtype], atol=TOL[dtype])
    bad = a.copy()
    bad[1, n - 1, n - 1] = -1.0  # the last leading minor is not positive-definite
    L, info = clgrad.linalg.cholesky_ex(clgrad.tensor(bad.astype(dtype), device=device))
    np.testing.assert_array_equal(to_numpy(info), [0, n])
    np.testing.assert_allclose(to_numpy(L)[0], np.linalg.cholesky(a[0]), rtol=TOL[dtype], atol=TOL[dtype] * n)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, k", [(1, 1), (3, 2), (17, 1), (64, 5), (65, 3), (130, 1), (130, 70), (40, 300)])
@pytest.mark.parametrize("upper, unit", [(False, False), (True, False), (False, True), (True, True)])
def test_trsm(device, dtype, n, k, upper, unit):
    """Substitution (the primitive, its columns split over work-groups) with A read in place as a strided,
    transposed, offset or broadcast view, and the triangular solves built on it, against numpy."""
    _skip_fp64(device, dtype)
    rng = np.random.default_rng(n + k)
    L = np.tril(rng.uniform(-1, 1, (2, n, n)) / n) + np.eye(n) * rng.uniform(1, 2, (2, n, 1))
    T = L.transpose(0, 2, 1) if upper else L
    ref = T.copy()
    if unit:
        ref[:, np.arange(n), np.arange(n)] = 1.0
    B = rng.standard_normal((2, n, k))
    want = np.linalg.solve(ref, B)
    be = backends.get(clgrad.device(device))
    big = clgrad.tensor(np.pad(L, ((0, 0), (1, 0), (2, 0))).astype(dtype), device=device)  # at an offset, strided
    views = {"dense": clgrad.tensor(T.astype(dtype), device=device),
             "offset": big[:, 1:, 2:].mT if upper else big[:, 1:, 2:],
             "transposed": clgrad.tensor(T.transpose(0, 2, 1).astype(dtype), device=device).mT}
    for name, A in views.items():
        X = clgrad.tensor(B.astype(dtype), device=device)
        be.trsm(A, X, upper, unit)
        np.testing.assert_allclose(to_numpy(X), want, rtol=TOL[dtype], atol=TOL[dtype], err_msg=name)
    one = clgrad.tensor(T[:1].astype(dtype), device=device).expand(2, n, n)  # batch stride 0
    X = clgrad.tensor(B.astype(dtype), device=device)
    be.trsm(one, X, upper, unit)
    np.testing.assert_allclose(to_numpy(X), np.linalg.solve(ref[:1], B), rtol=TOL[dtype], atol=TOL[dtype])
    got = clgrad.linalg.solve_triangular(views["offset"], clgrad.tensor(B.astype(dtype), device=device),
                                         upper=upper, unitriangular=unit)
    np.testing.assert_allclose(to_numpy(got), want, rtol=TOL[dtype], atol=TOL[dtype])
    got = clgrad.linalg.solve_triangular(views["dense"][:1], clgrad.tensor(B.astype(dtype), device=device),
                                         upper=upper, unitriangular=unit)  # one matrix, a batch of right sides
    np.testing.assert_allclose(to_numpy(got), np.linalg.solve(ref[:1], B), rtol=TOL[dtype], atol=TOL[dtype])


def test_empty_batches(device):
    """Nothing to factor: the primitives return without launching."""
    W = clgrad.zeros((0, 4, 5), device=device)
    piv = clgrad.zeros((0, 4), dtype=D.int32, device=device)
    be = backends.get(W.device)
    be.getrf_panel(W, piv, 0, 4)
    be.potrf_panel(clgrad.zeros((0, 4, 4), device=device), 0, 4)
    be.trsm(clgrad.zeros((0, 4, 4), device=device), clgrad.zeros((0, 4, 2), device=device))
    be.trsm(clgrad.zeros((2, 4, 4), device=device), clgrad.zeros((2, 4, 0), device=device), True, True)
    assert clgrad.linalg.solve(clgrad.eye(3, device=device).expand(0, 3, 3), clgrad.zeros(0, 3, 1,
                                                                                        device=device)).shape == (0, 3, 1)
