"""quantile/nanquantile, nanmedian, mode, cov/corrcoef, histc/histogram, dist, renorm (ops/stats_extra.py) and
logcumsumexp/cummax/cummin (ops/scans_extra.py) against PyTorch on every device: values, return types, Tensor
methods, non-contiguous and zero-size inputs, NaN, PyTorch's errors, and gradients by gradcheck (float64, or
float32 where the device has no fp64) and against torch's own gradients where ties make the choice matter."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import DEVICES, fp64_ok
from helpers import assert_close, grad_precision, make, quiet_gradcheck, to_numpy

import clgrad
from clgrad.autograd import gradcheck

torch = pytest.importorskip("torch")

INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _dtype(device) -> str:
    return "float64" if fp64_ok(device) else "float32"


def _data(shape, dtype="float64", distinct=True, seed=0):
    """Random data; ``distinct`` values (no ties) or few values (many ties)."""
    rng = np.random.default_rng(seed)
    a = rng.permutation(np.prod(shape, dtype=int)).reshape(shape) * 0.37 - 2 if distinct \
        else rng.integers(-2, 3, size=shape)
    return np.asarray(a, dtype=dtype)


def _check(got, want, **kw):
    """A clgrad result (tensor or tuple of tensors) against torch's."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _check(g, w, **kw)
        return
    assert_close(got, want.numpy(), **kw)


def _both(fn, *arrays, device, layout="contiguous"):
    """fn(clgrad, *tensors) on the device and fn(torch, *tensors) on cpu."""
    ours = fn(clgrad, *[make(a, device, layout) for a in arrays])
    theirs = fn(torch, *[torch.tensor(a) for a in arrays])
    return ours, theirs


# (id, shape, fn(module, x)); x is float data with distinct values
FORWARD = [
    ("quantile-all", (3, 5), lambda m, x: m.quantile(x, 0.3)),
    ("quantile-dim", (3, 5), lambda m, x: m.quantile(x, 0.7, dim=1)),
    ("quantile-keepdim", (3, 5), lambda m, x: m.quantile(x, 0.7, 0, True)),
    ("quantile-q1d", (4, 3), lambda m, x: m.quantile(x, m.tensor([0.0, 0.25, 1.0], dtype=x.dtype, device=x.device), dim=0)),
    ("quantile-q1d-keep", (4, 3), lambda m, x: m.quantile(x, m.tensor([0.5, 0.9], dtype=x.dtype, device=x.device), -1, True)),
    ("quantile-q0d-all-keep", (2, 3), lambda m, x: m.quantile(x, m.tensor(0.5, dtype=x.dtype, device=x.device), keepdim=True)),
    ("nanquantile", (3, 5), lambda m, x: m.nanquantile(x, 0.6, 1)),
    ("nanmedian-all", (3, 5), lambda m, x: m.nanmedian(x)),
    ("nanmedian-dim", (3, 5), lambda m, x: m.nanmedian(x, 1)),
    ("mode", (3, 5), lambda m, x: m.mode(x)),
    ("mode-dim0", (4, 3), lambda m, x: m.mode(x, 0, keepdim=True)),
    ("cov", (3, 5), lambda m, x: m.cov(x)),
    ("cov-weights", (2, 4), lambda m, x: m.cov(x, fweights=m.tensor([1, 2, 3, 1], device=x.device),
                                               aweights=m.tensor([0.5, 1.0, 2.0, 0.25], dtype=x.dtype, device=x.device))),
    ("corrcoef", (3, 5), lambda m, x: m.corrcoef(x)),
    ("logcumsumexp", (3, 5), lambda m, x: m.logcumsumexp(x, 1)),
    ("logcumsumexp-dim0", (4, 3), lambda m, x: m.logcumsumexp(x * 100, 0)),
    ("cummax", (3, 5), lambda m, x: m.cummax(x, 1)),
    ("cummin", (4, 3), lambda m, x: m.cummin(x, 0)),
    ("dist", (3, 4), lambda m, x: m.dist(x, x[0] * 0.5)),
    ("dist-inf", (3, 4), lambda m, x: m.dist(x, x.flip(0), float("inf"))),
    ("renorm", (3, 4), lambda m, x: m.renorm(x, 2, 0, 1.5)),
    ("method-quantile", (3, 4), lambda m, x: x.quantile(0.25, 1, interpolation="midpoint")),
    ("method-cummax", (3, 4), lambda m, x: x.cummax(-1)),
    ("method-logcumsumexp", (3, 4), lambda m, x: x.logcumsumexp(0)),
    ("method-renorm", (3, 4), lambda m, x: x.renorm(3, 1, 1.0)),
    ("method-histc", (3, 4), lambda m, x: x.histc(5, -1.0, 2.0)),
    ("method-mode", (3, 4), lambda m, x: x.mode(0)),
]


