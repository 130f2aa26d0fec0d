"""The long tail of elementwise math (erf, activations, nan_to_num, logit, xlogy, fmax/fmin, lerp, addcmul,
addcdiv, isclose...) on every device: one table line per op case, checked against a float64 numpy reference
and against PyTorch (dtype, values, errors) over dtypes, layouts, broadcasting and edge values; then gradients:
gradcheck and gradgradcheck of every rule of the elementwise gradient table, and PyTorch's subgradient
conventions at kinks, ties and non-finite inputs.
"""
from __future__ import annotations

import math
import types
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

import clgrad
from clgrad import dtypes as D
from clgrad.ops import math as M
from clgrad.ops import pointwise as P
from tests.conftest import fp64_ok
from tests.helpers import assert_close, make, to_numpy

inf, nan = np.inf, np.nan
DTYPES = ("bool", "uint8", "int32", "float16", "float32", "float64")
FLOATS = ("float16", "float32", "float64")

# clgrad's and torch's namespaces seen alike: functions, F.* activations and closeness
CL = types.SimpleNamespace(**(M.FUNCS | M.NO_INPLACE_FUNCS | M.TORCH_FUNCS | M.FUNCTIONAL_ACTIVATIONS))


def _torch_ns():
    torch = pytest.importorskip("torch")
    ns = types.SimpleNamespace(**{n: getattr(torch, n) for n in dir(torch) if not n.startswith("_")})
    for name in M.FUNCTIONAL_ACTIVATIONS:
        setattr(ns, name, getattr(torch.nn.functional, name))
    return torch, ns


# ---- data: 20 values per letter, laid out as (4, 5) -------------------------------------------------
def _huge(dtype):
    return 6e4 if dtype == "float16" else 1e30


def _data(letter: str, dtype: str) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return (np.arange(20) % 3 == (0 if letter == "x" else 1)).reshape(4, 5)
    if dt.kind in "iu":
        x = [0, 1, 2, 3, 5, 7, 100, 6, 4, 9, 0, 1, 2, 3, 5, 7, 100, 6, 4, 9]
        if dt.kind == "i":
            x = [v if k % 2 else -v for k, v in enumerate(x)]
        if letter != "x":
            x = x[3:] + x[:3]
        return np.array(x, dt).reshape(4, 5)
    h = _huge(dtype)
    x = {
        "x": [0.0, -0.0, 0.5, -0.5, 1.5, -2.5, 3.0, -3.0, 6.0, 7.5, 25.0, -25.0, 1000.0, -1000.0, inf, -inf, nan,
              h, -h, 0.75],
        "y": [2.0, -0.0, 0.0, 2.0, inf, 3.0, 1.0, -inf, nan, -2.0, 2.0, -4.0, 0.5, 1.5, 7.0, 0.25, 3.0, -1.0, 5.0,
              -0.5],
        "p": [0.0, 1.0, 0.5, 0.25, 0.75, 1e-3, 0.999, -0.5, 1.5, nan, 0.1, 0.9, 0.3, 0.6, 0.05, 0.95, inf, -inf,
              0.2, 0.8],  # probabilities for logit
        "w": [0.0, 1.0, 0.5, 0.25, 0.75, -1.0, 2.0, 0.49, 0.51, -0.25, 0.0, 1.0, 0.5, 0.25, 0.75, -1.0, 2.0, 0.49,
              0.51, 1.25],  # lerp weights
        "c": [0.0, -0.0, 0.5, -0.5, 1.5, -2.5, 3.0, -3.0, 6.0, 7.5, 25.0, -25.0, 1000.0, -1000.0, inf, -inf, nan,
              h, -h, 0.75],
    }[letter]
    if letter == "c":  # close to "x": equal, within and outside the default tolerances
        deltas = [0, 0, 1e-9, 1e-7, 1e-5, 1e-3, 0, 1e-2, 1e-6, 3e-6, 1e-4, 0, 1e-2, 0.5, 0, 0, 0, 0, 0, 2e-5]
        x = [v + d * (abs(v) + 1) for v, d in zip(x, deltas)]
    return np.array(x, dt).reshape(4, 5)


