"""Reductions against numpy: ops x dtypes x layouts x dims x shapes, NaN, ties, errors, big sizes."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import fp64_ok
from helpers import LAYOUTS, assert_close, make, rand, to_numpy

import clgrad
from clgrad.backends.opencl import reduce as clreduce
from clgrad.backends.opencl import runtime

DTYPES = ("bool", "uint8", "int32", "int64", "float16", "float32", "float64")
INDEXED = ("max", "min", "argmax", "argmin")  # ops that return first-occurrence indices


def _acc(a: np.ndarray) -> np.dtype | None:
    return np.dtype(np.int64) if a.dtype.kind in "biu" else np.dtype(np.float32) if a.dtype == np.float16 else None


def _keep(x: np.ndarray, axis, ndim: int, keepdim: bool) -> np.ndarray:
    if not keepdim or ndim == 0:
        return x
    return np.expand_dims(x, tuple(range(ndim)) if axis is None else axis)


def reference(op: str, a: np.ndarray, dim, keepdim: bool):
    """numpy's answer with torch's dtype rules; max/min/with dim give (values, indices)."""
    axis = None if dim is None or dim == () or a.ndim == 0 else dim
    if op in ("sum", "prod"):
        acc = _acc(a)
        r = getattr(np, op)(a, axis=axis, keepdims=keepdim, dtype=acc)
        return r.astype(np.float16) if a.dtype == np.float16 else np.asarray(r)
    if op == "mean":
        r = np.mean(a, axis=axis, keepdims=keepdim, dtype=_acc(a))
        return np.asarray(r).astype(a.dtype)
    if op in ("amax", "amin"):
        return np.asarray(getattr(np, op[1:])(a, axis=axis, keepdims=keepdim))
    if op in ("max", "min") and dim is None:
        return np.asarray(getattr(np, op)(a))
    if op in ("all", "any"):
        if dim == ():  # torch reduces nothing here
            return (a != 0).astype(np.uint8 if a.dtype == np.uint8 else bool)
        r = np.asarray(getattr(np, op)(a != 0, axis=axis, keepdims=keepdim))
        return r.astype(np.uint8) if a.dtype == np.uint8 else r
    if op in ("argmax", "argmin"):
        flat = a.reshape(-1) if axis is None else a
        idx = np.asarray(getattr(np, op)(flat, axis=axis))
        return _keep(idx, axis, a.ndim, keepdim)
    # max/min with a dim
    idx = getattr(np, "arg" + op)(a, axis=axis)
    vals = np.take_along_axis(a, np.expand_dims(idx, axis), axis).squeeze(axis) if a.ndim else a
    return _keep(np.asarray(vals), axis, a.ndim, keepdim), _keep(np.asarray(idx), axis, a.ndim, keepdim)


def call(op: str, t, dim, keepdim: bool):
    """The clgrad call: keepdim cases go through the Tensor method, the others through the function."""
    kwargs = {} if dim is None else {"dim": dim}
    if keepdim:
        return getattr(t, op)(keepdim=True, **kwargs)
    return getattr(clgrad, op)(t, **kwargs)


def data(op: str, dtype: str, shape) -> np.ndarray:
    """Test data that makes ties likely (first-occurrence indices) and keeps products finite."""
    if op == "prod" and dtype.startswith("float"):
        return np.random.uniform(0.6, 1.5, size=shape).astype(dtype)
    a = rand(shape, dtype)
    if dtype.startswith("float"):
        a = (np.round(a * 2) / 2).astype(dtype)
    return a


def tolerances(op: str, dtype: str, a: np.ndarray):
    if op in ("sum", "mean", "prod") and a.dtype.kind == "f":
        # summation order differs between numpy and a tree; scale the absolute error by the magnitude
        scale = float(np.abs(a.astype(np.float64)).sum()) + 1.0 if a.size else 1.0
        eps = {"float16": 1e-3, "float32": 1e-6, "float64": 1e-14}[dtype]
        return {"rtol": 50 * eps, "atol": 4 * eps * scale}
    return {}


def make0(arr: np.ndarray, device, layout: str = "contiguous"):
    """helpers.make, but 0-dim arrays stay 0-dim (clgrad.tensor(np.array(x)) currently gives shape (1,))."""
    return make(arr.reshape(1), device).reshape(()) if arr.ndim == 0 else make(arr, device, layout)


def check(op: str, device, arr: np.ndarray, dim, keepdim: bool, layout: str = "contiguous") -> None:
    t = make0(arr, device, layout)
    got = call(op, t, dim, keepdim)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy warns about the mean of nothing; torch and clgrad give nan
        want = reference(op, arr, dim, keepdim)
    tol = tolerances(op, arr.dtype.name, arr)
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and got.values is got[0] and got.indices is got[1]
        assert_close(got.values, want[0], **tol)
        assert_close(got.indices, want[1])
    else:
        assert_close(got, want, **tol)
    assert got[0].device == t.device if isinstance(got, tuple) else got.device == t.device


def _valid(op: str, dtype: str, dim) -> bool:
    if op == "mean" and not dtype.startswith("float"):
        return False
    if op in ("argmax", "argmin") and dtype == "bool":
        return False
    if op in ("prod", "max", "min", "argmax", "argmin") and isinstance(dim, tuple):
        return False
    return True


def _skip_fp64(device, dtype: str) -> None:
    if dtype == "float64" and not fp64_ok(device):
        pytest.skip("device lacks cl_khr_fp64")


OPS = ("sum", "mean", "prod", "max", "min", "amax", "amin", "argmax", "argmin", "all", "any")
DIMS = ((None, False), (0, False), (-1, True), ((0, 2), False), ((2, 0), True), (1, False), ((), False))

# every op x dtype x dim on a 3-D shape; then op x layout x dim for four dtypes; then odd shapes
CASES = [
    pytest.param(op, dt, "contiguous", (3, 5, 7), dim, kd, id=f"{op}-{dt}-contiguous-{dim}-{kd}")
    for op in OPS for dt in DTYPES for dim, kd in DIMS if _valid(op, dt, dim)
] + [
    pytest.param(op, dt, layout, (4, 6, 5), dim, kd, id=f"{op}-{dt}-{layout}-{dim}-{kd}")
    for op in OPS for dt in ("uint8", "int64", "float16", "float32") for layout in LAYOUTS[1:] for dim, kd in DIMS[:4]
    if _valid(op, dt, dim)
]
SHAPES = ((), (1,), (7,), (1, 1, 1), (13, 17), (4, 1, 5), (2, 257), (257, 3), (31, 33, 2), (0,), (0, 3), (3, 0))
SHAPE_CASES = [
    pytest.param(op, dt, shape, dim, kd, id=f"{op}-{dt}-{shape}-{dim}-{kd}")
    for op in OPS for dt in ("float32", "int32") for shape in SHAPES for dim, kd in ((None, False), (0, True), (-1, False))
    if _valid(op, dt, dim)
]


@pytest.mark.parametrize("op, dtype, layout, shape, dim, keepdim", CASES)
def test_reduce(device, op, dtype, layout, shape, dim, keepdim):
    _skip_fp64(device, dtype)
    check(op, device, data(op, dtype, shape), dim, keepdim, layout)


def _empty_error(op: str, shape, dim) -> bool:
    """Whether torch refuses this empty case (max-like ops over zero elements)."""
    if op not in ("max", "min", "amax", "amin", "argmax", "argmin") or 0 not in shape:
        return False
    return dim is None or shape[dim] == 0


@pytest.mark.parametrize("op, dtype, shape, dim, keepdim", SHAPE_CASES)
def test_shapes(device, op, dtype, shape, dim, keepdim):
    arr = data(op, dtype, shape)
    if _empty_error(op, shape, dim):
        exc = IndexError if op.startswith("arg") or dim is not None else RuntimeError
        with pytest.raises(exc, match="Expected reduction dim"):
            call(op, make0(arr, device), dim, keepdim)
        return
    check(op, device, arr, dim, keepdim)


@pytest.mark.oclgrind
@pytest.mark.parametrize("kernel", ("tree", "loop"))
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("op", ("sum", "max", "argmin", "all"))
def test_kernel_paths(device, op, layout, kernel, monkeypatch):
    """Serial rows, group trees, column groups and split reductions (second pass) on a small budget, with the
    GPU kernel (tree) and the CPU kernel (loop: row vectors, column vectors, scalar) whatever the device is."""
    monkeypatch.setattr(clreduce, "loops", lambda dev: kernel == "loop")
    for shape, dim in (((3, 40), 1), ((40, 3), 0), ((5, 3), 1), ((8200,), None), ((2, 3000), 1), ((2000, 2), 0),
                       ((70, 100), 1), ((300, 64), 0)):
        check(op, device, data(op, "float32", shape), dim, False, layout)


# the CPU kernel's vector forms: row vectors with a scalar tail, column vectors (4 per work-item) split into
# partials, and a long row split across work-items whose partials a scalar pass combines
VECTOR_SHAPES = (((3, 70), 1), ((300, 64), 0), ((5000,), None))
VECTOR_CASES = [
    pytest.param(op, dt, id=f"{op}-{dt}")
    for op, dts in (("sum", DTYPES), ("amax", DTYPES), ("mean", ("float16", "float32")),
                    ("prod", ("float32", "int32")), ("amin", ("float16", "uint8")), ("all", ("bool", "float32")),
                    ("any", ("uint8", "float16")))
    for dt in dts
]


@pytest.mark.parametrize("op, dtype", VECTOR_CASES)
def test_vector_paths(device, op, dtype):
    _skip_fp64(device, dtype)
    for shape, dim in VECTOR_SHAPES:
        arr = data(op, dtype, shape)
        if op == "prod" and dtype == "float32":  # keep 5000-term products finite (int64 products wrap like numpy's)
            arr = np.random.uniform(0.999, 1.001, shape).astype(dtype)
        if op in ("all", "any"):
            arr = (np.random.rand(*shape) < (0.999 if op == "all" else 0.001)).astype(dtype)
        check(op, device, arr, dim, False)


@pytest.mark.parametrize("dtype", ("float16", "float32"))
def test_vector_nan(device, dtype):
    """A NaN inside a vector lane wins max/min (amax/amin) like anywhere else."""
    for shape, dim, where in (((3, 70), 1, (1, 20)), ((300, 64), 0, (150, 37)), ((5000,), None, (4001,))):
        arr = data("amax", dtype, shape)
        arr[where] = np.nan
        for op in ("amax", "amin"):
            check(op, device, arr, dim, False)


@pytest.mark.parametrize("layout", ("contiguous", "transposed"))
@pytest.mark.parametrize("op", ("sum", "max", "argmin", "any"))
def test_many_outputs(device, op, layout):
    """Enough outputs that CPU devices loop per output (and split rows longer than PER_ITEM)."""
    for shape, dim in (((600, 700), 1), ((700, 600), 0), ((1000, 40), 1)):
        check(op, device, data(op, "float32", shape), dim, False, layout)


@pytest.mark.parametrize("dtype", ("float32", "int32", "uint8", "int64"))
@pytest.mark.parametrize("op", ("max", "min"))
def test_identity_valued_elements(device, op, dtype):
    """Elements equal to the kernel's starting value (-inf, INT_MIN, ...) still get their index."""
    info = np.finfo(dtype) if dtype.startswith("float") else np.iinfo(dtype)
    low = -np.inf if dtype.startswith("float") else info.min
    extreme = low if op == "max" else (-low if dtype.startswith("float") else info.max)
    for shape in ((3, 5), (3, 300), (1, 9000)):
        a = np.full(shape, extreme, dtype)
        a[-1, -1] = 0 if op == "max" or dtype == "uint8" else 1
        check(op, device, a, 1, False)
        check("arg" + op, device, a, None, False)


