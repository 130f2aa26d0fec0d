"""bfloat16 against PyTorch's bfloat16 on every device: conversions bit for bit (c10::BFloat16's round to nearest
even, through float32 from a double or an int), promotion, finfo, the numpy bridge's refusal, and elementwise,
reduction, matmul, softmax and conv results within bfloat16's rounding of torch's, autograd and a training step.
"""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
from clgrad import nn

torch = pytest.importorskip("torch")

_NAMES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "bfloat16")
EPS = 2.0 ** -8  # bfloat16's unit roundoff: one rounding of a float32 result


def _bits(t) -> np.ndarray:
    """The uint16 patterns of a bfloat16 clgrad tensor on any device (a view on cpu, a copy from a device)."""
    return np.asarray(t.cpu()._host()).view(np.uint16)


def _torch_bits(t) -> np.ndarray:
    return t.view(torch.int16).numpy().view(np.uint16)


def _patterns() -> np.ndarray:
    """float32 bit patterns: random ones, every tie and near-tie of the lower 16 bits, subnormals, infs, NaNs."""
    rng = np.random.default_rng(0)
    rand = rng.integers(0, 2**32, 3000, dtype=np.uint64).astype(np.uint32)
    highs = rng.integers(0, 2**16, 64, dtype=np.uint32) << 16
    lows = np.array([0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF], np.uint32)
    special = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7F7FFFFF, 0x7F7F8000, 0x00000001, 0x007FFFFF,
                        0x00008000, 0x00018000, 0x3F808000, 0x3F818000], np.uint32)
    return np.concatenate([rand, (highs[:, None] | lows[None, :]).ravel(), special])


def test_float32_to_bfloat16_bits_match_torch(device):
    f = _patterns().view(np.float32)
    finite = ~np.isnan(f)
    want = _torch_bits(torch.from_numpy(f).bfloat16())
    got = clgrad.tensor(f, device=device).bfloat16()
    assert got.dtype is clgrad.bfloat16 and got.element_size() == 2
    assert np.array_equal(_bits(got)[finite], want[finite])
    assert np.isnan(got.float().cpu().numpy()[~finite]).all()  # NaN stays NaN (0x7fc0; torch's vector path 0xffff)


def test_double_and_int_round_twice_as_torch(device):
    """float64 and int64 go through float32 first, as c10::BFloat16 converts (1 + 2^-8 + 2^-30 -> 1, not 1 + 2^-7)."""
    d = np.array([1 + 2**-8 + 2**-30, -(1 + 2**-8 + 2**-40), 3.0000001, 1e300, -1e-300, 2**-133], np.float64)
    i = np.array([16777217, 2**40 + 2**32 + 1, -257, 255, 2**62 + 2**54 + 1], np.int64)
    for x in (d, i):
        if x.dtype == np.float64 and device != "cpu" and not _fp64(device):
            continue
        got = clgrad.tensor(x, device=device).to(clgrad.bfloat16)
        assert np.array_equal(_bits(got), _torch_bits(torch.from_numpy(x).to(torch.bfloat16)))


def _fp64(device) -> bool:
    from tests.conftest import fp64_ok

    return fp64_ok(device)


def test_bfloat16_to_others_exact(device):
    bits = np.arange(0, 2**16, 7, dtype=np.uint16)
    t_src = torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16)
    src = clgrad.tensor(bits.view(clgrad.bfloat16.np), device=device)  # ml_dtypes' array: the same bits
    for name in ("float32", "float16", "int32", "uint8", "bool"):
        want = t_src.to(getattr(torch, name))
        finite = torch.isfinite(t_src).numpy() & (t_src.float().abs() < 100).numpy()
        got = src.to(getattr(clgrad, name)).cpu().numpy()
        if name in ("int32", "uint8"):  # out-of-range float -> int is undefined in both
            got, want = got[finite], want.numpy()[finite]
        np.testing.assert_array_equal(got, np.asarray(want))


