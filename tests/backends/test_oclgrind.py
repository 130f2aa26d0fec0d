"""The focused kernel subset for the Oclgrind simulator: every template family, each dtype class, contiguous
and strided operands, and edge sizes (0, 1, a prime, more than one work-group).

``tox -e oclgrind`` (or ``CLGRAD_TEST_DEVICES=oclgrind OCLGRIND_DATA_RACES=1 pytest -m oclgrind``) runs it under
Oclgrind, whose reports of invalid memory accesses and data races on stderr fail the test. On other devices it is a
cheap extra correctness check: every result is compared with the same call on cpu (the reference backend).

``FAMILIES`` maps each template of ``clgrad/kernels`` to the runner that exercises it; the last test checks that every
template (and every ``kind`` a template defines) was really built, so a new kernel family cannot go unchecked.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.backends.opencl import conv_gemm as clconv_gemm
from clgrad.backends.opencl import fft as clfft
from clgrad.backends.opencl import linalg as cl_linalg
from clgrad.backends.opencl import programs
from clgrad.backends.opencl import scan as clscan
from clgrad.ops import conv_fold, fft_core
from tests.helpers import assert_close, make

pytestmark = pytest.mark.oclgrind

SIZES = (0, 1, 7, 1031)
DTYPES = ("bool", "int32", "float16", "float32", "float64")
ERROR_MARKERS = ("Invalid read", "Invalid write", "data race", "Uninitialized", "Oclgrind - ", "divergence",
                 "Unaligned")


@pytest.fixture(autouse=True)
def no_simulator_errors(capfd, device):
    yield
    clgrad.opencl.synchronize() if device != "cpu" else None
    err = capfd.readouterr().err
    found = [m for m in ERROR_MARKERS if m.lower() in err.lower()]
    assert not found, f"the OpenCL runtime reported {found}:\n{err[:4000]}"


def _skip_fp64(device, dtype):
    if dtype == "float64" and device != "cpu" and not clgrad.opencl.get_device_properties(device).fp64:
        pytest.skip("no cl_khr_fp64")


def _data(n, dtype):
    rng = np.random.default_rng(n)
    if dtype == "bool":
        return rng.random(n) > 0.5
    if dtype.startswith("int"):
        return rng.integers(-50, 50, n).astype(dtype)
    return rng.uniform(-4, 4, n).astype(dtype)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_elementwise(device, dtype, n):
    _skip_fp64(device, dtype)
    a, b = _data(n, dtype), _data(n, dtype)
    x, y = clgrad.tensor(a, device=device), clgrad.tensor(b, device=device)
    if dtype == "bool":
        assert_close(clgrad.logical_and(x, y), np.logical_and(a, b))
    else:
        assert_close(clgrad.maximum(x, y), np.maximum(a, b))
    # strided: every other element of a 2-D view, with a broadcast row
    m = make(np.stack([a, b]), device, "sliced")
    assert_close(clgrad.where(m[0] > m[1], m[0], m[1]), np.where(a > b, a, b))


@pytest.mark.parametrize("n", SIZES)
def test_copy_cast(device, n):
    a = _data(n, "float32")
    x = make(a.reshape(1, n) if n else a.reshape(1, 0), device, "transposed" if n else "contiguous")
    assert_close(x.to(clgrad.float16), a.reshape(1, n).astype(np.float16))
    assert_close(x.to(clgrad.int32), a.reshape(1, n).astype(np.int64).astype(np.int32))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", ("int32", "float16", "float32", "float64"))
def test_random(device, dtype, n):
    _skip_fp64(device, dtype)
    dt = getattr(clgrad, dtype)
    gen = clgrad.Generator().manual_seed(n + 1)
    if dtype.startswith("int"):
        x = clgrad.randint(-5, 5, (n,), dtype=dt, device=device, generator=gen)
        ref = clgrad.randint(-5, 5, (n,), dtype=dt, generator=clgrad.Generator().manual_seed(n + 1))
    else:
        x = clgrad.rand(n, dtype=dt, device=device, generator=gen)
        ref = clgrad.rand(n, dtype=dt, generator=clgrad.Generator().manual_seed(n + 1))
    np.testing.assert_array_equal(x.cpu().numpy(), ref.numpy())
    # a strided destination goes through a temporary and a copy
    y = clgrad.zeros(n, 2, dtype=dt, device=device)
    if dtype.startswith("float"):
        y[:, 1].uniform_(generator=gen)
        assert (y[:, 0].cpu().numpy() == 0).all()


# ---- every template family: a runner per template, each dtype class, sizes 0, 1, prime, > a work-group ---------
# A runner computes its ops on ``device`` and on cpu and compares them (``_same``). Float data are multiples of
# 1/4 of small magnitude, so sums and products are exact in float32 whatever the order of the terms.
_TOL = {"float16": (2e-3, 2e-3), "float32": (1e-5, 1e-5), "float64": (1e-12, 1e-12)}


def _arr(shape, dtype, seed=0, low=-8, high=8):
    rng = np.random.default_rng(seed + 7 * int(np.prod(shape)))
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype.startswith(("int", "uint")):
        return rng.integers(max(low, 0) if dtype.startswith("u") else low, high, shape).astype(dtype)
    return (rng.integers(low, high, shape) / 4).astype(dtype)


def _flat(result) -> list:
    if isinstance(result, (tuple, list)):
        return [t for r in result for t in _flat(r)]
    return [result]


def _same(device, fn, *arrays, layouts=None, grad=False):
    """``fn(*tensors)`` on ``device`` (operands in ``layouts``) equals ``fn`` on cpu (contiguous operands).
    With ``grad``, float operands are leaves that require grad and their gradients are compared too."""
    results = []
    for dev, lays in ((device, layouts or ["contiguous"] * len(arrays)), ("cpu", ["contiguous"] * len(arrays))):
        ts = [make(a, dev, lay) for a, lay in zip(arrays, lays)]
        if grad:
            ts = [t.detach().requires_grad_(True) if t.dtype.kind == "f" else t for t in ts]
        out = _flat(fn(*ts))
        if grad:
            total = sum((o.float() * o.float()).sum() for o in out if o.dtype.kind == "f")
            if getattr(total, "requires_grad", False):
                total.backward()
            out += [t.grad for t in ts if t.dtype.kind == "f" and t.grad is not None]
        results.append([o.detach().cpu() for o in out])
    for got, want in zip(*results):
        rtol, atol = _TOL.get(want.dtype.name, (0, 0))
        assert_close(got, want.numpy(), rtol=rtol, atol=atol)


def _grid(n: int) -> tuple:
    """A 2-D shape with ``n`` elements per row: 3 rows (few rows take the work-group-per-row paths)."""
    return (3, n)


def _reduce(device, cls, n):
    if cls == "bool":
        a = _arr(_grid(n), "bool")
        _same(device, lambda x: (x.all(1), x.any(0), x.sum(1), x.all()), a, layouts=["transposed"])
    elif cls == "int":
        a = _arr(_grid(n), "int32")
        fn = (lambda x: (x.sum(1), x.amax(0), x.sum(), x.argmax(1))) if n else (lambda x: (x.sum(1), x.sum()))
        _same(device, fn, a, layouts=["transposed"])
        _same(device, lambda x: x.sum(), _arr((n,), "int64"), layouts=["sliced"])
    else:
        for dt in ("float32", "float16"):
            a = _arr(_grid(n), dt)
            fn = (lambda x: (x.sum(1), x.mean(0), x.amin(1), x.argmin(1), x.sum())) if n else (lambda x: x.sum(1))
            _same(device, fn, a, layouts=["sliced"])


def _matmul(device, cls, n):
    dts = {"int": ("int32", "int64"), "float": ("float32", "float16", "float64")}[cls]
    n = {1031: 67}.get(n, n)  # larger than a 64 x 64 tile in every dim (1031**3 would take Oclgrind hours)
    for dt in dts if n == 7 else dts[:1]:  # every dtype at the prime size, the first at every size
        if not _fp64_ok(device, dt):
            continue
        a, b, v = _arr((n, n), dt, 1), _arr((n, n), dt, 2), _arr((n,), dt, 3)
        _same(device, lambda x, y, w: (x @ y, x @ w, w @ y), a, b, v, layouts=["contiguous", "transposed", "sliced"])
    _same(device, lambda x, y: x @ y, _arr((3, 0), dts[0]), _arr((0, 2), dts[0]))  # K = 0: zeros


def _scan(device, cls, n):
    dt = {"bool": "bool", "int": "int32", "float": "float32"}[cls]
    a = _arr(_grid(n), dt, low=-1, high=2)  # cumprod of -1, 0, 1 stays small
    fns = [lambda x: clgrad.cumsum(x, 1), lambda x: clgrad.cumsum(x, 0)]
    if cls != "bool":
        fns.append(lambda x: clgrad.cumprod(x, 1))
    for fn in fns:
        _same(device, fn, a, layouts=["transposed"], grad=cls == "float")  # backward: a reversed scan
    if cls == "float" and n == 1031:  # small work-groups: several chunks per row, the chunk totals, the carry pass
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(clscan, "WG", 32)
            _same(device, lambda x: clgrad.cumsum(x, 1), a)


def _sort(device, cls, n):
    dt = {"bool": "bool", "int": "int32", "float": "float32"}[cls]
    a = _arr(_grid(n), dt)
    _same(device, lambda x: clgrad.sort(x, 1, descending=True), a, layouts=["transposed"])
    if cls == "bool":
        return
    if n > 1:
        _same(device, lambda x: clgrad.topk(x, min(n, 5), 1), a, grad=cls == "float")  # gather_dim, scatter_dim
    u = _arr((n,), "int64", low=0, high=9)
    _same(device, lambda x: clgrad.unique(x, return_inverse=True, return_counts=True), u)  # masked/iota scatters
    _same(device, lambda x, w: (clgrad.bincount(x), clgrad.bincount(x, w)), u, _arr((n,), "float32"))
    if n == 1031:  # the multi-pass paths: local chunks then merges, and per-work-item segments then merges
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(clscan, "MAX_CHUNK", 256)
            mp.setattr(clscan, "SEGMENT_MIN", 256)
            for row_sort in (False, True):
                mp.setattr(clscan, "ROW_SORT", row_sort)
                _same(device, lambda x: clgrad.sort(x[:1], 1), a, layouts=["sliced"])


def _index(device, cls, n):
    dt = {"bool": "bool", "int": "int32", "float": "float32"}[cls]
    a = _arr((n, 3), dt)
    idx = np.random.default_rng(n).integers(-n, n, max(n, 1) if n else 0)  # negative indices wrap
    perm = np.random.default_rng(n).permutation(n)  # stores need distinct targets (else they race)
    vals = _arr((n, 3), dt, 5)
    dup = np.arange(2 * n) % max(n, 1)  # every target twice: atomic accumulation

    def ops(x, i, p, v, d):
        y = x.clone()
        y[p] = v
        acc = clgrad.zeros(x.shape, dtype=x.dtype, device=x.device)
        if x.dtype is not clgrad.bool:
            acc.index_put_((d,), clgrad.cat([v, v]), accumulate=True)
        return x[i], x[:, 1:][x[:, 1:] > x[:, :1].to(x.dtype)], y, acc, clgrad.index_select(x, 1, p[:2] % 3), x.nonzero()

    _same(device, ops, a, idx, perm, vals, dup, layouts=["sliced", "contiguous", "offset", "transposed", "contiguous"])
    if n:
        with pytest.raises(IndexError):
            make(a, device)[clgrad.tensor([0, n], device=device)]


def _conv_shapes(n):
    """(x shape, weight shape, stride, padding) per size class."""
    return {0: ((0, 2, 5, 5), (3, 2, 3, 3), 1, 1), 1: ((1, 1, 1, 1), (1, 1, 1, 1), 1, 0),
            7: ((2, 3, 7, 7), (4, 3, 3, 3), 2, 1), 1031: ((1, 2, 19, 17), (3, 2, 3, 3), 1, 1)}[n]


def _conv(device, cls, n):
    xs, ws, stride, pad = _conv_shapes(n)
    for dt in ("float32", "float16"):
        x, w, b = _arr(xs, dt), _arr(ws, dt, 1), _arr(ws[:1], dt, 2)
        # a transposed x takes im2col's row kernels, a contiguous one (rows of >= 4 positions) its grid kernel
        for x_layout in ("transposed", "contiguous"):
            _same(device, lambda x, w, b: F.conv2d(x, w, b, stride=stride, padding=pad), x, w, b,
                  layouts=[x_layout, "sliced", "contiguous"], grad=True)


def _conv_gemm(device, cls, n):
    """The implicit-GEMM kernels, taken for every size (the CPU thresholds off): forward, the stride-1 input
    gradient as a flipped-weight convolution, and the batch-summed weight gradient."""
    xs, ws, stride, pad = _conv_shapes(n)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(clconv_gemm, "CPU_MIN_ROWS", 0)
        mp.setattr(clconv_gemm, "CPU_MIN_TAPS", 0)
        mp.setattr(conv_fold, "FOLD_POSITIONS", 0)  # small outputs would take the folded products instead
        x, w, b = _arr(xs, "float32"), _arr(ws, "float32", 1), _arr(ws[:1], "float32", 2)
        _same(device, lambda x, w, b: F.conv2d(x, w, b, stride=1, padding=pad, dilation=(1, 2 if n > 1 else 1)),
              x, w, b, layouts=["sliced", "contiguous", "contiguous"], grad=True)


def _pool(device, cls, n):
    xs = _conv_shapes(n)[0]
    if n == 0:
        xs = (0, 2, 4, 4)
    k = 1 if n == 1 else 2

    def ops(x):
        return (F.max_pool2d(x, k + 1 if n > 1 else 1, k, 1 if n > 1 else 0, ceil_mode=True),
                F.avg_pool2d(x, k, k, ceil_mode=True, count_include_pad=False), F.adaptive_avg_pool2d(x, (3, 2)),
                F.interpolate(x, scale_factor=2), F.interpolate(x, size=(5, 3), mode="bilinear"))

    for dt in ("float32", "float16"):
        _same(device, ops, _arr(xs, dt), layouts=["transposed"], grad=True)
    if n:  # second order: max-pool's gather
        def double(x):
            (g,) = clgrad.autograd.grad((F.max_pool2d(x, k) ** 2).sum(), x, create_graph=True)
            return g
        _same(device, double, _arr(xs, "float32"), grad=True)


def _softmax(device, cls, n):
    for dt in ("float32", "float16", "float64"):
        if _fp64_ok(device, dt):
            a = _arr(_grid(n), dt)
            _same(device, lambda x: (F.softmax(x, 1), F.log_softmax(x, 0)), a, layouts=["transposed"], grad=True)
    # contiguous rows, enough of them for one work-item each: CPU devices take the vector path (1031 = 64*16 + 7)
    _same(device, lambda x: (F.softmax(x, 1), F.log_softmax(x, 1)), _arr((9, n), "float32"), grad=True)


def _nll(device, cls, n):
    for C in (5, 19):  # 19 classes: the fused cross-entropy's vector path with a tail on CPU devices
        x, t = _arr((n, C), "float32"), np.random.default_rng(n).integers(0, C, n)
        t[::3] = -100
        w = _arr((C,), "float32", low=1)
        for reduction in ("mean", "sum", "none") if n <= 7 else ("none",):
            _same(device, lambda x, t, w, r=reduction: F.nll_loss(x, t, w, reduction=r), x, t, w,
                  layouts=["transposed", "sliced", "contiguous"], grad=True)
            _same(device, lambda x, t, w, r=reduction: F.cross_entropy(x, t, w, reduction=r), x, t, w,
                  layouts=["contiguous" if C > 5 else "transposed", "sliced", "contiguous"], grad=True)
        if n:
            with pytest.raises(IndexError):
                F.nll_loss(make(x, device), make(t * 0 + C, device)).cpu()  # raised at the next host read
            with pytest.raises(IndexError):
                F.cross_entropy(make(x, device), make(t * 0 + C, device)).cpu()
    t2 = np.random.default_rng(n).integers(0, 5, (2, n))  # K-dim targets, float16 logits
    _same(device, lambda x, t: F.cross_entropy(x, t), _arr((2, 5, n), "float16"), t2, grad=True)


def _rnn(device, cls, n):
    """nn.LSTM's fused step kernels (forward and backward), batch up to 9, hidden 4 (gate rows of 16)."""
    def run(x, w_ih, w_hh, b):
        lstm = clgrad.nn.LSTM(3, 4).to(x.device)
        with clgrad.no_grad():
            for param, value in zip(lstm.parameters(), (w_ih, w_hh, b, b)):
                param.copy_(value)
        out, (_, c) = lstm(x)
        return out, c
    _same(device, run, _arr((3, min(n, 9), 3), "float32"), _arr((16, 3), "float32"), _arr((16, 4), "float32"),
          _arr((16,), "float32"), grad=True)


