"""Complex dtypes: promotion, creation, the numpy bridge, repr, item, casts, views and the pair views
(view_as_real/view_as_complex), real/imag, complex, polar, checked against numpy and PyTorch."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import clgrad
from clgrad import dtypes as D
from tests.conftest import fp64_ok

Z = np.array([[1 + 2j, -3.5 + 0.25j, 0.5 - 1j], [2 - 2j, 0j, -1 + 4j]])


def _dtypes(device):
    return [clgrad.complex64, clgrad.complex128] if fp64_ok(device) else [clgrad.complex64]


def test_dtype_attributes_and_aliases():
    assert clgrad.cfloat is clgrad.complex64 and clgrad.cdouble is clgrad.complex128
    assert clgrad.complex64.is_complex and not clgrad.complex64.is_floating_point
    assert clgrad.complex64.itemsize == 8 and clgrad.complex128.itemsize == 16
    assert D.as_dtype("cfloat") is clgrad.complex64 and D.as_dtype(np.complex128) is clgrad.complex128
    assert D.as_dtype(complex) is clgrad.complex64
    with pytest.raises(TypeError, match="complex32"):
        D.as_dtype("chalf")
    assert clgrad.is_complex(clgrad.zeros(1, dtype=clgrad.cfloat)) and not clgrad.zeros(1).is_complex()


def test_promotion_matches_torch():
    torch = pytest.importorskip("torch")
    real = [(clgrad.bool, torch.bool), (clgrad.int64, torch.int64), (clgrad.float32, torch.float32),
            (clgrad.float64, torch.float64)]
    cplx = [(clgrad.complex64, torch.complex64), (clgrad.complex128, torch.complex128)]
    for a, ta in real + cplx:
        for b, tb in cplx:
            assert clgrad.promote_types(a, b).name == str(torch.promote_types(ta, tb)).split(".")[1]
            for x, y, tx, ty in ((clgrad.zeros(2, dtype=a), clgrad.zeros((), dtype=b), torch.zeros(2, dtype=ta),
                                  torch.zeros((), dtype=tb)),):
                assert clgrad.result_type(x, y).name == str(torch.result_type(tx, ty)).split(".")[1]
        x, tx = clgrad.zeros(2, dtype=a), torch.zeros(2, dtype=ta)
        assert clgrad.result_type(x, 1j).name == str(torch.result_type(tx, 1j)).split(".")[1]


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_creation_numpy_item_tolist(device, layout):
    for dt in _dtypes(device):
        t = clgrad.tensor(Z, dtype=dt, device=device)
        t = t.t() if layout == "transposed" else t
        ref = (Z.T if layout == "transposed" else Z).astype(dt.np)
        np.testing.assert_array_equal(np.asarray(t), ref)
        assert t.tolist() == ref.tolist() and t[1, 1].item() == complex(ref[1, 1])
        assert complex(t[0, 0]) == complex(ref[0, 0])
    assert clgrad.tensor([1 + 2j, 3]).dtype is clgrad.complex64


def test_from_numpy_shares_memory():
    arr = Z.astype(np.complex64)
    t = clgrad.from_numpy(arr)
    assert t.dtype is clgrad.complex64
    t.numpy()[0, 0] = 7 + 7j
    assert arr[0, 0] == 7 + 7j
    t.real.fill_(0)  # real is a writable view, as in torch
    assert arr[0, 0] == 7j


def test_factories(device):
    for dt in _dtypes(device):
        assert np.asarray(clgrad.zeros(2, 3, dtype=dt, device=device)).dtype == dt.np
        np.testing.assert_array_equal(np.asarray(clgrad.ones(2, dtype=dt, device=device)), np.ones(2, dt.np))
        np.testing.assert_array_equal(np.asarray(clgrad.full((2,), 1 - 2j, dtype=dt, device=device)),
                                      np.full(2, 1 - 2j, dt.np))
        assert clgrad.empty(3, dtype=dt, device=device).shape == (3,)
        r = clgrad.randn(4000, dtype=dt, device=device)
        assert r.dtype is dt and abs(float(r.real.var()) - 0.5) < 0.06 and abs(float(r.imag.var()) - 0.5) < 0.06
        u = np.asarray(clgrad.rand(500, dtype=dt, device=device))
        assert (u.real >= 0).all() and (u.real < 1).all() and (u.imag >= 0).all() and u.imag.std() > 0.2
    assert clgrad.full((1,), 2j).dtype is clgrad.complex64
    assert clgrad.zeros_like(clgrad.zeros(2, dtype=clgrad.cfloat)).dtype is clgrad.complex64


def test_complex128_needs_fp64(device):
    if fp64_ok(device):
        pytest.skip("the device has cl_khr_fp64")
    with pytest.raises(TypeError, match="complex128 is not supported on opencl"):
        clgrad.zeros(2, dtype=clgrad.complex128, device=device)


def test_repr_matches_torch():
    torch = pytest.importorskip("torch")
    cases = [[1 + 2j, 3.5 - 1j], [[1 + 1j, 2], [3, 4j]], [1e10 + 1j, 1], [float("nan") + 1j, float("inf") * 1j],
             [-0.0 - 0.0j, 1e-5 + 3j]]
    for data in cases:
        assert repr(clgrad.tensor(data)) == repr(torch.tensor(data)).replace("torch.", "clgrad.")
    assert repr(clgrad.tensor(1 + 2j)) == "tensor(1.+2.j)"
    assert repr(clgrad.tensor([1j], dtype=clgrad.cdouble)) == "tensor([0.+1.j], dtype=clgrad.complex128)"
    assert repr(clgrad.zeros(0, dtype=clgrad.cfloat)) == "tensor([], dtype=clgrad.complex64)"
    long = clgrad.arange(40.0).reshape(2, 20).to(clgrad.cfloat) * (1 + 0.5j)
    t_long = torch.arange(40.0).reshape(2, 20).to(torch.cfloat) * (1 + 0.5j)
    assert repr(long) == repr(t_long)


def test_casts_and_copies(device):
    for dt in _dtypes(device):
        t = clgrad.tensor(Z, dtype=dt, device=device)
        ref = Z.astype(dt.np)
        np.testing.assert_array_equal(np.asarray(t.clone()), ref)
        np.testing.assert_array_equal(np.asarray(t.t().contiguous()), ref.T)
        np.testing.assert_array_equal(np.asarray(t.to("cpu")), ref)
        np.testing.assert_array_equal(np.asarray(t.to(clgrad.float32)), ref.real.astype(np.float32))
        x = clgrad.tensor([[1.0, -2.0]], device=device)
        assert x.cfloat().dtype is clgrad.complex64
        np.testing.assert_array_equal(np.asarray(x.to(dt)), np.array([[1, -2]], dt.np))
        out = clgrad.zeros(2, 3, dtype=dt, device=device)
        out.copy_(t)
        np.testing.assert_array_equal(np.asarray(out), ref)
    if fp64_ok(device):
        assert clgrad.zeros(1, device=device).cdouble().dtype is clgrad.complex128
    with pytest.raises(TypeError, match="complex32"):
        clgrad.zeros(1).chalf()


def test_views_and_joins(device):
    t = clgrad.tensor(Z, dtype=clgrad.cfloat, device=device)
    ref = Z.astype(np.complex64)
    for got, want in [(t.reshape(3, 2), ref.reshape(3, 2)), (t.permute(1, 0), ref.T), (t[1], ref[1]),
                      (t[:, 1:], ref[:, 1:]), (t.select(1, 2), ref[:, 2]), (t.unsqueeze(0), ref[None]),
                      (t.t().reshape(-1), ref.T.reshape(-1)), (clgrad.cat([t, t]), np.concatenate([ref, ref])),
                      (clgrad.stack([t, t], 1), np.stack([ref, ref], 1)), (t.flatten(), ref.reshape(-1))]:
        np.testing.assert_array_equal(np.asarray(got), want)


def test_view_as_real_and_complex(device):
    t = clgrad.tensor(Z, dtype=clgrad.cfloat, device=device)
    r = clgrad.view_as_real(t)
    assert r.shape == (2, 3, 2) and r.stride() == (6, 2, 1) and r.dtype is clgrad.float32
    assert clgrad.view_as_real(t.t()).stride() == (2, 6, 1)
    r[0, 0, 1] = 9.0  # the same memory
    assert t[0, 0].item() == 1 + 9j
    back = clgrad.view_as_complex(r)
    assert back.dtype is clgrad.complex64 and back.shape == (2, 3) and back.stride() == (3, 1)
    np.testing.assert_array_equal(np.asarray(t.real), Z.real.astype(np.float32) * [[1, 1, 1], [1, 1, 1]])
    np.testing.assert_array_equal(np.asarray(t.imag)[1], Z.imag[1].astype(np.float32))
    assert clgrad.view_as_complex(clgrad.zeros(4, 4, device=device)[:, :2]).shape == (4,)


@pytest.mark.parametrize("make, message", [
    (lambda: clgrad.view_as_complex(clgrad.zeros(3, 3)), "last dimension of size 2"),
    (lambda: clgrad.view_as_complex(clgrad.zeros(2, 3).t()), "last dimension with stride 1"),
    (lambda: clgrad.view_as_complex(clgrad.zeros(8)[1:7].view(3, 2)), "storage_offset divisible by 2"),
    (lambda: clgrad.view_as_complex(clgrad.zeros(3, 2, dtype=clgrad.int64)), "scalar type: Long"),
    (lambda: clgrad.view_as_real(clgrad.zeros(3)), "only supported for complex tensors"),
    (lambda: clgrad.zeros(3).imag, "imag is not implemented for tensors with non-complex dtypes"),
    (lambda: clgrad.complex(clgrad.zeros(2), clgrad.zeros(2, dtype=clgrad.float64)), "scalar type Float"),
    (lambda: clgrad.complex(clgrad.zeros(2, dtype=clgrad.int64), clgrad.zeros(2, dtype=clgrad.int64)),
     "Half, Float or Double"),
])
def test_view_errors_match_torch(make, message):
    with pytest.raises(RuntimeError, match=message):
        make()


def test_complex_and_polar(device):
    torch = pytest.importorskip("torch")
    re, im = np.array([1.0, 0.5, 2.0], np.float32), np.array([0.3, -1.2, 0.0], np.float32)
    for fn in ("complex", "polar"):
        got = getattr(clgrad, fn)(clgrad.tensor(re, device=device), clgrad.tensor(im, device=device))
        want = getattr(torch, fn)(torch.tensor(re), torch.tensor(im))
        assert got.dtype is clgrad.complex64
        np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=1e-6, atol=1e-7)


def test_zero_size(device):
    t = clgrad.zeros(0, 3, dtype=clgrad.cfloat, device=device)
    assert clgrad.view_as_real(t).shape == (0, 3, 2) and np.asarray(t * 2).shape == (0, 3)
    assert np.asarray(t.sum(0)).tolist() == [0j, 0j, 0j]


def test_pickle_and_deepcopy(device):
    t = clgrad.tensor(Z, dtype=clgrad.cfloat, device=device)
    for back in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t)):
        assert back.dtype is clgrad.complex64 and back.device == t.device
        np.testing.assert_array_equal(np.asarray(back), Z.astype(np.complex64))