@pytest.mark.parametrize("name,shape,fn", FORWARD, ids=[c[0] for c in FORWARD])
def test_forward(device, name, shape, fn):
    ours, theirs = _both(fn, _data(shape, _dtype(device)), device=device, layout="transposed")
    _check(ours, theirs)
    if isinstance(theirs, tuple):
        assert type(ours).__name__ == type(theirs).__name__


@pytest.mark.parametrize("interpolation", INTERPOLATIONS)
def test_quantile_interpolations(device, interpolation):
    """Ties, a row with one NaN and a row of only NaN."""
    a = _data((4, 6), _dtype(device), distinct=False)
    a[1, 2], a[3, :] = np.nan, np.nan
    q = np.array([0.0, 0.1, 0.5, 0.75, 1.0], a.dtype)
    for name in ("quantile", "nanquantile"):
        ours, theirs = _both(lambda m, x, qq, name=name: getattr(m, name)(x, qq, 1, interpolation=interpolation),
                             a, q, device=device, layout="sliced")
        _check(ours, theirs)


def test_nanmedian_nan_rows(device):
    """Rows with NaN; a row of only NaN gives NaN (its index is 0 in clgrad, wherever torch's nth_element
    left it in torch, so only the values of that row are compared)."""
    a = _data((3, 5), _dtype(device))
    a[0, 1], a[1, ::2], a[2] = np.nan, np.nan, np.nan
    ours, theirs = _both(lambda m, x: m.nanmedian(x, 1), a, device=device)
    _check(ours.values, theirs.values)
    _check(ours.indices[:2], theirs.indices[:2])
    assert int(ours.indices[2]) == 0
    _check(clgrad.nanmedian(make(a, device)), torch.nanmedian(torch.tensor(a)))


@pytest.mark.parametrize("dtype", ["int32", "bool"])
def test_mode_ties_and_dtypes(device, dtype):
    a = _data((5, 7), dtype if dtype != "bool" else "int64", distinct=False, seed=3)
    a = a > 0 if dtype == "bool" else a
    _check(*_both(lambda m, x: m.mode(x, 1), a, device=device))
    _check(*_both(lambda m, x: m.mode(x, 0), a, device=device, layout="offset"))


@pytest.mark.parametrize("dtype", ["int8", "bool"])
def test_cummax_cummin_ties_and_dtypes(device, dtype):
    a = _data((3, 9), dtype if dtype != "bool" else "int64", distinct=False, seed=4)
    a = a > 0 if dtype == "bool" else a
    for name in ("cummax", "cummin"):
        _check(*_both(lambda m, x, name=name: getattr(m, name)(x, 1), a, device=device, layout="sliced"))


def test_cummax_nan_and_logcumsumexp_extremes(device):
    dt = _dtype(device)
    a = np.array([1.0, 3.0, np.nan, 2.0, np.nan, 5.0], dt)
    for name in ("cummax", "cummin"):
        _check(*_both(lambda m, x, name=name: getattr(m, name)(x, 0), a, device=device))
    b = np.array([[-1000.0, 0.0, 1.0, -np.inf, 50.0], [-np.inf] * 5, [np.inf, 1.0, -np.inf, 2.0, 3.0]], dt)
    _check(*_both(lambda m, x: m.logcumsumexp(x, 1), b, device=device))


