"""linalg's factorizations and solvers (ops/linalg_solve.py, ops/linalg_lu.py) against PyTorch and numpy on every
device: batched, blocked sizes, broadcast and strided inputs, gradcheck, and PyTorch's errors."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
from clgrad.autograd import gradcheck, gradgradcheck
from tests.helpers import grad_precision

R = np.random.default_rng(17)


def _general(*shape):
    return R.normal(size=shape) + 2 * np.eye(shape[-1])


def _spd(*shape):
    m = R.normal(size=shape)
    return m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])


def _lower(*shape):
    return np.tril(R.normal(size=shape)) + 3 * np.eye(shape[-1])


def _tol(dtype):
    return dict(rtol=1e-8, atol=1e-9) if dtype == "float64" else dict(rtol=2e-3, atol=2e-4)


def _cmp(ours, theirs, dtype):
    if isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            _cmp(o, t, dtype)
        return
    got, want = ours.cpu().numpy(), theirs.numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind in "iu":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, **_tol(dtype))


B = R.normal(size=(2, 3, 2))
# name, clgrad function, torch function (same call), inputs
CASES = [
    ("solve", lambda m, x, b: m.linalg.solve(x, b), _general(2, 5, 5), R.normal(size=(2, 5, 3))),
    ("solve vector", lambda m, x, b: m.linalg.solve(x, b), _general(2, 4, 4), R.normal(size=(2, 4))),
    ("solve left=False", lambda m, x, b: m.linalg.solve(x, b, left=False), _general(4, 4), R.normal(size=(3, 4))),
    ("solve broadcast", lambda m, x, b: m.linalg.solve(x, b), _general(2, 1, 3, 3), R.normal(size=(4, 3, 2))),
    ("solve_ex", lambda m, x, b: m.linalg.solve_ex(x, b), _general(3, 3), R.normal(size=(3, 1))),
    ("inv", lambda m, x: m.linalg.inv(x), _general(3, 4, 4)),
    ("inv_ex", lambda m, x: m.linalg.inv_ex(x), _general(4, 4)),
    ("inverse", lambda m, x: m.inverse(x), _general(2, 3, 3)),
    ("det", lambda m, x: m.linalg.det(x), R.normal(size=(5, 4, 4))),
    ("det legacy", lambda m, x: m.det(x), R.normal(size=(3, 3))),
    ("slogdet", lambda m, x: m.linalg.slogdet(x), R.normal(size=(5, 4, 4))),
    ("logdet", lambda m, x: m.logdet(x), R.normal(size=(5, 3, 3))),
    ("lu_factor", lambda m, x: m.linalg.lu_factor(x), R.normal(size=(2, 5, 5))),
    ("lu_factor_ex wide", lambda m, x: m.linalg.lu_factor_ex(x), R.normal(size=(2, 3, 5))),
    ("lu tall", lambda m, x: m.linalg.lu(x), R.normal(size=(2, 5, 3))),
    ("lu_unpack", lambda m, x: m.lu_unpack(*m.linalg.lu_factor(x)), R.normal(size=(2, 4, 4))),
    ("lu_solve", lambda m, x, b: m.linalg.lu_solve(*m.linalg.lu_factor(x), b), _general(2, 3, 3), B),
    ("lu_solve adjoint", lambda m, x, b: m.linalg.lu_solve(*m.linalg.lu_factor(x), b, adjoint=True),
     _general(2, 3, 3), B),
    ("lu_solve left=False", lambda m, x, b: m.linalg.lu_solve(*m.linalg.lu_factor(x), b.mT, left=False),
     _general(2, 3, 3), B),
    ("lu_solve legacy", lambda m, x, b: m.lu_solve(b, *m.linalg.lu_factor(x)), _general(2, 3, 3), B),
    ("cholesky", lambda m, x: m.linalg.cholesky(x), _spd(2, 5, 5)),
    ("cholesky upper", lambda m, x: m.linalg.cholesky(x, upper=True), _spd(4, 4)),
    ("cholesky_ex", lambda m, x: m.linalg.cholesky_ex(x), _spd(3, 3)),
    ("cholesky legacy", lambda m, x: m.cholesky(x), _spd(2, 3, 3)),
    ("cholesky_solve", lambda m, x, b: m.cholesky_solve(b, m.linalg.cholesky(x)), _spd(2, 3, 3), B),
    ("cholesky_solve upper", lambda m, x, b: m.cholesky_solve(b, m.linalg.cholesky(x, upper=True), upper=True),
     _spd(2, 3, 3), B),
    ("cholesky_inverse", lambda m, x: m.cholesky_inverse(m.linalg.cholesky(x)), _spd(2, 4, 4)),
    ("cholesky_inverse upper", lambda m, x: m.cholesky_inverse(m.linalg.cholesky(x, upper=True), upper=True),
     _spd(4, 4)),
    ("solve_triangular", lambda m, x, b: m.linalg.solve_triangular(x, b, upper=False), _lower(2, 5, 5),
     R.normal(size=(2, 5, 2))),
    ("solve_triangular upper right unit",
     lambda m, x, b: m.linalg.solve_triangular(x.mT, b, upper=True, left=False, unitriangular=True),
     _lower(5, 5), R.normal(size=(3, 5))),
    ("triangular_solve", lambda m, x, b: m.triangular_solve(b, x, upper=False), _lower(2, 3, 3), B),
    ("triangular_solve transpose", lambda m, x, b: m.triangular_solve(b, x, upper=False, transpose=True),
     _lower(3, 3), B),
    ("matrix_power -3", lambda m, x: m.linalg.matrix_power(x, -3), _general(2, 3, 3)),
    ("matrix_power 0", lambda m, x: m.linalg.matrix_power(x, 0), _general(2, 3, 3)),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(device, case):
    torch = pytest.importorskip("torch")
    dtype, _ = grad_precision(device)
    _, fn, *arrays = case
    ours = fn(clgrad, *(clgrad.tensor(a.astype(dtype), device=device) for a in arrays))
    theirs = fn(torch, *(torch.tensor(a.astype(dtype)) for a in arrays))
    _cmp(ours, theirs, dtype)


@pytest.mark.parametrize("n", [70, 130])
def test_blocked_sizes_match_numpy(device, n):
    """Sizes past one 64-wide block (and not a multiple of it): the panel, trsm and trailing-update paths."""
    if n > 70 and device != "cpu":
        pytest.skip("the bigger size runs on cpu only (launch count)")
    dtype, _ = grad_precision(device)
    a, spd, rhs = _general(n, n), _spd(n, n), R.normal(size=(n, 2))
    A = clgrad.tensor(a.astype(dtype), device=device)
    tol = _tol(dtype) if dtype == "float64" else dict(rtol=1e-3, atol=1e-3)
    x = clgrad.linalg.solve(A, clgrad.tensor(rhs.astype(dtype), device=device)).cpu().numpy()
    np.testing.assert_allclose(x, np.linalg.solve(a, rhs), **tol)
    L = clgrad.linalg.cholesky(clgrad.tensor(spd.astype(dtype), device=device)).cpu().numpy()
    np.testing.assert_allclose(L, np.linalg.cholesky(spd), **tol)
    np.testing.assert_allclose(clgrad.linalg.det(A / 2).item(), np.linalg.det(a / 2), rtol=1e-6 if dtype == "float64"
                               else 1e-2)


def test_strided_and_zero_size_inputs(device):
    dtype, _ = grad_precision(device)
    a = _general(3, 3)
    At = clgrad.tensor(np.ascontiguousarray(a.T).astype(dtype), device=device).mT  # a transposed view
    b = clgrad.tensor(R.normal(size=(3, 4)).astype(dtype), device=device)[:, ::2]  # a strided slice
    np.testing.assert_allclose(clgrad.linalg.solve(At, b).cpu().numpy(), np.linalg.solve(a, b.cpu().numpy()),
                               **_tol(dtype))
    empty = clgrad.zeros(0, 3, 3, dtype=getattr(clgrad, dtype), device=device)
    assert clgrad.linalg.inv(empty).shape == (0, 3, 3) and clgrad.linalg.det(empty).shape == (0,)
    zero = clgrad.zeros(2, 0, 0, dtype=getattr(clgrad, dtype), device=device)
    assert clgrad.linalg.det(zero).cpu().numpy().tolist() == [1.0, 1.0]
    assert clgrad.linalg.cholesky(zero).shape == (2, 0, 0)


GRAD_CASES = [
    ("solve", lambda x, b: clgrad.linalg.solve(x, b), [_general(2, 3, 3), R.normal(size=(2, 3, 2))]),
    ("solve broadcast left=False", lambda x, b: clgrad.linalg.solve(x, b, left=False),
     [_general(3, 3), R.normal(size=(2, 2, 3))]),
    ("inv", lambda x: clgrad.linalg.inv(x), [_general(2, 3, 3)]),
    ("det", lambda x: clgrad.linalg.det(x), [_general(2, 3, 3)]),
    ("slogdet", lambda x: clgrad.linalg.slogdet(x)[1], [R.normal(size=(2, 3, 3))]),
    ("cholesky", lambda x: clgrad.linalg.cholesky(x @ x.mT + 3 * clgrad.eye(3, dtype=x.dtype, device=x.device)),
     [R.normal(size=(2, 3, 3))]),
    ("cholesky upper", lambda x: clgrad.linalg.cholesky(x @ x.mT + 3 * clgrad.eye(3, dtype=x.dtype,
                                                                                  device=x.device), upper=True),
     [R.normal(size=(3, 3))]),
    ("solve_triangular", lambda x, b: clgrad.linalg.solve_triangular(x, b, upper=True),
     [_lower(2, 3, 3).swapaxes(-1, -2), R.normal(size=(2, 3, 2))]),
    ("solve_triangular right unit", lambda x, b: clgrad.linalg.solve_triangular(x, b, upper=False, left=False,
                                                                                unitriangular=True),
     [_lower(3, 3), R.normal(size=(2, 3))]),
    ("lu_factor", lambda x: clgrad.linalg.lu_factor(x)[0], [_general(2, 3, 3)]),
    ("lu", lambda x: clgrad.linalg.lu(x)[1:], [_general(3, 3)]),
    ("lu_solve", lambda x, b: clgrad.linalg.lu_solve(*clgrad.linalg.lu_factor(x), b), [_general(3, 3),
                                                                                      R.normal(size=(3, 2))]),
    ("cholesky_inverse", lambda x: clgrad.cholesky_inverse(x.tril()), [_lower(3, 3)]),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradcheck(device, case):
    dtype, kw = grad_precision(device)
    _, fn, arrays = case
    inputs = tuple(clgrad.tensor(a.astype(dtype), device=device, requires_grad=True) for a in arrays)
    assert gradcheck(fn, inputs, **kw)


def test_second_order_gradients():
    x = clgrad.tensor(_general(3, 3), requires_grad=True)
    b = clgrad.tensor(R.normal(size=(3, 2)), requires_grad=True)
    assert gradgradcheck(lambda m, r: clgrad.linalg.solve(m, r), (x, b))
    assert gradgradcheck(lambda m: clgrad.linalg.det(m), (x,))


def test_gradients_match_torch():
    torch = pytest.importorskip("torch")
    a, spd = _general(2, 4, 4), _spd(4, 4)
    for fn in (lambda m, x: m.linalg.det(x).sum(), lambda m, x: m.linalg.inv(x).sin().sum(),
               lambda m, x: m.linalg.lu_factor(x)[0].sin().sum()):
        ours, theirs = clgrad.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        fn(clgrad, ours).backward()
        fn(torch, theirs).backward()
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-8, atol=1e-10)
    ours, theirs = clgrad.tensor(spd, requires_grad=True), torch.tensor(spd, requires_grad=True)
    clgrad.linalg.cholesky(ours).sin().sum().backward()
    torch.linalg.cholesky(theirs).sin().sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-8, atol=1e-10)



@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_and_inverse_gradients_match_torch(upper):
    """Both read only the factor's triangle, but PyTorch's gradient w.r.t. the factor is its formula's full matrix
    (not projected on the triangle): clgrad returns the same."""
    torch = pytest.importorskip("torch")
    f, b = _general(2, 4, 4), R.normal(size=(2, 4, 3))
    ours = [clgrad.tensor(x, requires_grad=True) for x in (f, b)]
    theirs = [torch.tensor(x, requires_grad=True) for x in (f, b)]
    for m, (L, B) in ((clgrad, ours), (torch, theirs)):
        (m.cholesky_solve(B, L, upper).sin().sum() + m.cholesky_inverse(L, upper).cos().sum()).backward()
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-8, atol=1e-10)
    assert clgrad.cholesky_inverse(ours[0]).grad_fn.name() == "CholeskyInverseBackward0"

SINGULAR = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
NOT_PD = np.array([[1.0, 2.0], [2.0, 1.0]])
ERRORS = [
    ("solve singular", lambda m, x: m.linalg.solve(x, m.ones(3, 1, dtype=x.dtype)), SINGULAR),
    ("solve singular batch", lambda m, x: m.linalg.solve(x, m.ones(2, 3, 1, dtype=x.dtype)),
     np.stack([np.eye(3), SINGULAR])),
    ("inv singular", lambda m, x: m.linalg.inv(x), SINGULAR),
    ("inverse singular batch", lambda m, x: m.inverse(x), np.stack([SINGULAR, np.eye(3)])),
    ("cholesky not pd", lambda m, x: m.linalg.cholesky(x), NOT_PD),
    ("cholesky not pd batch", lambda m, x: m.linalg.cholesky(x), np.stack([np.eye(2), NOT_PD])),
    ("cholesky_ex check_errors", lambda m, x: m.linalg.cholesky_ex(x, check_errors=True), NOT_PD),
    ("lu_factor singular", lambda m, x: m.linalg.lu_factor(x), SINGULAR),
    ("solve shapes", lambda m, x: m.linalg.solve(x, m.ones(4, dtype=x.dtype)), np.eye(3)),
    ("solve not square", lambda m, x: m.linalg.solve(x, m.ones(2, dtype=x.dtype)), np.ones((2, 3))),
    ("det 1-d", lambda m, x: m.linalg.det(x), np.ones(3)),
    ("inv integer", lambda m, x: m.linalg.inv(x.long()), np.eye(2)),
    ("solve_triangular 1-d B", lambda m, x: m.linalg.solve_triangular(x, m.ones(3, dtype=x.dtype), upper=True),
     np.eye(3)),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors_match_torch(case):
    torch = pytest.importorskip("torch")
    _, fn, a = case
    with pytest.raises(RuntimeError) as theirs:
        fn(torch, torch.tensor(a))
    with pytest.raises(RuntimeError) as ours:
        fn(clgrad, clgrad.tensor(a))
    assert str(ours.value) == str(theirs.value)
    assert isinstance(ours.value, clgrad.linalg.LinAlgError) == isinstance(theirs.value, torch.linalg.LinAlgError)


def test_ex_variants_report_info_like_torch(device):
    torch = pytest.importorskip("torch")
    dtype, _ = grad_precision(device)
    stacks = {"solve_ex": (np.stack([np.eye(3), SINGULAR]), lambda m, x: m.linalg.solve_ex(x, x)[1]),
              "inv_ex": (np.stack([SINGULAR, np.eye(3)]), lambda m, x: m.linalg.inv_ex(x)[1]),
              "lu_factor_ex": (np.stack([SINGULAR, np.eye(3)]), lambda m, x: m.linalg.lu_factor_ex(x).info),
              "cholesky_ex": (np.stack([np.eye(2), NOT_PD, -np.eye(2)]), lambda m, x: m.linalg.cholesky_ex(x).info)}
    for name, (a, fn) in stacks.items():
        ours = fn(clgrad, clgrad.tensor(a.astype(dtype), device=device))
        theirs = fn(torch, torch.tensor(a))
        assert ours.dtype == clgrad.int32, name
        assert ours.cpu().numpy().tolist() == theirs.numpy().tolist(), name


def test_tensor_methods_and_return_types():
    a = clgrad.tensor(_spd(3, 3))
    np.testing.assert_allclose(a.det().item(), np.linalg.det(a.numpy()))
    np.testing.assert_allclose(a.inverse().numpy(), np.linalg.inv(a.numpy()), rtol=1e-10)
    L = a.cholesky()
    np.testing.assert_allclose(L.cholesky_inverse().numpy(), np.linalg.inv(a.numpy()), rtol=1e-10)
    solution, coefficient = clgrad.triangular_solve(clgrad.ones(3, 1, dtype=a.dtype), L, upper=False)
    assert coefficient.data_ptr() != L.data_ptr() and np.array_equal(coefficient.numpy(), L.numpy())
    sign, logabsdet = clgrad.linalg.slogdet(a)
    assert clgrad.linalg.slogdet(a).logabsdet is logabsdet or logabsdet.item() == clgrad.linalg.slogdet(a)[1].item()
    assert sign.item() == 1.0 and "linalg_slogdet" in repr(clgrad.linalg.slogdet(a))


OPINFO_NAMES = ["linalg.solve", "linalg.solve_ex", "linalg.inv", "linalg.inv_ex", "linalg.det", "linalg.slogdet",
                "logdet", "linalg.cholesky", "linalg.cholesky_ex", "linalg.lu_factor", "linalg.lu_factor_ex",
                "linalg.lu", "lu_unpack", "linalg.lu_solve", "linalg.solve_triangular", "cholesky_solve",
                "cholesky_inverse", "triangular_solve", "cholesky", "lu_solve",
                "linalg.matrix_power"]


def _to_clgrad(x, torch):
    if isinstance(x, torch.Tensor):
        return clgrad.tensor(x.detach().numpy())
    if isinstance(x, (tuple, list)):
        return type(x)(_to_clgrad(v, torch) for v in x)
    return x


def test_opinfo_samples_match_torch():
    """A bounded number of PyTorch's own OpInfo samples per op (cpu, float64), outputs compared."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("expecttest")
    from torch.testing._internal.common_methods_invocations import op_db

    ops = [op for op in op_db if op.name in OPINFO_NAMES and not op.variant_test_name]
    assert {op.name for op in ops} == set(OPINFO_NAMES)
    failures = []
    for op in ops:
        ours_fn = clgrad
        for part in op.name.split("."):
            ours_fn = getattr(ours_fn, part)
        for sample in list(op.sample_inputs("cpu", torch.float64))[::2][:10]:
            theirs = op.op(sample.input, *sample.args, **sample.kwargs)
            try:
                ours = ours_fn(_to_clgrad(sample.input, torch), *_to_clgrad(sample.args, torch), **sample.kwargs)
                _cmp(ours, theirs, "float64")
            except Exception as e:  # noqa: BLE001 - every failing sample is listed below
                failures.append(f"{op.name}{tuple(sample.input.shape)} {sample.kwargs}: {type(e).__name__} {e}"[:300])
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("shape", [(3, 5), (5, 3)])
def test_rectangular_lu_gradcheck(device, shape):
    """PyTorch's linalg_lu_backward for wide and tall matrices, checked by finite differences on every device."""
    dt, kw = grad_precision(device)
    x = clgrad.tensor(R.normal(size=shape).astype(dt), device=device, requires_grad=True)
    assert gradcheck(lambda t: clgrad.linalg.lu_factor(t).LU, (x,), **kw)


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (2, 4, 6), (2, 6, 4)])
def test_rectangular_lu_gradients_match_torch(shape):
    torch = pytest.importorskip("torch")
    a = R.normal(size=shape)
    ours, theirs = clgrad.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    for m, t in ((clgrad, ours), (torch, theirs)):
        _, L, U = m.linalg.lu(t)
        (L.sin().sum() + U.cos().sum()).backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-8, atol=1e-10)
