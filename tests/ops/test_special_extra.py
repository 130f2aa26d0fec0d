"""Issue 17's special and elementwise math against PyTorch over wide ranges and at the edges (0, -0, +-inf, NaN,
negative integers, large arguments), on every device; scipy is the oracle where PyTorch's own values are less
accurate (igamma for large a, ndtr's far tail); the hand front ends (heaviside, float_power, ldexp, frexp, gcd...)
with PyTorch's dtype rules and errors; and the ``clgrad.special`` namespace. The records' generated tests (forward
against their numpy mirrors, gradcheck) are in test_registry.py.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import clgrad
from clgrad.autograd import gradcheck
from tests.conftest import fp64_ok
from tests.helpers import assert_close, grad_precision, quiet_gradcheck, to_numpy

INF, NAN = math.inf, math.nan
EDGES = [0.0, -0.0, INF, -INF, NAN, -1.0, -2.0, -3.0, 1.0, 2.0, 0.5, -0.5]


def _dtype(device) -> str:
    return "float64" if fp64_ok(device) else "float32"


def _values(lo, hi, n=48):
    return np.concatenate([np.linspace(lo, hi, n), EDGES])


def _fn(module, path: str):
    for part in path.split("."):
        module = getattr(module, part)
    return module


# name (clgrad and torch path), argument range; (rtol, atol) per dtype where the defaults are too tight
UNARY = [
    ("acosh", (1.0, 1e4), None), ("asinh", (-1e4, 1e4), None), ("atanh", (-1.0, 1.0), None),
    ("arccosh", (1.0, 50.0), None), ("deg2rad", (-720.0, 720.0), None), ("rad2deg", (-7.0, 7.0), None),
    ("sinc", (-10.0, 10.0), {"float32": (2e-5, 1e-6)}), ("erfinv", (-0.999, 0.999), None),
    ("i0", (-100.0, 100.0), None), ("special.i0e", (-800.0, 800.0), None), ("special.i1", (-100.0, 100.0), None),
    ("special.i1e", (-800.0, 800.0), None), ("special.erfcx", (-30.0, 1e6), None),
    ("special.ndtri", (0.0, 1.0), None), ("special.log_ndtr", (-100.0, 40.0), None),
    ("special.entr", (-1.0, 10.0), None), ("special.sinc", (-3.0, 3.0), {"float32": (2e-5, 1e-6)}),
    ("special.erfinv", (-1.0, 1.0), {"float64": (1e-9, 1e-12)}),
]


@pytest.mark.parametrize("name,domain,tols", UNARY, ids=[u[0] for u in UNARY])
def test_unary_matches_torch(device, name, domain, tols):
    torch = pytest.importorskip("torch")
    dt = _dtype(device)
    x = _values(*domain).astype(dt)
    rtol, atol = (tols or {}).get(dt, (None, None))
    want = _fn(torch, name)(torch.from_numpy(x)).numpy()
    assert_close(_fn(clgrad, name)(clgrad.tensor(x, device=device)), want, rtol=rtol, atol=atol)


def test_tails_match_scipy(device):
    """Where PyTorch flushes (ndtr below -8) or is only ~1e-10 accurate (igamma for a > 20), scipy decides."""
    special = pytest.importorskip("scipy.special")
    dt = _dtype(device)
    x = np.array([-40.0, -20.0, -8.5, -3.0, 0.0, 3.0, 8.5], dt)
    assert_close(clgrad.special.ndtr(clgrad.tensor(x, device=device)), special.ndtr(x).astype(dt))
    p = np.geomspace(1e-30, 0.5, 12).astype(dt)
    assert_close(clgrad.special.ndtri(clgrad.tensor(p, device=device)), special.ndtri(p).astype(dt))
    a, z = np.meshgrid(np.array([0.3, 2.0, 25.0, 100.0, 400.0]), np.array([0.1, 1.0, 20.0, 90.0, 420.0]))
    a, z = a.astype(dt), z.astype(dt)
    tol = (1e-9, 1e-12) if dt == "float64" else (1e-3, 2e-5)  # float32: exp(a log x - x - lgamma a) cancels
    got = clgrad.igamma(clgrad.tensor(a, device=device), clgrad.tensor(z, device=device))
    assert_close(got, special.gammainc(a, z).astype(dt), *tol)
    got = clgrad.special.gammaincc(clgrad.tensor(a, device=device), clgrad.tensor(z, device=device))
    assert_close(got, special.gammaincc(a, z).astype(dt), *tol)


BINARY = [
    ("logaddexp2", (-60.0, 60.0), (-60.0, 60.0), None), ("nextafter", (-3.0, 3.0), (-3.0, 3.0), None),
    ("special.xlog1py", (-3.0, 3.0), (-1.5, 5.0), None),
    ("igamma", (0.0, 30.0), (0.0, 40.0), {"float64": (1e-8, 1e-9), "float32": (1e-3, 5e-5)}),
    ("igammac", (0.0, 30.0), (0.0, 40.0), {"float64": (1e-8, 1e-9), "float32": (1e-3, 5e-5)}),
    ("special.zeta", (0.5, 20.0), (-5.0, 20.0), {"float32": (2e-5, 1e-5)}),
]


@pytest.mark.parametrize("name,da,db,tols", BINARY, ids=[b[0] for b in BINARY])
def test_binary_matches_torch(device, name, da, db, tols):
    torch = pytest.importorskip("torch")
    dt = _dtype(device)
    a, b = (g.astype(dt) for g in np.meshgrid(_values(*da, n=20), _values(*db, n=20)))
    rtol, atol = (tols or {}).get(dt, (None, None))
    want = _fn(torch, name)(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    got = _fn(clgrad, name)(clgrad.tensor(a, device=device), clgrad.tensor(b.T, device=device).T)  # strided
    assert_close(got, want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", ["isposinf", "isneginf", "isreal", "signbit"])
def test_predicates(device, name):
    torch = pytest.importorskip("torch")
    for arr in (np.array(EDGES, _dtype(device)), np.array([-3, 0, 4], np.int32), np.array([True, False]),
                np.array([0, 200], np.uint8)):
        want = _fn(torch, name)(torch.from_numpy(arr)).numpy()
        assert_close(_fn(clgrad, name)(clgrad.tensor(arr, device=device)), want)


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "int8"])
def test_gcd_lcm(device, dtype):
    torch = pytest.importorskip("torch")
    lo = 0 if dtype == "uint8" else -12
    a, b = (g.astype(dtype) for g in np.meshgrid(np.arange(lo, 13), np.arange(lo, 13, 5)))
    for name in ("gcd", "lcm"):
        want = _fn(torch, name)(torch.from_numpy(a), torch.from_numpy(b)).numpy()
        assert_close(_fn(clgrad, name)(clgrad.tensor(a, device=device), clgrad.tensor(b, device=device)), want)
    x = clgrad.tensor(a, device=device)
    assert_close(x.gcd_(clgrad.tensor(b, device=device)), torch.gcd(torch.from_numpy(a), torch.from_numpy(b)).numpy())


def test_gcd_rejects_floats_and_bools():
    with pytest.raises(NotImplementedError, match="gcd"):
        clgrad.gcd(clgrad.tensor([1.0]), clgrad.tensor([2.0]))
    with pytest.raises(NotImplementedError, match="lcm"):
        clgrad.lcm(clgrad.tensor([True]), clgrad.tensor([True]))


def test_heaviside(device):
    torch = pytest.importorskip("torch")
    x = np.array(EDGES, _dtype(device))
    v = np.array(0.25, x.dtype)
    want = torch.heaviside(torch.from_numpy(x), torch.from_numpy(v)).numpy()
    assert_close(clgrad.heaviside(clgrad.tensor(x, device=device), clgrad.tensor(v, device=device)), want)
    b = clgrad.tensor([True, False], device=device)
    assert to_numpy(b.heaviside(clgrad.tensor([True], device=device))).tolist() == [True, True]
    with pytest.raises(RuntimeError, match="different dtypes"):
        clgrad.heaviside(clgrad.tensor([1, 0], device=device), clgrad.tensor([1.0], device=device))


def test_positive():
    x = clgrad.tensor([1.0, -2.0])
    assert clgrad.positive(x) is x and x.positive() is x
    with pytest.raises(RuntimeError, match=r"The `\+` operator, on a bool tensor is not supported"):
        clgrad.positive(clgrad.tensor([True]))


def test_float_power(device):
    if not fp64_ok(device):
        pytest.skip("float_power computes in float64")
    torch = pytest.importorskip("torch")
    base = np.array([1, 2, -3, 0], np.int32)
    exp = np.array([0.5, -1.5, 2.0, 3.0], np.float32)
    got = clgrad.float_power(clgrad.tensor(base, device=device), clgrad.tensor(exp, device=device))
    assert_close(got, torch.float_power(torch.from_numpy(base), torch.from_numpy(exp)).numpy())
    assert_close(clgrad.float_power(2, clgrad.tensor(base, device=device)),
                 torch.float_power(2, torch.from_numpy(base)).numpy())
    with pytest.raises(RuntimeError, match="the base given to float_power_ has dtype Float"):
        clgrad.tensor(exp, device=device).float_power_(2)
    with pytest.raises(RuntimeError, match="the output given to float_power has dtype Float"):
        clgrad.float_power(clgrad.tensor(exp, device=device), 2, out=clgrad.empty(4, device=device))


def test_ldexp(device):
    torch = pytest.importorskip("torch")
    x, e = np.array([1, -3, 5], np.int64), np.array([3, -2, 0], np.int64)
    want = torch.ldexp(torch.from_numpy(x), torch.from_numpy(e)).numpy()
    assert_close(clgrad.ldexp(clgrad.tensor(x, device=device), clgrad.tensor(e, device=device)), want)
    y = clgrad.tensor([1.5, 2.0], device=device)
    assert to_numpy(y.ldexp_(clgrad.tensor([2, -1], device=device))).tolist() == [6.0, 1.0]


def test_frexp(device):
    torch = pytest.importorskip("torch")
    dt = _dtype(device)
    x = np.array([0.0, -0.0, 3.0, -0.1, 1e20, INF, -INF, NAN, 1.0, 2.0 ** -70], dt)
    mant, expo = clgrad.frexp(clgrad.tensor(x, device=device))
    want = torch.frexp(torch.from_numpy(x))
    assert_close(mant, want.mantissa.numpy())
    assert_close(expo, want.exponent.numpy())
    assert np.signbit(to_numpy(mant)[1])
    assert clgrad.tensor(x, device=device).frexp().exponent.dtype is clgrad.int32
    with pytest.raises(RuntimeError, match="only supports floating-point dtypes"):
        clgrad.frexp(clgrad.tensor([1, 2]))


def test_frexp_gradient(device):
    dtype, kw = grad_precision(device)
    x = clgrad.tensor(np.array([0.3, -5.0, 12.0], dtype), device=device, requires_grad=True)
    assert quiet_gradcheck(gradcheck, lambda t: clgrad.frexp(t).mantissa, (x,), **kw)
    assert type(clgrad.frexp(x).mantissa.grad_fn).__name__ == "FrexpBackward0"


def test_gradients_in_second_argument_only(device):
    """igamma/igammac/zeta: PyTorch differentiates in x (q) only and raises for the first argument."""
    dtype, kw = grad_precision(device)
    a = clgrad.tensor(np.array([0.5, 2.0, 3.5], dtype), device=device)
    x = clgrad.tensor(np.array([0.4, 1.5, 5.0], dtype), device=device, requires_grad=True)
    assert quiet_gradcheck(gradcheck, lambda t: clgrad.igamma(a, t), (x,), **kw)
    assert quiet_gradcheck(gradcheck, lambda t: clgrad.igammac(a, t), (x,), **kw)
    assert quiet_gradcheck(gradcheck, lambda t: clgrad.special.zeta(a + 1.5, t), (x,), **kw)
    assert quiet_gradcheck(gradcheck, lambda t: clgrad.special.zeta(3.0, t), (x,), **kw)
    for fn, what in ((clgrad.igamma, "igamma: input"), (clgrad.igammac, "igammac: input"),
                     (clgrad.special.zeta, "zeta")):
        a2 = a.clone().requires_grad_()
        with pytest.raises(NotImplementedError, match=f"the derivative for '{what}' is not implemented"):
            fn(a2 + 1.0, x).sum().backward()


def test_node_names_follow_pytorch():
    torch = pytest.importorskip("torch")
    for name in ("special.erfcx", "special.ndtri", "special.i1e", "special.i0e", "i0", "erfinv", "deg2rad", "sinc",
                 "special.log_ndtr", "special.entr"):
        ours = _fn(clgrad, name)(clgrad.tensor([0.5], requires_grad=True))
        theirs = _fn(torch, name)(torch.tensor([0.5], requires_grad=True))
        assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__, name
    x = clgrad.tensor([0.5], requires_grad=True)
    assert type(clgrad.logaddexp2(x, x).grad_fn).__name__ == "Logaddexp2Backward0"


def test_special_namespace(device):
    torch = pytest.importorskip("torch")
    dt = _dtype(device)
    x = np.linspace(0.1, 0.9, 8).astype(dt).reshape(2, 4)
    c, t = clgrad.tensor(x, device=device), torch.from_numpy(x)
    S, TS = clgrad.special, torch.special
    for name in ("expm1", "exp2", "log1p", "erf", "erfc", "expit", "gammaln", "digamma", "psi", "round", "logit",
                 "ndtr", "i0", "sinc", "entr", "erfinv"):
        assert_close(getattr(S, name)(c), getattr(TS, name)(t).numpy())
    assert_close(S.xlogy(c, c), TS.xlogy(t, t).numpy())
    assert_close(S.gammainc(c, c), TS.gammainc(t, t).numpy())
    assert_close(S.polygamma(2, c), TS.polygamma(2, t).numpy())
    assert_close(S.multigammaln(c + 2, 3), TS.multigammaln(t + 2, 3).numpy())
    assert_close(S.softmax(c, 1), TS.softmax(t, 1).numpy())
    assert_close(S.log_softmax(c, 0), TS.log_softmax(t, 0).numpy())
    assert_close(S.logsumexp(c, 1), TS.logsumexp(t, 1).numpy())
    assert set(S.__all__) <= {n for n in dir(TS) if not n.startswith("_")}


def test_zero_size_and_broadcast(device):
    dt = _dtype(device)
    empty = clgrad.tensor(np.zeros((0, 3), dt), device=device)
    assert clgrad.special.i1e(empty).shape == (0, 3)
    assert clgrad.igamma(empty, clgrad.tensor(np.ones(3, dt), device=device)).shape == (0, 3)
    got = clgrad.special.zeta(clgrad.tensor(np.array([[2.0], [4.0]], dt), device=device), 1.0)
    assert_close(got, np.array([[math.pi ** 2 / 6], [math.pi ** 4 / 90]], dt))


def test_overloaded_node_names_follow_pytorch():
    torch = pytest.importorskip("torch")
    x, tx = clgrad.tensor([0.5], requires_grad=True), torch.tensor([0.5], requires_grad=True)
    for fn in ("zeta", "xlog1py"):
        for ours, theirs in (((x, x), (tx, tx)), ((2.0, x), (2.0, tx)), ((x, 2.0), (tx, 2.0))):
            want = type(getattr(torch.special, fn)(*theirs).grad_fn).__name__
            assert type(getattr(clgrad.special, fn)(*ours).grad_fn).__name__ == want


@pytest.mark.parametrize("name", ["bessel_j0", "bessel_j1"])
def test_bessel_j(device, name):
    """Against scipy (PyTorch's own float64 J0/J1 are only ~5e-7 accurate between 5 and 25), and PyTorch's special
    values (NaN at +-inf). No gradient flows (test_registry checks it), as in PyTorch."""
    torch = pytest.importorskip("torch")
    dt = _dtype(device)
    x = np.concatenate([np.linspace(-60.0, 60.0, 241), [4.999, 5.0, 25.0, 25.001, 1e4]]).astype(dt)
    got = getattr(clgrad.special, name)(clgrad.tensor(x, device=device))
    special = pytest.importorskip("scipy.special")
    want = getattr(special, name[-2:])(x.astype(np.float64)).astype(dt)
    assert_close(got, want, atol=1e-6 if dt == "float32" else 1e-13)
    edges = np.array(EDGES, dt)
    want = getattr(torch.special, name)(torch.from_numpy(edges)).numpy()
    assert_close(getattr(clgrad.special, name)(clgrad.tensor(edges, device=device)), want, atol=1e-6)


POLYNOMIALS = clgrad.special._POLYNOMIALS


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_match_torch(device, name):
    """Degrees 0..13 (13 takes the trigonometric form inside (-1, 1)), negative and fractional degrees, the closed
    forms at +-1 (0 and 1 for the shifted ones); a tensor degree broadcast against the points. (PyTorch's cpu kernel
    gives NaN points other values, so they are left out.)"""
    torch = pytest.importorskip("torch")
    dt = _dtype(device)
    x = np.array([-1.3, -1.0, -0.999, -0.5, 0.0, 0.3, 0.75, 0.999, 1.0, 1.2, 2.0], dt)[:, None]
    n = np.array([0, 1, 2, 3, 5, 8, 13, -1, 2.7], dt)
    want = getattr(torch.special, name)(torch.from_numpy(x), torch.from_numpy(n)).numpy()
    got = getattr(clgrad.special, name)(clgrad.tensor(x, device=device), clgrad.tensor(n, device=device))
    tol = (1e-9, 1e-9) if dt == "float64" else (2e-4, 2e-4)  # the trigonometric form amplifies acos's rounding
    assert_close(got, want, *tol)
    assert_close(getattr(clgrad.special, name)(clgrad.tensor(x, device=device), 3),
                 getattr(torch.special, name)(torch.from_numpy(x), 3).numpy(), *tol)


def test_spherical_bessel_j0(device):
    torch = pytest.importorskip("torch")
    x = np.concatenate([np.linspace(-30, 30, 61), [1e-3, INF, -INF, NAN, 0.0]]).astype(_dtype(device))
    want = torch.special.spherical_bessel_j0(torch.from_numpy(x)).numpy()
    assert_close(clgrad.special.spherical_bessel_j0(clgrad.tensor(x, device=device)), want, atol=1e-7)
