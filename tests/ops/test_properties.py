"""Property-based tests: random shapes, strides (transposes, stepped slices, offsets), broadcasts, dtypes and
values for elementwise ops, reductions, matmul, indexing and conv2d, checked against numpy on every device.

The example budget is fixed and derandomized (the same examples every run), and dtypes and ranks are kept few: each
new combination of dtype, rank and contiguity compiles an OpenCL kernel on first use (then it is disk-cached), so
the number of kernels this file can build is bounded by the budget below. Float operands are mostly multiples of
1/4 of small magnitude, so sums and products are exact in float32 whatever order a kernel adds them in and results
can be compared exactly; ops that round (division, exp) are compared with a tolerance.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import clgrad
import clgrad.nn.functional as F

BUDGET = settings(max_examples=25, deadline=None, derandomize=True, database=None, print_blob=True,
                  suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                         HealthCheck.data_too_large])

MAX_RANK = 3
MAX_SIDE = 6


# ---- strategies ---------------------------------------------------------------------------------
def _elements(dtype: str, special: bool = False):
    if dtype == "bool":
        return st.booleans()
    if dtype.startswith("int"):
        return st.integers(-50, 50)
    quarters = st.integers(-64, 64).map(lambda k: k / 4)
    if not special:
        return quarters
    return st.one_of(quarters, st.floats(-1e4, 1e4, width=32, allow_subnormal=False),
                     st.sampled_from([np.nan, np.inf, -np.inf, -0.0]))


shapes = hnp.array_shapes(min_dims=0, max_dims=MAX_RANK, min_side=0, max_side=MAX_SIDE)


@st.composite
def views(draw, dtype: str, shape: tuple, special: bool = False, elements=None):
    """(numpy array, maker): ``maker(device)`` builds a clgrad tensor equal to the array whose memory layout was
    drawn: a stepped, offset slice of a bigger buffer, then a permutation of its dims."""
    nd = len(shape)
    perm = draw(st.permutations(range(nd))) if nd else []
    sliced_shape = [0] * nd
    for i, p in enumerate(perm):
        sliced_shape[p] = shape[i]  # base[slices].transpose(perm) has shape ``shape``
    steps = [draw(st.sampled_from((1, 1, 2))) for _ in range(nd)]
    starts = [draw(st.integers(0, 1)) for _ in range(nd)]
    base_shape = tuple(s0 + (st_ * (n - 1) + 1 if n else 0) + draw(st.integers(0, 1))
                       for s0, st_, n in zip(starts, steps, sliced_shape))
    base = draw(hnp.arrays(np.dtype(dtype), base_shape, elements=_elements(dtype, special) if elements is None else elements))
    slices = tuple(slice(s0, s0 + st_ * n, st_) for s0, st_, n in zip(starts, steps, sliced_shape))
    arr = base[slices].transpose(perm) if nd else base

    def maker(device):
        t = clgrad.tensor(base, device=device)
        return t[slices].permute(*perm) if nd else t

    assert arr.shape == tuple(shape)
    return arr, maker


@st.composite
def broadcast_pair(draw):
    """Two shapes that broadcast: the second drops leading dims and sets some dims to 1."""
    a = draw(shapes)
    keep = draw(st.integers(0, len(a)))
    b = tuple(1 if draw(st.booleans()) else n for n in a[len(a) - keep:])
    return (a, b) if draw(st.booleans()) else (b, a)


def _check(got, want, exact=True, rtol=1e-6, atol=1e-6):
    want = np.asarray(want)
    host = np.asarray(got.cpu().numpy())
    assert tuple(got.shape) == want.shape, f"shape {tuple(got.shape)} != {want.shape}"
    assert got.dtype.np == want.dtype, f"dtype {got.dtype} != {want.dtype}"
    if exact or want.dtype.kind not in "fc":
        np.testing.assert_array_equal(host, want)
    else:
        np.testing.assert_allclose(host, want, rtol=rtol, atol=atol, equal_nan=True)


# ---- elementwise --------------------------------------------------------------------------------
# op -> (clgrad function, numpy function, exact?). Exact ops are correctly rounded in IEEE arithmetic.
BINARY = {
    "add": (clgrad.add, np.add, True), "sub": (clgrad.sub, np.subtract, True), "mul": (clgrad.mul, np.multiply, True),
    "maximum": (clgrad.maximum, np.maximum, True), "minimum": (clgrad.minimum, np.minimum, True),
    "lt": (clgrad.lt, np.less, True), "eq": (clgrad.eq, np.equal, True), "div": (clgrad.div, np.true_divide, False),
}
# (dtype of a, dtype of b): same-kind pairs and the promotions PyTorch and numpy agree on
DTYPE_PAIRS = [("float32", "float32"), ("int32", "int32"), ("int32", "float32"), ("bool", "int32")]


@BUDGET
@given(data=st.data(), op=st.sampled_from(sorted(BINARY)), pair=st.sampled_from(DTYPE_PAIRS), shapes2=broadcast_pair())
def test_binary_broadcast(device, data, op, pair, shapes2):
    fn, ref, exact = BINARY[op]
    if op == "sub" and "bool" in pair:
        with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):  # PyTorch's rule
            fn(clgrad.zeros(shapes2[0], dtype=getattr(clgrad, pair[0]), device=device),
               clgrad.zeros(shapes2[1], dtype=getattr(clgrad, pair[1]), device=device))
        return
    nonzero = st.integers(1, 50) if op == "div" and pair[1] != "float32" else None  # no integer division by 0
    (a, make_a) = data.draw(views(pair[0], shapes2[0], special=True))
    (b, make_b) = data.draw(views(pair[1], shapes2[1], special=True, elements=nonzero))
    # numpy promotes int32 with float32 to float64, PyTorch to float32: compute in PyTorch's type
    common = clgrad.promote_types(getattr(clgrad, pair[0]), getattr(clgrad, pair[1]))
    if op == "div" and common.kind != "f":
        common = clgrad.float32  # true division of integers gives the default float dtype
    with np.errstate(all="ignore"):
        want = ref(a.astype(common.np), b.astype(common.np))
    _check(fn(make_a(device), make_b(device)), want, exact)


UNARY = {"neg": (clgrad.neg, np.negative, True), "abs": (clgrad.abs, np.abs, True),
         "exp": (clgrad.exp, np.exp, False), "tanh": (clgrad.tanh, np.tanh, False),
         "sqrt": (clgrad.sqrt, np.sqrt, False)}


@BUDGET
@given(data=st.data(), op=st.sampled_from(sorted(UNARY)), shape=shapes)
def test_unary_float_views(device, data, op, shape):
    fn, ref, exact = UNARY[op]
    a, make_a = data.draw(views("float32", shape, special=True))
    with np.errstate(all="ignore"):
        want = ref(a)
    _check(fn(make_a(device)), want, exact, rtol=2e-6, atol=1e-30)


@BUDGET
@given(data=st.data(), dtype=st.sampled_from(("float32", "int32")), shapes2=broadcast_pair())
def test_inplace_into_strided_views(device, data, dtype, shapes2):
    """``x.add_(y)`` and ``x.mul_(y)`` write through x's strides, leaving the rest of its buffer alone."""
    out_shape = np.broadcast_shapes(*shapes2)
    a, make_a = data.draw(views(dtype, out_shape))
    b, make_b = data.draw(views(dtype, shapes2[1]))
    x = make_a(device)
    base = x._storage
    x.add_(make_b(device)).mul_(2)
    _check(x, (a + b) * 2)
    assert x._storage is base