# ---- float64 references --------------------------------------------------------------------------
_erf, _erfc = np.vectorize(math.erf, otypes=[np.float64]), np.vectorize(math.erfc, otypes=[np.float64])
SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _elu(x, alpha=1.0, scale=1.0, input_scale=1.0):
    return np.where(x <= 0, np.expm1(x * input_scale) * alpha * scale, x * scale)


def _hardsigmoid(x):
    return np.minimum(np.maximum(x + 3, 0), 6) / 6


def _softplus(x, beta=1.0, threshold=20.0):
    return np.where(x * beta > threshold, x, np.log1p(np.exp(x * beta)) / beta)


def _logit(p, eps=None):
    if eps is not None:
        p = np.where(p < eps, eps, np.where(p > 1 - eps, 1 - eps, p))
    return np.log(p / (1 - p))


def _xlogy(x, y):
    return np.where(np.isnan(y), nan, np.where(x == 0, 0.0, x * np.log(y)))


def _lerp(a, b, w):
    return np.where(np.abs(w) < 0.5, a + w * (b - a), b + (w - 1) * (b - a))


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable  # fn(ns, *operands): ns is CL or the torch namespace
    ref: Callable  # float64 numpy reference over the operands (converted to the compute dtype first)
    args: tuple = ("x",)  # data letters (tensors) or Python scalars
    kind: str = "same"  # result dtype: "same" (promoted), "float" (ints promote to float), "bool"
    allow: str = "f"  # kinds of the promoted dtype the op is defined for; others raise as in PyTorch
    torch_finite: bool = False  # compare with torch on finite inputs only (torch's vectorized erf gives NaN at inf)
    zero_signs: bool = True  # compare signs of zero with torch (False where torch's own kernels disagree)


def C(name, fn, ref, args=("x",), **kw):
    return Case(name, fn, ref, tuple(args), **kw)