@pytest.mark.parametrize("dtype", ("float16", "float32", "float64", "int32", "uint8"))
@pytest.mark.parametrize("op", ("max", "min"))
def test_ties_first_occurrence(device, op, dtype):
    _skip_fp64(device, dtype)
    a = np.zeros((4, 300), dtype)
    a[:, [7, 100, 299]] = 2 if op == "max" else 0
    if op == "min":
        a += 1
        a[:, [7, 100, 299]] = 0
    a[1, 299] = 0 if op == "max" else 1  # still ties at 7 and 100
    t = make(a, device)
    values, indices = getattr(t, op)(dim=1)
    assert to_numpy(indices).tolist() == [7] * 4
    assert to_numpy(getattr(clgrad, "arg" + op)(t)).item() == 7
    assert to_numpy(getattr(clgrad, "arg" + op)(t.T, dim=0)).tolist() == [7] * 4
    assert_close(values, a.max(1) if op == "max" else a.min(1))


@pytest.mark.parametrize("dtype", ("float16", "float32", "float64"))
def test_nan_propagates(device, dtype):
    _skip_fp64(device, dtype)
    nan = np.nan
    a = np.array([[1, nan, 3, nan], [2, 5, 5, 0], [nan, 1, 1, 1]], dtype)
    t = make(a, device)
    for op in ("max", "min"):
        values, indices = getattr(clgrad, op)(t, 1)
        assert to_numpy(indices).tolist() == [1, 1 if op == "max" else 3, 0]
        assert np.isnan(to_numpy(values)[[0, 2]]).all()
        assert np.isnan(to_numpy(getattr(t, op)()).item())
        assert np.isnan(to_numpy(getattr(t, "a" + op)(0))[[0, 1, 3]]).all()
        assert to_numpy(getattr(t, "arg" + op)()).item() == 1
    assert np.isnan(to_numpy(t.sum()).item())
    assert to_numpy(t.all(1)).tolist() == [True, False, True]


