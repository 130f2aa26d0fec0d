"""pow with a Python-number exponent: the constant-exponent kernels (x * x for 2, sqrt for 0.5...) give PyTorch's
results, edge values included (signed zeros, infinities, NaN), and leave autograd as it was (PowBackward0)."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
from clgrad.registry.elementwise import pow_scalar_kernel
from tests.conftest import fp64_ok
from tests.helpers import grad_precision, make, to_numpy

EDGE = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 0.3, -0.3, 7.0, -7.0, np.inf, -np.inf, np.nan, 1e-20, 1e20, -1e20, 3.7e12]
TORCH_SPECIAL = [0, 1, 2, 3, -2, 0.5, -0.5, -1, 2.0, True, False]  # PyTorch's CPU pow special-cases these
BY_BITS = [4, 5, 7, 15, -3, -15, 6.0]  # products of x, x^2, x^4, x^8 (PyTorch: std::pow)


def _dtypes(device):
    return ["float32", "float64"] if fp64_ok(device) else ["float32"]


def _edges(dtype):
    with np.errstate(over="ignore"):
        return np.array(EDGE, dtype)


def _same_specials(got, want):
    """Equal where the answer is zero, infinite or NaN, signs included."""
    special = (want == 0) | np.isinf(want) | np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    keep = special & ~np.isnan(want)
    np.testing.assert_array_equal(got[keep], want[keep])
    np.testing.assert_array_equal(np.signbit(got[keep]), np.signbit(want[keep]))


@pytest.mark.parametrize("exponent", TORCH_SPECIAL + BY_BITS + [2.5, -1.5, 16, 0.25])
def test_edge_values_match_torch(device, exponent):
    torch = pytest.importorskip("torch")
    for dtype in _dtypes(device):
        x = _edges(dtype)
        with np.errstate(all="ignore"):
            want = (torch.from_numpy(x) ** exponent).numpy()
        got = to_numpy(clgrad.tensor(x, device=device) ** exponent)
        assert got.dtype == want.dtype
        _same_specials(got, want)
        # torch's own special cases are the same float operations on cpu, so within an ulp (torch's vectorized sqrt
        # is not always correctly rounded: on an AMD EPYC it gave 1923538.5 for sqrt(3.7e12f), which rounds to
        # 1923538.375); OpenCL's sqrt and division may round differently by an ulp or so, the products of BY_BITS
        # differ from std::pow by a few ulp
        ulp = device == "cpu" and exponent in TORCH_SPECIAL
        rtol = float(np.finfo(dtype).eps) if ulp else 1e-6 if dtype == "float32" else 1e-14
        if exponent not in TORCH_SPECIAL + BY_BITS:
            rtol = 1e-5 if dtype == "float32" else 1e-12  # the general pow kernel, as before
        np.testing.assert_allclose(got, want, rtol=rtol, atol=0, equal_nan=True)


def test_random_values_and_layouts_match_torch(device):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((6, 7)).astype(np.float32) * 3
    for exponent in (2, 3, -2, 0.5, -0.5, -1, 4, -5, 0, 1):
        with np.errstate(all="ignore"):
            want = (torch.from_numpy(x) ** exponent).numpy()
        for layout in ("contiguous", "transposed"):
            got = to_numpy(make(x, device, layout) ** exponent)
            np.testing.assert_allclose(got, want, rtol=2e-6, atol=0, equal_nan=True)


def test_kernel_choice():
    assert pow_scalar_kernel(2, "float32") == ("square", ())
    assert pow_scalar_kernel(3.0, "float64") == ("pow_cube", ())
    assert pow_scalar_kernel(0.5, "float32") == ("sqrt", ())
    assert pow_scalar_kernel(-0.5, "float32") == ("rsqrt", ())
    assert pow_scalar_kernel(-1, "float32") == ("reciprocal", ())
    assert pow_scalar_kernel(-2, "float32") == ("pow_inv_square", ())
    assert pow_scalar_kernel(0, "float32") == ("identity", None)
    assert pow_scalar_kernel(True, "float32") == ("identity", ())
    assert pow_scalar_kernel(6, "float32") == ("pow_bits", (6.0,))
    assert pow_scalar_kernel(-7.0, "float64") == ("pow_inv_bits", (7.0,))
    for general in (16, 2.5, -0.25, float("nan"), float("inf")):
        assert pow_scalar_kernel(general, "float32") is None
    # float16: PyTorch's pow is std::pow there (pow(-0, 0.5) is +0, sqrt(-0) is -0): only 0, 1 and 2 are shortcuts
    assert pow_scalar_kernel(2, "float16") == ("square", ())
    assert pow_scalar_kernel(0.5, "float16") is None and pow_scalar_kernel(3, "float16") is None


def test_float16_and_integers_match_torch(device):
    torch = pytest.importorskip("torch")
    h = np.array([0.0, -0.0, 2.0, -np.inf, np.inf, 0.5], np.float16)
    for exponent in (0.5, 2, 3, -1):
        got = to_numpy(clgrad.tensor(h, device=device) ** exponent)
        _same_specials(got, (torch.from_numpy(h) ** exponent).numpy())
    i = np.array([-3, -1, 0, 1, 2, 5], np.int32)
    for exponent in (0, 1, 2, 3, 7):
        got = to_numpy(clgrad.tensor(i, device=device) ** exponent)
        want = (torch.from_numpy(i) ** exponent).numpy()
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    got = to_numpy(clgrad.tensor(i, device=device) ** 0.5)  # int base, float exponent: float result
    np.testing.assert_allclose(got, (torch.from_numpy(i) ** 0.5).numpy(), rtol=1e-6, equal_nan=True)
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        clgrad.tensor(i, device=device) ** -1


def test_inplace_and_out(device):
    x = np.array([1.5, -2.0, 3.0], np.float32)
    t = clgrad.tensor(x, device=device)
    t.pow_(2)
    np.testing.assert_array_equal(to_numpy(t), x * x)
    out = clgrad.empty(3, device=device)
    clgrad.pow(clgrad.tensor(x, device=device), 0, out=out)
    np.testing.assert_array_equal(to_numpy(out), np.ones(3, np.float32))


@pytest.mark.parametrize("exponent", [2, 3, -2, 0.5, -0.5, -1, 4, -3, 0, 1])
def test_gradient_unchanged(device, exponent):
    dtype, kw = grad_precision(device)
    x = clgrad.tensor(np.random.default_rng(1).uniform(0.5, 2.0, 5), dtype=getattr(clgrad, dtype), device=device,
                      requires_grad=True)
    y = x ** exponent
    assert type(y.grad_fn).__name__ == "PowBackward0"
    assert clgrad.autograd.gradcheck(lambda t: t ** exponent, (x,), **kw)


def test_repeated_calls_pick_the_kernel_by_value(device):
    """Repeated ops reuse a plan keyed on the exponent's value: every value still gets its own kernel and checks."""
    x = np.array([0.5, -2.0, 3.0], np.float32)
    t = clgrad.tensor(x, device=device)
    for exponent in (2, 3, 2, 0.5, 0, 2, 2.0, 5, -1, 2):
        for _ in range(2):
            with np.errstate(invalid="ignore"):
                np.testing.assert_allclose(to_numpy(t ** exponent), x.astype(np.float64) ** exponent, rtol=1e-6)
    np.testing.assert_allclose(to_numpy(t ** clgrad.tensor([2.0, 2.0, 3.0], device=device)), x ** [2, 2, 3], rtol=1e-6)
    i = clgrad.tensor([1, 2, 3], device=device)
    for _ in range(2):
        np.testing.assert_array_equal(to_numpy(i ** 2), [1, 4, 9])
        with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
            i ** -2


