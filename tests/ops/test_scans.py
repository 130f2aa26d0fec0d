"""The reduction tail, scans and sorting against numpy: dtypes x layouts x dims x lengths (0, 1, prime, longer than a
work-group, one long row, many short rows), ties (stability), NaN, PyTorch's errors, gradients by gradcheck in
float64, and one compact Oclgrind test that runs every kernel of scan.cl.mako and sort.cl.mako."""
from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import fp64_ok
from helpers import LAYOUTS, assert_close, grad_precision, make, quiet_gradcheck, rand, to_numpy

import clgrad
from clgrad.autograd import gradcheck, gradgradcheck
from clgrad.backends.opencl import scan as clscan

FLOATS = ("float16", "float32", "float64")
SORT_DTYPES = ("bool", "uint8", "int8", "int32", "int64") + FLOATS
SCAN_DTYPES = ("bool", "int8", "int32", "int64") + FLOATS


def _skip64(device, dtype):
    if dtype == "float64" and not fp64_ok(device):
        pytest.skip("no cl_khr_fp64")


def _data(shape, dtype, ties=True, nan=False):
    """Test data: few distinct values (ties) and, for floats, optionally NaN at every 7th place."""
    if dtype == "bool":
        return np.random.rand(*shape) > 0.5
    if dtype.startswith("float"):
        a = np.round(np.random.uniform(-4, 4, shape) * (2 if ties else 1000)).astype(dtype)
        if nan and a.size:
            a.reshape(-1)[::7] = np.nan
        return a
    lo = 0 if dtype.startswith("u") else -20
    return np.random.randint(lo, 20 if ties else 10**6 if dtype.endswith("64") else 100, size=shape).astype(dtype)