def test_big_sum_accuracy(device):
    a = np.full(2**22, 0.1, np.float32)
    got = make(a, device).sum().item()
    want = a.astype(np.float64).sum()
    assert abs(got - want) / want < 1e-5


def test_big_split_with_indices(device):
    """Full and per-row reductions big enough to need partials and a second pass, with ties."""
    a = np.random.uniform(-1, 1, 2**20).astype(np.float32)
    a[[5000, 700000, 900001]] = 2.0
    a[[6000, 800000]] = -2.0
    t = make(a, device)
    assert t.argmax().item() == 5000 and t.argmin().item() == 6000
    assert t.max().item() == 2.0 and t.amin().item() == -2.0
    rows = t.view(4, 2**18)
    assert_close(rows.max(1).indices, a.reshape(4, -1).argmax(1))
    cols = t.view(2**17, 8)
    assert_close(cols.min(0).indices, a.reshape(-1, 8).argmin(0))
    assert_close(cols.sum(0), a.reshape(-1, 8).sum(0, dtype=np.float64).astype(np.float32), rtol=1e-5, atol=1e-3)
    a[123456] = np.nan
    assert make(a, device).argmax().item() == 123456


def test_expanded_and_permuted(device):
    base = rand((1, 5, 1), "float32")
    t = make(base, device).expand(4, 5, 3)  # stride 0 on two dims
    arr = np.broadcast_to(base, (4, 5, 3))
    for dim in (None, 0, (0, 2), 1):
        assert_close(t.sum(dim=dim), arr.sum(axis=dim), rtol=1e-5, atol=1e-5)
    check("argmax", device, arr, 1, True)
    p = make(rand((3, 4, 5), "int32"), device).permute(2, 0, 1)
    pa = to_numpy(p)
    assert_close(p.sum(dim=(0, 2)), pa.sum(axis=(0, 2)))
    assert_close(p.max(dim=1).indices, pa.argmax(axis=1))


