"""Products (clgrad/ops/products.py, clgrad/ops/einsum.py) against torch on every device: values in float64 (float32
without cl_khr_fp64) over contiguous and transposed/sliced inputs, broadcasting and zero sizes, gradcheck of each
differentiable op, dtypes and promotion, in-place and out= forms, and PyTorch's errors and messages."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import clgrad
from clgrad.autograd import gradcheck
from tests.conftest import fp64_ok
from tests.helpers import assert_close, grad_precision, make, quiet_gradcheck


def _small(shape):
    """Entries in [-0.6, 0.6]: powers stay near 1, so float32 finite differences stay accurate."""
    return lambda dt: np.random.uniform(-0.6, 0.6, shape).astype(dt)


# (id, fn(lib, *inputs) for lib = clgrad or torch, input shapes (or generators of a dtype), differentiable)
CASES = [
    ("addmm", lambda m, a, b, c: m.addmm(a, b, c), [(2, 3), (2, 4), (4, 3)], True),
    ("addmm_bias", lambda m, a, b, c: m.addmm(a, b, c), [(3,), (2, 4), (4, 3)], True),
    ("addmm_ab", lambda m, a, b, c: m.addmm(a, b, c, beta=0.5, alpha=-2), [(3,), (2, 4), (4, 3)], True),
    ("addmm_scalar_in", lambda m, a, b, c: m.addmm(a, b, c, alpha=3), [(), (2, 4), (4, 3)], True),
    ("addmm_beta0", lambda m, a, b, c: m.addmm(a, b, c, beta=0), [(1, 3), (2, 4), (4, 3)], True),
    ("addmm_k0", lambda m, a, b, c: m.addmm(a, b, c), [(2, 3), (2, 0), (0, 3)], False),
    ("addmm_n0", lambda m, a, b, c: m.addmm(a, b, c), [(0, 3), (0, 4), (4, 3)], False),
    ("addbmm", lambda m, a, b, c: m.addbmm(a, b, c, beta=2, alpha=0.5), [(2, 3), (4, 2, 5), (4, 5, 3)], True),
    ("baddbmm", lambda m, a, b, c: m.baddbmm(a, b, c), [(4, 2, 3), (4, 2, 5), (4, 5, 3)], True),
    ("baddbmm_bcast", lambda m, a, b, c: m.baddbmm(a, b, c, beta=-1, alpha=2), [(2, 1), (3, 2, 5), (3, 5, 3)], True),
    ("addmv", lambda m, a, b, c: m.addmv(a, b, c, beta=0.5), [(2,), (2, 3), (3,)], True),
    ("addmv_bcast", lambda m, a, b, c: m.addmv(a, b, c, alpha=2), [(1,), (2, 3), (3,)], True),
    ("addr", lambda m, a, b, c: m.addr(a, b, c, beta=2, alpha=3), [(2, 3), (2,), (3,)], True),
    ("addr_bcast", lambda m, a, b, c: m.addr(a, b, c), [(1, 3), (2,), (3,)], True),
    ("tensordot2", lambda m, a, b: m.tensordot(a, b), [(3, 2, 4), (2, 4, 2)], True),
    ("tensordot0", lambda m, a, b: m.tensordot(a, b, 0), [(2, 3), (2,)], True),
    ("tensordot_lists", lambda m, a, b: m.tensordot(a, b, ([2, 0], [0, 1])), [(3, 2, 4), (4, 3, 2)], True),
    ("tensordot_bcast1", lambda m, a, b: m.tensordot(a, b, ([1], [0])), [(3, 1), (4, 2)], True),
    ("tensordot_zero", lambda m, a, b: m.tensordot(a, b, 1), [(2, 0), (0, 3)], False),
    ("inner", lambda m, a, b: m.inner(a, b), [(2, 3), (4, 2, 3)], True),
    ("inner_vec", lambda m, a, b: m.inner(a, b), [(3,), (3,)], True),
    ("inner_scalar", lambda m, a, b: m.inner(a, b), [(), (2, 3)], True),
    ("kron", lambda m, a, b: m.kron(a, b), [(2, 3), (3, 2)], True),
    ("kron_ndim", lambda m, a, b: m.kron(a, b), [(2,), (2, 1, 3)], True),
    ("kron_zero", lambda m, a, b: m.kron(a, b), [(2, 0), (3, 2)], False),
    ("vdot", lambda m, a, b: m.vdot(a, b), [(4,), (4,)], True),
    ("ger", lambda m, a, b: m.ger(a, b), [(2,), (3,)], True),
    ("cross_dim", lambda m, a, b: m.cross(a, b, dim=0), [(3, 2), (3, 2)], True),
    ("cross_default", lambda m, a, b: m.cross(a, b), [(2, 3, 3), (2, 3, 3)], True),
    ("linalg_cross", lambda m, a, b: m.linalg.cross(a, b), [(4, 3), (1, 3)], True),
    ("linalg_cross_dim", lambda m, a, b: m.linalg.cross(a, b, dim=1), [(2, 3, 2), (2, 3, 2)], True),
    ("vecdot", lambda m, a, b: m.linalg.vecdot(a, b), [(2, 3), (3,)], True),
    ("vecdot_dim", lambda m, a, b: m.linalg.vecdot(a, b, dim=0), [(2, 3), (2, 1)], True),
    ("block_diag", lambda m, a, b, c, d: m.block_diag(a, b, c, d), [(2, 3), (3,), (), (1, 2)], True),
    ("block_diag_empty", lambda m, a, b: m.block_diag(a, b), [(0, 2), (2, 0)], False),
    ("cartesian_prod", lambda m, a, b, c: m.cartesian_prod(a, b, c), [(2,), (3,), (2,)], True),
    ("cartesian_prod1", lambda m, a: m.cartesian_prod(a), [(3,)], True),
    ("combinations", lambda m, a: m.combinations(a), [(4,)], True),
    ("combinations_repl", lambda m, a: m.combinations(a, 3, with_replacement=True), [(3,)], True),
    ("combinations_r0", lambda m, a: m.combinations(a, 0), [(3,)], False),
    ("combinations_big_r", lambda m, a: m.combinations(a, 4), [(3,)], False),
    ("trace", lambda m, a: m.trace(a), [(3, 4)], True),
    ("trace_zero", lambda m, a: m.trace(a), [(0, 3)], False),
    ("chain_matmul", lambda m, a, b, c: m.chain_matmul(a, b, c), [(2, 3), (3, 4), (4, 2)], True),
    ("multi_dot", lambda m, a, b, c, d: m.linalg.multi_dot([a, b, c, d]), [(3,), (3, 4), (4, 2), (2,)], True),
    ("multi_dot_mats", lambda m, a, b, c: m.linalg.multi_dot([a, b, c]), [(5, 2), (2, 6), (6, 3)], True),
    ("matrix_power0", lambda m, a: m.linalg.matrix_power(a, 0), [(2, 3, 3)], False),
    ("matrix_power1", lambda m, a: m.linalg.matrix_power(a, 1), [(3, 3)], True),
    ("matrix_power5", lambda m, a: m.matrix_power(a, 5), [_small((2, 3, 3))], True),
    ("vander", lambda m, a: m.vander(a), [(4,)], True),
    ("vander_inc", lambda m, a: m.vander(a, 3, True), [(4,)], True),
    ("vander_n0", lambda m, a: m.vander(a, 0), [(4,)], False),
    ("linalg_vander", lambda m, a: m.linalg.vander(a, N=4), [(2, 3)], True),
    # K = 1 (an outer product: the matmul backend multiplies broadcast views) and one-row products (the skinny tiling)
    ("mm_k1", lambda m, a, b: m.mm(a, b), [(5, 1), (1, 37)], True),
    ("bmm_k1", lambda m, a, b: m.bmm(a, b), [(3, 4, 1), (3, 1, 6)], True),
    ("matmul_k1_bcast", lambda m, a, b: m.matmul(a, b), [(2, 1, 4, 1), (3, 1, 5)], True),
    ("linear_k1", lambda m, a, b, c: m.nn.functional.linear(a, b, c), [(7, 1), (9, 1), (9,)], True),
    ("addmm_k1", lambda m, a, b, c: m.addmm(a, b, c, beta=0.5, alpha=2), [(4, 3), (4, 1), (1, 3)], True),
    ("mm_one_row", lambda m, a, b: m.mm(a, b), [(1, 51), (51, 97)], True),
    ("mm_one_row_deep", lambda m, a, b: m.mm(a, b), [(1, 300), (300, 70)], False),
    ("mv_long", lambda m, a, b: m.mv(a, b), [(97, 51), (51,)], False),  # float32 differences too coarse at K = 51
]

# equation, operand shapes: every part of the grammar and every contraction shape
EINSUM = [
    ("ij,jk", [(2, 3), (3, 4)]), ("ij,jk->ki", [(2, 3), (3, 4)]), ("ii", [(3, 3)]), ("ii->i", [(3, 3)]),
    ("iij->j", [(2, 2, 3)]), ("aab,bc->ac", [(2, 2, 3), (3, 2)]), ("i...", [(2, 3)]), ("...", [(2, 3)]),
    ("...ij,...jk", [(2, 1, 2, 3), (4, 3, 2)]), ("...ij->ij", [(4, 2, 3)]), ("...i,...i", [(2, 3), (3,)]),
    ("i...j,...->...", [(2, 3, 4), (3,)]), ("ij,ij->", [(2, 3), (1, 3)]), ("iJ", [(2, 3)]), ("ba,ab", [(2, 3), (3, 2)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]), ("ijk,kl,lm->im", [(2, 3, 4), (4, 2), (2, 3)]),
    ("i,j->ij", [(2,), (3,)]), ("a,a,a->a", [(3,), (3,), (3,)]), ("i j , j k -> i k", [(2, 3), (3, 2)]),
    ("abc,cda->bd", [(2, 3, 4), (4, 2, 2)]), ("ij->", [(2, 3)]), ("", [()]), ("ij,jk->", [(2, 0), (0, 3)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 2), (2, 2)]),
]


def _dtype(device):
    return "float64" if fp64_ok(device) else "float32"


def _arrays(specs, dt):
    return [s(dt) if callable(s) else np.asarray(np.random.randn(*s)).astype(dt) for s in specs]


def _call(fn, lib, tensors):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # cross without dim, chain_matmul: deprecated in both
        return fn(lib, *tensors)


def _check(fn, device, arrays, layout="contiguous"):
    torch = pytest.importorskip("torch")
    want = _call(fn, torch, [torch.from_numpy(a.copy()) for a in arrays])
    got = _call(fn, clgrad, [make(a, device, layout) for a in arrays])
    tol = {} if arrays[0].dtype == np.float64 else dict(rtol=1e-4, atol=1e-5)
    assert got.device == clgrad.device(device)
    assert_close(got, want.numpy(), **tol)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_forward(device, case):
    _, fn, specs, _ = case
    arrays = _arrays(specs, _dtype(device))
    _check(fn, device, arrays)
    _check(fn, device, arrays, "transposed" if max(a.ndim for a in arrays) > 1 else "sliced")


@pytest.mark.parametrize("case", [c for c in CASES if c[3]], ids=[c[0] for c in CASES if c[3]])
def test_gradcheck(device, case):
    _, fn, specs, _ = case
    dt, kw = grad_precision(device)
    inputs = [make(a, device).requires_grad_() for a in _arrays(specs, dt)]
    assert quiet_gradcheck(gradcheck, lambda *xs: _call(fn, clgrad, xs), inputs, **kw)


@pytest.mark.parametrize("case", EINSUM, ids=[c[0] or "empty" for c in EINSUM])
def test_einsum(device, case):
    equation, shapes = case
    _check(lambda m, *xs: m.einsum(equation, *xs), device, _arrays(shapes, _dtype(device)), "sliced")


@pytest.mark.parametrize("case", [EINSUM[i] for i in (0, 2, 4, 8, 12, 16, 24)], ids=lambda c: c[0])
def test_einsum_gradcheck(device, case):
    equation, shapes = case
    dt, kw = grad_precision(device)
    inputs = [make(a, device).requires_grad_() for a in _arrays(shapes, dt)]
    assert quiet_gradcheck(gradcheck, lambda *xs: clgrad.einsum(equation, *xs), inputs, **kw)


def test_einsum_forms(device):
    """The sublist format and a list of operands give the same as the equation; contractions run as bmm."""
    torch = pytest.importorskip("torch")
    a, b = np.random.randn(2, 3).astype(_dtype(device)), np.random.randn(2, 4).astype(_dtype(device))
    x, y = make(a, device), make(b, device)
    want = torch.einsum(torch.tensor(a), [0, 1], torch.tensor(b), [0, 2], [1, 2]).numpy()
    assert_close(clgrad.einsum(x, [0, 1], y, [0, 2], [1, 2]), want, check_dtype=False, rtol=1e-5, atol=1e-6)
    assert_close(clgrad.einsum(x, [0, ...]), a.T, check_dtype=False)
    assert_close(clgrad.einsum("ij,ik", [x, y]), want, check_dtype=False, rtol=1e-5, atol=1e-6)
    bools = make(a > 0, device)
    assert_close(clgrad.einsum("ij->", bools), np.int64((a > 0).sum()))
    assert_close(clgrad.einsum("ij,ij->ij", bools, bools), a > 0)


def test_dtypes(device):
    """Integer and bool products, promotion where PyTorch promotes, integer results of trace and vander."""
    torch = pytest.importorskip("torch")
    i = np.arange(6).reshape(2, 3) - 2
    cases = [
        lambda m, a: m.addmm(a[:, :2], a, a.T, beta=2, alpha=3),
        lambda m, a: m.addmm(a[:, :2], a, a.T, alpha=0.5),  # integer result, the scaled product truncated
        lambda m, a: m.kron(a, a.float()),
        lambda m, a: m.kron(a > 0, a > 1),
        lambda m, a: m.addr(a.float(), a[:, 0], a[1]),
        lambda m, a: m.addr(a > 0, a[:, 0] > 0, a[1] > 1),
        lambda m, a: m.trace(a),
        lambda m, a: m.trace(a.to(m.int8)),
        lambda m, a: m.vander(a[0]),
        lambda m, a: m.linalg.vander(a.to(m.int8)),
        lambda m, a: m.block_diag(a, a > 0, a.to(m.int8)),
        lambda m, a: m.cross(a, a.flip(1), dim=1),
        lambda m, a: m.tensordot(a, a, ([0], [0])),
        lambda m, a: m.linalg.matrix_power(a[:, :2], 3),
    ]
    for fn in cases:
        assert_close(fn(clgrad, make(i, device)), fn(torch, torch.tensor(i)).numpy())


def test_beta_zero_ignores_nan(device):
    """beta=0 ignores NaN and inf in input, and input still gets a zero gradient, as in PyTorch."""
    dt = _dtype(device)
    nan = make(np.full((2, 2), np.nan, dt), device).requires_grad_()
    a, b = make(np.ones((2, 3), dt), device), make(np.ones((3, 2), dt), device)
    out = clgrad.addmm(nan, a, b, beta=0)
    assert_close(out.detach(), np.full((2, 2), 3, dt))
    out.sum().backward()
    assert_close(nan.grad, np.zeros((2, 2), dt))
    assert_close(clgrad.addmv(make(np.full(2, np.inf, dt), device), a, b[:, 0], beta=0), np.full(2, 3, dt))


def test_inplace_and_out(device):
    """``x.addmm_``-style methods write into self (under autograd too), ``out=`` into the given tensor."""
    torch = pytest.importorskip("torch")
    dt = _dtype(device)
    arrays = _arrays([(2, 3), (2, 4), (4, 3), (4, 2, 3), (4, 2, 4), (4, 4, 3)], dt)
    x, m1, m2, bx, b1, b2 = [make(a, device) for a in arrays]
    t = [torch.from_numpy(a.copy()) for a in arrays]
    ptr = x.data_ptr()
    x.addmm_(m1, m2, beta=0.5, alpha=2)
    bx.baddbmm_(b1, b2)
    assert x.data_ptr() == ptr
    assert_close(x, t[0].addmm_(t[1], t[2], beta=0.5, alpha=2).numpy())
    assert_close(bx, t[3].baddbmm_(t[4], t[5]).numpy())
    out = clgrad.empty(2, 3, dtype=x.dtype, device=device)
    assert clgrad.addmm(x, m1, m2, out=out) is out
    assert_close(out, torch.addmm(t[0], t[1], t[2]).numpy())
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        make(arrays[0][:1], device).addmm_(m1, m2)
    # under autograd: the gradient reaches self's old value and the operands
    leaf = make(arrays[0], device).requires_grad_()
    y = leaf * 1
    y.addmm_(m1, m2, beta=3)
    y.sum().backward()
    assert_close(leaf.grad, np.full((2, 3), 3, dt))
    assert y.grad_fn is not None


def test_matrix_power_negative(device):
    torch = pytest.importorskip("torch")
    a = np.array([[[2.0, 1.0], [1.0, 3.0]], [[1.0, 2.0], [0.5, 4.0]]], np.float32)
    want = torch.linalg.matrix_power(torch.from_numpy(a), -3).numpy()
    assert_close(clgrad.linalg.matrix_power(clgrad.tensor(a, device=device), -3), want, rtol=1e-4, atol=1e-5)
    assert_close(clgrad.tensor(a, device=device).matrix_power(-1), np.linalg.inv(a), rtol=1e-4, atol=1e-5)
    with pytest.raises(clgrad.linalg.LinAlgError):
        clgrad.linalg.matrix_power(clgrad.zeros(2, 2, device=device), -1)


def test_cross_warns():
    with pytest.warns(UserWarning, match="torch.cross without specifying the dim arg is deprecated"):
        clgrad.cross(clgrad.ones(3), clgrad.ones(3))
    with pytest.warns(UserWarning, match="chain_matmul is deprecated"):
        clgrad.chain_matmul(clgrad.ones(2, 2), clgrad.ones(2, 2))


def test_einsum_pairs_use_matmul(monkeypatch):
    """Contractions go through bmm (no giant broadcast product): a 3-operand chain is two bmm calls."""
    from clgrad.ops import linalg

    calls = []
    real = linalg.bmm
    monkeypatch.setattr(linalg, "bmm", lambda a, b: calls.append((tuple(a.shape), tuple(b.shape))) or real(a, b))
    out = clgrad.einsum("ij,jk,kl->il", clgrad.ones(2, 30), clgrad.ones(30, 40), clgrad.ones(40, 3))
    assert calls == [((1, 2, 30), (1, 30, 40)), ((1, 2, 40), (1, 40, 3))]
    assert_close(out, np.full((2, 3), 1200, np.float32))


# each call raises the same error type and message in clgrad and torch
ERRORS = [
    lambda m: m.addmm(m.ones(3), m.ones(2, 3), m.ones(3, 2)),
    lambda m: m.addmm(m.ones(2), m.ones(2, 3), m.ones(2, 3)),
    lambda m: m.addmm(m.ones(2), m.ones(2, 3), m.ones(3)),
    lambda m: m.addmm(m.ones(2, 2, dtype=m.float64), m.ones(2, 3), m.ones(3, 2)),
    lambda m: m.addbmm(m.ones(2, 2), m.ones(4, 2, 3), m.ones(5, 3, 2)),
    lambda m: m.addbmm(m.ones(3, 2), m.ones(4, 2, 3), m.ones(4, 3, 2)),
    lambda m: m.baddbmm(m.ones(5, 2, 2), m.ones(4, 2, 3), m.ones(4, 3, 2)),
    lambda m: m.baddbmm(m.ones(4, 2, 2), m.ones(4, 2, 3), m.ones(4, 2, 2)),
    lambda m: m.addmv(m.ones(3), m.ones(2, 3), m.ones(3)),
    lambda m: m.addmv(m.ones(2), m.ones(2, 3), m.ones(3, 1)),
    lambda m: m.addmv(m.ones(2, dtype=m.float64), m.ones(2, 3), m.ones(3)),
    lambda m: m.addr(m.ones(2, 3, dtype=m.int64), m.ones(2, dtype=m.int64), m.ones(3, dtype=m.int64), beta=0.5),
    lambda m: m.addr(m.ones(2, 3), m.ones(2, 1), m.ones(3)),
    lambda m: m.tensordot(m.ones(2, 3), m.ones(2, 3, dtype=m.float64), 1),
    lambda m: m.tensordot(m.ones(2, 3), m.ones(2, 3), 3),
    lambda m: m.tensordot(m.ones(2, 3), m.ones(2, 3), -1),
    lambda m: m.tensordot(m.ones(2, 3), m.ones(2, 3), ([0], [1])),
    lambda m: m.tensordot(m.ones(2, 3), m.ones(2, 3), ([0, 1], [0])),
    lambda m: m.inner(m.ones(2, 3), m.ones(4)),
    lambda m: m.vdot(m.ones(3), m.ones(2)),
    lambda m: m.linalg.cross(m.ones(2, 3), m.ones(2, 4)),
    lambda m: m.linalg.cross(m.ones(2, 3), m.ones(3)),
    lambda m: m.linalg.cross(m.ones(2, 3), m.ones(2, 3, dtype=m.float64)),
    lambda m: m.cross(m.ones(2, 4), m.ones(2, 4)),
    lambda m: m.cross(m.ones(2, 3), m.ones(2, 3), dim=0),
    lambda m: m.linalg.vecdot(m.ones(2, 3), m.ones(2, 3, dtype=m.float64)),
    lambda m: m.linalg.vecdot(m.ones(2, 3, dtype=m.int64), m.ones(2, 3, dtype=m.int64)),
    lambda m: m.block_diag(m.ones(2, 2, 2)),
    lambda m: m.cartesian_prod(m.ones(2, 3)),
    lambda m: m.cartesian_prod(m.ones(2), m.ones(3, dtype=m.int64)),
    lambda m: m.combinations(m.arange(4), -1),
    lambda m: m.trace(m.ones(3)),
    lambda m: m.trace(m.ones(2, 2, dtype=m.bool)),
    lambda m: m.linalg.multi_dot([m.ones(2, 3)]),
    lambda m: m.linalg.multi_dot([m.ones(2, 3), m.ones(2, 3)]),
    lambda m: m.linalg.multi_dot([m.ones(2, 3), m.ones(3, 3, dtype=m.float64)]),
    lambda m: m.linalg.multi_dot([m.ones(2, 3), m.ones(3, 3, 3)]),
    lambda m: m.linalg.multi_dot([m.ones(()), m.ones(2, 3)]),
    lambda m: m.linalg.multi_dot([m.ones(2), m.ones(2, 3, 4), m.ones(4)]),
    lambda m: m.chain_matmul(m.ones(2, 3), m.ones(3)),
    lambda m: m.linalg.matrix_power(m.ones(2, 3), 2),
    lambda m: m.linalg.matrix_power(m.ones(3), 2),
    lambda m: m.linalg.matrix_power(m.ones(3, 3), 2.0),
    lambda m: m.vander(m.ones(2, 3)),
    lambda m: m.vander(m.ones(3), -1),
    lambda m: m.linalg.vander(m.ones(3), N=1),
    lambda m: m.linalg.vander(m.ones(3, dtype=m.bool)),
    lambda m: m.einsum("ij", m.ones(2, 3), m.ones(2, 3)),
    lambda m: m.einsum("ij,jk", m.ones(2, 3), m.ones(2, 3)),
    lambda m: m.einsum("ij,jk", m.ones(2, 3), m.ones(3, 2, dtype=m.float64)),
    lambda m: m.einsum("ij->ik", m.ones(2, 3)),
    lambda m: m.einsum("ij->ii", m.ones(2, 3)),
    lambda m: m.einsum("ijk", m.ones(2, 3)),
    lambda m: m.einsum("ijk...", m.ones(2, 3)),
    lambda m: m.einsum("i1", m.ones(2, 3)),
    lambda m: m.einsum("ij->j->i", m.ones(2, 3)),
    lambda m: m.einsum(".ij", m.ones(2, 3)),
    lambda m: m.einsum("ij->..", m.ones(2, 3)),
    lambda m: m.einsum("ii", m.ones(2, 3)),
    lambda m: m.einsum(m.ones(2, 3), [0, 60]),
    lambda m: m.einsum("ij,jk", m.ones(2, 3, dtype=m.bool), m.ones(3, 2, dtype=m.bool)),
    lambda m: m.linalg.cross([1.0, 0, 0], m.ones(3)),
    lambda m: m.linalg.vecdot([1.0], m.ones(1)),
    lambda m: m.linalg.matrix_power([[1.0]], 2),
    lambda m: m.kron([1.0], m.ones(1)),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_errors_match_torch(k):
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as want:
            ERRORS[k](torch)
        with pytest.raises(Exception) as got:
            ERRORS[k](clgrad)
    expected = str(want.value).splitlines()[0]
    assert (type(got.value).__name__, str(got.value)) == (type(want.value).__name__, expected)


def test_methods():
    """PyTorch's Tensor method forms exist and are the functions."""
    x = clgrad.arange(9.0).reshape(3, 3)
    assert_close(x.trace(), np.float32(12))
    assert_close(x.diff(dim=0), np.full((2, 3), 3, np.float32))
    assert_close(x.matrix_power(2), (np.arange(9.0).reshape(3, 3) @ np.arange(9.0).reshape(3, 3)).astype(np.float32))
    for name in ("addmm", "addbmm", "baddbmm", "addmv", "addr", "inner", "kron", "vdot", "cross", "ger"):
        assert callable(getattr(clgrad.Tensor, name)) and callable(getattr(clgrad.Tensor, name + "_", None)) == (
            name.startswith(("add", "badd")))