CASES = [
    C("erf", lambda t, x: t.erf(x), _erf, kind="float", allow="buif"),
    C("erfc", lambda t, x: t.erfc(x), _erfc, kind="float", allow="buif"),
    # torch's vectorized float32 gelu gives +0 or -0 below about -5 depending on the host's ISA (+0 with AVX2 on an
    # AMD EPYC, torch 2.13); the numpy formula (-0) is checked in test_forward and gelu_huge
    C("gelu", lambda t, x: t.gelu(x), lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))), torch_finite=True,
      zero_signs=False),
    C("gelu_tanh", lambda t, x: t.gelu(x, approximate="tanh"), _gelu_tanh),
    C("silu", lambda t, x: t.silu(x), lambda x: x / (1 + np.exp(-x))),
    C("elu", lambda t, x: t.elu(x), _elu),
    C("elu_alpha", lambda t, x: t.elu(x, alpha=0.5), lambda x: _elu(x, 0.5)),
    C("selu", lambda t, x: t.selu(x), lambda x: _elu(x, SELU_ALPHA, SELU_SCALE)),
    C("celu", lambda t, x: t.celu(x, alpha=2.0), lambda x: _elu(x, 2.0, 1.0, 0.5)),
    C("leaky_relu", lambda t, x: t.leaky_relu(x), lambda x: np.where(x > 0, x, x * 0.01)),
    C("leaky_relu_slope", lambda t, x: t.leaky_relu(x, 0.2), lambda x: np.where(x > 0, x, x * 0.2)),
    C("softplus", lambda t, x: t.softplus(x), _softplus),
    C("softplus_beta", lambda t, x: t.softplus(x, beta=2.0, threshold=5.0), lambda x: _softplus(x, 2.0, 5.0)),
    C("hardtanh", lambda t, x: t.hardtanh(x), lambda x: np.minimum(np.maximum(x, -1), 1), allow="if"),
    C("hardtanh_bounds", lambda t, x: t.hardtanh(x, -2.0, 5.0), lambda x: np.minimum(np.maximum(x, -2), 5),
      allow="if"),
    C("relu6", lambda t, x: t.relu6(x), lambda x: np.minimum(np.maximum(x, 0), 6), allow="uif"),
    C("hardsigmoid", lambda t, x: t.hardsigmoid(x), _hardsigmoid),
    C("hardswish", lambda t, x: t.hardswish(x), lambda x: x * _hardsigmoid(x)),
    C("mish", lambda t, x: t.mish(x), lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    C("logsigmoid", lambda t, x: t.logsigmoid(x), lambda x: np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))),
    C("relu", lambda t, x: t.relu(x), lambda x: np.where(x < 0, 0, x), allow="uif"),
    C("nan_to_num", lambda t, x: t.nan_to_num(x), None, allow="buif"),  # reference: np.nan_to_num in the dtype
    C("nan_to_num_values", lambda t, x: t.nan_to_num(x, nan=1.5, posinf=100.0, neginf=-7.0),
      lambda x: np.nan_to_num(x, nan=1.5, posinf=100.0, neginf=-7.0), allow="buif"),
    C("logit", lambda t, p: t.logit(p), _logit, ("p",), kind="float", allow="buif"),
    C("logit_eps", lambda t, p: t.logit(p, eps=0.1), lambda p: _logit(p, 0.1), ("p",), kind="float", allow="buif"),
    C("xlogy", lambda t, x, y: t.xlogy(x, y), _xlogy, ("x", "y"), kind="float", allow="buif"),
    C("xlogy_scalar", lambda t, s, y: t.xlogy(s, y), _xlogy, (2.0, "y"), kind="float", allow="buif"),
    C("fmax", lambda t, x, y: t.fmax(x, y), np.fmax, ("x", "y"), allow="buif"),
    C("fmin", lambda t, x, y: t.fmin(x, y), np.fmin, ("x", "y"), allow="buif"),
    C("clamp_min", lambda t, x, y: t.clamp_min(x, y), np.maximum, ("x", "y"), allow="buif"),
    C("clamp_max_scalar", lambda t, x, s: t.clamp_max(x, s), np.minimum, ("x", 2), allow="buif"),
    C("lerp", lambda t, x, y, s: t.lerp(x, y, s), _lerp, ("x", "y", 0.3)),
    C("lerp_high_weight", lambda t, x, y, s: t.lerp(x, y, s), _lerp, ("x", "y", 0.75)),
    # lerp(-0, -0, 1): torch's vectorized float kernel gives 0.0, its scalar half kernel -0.0
    C("lerp_tensor", lambda t, x, y, w: t.lerp(x, y, w), _lerp, ("x", "y", "w"), zero_signs=False),
    # an integer addcmul converts value to its dtype (0.5 -> 0), as PyTorch does
    C("addcmul", lambda t, x, y, w: t.addcmul(x, y, w, value=0.5),
      lambda a, b, c: a + np.asarray(0.5).astype(a.dtype) * b * c, ("x", "y", "w"), allow="uif"),
    C("addcmul_int_value", lambda t, x, y, w: t.addcmul(x, y, w, value=3), lambda a, b, c: a + 3 * b * c,
      ("x", "y", "x"), allow="uif"),
    C("addcdiv", lambda t, x, y, w: t.addcdiv(x, y, w, value=-2.0), lambda a, b, c: a + -2.0 * b / c,
      ("x", "y", "w")),
    C("isclose", lambda t, x, y: t.isclose(x, y), lambda a, b: np.isclose(a, b, 1e-5, 1e-8), ("x", "c"),
      kind="bool", allow="buif"),
    C("isclose_equal_nan", lambda t, x, y: t.isclose(x, y, equal_nan=True),
      lambda a, b: np.isclose(a, b, 1e-5, 1e-8, equal_nan=True), ("x", "c"), kind="bool", allow="buif"),
    C("isclose_tols", lambda t, x, y: t.isclose(x, y, rtol=1e-3, atol=0.1),
      lambda a, b: np.isclose(a, b, 1e-3, 0.1), ("x", "c"), kind="bool", allow="buif"),
    C("isclose_zero_tols", lambda t, x, y: t.isclose(x, y, rtol=0, atol=0), np.equal, ("x", "c"), kind="bool",
      allow="buif"),
]
CASE_BY_NAME = {c.name: c for c in CASES}
# ops whose integer results come out of integer arithmetic: numpy in the dtype is the reference
_INT_EXACT = {"fmax", "fmin", "clamp_min", "clamp_max_scalar", "hardtanh", "hardtanh_bounds", "relu6", "relu",
              "nan_to_num", "nan_to_num_values", "addcmul", "addcmul_int_value", "isclose", "isclose_equal_nan",
              "isclose_tols", "isclose_zero_tols"}