# ---- sort ----------------------------------------------------------------------------------------
def ref_order(a: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Stable order written independently of the backends: lexsort by (NaN-ness, rank of the value, position)."""
    a = np.moveaxis(a, axis, -1)
    nan = np.isnan(a) if a.dtype.kind == "f" else np.zeros(a.shape, bool)
    filled = np.where(nan, 0, a).astype(np.float64 if a.dtype.kind in "fb" else np.int64)
    rank = np.unique(filled, return_inverse=True)[1].reshape(a.shape)
    order = np.lexsort((-rank if descending else rank, ~nan if descending else nan), axis=-1)
    return np.moveaxis(order, -1, axis)


def check_sort(x, a, dim, descending):
    v, i = clgrad.sort(x, dim, descending)
    order = ref_order(a, dim, descending)
    assert_close(i, order)
    assert_close(v, np.take_along_axis(a, order, dim))


# (shape, dim): 0, 1, prime, serial (<= 16) / one work-group / several chunks per row, many short rows
SORT_SHAPES = [((0,), 0), ((1,), 0), ((7,), 0), ((3, 13), 1), ((37, 5), 0), ((4, 300), 1), ((2, 3, 41), 1),
               ((200, 3), 1)]


@pytest.mark.parametrize("dtype", SORT_DTYPES)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_dtypes(device, dtype, descending):
    _skip64(device, dtype)
    for shape, dim in SORT_SHAPES:
        a = _data(shape, dtype, nan=True)
        check_sort(clgrad.tensor(a, device=device), a, dim, descending)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_sort_layouts(device, layout, dim):
    a = _data((5, 19, 3), "float32", nan=True)
    check_sort(make(a, device, layout), a, dim, False)


@pytest.fixture(params=["row", "local"])
def sort_path(request, monkeypatch):
    """Run a test through both sort strategies: rows sorted by one work-item (CPU devices) or in work-groups."""
    monkeypatch.setattr(clscan, "ROW_SORT", request.param == "row")
    return request.param


@pytest.mark.parametrize("n", [2047, 2049, 5003])
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_sort_long_rows(device, n, dtype, sort_path):
    """Rows longer than one work-group's chunk: the local sort plus global merge passes, odd run counts."""
    a = _data((3, n), dtype, nan=True)
    for descending in (False, True):
        check_sort(make(a, device, "transposed"), a, 1, descending)


def test_sort_one_long_row(device, sort_path):
    a = _data((100_003,), "float32", ties=False)
    check_sort(clgrad.tensor(a, device=device), a, 0, False)
    idx = clgrad.argsort(clgrad.tensor(a, device=device), descending=True)
    assert_close(idx, ref_order(a, 0, True))


def test_sort_small_chunks(device, monkeypatch, sort_path):
    """Tiny chunks or row segments force many merge passes on short rows: stability across every merge."""
    monkeypatch.setattr(clscan, "MAX_CHUNK", 32)
    monkeypatch.setattr(clscan, "SEGMENT_MIN", 20)
    for n in (33, 64, 65, 100, 257):
        a = _data((3, n), "float32", nan=True)
        check_sort(clgrad.tensor(a, device=device), a, 1, n % 2 == 0)


def test_sort_edge_values(device):
    a = np.array([1.0, np.nan, 2.0, np.nan, -0.0, 0.0, np.inf, -np.inf, np.inf], np.float32)
    x = clgrad.tensor(a, device=device)
    assert_close(clgrad.sort(x).indices, np.array([7, 4, 5, 0, 2, 6, 8, 1, 3]))
    assert_close(clgrad.sort(x, descending=True).indices, np.array([1, 3, 6, 8, 2, 0, 4, 5, 7]))
    s = clgrad.sort(clgrad.tensor(3.0, device=device))
    assert s.values.shape == () and s.indices.item() == 0 and s.values.item() == 3.0
    assert_close(clgrad.msort(clgrad.tensor(a[:3], device=device)), np.array([1.0, 2.0, np.nan], np.float32))


# ---- topk / kthvalue / median --------------------------------------------------------------------
def _check_picked(values, indices, a, dim, keepdim=True):
    """The indices point at the values in the input (ties may pick any of the equal elements)."""
    got = np.take_along_axis(a, to_numpy(indices) if keepdim else np.expand_dims(to_numpy(indices), dim), dim)
    want = to_numpy(values) if keepdim else np.expand_dims(to_numpy(values), dim)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["int32", "float16", "float32"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("largest", [True, False])
def test_topk(device, dtype, layout, largest):
    for shape, dim, k in [((6, 29), 1, 5), ((29, 6), 0, 29), ((4, 300), -1, 1), ((4, 0), 1, 0), ((3, 7), 1, 0)]:
        a = _data(shape, dtype, nan=True)
        t = clgrad.topk(make(a, device, layout), k, dim, largest=largest)
        order = ref_order(a, dim, largest)
        want = np.take_along_axis(a, np.take(order, range(k), axis=dim), dim)
        assert_close(t.values, want)
        _check_picked(t.values, t.indices, a, dim)


@pytest.mark.parametrize("dtype", ["int64", "float16", "float32"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_kthvalue_median(device, dtype, keepdim):
    for shape, dim in [((5, 8), 1), ((5, 7), 0), ((1, 1), 1), ((3, 4, 301), 2), ((6,), 0)]:
        a = _data(shape, dtype)
        x = make(a, device, "transposed")
        srt = np.sort(a, axis=dim)
        n = a.shape[dim]
        for k in sorted({1, (n + 1) // 2, n}):
            kv = clgrad.kthvalue(x, k, dim, keepdim=keepdim)
            assert_close(kv.values, np.take(srt, [k - 1] if keepdim else k - 1, axis=dim))
            _check_picked(kv.values, kv.indices, a, dim, keepdim)
        md = x.median(dim, keepdim=keepdim)
        assert_close(md.values, np.take(srt, [(n - 1) // 2] if keepdim else (n - 1) // 2, axis=dim))
        _check_picked(md.values, md.indices, a, dim, keepdim)
        assert_close(clgrad.median(x), np.sort(a.reshape(-1))[(a.size - 1) // 2])


def test_median_nan(device):
    """A row with NaN has median NaN at the index of its first NaN (torch); other rows are unaffected."""
    a = np.array([[1.0, np.nan, 2.0, 3.0], [np.nan, 5.0, np.nan, 4.0], [4.0, 3.0, 2.0, 1.0]], np.float32)
    x = clgrad.tensor(a, device=device)
    m = clgrad.median(x, 1)
    assert_close(m.values, np.array([np.nan, np.nan, 2.0], np.float32))
    assert_close(m.indices, np.array([1, 0, 2]))
    assert math.isnan(clgrad.median(x).item())
    assert_close(clgrad.kthvalue(x, 4, 1).values, np.array([np.nan, np.nan, 4.0], np.float32))
    assert_close(clgrad.topk(x, 1).values, np.array([[np.nan], [np.nan], [4.0]], np.float32))
    assert math.isnan(clgrad.median(clgrad.zeros(0, device=device)).item())


# ---- cumsum / cumprod ----------------------------------------------------------------------------
def ref_scan(op: str, a: np.ndarray, dim: int, out_dtype) -> np.ndarray:
    acc = np.float64 if a.dtype.kind == "f" else np.int64
    fn = np.cumsum if op == "sum" else np.cumprod
    with np.errstate(all="ignore"):
        return fn(a.astype(acc), axis=dim).astype(out_dtype)


def check_scan(op, x, a, dim, dtype=None):
    got = (clgrad.cumsum if op == "sum" else clgrad.cumprod)(x, dim, dtype=dtype)
    out_dt = np.dtype(dtype) if dtype else a.dtype if a.dtype.kind == "f" else np.dtype(np.int64)
    want = ref_scan(op, a, dim, out_dt)
    if a.dtype.kind != "f" or a.size == 0:
        assert_close(got, want)
        return
    # the error of a running sum grows with the magnitudes summed so far
    scale = np.cumsum(np.abs(a.astype(np.float64)), axis=dim) + 1 if op == "sum" else np.abs(want)
    eps = {"float16": 2e-3, "float32": 1e-6, "float64": 1e-13}[a.dtype.name] * 8
    err = np.abs(to_numpy(got).astype(np.float64) - want.astype(np.float64))
    assert got.dtype.np == want.dtype and got.shape == want.shape
    tiny = np.finfo(want.dtype).smallest_subnormal if want.dtype.kind == "f" else 0  # products may underflow
    assert np.all((err <= eps * scale + tiny) | (np.isnan(want) & np.isnan(to_numpy(got).astype(np.float64))))


# serial rows, one work-group block, several chunks with the carry pass, many short rows
SCAN_SHAPES = [((0, 3), 1), ((1,), 0), ((7,), 0), ((3, 13), 1), ((2, 300), 1), ((3, 5003), 1), ((300, 5), 1),
               ((400, 3), 0)]


@pytest.mark.parametrize("dtype", SCAN_DTYPES)
@pytest.mark.parametrize("op", ["sum", "prod"])
def test_scan_dtypes(device, dtype, op):
    _skip64(device, dtype)
    for shape, dim in SCAN_SHAPES:
        if op == "prod" and dtype.startswith("float"):
            a = np.random.uniform(0.9, 1.1, shape).astype(dtype)
        elif op == "prod":
            a = np.random.choice(np.array([-1, 1, 1, 2], dtype=dtype if dtype != "bool" else "int8"), shape)
            a = a.astype(dtype)
        else:
            a = _data(shape, dtype)
        check_scan(op, clgrad.tensor(a, device=device), a, dim)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_scan_layouts(device, layout, dim):
    a = _data((4, 67, 3), "float32")
    check_scan("sum", make(a, device, layout), a, dim)
    b = _data((4, 67, 3), "int32")
    check_scan("prod", make(np.sign(b).astype(np.int32), device, layout), np.sign(b).astype(np.int32), dim)


def test_scan_long_row_and_dtype_arg(device):
    a = np.random.uniform(-1, 1, 100_003).astype(np.float32)
    check_scan("sum", clgrad.tensor(a, device=device), a, 0)
    b = _data((5, 9), "int32")
    check_scan("sum", clgrad.tensor(b, device=device), b, 1, dtype="float32")
    x = clgrad.tensor(2.5, device=device)
    assert clgrad.cumsum(x, 0).item() == 2.5 and clgrad.cumprod(x, -1).shape == ()
    y = clgrad.tensor([1.0, 2.0, 3.0], device=device)
    y.cumsum_(0)
    assert_close(y, np.array([1.0, 3.0, 6.0], np.float32))


def test_scan_small_chunks(device, monkeypatch):
    """A tiny work-group makes many chunks per row: the carry pass and a block-scanned carry."""
    monkeypatch.setattr(clscan, "WG", 4)
    for n in (65, 100, 1000):
        a = _data((2, n), "int64")
        check_scan("sum", clgrad.tensor(a, device=device), a, 1)
    # the reverse scan (cumsum's gradient) through the same passes, on a transposed gradient
    x = clgrad.zeros(2, 300, device=device, requires_grad=True)
    g = np.random.uniform(-1, 1, (2, 300)).astype(np.float32)
    clgrad.cumsum(x, 1).backward(make(g, device, "transposed"))
    want = np.flip(np.cumsum(np.flip(g.astype(np.float64), 1), 1), 1)
    assert_close(x.grad, want.astype(np.float32), rtol=1e-5, atol=1e-5)


# ---- unique / bincount ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int64", "float16", "float32"])
def test_unique(device, dtype):
    for shape in [(0,), (1,), (7, 3), (2, 1000)]:
        a = _data(shape, dtype)
        x = make(a, device, "transposed")
        u, inv, cnt = clgrad.unique(x, return_inverse=True, return_counts=True)
        ru, rinv, rcnt = np.unique(a, return_inverse=True, return_counts=True)
        assert_close(u, ru)
        assert_close(inv, rinv.reshape(a.shape))
        assert_close(cnt, rcnt)
        assert_close(x.unique(), ru)


def test_unique_nan(device):
    x = clgrad.tensor([np.nan, 1.0, np.nan, 1.0], device=device)
    u, inv, cnt = clgrad.unique(x, return_inverse=True, return_counts=True)
    assert_close(u, np.array([1.0, np.nan, np.nan], np.float32))
    assert_close(inv, np.array([1, 0, 2, 0]))
    assert_close(cnt, np.array([2, 1, 1]))


@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64"])
def test_bincount(device, dtype):
    for n, hi, minlength in [(1, 1, 0), (7, 3, 10), (1000, 50, 0), (3000, 3, 0)]:
        a = np.random.randint(0, hi, n).astype(dtype)
        x = make(a.reshape(1, n), device, "sliced")[0]
        assert_close(clgrad.bincount(x, minlength=minlength), np.bincount(a, minlength=minlength))
        w = np.random.uniform(-1, 1, n).astype(np.float32)
        got = clgrad.bincount(x, clgrad.tensor(w, device=device), minlength)
        assert_close(got, np.bincount(a, w, minlength).astype(np.float32), rtol=1e-4, atol=1e-4)
    ints = clgrad.tensor([0, 2], device=device), clgrad.tensor([1, 2], device=device)
    if fp64_ok(device):
        assert_close(clgrad.bincount(ints[0], weights=ints[1]), np.array([1.0, 0.0, 2.0]))
    else:  # integer weights give a float64 result, as in PyTorch, which this device cannot hold
        with pytest.raises(TypeError, match=f"{device}.*cl_khr_fp64"):
            clgrad.bincount(ints[0], weights=ints[1])
    assert_close(clgrad.bincount(clgrad.zeros(0, dtype=clgrad.int64, device=device), minlength=3), np.zeros(3, np.int64))


# ---- var / std / logsumexp / norm / count_nonzero / aminmax -----------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_var_std(device, dtype, layout):
    _skip64(device, dtype)
    a = rand((4, 5, 6), dtype)
    x = make(a, device, layout)
    a64 = a.astype(np.float64)
    tol = dict(rtol=5e-3, atol=5e-3) if dtype == "float16" else {}
    for dim, kw, ddof in [(None, {}, 1), (1, {}, 1), ((0, 2), {"correction": 0}, 0), (-1, {"unbiased": False}, 0),
                          ([0, 1], {"correction": 2}, 2)]:
        axis = None if dim is None else tuple(dim) if isinstance(dim, list) else dim
        for keepdim in (False, True):
            want = np.var(a64, axis=axis, ddof=ddof, keepdims=keepdim).astype(dtype)
            assert_close(clgrad.var(x, dim, keepdim=keepdim, **kw), want, **tol)
            assert_close(x.std(dim, keepdim=keepdim, **kw), np.sqrt(want.astype(np.float64)).astype(dtype), **tol)
            v, m = clgrad.var_mean(x, dim, keepdim=keepdim, **kw)
            assert_close(v, want, **tol)
            assert_close(m, np.mean(a64, axis=axis, keepdims=keepdim).astype(dtype), **tol)
    assert_close(clgrad.std(x, True), np.std(a64, ddof=1).astype(dtype), **tol)  # var(x, unbiased) form


def test_var_large_offset(device):
    """Two passes keep the variance of data far from 0 exact, where E[x^2] - E[x]^2 loses every digit."""
    a = (1e4 + np.random.standard_normal(200_000)).astype(np.float32)
    got = clgrad.var(clgrad.tensor(a, device=device)).item()
    assert abs(got - np.var(a.astype(np.float64), ddof=1)) < 1e-3
    h = (100 + np.random.standard_normal(5000)).astype(np.float16)
    got = clgrad.std(clgrad.tensor(h, device=device)).item()
    assert abs(got - np.std(h.astype(np.float64), ddof=1)) < 2e-2


def test_var_edges(device):
    with pytest.warns(UserWarning, match="degrees of freedom"):
        assert math.isnan(clgrad.var(clgrad.tensor([1.0], device=device)).item())
    with pytest.warns(UserWarning):
        assert math.isnan(clgrad.var(clgrad.zeros(0, device=device)).item())
    assert_close(clgrad.var(clgrad.zeros(2, 0, device=device), 0), np.zeros(0, np.float32))


@pytest.mark.parametrize("dtype", FLOATS + ("int64",))
def test_logsumexp(device, dtype):
    _skip64(device, dtype)
    a = rand((3, 4, 5), dtype) * (1 if dtype == "float16" else 100)
    out_dt = np.float32 if dtype == "int64" else np.dtype(dtype)
    for dim, keepdim in [(1, False), ((0, 2), True), (-1, True), ((), False)]:
        axis = None if dim == () else dim
        a64 = a.astype(np.float64)
        m = np.max(a64, axis=axis, keepdims=True)
        want = np.log(np.sum(np.exp(a64 - m), axis=axis, keepdims=True)) + m
        want = want if keepdim else np.squeeze(want, axis=axis)
        assert_close(clgrad.logsumexp(make(a, device, "transposed"), dim, keepdim), want.astype(out_dt))


def test_logsumexp_infinities(device):
    x = clgrad.tensor([[-np.inf, -np.inf], [np.inf, 1.0], [1000.0, 1000.0]], device=device)
    assert_close(clgrad.logsumexp(x, 1), np.array([-np.inf, np.inf, 1000 + np.log(2)], np.float32))
    assert_close(clgrad.logsumexp(clgrad.zeros(2, 0, device=device), 1), np.full(2, -np.inf, np.float32))


def ref_norm(a, p, axis, keepdim):
    a = np.abs(a.astype(np.float64))
    if p == np.inf:
        return np.max(a, axis=axis, keepdims=keepdim)
    if p == -np.inf:
        return np.min(a, axis=axis, keepdims=keepdim)
    if p == 0:
        return np.sum(a != 0, axis=axis, keepdims=keepdim).astype(np.float64)
    return np.sum(a**p, axis=axis, keepdims=keepdim) ** (1 / p)


@pytest.mark.parametrize("p", [2, "fro", 1, math.inf, -math.inf, 0, 3, 0.5])
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_norm(device, p, dtype):
    a = rand((3, 4, 5), dtype)
    a.reshape(-1)[::9] = 0
    x = make(a, device, "sliced")
    for dim, keepdim in [(None, False), (1, True), ((0, 2), False)]:
        axis = tuple(dim) if isinstance(dim, tuple) else dim
        want = ref_norm(a, 2 if p == "fro" else p, axis, keepdim).astype(dtype)
        tol = dict(rtol=5e-3, atol=5e-3) if dtype == "float16" else dict(rtol=1e-5, atol=1e-5)
        assert_close(clgrad.norm(x, p, dim, keepdim), want, **tol)
    assert_close(x.norm(dtype=clgrad.float32), np.float32(np.linalg.norm(a.astype(np.float64))), rtol=1e-3)


def test_count_nonzero_aminmax(device):
    a = rand((4, 6), "int32", -2, 2)
    x = make(a, device, "transposed")
    assert_close(clgrad.count_nonzero(x), np.int64(np.count_nonzero(a)))
    assert_close(clgrad.count_nonzero(x, dim=(0, 1)), np.int64(np.count_nonzero(a)))
    assert_close(x.count_nonzero(1), np.count_nonzero(a, axis=1).astype(np.int64))
    mm = clgrad.aminmax(x, dim=1)
    assert_close(mm.min, a.min(1))
    assert_close(mm.max, a.max(1))
    lo, hi = x.aminmax()
    assert lo.item() == a.min() and hi.item() == a.max()


# ---- errors --------------------------------------------------------------------------------------
ERRORS = [
    (lambda d: clgrad.var(clgrad.tensor([1, 2], device=d)), RuntimeError, "std and var only support floating point"),
    (lambda d: clgrad.var(clgrad.ones(2, device=d), unbiased=True, correction=0), TypeError, "both"),
    (lambda d: clgrad.norm(clgrad.tensor([1, 2], device=d)), RuntimeError, "Expected a floating point"),
    (lambda d: clgrad.norm(clgrad.zeros(0, device=d), math.inf), RuntimeError, "does not have an identity"),
    (lambda d: clgrad.cumsum(clgrad.ones(2, device=d), 1), IndexError, "Dimension out of range"),
    (lambda d: clgrad.topk(clgrad.ones(2, device=d), 3), RuntimeError, "selected index k out of range"),
    (lambda d: clgrad.kthvalue(clgrad.ones(2, device=d), 3), RuntimeError, "k out of range for dimension 0"),
    (lambda d: clgrad.kthvalue(clgrad.ones(2, device=d), 0), RuntimeError, "k out of range"),
    (lambda d: clgrad.kthvalue(clgrad.ones(0, device=d), 1), IndexError, "Expected reduction dim 0"),
    (lambda d: clgrad.median(clgrad.ones(0, 3, device=d), 0), IndexError, "Expected reduction dim 0"),
    (lambda d: clgrad.bincount(clgrad.tensor([-1, 2], device=d)), RuntimeError, "non-negative integral"),
    (lambda d: clgrad.bincount(clgrad.tensor([[1, 2]], device=d)), RuntimeError, "1-d non-negative"),
    (lambda d: clgrad.bincount(clgrad.ones(2, device=d)), NotImplementedError, "not implemented for 'Float'"),
    (lambda d: clgrad.bincount(clgrad.tensor([1], device=d), minlength=-1), RuntimeError, "minlength should be >= 0"),
    (lambda d: clgrad.bincount(clgrad.tensor([1], device=d), clgrad.ones(2, device=d)), RuntimeError, "same length"),
    (lambda d: clgrad.unique(clgrad.ones(2, device=d), dim=0), NotImplementedError, "dim"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors(device, case):
    fn, exc, match = ERRORS[case]
    with pytest.raises(exc, match=match):
        fn(device)


# ---- gradients -----------------------------------------------------------------------------------
def _x(device, shape, low=-2, high=2, zeros=()):
    a = np.random.uniform(low, high, shape)
    a.reshape(-1)[list(zeros)] = 0
    # float64, or float32 on a device without cl_khr_fp64 (checked with wider tolerances: grad_precision)
    return clgrad.tensor(a, dtype=getattr(clgrad, grad_precision(device)[0]), device=device, requires_grad=True)


# (name, function, shape, zero positions, node name); distinct values keep sort/median differentiable
GRADS = [
    ("var", lambda x: clgrad.var(x, 1), (3, 4), (), "VarBackward0"),
    ("var_all_c0", lambda x: x.var(correction=0), (3, 4), (), "VarBackward0"),
    ("std", lambda x: clgrad.std(x, (0, 2), keepdim=True), (3, 2, 4), (), "StdBackward0"),
    ("var_mean", lambda x: clgrad.var_mean(x, 0), (3, 4), (), "VarMeanBackward0"),
    ("std_mean", lambda x: clgrad.std_mean(x, 1), (3, 4), (), "StdMeanBackward0"),
    ("logsumexp", lambda x: clgrad.logsumexp(x, 1), (3, 4), (), "LogsumexpBackward0"),
    ("norm2", lambda x: clgrad.norm(x, dim=1), (3, 4), (), "LinalgVectorNormBackward0"),
    ("norm1", lambda x: clgrad.norm(x, 1), (3, 4), (), "LinalgVectorNormBackward0"),
    ("norm_inf", lambda x: clgrad.norm(x, math.inf, 0), (3, 4), (), "LinalgVectorNormBackward0"),
    ("norm3", lambda x: clgrad.norm(x, 3, 1, keepdim=True), (3, 4), (2,), "LinalgVectorNormBackward0"),
    ("norm_half", lambda x: clgrad.norm(x, 0.5), (5,), (), "LinalgVectorNormBackward0"),
    ("cumsum", lambda x: clgrad.cumsum(x, 1), (3, 5), (), "CumsumBackward0"),
    ("cumsum_dim0", lambda x: x.cumsum(0), (80, 2), (), "CumsumBackward0"),
    ("cumprod", lambda x: clgrad.cumprod(x, 1), (3, 5), (), "CumprodBackward0"),
    ("cumprod_zeros", lambda x: clgrad.cumprod(x, 1), (3, 5), (1, 7, 9, 12), "CumprodBackward0"),
    ("sort", lambda x: clgrad.sort(x, 0, descending=True).values, (5, 3), (), "SortBackward0"),
    ("msort", lambda x: clgrad.msort(x), (5, 3), (), "SortBackward0"),
    ("topk", lambda x: clgrad.topk(x, 2).values, (3, 5), (), "TopkBackward0"),
    ("kthvalue", lambda x: clgrad.kthvalue(x, 2, 0).values, (4, 3), (), "KthvalueBackward0"),
    ("median_dim", lambda x: clgrad.median(x, 1, keepdim=True).values, (3, 5), (), "MedianBackward1"),
    ("median", lambda x: clgrad.median(x), (3, 5), (), "MedianBackward0"),
]


@pytest.mark.parametrize("case", GRADS, ids=[c[0] for c in GRADS])
def test_gradcheck(device, case):
    _, fn, shape, zeros, node = case
    x = _x(device, shape, zeros=zeros)
    out = fn(x)
    assert (out[0] if isinstance(out, tuple) else out).grad_fn.name() == node
    assert quiet_gradcheck(gradcheck, fn, (x,), **grad_precision(device)[1])


@pytest.mark.parametrize("name", ["var", "logsumexp", "cumsum", "cumprod", "sort", "norm2"])
def test_gradgradcheck(device, name):
    _, fn, shape, zeros, _ = next(c for c in GRADS if c[0] == name)
    assert quiet_gradcheck(gradgradcheck, fn, (_x(device, shape, zeros=zeros),), **grad_precision(device)[1])


def test_grad_conventions(device):
    """PyTorch's subgradients: 0 for the 2-norm and std at 0, ties of the inf-norm and median() share."""
    z = clgrad.zeros(3, device=device, requires_grad=True)
    clgrad.norm(z).backward()
    assert_close(z.grad, np.zeros(3, np.float32))
    z = clgrad.zeros(3, device=device, requires_grad=True)
    clgrad.std(z).backward()
    assert_close(z.grad, np.zeros(3, np.float32))
    x = clgrad.tensor([3.0, -3.0, 1.0, 3.0], device=device, requires_grad=True)
    clgrad.norm(x, math.inf).backward()
    assert_close(x.grad, np.array([1, -1, 0, 1], np.float32) / 3)
    x = clgrad.tensor([1.0, 2.0, 2.0, 3.0], device=device, requires_grad=True)
    clgrad.median(x).backward()
    assert_close(x.grad, np.array([0, 0.5, 0.5, 0], np.float32))
    x = clgrad.tensor([1.0, 0.0, 2.0, 0.0], device=device, requires_grad=True)
    clgrad.cumprod(x, 0).sum().backward()  # torch: [1, 1 + 2, 0, 0]
    assert_close(x.grad, np.array([1.0, 3.0, 0.0, 0.0], np.float32))
    i = clgrad.sort(x).indices
    assert not i.requires_grad and i.dtype is clgrad.int64


# ---- the Oclgrind subset -------------------------------------------------------------------------
@pytest.mark.oclgrind
def test_every_kernel_oclgrind(device, capfd, monkeypatch):
    """One pass through every kernel of scan.cl.mako and sort.cl.mako at small sizes (tiny work-groups force the
    multi-chunk paths); under Oclgrind no invalid access or data race may be reported."""
    monkeypatch.setattr(clscan, "MAX_CHUNK", 16)
    monkeypatch.setattr(clscan, "SEGMENT_MIN", 20)
    monkeypatch.setattr(clscan, "WG", 4)
    a = np.random.uniform(-3, 3, (3, 71)).astype(np.float32)
    a[0, ::5] = np.nan
    x = make(a, device, "transposed")
    monkeypatch.setattr(clscan, "ROW_SORT", True)
    check_sort(x, a, 1, False)  # row segments sorted per work-item + merge passes
    check_sort(x[:1], a[:1], 1, False)  # one row, so it is split into segments
    monkeypatch.setattr(clscan, "ROW_SORT", False)
    check_sort(x, a, 1, True)  # local sort + merge passes (non-final and final)
    check_sort(x[:, :9], a[:, :9], 1, False)  # serial insertion sort
    check_sort(x[:, :30], a[:, :30], 1, False)  # one local chunk (final)
    check_scan("sum", x[:, :40], a[:, :40], 0)  # serial
    b = np.random.randint(-5, 5, (2, 150)).astype(np.int64)
    check_scan("sum", clgrad.tensor(b, device=device), b, 1)  # blocks, carry, block-scanned totals
    check_scan("prod", clgrad.tensor(np.sign(b[:, :70]), device=device), np.sign(b[:, :70]), 1)  # one block
    c = np.random.randint(0, 9, 40)
    u, inv, cnt = clgrad.unique(clgrad.tensor(c, device=device), return_inverse=True, return_counts=True)  # scatters
    ru, rinv, rcnt = np.unique(c, return_inverse=True, return_counts=True)
    assert_close(u, ru)
    assert_close(inv, rinv)
    assert_close(cnt, rcnt)
    w = np.random.uniform(0, 1, 40).astype(np.float32)
    got = clgrad.bincount(clgrad.tensor(c, device=device), clgrad.tensor(w, device=device))  # gather + bincount
    assert_close(got, np.bincount(c, w).astype(np.float32))
    assert_close(clgrad.median(x, 1).values, np.array([np.nan, *np.sort(a[1:], 1)[:, 35]], np.float32))
    if device != "cpu":
        clgrad.opencl.synchronize()
    err = capfd.readouterr().err
    assert not any(m in err for m in ("Invalid read", "Invalid write", "data race", "Uninitialized")), err[:4000]
