"""linalg's decompositions (ops/linalg_qr.py, linalg_svd.py, linalg_eig.py) against PyTorch and numpy on every
device: unique outputs element for element, eigen/singular vectors through gauge-invariant quantities (they are
unique only up to sign), gradcheck, PyTorch's errors, zero-size and strided inputs."""
from __future__ import annotations

import math

import numpy as np
import pytest

import clgrad
from clgrad.autograd import gradcheck
from tests.helpers import grad_precision

R = np.random.default_rng(1717)


def _sym(*shape):
    m = R.normal(size=shape)
    return m + np.swapaxes(m, -1, -2)


def _rank2(*shape):
    return R.normal(size=shape[:-1] + (2,)) @ R.normal(size=shape[:-2] + (2, shape[-1]))


def _tol(dtype):
    return dict(rtol=1e-7, atol=1e-9) if dtype == "float64" else dict(rtol=2e-3, atol=5e-4)


def _np(t):
    return t.detach().cpu().numpy()


def _cmp(ours, theirs, dtype):
    if isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            _cmp(o, t, dtype)
        return
    got, want = _np(ours), theirs.detach().numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind in "iu":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, **_tol(dtype))


def _ormqr(left, transpose):
    return lambda m, x, c: m.ormqr(*m.geqrf(x), c if left else c.mT, left=left, transpose=transpose)


def _cond(p):
    return lambda m, x: m.linalg.cond(x, p)