def _params():
    return [pytest.param(c, d, id=f"{c.name}-{d}") for c in CASES for d in DTYPES]


def _skip_fp64(device, *dtypes):
    if "float64" in dtypes and not fp64_ok(device):
        pytest.skip("the device lacks cl_khr_fp64")


def _operands(case, dtype, device, layout="contiguous"):
    arrays = [_data(a, dtype) if isinstance(a, str) else a for a in case.args]
    tensors = [make(a, device, layout) if isinstance(s, str) else a for s, a in zip(case.args, arrays)]
    return arrays, tensors


def _result_dtype(case, tensors):
    """The result dtype, or None where PyTorch has no kernel (judged on the tensors' dtype: a Python scalar
    operand promotes the result but doesn't make an integer activation legal)."""
    if D.result_type(*[t for t in tensors if P.is_tensor(t)]).kind not in case.allow:
        return None
    rt = D.result_type(*tensors)
    if case.kind == "bool":
        return D.bool
    return D.float_of(rt) if case.kind == "float" else rt


def _reference(case, arrays, result: D.dtype):
    """The reference in float64 over operands rounded to the compute dtype, then cast to the result dtype."""
    with np.errstate(all="ignore"):
        if case.ref is None:  # nan_to_num's defaults are the limits of the input's own dtype
            return np.nan_to_num(arrays[0])
        if case.kind == "bool":
            conv = [a.astype(np.float64) if isinstance(a, np.ndarray) else a for a in arrays]
        elif result.kind != "f" and case.name in _INT_EXACT:
            return np.asarray(case.ref(*arrays)).astype(result.np)
        else:
            conv = [a.astype(result.np).astype(np.float64) if isinstance(a, np.ndarray) else a for a in arrays]
        return np.asarray(case.ref(*conv)).astype(result.np)


TOL = {"float16": (4e-3, 1e-3), "float32": (1e-4, 1e-6), "float64": (1e-9, 1e-12)}


def _assert_values(got: np.ndarray, want: np.ndarray, signed_zeros=False):
    assert got.shape == want.shape and got.dtype == want.dtype, (got.dtype, want.dtype)
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
        return
    rtol, atol = TOL[want.dtype.name]
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)
    if signed_zeros:
        zeros = (want == 0) & (got == 0)
        assert np.array_equal(np.signbit(want[zeros]), np.signbit(got[zeros])), "signs of zero differ"


@pytest.mark.parametrize("case,dtype", _params())
def test_forward(device, case, dtype):
    """dtype and values against the float64 reference; dtypes PyTorch rejects raise."""
    _skip_fp64(device, dtype)
    arrays, tensors = _operands(case, dtype, device)
    result = _result_dtype(case, tensors)
    if result is None:
        with pytest.raises((RuntimeError, TypeError)):
            case.fn(CL, *tensors)
        return
    got = case.fn(CL, *tensors)
    assert got.device == clgrad.device(device)
    _assert_values(to_numpy(got), _reference(case, arrays, result))


@pytest.mark.parametrize("case,dtype", _params())
def test_forward_matches_torch(device, case, dtype):
    """The same table against PyTorch: result dtype, values and signed zeros, or the same exception class."""
    torch, ns = _torch_ns()
    _skip_fp64(device, dtype)
    arrays, tensors = _operands(case, dtype, device)
    t_ops = [torch.from_numpy(np.ascontiguousarray(a)) if isinstance(s, str) else a for s, a in zip(case.args, arrays)]
    try:
        want = case.fn(ns, *t_ops)
    except (RuntimeError, TypeError, ValueError) as exc:
        with pytest.raises(type(exc)):
            case.fn(CL, *tensors)
        return
    got, want = to_numpy(case.fn(CL, *tensors)), want.numpy()
    if case.torch_finite:
        keep = np.isfinite(arrays[0].astype(np.float64))
        got, want = got[keep], want[keep]
    _assert_values(got, want, signed_zeros=case.zero_signs)


# ---- layouts and broadcasting: float32, one case per op ----------------------------------------------
LAYOUT_CASES = [c for c in CASES if not c.name.endswith(("_alpha", "_slope", "_beta", "_bounds", "_values",
                                                          "_high_weight", "_int_value", "_tols", "_equal_nan"))]