def test_promotion_finfo_and_dtype_api():
    for a in _NAMES:
        for b in _NAMES:
            got = clgrad.promote_types(getattr(clgrad, a), getattr(clgrad, b))
            assert got.name == str(torch.promote_types(getattr(torch, a), getattr(torch, b))).split(".")[1]
    x = clgrad.ones(2, dtype=clgrad.bfloat16)
    assert (x + 1).dtype is clgrad.bfloat16 and (x + clgrad.ones(2, dtype=clgrad.int64)).dtype is clgrad.bfloat16
    assert (x + clgrad.ones(2, dtype=clgrad.float16)).dtype is clgrad.float32
    assert (x * 2.5).dtype is clgrad.bfloat16 and (x / 3).dtype is clgrad.bfloat16
    assert x.is_floating_point() and clgrad.bfloat16.is_floating_point and clgrad.bfloat16.itemsize == 2
    assert repr(clgrad.finfo(clgrad.bfloat16)) == repr(torch.finfo(torch.bfloat16))
    assert clgrad.finfo(clgrad.bfloat16).eps == 2.0 ** -7
    assert clgrad.tensor([1.5]).bfloat16().dtype is clgrad.bfloat16
    with pytest.raises(TypeError, match="Got unsupported ScalarType BFloat16"):
        x.numpy()
    assert x.tolist() == [1.0, 1.0] and isinstance(x[0].item(), float)


def test_default_dtype_bfloat16():
    old = clgrad.get_default_dtype()
    try:
        clgrad.set_default_dtype(clgrad.bfloat16)
        assert clgrad.tensor([1.0]).dtype is clgrad.bfloat16 and clgrad.zeros(2).dtype is clgrad.bfloat16
        assert (clgrad.tensor([1, 2]) / 3).dtype is clgrad.bfloat16
    finally:
        clgrad.set_default_dtype(old)


def _pair(shape, device, seed=0, low=-3.0, high=3.0):
    x = np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)
    return clgrad.tensor(x, device=device).bfloat16(), torch.from_numpy(x).bfloat16()


def _close(got, want, ulps=1.0, atol=0.0):
    """Within ``ulps`` bfloat16 roundings of torch's bfloat16 result (both computed in float32, rounded once)."""
    assert got.dtype is clgrad.bfloat16 and want.dtype == torch.bfloat16
    g, w = got.float().cpu().numpy(), want.float().numpy()
    assert g.shape == w.shape
    np.testing.assert_allclose(g, w, rtol=ulps * 2 * EPS, atol=atol, equal_nan=True)


UNARY = ["exp", "log", "sin", "tanh", "sigmoid", "sqrt", "abs", "neg", "relu", "floor", "reciprocal", "erf"]


def test_elementwise_match_torch(device):
    x, tx = _pair((5, 7), device, low=0.1, high=4.0)
    for name in UNARY:
        _close(getattr(x, name)(), getattr(tx, name)(), atol=1e-30)
    y, ty = _pair((7,), device, seed=1)
    _close(x + y, tx + ty)
    # PyTorch rounds a Python scalar to bfloat16 for add/sub (not for mul/div); clgrad keeps it float32 (1 ulp)
    _close(x * y - 0.3, tx * ty - 0.3, ulps=2)
    _close(x.t()[1:, ::2] / y[:6, None], tx.t()[1:, ::2] / ty[:6, None])  # non-contiguous, broadcast
    _close(clgrad.where(x > 2, x, y), torch.where(tx > 2, tx, ty))
    assert np.array_equal((x > y).cpu().numpy(), (tx > ty).numpy())
    _close(x.pow(2), tx.pow(2))
    z = clgrad.zeros((0, 3), dtype=clgrad.bfloat16, device=device)
    assert (z + 1).shape == (0, 3) and (z + 1).dtype is clgrad.bfloat16


def test_reductions_match_torch(device):
    x, tx = _pair((6, 33), device)
    _close(x.sum(1), tx.sum(1), ulps=2, atol=0.05)  # accumulated in float32, rounded once
    _close(x.mean(0), tx.mean(0), ulps=2, atol=0.01)
    _close(x.amax(1), tx.amax(1))
    _close(x.t().sum(0), tx.t().sum(0), ulps=2, atol=0.05)
    _close(x.prod(1), tx.prod(1), ulps=4, atol=1e-3)
    v, i = x.max(1)
    tv, ti = tx.max(1)
    _close(v, tv)
    assert np.array_equal(i.cpu().numpy(), ti.numpy())
    _close(x.var(1), tx.var(1), ulps=4, atol=0.05)
    _close(x.cumsum(1), tx.cumsum(1), ulps=4, atol=0.1)


