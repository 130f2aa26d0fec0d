"""Random sampling: one Philox stream on every device, generators, statistics and PyTorch's errors."""
from __future__ import annotations

import dataclasses
import pickle
import re

import numpy as np
import pytest

import clgrad
from clgrad.backends import philox
from clgrad.backends.opencl import runtime
from tests.conftest import fp64_ok
from tests.helpers import make, to_numpy

SEED = 2**40 + 7


def _bits(t) -> np.ndarray:
    """Raw bytes, so that bit-identical means identical (-0.0 != 0.0, nan payloads)."""
    return np.ascontiguousarray(to_numpy(t)).view(np.uint8)


def _probs(dev):
    return clgrad.tensor(np.linspace(0, 1, 64), dtype=clgrad.float32, device=dev)


# (id, sampler(device, generator)): each must give bit-identical results on every device.
# Every entry compiles one kernel variant per device, so the table stays short.
BITWISE = [
    ("rand_f32", lambda d, g: clgrad.rand(3, 67, generator=g, device=d)),
    ("rand_f16", lambda d, g: clgrad.rand(129, dtype=clgrad.float16, generator=g, device=d)),
    ("rand_f64", lambda d, g: clgrad.rand(2, 50, dtype=clgrad.float64, generator=g, device=d)),
    ("uniform_", lambda d, g: clgrad.empty(5, 7, device=d).uniform_(-2.5, 4, generator=g)),
    ("randint_i64", lambda d, g: clgrad.randint(-1000, 10**12, (300,), generator=g, device=d)),
    ("randint_i8", lambda d, g: clgrad.randint(-128, 128, (4, 75), generator=g, dtype=clgrad.int8, device=d)),
    ("randint_f32", lambda d, g: clgrad.randint(50, (100,), generator=g, dtype=clgrad.float32, device=d)),
    ("randint_bool", lambda d, g: clgrad.randint(0, 2, (50,), generator=g, dtype=clgrad.bool, device=d)),
    ("random_i64", lambda d, g: clgrad.empty(200, dtype=clgrad.int64, device=d).random_(generator=g)),
    ("random_full", lambda d, g: clgrad.empty(200, dtype=clgrad.int64, device=d).random_(-(2**63), None, generator=g)),
    ("bernoulli_p", lambda d, g: clgrad.empty(300, dtype=clgrad.bool, device=d).bernoulli_(0.3, generator=g)),
    ("bernoulli_t", lambda d, g: clgrad.bernoulli(_probs(d), generator=g)),
    ("bernoulli_t_", lambda d, g: clgrad.zeros(3, 64, device=d).bernoulli_(_probs(d), generator=g)),
    ("randperm", lambda d, g: clgrad.randperm(100, generator=g, device=d)),
]


@pytest.mark.parametrize("sampler", [s for _, s in BITWISE], ids=[i for i, _ in BITWISE])
def test_same_stream_on_every_device(device, sampler):
    g = clgrad.Generator()
    try:
        got = sampler(device, g.manual_seed(SEED))
    except TypeError as exc:  # float64 where the device lacks cl_khr_fp64
        assert not fp64_ok(device) and "cl_khr_fp64" in str(exc)
        return
    want = sampler("cpu", g.manual_seed(SEED))
    assert got.device == clgrad.device(device) and got.dtype is want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(_bits(got), _bits(want))


def test_cpu_follows_the_reference_stream():
    g = clgrad.Generator().manual_seed(SEED)
    a = clgrad.rand(10, generator=g)
    b = clgrad.randint(-5, 5, (2, 3), generator=g)
    np.testing.assert_array_equal(a.numpy(), philox.sample("uniform", "float32", 10, SEED, 0, 0.0, 1.0))
    np.testing.assert_array_equal(b.numpy().ravel(), philox.sample("randint", "int64", 6, SEED, 10, -5, 5))