@pytest.mark.parametrize("layout", ["transposed", "sliced"])
@pytest.mark.parametrize("case", LAYOUT_CASES, ids=[c.name for c in LAYOUT_CASES])
def test_layouts(device, case, layout):
    arrays, tensors = _operands(case, "float32", device, layout)
    _assert_values(to_numpy(case.fn(CL, *tensors)), _reference(case, arrays, _result_dtype(case, tensors)))


BROADCAST = [c for c in LAYOUT_CASES if sum(isinstance(a, str) for a in c.args) > 1]


@pytest.mark.parametrize("case", BROADCAST, ids=[c.name for c in BROADCAST])
def test_broadcast(device, case):
    # the first tensor operand is a (4, 5) block; the others a row (5,) and a column (4, 1) in turn
    arrays, _ = _operands(case, "float32", device)
    shaped = []
    k = 0
    for spec, a in zip(case.args, arrays):
        if isinstance(spec, str):
            a = a if k == 0 else (a[1] if k % 2 else a[:, 2:3])
            k += 1
        shaped.append(a)
    tensors = [make(a, device, "sliced") if isinstance(s, str) else a for s, a in zip(case.args, shaped)]
    want = _reference(case, [np.broadcast_to(a, (4, 5)) if isinstance(a, np.ndarray) else a for a in shaped],
                      _result_dtype(case, tensors))
    _assert_values(to_numpy(case.fn(CL, *tensors)), want)


def test_zero_size(device):
    x = clgrad.zeros(0, 3, device=device)
    for fn in (CL.gelu, CL.silu, CL.softplus, CL.nan_to_num, CL.erf, lambda t: CL.lerp(t, t, 0.5),
               lambda t: CL.addcmul(t, t, t), lambda t: CL.isclose(t, t)):
        assert fn(x).shape == (0, 3)
    assert CL.allclose(x, x) and CL.equal(x, x)


# ---- edge values -------------------------------------------------------------------------------------
EDGES = [  # (id, fn, input, expected): stability at huge magnitudes and PyTorch's answers at special values
    # (no float32 subnormals in the expected values: OpenCL devices may flush them)
    ("softplus_huge", CL.softplus, [1e30, -1e30, 88.0, -80.0, 1e4], [1e30, 0.0, 88.0, 1.8048513e-35, 1e4]),
    ("logsigmoid_huge", CL.logsigmoid, [1e30, -1e30, 50.0, -100.0, 0.0], [0.0, -1e30, -1.9287499e-22, -100.0,
                                                                             -0.6931472]),
    ("mish_huge", CL.mish, [1e30, -1e30, -1000.0, 1000.0], [1e30, -0.0, -0.0, 1000.0]),
    ("silu_huge", CL.silu, [1e30, -1e30, -50.0], [1e30, -0.0, -9.643749e-21]),
    ("gelu_huge", CL.gelu, [1e30, -1e30, -10.0], [1e30, -0.0, -0.0]),
    ("elu_neg_zero", CL.elu, [-0.0, -1e30, inf, -inf], [-0.0, -1.0, inf, -1.0]),
    ("hardsigmoid_inf_nan", CL.hardsigmoid, [inf, -inf, nan, -3.0, 3.0], [1.0, 0.0, nan, 0.0, 1.0]),
    ("hardtanh_inf_nan", CL.hardtanh, [inf, -inf, nan, -0.0], [1.0, -1.0, nan, -0.0]),
    ("nan_to_num_float32", CL.nan_to_num, [nan, inf, -inf, 1.0], [0.0, 3.4028235e38, -3.4028235e38, 1.0]),
    ("logit_bounds", CL.logit, [0.0, 1.0, -0.5, 1.5], [-inf, inf, nan, nan]),
    ("lerp_exact_end", lambda x: CL.lerp(x, x * 0 + 3.0, 1.0), [1.0, -7.0, 1e30], [3.0, 3.0, 3.0]),
]


@pytest.mark.parametrize("fn,values,expected", [e[1:] for e in EDGES], ids=[e[0] for e in EDGES])
def test_edge_values(device, fn, values, expected):
    got = fn(make(np.array(values, np.float32), device))
    assert_close(got, np.array(expected, np.float32), rtol=1e-5, atol=0)
    zeros = np.array(expected) == 0
    assert np.array_equal(np.signbit(to_numpy(got)[zeros]), np.signbit(np.array(expected, np.float32)[zeros]))