def _norm(device, cls, n):
    for dt in ("float32", "float16") if n <= 7 else ("float32",):  # backward is many launches: keep Oclgrind quick
        a = _arr(_grid(n), dt)
        _same(device, lambda x: F.layer_norm(x, (n,)), a, layouts=["transposed"], grad=True)
        if n > 1:
            b = _arr((n, 4), dt)
            _same(device, lambda x: F.batch_norm(x, None, None, training=True), b, layouts=["sliced"], grad=True)
            _same(device, lambda x: F.group_norm(x.reshape(n, 4, 1), 2), b, grad=True)


def _embedding(device, cls, n):
    idx = np.random.default_rng(n).integers(0, 11, n)  # duplicates: atomic accumulation in backward
    for dt in ("float32", "float16"):
        w = _arr((11, 5), dt)
        _same(device, lambda i, w: F.embedding(i, w), idx, w, layouts=["contiguous", "transposed"], grad=True)
        _same(device, lambda i, w: F.embedding(i, w, padding_idx=3), idx.astype(np.int32), w, grad=True)
    if n:
        with pytest.raises(IndexError):
            F.embedding(make(idx + 11, device), make(_arr((11, 5), "float32"), device)).cpu()


def _random(device, cls, n):
    """The same generator state gives the same samples on every device: bit-identical uniform, integer and
    Bernoulli draws; normal draws go through log/cos, whose last bit OpenCL leaves to the implementation."""
    dt = {"bool": clgrad.bool, "int": clgrad.int64, "float": clgrad.float32}[cls]
    results = []
    for dev in (device, "cpu"):
        g = clgrad.Generator().manual_seed(n)
        out = [clgrad.randint(0, 2 if cls == "bool" else 9, (n,), dtype=dt, device=dev, generator=g)]
        if cls == "float":
            out += [clgrad.randn(n, 2, device=dev, generator=g), clgrad.empty(n, device=dev).bernoulli_(0.3, generator=g),
                    clgrad.empty(3, n, device=dev).t().uniform_(generator=g)]  # a strided destination
        results.append([t.cpu().numpy() for t in out])
    for k, (a, b) in enumerate(zip(*results)):
        if k == 1:
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
        else:
            np.testing.assert_array_equal(a, b)