# ---- reductions ---------------------------------------------------------------------------------
REDUCE = {"sum": (lambda t, d, k: t.sum(d, keepdim=k), lambda a, d, k: a.sum(d, keepdims=k)),
          "amax": (lambda t, d, k: t.amax(d, keepdim=k), lambda a, d, k: a.max(d, keepdims=k)),
          "amin": (lambda t, d, k: t.amin(d, keepdim=k), lambda a, d, k: a.min(d, keepdims=k)),
          "mean": (lambda t, d, k: t.mean(d, keepdim=k), lambda a, d, k: a.mean(d, keepdims=k)),
          "prod": (lambda t, d, k: t.prod(d[0], keepdim=k), lambda a, d, k: a.prod(d[0], keepdims=k))}


@BUDGET
@given(data=st.data(), op=st.sampled_from(sorted(REDUCE)), dtype=st.sampled_from(("float32", "int32", "bool")),
       shape=hnp.array_shapes(min_dims=1, max_dims=MAX_RANK, min_side=0, max_side=MAX_SIDE), keepdim=st.booleans())
def test_reductions(device, data, op, dtype, shape, keepdim):
    if dtype == "bool" and op not in ("sum", "amax"):
        dtype = "int32"
    if op == "mean":
        dtype = "float32"
    dims = tuple(sorted(data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1))))
    if op in ("amax", "amin") and any(shape[d] == 0 for d in dims):
        return  # PyTorch raises for an empty max (covered by the bad-input sweep)
    small = st.integers(-1, 1) if op == "prod" and dtype != "bool" else None  # products stay small and exact
    a, make_a = data.draw(views(dtype, shape, elements=small))
    fn, ref = REDUCE[op]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's "Mean of empty slice": nan, as in PyTorch
        want = np.asarray(ref(a, dims, keepdim))
    if dtype in ("int32", "bool") and op in ("sum", "prod"):
        want = want.astype(np.int64)  # integer sums accumulate in int64, as in PyTorch
    _check(fn(make_a(device), dims, keepdim), want, exact=op != "mean")


