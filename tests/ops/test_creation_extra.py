"""Creation ops of clgrad/ops/creation_extra.py on every device: empty_strided/empty_permuted layouts, logspace
and scalar_tensor against PyTorch (and numpy), the function forms fill/fill_/zero_, PyTorch's errors."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
from tests.conftest import fp64_ok
from tests.helpers import assert_close, to_numpy


def test_empty_strided(device):
    x = clgrad.empty_strided((2, 3), (1, 2), device=device)
    assert x.shape == (2, 3) and x.stride() == (1, 2) and x._base is None and x.device == clgrad.device(device)
    assert x._storage.size == 6
    x.copy_(clgrad.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(to_numpy(x), np.arange(6.0).reshape(2, 3))
    y = clgrad.empty_strided((2, 0), (5, 1), dtype=clgrad.int32, requires_grad=False)
    assert y.shape == (2, 0) and y.dtype is clgrad.int32
    z = clgrad.empty_strided((2, 2), (0, 1), device=device)  # overlapping (expanded) memory is allowed
    assert z._storage.size == 2 and z.stride() == (0, 1)


@pytest.mark.parametrize("size, layout, strides", [
    ((2, 3, 4), (0, 2, 1), (12, 1, 3)),
    ((2, 3, 4, 5), (0, 2, 3, 1), (60, 1, 15, 3)),
    ((3, 4), (1, 0), (1, 3)),
    ((), (), ()),
])
def test_empty_permuted(device, size, layout, strides):
    x = clgrad.empty_permuted(size, layout, device=device, requires_grad=True)
    assert x.shape == size and x.stride() == strides and x.requires_grad
    torch = pytest.importorskip("torch")
    assert torch.empty_permuted(size, layout).stride() == strides


LOGSPACE = [
    ((0, 3, 4), {}),
    ((-1, 1, 5), {}),
    ((0, 2, 1), {}),
    ((0, 1, 0), {}),
    ((0, 3, 4), {"base": 2, "dtype": "int64"}),
    ((1.5, -2.5, 7), {"base": 3.0}),
    ((0, 4, 5), {"base": 2, "dtype": "float32"}),
]


@pytest.mark.parametrize("args, kwargs", LOGSPACE)
def test_logspace(device, args, kwargs):
    torch = pytest.importorskip("torch")
    kw = dict(kwargs)
    dt = kw.pop("dtype", None)
    got = clgrad.logspace(*args, **kw, dtype=getattr(clgrad, dt) if dt else None, device=device)
    want = torch.logspace(*args, **kw, dtype=getattr(torch, dt) if dt else None)
    assert_close(got, want.numpy(), rtol=1e-6)
    assert got.device == clgrad.device(device)


def test_logspace_numpy(device):
    dt = clgrad.float64 if fp64_ok(device) else clgrad.float32
    got = clgrad.logspace(-2, 2, 9, base=2.0, dtype=dt, device=device)
    assert_close(got, np.logspace(-2, 2, 9, base=2.0).astype(dt.np), rtol=1e-6)
    out = clgrad.empty(0)
    assert clgrad.logspace(0, 1, 3, out=out) is out and out.shape == (3,)
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        clgrad.logspace(0, 1, -1)
    with pytest.raises(TypeError, match="must be int"):
        clgrad.logspace(0, 1, 2.5)


def test_scalar_tensor(device):
    t = clgrad.scalar_tensor(3, device=device)
    assert t.shape == () and t.dtype is clgrad.float32 and t.item() == 3.0
    assert clgrad.scalar_tensor(True).dtype is clgrad.float32
    i = clgrad.scalar_tensor(2.7, dtype=clgrad.int64, device=device)
    assert i.dtype is clgrad.int64 and i.item() == 2
    assert clgrad.scalar_tensor(1.5, requires_grad=True).requires_grad
    torch = pytest.importorskip("torch")
    assert torch.scalar_tensor(2.7, dtype=torch.int64).item() == i.item()


def test_fill_functions(device):
    x = clgrad.ones(2, 3, device=device, dtype=clgrad.int64)
    y = clgrad.fill(x, 2.7)
    assert y is not x and y.dtype is clgrad.int64
    np.testing.assert_array_equal(to_numpy(y), np.full((2, 3), 2))
    np.testing.assert_array_equal(to_numpy(x), np.ones((2, 3)))
    assert clgrad.fill_(x, 5) is x
    np.testing.assert_array_equal(to_numpy(x), np.full((2, 3), 5))
    assert clgrad.zero_(x) is x
    np.testing.assert_array_equal(to_numpy(x), np.zeros((2, 3)))
    v = clgrad.fill(x, clgrad.tensor(4))
    np.testing.assert_array_equal(to_numpy(v), np.full((2, 3), 4))


def test_fill_gradient_is_zero(device):
    x = clgrad.ones(2, 2, device=device, requires_grad=True)
    y = clgrad.fill(x, 3.0)
    assert y.grad_fn.name() == "FillBackward0"
    (y * 2).sum().backward()
    np.testing.assert_array_equal(to_numpy(x.grad), np.zeros((2, 2)))


def test_empty_errors():
    with pytest.raises(RuntimeError, match=r"dimensionality of sizes \(2\) must match dimensionality of strides \(1\)"):
        clgrad.empty_strided((2, 3), (1,))
    with pytest.raises(RuntimeError, match="len\\(size\\) = 2 is not equal to len\\(physical_layout\\) = 1"):
        clgrad.empty_permuted((2, 3), (0,))
    with pytest.raises(RuntimeError, match="Duplicate dim not allowed"):
        clgrad.empty_permuted((2, 3), (0, 0))
    with pytest.raises(RuntimeError, match="negative dimension"):
        clgrad.empty_strided((-1, 3), (3, 1))