def _optim(device, cls, n):
    def steps(p0, make_opt):
        p = p0.detach().requires_grad_(True)
        opt = make_opt([p])
        for k in range(3):
            opt.zero_grad()
            ((p * p).sum() * (k + 1)).backward()
            opt.step()
        return p.detach()

    for make_opt in (lambda ps: clgrad.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
                     lambda ps: clgrad.optim.Adam(ps, lr=0.1, weight_decay=0.01, amsgrad=True),
                     lambda ps: clgrad.optim.AdamW(ps, lr=0.1)):
        _same(device, lambda p, mk=make_opt: steps(p, mk), _arr((n,), "float32"))


def _elementwise(device, cls, n):
    dt = {"bool": "bool", "int": "int32", "float": "float32"}[cls]
    a, b = _arr(_grid(n), dt), _arr((n,), dt, 1)
    _same(device, lambda x, y: (x.logical_xor(y), clgrad.where(x > y, x, y), x.to(clgrad.float16)), a, b,
          layouts=["transposed", "sliced"])


def _spmm(device, cls, n):
    rng = np.random.default_rng(n)
    idx = np.stack([rng.integers(0, n + 1, 2 * n), rng.integers(0, 5, 2 * n)])  # duplicates, empty rows
    _same(device, lambda v, d: clgrad.sparse_coo_tensor(make(idx, v.device), v, (n + 1, 5)) @ d,
          _arr((2 * n,), "float32"), _arr((5, 3), "float32"), layouts=["contiguous", "transposed"], grad=True)