TALL, WIDE, SQ = R.normal(size=(2, 5, 3)), R.normal(size=(3, 5)), R.normal(size=(4, 4))
C = R.normal(size=(2, 5, 2))
# outputs PyTorch defines uniquely (LAPACK's sign conventions for QR): name, function (same call), inputs
CASES = [
    ("geqrf", lambda m, x: m.geqrf(x), TALL),
    ("geqrf wide", lambda m, x: m.geqrf(x), WIDE),
    ("geqrf two panels", lambda m, x: m.geqrf(x), R.normal(size=(40, 35))),
    ("qr reduced", lambda m, x: m.linalg.qr(x), TALL),
    ("qr complete", lambda m, x: m.linalg.qr(x, mode="complete"), TALL),
    ("qr r", lambda m, x: m.linalg.qr(x, mode="r")[1], TALL),
    ("qr wide", lambda m, x: m.linalg.qr(x), WIDE),
    ("qr legacy some=False", lambda m, x: m.qr(x, some=False), SQ),
    ("householder_product", lambda m, x: m.linalg.householder_product(*m.geqrf(x)), TALL),
    ("orgqr fewer taus", lambda m, x: m.orgqr(m.geqrf(x)[0], m.geqrf(x)[1][..., :2]), TALL),
    *[(f"ormqr left={lt} transpose={tr}", _ormqr(lt, tr), TALL, C) for lt in (True, False) for tr in (False, True)],
    ("eigvalsh", lambda m, x: m.linalg.eigvalsh(x), _sym(3, 5, 5)),
    ("eigvalsh U", lambda m, x: m.linalg.eigvalsh(x, UPLO="U"), R.normal(size=(4, 4))),
    ("eigh values", lambda m, x: m.linalg.eigh(x)[0], _sym(6, 6)),
    ("svdvals", lambda m, x: m.linalg.svdvals(x), TALL),
    ("svdvals wide", lambda m, x: m.linalg.svdvals(x), WIDE),
    ("svd S", lambda m, x: m.linalg.svd(x)[1], R.normal(size=(2, 3, 6))),
    ("pinv", lambda m, x: m.linalg.pinv(x), TALL),
    ("pinv wide rank 2", lambda m, x: m.linalg.pinv(x), _rank2(4, 6)),
    ("pinv hermitian", lambda m, x: m.linalg.pinv(x, hermitian=True), _sym(2, 4, 4)),
    ("pinv atol", lambda m, x: m.linalg.pinv(x, atol=1.0), SQ),
    ("pinverse", lambda m, x: m.pinverse(x), SQ),
    ("matrix_rank", lambda m, x: m.linalg.matrix_rank(x), np.stack([_rank2(5, 4), R.normal(size=(5, 4))])),
    ("matrix_rank hermitian", lambda m, x: m.linalg.matrix_rank(x, hermitian=True), _rank2(4, 4) + _rank2(4, 4).T),
    ("matrix_rank rtol", lambda m, x: m.linalg.matrix_rank(x, rtol=0.5), SQ),
    *[(f"cond {p}", _cond(p), R.normal(size=(2, 4, 4))) for p in (None, 2, -2, "fro", "nuc", math.inf, -math.inf, 1, -1)],
    ("cond wide", lambda m, x: m.linalg.cond(x), WIDE),
    ("lstsq gelsd", lambda m, x, c: m.linalg.lstsq(x, c, driver="gelsd"), R.normal(size=(2, 5, 3)), C),
    ("lstsq gelsy", lambda m, x, c: m.linalg.lstsq(x, c)[:3], R.normal(size=(2, 5, 3)), C),
    ("lstsq gels", lambda m, x, c: m.linalg.lstsq(x, c, driver="gels")[:2], R.normal(size=(2, 5, 3)), C),
    ("lstsq vector", lambda m, x, c: m.linalg.lstsq(x, c[..., 0], driver="gelss"), R.normal(size=(2, 5, 3)), C),
    ("tensorinv", lambda m, x: m.linalg.tensorinv(x, ind=2), R.normal(size=(4, 2, 2, 4))),
    ("tensorsolve", lambda m, x, c: m.linalg.tensorsolve(x, c), R.normal(size=(2, 3, 6)), R.normal(size=(2, 3))),
    ("tensorsolve dims", lambda m, x, c: m.linalg.tensorsolve(x, c, dims=(0,)), R.normal(size=(6, 2, 3)),
     R.normal(size=(2, 3))),
    ("matrix_exp", lambda m, x: m.linalg.matrix_exp(x), R.normal(size=(2, 3, 3))),
    ("matrix_exp scaled", lambda m, x: m.matrix_exp(x), 4 * R.normal(size=(4, 4))),
    ("matrix_exp 1x1", lambda m, x: m.linalg.matrix_exp(x), R.normal(size=(2, 1, 1))),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(device, case):
    torch = pytest.importorskip("torch")
    dtype, _ = grad_precision(device)
    _, fn, *arrays = case
    ours = fn(clgrad, *(clgrad.tensor(a.astype(dtype), device=device) for a in arrays))
    theirs = fn(torch, *(torch.tensor(a.astype(dtype)) for a in arrays))
    _cmp(ours, theirs, dtype)


def _orthonormal(Q, dtype):
    eye = np.broadcast_to(np.eye(Q.shape[-1]), Q.shape[:-2] + (Q.shape[-1],) * 2)
    np.testing.assert_allclose(np.swapaxes(Q, -1, -2) @ Q, eye, **_tol(dtype))


@pytest.mark.parametrize("shape", [(3, 5, 5), (1, 1), (9, 9)])
def test_eigh_reconstructs(device, shape):
    dtype, _ = grad_precision(device)
    a = _sym(*shape)
    L, V = (_np(t) for t in clgrad.linalg.eigh(clgrad.tensor(a.astype(dtype), device=device)))
    _orthonormal(V, dtype)
    np.testing.assert_allclose((V * L[..., None, :]) @ np.swapaxes(V, -1, -2), a, **_tol(dtype))
    np.testing.assert_allclose(L, np.linalg.eigvalsh(a), **_tol(dtype))


@pytest.mark.parametrize("shape", [(2, 5, 3), (3, 6), (4, 4), (2, 1, 3)])
@pytest.mark.parametrize("full", [False, True])
def test_svd_reconstructs(device, shape, full):
    dtype, _ = grad_precision(device)
    a = R.normal(size=shape)
    U, S, Vh = (_np(t) for t in clgrad.linalg.svd(clgrad.tensor(a.astype(dtype), device=device),
                                                  full_matrices=full))
    m, n = shape[-2:]
    k = min(m, n)
    assert U.shape[-2:] == (m, m if full else k) and Vh.shape[-2:] == (n if full else k, n)
    _orthonormal(U, dtype)
    _orthonormal(np.swapaxes(Vh, -1, -2), dtype)
    np.testing.assert_allclose((U[..., :k] * S[..., None, :]) @ Vh[..., :k, :], a, **_tol(dtype))
    np.testing.assert_allclose(S, np.linalg.svd(a, compute_uv=False), **_tol(dtype))


def test_svd_rank_deficient_and_legacy(device):
    """Zero singular values: U is completed to orthonormal columns; legacy svd returns V, and zeros without uv."""
    dtype, _ = grad_precision(device)
    a = np.concatenate([_rank2(5, 3), np.zeros((5, 1))], -1)
    U, S, V = (_np(t) for t in clgrad.svd(clgrad.tensor(a.astype(dtype), device=device)))
    _orthonormal(U, dtype)
    _orthonormal(V, dtype)
    np.testing.assert_allclose((U * S) @ V.T, a, **_tol(dtype))
    Uz, Sz, Vz = clgrad.svd(clgrad.tensor(a.astype(dtype), device=device), compute_uv=False)
    assert Uz.shape == (5, 5) and Vz.shape == (4, 4) and not _np(Uz).any()
    np.testing.assert_allclose(_np(Sz), S, **_tol(dtype))


def test_strided_and_zero_size_inputs(device):
    dtype, _ = grad_precision(device)
    a = R.normal(size=(6, 4))
    At = clgrad.tensor(np.ascontiguousarray(a.T).astype(dtype), device=device).mT[::2]  # strided view [3, 4]
    np.testing.assert_allclose(_np(clgrad.linalg.svdvals(At)), np.linalg.svd(a[::2], compute_uv=False),
                               **_tol(dtype))
    Q, R_ = clgrad.linalg.qr(At)
    np.testing.assert_allclose(_np(Q @ R_), a[::2], **_tol(dtype))
    dt = getattr(clgrad, dtype)
    assert clgrad.linalg.qr(clgrad.zeros(0, 4, 3, dtype=dt, device=device)).Q.shape == (0, 4, 3)
    assert clgrad.linalg.svdvals(clgrad.zeros(2, 0, 3, dtype=dt, device=device)).shape == (2, 0)
    assert clgrad.linalg.eigvalsh(clgrad.zeros(0, 3, 3, dtype=dt, device=device)).shape == (0, 3)
    assert clgrad.linalg.matrix_exp(clgrad.zeros(2, 0, 0, dtype=dt, device=device)).shape == (2, 0, 0)


def _eigh_fn(x):
    L, V = clgrad.linalg.eigh(x + x.mT)  # eigh reads one triangle: its gradient (PyTorch's) is the symmetric one
    return (V * L.sin().unsqueeze(-2)) @ V.mT  # invariant under eigenvector signs


def _svd_fn(x):
    U, S, Vh = clgrad.linalg.svd(x, full_matrices=False)
    return U @ Vh, S  # invariant under the sign pairs (u_i, v_i)


GRAD_CASES = [
    ("qr tall", lambda x: clgrad.linalg.qr(x), [R.normal(size=(2, 4, 3))]),
    ("qr wide", lambda x: clgrad.linalg.qr(x), [R.normal(size=(3, 4))]),
    ("qr complete square", lambda x: clgrad.linalg.qr(x, mode="complete"), [R.normal(size=(3, 3))]),
    ("householder_product", lambda x, t: clgrad.linalg.householder_product(x, t),
     [R.normal(size=(4, 3)), R.uniform(1, 2, size=3)]),
    ("ormqr", lambda x, t, c: clgrad.ormqr(x, t, c, transpose=True),
     [R.normal(size=(4, 3)), R.uniform(1, 2, size=2), R.normal(size=(4, 2))]),
    ("eigh", _eigh_fn, [_sym(2, 3, 3)]),
    ("eigvalsh", lambda x: clgrad.linalg.eigvalsh(x + x.mT), [_sym(3, 3)]),
    ("svd tall", _svd_fn, [R.normal(size=(4, 3))]),
    ("svd wide", _svd_fn, [R.normal(size=(2, 2, 3))]),
    ("svdvals", lambda x: clgrad.linalg.svdvals(x), [R.normal(size=(3, 2))]),
    ("pinv", lambda x: clgrad.linalg.pinv(x), [R.normal(size=(4, 3))]),
    ("lstsq", lambda x, b: clgrad.linalg.lstsq(x, b).solution, [R.normal(size=(4, 3)), R.normal(size=(4, 2))]),
    ("matrix_exp", lambda x: clgrad.linalg.matrix_exp(x), [R.normal(size=(2, 3, 3))]),
    ("tensorinv", lambda x: clgrad.linalg.tensorinv(x, ind=1), [R.normal(size=(4, 2, 2)) + 0.5]),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradcheck(device, case):
    dtype, kw = grad_precision(device)
    _, fn, arrays = case
    if dtype == "float32":  # an iterative decomposition's float32 rounding shows in the finite differences
        kw.update(atol=5e-3, rtol=2e-2)
    inputs = tuple(clgrad.tensor(a.astype(dtype), device=device, requires_grad=True) for a in arrays)
    assert gradcheck(fn, inputs, **kw)


def test_gradients_match_torch():
    torch = pytest.importorskip("torch")
    a, s = R.normal(size=(2, 5, 3)), _sym(4, 4)
    for fn, x in ((lambda m, x: m.linalg.qr(x)[0].sin().sum() + m.linalg.qr(x)[1].cos().sum(), a),
                  (lambda m, x: m.linalg.svdvals(x).sin().sum(), a),
                  (lambda m, x: m.linalg.pinv(x).sin().sum(), a),
                  (lambda m, x: m.linalg.eigvalsh(x).sin().sum(), s),
                  (lambda m, x: m.linalg.matrix_exp(x).sin().sum(), s),
                  (lambda m, x: m.linalg.householder_product(x, x[..., 0, :] * 0.3).sin().sum(), a)):
        ours, theirs = clgrad.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        fn(clgrad, ours).backward()
        fn(torch, theirs).backward()
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-7, atol=1e-9)


ERRORS = [
    ("qr mode", lambda m, x: m.linalg.qr(x, mode="full"), SQ),
    ("eigh UPLO", lambda m, x: m.linalg.eigh(x, UPLO="X"), SQ),
    ("eigh not square", lambda m, x: m.linalg.eigh(x), TALL),
    ("svd 1-d", lambda m, x: m.linalg.svd(x), R.normal(size=3)),
    ("cond p", lambda m, x: m.linalg.cond(x, 3), SQ),
    ("tensorinv shape", lambda m, x: m.linalg.tensorinv(x, ind=1), R.normal(size=(4, 2, 3))),
    ("lstsq driver", lambda m, x: m.linalg.lstsq(x, x, driver="bad"), SQ),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors_match_torch(case):
    torch = pytest.importorskip("torch")
    _, fn, a = case
    with pytest.raises(Exception) as theirs:
        fn(torch, torch.tensor(a))
    with pytest.raises(type(theirs.value)) as ours:
        fn(clgrad, clgrad.tensor(a))
    assert str(ours.value).split(":")[-1].strip()[:30] == str(theirs.value).split(":")[-1].strip()[:30]


def test_qr_backward_errors_and_half():
    x = clgrad.tensor(R.normal(size=(4, 3)), requires_grad=True)
    with pytest.raises(RuntimeError, match="not differentiable when mode='complete'"):
        clgrad.linalg.qr(x, mode="complete")[0].sum().backward()
    with pytest.raises(NotImplementedError, match="not implemented for 'Half'"):
        clgrad.linalg.eigh(clgrad.eye(2, dtype=clgrad.float16))


def test_lowrank_reconstructs(device):
    dtype, _ = grad_precision(device)
    a = R.normal(size=(30, 3)) @ R.normal(size=(3, 20))
    A = clgrad.tensor(a.astype(dtype), device=device)
    U, S, V = clgrad.svd_lowrank(A, q=4)
    np.testing.assert_allclose(_np((U * S) @ V.mT), a, rtol=1e-3, atol=1e-3 * np.abs(a).max())
    U, S, V = clgrad.pca_lowrank(A.mT, q=3)
    centered = a.T - a.T.mean(0)
    np.testing.assert_allclose(_np((U * S) @ V.mT), centered, rtol=1e-3, atol=1e-3 * np.abs(a).max())


def test_eig_general():
    if not hasattr(clgrad, "complex64"):
        with pytest.raises(NotImplementedError, match="no complex dtype"):
            clgrad.linalg.eigvals(clgrad.tensor(SQ))
        pytest.skip("clgrad has no complex dtype yet")
    w = clgrad.linalg.eigvals(clgrad.tensor(SQ))
    np.testing.assert_allclose(np.sort_complex(w.numpy()), np.sort_complex(np.linalg.eigvals(SQ)), rtol=1e-10)


def _sym_needing_2x2(n):
    a = np.diag(R.normal(size=n)) * 1e-3 + np.roll(np.eye(n), 1, 0) + np.roll(np.eye(n), -1, 0)
    return a + 0.1 * _sym(n, n)


@pytest.mark.parametrize("a", [_sym(2, 5, 5), _sym_needing_2x2(6), _sym(1, 1)], ids=["1x1 pivots", "2x2", "1x1"])
def test_ldl_matches_lapack(device, a):
    """LD and pivots element for element as LAPACK's sytrf (Bunch-Kaufman, 2x2 blocks included); ldl_solve solves."""
    torch = pytest.importorskip("torch")
    dtype, _ = grad_precision(device)
    A = clgrad.tensor(a.astype(dtype), device=device)
    ours = clgrad.linalg.ldl_factor_ex(A)
    theirs = torch.linalg.ldl_factor_ex(torch.tensor(a.astype(dtype)))
    _cmp(ours, theirs, dtype)
    b = R.normal(size=a.shape[:-1] + (2,))
    x = clgrad.linalg.ldl_solve(ours.LD, ours.pivots, clgrad.tensor(b.astype(dtype), device=device))
    np.testing.assert_allclose(_np(x), np.linalg.solve(a, b), rtol=1e-6 if dtype == "float64" else 1e-2, atol=1e-6)
