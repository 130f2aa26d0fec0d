"""Elementwise ops on every device: one table line per op case, run over dtypes, layouts, broadcasting,
zero-size tensors and edge values.

References are numpy computing in the op's dtype semantics (float16 computes in float32 and rounds; integer
division, remainder, pow and shifts use Python integers wrapped to the dtype, as C arithmetic wraps), and
PyTorch itself where it is installed (dtypes, values and errors of the same table).
"""
from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

import clgrad
from clgrad import dtypes as D
from tests.conftest import fp64_ok
from tests.helpers import LAYOUTS, assert_close, make, to_numpy

ALL = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64")
# float-valued math of integer inputs promotes to float32; one integer of each width class is enough
MATH = ("bool", "uint8", "int32", "float16", "float32", "float64")
NUM = "uif"  # kinds an op is defined for when it rejects bool
INT = "bui"
inf, nan = np.inf, np.nan


# ---- edge data: 12 values per dtype, laid out as (3, 4) ------------------------------------------
def _ints(dt, pattern):
    info = np.iinfo(dt)
    lo, hi = int(info.min), int(info.max)
    return np.array([{"MIN": lo, "MAX": hi}.get(v, v) for v in pattern], dtype=dt)


def _data(letter: str, dtype: str) -> np.ndarray:
    dt = np.dtype(dtype)
    if letter == "c":  # a where-condition
        return np.array([1, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0, 1], bool).reshape(3, 4)
    if dt.kind == "b":
        x = {"x": [1, 0, 1, 0, 1, 1, 0, 1, 0, 0, 1, 0], "y": [1, 1, 0, 0, 1, 0, 1, 1, 0, 1, 0, 0]}
        return np.array(x.get(letter, x["x"]), bool).reshape(3, 4)
    if dt.kind == "f":
        x = {
            "x": [0.0, -0.0, 1.5, -2.5, inf, -inf, nan, 7.0, -3.0, 0.5, -7.25, 2.0],
            "y": [2.0, -0.0, 0.0, 2.0, inf, 3.0, 1.0, -inf, nan, -2.0, 2.0, -4.0],
            "m": [0.0, -0.0, 0.25, -0.5, inf, -inf, nan, 3.0, -3.0, 0.75, -1.0, 1.0],
            "s": [0.0, 1.0, 3.0, 2.0, 5.0, -1.0, 2.0, 4.0, 7.0, 1.0, 0.0, 4.0],
        }
        return np.array(x[letter], dt).reshape(3, 4)
    bits = dt.itemsize * 8
    if dt.kind == "u":
        x = {
            "x": [0, 1, 2, 3, 250, 255, 7, 8, 100, 128, 200, 17],
            "y": [0, 3, 2, 9, 10, 1, 255, 2, 7, 128, 0, 4],
            "m": [0, 1, 2, 3, 250, 255, 7, 8, 100, 128, 200, 17],
            "s": [0, 1, 3, 7, 8, 9, 2, 5, 200, 1, 0, 4],
        }
        return np.array(x[letter], dt).reshape(3, 4)
    x = {
        "x": [0, 1, -1, 3, -7, "MIN", "MAX", 5, -2, 100, -100, 7],
        "y": [0, -1, -1, 2, 3, -1, 2, 0, -3, 7, -7, 3],
        "m": [0, 1, -1, 3, -7, 2, 5, 10, -2, 100, -100, 7],
        "s": [0, 1, 3, bits - 1, bits, -1, 2, 5, bits + 3, 1, 0, 4],
    }
    return _ints(dt, x[letter]).reshape(3, 4)


# ---- references: Python integers wrapped to the dtype, numpy for floats -------------------------
def _wrap(values, dt: np.dtype) -> np.ndarray:
    bits = dt.itemsize * 8
    out = []
    for v in values:
        v &= (1 << bits) - 1
        if dt.kind == "i" and v >= 1 << (bits - 1):
            v -= 1 << bits
        out.append(v)
    return np.array(out, dtype=dt)


def int_ref(py_fn, float_fn):
    """A reference that applies ``py_fn`` to Python ints (then wraps) or ``float_fn`` to float arrays."""

    def ref(*xs):
        xs = np.broadcast_arrays(*[np.asarray(x) for x in xs])
        dt = xs[0].dtype
        if dt.kind == "f":
            return float_fn(*xs)
        bits = dt.itemsize * 8
        flat = [py_fn(bits, dt.kind == "i", *(int(v) for v in t)) for t in zip(*(x.reshape(-1) for x in xs))]
        return _wrap(flat, dt).reshape(xs[0].shape)

    return ref