@BUDGET
@given(data=st.data(), dtype=st.sampled_from(("float32", "int32")),
       shape=hnp.array_shapes(min_dims=1, max_dims=MAX_RANK, min_side=1, max_side=MAX_SIDE))
def test_argmax_argmin_first_of_ties(device, data, dtype, shape):
    a, make_a = data.draw(views(dtype, shape, elements=st.integers(-2, 2)))  # few distinct values: many ties
    x = make_a(device)
    dim = data.draw(st.integers(-1, len(shape) - 1))
    d = None if dim == -1 else dim
    _check(clgrad.argmax(x, d), np.argmax(a, d))
    _check(clgrad.argmin(x, d), np.argmin(a, d))


# ---- matmul -------------------------------------------------------------------------------------
@st.composite
def matmul_shapes(draw):
    m, k, n = (draw(st.one_of(st.integers(0, 9), st.sampled_from((31, 65)))) for _ in range(3))
    batch = draw(st.sampled_from([(), (2,), (1,), (3, 1)]))
    other = draw(st.sampled_from([(), (1,), batch[-1:]]))
    a, b = batch + (m, k), other + (k, n)
    if draw(st.integers(0, 5)) == 0:
        a = (k,)  # vector @ matrix
    elif draw(st.integers(0, 5)) == 0:
        b = (k,)  # matrix @ vector
    return a, b


@BUDGET
@given(data=st.data(), dtype=st.sampled_from(("float32", "int32")), sh=matmul_shapes())
def test_matmul(device, data, dtype, sh):
    a, make_a = data.draw(views(dtype, sh[0]))
    b, make_b = data.draw(views(dtype, sh[1]))
    _check(clgrad.matmul(make_a(device), make_b(device)), np.matmul(a, b))


# ---- indexing -----------------------------------------------------------------------------------
@BUDGET
@given(data=st.data(), dtype=st.sampled_from(("float32", "int32", "bool")),
       shape=hnp.array_shapes(min_dims=1, max_dims=MAX_RANK, min_side=1, max_side=MAX_SIDE))
def test_gather_index_select_take(device, data, dtype, shape):
    a, make_a = data.draw(views(dtype, shape))
    x = make_a(device)
    dim = data.draw(st.integers(0, len(shape) - 1))
    n = shape[dim]
    # gather: an index of the same rank, no larger than x outside dim
    ishape = tuple(data.draw(st.integers(0, s)) if d != dim else data.draw(st.integers(0, 4))
                   for d, s in enumerate(shape))
    idx = data.draw(hnp.arrays(np.int64, ishape, elements=st.integers(0, n - 1)))
    want = np.take_along_axis(a[tuple(slice(0, s) if d != dim else slice(None) for d, s in enumerate(ishape))], idx, dim)
    _check(clgrad.gather(x, dim, clgrad.tensor(idx, device=device)), want)
    # index_select and advanced indexing with negative indices
    sel = data.draw(hnp.arrays(np.int64, data.draw(st.integers(0, 5)), elements=st.integers(-n, n - 1)))
    _check(clgrad.index_select(x, dim, clgrad.tensor(sel % n, device=device)), np.take(a, sel % n, dim))
    key = (slice(None),) * dim + (clgrad.tensor(sel, device=device),)
    _check(x[key], a[(slice(None),) * dim + (sel,)])


@BUDGET
@given(data=st.data(), dtype=st.sampled_from(("float32", "int32")),
       shape=hnp.array_shapes(min_dims=2, max_dims=MAX_RANK, min_side=1, max_side=MAX_SIDE))