def test_scalar_and_zero_size(device):
    dt = _dtype(device)
    s = np.array(1.5, dt)
    for fn in (lambda m, x: m.cummax(x, 0), lambda m, x: m.cummin(x, -1), lambda m, x: m.logcumsumexp(x, 0),
               lambda m, x: m.quantile(x, 0.5), lambda m, x: m.quantile(x, 0.5, 0), lambda m, x: m.nanmedian(x),
               lambda m, x: m.nanmedian(x, 0), lambda m, x: m.mode(x)):
        _check(*_both(fn, s, device=device))
    z = np.zeros((0, 3), dt)
    for fn in (lambda m, x: m.cummax(x, 0), lambda m, x: m.logcumsumexp(x, 1), lambda m, x: m.mode(x, 1),
               lambda m, x: m.nanmedian(x), lambda m, x: m.histc(x, 4), lambda m, x: m.histogram(x, 2),
               lambda m, x: m.renorm(x, 2, 1, 1.0)):
        _check(*_both(fn, z, device=device))


HIST = [
    ("histc", lambda m, x: m.histc(x, bins=6, min=-1.0, max=1.5)),
    ("histc-auto", lambda m, x: m.histc(x, bins=4)),
    ("histc-const", lambda m, x: m.histc(x * 0 + 2, bins=4)),
    ("histogram", lambda m, x: m.histogram(x, 5)),
    ("histogram-range", lambda m, x: m.histogram(x, 3, range=(-1.0, 2.0), density=True)),
    ("histogram-edges", lambda m, x: m.histogram(x, m.tensor([-2.0, 0.0, 0.5, 3.0], dtype=x.dtype, device=x.device))),
    ("histogram-weight", lambda m, x: m.histogram(x, 4, weight=x.abs(), density=True)),
    ("histogram-const", lambda m, x: m.histogram(x * 0 + 2, 4)),
]


@pytest.mark.parametrize("name,fn", HIST, ids=[c[0] for c in HIST])
def test_histograms(device, name, fn):
    a = np.random.default_rng(5).uniform(-2.2, 2.2, (4, 6)).astype(_dtype(device))
    a[0, :3] = [-1.0, 1.5, 0.5]  # on the edges
    ours, theirs = _both(fn, a, device=device, layout="transposed")
    _check(ours, theirs, rtol=1e-5, atol=1e-6)
    if name.startswith("histogram"):
        assert type(ours).__name__ == "histogram" and ours.hist is ours[0] and ours.bin_edges is ours[1]


# (id, fn(module, x) -> result to differentiate); inputs have distinct values, as gradcheck needs
GRADS = [(f"quantile-{i}", lambda m, x, i=i: m.quantile(x, m.tensor([0.2, 0.5, 1.0], dtype=x.dtype, device=x.device), 1,
                                                        interpolation=i)) for i in ("linear", "nearest")] + [
    ("nanquantile", lambda m, x: m.nanquantile(x, 0.6, 0)),
    ("nanmedian-all", lambda m, x: m.nanmedian(x)),
    ("nanmedian-dim", lambda m, x: m.nanmedian(x, 1).values),
    ("mode", lambda m, x: m.mode(x.round(), 1).values),
    ("cov", lambda m, x: m.cov(x)),
    ("corrcoef", lambda m, x: m.corrcoef(x)),
    ("logcumsumexp", lambda m, x: m.logcumsumexp(x, 1)),
    ("cummax", lambda m, x: m.cummax(x, 1).values),
    ("cummin", lambda m, x: m.cummin(x, 0).values),
    ("dist", lambda m, x: m.dist(x, x[1])),
    ("renorm", lambda m, x: m.renorm(x, 2, 0, 1.0)),
]


@pytest.mark.parametrize("name,fn", GRADS, ids=[c[0] for c in GRADS])
def test_gradcheck(device, name, fn):
    dt, kw = grad_precision(device)
    x = make(_data((3, 4), dt) * 0.5, device).requires_grad_()
    assert quiet_gradcheck(gradcheck, lambda t: fn(clgrad, t), (x,), **kw)


# ties and NaN: the gradient goes where torch sends it
TIE_GRADS = [(f"quantile-ties-{i}", lambda m, x, i=i: m.quantile(x, m.tensor([0.3, 0.5], dtype=x.dtype, device=x.device), 1,
                                                              interpolation=i)) for i in INTERPOLATIONS] + [
    ("nanmedian-all-ties", lambda m, x: m.nanmedian(x)),
    ("mode", lambda m, x: m.mode(x, 1).values),
    ("cummax-ties", lambda m, x: m.cummax(x, 1).values),
    ("cummin-ties", lambda m, x: m.cummin(x, 1).values),
    ("logcumsumexp", lambda m, x: m.logcumsumexp(x, 0)),
]


