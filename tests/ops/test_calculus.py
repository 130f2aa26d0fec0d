"""diff, gradient, trapezoid/trapz and cumulative_trapezoid (clgrad/ops/calculus.py) against torch on every device:
values in float64 (float32 without cl_khr_fp64) over contiguous and transposed inputs, zero sizes, gradcheck,
dtypes, and PyTorch's errors."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
from clgrad.autograd import gradcheck
from tests.conftest import fp64_ok
from tests.helpers import assert_close, grad_precision, make, quiet_gradcheck


def _coords(n):
    """Increasing, unevenly spaced sample points."""
    return lambda dt: np.cumsum(np.random.uniform(0.5, 1.5, n)).astype(dt)


# (id, fn(lib, *inputs) for lib = clgrad or torch, input shapes or generators, differentiable)
CASES = [
    ("diff", lambda m, a: m.diff(a), [(3, 4)], True),
    ("diff_n2_dim0", lambda m, a: m.diff(a, n=2, dim=0), [(4, 3)], True),
    ("diff_n_big", lambda m, a: m.diff(a, n=5), [(2, 3)], False),
    ("diff_n0", lambda m, a: m.diff(a, n=0), [(2, 3)], False),
    ("diff_pre_app", lambda m, a, p, q: m.diff(a, prepend=p, append=q), [(2, 3), (2, 1), (2, 2)], True),
    ("diff_pre_dim0", lambda m, a, p: a.diff(dim=0, prepend=p, n=2), [(2, 3), (1, 3)], True),
    ("diff_zero", lambda m, a: m.diff(a), [(2, 0)], False),
    ("gradient", lambda m, a: m.gradient(a), [(3, 4)], True),
    ("gradient_dim", lambda m, a: m.gradient(a, dim=1), [(2, 3)], True),
    ("gradient_dims", lambda m, a: m.gradient(a, dim=(-1, 0), spacing=[2.0, 0.5]), [(3, 4)], True),
    ("gradient_scalar", lambda m, a: m.gradient(a, spacing=0.25, edge_order=2), [(3, 5)], True),
    ("gradient_edge2_1d", lambda m, a: m.gradient(a, edge_order=2), [(4,)], True),
    ("gradient_coords", lambda m, a, x, y: m.gradient(a, spacing=(x, y)), [(3, 4), _coords(3), _coords(4)], True),
    ("gradient_coords_e2", lambda m, a, x: m.gradient(a, spacing=(x,), dim=1, edge_order=2),
     [(2, 5), _coords(5)], True),
    ("trapezoid", lambda m, a: m.trapezoid(a), [(2, 4)], True),
    ("trapezoid_dx", lambda m, a: m.trapezoid(a, dx=0.5, dim=0), [(3, 2)], True),
    ("trapezoid_x", lambda m, a, x: m.trapezoid(a, x), [(2, 4), _coords(4)], True),
    ("trapezoid_x_dim0", lambda m, a, x: m.trapezoid(a, x, dim=0), [(4, 2), _coords(4)], True),
    ("trapezoid_x_nd", lambda m, a, x: m.trapezoid(a, x), [(2, 4), (1, 4)], True),
    ("trapezoid_zero", lambda m, a: m.trapezoid(a), [(2, 0)], False),
    ("trapz_x", lambda m, a, x: m.trapz(a, x), [(2, 3), _coords(3)], True),
    ("trapz_dx", lambda m, a: m.trapz(a, dx=3), [(2, 3)], True),
    ("cumtrapz", lambda m, a: m.cumulative_trapezoid(a), [(2, 4)], True),
    ("cumtrapz_dx", lambda m, a: m.cumulative_trapezoid(a, dx=2, dim=0), [(3, 2)], True),
    ("cumtrapz_x", lambda m, a, x: m.cumulative_trapezoid(a, x), [(2, 4), _coords(4)], True),
    ("cumtrapz_one", lambda m, a: m.cumulative_trapezoid(a), [(2, 1)], False),
    ("cumtrapz_zero", lambda m, a: m.cumulative_trapezoid(a), [(2, 0)], False),
]


def _arrays(specs, dt):
    return [s(dt) if callable(s) else np.asarray(np.random.randn(*s)).astype(dt) for s in specs]


def _compare(got, want, tol):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_close(g, w.numpy(), **tol)
    else:
        assert_close(got, want.numpy(), **tol)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_forward(device, case):
    torch = pytest.importorskip("torch")
    _, fn, specs, _ = case
    arrays = _arrays(specs, "float64" if fp64_ok(device) else "float32")
    want = fn(torch, *[torch.from_numpy(a.copy()) for a in arrays])
    tol = {} if arrays[0].dtype == np.float64 else dict(rtol=1e-4, atol=1e-5)
    for layout in ("contiguous", "transposed"):
        _compare(fn(clgrad, *[make(a, device, layout) for a in arrays]), want, tol)


@pytest.mark.parametrize("case", [c for c in CASES if c[3]], ids=[c[0] for c in CASES if c[3]])
def test_gradcheck(device, case):
    _, fn, specs, _ = case
    dt, kw = grad_precision(device)
    inputs = [make(a, device).requires_grad_() for a in _arrays(specs, dt)]
    assert quiet_gradcheck(gradcheck, lambda *xs: fn(clgrad, *xs), inputs, **kw)


def test_dtypes(device):
    """Integers promote as in PyTorch (gradient and the integrals to the default float dtype); bool diff is xor."""
    torch = pytest.importorskip("torch")
    i = np.array([[1, 4, 9, 16], [2, 3, 5, 7]])
    cases = [
        lambda m, a: m.diff(a),
        lambda m, a: m.diff(a > 4),
        lambda m, a: m.diff(a, prepend=a[:, :1].float()),
        lambda m, a: m.gradient(a)[1],
        lambda m, a: m.gradient(a.float(), spacing=(m.arange(2, device=a.device), m.arange(4, device=a.device) * 2))[0],
        lambda m, a: m.trapezoid(a),
        lambda m, a: m.trapezoid(a, dx=2),
        lambda m, a: m.trapezoid(a, m.arange(4, device=a.device)),
        lambda m, a: m.cumulative_trapezoid(a, dx=2),
    ]
    for fn in cases:
        assert_close(fn(clgrad, make(i, device)), fn(torch, torch.tensor(i)).numpy())


def test_gradient_0d():
    assert clgrad.gradient(clgrad.tensor(1.0)) == ()


# each call raises the same error type and message in clgrad and torch
ERRORS = [
    lambda m: m.diff(m.ones(())),
    lambda m: m.diff(m.ones(2, 3), n=-1),
    lambda m: m.diff(m.ones(2, 3), dim=2),
    lambda m: m.diff(m.ones(2, 3), prepend=m.ones(1, 1)),
    lambda m: m.diff(m.ones(2, 3), append=m.ones(2)),
    lambda m: m.diff(m.ones(2, 3), prepend=2.0),
    lambda m: m.gradient(m.ones(2, 3), spacing=[2.0]),
    lambda m: m.gradient(m.ones(2, 3), spacing=[2.0, 1.0], dim=1),
    lambda m: m.gradient(m.ones(2, 3), edge_order=2),
    lambda m: m.gradient(m.ones(2, 3), edge_order=3),
    lambda m: m.gradient(m.ones(1, 3)),
    lambda m: m.gradient(m.ones(2, 3), dim=[0, 0]),
    lambda m: m.gradient(m.ones(2, 3), spacing=[m.tensor(2.0), m.tensor(3.0)]),
    lambda m: m.gradient(m.ones(2, 3, dtype=m.bool)),
    lambda m: m.trapezoid(m.ones(2, 3), m.arange(4.0)),
    lambda m: m.trapezoid(m.ones(2, 3, dtype=m.bool)),
    lambda m: m.trapezoid(m.ones(())),
    lambda m: m.cumulative_trapezoid(m.ones(2, 3), m.arange(2.0)),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_errors_match_torch(k):
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception) as want:
        ERRORS[k](torch)
    with pytest.raises(Exception) as got:
        ERRORS[k](clgrad)
    expected = str(want.value).splitlines()[0]
    assert (type(got.value).__name__, str(got.value)) == (type(want.value).__name__, expected)


def test_gradient_spacing_none_is_the_default():
    x = clgrad.arange(5.0) ** 2
    (g,) = clgrad.gradient(x, spacing=None, dim=None, edge_order=1)
    np.testing.assert_allclose(g.numpy(), [1.0, 2.0, 4.0, 6.0, 7.0])