def _fft(device, cls, n):
    """The one-launch local kernel (n = 1, 7; rfft and irfft of 2n: rpost and cpre), Bluestein (1031, a prime: chirp, mul,
    post kinds), then the global passes (no local memory allowed), forward and backward (the inverse transform)."""
    shape = (0, 4, 2) if n == 0 else (2, n, 2) if n < 1000 else (1, n, 2)
    def run(p):
        n2 = 2 * p.shape[-2]
        return fft_core.fft(p, norm="ortho"), fft_core.rfft(p.select(-1, 0), n=n2), fft_core.irfft(p, n=n2)

    _same(device, run, _arr(shape, "float32"), layouts=["transposed"], grad=True)
    with pytest.MonkeyPatch.context() as mp:  # one launch per pass, through global memory
        mp.setattr(clfft, "LOCAL_BYTES", 0)
        _same(device, run, _arr((2, min(max(n, 1), 60), 2), "float32"), grad=True)
def _linalg(device, cls, n):
    """The Jacobi kernels (eigh, svd_jacobi) through gauge-invariant outputs: eigenvalues, singular values and
    their gradients, on a batch of two small matrices (none when n is 0); the panels (getrf, potrf, trsm) through
    solve and cholesky and their gradients."""
    k = min(n, 5) or 3
    shape = (2 if n else 0, k + 1, k)
    _same(device, lambda x: (clgrad.linalg.eigvalsh(x[:, :k] + x[:, :k].mT), clgrad.linalg.svdvals(x)),
          _arr(shape, "float32"), grad=True)
    spd = lambda x: x[:, :k] @ x[:, :k].mT + clgrad.eye(k, device=x.device)  # noqa: E731
    with pytest.MonkeyPatch.context() as mp:  # small panels run on a loop-limited device (llvmpipe) too
        mp.setattr(clgrad.backends.get(clgrad.device(device)), "panels_ok", lambda a: True)
        _same(device, lambda x: (clgrad.linalg.solve(spd(x), x[:, k:].mT), clgrad.linalg.cholesky(spd(x))),
              _arr(shape, "float32"), grad=True)
        # the substitution kernel's other form (a work-item per column, as on a CPU)
        mp.setattr(cl_linalg, "SERIAL_COLUMNS", dict.fromkeys(cl_linalg.SERIAL_COLUMNS, 8))
        _same(device, lambda x: clgrad.linalg.solve_triangular(spd(x), x[:, k:].mT, upper=False),
              _arr(shape, "float32"), grad=True)