def test_matmul_softmax_conv_match_torch(device):
    a, ta = _pair((13, 40), device)
    b, tb = _pair((40, 9), device, seed=1)
    _close(a @ b, ta @ tb, ulps=2, atol=0.05)
    _close(a.t().t() @ b.t().contiguous().t(), ta @ tb, ulps=2, atol=0.05)
    _close(clgrad.softmax(a, 1), torch.softmax(ta, 1), ulps=2, atol=1e-3)
    _close(clgrad.log_softmax(a, 0), torch.log_softmax(ta, 0), ulps=2, atol=1e-2)
    x, tx = _pair((2, 3, 8, 8), device)
    w, tw = _pair((4, 3, 3, 3), device, seed=2, low=-0.5, high=0.5)
    _close(clgrad.nn.functional.conv2d(x, w, padding=1), torch.nn.functional.conv2d(tx, tw, padding=1), 2, 0.05)
    _close(clgrad.nn.functional.max_pool2d(x, 2), torch.nn.functional.max_pool2d(tx, 2))


def test_autograd_and_training_step(device):
    x, tx = _pair((4, 6), device)
    xr, txr = x.detach().requires_grad_(), tx.detach().requires_grad_()
    (xr.sigmoid() * xr).sum().backward()
    (txr.sigmoid() * txr).sum().backward()
    assert xr.grad.dtype is clgrad.bfloat16
    _close(xr.grad, txr.grad, ulps=3, atol=1e-2)

    clgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)).to(device).bfloat16()
    assert all(p.dtype is clgrad.bfloat16 for p in model.parameters())
    opt = clgrad.optim.SGD(model.parameters(), lr=0.1)
    target = clgrad.tensor([0, 2, 1, 0], device=device)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert loss.dtype is clgrad.bfloat16 and all(p.grad.dtype is clgrad.bfloat16 for p in model.parameters())
    assert losses[-1] < losses[0]


def test_indexing_scatter_and_sort(device):
    x, tx = _pair((5, 6), device)
    i, ti = clgrad.tensor([0, 2, 2, 4], device=device), torch.tensor([0, 2, 2, 4])
    _close(x[i], tx[ti])
    _close(x[x > 0], tx[tx > 0])
    _close(x.clone().index_add_(0, i, x[:4]), tx.clone().index_add_(0, ti, tx[:4]), ulps=2, atol=1e-2)
    _close(x.clone().index_put_((i,), x[:4], accumulate=True), tx.clone().index_put_((ti,), tx[:4], accumulate=True),
           ulps=2, atol=1e-2)
    z = clgrad.zeros(5, 2, dtype=clgrad.int64, device=device)
    _close(x.clone().scatter_add_(1, z, x[:, :2]), tx.clone().scatter_add_(1, torch.zeros(5, 2, dtype=torch.int64),
                                                                            tx[:, :2]), ulps=2, atol=1e-2)
    _close(x.sort(1).values, tx.sort(1).values)
    _close(x.gather(1, z), tx.gather(1, torch.zeros(5, 2, dtype=torch.int64)))


def test_random_same_stream_everywhere_and_save(device, tmp_path):
    clgrad.manual_seed(5)
    u = clgrad.rand(2000, device=device, dtype=clgrad.bfloat16)
    clgrad.manual_seed(5)
    ref = clgrad.rand(2000, dtype=clgrad.bfloat16)
    assert np.array_equal(_bits(u), _bits(ref))  # Philox: the cpu stream on every device
    vals = u.float().cpu().numpy()
    assert u.dtype is clgrad.bfloat16 and vals.min() >= 0 and vals.max() < 1 and abs(vals.mean() - 0.5) < 0.03
    n = clgrad.randn(2000, device=device, dtype=clgrad.bfloat16).float().cpu().numpy()
    assert abs(n.mean()) < 0.1 and abs(n.std() - 1) < 0.1
    clgrad.save({"u": u}, tmp_path / "u.pt")
    back = clgrad.load(tmp_path / "u.pt")["u"]
    assert back.dtype is clgrad.bfloat16 and np.array_equal(_bits(back), _bits(u))