def test_dtype_argument_and_results(device):
    i = make(np.array([[1, 2, 300], [4, 5, 6]], np.int32), device)
    assert i.sum().dtype is clgrad.int64 and i.prod(1).dtype is clgrad.int64
    assert i.sum(dtype=clgrad.int32).dtype is clgrad.int32
    assert i.sum(dtype=clgrad.uint8).item() == (1 + 2 + 44 + 4 + 5 + 6)
    assert i.sum(1, dtype=clgrad.float16).dtype is clgrad.float16
    assert make(np.array([3.7, -2.2], np.float32), device).sum(dtype=clgrad.int64).item() == 1
    assert i.mean(dtype=clgrad.float32).item() == pytest.approx(318 / 6)
    assert make(np.ones(3, bool), device).sum().dtype is clgrad.int64
    h = make(np.full(4096, 1.0, np.float16), device)
    assert h.sum().item() == 4096 and h.sum().dtype is clgrad.float16  # float16 alone would stall at 2048
    assert h.mean().item() == 1.0
    assert i.max().dtype is clgrad.int32 and make(np.ones(2, bool), device).max().dtype is clgrad.bool
    m = make(np.array([[1.0, 5.0], [4.0, 2.0]], np.float32), device)
    other = make(np.array([3.0, 3.0], np.float32), device)
    assert to_numpy(clgrad.max(m, other)).tolist() == [[3, 5], [4, 3]]
    assert to_numpy(m.min(other)).tolist() == [[1, 3], [3, 2]]
    assert to_numpy(clgrad.max(m, other=other)).tolist() == [[3, 5], [4, 3]]
    r = m.max(1, True)
    assert r.values.shape == (2, 1) and "return_types.max" in repr(r)
    values, indices = m.min(dim=0)
    assert to_numpy(indices).tolist() == [0, 1]