def test_general_pow_edge_grid_matches_torch(device):
    """The general kernel (tensor exponents, other numbers) on every pair of edge values: C99's special values as
    PyTorch gives them, and within an ulp or so elsewhere (float32 goes through double where the device has it)."""
    torch = pytest.importorskip("torch")
    edges = _edges("float32")
    ys = np.array([0.0, -0.0, 1.0, -1.0, 2.0, 3.0, -3.0, 0.5, 2.5, -2.5, 127.5, 31.0, 16777218.0, 1e10, -1e10,
                   np.inf, -np.inf, np.nan, 0.3333], np.float32)
    x, y = (a.ravel() for a in np.meshgrid(edges, ys))
    with np.errstate(all="ignore"):
        want = (torch.from_numpy(x) ** torch.from_numpy(y)).numpy()
    got = to_numpy(clgrad.tensor(x, device=device) ** clgrad.tensor(y, device=device))
    _same_specials(got, want)
    np.testing.assert_allclose(got, want, rtol=1e-6 if fp64_ok(device) else 1e-5, atol=0, equal_nan=True)


def _pow_sample(n: int):
    """Random float32 pairs where pow is hard: bases of every magnitude (subnormals and negatives too), exponents
    that put y log|x| anywhere in float's range (results near overflow and in the subnormals), bases near 1 with
    huge exponents, negative bases with integer exponents."""
    rng = np.random.default_rng(7)
    x = rng.integers(1, 0x7F800000, n, dtype=np.int64).astype(np.uint32).view(np.float32).copy()
    x[rng.random(n) < 0.2] *= -1
    with np.errstate(divide="ignore"):
        l2 = np.log2(np.abs(x.astype(np.float64)))
    l2[l2 == 0] = 1
    y = np.select([np.arange(n) % 4 == k for k in range(3)],
                  [rng.uniform(-10, 10, n), rng.uniform(-152, 130, n) / l2, rng.integers(-40, 40, n)],
                  rng.standard_normal(n) * 3).astype(np.float32)
    near1 = slice(0, n // 5)
    x[near1] = (1 + rng.uniform(-1e-3, 1e-3, n // 5)).astype(np.float32)
    with np.errstate(divide="ignore", over="ignore"):  # x = 1 exactly: y = inf
        y[near1] = (rng.uniform(-150, 127, n // 5) / np.log2(x[near1].astype(np.float64))).astype(np.float32)
    negint = slice(n // 5, n // 5 + n // 10)
    x[negint], y[negint] = -np.abs(x[negint]), np.rint(y[negint])
    return x, y


def test_general_pow_within_an_ulp(device):
    """The general kernel against float64 pow on a dense random sample: within an ulp of the exact value (PyTorch's
    level; clgrad's kernel measured 0.503 on a million pairs), infinities, zeros and NaNs where float32 has them.
    cpu is numpy's float32 power (0.97 measured); a device without fp64 runs the OpenCL builtin (16 ulp allowed)."""
    x, y = _pow_sample(200_000 if device != "cpu" else 20_000)
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), y.astype(np.float64))
        w32 = want.astype(np.float32)
    got = to_numpy(clgrad.tensor(x, device=device) ** clgrad.tensor(y, device=device))
    finite = np.isfinite(w32)
    spacing = np.spacing(np.abs(w32[finite])).astype(np.float64)
    ulps = np.abs(got[finite].astype(np.float64) - want[finite]) / spacing
    bound = 16.0 if not fp64_ok(device) else 1.5 if device == "cpu" else 1.0
    assert ulps.max() <= bound, (x[finite][ulps.argmax()], y[finite][ulps.argmax()], ulps.max())
    np.testing.assert_array_equal(got[~finite], w32[~finite])  # overflow to +-inf, NaN for negative ** non-integer