def test_nan_to_num_half_defaults(device):
    x = make(np.array([nan, inf, -inf, 2.0], np.float16), device)
    assert_close(CL.nan_to_num(x), np.array([0, 65504, -65504, 2], np.float16))
    assert_close(CL.nan_to_num(x, posinf=1e6), np.array([0, inf, -65504, 2], np.float16))  # rounds to half


def test_xlogy_zero_and_nan(device):
    x = make(np.array([0.0, 0.0, 0.0, 1.0, 2.0], np.float32), device)
    y = make(np.array([0.0, nan, -1.0, 0.0, 1.0], np.float32), device)
    assert_close(CL.xlogy(x, y), np.array([0.0, nan, 0.0, -inf, 0.0], np.float32))


def test_fmax_ignores_nan(device):
    a = make(np.array([nan, 1.0, nan, -inf], np.float32), device)
    b = make(np.array([2.0, nan, nan, -inf], np.float32), device)
    assert_close(CL.fmax(a, b), np.array([2.0, 1.0, nan, -inf], np.float32))
    assert_close(CL.fmin(a, b), np.array([2.0, 1.0, nan, -inf], np.float32))
    assert_close(clgrad.maximum(a, b), np.array([nan, nan, nan, -inf], np.float32))


# ---- isclose family on integers and bool, allclose, equal -------------------------------------------
def test_isclose_integers(device):
    a = make(np.array([1, 250, 3, 0], np.uint8), device)
    b = make(np.array([3, 5, 3, 255], np.uint8), device)
    # PyTorch measures integer differences in the default float dtype (no wrap-around, float32 rounding)
    assert_close(CL.isclose(a, b, rtol=0, atol=2), np.array([True, False, True, False]))
    i = make(np.array([100, -100, 7, 2**40, 2**40]), device)
    j = make(np.array([101, -99, 9, 2**40 + 1, 2**40 + 1]), device)
    assert_close(CL.isclose(i, j, rtol=0.01, atol=0), np.array([True, False, False, True, True]))
    assert_close(CL.isclose(i, j, rtol=0, atol=0), np.array([False, False, False, False, False]))
    big = make(np.array([16777217, -2**31], np.int32), device)
    assert_close(CL.isclose(big, make(np.array([16777216, 2**31 - 1], np.int32), device), rtol=0, atol=0.5),
                 np.array([True, False]))
    t, f = make(np.array([True, False, True]), device), make(np.array([True, True, False]), device)
    assert_close(CL.isclose(t, f, atol=1), np.array([True, True, True]))
    assert_close(CL.isclose(t, f), np.array([True, False, False]))


def test_allclose_and_equal(device):
    a = make(np.array([1.0, 2.0, nan], np.float32), device)
    b = make(np.array([1.0 + 1e-7, 2.0, nan], np.float32), device)
    assert CL.allclose(a, b, equal_nan=True) is True
    assert CL.allclose(a, b) is False
    assert CL.allclose(a[:2], b[:2]) is True
    assert CL.equal(a[:2], a[:2]) is True and CL.equal(a, a) is False  # NaN != NaN
    assert CL.equal(a[:2], b[:2]) is False
    assert CL.equal(a[:2], make(np.array([[1.0, 2.0]], np.float32), device)) is False  # shapes differ
    assert CL.equal(make(np.array([1, 2]), device), make(np.array([1.0, 2.0], np.float32), device)) is True


