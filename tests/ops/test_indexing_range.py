"""``range`` objects, numpy integer arrays and numpy integer scalars as indices (get and set, mixed with tensors,
lists, slices, None, Ellipsis and masks), and the index dtypes the gather/scatter/index_* family accepts,
against torch."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import clgrad
from tests.helpers import assert_close, grad_precision, quiet_gradcheck

X = np.arange(24.0, dtype=np.float32).reshape(4, 6)

GET = {
    "range": lambda L: range(3),
    "range_tensor": lambda L: (range(3), L.tensor([0, 2, 5])),
    "range_list": lambda L: (range(2), [1, 3]),
    "range_slice": lambda L: (slice(1, 3), range(2)),
    "range_none": lambda L: (None, range(2)),
    "range_ellipsis": lambda L: (Ellipsis, range(2)),
    "range_step": lambda L: range(0, 4, 2),
    "range_empty": lambda L: range(0),
    "range_negative": lambda L: range(-1, -3, -1),
    "range_mask": lambda L: (L.tensor([True, False, True, False]), range(2)),
    "list_of_ranges": lambda L: [range(2), range(2)],
    "np_int64": lambda L: np.array([0, 2]),
    "np_int32": lambda L: np.array([0, 2], dtype=np.int32),
    "np_bool": lambda L: np.array([True, False, True, False]),
    "np_2d": lambda L: np.array([[0, 1], [2, 3]]),
    "np_scalars": lambda L: (np.int32(1), np.int16(2)),
    "np_scalar": lambda L: np.int64(-1),
    "np_0d_array": lambda L: np.array(1),
    "np_slice": lambda L: slice(np.int64(1), np.int64(3)),
    "np_range_tensor": lambda L: (np.array([3, 0]), range(4, 6)),
}


@pytest.mark.filterwarnings("ignore:Using a non-tuple sequence")  # both libraries warn for list_of_ranges
@pytest.mark.parametrize("name", sorted(GET))
def test_getitem_matches_torch(device, name):
    torch = pytest.importorskip("torch")
    expected = torch.tensor(X)[GET[name](torch)].numpy()
    x = clgrad.tensor(X, device=device)
    assert_close(x[GET[name](clgrad)], expected)


@pytest.mark.filterwarnings("ignore:Using a non-tuple sequence")
@pytest.mark.parametrize("name", sorted(GET))
def test_setitem_matches_torch(device, name):
    torch = pytest.importorskip("torch")
    expected = torch.tensor(X)
    expected[GET[name](torch)] = -1.0
    x = clgrad.tensor(X, device=device)
    x[GET[name](clgrad)] = -1.0
    assert_close(x, expected.numpy())


def test_setitem_range_with_tensor_values_and_gradient(device):
    x = clgrad.zeros(3, 4, device=device)
    x[range(3), clgrad.tensor([0, 2, 3], device=device)] = clgrad.tensor([5.0, 6.0, 7.0], device=device)
    expected = np.zeros((3, 4), np.float32)
    expected[range(3), [0, 2, 3]] = [5.0, 6.0, 7.0]
    assert_close(x, expected)
    w = clgrad.tensor(X, device=device, requires_grad=True)
    w[range(2), [1, 5]].sum().backward()
    g = np.zeros_like(X)
    g[[0, 1], [1, 5]] = 1
    assert_close(w.grad, g)


def test_numpy_bool_scalar_is_refused_as_in_torch():
    torch = pytest.importorskip("torch")
    for lib in (torch, clgrad):
        with pytest.raises(IndexError, match="only integers, slices"):
            lib.ones(3)[np.bool_(True)]


# ---- index dtypes of gather / scatter / index_* -----------------------------------------------------------------

IDX2 = [[0, 1], [2, 0]]
OPS = {
    "gather": lambda L, x, i, j: L.gather(x, 1, i),
    "scatter": lambda L, x, i, j: L.scatter(x, 1, i, x.new_ones(2, 2)),
    "scatter_value": lambda L, x, i, j: L.scatter(x, 1, i, 5.0),
    "scatter_reduce_add": lambda L, x, i, j: x.scatter(1, i, x.new_ones(2, 2), reduce="add"),
    "scatter_add": lambda L, x, i, j: L.scatter_add(x, 1, i, x.new_ones(2, 2)),
    "scatter_": lambda L, x, i, j: x.clone().scatter_(1, i, x.new_ones(2, 2)),
    "scatter_add_": lambda L, x, i, j: x.clone().scatter_add_(1, i, x.new_ones(2, 2)),
    "index_select": lambda L, x, i, j: L.index_select(x, 0, j),
    "index_add": lambda L, x, i, j: L.index_add(x, 0, j, x.new_ones(2, 3)),
    "index_fill": lambda L, x, i, j: L.index_fill(x, 0, j, 2.0),
    "take_along_dim": lambda L, x, i, j: L.take_along_dim(x, L.cat([i, i[:1]]), 1),
    "index_put": lambda L, x, i, j: x.index_put((j,), x.new_ones(3)),
    "getitem": lambda L, x, i, j: x[j],
    "take": lambda L, x, i, j: L.take(x, i),
    "put": lambda L, x, i, j: L.put(x, j, x.new_ones(2), accumulate=True),
    "put_": lambda L, x, i, j: x.t().clone().t().put_(j, x.new_ones(2)),
    "index_copy": lambda L, x, i, j: L.index_copy(x, 0, j, x.new_ones(2, 3)),
    "index_copy_": lambda L, x, i, j: x.clone().index_copy_(1, j, x.new_zeros(3, 2)),
}


@pytest.mark.parametrize("dtype", ["int32", "int64", "int16", "uint8"])
@pytest.mark.parametrize("op", sorted(OPS))
def test_index_dtypes_match_torch(device, op, dtype):
    torch = pytest.importorskip("torch")

    def run(lib, dev=None):
        kw = {} if dev is None else {"device": dev}
        x = lib.arange(9.0, **kw).reshape(3, 3)
        i = lib.tensor(IDX2, dtype=getattr(lib, dtype), **kw)
        j = lib.tensor([0, 2], dtype=getattr(lib, dtype), **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # uint8 indices are deprecated masks in both
            try:
                return OPS[op](lib, x, i, j)
            except (RuntimeError, IndexError) as e:
                return type(e), str(e).split("(Triggered")[0].strip()

    expected, got = run(torch), run(clgrad, device)
    if isinstance(expected, tuple):
        assert got == expected
    else:
        assert_close(got, expected.numpy())


def test_take_put_index_copy_gradients(device):
    dt, kw = grad_precision(device)
    x = clgrad.tensor(X[:3, :3], dtype=getattr(clgrad, dt), device=device, requires_grad=True)
    src = clgrad.tensor([[1.0, 2.0, 3.0]], dtype=x.dtype, device=device, requires_grad=True)
    flat = clgrad.tensor([[4, -1], [0, 2]], device=device)
    rows = clgrad.tensor([2], device=device)
    for fn in (lambda a, b: clgrad.take(a, flat) * 2, lambda a, b: a.put(flat[0], b[0, :2] * 3, accumulate=True),
               lambda a, b: clgrad.index_copy(a, 0, rows, b) * a, lambda a, b: a.t().put(flat[1], b[0, 1:])):
        assert quiet_gradcheck(clgrad.autograd.gradcheck, fn, (x, src), **kw)
    with pytest.raises(IndexError, match="Expected source and index to have the same number of elements"):
        x.detach().put_(flat, src.detach())
    with pytest.raises(IndexError, match="Number of indices \\(1\\) should be equal to source.size\\(dim\\) \\(3\\)"):
        x.detach().index_copy(1, rows, src.detach())