def test_advanced_indexing_and_put(device, data, dtype, shape):
    a, make_a = data.draw(views(dtype, shape))
    x = make_a(device)
    # two broadcasting index arrays on the first two dims, a mask, and accumulation with duplicates
    i = data.draw(hnp.arrays(np.int64, (3, 1), elements=st.integers(-shape[0], shape[0] - 1)))
    j = data.draw(hnp.arrays(np.int64, (1, 2), elements=st.integers(-shape[1], shape[1] - 1)))
    ti, tj = clgrad.tensor(i, device=device), clgrad.tensor(j, device=device)
    _check(x[ti, tj], a[i, j])
    mask = data.draw(hnp.arrays(np.bool_, shape[:2]))
    _check(x[clgrad.tensor(mask, device=device)], a[mask])
    v = data.draw(hnp.arrays(np.dtype(dtype), (3, 2) + shape[2:], elements=_elements(dtype)))
    want = a.copy()
    np.add.at(want, (np.broadcast_to(i, (3, 2)), np.broadcast_to(j, (3, 2))), v)
    y = x.clone()
    y.index_put_((ti, tj), clgrad.tensor(v, device=device), accumulate=True)
    _check(y, want)
    # a plain store to distinct positions (duplicates would leave the winner unspecified, as in PyTorch)
    rows = data.draw(st.permutations(range(shape[0])))[: data.draw(st.integers(0, shape[0]))]
    w = data.draw(hnp.arrays(np.dtype(dtype), (len(rows),) + shape[1:], elements=_elements(dtype)))
    want = a.copy()
    want[list(rows)] = w
    z = x.clone()
    z[clgrad.tensor(np.array(rows, np.int64), device=device)] = clgrad.tensor(w, device=device)
    _check(z, want)


# ---- conv2d -------------------------------------------------------------------------------------
def conv2d_ref(x, w, b, stride, padding, dilation, groups):
    """Direct convolution in float64 (then cast back): a sum over the window for each output position."""
    n, c, h, wd = x.shape
    co, cg, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh = (h + 2 * padding - dilation * (kh - 1) - 1) // stride + 1
    ow = (wd + 2 * padding - dilation * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, co, oh, ow))
    per = co // groups
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        ws = w[g * per:(g + 1) * per].astype(np.float64)
        for p in range(kh):
            for q in range(kw):
                win = xs[:, :, p * dilation: p * dilation + stride * (oh - 1) + 1: stride,
                         q * dilation: q * dilation + stride * (ow - 1) + 1: stride]
                out[:, g * per:(g + 1) * per] += np.einsum("nchw,oc->nohw", win, ws[:, :, p, q])
    if b is not None:
        out += b[None, :, None, None]
    return out.astype(x.dtype)


@st.composite
def conv_cases(draw):
    groups = draw(st.sampled_from((1, 1, 2)))
    cin, cout = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    k = draw(st.integers(1, 3))
    stride, padding, dilation = draw(st.integers(1, 2)), draw(st.integers(0, 2)), draw(st.integers(1, 2))
    span = dilation * (k - 1) + 1
    h = draw(st.integers(max(1, span - 2 * padding), 8))
    w = draw(st.integers(max(1, span - 2 * padding), 8))
    return (draw(st.integers(0, 2)), cin, h, w), (cout, cin // groups, k, k), stride, padding, dilation, groups


@BUDGET
@given(data=st.data(), case=conv_cases(), bias=st.booleans())
def test_conv2d(device, data, case, bias):
    xs, ws, stride, padding, dilation, groups = case
    x, make_x = data.draw(views("float32", xs))
    w, make_w = data.draw(views("float32", ws))
    b = data.draw(hnp.arrays(np.float32, (ws[0],), elements=_elements("float32"))) if bias else None
    got = F.conv2d(make_x(device), make_w(device), None if b is None else clgrad.tensor(b, device=device),
                   stride=stride, padding=padding, dilation=dilation, groups=groups)
    _check(got, conv2d_ref(x, w, b, stride, padding, dilation, groups))


@pytest.mark.parametrize("shape", [(0,), (2, 0, 3), ()])
def test_views_strategy_edge_shapes(device, shape):
    """The layouts the strategies draw work on empty and 0-d tensors too (a plain example, no search)."""
    a = np.zeros(shape, np.float32)
    t = clgrad.tensor(np.zeros(shape, np.float32), device=device)
    _check(t + 1, a + 1)