# ---- in-place forms ----------------------------------------------------------------------------------
INPLACE = [  # (id, in-place call on x (2, 3) float32 with y of the same shape, reference)
    ("lerp_", lambda x, y: x.lerp_(y, 0.25), lambda a, b: a + 0.25 * (b - a)),
    ("lerp_tensor_", lambda x, y: x.lerp_(y, y * 0 + 0.75), lambda a, b: b - (b - a) * 0.25),
    ("addcmul_", lambda x, y: x.addcmul_(y, y, value=2), lambda a, b: a + 2 * b * b),
    ("addcdiv_", lambda x, y: x.addcdiv_(y, y + 1, value=-1), lambda a, b: a - b / (b + 1)),
    ("nan_to_num_", lambda x, y: (x / 0).nan_to_num_(posinf=5.0, neginf=-5.0),
     lambda a, b: np.where(a > 0, 5.0, -5.0)),
    ("erf_", lambda x, y: x.erf_(), lambda a, b: _erf(a)),
    ("logit_", lambda x, y: (x / 20 + 0.5).logit_(), lambda a, b: _logit(a / 20 + 0.5)),
    ("xlogy_", lambda x, y: x.xlogy_(y.abs()), lambda a, b: _xlogy(a, np.abs(b))),
    ("clamp_min_", lambda x, y: x.clamp_min_(y), np.maximum),
    ("F.elu(inplace)", lambda x, y: CL.elu(x, 0.5, inplace=True), lambda a, b: _elu(a, 0.5)),
    ("F.elu_", lambda x, y: CL.elu_(x), lambda a, b: _elu(a)),
    ("F.leaky_relu_", lambda x, y: CL.leaky_relu_(x, 0.1), lambda a, b: np.where(a > 0, a, 0.1 * a)),
    ("F.hardtanh_", lambda x, y: CL.hardtanh_(x, -2.0, 2.0), lambda a, b: np.clip(a, -2, 2)),
    ("F.relu6(inplace)", lambda x, y: CL.relu6(x, inplace=True), lambda a, b: np.clip(a, 0, 6)),
    ("F.silu(inplace)", lambda x, y: CL.silu(x, inplace=True), lambda a, b: a / (1 + np.exp(-a))),
    ("F.hardswish(inplace)", lambda x, y: CL.hardswish(x, inplace=True), lambda a, b: a * _hardsigmoid(a)),
    ("F.mish(inplace)", lambda x, y: CL.mish(x, inplace=True), lambda a, b: a * np.tanh(np.log1p(np.exp(a)))),
    ("selu_", lambda x, y: CL.selu_(x), lambda a, b: _elu(a, SELU_ALPHA, SELU_SCALE)),
    ("celu_", lambda x, y: CL.celu_(x, 2.0), lambda a, b: _elu(a, 2.0, 1.0, 0.5)),
    ("relu_", lambda x, y: CL.relu_(x), lambda a, b: np.maximum(a, 0)),
]


@pytest.mark.parametrize("fn,ref", [e[1:] for e in INPLACE], ids=[e[0] for e in INPLACE])
def test_inplace(device, fn, ref):
    a = np.array([[-2.5, 0.5, 3.0], [-7.0, 1.5, 9.0]], np.float32)
    b = np.array([[1.0, -2.0, 4.0], [0.5, 2.0, -3.0]], np.float32)
    x, y = make(a, device, "transposed"), make(b, device)
    result = fn(x, y)
    with np.errstate(all="ignore"):
        want = np.asarray(ref(a.astype(np.float64), b.astype(np.float64))).astype(np.float32)
    assert_close(result, want, rtol=1e-5, atol=1e-6)


def test_inplace_returns_self(device):
    x = make(np.array([1.0, -1.0], np.float32), device)
    y = make(np.array([3.0, 3.0], np.float32), device)
    for call in (lambda: x.lerp_(y, 0.5), lambda: x.addcmul_(y, y), lambda: CL.elu(x, inplace=True),
                 lambda: CL.hardtanh_(x), lambda: x.nan_to_num_()):
        assert call() is x


def test_inplace_broadcast_shape_error(device):
    x = clgrad.ones(2, device=device)
    with pytest.raises(RuntimeError, match=r"output with shape \[2\] doesn't match the broadcast shape \[2, 2\]"):
        x.lerp_(clgrad.ones(2, 2, device=device), 0.5)


# ---- errors: PyTorch's classes and words ----------------------------------------------------------
def _wide(x):
    """x as float64; as float16 on a device without cl_khr_fp64 (the error cases need another float dtype, and
    float64 can't be there: test_errors then expects PyTorch's words for Half)."""
    return x.double() if fp64_ok(str(x.device)) else x.half()