@pytest.mark.parametrize("name,fn", TIE_GRADS, ids=[c[0] for c in TIE_GRADS])
def test_grads_match_torch(device, name, fn):
    a = _data((3, 6), _dtype(device), distinct=False, seed=6)
    g = np.random.default_rng(7).standard_normal(np.shape(fn(torch, torch.tensor(a)))).astype(a.dtype)
    x, tx = make(a, device).requires_grad_(), torch.tensor(a, requires_grad=True)
    fn(clgrad, x).backward(make(g, device))
    fn(torch, tx).backward(torch.tensor(g))
    assert_close(x.grad, tx.grad.numpy())


def test_out_and_inplace(device):
    a = _data((3, 4), _dtype(device))
    x = make(a, device)
    out = clgrad.empty(3, dtype=x.dtype, device=device)
    assert clgrad.quantile(x, 0.5, 1, out=out) is out
    assert_close(out, torch.quantile(torch.tensor(a), 0.5, 1).numpy())
    y = x.clone()
    assert y.renorm_(2, 1, 1.0) is y
    assert_close(y, torch.tensor(a).renorm(2, 1, 1.0).numpy())


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e), str(e)
    return None, None


F32 = np.array([1.0, 2.0, 4.0], np.float32)
ERRORS = [
    lambda m: m.quantile(m.tensor([1, 2]), 0.5),
    lambda m: m.quantile(m.tensor(F32), 1.5),
    lambda m: m.quantile(m.tensor(F32), m.tensor([0.5, 2.0])),
    lambda m: m.quantile(m.tensor([]), 0.5),
    lambda m: m.nanquantile(m.tensor([]), 0.5),
    lambda m: m.nanquantile(m.tensor(F32), -0.5),
    lambda m: m.quantile(m.zeros(0, 3), 0.5, dim=0),
    lambda m: m.quantile(m.tensor(F32), m.tensor([[0.5]])),
    lambda m: m.quantile(m.tensor(F32), 0.5, interpolation="foo"),
    lambda m: m.nanquantile(m.tensor(F32), 0.5, interpolation="cubic"),
    lambda m: m.quantile(m.tensor(F32), m.tensor([0.5], dtype=m.float64)),
    lambda m: m.mode(m.zeros(2, 0), 1),
    lambda m: m.nanmedian(m.zeros(2, 0), 1),
    lambda m: m.logcumsumexp(m.tensor([1, 2]), 0),
    lambda m: m.cummax(m.zeros(2, 3), 2),
    lambda m: m.histc(m.tensor([1, 2]), bins=3),
    lambda m: m.histc(m.tensor(F32), bins=0),
    lambda m: m.histc(m.tensor(F32), bins=3, min=3, max=1),
    lambda m: m.histc(m.tensor([1.0, float("inf")]), bins=2),
    lambda m: m.histogram(m.tensor(F32), bins=0),
    lambda m: m.histogram(m.tensor(F32), bins=2, range=(3.0, 1.0)),
    lambda m: m.histogram(m.tensor(F32), bins=m.tensor([0.0, 1.0], dtype=m.float64)),
    lambda m: m.histogram(m.tensor(F32), bins=m.tensor([[0.0, 1.0]])),
    lambda m: m.histogram(m.tensor(F32), bins=2, weight=m.ones(2)),
    lambda m: m.cov(m.zeros(2, 2, 2)),
    lambda m: m.cov(m.tensor(F32), fweights=m.tensor([1.0, 2.0, 3.0])),
    lambda m: m.cov(m.tensor(F32), fweights=m.tensor([1, -2, 3])),
    lambda m: m.cov(m.tensor(F32), aweights=m.tensor([1, 2, 3])),
    lambda m: m.cov(m.tensor(F32), aweights=m.tensor([1.0, 2.0])),
    lambda m: m.cov(m.tensor(F32), aweights=m.tensor([1.0, -2.0, 3.0])),
    lambda m: m.cov(m.tensor(F32), fweights=m.tensor([[1, 2, 3]])),
    lambda m: m.renorm(m.zeros(3), 2, 0, 1),
    lambda m: m.renorm(m.zeros(3, 3), -1, 0, 1),
    lambda m: m.renorm(m.zeros(3, 3), 2, 0, -1),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_match_torch(case):
    ours, theirs = _error(lambda: ERRORS[case](clgrad)), _error(lambda: ERRORS[case](torch))
    assert theirs[0] is not None and ours[0] is theirs[0], (ours, theirs)
    assert ours[1].replace("clgrad", "torch") == theirs[1].replace("histogram_cpu", "histc").replace(
        "logcumsumexp_out_cpu", "logcumsumexp")


def test_cov_warns_on_zero_dof():
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        c = clgrad.cov(clgrad.tensor([1.0]))
    assert np.isnan(to_numpy(c))


# ---- PyTorch's OpInfo samples as the oracle -------------------------------------------------------
OPINFO_OPS = ("quantile", "nanquantile", "nanmedian", "mode", "cov", "corrcoef", "histc", "histogram",
              "logcumsumexp", "cummax", "cummin", "dist", "renorm")
SAMPLES_PER_OP = 5


def _opinfo_samples(name: str, dtype):
    """Up to SAMPLES_PER_OP samples spread over the OpInfo's list (its later samples vary more arguments)."""
    pytest.importorskip("expecttest")
    from torch.testing._internal.common_methods_invocations import op_db

    (info,) = [o for o in op_db if o.name == name and not o.variant_test_name]
    samples = list(info.sample_inputs("cpu", dtype, requires_grad=info.supports_autograd))
    step = max(1, len(samples) // SAMPLES_PER_OP)
    return info, samples[::step][:SAMPLES_PER_OP]


def _to_clgrad(v, device):
    if torch.is_tensor(v):
        t = clgrad.tensor(v.detach().numpy(), device=device)
        return t.requires_grad_() if v.requires_grad else t
    return v


def _outputs(r) -> list:
    return list(r) if isinstance(r, tuple) else [r]


@pytest.mark.parametrize("name", OPINFO_OPS)
def test_opinfo_samples(device, name):
    """Values (and indices) of each sample against torch, then the gradient of a random projection of the
    floating outputs for ops torch differentiates."""
    if device != "cpu" and device != next(d.values[0] for d in DEVICES if d.values[0] != "cpu"):
        pytest.skip("OpInfo samples run on cpu and the first OpenCL device only (CI time)")
    tdt = torch.float64 if fp64_ok(device) else torch.float32
    info, samples = _opinfo_samples(name, tdt)
    rng = np.random.default_rng(0)
    for s in samples:
        x = _to_clgrad(s.input, device)
        args = [_to_clgrad(a, device) for a in s.args]
        kwargs = {k: _to_clgrad(v, device) for k, v in s.kwargs.items()}
        ours, theirs = _outputs(getattr(clgrad, name)(x, *args, **kwargs)), _outputs(info.op(s.input, *s.args,
                                                                                                   **s.kwargs))
        for o, t in zip(ours, theirs):
            assert_close(o, t.detach().numpy(), rtol=1e-6 if tdt is torch.float32 else 1e-9, atol=1e-6)
        if not (info.supports_autograd and s.input.requires_grad):
            continue
        gs = [rng.standard_normal(tuple(t.shape)) for t in theirs if t.dtype.is_floating_point]
        torch.autograd.backward([t for t in theirs if t.dtype.is_floating_point],
                                [torch.tensor(g, dtype=tdt) for g in gs])
        clgrad.autograd.backward([o for o in ours if o.dtype.kind == "f"],
                                 [clgrad.tensor(g, dtype=x.dtype, device=device) for g in gs])
        # float32 (devices without fp64): samples with |x| ~ 1e4 leave gradients only ~3 digits (x - out rounds)
        tol = dict(rtol=1e-2, atol=1e-3) if tdt is torch.float32 else dict(rtol=1e-9, atol=1e-6)
        assert_close(x.grad, s.input.grad.numpy(), **tol)