def test_empty_identities(device):
    e = make(np.zeros((0, 3), np.float32), device)
    assert e.sum().item() == 0 and e.prod().item() == 1
    assert np.isnan(e.mean().item()) and np.isnan(to_numpy(e.mean(0))).all()
    assert e.all().item() is True and e.any().item() is False
    assert to_numpy(e.sum(0)).tolist() == [0, 0, 0] and to_numpy(e.prod(0)).tolist() == [1, 1, 1]
    assert e.max(1).values.shape == (0,) and e.argmax(1).shape == (0,)


ERRORS = [
    (lambda t: t.long().mean(), RuntimeError,
     "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Long"),
    (lambda t: t.mean(dtype=clgrad.int32), RuntimeError, "Optional dtype must be either a floating point or complex dtype. Got: Int"),
    (lambda t: t[:0].max(), RuntimeError,
     "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument."),
    (lambda t: t[:0].max(dim=0), IndexError, "max(): Expected reduction dim 0 to have non-zero size."),
    (lambda t: t[:0].amin(), RuntimeError, "amin(): Expected reduction dim to be specified"),
    (lambda t: t[:0].argmax(), IndexError, "argmax(): Expected reduction dim to be specified for input.numel() == 0."),
    (lambda t: t.sum(5), IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 5)"),
    (lambda t: t.max(dim=-3), IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
    (lambda t: t.sum((0, -2)), RuntimeError, "dim 0 appears multiple times in the list of dims"),
    (lambda t: t.bool().argmin(), RuntimeError, "argmin(): does not support bool input"),
    (lambda t: t.prod((0, 1)), TypeError, "prod(): argument 'dim' must be int, not tuple"),
    (lambda t: t.max(dim=(0,)), TypeError, "max(): argument 'dim' must be int, not tuple"),
    (lambda t: t.argmax((0, 1)), TypeError, "argmax(): argument 'dim' must be int, not tuple"),
]


@pytest.mark.parametrize("fn, exc, message", ERRORS, ids=[str(i) for i in range(len(ERRORS))])
def test_errors(device, fn, exc, message):
    t = make(np.ones((2, 3), np.float32), device)
    with pytest.raises(exc) as info:
        fn(t)
    assert message in str(info.value)


def test_zero_dim(device):
    t = make0(np.array(2.5, np.float32), device)
    for op in ("sum", "amax", "mean"):
        assert to_numpy(getattr(t, op)(0)).shape == () and getattr(t, op)(0).item() == 2.5
    assert t.max(0, True).indices.item() == 0 and t.argmax(0).item() == 0
    assert t.all((0,)).item() is True and t.sum(-1).item() == 2.5


def test_plan_shapes():
    """The launch planner keeps every local size a power of two and covers K with its chunks."""
    if not runtime.devices():
        pytest.skip("no OpenCL device")
    dev = runtime.devices()[-1]
    for M in (1, 3, 64, 10**5):
        for K in (1, 2, 31, 33, 257, 4096, 10**6):
            for column in (False, True):
                lx, ly, g, chunk = clreduce.plan(dev, M, K, column)
                assert lx & (lx - 1) == 0 and ly & (ly - 1) == 0 and lx * ly <= 256
                assert (g - 1) * chunk < K <= g * chunk and ly * chunk >= 1
    for M, K, ostr, istr in ((1, 10**6, 1, 1), (4096, 4096, 4096, 1), (4096, 4096, 1, 4096), (3, 70, 70, 1),
                             (64, 300, 1, 64), (6, 5, 1, 6), (10**5, 33, 33, 1), (2, 1000, 1, 7)):
        for with_idx in (False, True):
            src = clreduce.Source(None, 0, "float", [M], [ostr], [K], [istr])
            axis, vec, g, chunk = clreduce.cpu_plan(dev, src, M, K, with_idx)
            assert (g - 1) * chunk < K <= g * chunk and chunk % min(vec, clreduce.VEC) == 0
            assert axis == "scalar" if with_idx else axis in ("row", "col", "scalar")
            assert chunk <= vec * clreduce.PER_ITEM  # each accumulator lane adds at most PER_ITEM elements


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
@pytest.mark.parametrize("shape, dims", [((5, 3, 4, 6), (0, 2, 3)), ((64, 10, 24, 24), (0, 2, 3)), ((2, 3, 17), (0, 2)),
                                         ((4, 2, 3, 16), (0, 1, 3)), ((3, 4, 5, 2), (0, 2, 3))])
def test_sum_over_trailing_and_other_dims(device, dtype, shape, dims):
    """A sum over the trailing dims and others (a conv bias gradient) runs as two reductions on OpenCL (the trailing
    block first, where it is dense and >= 16 elements): the same values as numpy, dense or not."""
    if dtype == "float64" and not fp64_ok(device):
        pytest.skip("no cl_khr_fp64")
    a = np.random.default_rng(len(shape)).standard_normal(shape).astype(dtype)
    tol = {"float16": 2e-2, "float32": 1e-5, "float64": 1e-12}[dtype]
    want = a.astype(np.float64).sum(dims)
    for x in (make(a, device), make(np.ascontiguousarray(a.swapaxes(-1, -2)), device).transpose(-1, -2)):
        got = to_numpy(x.sum(dims))
        assert got.dtype == np.dtype(dtype) and got.shape == want.shape
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol * np.sqrt(a.size / want.size))
        np.testing.assert_allclose(to_numpy(x.sum(dims, keepdim=True)).astype(np.float64).reshape(want.shape), want,
                                   rtol=tol, atol=tol * np.sqrt(a.size / want.size))