def _errors(device, cls, n):
    """note_error: a failed bounds check copies its flag into the thread's error buffer (raised at the next read)."""
    m = max(n, 1)
    with pytest.raises(IndexError):
        F.nll_loss(make(_arr((m, 3), "float32"), device), make(np.full(m, 7), device)).cpu()
    _same(device, lambda x: F.nll_loss(x, make(np.zeros(m, np.int64), x.device)), _arr((m, 3), "float32"))


# template -> (runner, dtype classes it takes)
FAMILIES = {
    "elementwise": (_elementwise, ("bool", "int", "float")),
    "reduce": (_reduce, ("bool", "int", "float")),
    "matmul": (_matmul, ("int", "float")),
    "scan": (_scan, ("bool", "int", "float")),
    "sort": (_sort, ("bool", "int", "float")),
    "index": (_index, ("bool", "int", "float")),
    "conv": (_conv, ("float",)),
    "conv_gemm": (_conv_gemm, ("float",)),
    "pool": (_pool, ("float",)),
    "softmax": (_softmax, ("float",)),
    "nll": (_nll, ("float",)),
    "norm": (_norm, ("float",)),
    "embedding": (_embedding, ("float",)),
    "random": (_random, ("bool", "int", "float")),
    "optim": (_optim, ("float",)),
    "rnn": (_rnn, ("float",)),
    "spmm": (_spmm, ("float",)),
    "fft": (_fft, ("float",)),
    "linalg": (_linalg, ("float",)),
    "errors": (_errors, ("float",)),
}