@pytest.mark.parametrize("layout", ["transposed", "sliced", "offset"])
def test_uniform_into_strided_out(device, layout):
    # elements are drawn in the tensor's logical row-major order, whatever its memory layout
    out = make(np.zeros((5, 6), np.float32), device, layout)
    assert not out.is_contiguous() or out.storage_offset()
    out.uniform_(-1, 3, generator=clgrad.Generator().manual_seed(SEED))
    want = clgrad.empty(5, 6).uniform_(-1, 3, generator=clgrad.Generator().manual_seed(SEED))
    np.testing.assert_array_equal(_bits(out), _bits(want))
    normal = make(np.zeros((5, 6), np.float32), device, layout).normal_(2, 3, generator=clgrad.Generator())
    np.testing.assert_allclose(to_numpy(normal), clgrad.randn(5, 6, generator=clgrad.Generator()).numpy() * 3 + 2,
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype, tol", [(clgrad.float32, 1e-5), (clgrad.float16, 2e-3), (clgrad.float64, 1e-12)])
def test_normal_close_across_devices(device, dtype, tol):
    # log/cos/sqrt may differ by a few ulps between devices, so normal is close rather than identical
    if dtype is clgrad.float64 and not fp64_ok(device):
        pytest.skip("no fp64")
    got = clgrad.randn(1000, dtype=dtype, device=device, generator=clgrad.Generator().manual_seed(SEED))
    want = clgrad.randn(1000, dtype=dtype, generator=clgrad.Generator().manual_seed(SEED))
    assert got.dtype is dtype
    np.testing.assert_allclose(to_numpy(got).astype(np.float64), want.numpy().astype(np.float64), rtol=tol, atol=tol)


def test_default_generator_and_manual_seed(device):
    clgrad.manual_seed(123)
    a = to_numpy(clgrad.rand(10, device=device))
    b = to_numpy(clgrad.rand(20, device=device))
    clgrad.manual_seed(123)
    both = to_numpy(clgrad.rand(30, device=device))
    np.testing.assert_array_equal(np.concatenate([a, b]), both)  # each call advances the offset by numel
    clgrad.manual_seed(124)
    assert (to_numpy(clgrad.rand(30, device=device)) != both).mean() > 0.9
    clgrad.manual_seed(123)
    np.testing.assert_array_equal(to_numpy(clgrad.rand(30)), both)  # and cpu continues the same stream


def test_generators_are_independent():
    g1, g2 = clgrad.Generator().manual_seed(5), clgrad.Generator().manual_seed(5)
    state = clgrad.get_rng_state()
    x = clgrad.rand(8, generator=g1)
    np.testing.assert_array_equal(x.numpy(), clgrad.rand(8, generator=g2).numpy())
    np.testing.assert_array_equal(clgrad.get_rng_state().numpy(), state.numpy())  # default untouched
    assert (clgrad.rand(8, generator=g1).numpy() != x.numpy()).all()
    clgrad.manual_seed(5)
    np.testing.assert_array_equal(clgrad.rand(8).numpy(), x.numpy())


def test_state_roundtrip():
    g = clgrad.Generator().manual_seed(2**64 - 3)
    clgrad.randn(7, generator=g)
    state = g.get_state()
    assert state.dtype is clgrad.uint8 and state.shape == (16,) and state.device.type == "cpu"
    assert state.numpy().view("<u8").tolist() == [2**64 - 3, 7]
    x = clgrad.rand(5, generator=g).numpy()
    assert g.set_state(state) is g
    np.testing.assert_array_equal(clgrad.rand(5, generator=g).numpy(), x)
    state.zero_()  # set_state copied the state
    np.testing.assert_array_equal(g.get_state().numpy().view("<u8"), [2**64 - 3, 12])
    h = pickle.loads(pickle.dumps(g))
    np.testing.assert_array_equal(clgrad.rand(3, generator=h).numpy(), clgrad.rand(3, generator=g).numpy())
    saved = clgrad.get_rng_state()
    y = clgrad.rand(4).numpy()
    clgrad.set_rng_state(saved)
    np.testing.assert_array_equal(clgrad.rand(4).numpy(), y)


def test_seeds():
    assert clgrad.Generator().initial_seed() == 67280421310721
    assert clgrad.Generator().manual_seed(-1).initial_seed() == 2**64 - 1
    g = clgrad.Generator()
    s = g.seed()
    assert 0 <= s < 2**64 and g.initial_seed() == s
    assert clgrad.manual_seed(3) is clgrad.default_generator and clgrad.initial_seed() == 3
    assert clgrad.Generator("cpu").device == clgrad.device("cpu")


def test_statistics(device):
    g = clgrad.Generator().manual_seed(SEED)
    n = 50_000
    u = to_numpy(clgrad.rand(n, device=device, generator=g)).astype(np.float64)
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.005
    z = to_numpy(clgrad.normal(3.0, 2.0, (n,), device=device, generator=g))
    assert abs(z.mean() - 3) < 0.05 and abs(z.std() - 2) < 0.05
    r = to_numpy(clgrad.randint(3, 13, (n,), device=device, generator=g))
    counts = np.bincount(r - 3)
    assert len(counts) == 10 and (abs(counts - n / 10) < 6 * np.sqrt(n / 10)).all()
    b = to_numpy(clgrad.empty(n, device=device).bernoulli_(0.25, generator=g))
    assert set(np.unique(b)) <= {0.0, 1.0} and abs(b.mean() - 0.25) < 0.01
    e = to_numpy(clgrad.empty(n, device=device).exponential_(4.0, generator=g))
    assert e.min() >= 0 and abs(e.mean() - 0.25) < 0.01
    byte = to_numpy(clgrad.empty(n, dtype=clgrad.uint8, device=device).random_(generator=g))
    assert byte.min() == 0 and byte.max() == 255


def test_tensor_normal_and_bernoulli(device):
    mean = clgrad.tensor([0.0, 10.0, -10.0], device=device)
    std = clgrad.tensor([[0.0], [1e-3]], device=device)
    x = clgrad.normal(mean, std, generator=clgrad.Generator())
    assert x.shape == (2, 3) and x.dtype is clgrad.float32
    np.testing.assert_allclose(to_numpy(x), [[0, 10, -10]] * 2, atol=0.01)
    np.testing.assert_array_equal(to_numpy(x)[0], [0, 10, -10])
    p = clgrad.tensor([0.0, 1.0, 0.0, 1.0], dtype=clgrad.float16, device=device)
    b = clgrad.bernoulli(p)
    assert b.dtype is clgrad.float16
    np.testing.assert_array_equal(to_numpy(b), [0, 1, 0, 1])
    np.testing.assert_array_equal(to_numpy(p.bernoulli()), [0, 1, 0, 1])
    np.testing.assert_array_equal(to_numpy(clgrad.zeros(2, 4, dtype=clgrad.int64, device=device).bernoulli_(p)),
                                  [[0, 1, 0, 1]] * 2)


@pytest.mark.parametrize("n, dtype", [(0, clgrad.int64), (1, clgrad.int64), (1000, clgrad.int64),
                                      (256, clgrad.uint8), (300, clgrad.float32)])
def test_randperm(device, n, dtype):
    p = clgrad.randperm(n, dtype=dtype, device=device, generator=clgrad.Generator().manual_seed(1))
    assert p.dtype is dtype and p.shape == (n,) and p.device == clgrad.device(device)
    np.testing.assert_array_equal(np.sort(to_numpy(p)), np.arange(n))
    again = clgrad.randperm(n, dtype=dtype, device=device, generator=clgrad.Generator().manual_seed(1))
    np.testing.assert_array_equal(to_numpy(again), to_numpy(p))
    if n >= 256:
        other = clgrad.randperm(n, dtype=dtype, generator=clgrad.Generator().manual_seed(2))
        assert (to_numpy(other) != to_numpy(p)).mean() > 0.9


def test_shapes_dtypes_and_overloads(device):
    clgrad.set_default_dtype(clgrad.float64 if fp64_ok(device) else clgrad.float32)
    try:
        assert clgrad.rand(2, 3, device=device).dtype is clgrad.get_default_dtype()
    finally:
        clgrad.set_default_dtype(clgrad.float32)
    assert clgrad.rand((2, 3), device=device).shape == (2, 3)
    assert clgrad.randn([4], device=device).shape == (4,)
    assert clgrad.rand(size=(2, 1)).shape == (2, 1) and clgrad.rand(0, 5).shape == (0, 5)
    for call in (lambda: clgrad.randint(5, (2,)), lambda: clgrad.randint(1, 5, (2,)),
                 lambda: clgrad.randint(5, size=(2,)), lambda: clgrad.randint(low=1, high=5, size=(2,)),
                 lambda: clgrad.randint(high=5, size=[2])):
        t = call()
        assert t.shape == (2,) and t.dtype is clgrad.int64 and 0 <= to_numpy(t).min() and to_numpy(t).max() < 5
    x = clgrad.zeros(3, 2, dtype=clgrad.float16, device=device)
    for t in (clgrad.rand_like(x), clgrad.randn_like(x), clgrad.randint_like(x, 7), clgrad.randint_like(x, 2, 7)):
        assert t.shape == (3, 2) and t.dtype is clgrad.float16 and t.device == x.device
    assert to_numpy(clgrad.randint_like(x, 2, 7)).min() >= 2
    assert to_numpy(clgrad.empty(3, device=device).random_(5)).max() < 5
    assert to_numpy(clgrad.empty(3, device=device).random_(**{"from": 5, "to": 7})).min() >= 5
    assert to_numpy(clgrad.empty(3, device=device).uniform_(**{"from": 2.0, "to": 3.0})).min() >= 2


def test_float64_needs_fp64(device, monkeypatch):
    if device == "cpu":
        pytest.skip("cpu always has float64")
    dev = runtime.get(int(device.split(":")[1]))
    monkeypatch.setattr(dev, "props", dataclasses.replace(dev.props, fp64=False))
    with pytest.raises(TypeError, match="cl_khr_fp64"):
        clgrad.rand(3, dtype=clgrad.float64, device=device)


# (call(m) with m = clgrad or torch, exception, message, same message as torch?)
_BOOM = "Expected p_in >= 0 && p_in <= 1 to be true, but got false."
ERRORS = [
    (lambda m: m.randint(5, 5, (3,)), RuntimeError, "random_ expects 'from' to be less than 'to', but got from=5 >= to=5"),
    (lambda m: m.randint(0, 300, (3,), dtype=m.uint8), RuntimeError, "to - 1 is out of bounds for unsigned char"),
    (lambda m: m.randint(-1, 3, (3,), dtype=m.uint8), RuntimeError, "from is out of bounds for unsigned char"),
    (lambda m: m.randint(0, 3, (3,), dtype=m.bool), RuntimeError, "to - 1 is out of bounds for bool"),
    (lambda m: m.randint(0, 2**63, (3,)), ValueError, "Overflow when unpacking long long"),
    (lambda m: m.rand(3, dtype=m.int64), NotImplementedError, "\"check_uniform_bounds\" not implemented for 'Long'"),
    (lambda m: m.randn(3, dtype=m.int32), NotImplementedError, "\"normal_kernel_cpu\" not implemented for 'Int'"),
    (lambda m: m.rand(-1), RuntimeError, "Trying to create tensor with negative dimension -1: [-1]"),
    (lambda m: m.zeros(3).uniform_(2, 1), RuntimeError,
     "uniform_ expects to return a [from, to) range, but found from=2 > to=1"),
    (lambda m: m.zeros(3).uniform_(-3e38, 3e38), RuntimeError,
     "uniform_ expects to-from <= std::numeric_limits<Float>::max(), but found to=3e+38 and from=-3e+38 which "
     "result in to-from to exceed the limit"),
    (lambda m: m.zeros(3, dtype=m.float16).uniform_(0, float("inf")), RuntimeError, "to is out of bounds for c10::Half"),
    (lambda m: m.zeros(3).normal_(0, -1), RuntimeError, "normal expects std >= 0.0, but found std -1"),
    (lambda m: m.normal(0, float("nan"), (3,)), RuntimeError, "normal expects std >= 0.0, but found std nan"),
    (lambda m: m.normal(m.zeros(3), -m.ones(3)), RuntimeError, "normal expects all elements of std >= 0.0"),
    (lambda m: m.normal(m.zeros(3, dtype=m.int64), 1.0), NotImplementedError,
     "\"normal_kernel_cpu\" not implemented for 'Long'"),
    (lambda m: m.zeros(3).bernoulli_(1.5), RuntimeError, "bernoulli_ expects p to be in [0, 1], but got p=1.5"),
    (lambda m: m.bernoulli(m.full((3,), 1.5)), RuntimeError, _BOOM),
    (lambda m: m.bernoulli(m.zeros(3, dtype=m.int64)), NotImplementedError,
     "\"bernoulli_tensor_cpu_p_\" not implemented for 'Long'"),
    (lambda m: m.zeros(3, dtype=m.uint8).random_(0, 257), RuntimeError, "to - 1 is out of bounds for unsigned char"),
    (lambda m: m.zeros(3, dtype=m.float16).random_(3000, None), RuntimeError,
     "random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' casted to dtype, but got "
     "from=3000 > to_inc=2048"),
    (lambda m: m.zeros(3).exponential_(0), RuntimeError, "exponential_ expects lambda > 0.0, but found lambda=0"),
    (lambda m: m.zeros(3, dtype=m.int64).exponential_(), RuntimeError,
     "Exponential distribution is a continuous probability distribution. dtype must be a floating point but you "
     "specified Long"),
    (lambda m: m.zeros(3).expand(2, 3).uniform_(), RuntimeError,
     "unsupported operation: more than one element of the written-to tensor refers to a single memory location."),
    (lambda m: m.randperm(300, dtype=m.uint8), RuntimeError,
     "value cannot be converted to type uint8_t without overflow"),
    (lambda m: m.randperm(3000, dtype=m.float16), RuntimeError, "n cannot be greater than 2049 for Half type."),
    (lambda m: m.randperm(3, dtype=m.bool), NotImplementedError, "\"randperm\" not implemented for 'Bool'"),
    (lambda m: m.randperm(-1), RuntimeError, "Trying to create tensor with negative dimension -1: [-1]"),
    (lambda m: m.Generator().manual_seed(2**64), ValueError, "Overflow when unpacking long long"),
    (lambda m: m.Generator().manual_seed("a"), RuntimeError, "manual_seed expected a long, but got str"),
    (lambda m: m.Generator().set_state(m.zeros(16)), TypeError, "RNG state must be a torch.ByteTensor"),
    (lambda m: m.Generator().set_state(5), TypeError, "expected a torch.ByteTensor, but got int"),
]


@pytest.mark.parametrize("call, exc, message", ERRORS)
def test_errors(call, exc, message):
    with pytest.raises(exc) as info:
        call(clgrad)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize("call, exc, message", ERRORS)
def test_errors_match_torch(call, exc, message):
    torch = pytest.importorskip("torch")
    with pytest.raises(exc) as info:
        call(torch)
    assert str(info.value).startswith(message)


def test_set_state_wrong_size():
    with pytest.raises(RuntimeError, match="RNG state is wrong size"):
        clgrad.Generator().set_state(clgrad.zeros(3, dtype=clgrad.uint8))


def test_multinomial(device):
    """Frequencies follow the weights, zero weights are never drawn, draws without replacement are distinct,
    and a seed gives the same indices on every device."""
    weights = clgrad.tensor([0.1, 0.0, 0.6, 0.3], device=device)
    clgrad.manual_seed(0)
    draws = clgrad.multinomial(weights, 20000, replacement=True)
    assert draws.dtype is clgrad.int64 and draws.shape == (20000,) and str(draws.device) == device
    freq = np.bincount(draws.cpu().numpy(), minlength=4) / 20000
    np.testing.assert_allclose(freq, [0.1, 0.0, 0.6, 0.3], atol=0.015)
    clgrad.manual_seed(0)
    assert clgrad.multinomial(weights.cpu(), 20000, replacement=True).tolist() == draws.tolist()
    rows = (weights * 2).expand(3000, 4).contiguous().multinomial(3)  # unnormalised weights are fine
    picked = rows.cpu().numpy()
    assert rows.shape == (3000, 3) and (picked != 1).all()
    assert all(len(set(r)) == 3 for r in picked)
    np.testing.assert_allclose(np.bincount(picked[:, 0], minlength=4) / 3000, [0.1, 0.0, 0.6, 0.3], atol=0.03)


@pytest.mark.parametrize("args,kw,message", [
    (([[[1.0]]], 1), {}, "prob_dist must be 1 or 2 dim"),
    (([1, 2], 1), {}, "only supports floating-point dtypes"),
    (([1.0, 2.0], 0), {}, "cannot sample n_sample <= 0 samples"),
    (([1.0, 2.0], 3), {}, "cannot sample n_sample > prob_dist.size"),
    (([1.0, -1.0], 1), {}, "`inf`, `nan` or element < 0"),
    (([1.0, float("nan")], 1), {}, "`inf`, `nan` or element < 0"),
    (([0.0, 0.0], 1), {"replacement": True}, "sum of probabilities <= 0"),
])
def test_multinomial_errors_match_torch(args, kw, message, device):
    data, n = args
    with pytest.raises(RuntimeError, match=re.escape(message)):
        clgrad.multinomial(clgrad.tensor(data, device=device), n, **kw)
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match=re.escape(message)):
        torch.multinomial(torch.tensor(data), n, **kw)