ERRORS = [  # (id, fn on x = float32 ones(3), exception, message)
    ("lerp_end_dtype", lambda x: CL.lerp(x, _wide(x), 0.5), RuntimeError,
     "expected dtype float for `end` but got dtype double"),
    ("lerp_weight_dtype", lambda x: CL.lerp(x, x, x.half()), RuntimeError,
     "expected dtype float for `weight` but got dtype c10::Half"),
    ("lerp_int", lambda x: CL.lerp(x.long(), x.long(), 0.5), NotImplementedError, '"lerp" not implemented for'),
    ("lerp_scalar_end", lambda x: CL.lerp(x, 1.0, 0.5), TypeError, "must be Tensor"),
    ("isclose_dtypes", lambda x: CL.isclose(x, _wide(x)), RuntimeError, "Float did not match Double"),
    ("allclose_dtypes", lambda x: CL.allclose(x, _wide(x)), RuntimeError, "Float did not match Double"),
    ("isclose_rtol", lambda x: CL.isclose(x, x, rtol=-1), RuntimeError,
     "rtol must be greater than or equal to zero, but got -1"),
    ("isclose_atol", lambda x: CL.isclose(x, x, atol=-1), RuntimeError,
     "atol must be greater than or equal to zero, but got -1"),
    ("isclose_scalar", lambda x: CL.isclose(x, 1.0), TypeError,
     "isclose(): argument 'other' (position 2) must be Tensor, not float"),
    ("addcdiv_int", lambda x: CL.addcdiv(x, x.long(), x.long()), RuntimeError,
     "Integer division with addcdiv is no longer supported"),
    ("addcmul_bool", lambda x: CL.addcmul(x.bool(), x.bool(), x.bool()), NotImplementedError,
     "\"addcmul\" not implemented for 'Bool'"),
    ("gelu_approximate", lambda x: CL.gelu(x, approximate="bad"), RuntimeError,
     "approximate argument must be either none or tanh."),
    ("gelu_int", lambda x: CL.gelu(x.long()), NotImplementedError, "\"gelu\" not implemented for 'Long'"),
    ("gelu_tanh_int", lambda x: CL.gelu(x.int(), approximate="tanh"), NotImplementedError, "\"gelu\" not implemented"),
    ("elu_bool", lambda x: CL.elu(x.bool()), NotImplementedError, "\"elu\" not implemented for 'Bool'"),
    ("celu_alpha_0", lambda x: CL.celu(x, alpha=0.0), RuntimeError, "ZeroDivisionError: alpha cannot be 0 for CELU"),
    ("hardtanh_bounds", lambda x: CL.hardtanh(x, 2.0, 1.0), ValueError, "min_val cannot be greater than max_val"),
    ("hardtanh_uint8", lambda x: CL.hardtanh(x.byte()), RuntimeError,
     "cannot do hardtanh on an unsigned type with negative limits"),
    ("hardtanh_bool", lambda x: CL.relu6(x.bool()), RuntimeError, "Bool inputs not supported for hardtanh"),
    ("activation_scalar", lambda x: CL.silu(1.0), TypeError, "must be Tensor, not float"),
    ("logit_into_int", lambda x: x.long().logit_(), RuntimeError, "result type Float can't be cast"),
]


@pytest.mark.parametrize("fn,exc,message", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors(device, fn, exc, message):
    if not fp64_ok(device):  # see _wide
        message = message.replace("double", "c10::Half").replace("Double", "Half")
    with pytest.raises(exc) as info:
        fn(clgrad.ones(3, device=device))
    assert message in str(info.value)


def test_error_names_device(device):
    with pytest.raises(NotImplementedError, match=f"on device {device}"):
        CL.mish(clgrad.ones(2, dtype=clgrad.int32, device=device))


def test_functional_names_exist_in_torch():
    torch = pytest.importorskip("torch")
    missing = [n for n in M.FUNCTIONAL_ACTIVATIONS if not hasattr(torch.nn.functional, n)]
    assert not missing
    assert all(hasattr(torch, n) for n in M.TORCH_FUNCS)
    new = ["erf", "erfc", "nan_to_num", "logit", "xlogy", "fmax", "fmin", "lerp", "addcmul", "addcdiv", "clamp_min",
           "clamp_max", *M.NO_INPLACE_FUNCS]
    assert all(n in M.FUNCS or n in M.NO_INPLACE_FUNCS for n in new)
    assert all(hasattr(torch, n) and hasattr(torch.Tensor, n) for n in new)