def _fp64_ok(device, dt) -> bool:
    return dt != "float64" or device == "cpu" or clgrad.opencl.get_device_properties(device).fp64


_built: set = set()  # (device index, template, kind) of every kernel asked for while this module runs
_ran: set = set()  # (device, template) whose runner ran on every size and dtype class


@pytest.fixture(scope="module", autouse=True)
def _record_kernels():
    """Wrap the kernel cache's entry point to note each (template, kind) built. Elementwise launchers are cached
    above it, so those caches start empty here."""
    from clgrad.ops import pointwise

    programs.invalidate()  # the backends' launch caches
    getattr(pointwise, "_PLANS", {}).clear()
    original = programs.get_kernel

    def recording(dev, template, name, arg_dtypes, params):
        _built.add((dev.index, template, params.get("kind", "")))
        return original(dev, template, name, arg_dtypes, params)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(programs, "get_kernel", recording)
        yield


@pytest.mark.parametrize("cls", ("bool", "int", "float"))
@pytest.mark.parametrize("template", sorted(FAMILIES))
def test_family(device, template, cls):
    runner, classes = FAMILIES[template]
    if device == "cpu":
        pytest.skip("the runners compare a device with cpu")
    if cls not in classes:
        pytest.skip(f"{template} takes no {cls} operands")
    for n in SIZES:
        runner(device, cls, n)
    _ran.add((device, template, cls))