def _trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _int_pow(a, b):
    if b >= 0:
        return a**b
    return 1 if a == 1 else ((-1 if b % 2 else 1) if a == -1 else 0)


def _torch_remainder(a, b):
    mod = np.fmod(a, b)
    return np.where((mod != 0) & ((b < 0) != (mod < 0)), mod + b, mod)


floordiv_ref = int_ref(lambda n, s, a, b: 0 if b == 0 else a // b, np.floor_divide)
truncdiv_ref = int_ref(lambda n, s, a, b: 0 if b == 0 else _trunc_div(a, b), lambda a, b: np.trunc(a / b))
remainder_ref = int_ref(lambda n, s, a, b: 0 if b == 0 else a % b, _torch_remainder)
fmod_ref = int_ref(lambda n, s, a, b: 0 if b == 0 else a - b * _trunc_div(a, b), np.fmod)
pow_ref = int_ref(lambda n, s, a, b: _int_pow(a, b), np.power)
lshift_ref = int_ref(lambda n, s, a, b: 0 if b < 0 or b >= n else a << b, None)
rshift_ref = int_ref(lambda n, s, a, b: a >> (n - 1 if s else n) if b < 0 or b >= n else a >> b, None)


def _floats(fn):
    """Rounding functions are the identity on integers."""
    return lambda a: a if a.dtype.kind in "iub" else fn(a)


def _sign(a):
    if a.dtype.kind == "b":
        return a
    return (a > 0).astype(a.dtype) - (a < 0).astype(a.dtype)  # PyTorch: sign(nan) is 0


def _clamp(a, lo=None, hi=None):
    if lo is not None:
        a = np.maximum(a, lo)
    return a if hi is None else np.minimum(a, hi)


# ---- the table ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable  # fn(lib, *operands): lib is clgrad or torch; operands are the tensors and scalars of args
    ref: Callable  # numpy reference over operands converted to the compute dtype
    args: tuple = ("x", "y")  # data letters (tensors) or Python scalars
    kind: str = "same"  # result dtype: "same" (the promoted dtype), "bool", "float" (ints promote to float)
    allow: str = "buif"  # kinds of the promoted dtype the op is defined for; others must raise
    dtypes: tuple = ALL
    promote: tuple | None = None  # operand positions that take part in promotion (default all)


def C(name, fn, ref, args=("x", "y"), **kw):
    return Case(name, fn, ref, tuple(args), **kw)


def U(name, ref, kind="float", dtypes=MATH, **kw):
    """A unary math function of the same name in clgrad and torch."""
    return Case(name, lambda t, x: getattr(t, name)(x), ref, ("m",) if kind == "float" else ("x",),
                kind=kind, dtypes=dtypes, **kw)


CASES = [
    # arithmetic, operators and their reflected and scalar forms
    C("add", lambda t, x, y: x + y, np.add),
    C("add_int_scalar", lambda t, x, s: x + s, np.add, ("x", 3)),
    C("radd_float_scalar", lambda t, s, x: s + x, np.add, (2.5, "x")),
    C("add_alpha", lambda t, x, y: t.add(x, y, alpha=2), lambda a, b: a + b * a.dtype.type(2)),
    C("sub", lambda t, x, y: x - y, np.subtract, allow=NUM),
    C("rsub_scalar", lambda t, s, x: s - x, np.subtract, (2, "x"), dtypes=ALL[1:]),  # bool: test_errors
    C("sub_alpha_float", lambda t, x, y: t.sub(x, y, alpha=0.5), lambda a, b: a - b * a.dtype.type(0.5), allow="f"),
    C("mul", lambda t, x, y: x * y, np.multiply),
    C("mul_float_scalar", lambda t, x, s: x * s, np.multiply, ("x", -1.5)),
    C("div", lambda t, x, y: x / y, np.true_divide, kind="float"),
    C("rdiv_scalar", lambda t, s, x: s / x, np.true_divide, (1, "x"), kind="float"),
    C("floordiv", lambda t, x, y: x // y, floordiv_ref, allow=NUM),
    C("div_floor", lambda t, x, y: t.div(x, y, rounding_mode="floor"), floordiv_ref, allow=NUM),
    C("div_trunc", lambda t, x, y: t.div(x, y, rounding_mode="trunc"), truncdiv_ref, allow=NUM),
    C("rfloordiv_scalar", lambda t, s, x: s // x, floordiv_ref, (7, "x"), allow=NUM),
    C("mod", lambda t, x, y: x % y, remainder_ref, allow=NUM),
    C("rmod_scalar", lambda t, s, x: s % x, remainder_ref, (-7, "x"), allow=NUM),
    C("fmod", lambda t, x, y: t.fmod(x, y), fmod_ref, allow=NUM),
    C("pow", lambda t, x, y: x**y, pow_ref, allow=NUM),
    C("pow_scalar", lambda t, x, s: x**s, pow_ref, ("x", 2)),
    C("rpow_scalar", lambda t, s, x: s**x, pow_ref, (2, "s"), allow=NUM),
    C("pow_float_scalar", lambda t, x, s: x**s, np.power, ("x", 1.5), kind="float"),
    C("maximum", lambda t, x, y: t.maximum(x, y), np.maximum),
    C("minimum", lambda t, x, y: t.minimum(x, y), np.minimum),
    # comparisons
    C("eq", lambda t, x, y: x == y, np.equal, kind="bool"),
    C("ne", lambda t, x, y: x != y, np.not_equal, kind="bool"),
    C("lt", lambda t, x, y: x < y, np.less, kind="bool"),
    C("le", lambda t, x, y: t.le(x, y), np.less_equal, kind="bool"),
    C("gt", lambda t, x, y: x > y, np.greater, kind="bool"),
    C("ge", lambda t, x, y: x >= y, np.greater_equal, kind="bool"),
    C("eq_scalar", lambda t, x, s: x == s, np.equal, ("x", 2), kind="bool"),
    C("lt_float_scalar", lambda t, x, s: x < s, np.less, ("x", 2.5), kind="bool"),
    # where and clamp
    C("where", lambda t, c, x, y: t.where(c, x, y), np.where, ("c", "x", "y"), promote=(1, 2)),
    C("where_scalar", lambda t, c, x, s: t.where(c, x, s), np.where, ("c", "x", 0), promote=(1, 2)),
    C("clamp", lambda t, x, lo, hi: t.clamp(x, lo, hi), _clamp, ("x", 1, 5)),
    C("clamp_min", lambda t, x, lo: t.clamp(x, min=lo), _clamp, ("x", 1)),
    C("clamp_max", lambda t, x, hi: x.clamp(max=hi), lambda a, hi: _clamp(a, None, hi), ("x", 2)),
    C("clamp_tensors", lambda t, x, y, z: t.clamp(x, y, z), _clamp, ("x", "y", "s"), allow=NUM),
    C("clamp_max_tensor", lambda t, x, y: t.clamp(x, max=y), lambda a, hi: _clamp(a, None, hi)),
    # logical, bitwise, shifts
    C("logical_and", lambda t, x, y: t.logical_and(x, y), np.logical_and, kind="bool"),
    C("logical_or", lambda t, x, y: t.logical_or(x, y), np.logical_or, kind="bool"),
    C("logical_xor", lambda t, x, y: t.logical_xor(x, y), np.logical_xor, kind="bool"),
    C("logical_not", lambda t, x: t.logical_not(x), np.logical_not, ("x",), kind="bool"),
    C("bitwise_and", lambda t, x, y: x & y, np.bitwise_and, allow=INT),
    C("bitwise_or", lambda t, x, y: x | y, np.bitwise_or, allow=INT),
    C("bitwise_xor", lambda t, x, y: t.bitwise_xor(x, y), np.bitwise_xor, allow=INT),
    C("bitwise_or_scalar", lambda t, x, s: x | s, np.bitwise_or, ("x", 6), allow=INT),
    C("bitwise_not", lambda t, x: t.bitwise_not(x), np.invert, ("x",), allow=INT),
    C("invert", lambda t, x: ~x, np.invert, ("x",), allow=INT),
    C("lshift", lambda t, x, y: x << y, lshift_ref, ("x", "s"), allow="ui"),
    C("rshift", lambda t, x, y: x >> y, rshift_ref, ("x", "s"), allow="ui"),
    C("rshift_scalar", lambda t, x, s: x >> s, rshift_ref, ("x", 1), allow="ui"),
    # unary functions that keep the dtype
    C("neg", lambda t, x: -x, np.negative, ("x",), allow=NUM),
    C("abs", lambda t, x: abs(x), np.abs, ("x",), allow=NUM),
    U("sign", _sign, kind="same", dtypes=ALL),
    U("relu", lambda a: np.where(a < 0, a.dtype.type(0), a), kind="same", dtypes=ALL, allow=NUM),
    U("square", np.square, kind="same", dtypes=ALL[1:]),
    U("floor", _floats(np.floor), kind="same", dtypes=ALL, allow=NUM),
    U("ceil", _floats(np.ceil), kind="same", dtypes=ALL, allow=NUM),
    U("round", _floats(np.rint), kind="same", dtypes=ALL, allow=NUM),
    U("trunc", _floats(np.trunc), kind="same", dtypes=ALL, allow=NUM),
    U("frac", lambda a: a - np.trunc(a), kind="same", dtypes=MATH, allow="f"),
    U("isnan", np.isnan, kind="bool", dtypes=MATH),
    U("isinf", np.isinf, kind="bool", dtypes=MATH),
    U("isfinite", np.isfinite, kind="bool", dtypes=MATH),
    # float-valued math
    U("sqrt", np.sqrt),
    U("rsqrt", lambda a: 1 / np.sqrt(a)),
    U("exp", np.exp),
    U("exp2", np.exp2),
    U("expm1", np.expm1),
    U("log", np.log),
    U("log2", np.log2),
    U("log10", np.log10),
    U("log1p", np.log1p),
    U("sin", np.sin),
    U("cos", np.cos),
    U("tan", np.tan),
    U("asin", np.arcsin),
    U("acos", np.arccos),
    U("atan", np.arctan),
    U("sinh", np.sinh),
    U("cosh", np.cosh),
    U("tanh", np.tanh),
    U("sigmoid", lambda a: 1 / (1 + np.exp(-a))),
    U("reciprocal", lambda a: 1 / a),
    C("atan2", lambda t, x, y: t.atan2(x, y), np.arctan2, kind="float", dtypes=MATH),
    C("hypot", lambda t, x, y: t.hypot(x, y), np.hypot, kind="float", dtypes=MATH, allow="f"),
    C("copysign", lambda t, x, y: t.copysign(x, y), np.copysign, kind="float", dtypes=MATH),
]
CASE_IDS = [c.name for c in CASES]


def _table_params():
    return [pytest.param(c, d, id=f"{c.name}-{d}") for c in CASES for d in c.dtypes]


def _skip_fp64(device, *dtypes):
    if "float64" in dtypes and not fp64_ok(device):
        pytest.skip("the device lacks cl_khr_fp64")


def _compute_array(value, compute: D.dtype) -> np.ndarray:
    """An operand converted to the compute dtype as PyTorch converts it (float16 through half to float32)."""
    arr = np.asarray(value)
    with np.errstate(all="ignore"):
        if compute is D.float16:  # tensors round to half; Python scalars stay unrounded (opmath)
            return (arr.astype(np.float16) if isinstance(value, np.ndarray) else arr).astype(np.float32)
        return arr.astype(compute.np)


def _operands(case, dtype, device):
    arrays = [_data(a, "bool" if a == "c" else dtype) if isinstance(a, str) else a for a in case.args]
    if case.name in DIVISIONS and np.dtype(dtype).kind in "biu":  # integer division by zero raises (as in torch)
        arrays = [np.where(a == 0, a.dtype.type(2), a) if isinstance(s, str) else a for s, a in zip(case.args, arrays)]
    tensors = [make(a, device) if isinstance(spec, str) else a for spec, a in zip(case.args, arrays)]
    return arrays, tensors


def _expected(case, arrays, tensors):
    promote = range(len(tensors)) if case.promote is None else case.promote
    rt = D.result_type(*(tensors[i] for i in promote))
    if rt.kind not in case.allow:
        return rt, None
    compute = D.float_of(rt) if case.kind == "float" else rt
    result = D.bool if case.kind == "bool" else compute
    conv = [_compute_array(a, compute) if i in promote else a for i, a in enumerate(arrays)]
    with np.errstate(all="ignore"):
        out = np.asarray(case.ref(*conv))
        return rt, out.astype(result.np)


@pytest.mark.parametrize("case,dtype", _table_params())
def test_op(device, case, dtype):
    """Shape, dtype and values against numpy; dtypes an op doesn't implement raise."""
    _skip_fp64(device, dtype)
    arrays, tensors = _operands(case, dtype, device)
    rt, expected = _expected(case, arrays, tensors)
    if expected is None:  # the op has no kernel for this dtype (the messages are checked in test_errors)
        with pytest.raises((RuntimeError, TypeError)):
            case.fn(clgrad, *tensors)
        return
    got = case.fn(clgrad, *tensors)
    assert got.device == clgrad.device(device)
    assert_close(got, expected)


DIVISIONS = {"floordiv", "div_floor", "div_trunc", "rfloordiv_scalar", "mod", "rmod_scalar", "fmod"}


def _torch_operands(torch, case, dtype, device):
    arrays, tensors = _operands(case, dtype, device)
    if case.name in DIVISIONS and np.dtype(dtype).kind in "biu":
        # PyTorch's CPU kernels raise on integer division by zero and trap on INT_MIN / -1: keep them out
        # (test_edge_values covers them against numpy)
        for k, (spec, a) in enumerate(zip(case.args, arrays)):
            if isinstance(spec, str):
                arrays[k] = np.where((a == 0) | (a == -1), a.dtype.type(2), a)
                tensors[k] = make(arrays[k], device)
    t_ops = [torch.from_numpy(np.ascontiguousarray(a)) if isinstance(s, str) else a for s, a in zip(case.args, arrays)]
    return tensors, t_ops


@pytest.mark.parametrize("case,dtype", _table_params())
def test_op_matches_torch(device, case, dtype):
    """The same table against PyTorch (cpu): result dtype, values (signed zeros too) or the error class."""
    torch = pytest.importorskip("torch")
    _skip_fp64(device, dtype)
    tensors, t_ops = _torch_operands(torch, case, dtype, device)
    try:
        want = case.fn(torch, *t_ops)
    except (RuntimeError, TypeError) as exc:
        with pytest.raises(type(exc) if isinstance(exc, TypeError) else RuntimeError):
            case.fn(clgrad, *tensors)
        return
    got = case.fn(clgrad, *tensors)
    assert got.dtype.name == str(want.dtype).split(".")[1]
    w, g = want.numpy(), to_numpy(got)
    if w.dtype.kind == "f":
        tol = {2: 2e-3, 4: 2e-5, 8: 1e-10}[w.itemsize]
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol, equal_nan=True)
        zeros = (w == 0) & (g == 0)
        assert np.array_equal(np.signbit(w[zeros]), np.signbit(g[zeros])), "signs of zero differ"
    else:
        np.testing.assert_array_equal(g, w)


# ---- layouts: every pair of memory layouts, including C-order with F-order ------------------------
LAYOUT_OPS = {
    "add": (lambda x, y: x + y, np.add),
    "where": (lambda x, y: clgrad.where(x > y, x, y), lambda a, b: np.where(a > b, a, b)),
    "lt": (lambda x, y: x < y, np.less),
    "clamp": (lambda x, y: clgrad.clamp(x, y, 1.0), lambda a, b: np.minimum(np.maximum(a, b), np.float32(1))),
}


@pytest.mark.parametrize("lb", LAYOUTS)
@pytest.mark.parametrize("la", LAYOUTS)
@pytest.mark.parametrize("op", list(LAYOUT_OPS))
def test_layouts(device, op, la, lb):
    fn, ref = LAYOUT_OPS[op]
    a, b = np.random.randn(5, 7).astype(np.float32), np.random.randn(5, 7).astype(np.float32)
    assert_close(fn(make(a, device, la), make(b, device, lb)), ref(a, b))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["int32", "float16", "float64"])
def test_layouts_unary_and_scalar(device, dtype, layout):
    _skip_fp64(device, dtype)
    a = _data("x", dtype)
    x = make(a, device, layout)
    assert_close(x * 3, (a.astype(np.float32) * 3).astype(dtype) if dtype == "float16" else a * a.dtype.type(3))
    assert_close(abs(x), np.abs(a))


def test_layouts_3d_permuted(device):
    # permutations that don't coalesce keep 3 dims in the kernel; mix them with a broadcast operand
    a = np.random.randn(4, 3, 5).astype(np.float32)
    b = np.random.randn(5, 3, 4).astype(np.float32)
    c = np.random.randn(3, 1).astype(np.float32)
    x = make(a, device).permute(2, 1, 0)  # shape (5, 3, 4)
    y = make(np.ascontiguousarray(b.transpose(1, 0, 2)), device).permute(1, 0, 2)  # (5, 3, 4), non-contiguous
    z = make(c, device, "sliced")
    assert_close(x * y - z, a.transpose(2, 1, 0) * b - c)


def test_output_layouts(device):
    # writing through strided views: a transposed and a sliced output
    a, b = np.random.randn(4, 6).astype(np.float32), np.random.randn(6, 4).astype(np.float32)
    base = make(np.zeros((4, 6), np.float32), device, "transposed")  # F-ordered (4, 6)
    assert not base.is_contiguous()
    clgrad.add(make(a, device), make(b, device).T, out=base)
    assert_close(base, a + b.T)
    big = clgrad.zeros(8, 12, device=device)
    view = big[::2, ::2]
    view.mul_(0).add_(make(a, device, "offset"))
    expected = np.zeros((8, 12), np.float32)
    expected[::2, ::2] = a
    assert_close(big, expected)


# ---- broadcasting, 0-dim tensors, zero-size tensors --------------------------------------------
def _zero_dim(value, dtype, device):
    t = clgrad.tensor(value, dtype=getattr(clgrad, dtype), device=device)
    assert t.dim() == 0
    return t


def test_broadcast_row_column(device):
    a, b = np.arange(3, dtype=np.float32).reshape(3, 1), np.arange(4, dtype=np.float32).reshape(1, 4)
    assert_close(make(a, device) + make(b, device), a + b)
    assert_close(make(a, device) * make(b, device, "offset"), a * b)
    assert_close(clgrad.where(make(a, device) > 0, make(b, device), make(a, device)), np.where(a > 0, b, a))
    assert_close(make(np.arange(4), device) - make(a.astype(np.int64), device), np.arange(4) - a.astype(np.int64))


def test_broadcast_leading_dims(device):
    a, b = np.random.randn(2, 1, 4).astype(np.float32), np.random.randn(3, 1).astype(np.float32)
    assert_close(make(a, device, "sliced") + make(b, device, "transposed"), a + b)
    # a transposed column broadcast against rows
    c = np.random.randn(1, 5).astype(np.float32)
    assert_close(make(c, device).T * make(c, device), c.T * c)


def test_zero_dim_operands(device):
    x = make(np.array([[1, 2, 3], [4, 5, 6]], np.int8), device)
    s = _zero_dim(100, "int64", device)
    got = x + s  # a 0-dim tensor of a higher dtype of the same category doesn't promote
    assert_close(got, np.array([[101, 102, 103], [104, 105, 106]], np.int8))
    assert_close(x * _zero_dim(0.5, "float32", device), np.array([[0.5, 1, 1.5], [2, 2.5, 3]], np.float32))
    both = _zero_dim(3, "int32", device) * _zero_dim(2, "int16", device)
    assert both.shape == () and both.dtype is clgrad.int32 and both.item() == 6
    assert_close(clgrad.where(_zero_dim(True, "bool", device), x, 0), x.cpu().numpy())


def test_zero_dim_cpu_tensor_joins_any_device(device):
    # a 0-dim cpu tensor takes part as a 0-dim tensor (promotion) and travels as a scalar
    x = make(np.array([1.0, 2.0, 3.0], np.float16), device)
    s = _zero_dim(2049.0, "float32", "cpu")
    got = x + s
    assert got.device == clgrad.device(device) and got.dtype is clgrad.float16
    # PyTorch converts the operand to float16 first: 2049 -> 2048
    assert_close(got, (np.array([1, 2, 3], np.float32) + np.float32(2048)).astype(np.float16))
    cond = _zero_dim(False, "bool", "cpu")
    assert_close(clgrad.where(cond, x, s), np.full(3, 2048, np.float16))
    i = make(np.array([250, 3], np.uint8), device)
    assert_close(i + _zero_dim(10, "int64", "cpu"), np.array([4, 13], np.uint8))


def test_half_compute_rounds_operands(device):
    # int32 + float16 -> float16, the int converted to float16 before adding (as PyTorch does)
    x = make(np.array([2049, 4097, 7, -65536], np.int32), device)
    h = make(np.array([1.0, 2.0, 0.5, 1.0], np.float16), device)
    expected = (np.array([2048, 4096, 7, -np.inf], np.float32) + h.cpu().numpy().astype(np.float32)).astype(np.float16)
    assert_close(x + h, expected)
    # a Python float is used unrounded (PyTorch's opmath scalar): 3e-8 rounds to the smallest subnormal
    tiny = make(np.array([3.0, 1.0], np.float16), device) * 1e-8
    assert to_numpy(tiny).tolist() == np.array([3e-8, 1e-8], np.float32).astype(np.float16).tolist()


MIXED = [  # (dtype a, dtype b, op): mixed-dtype operands in one kernel
    ("int32", "float16", operator.add), ("uint8", "int8", operator.mul), ("bool", "float32", operator.mul),
    ("int64", "float64", operator.truediv), ("int16", "uint8", operator.floordiv), ("float16", "float32", operator.lt),
    ("bool", "int32", operator.and_), ("int8", "int64", operator.mod),
]


@pytest.mark.parametrize("da,db,op", MIXED, ids=[f"{a}-{b}-{o.__name__}" for a, b, o in MIXED])
def test_mixed_dtypes(device, da, db, op):
    _skip_fp64(device, da, db)
    a, b = _data("x", da), _data("s", db)
    b = np.where(b == 0, b.dtype.type(1), b)
    x, y = make(a, device), make(b, device, "transposed")
    rt = D.result_type(x, y)
    compute = D.float_of(rt) if op is operator.truediv else rt
    ca, cb = _compute_array(a, compute), _compute_array(b, compute)
    ref = {operator.floordiv: floordiv_ref, operator.mod: remainder_ref}.get(op, op)
    with np.errstate(all="ignore"):
        expected = np.asarray(ref(ca, cb))
    assert_close(op(x, y), expected.astype(np.bool_ if op is operator.lt else compute.np))


ZERO_SHAPES = [((0,), (0,)), ((3, 0), (1, 0)), ((0, 1), (1, 4)), ((2, 0, 3), (3,)), ((0,), ())]


@pytest.mark.parametrize("sa,sb", ZERO_SHAPES, ids=[f"{a}-{b}" for a, b in ZERO_SHAPES])
def test_zero_size(device, sa, sb):
    a, b = np.ones(sa, np.float32), np.zeros(sb, np.int64)
    x, y = make(a, device), clgrad.zeros(sb, dtype=clgrad.int64, device=device)
    assert_close(x + y, a + b.astype(np.float32))
    assert_close(x < y, a < b)
    assert_close(clgrad.where(x > 0, x, y), np.where(a > 0, a, b).astype(np.float32))
    assert_close(x.exp(), np.exp(a))
    assert_close(x.add_(1), a + 1)


@pytest.mark.oclgrind
@pytest.mark.parametrize("shape", [(512, 40), (256, 19), (48, 33), (37, 20), (3, 32, 17), (16, 5)], ids=str)
def test_transposed_operand_work_groups(device, shape):
    """An operand read across rows (a transposed view) goes through local-memory tiles on PoCL and Oclgrind where
    both sides are at least a tile long (tests/backends/test_elementwise_tiles.py), else picks 16 x 256 ... 16 x 16
    work-groups on CPU devices by how its row count divides (or the plain 64-wide groups when none does); every
    choice, the guarded column tail and a 3-D grid give numpy's values."""
    rng = np.random.default_rng(sum(shape))
    a = rng.standard_normal(shape[:-2] + shape[-1:] + shape[-2:-1]).astype(np.float32)
    b, c = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    ta = clgrad.tensor(a, device=device).transpose(-1, -2)
    got = ta * clgrad.tensor(b, device=device) + clgrad.tensor(c, device=device)
    np.testing.assert_allclose(to_numpy(got), np.swapaxes(a, -1, -2) * b + c, rtol=1e-6, atol=1e-6)
    out = clgrad.empty(shape[:-2] + shape[-1:] + shape[-2:-1], device=device).transpose(-1, -2)
    clgrad.add(clgrad.tensor(b, device=device), clgrad.tensor(c, device=device), out=out)  # a transposed output
    np.testing.assert_allclose(to_numpy(out), b + c, rtol=1e-6, atol=1e-6)
