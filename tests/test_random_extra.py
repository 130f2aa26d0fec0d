"""cauchy_, geometric_ and log_normal_ (clgrad/random_extra.py): the Philox stream transformed, so every device
matches cpu (bit for bit where the transform is exact, within a few ulp of tan/log/exp otherwise); the
distributions by Kolmogorov-Smirnov and moments at fixed seeds; PyTorch's errors."""
from __future__ import annotations

import math

import numpy as np
import pytest

import clgrad
from tests.conftest import fp64_ok
from tests.helpers import make, to_numpy

SEED = 2**33 + 5
N = 4000


def _gen():
    return clgrad.Generator().manual_seed(SEED)


def _ks(sample: np.ndarray, cdf) -> float:
    """The Kolmogorov-Smirnov statistic of ``sample`` against ``cdf`` (a numpy ufunc-like function)."""
    x = np.sort(sample.astype(np.float64))
    f = cdf(x)
    n = x.size
    return max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))


KS_LIMIT = 1.63 / math.sqrt(N)  # the 1% critical value; the seeds are fixed, so the test is deterministic


# (id, sampler(tensor, generator), exact across devices?)
SAMPLERS = [
    ("cauchy", lambda t, g: t.cauchy_(1.5, 0.5, generator=g), False),
    ("log_normal", lambda t, g: t.log_normal_(0.25, 0.5, generator=g), False),
    ("geometric", lambda t, g: t.geometric_(0.3, generator=g), True),
]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("case", SAMPLERS, ids=[c[0] for c in SAMPLERS])
def test_same_stream_as_cpu(device, case, dtype):
    _, sample, exact = case
    if dtype == "int64" and not exact:
        pytest.skip("continuous distributions refuse integer tensors")
    if dtype == "float64" and not fp64_ok(device):
        pytest.skip("no fp64 on this device")
    dt = getattr(clgrad, dtype)
    got = sample(make(np.zeros((7, 9)), device, "transposed", dtype=dt), _gen())
    want = sample(clgrad.empty(7, 9, dtype=dt), _gen())
    assert got.dtype is dt and got.device == clgrad.device(device)
    if exact:
        np.testing.assert_array_equal(to_numpy(got), to_numpy(want))
    else:
        tol = 1e-5 if dtype == "float32" else 1e-12
        np.testing.assert_allclose(to_numpy(got), to_numpy(want), rtol=tol, atol=tol)


def test_transforms_of_the_uniform_and_normal_streams():
    u = clgrad.rand(50, generator=_gen(), dtype=clgrad.float64).numpy()
    c = clgrad.empty(50, dtype=clgrad.float64).cauchy_(2.0, 3.0, generator=_gen()).numpy()
    np.testing.assert_allclose(c, 2.0 + 3.0 * np.tan(np.pi * (u - 0.5)), rtol=1e-10)
    geo = clgrad.empty(50, dtype=clgrad.float64).geometric_(0.2, generator=_gen()).numpy()
    np.testing.assert_array_equal(geo, np.maximum(np.ceil(np.log1p(-u) / np.log1p(-0.2)), 1))
    z = clgrad.randn(50, generator=_gen(), dtype=clgrad.float64).numpy()
    ln = clgrad.empty(50, dtype=clgrad.float64).log_normal_(1.0, 0.5, generator=_gen()).numpy()
    np.testing.assert_allclose(ln, np.exp(1.0 + 0.5 * z), rtol=1e-10)
    g = _gen()
    clgrad.empty(10).cauchy_(generator=g)
    assert g.get_state().numpy().view("<u8")[1] == 10  # one counter per element, like uniform_


def test_distributions(device):
    g = _gen()
    c = to_numpy(clgrad.empty(N, device=device).cauchy_(1.5, 0.5, generator=g)).astype(np.float64)
    assert _ks(c, lambda x: 0.5 + np.arctan((x - 1.5) / 0.5) / np.pi) < KS_LIMIT
    assert abs(np.median(c) - 1.5) < 0.05
    ln = to_numpy(clgrad.empty(N, device=device).log_normal_(0.25, 0.5, generator=g)).astype(np.float64)
    erf = np.vectorize(math.erf)
    assert _ks(ln, lambda x: 0.5 * (1 + erf((np.log(x) - 0.25) / (0.5 * math.sqrt(2))))) < KS_LIMIT
    assert abs(ln.mean() / math.exp(0.25 + 0.125) - 1) < 0.03
    p = 0.3
    geo = to_numpy(clgrad.empty(N, dtype=clgrad.int64, device=device).geometric_(p, generator=g))
    assert geo.min() >= 1
    assert abs(geo.mean() * p - 1) < 0.05 and abs(geo.var() / ((1 - p) / p**2) - 1) < 0.1
    k = np.arange(1, 6)
    np.testing.assert_allclose([(geo == i).mean() for i in k], p * (1 - p) ** (k - 1), atol=0.025)


def test_against_torch_distributions():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    for ours, theirs in [
        (clgrad.empty(N).cauchy_(generator=_gen()), torch.empty(N).cauchy_()),
        (clgrad.empty(N).log_normal_(generator=_gen()), torch.empty(N).log_normal_()),
        (clgrad.empty(N).geometric_(0.4, generator=_gen()), torch.empty(N).geometric_(0.4)),
    ]:
        a, b = np.sort(ours.numpy()), np.sort(theirs.numpy())
        both = np.concatenate([a, b])
        ecdf = np.searchsorted(a, both, side="right") / N - np.searchsorted(b, both, side="right") / N
        assert np.abs(ecdf).max() < 1.95 / math.sqrt(N / 2)  # two-sample KS at 0.1%


def test_half_precision(device):
    x = clgrad.empty(100, dtype=clgrad.float16, device=device)
    assert np.isfinite(to_numpy(x.log_normal_(0.0, 0.25, generator=_gen()))).all()
    assert (to_numpy(x.geometric_(0.5, generator=_gen())) >= 1).all()


ERRORS = [
    (lambda: clgrad.ones(2).cauchy_(sigma=0), RuntimeError, "cauchy_ expects sigma > 0.0, but found sigma=0"),
    (lambda: clgrad.ones(2).geometric_(0), RuntimeError, r"geometric_ expects p to be in \(0, 1\), but got p=0"),
    (lambda: clgrad.ones(2).geometric_(1), RuntimeError, "but got p=1"),
    (lambda: clgrad.ones(2).log_normal_(std=0), RuntimeError, "log_normal_ expects std > 0.0, but found std=0"),
    (lambda: clgrad.ones(2, dtype=clgrad.int64).cauchy_(), RuntimeError, "dtype must be a floating point but you "
                                                                           "specified long int"),
    (lambda: clgrad.ones(2, dtype=clgrad.int64).log_normal_(), NotImplementedError, "\"log_normal_cpu\" not "
                                                                                    "implemented for 'Long'"),
    (lambda: clgrad.ones(2, dtype=clgrad.bool).geometric_(0.5), NotImplementedError, "'Bool'"),
    (lambda: clgrad.ones(1).expand(3).geometric_(0.5), RuntimeError, "more than one element"),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_errors(k):
    fn, kind, match = ERRORS[k]
    with pytest.raises(kind, match=match):
        fn()