def _kinds(template: str) -> set:
    """The ``kind`` values a template's ``% if kind == ...`` branches define ("" when it has none)."""
    text = (programs.KERNEL_DIR / f"{template}.cl.mako").read_text()
    found = set(re.findall(r'kind == "(\w+)"', text))
    for group in re.findall(r"kind in \(([^)]*)\)", text):
        found |= set(re.findall(r'"(\w+)"', group))
    return found or {""}


def test_every_template_family_was_built(device):
    """Each template in clgrad/kernels has a runner, and on this device the runners built every kind it defines."""
    # the prelude is no family: its helpers render inside the others
    templates = sorted(p.name[: -len(".cl.mako")] for p in Path(programs.KERNEL_DIR).glob("*.cl.mako")
                       if p.name != "prelude.cl.mako")
    missing = [t for t in templates if t not in FAMILIES]
    assert not missing, f"kernel templates without an Oclgrind runner in FAMILIES: {missing}"
    if device == "cpu":
        return
    index = int(device.split(":")[1])
    for t in templates:
        if not all((device, t, c) in _ran for c in FAMILIES[t][1]):
            continue  # its runner did not run (or failed) in this session: nothing to check
        unbuilt = _kinds(t) - {k for i, tt, k in _built if i == index and tt == t}
        assert not unbuilt, f"{t}.cl.mako: kernels of kind {sorted(unbuilt)} were never built by its runner"
