"""Shape ops of clgrad/ops/shape_extra.py on every device: the same call on clgrad and on PyTorch (float64, or
float32 without cl_khr_fp64) over memory layouts, numpy checks where PyTorch is absent, gradcheck, PyTorch's
errors, contiguity of the *_copy results and the view semantics of Tensor.unfold."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
from clgrad.autograd import gradcheck, gradgradcheck
from tests.helpers import assert_close, grad_precision, make, quiet_gradcheck, rand, to_numpy

# (id, input shape, fn(lib, x)): lib is clgrad or torch, so one line states the call for both
CASES = [
    ("view_copy", (2, 6), lambda m, x: m.view_copy(x.contiguous(), (3, -1))),
    ("permute_copy", (2, 3, 4), lambda m, x: m.permute_copy(x, (2, 0, 1))),
    ("transpose_copy", (2, 3), lambda m, x: m.transpose_copy(x, 0, 1)),
    ("t_copy", (2, 3), lambda m, x: m.t_copy(x)),
    ("expand_copy", (1, 3), lambda m, x: m.expand_copy(x, (4, 3))),
    ("squeeze_copy", (1, 3, 1), lambda m, x: m.squeeze_copy(x)),
    ("squeeze_copy-dim", (1, 3, 1), lambda m, x: m.squeeze_copy(x, 2)),
    ("unsqueeze_copy", (2, 3), lambda m, x: m.unsqueeze_copy(x, 1)),
    ("diagonal_copy", (3, 4), lambda m, x: m.diagonal_copy(x, 1)),
    ("select_copy", (3, 4), lambda m, x: m.select_copy(x, 1, -1)),
    ("slice_copy", (5, 4), lambda m, x: m.slice_copy(x, 0, 1, 100, 2)),
    ("slice_copy-neg", (5, 4), lambda m, x: m.slice_copy(x, -1, -3)),
    ("narrow_copy", (5, 4), lambda m, x: m.narrow_copy(x, 1, 1, 2)),
    ("narrow_copy-method", (5, 4), lambda m, x: x.narrow_copy(0, 2, 3)),
    ("alias_copy", (2, 3), lambda m, x: m.alias_copy(x)),
    ("detach_copy", (2, 3), lambda m, x: m.detach_copy(x)),
    ("as_strided_copy", (4, 3), lambda m, x: m.as_strided_copy(x.contiguous(), (2, 2), (1, 3), 1)),
    ("unfold_copy", (2, 7), lambda m, x: m.unfold_copy(x, 1, 3, 2)),
    ("unfold", (2, 7), lambda m, x: x.unfold(1, 3, 2)),
    ("unfold-overlap", (6, 2), lambda m, x: x.unfold(0, 4, 1)),
    ("unfold-0", (3, 2), lambda m, x: x.unfold(-1, 0, 1)),
    ("rot90", (2, 3), lambda m, x: m.rot90(x)),
    ("rot90-k2", (2, 3, 2), lambda m, x: m.rot90(x, 2, (2, 0))),
    ("rot90-k-1", (2, 3), lambda m, x: x.rot90(-1, [1, 0])),
    ("rot90-k0", (2, 3), lambda m, x: m.rot90(x, 4)),
    ("diagflat", (2, 2), lambda m, x: m.diagflat(x)),
    ("diagflat-offset", (3,), lambda m, x: m.diagflat(x, -2)),
    ("sum_to_size", (2, 3, 4), lambda m, x: x.sum_to_size(3, 1)),
    ("sum_to_size-same", (2, 3), lambda m, x: x.sum_to_size((2, 3))),
    ("repeat_interleave", (2, 3), lambda m, x: m.repeat_interleave(x, 2)),
    ("repeat_interleave-dim", (2, 3), lambda m, x: x.repeat_interleave(3, dim=1)),
    ("repeat_interleave-t", (3, 2), lambda m, x: m.repeat_interleave(x, m.tensor([2, 0, 1]), dim=0)),
    ("repeat_interleave-t0d", (3, 2), lambda m, x: m.repeat_interleave(x, m.tensor(2), dim=-1, output_size=4)),
    ("constant_pad_nd", (2, 3), lambda m, x: m.constant_pad_nd(x, (1, 2, 0, 1), 1.5)),
    ("constant_pad_nd-crop", (2, 4), lambda m, x: m.constant_pad_nd(x, (-1, 1))),
    ("empty", (0, 3), lambda m, x: m.transpose_copy(x, 0, 1)),
]
SPLITS = [
    ("unbind_copy", (2, 3), lambda m, x: m.unbind_copy(x, 1)),
    ("split_copy", (5, 2), lambda m, x: m.split_copy(x, 2)),
    ("split_with_sizes_copy", (5, 2), lambda m, x: m.split_with_sizes_copy(x, [1, 4])),
    ("split_with_sizes", (2, 5), lambda m, x: m.split_with_sizes(x, [3, 0, 2], dim=1)),
    ("split_with_sizes-method", (5,), lambda m, x: x.split_with_sizes([2, 3])),
    ("hsplit", (2, 4), lambda m, x: m.hsplit(x, 2)),
    ("hsplit-1d", (6,), lambda m, x: x.hsplit([1, 4])),
    ("vsplit", (4, 2), lambda m, x: m.vsplit(x, [3])),
    ("dsplit", (1, 2, 4), lambda m, x: x.dsplit(4)),
]


def _dtype(device):
    return grad_precision(device)[0]


def _pair(shape, device, layout="transposed"):
    """The same values as a clgrad tensor (in ``layout``) and a torch tensor."""
    torch = pytest.importorskip("torch")
    arr = rand(shape, _dtype(device))
    return make(arr, device, layout), torch.from_numpy(arr.copy())


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_against_torch(device, case, layout):
    torch = pytest.importorskip("torch")
    _, shape, fn = case
    x, tx = _pair(shape, device, layout)
    got, want = fn(clgrad, x), fn(torch, tx)
    assert_close(got, want.numpy())


@pytest.mark.parametrize("case", SPLITS, ids=[c[0] for c in SPLITS])
def test_splits_against_torch(device, case):
    torch = pytest.importorskip("torch")
    _, shape, fn = case
    x, tx = _pair(shape, device)
    got, want = fn(clgrad, x), fn(torch, tx)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_close(g, w.numpy())


@pytest.mark.parametrize("name", ["transpose_copy", "expand_copy", "permute_copy", "slice_copy", "unfold_copy"])
def test_copies_are_contiguous_and_own_their_memory(name):
    _, shape, fn = next(c for c in CASES if c[0] == name)
    x = clgrad.tensor(rand(shape))
    y = fn(clgrad, x)
    assert y.is_contiguous() and y._base is None
    before = to_numpy(y).copy()
    x.fill_(7.0)
    np.testing.assert_array_equal(to_numpy(y), before)


def test_numpy_references(device):
    a = rand((4, 6))
    x = make(a, device, "sliced")
    assert_close(clgrad.rot90(x), np.rot90(a))
    assert_close(clgrad.rot90(x, 3, (1, 0)), np.rot90(a, 3, (1, 0)))
    assert_close(clgrad.diagflat(x[:2, :2]), np.diagflat(a[:2, :2]))
    assert_close(x.repeat_interleave(2, dim=0), np.repeat(a, 2, axis=0))
    assert_close(clgrad.repeat_interleave(x, clgrad.tensor([1, 0, 2, 1]), dim=0), np.repeat(a, [1, 0, 2, 1], 0))
    assert_close(x.unfold(1, 2, 2), a.reshape(4, 3, 2))
    for got, want in zip(clgrad.hsplit(x, 3), np.hsplit(a, 3)):
        assert_close(got, want)
    for got, want in zip(clgrad.vsplit(x, [1, 3]), np.vsplit(a, [1, 3])):
        assert_close(got, want)
    assert_close(x.sum_to_size(1, 6), a.sum(0, keepdims=True), rtol=1e-5)
    assert_close(clgrad.constant_pad_nd(x, (1, 0)), np.pad(a, ((0, 0), (1, 0))))


def test_repeat_interleave_indices(device):
    r = clgrad.tensor([2, 0, 3], device=device)
    out = clgrad.repeat_interleave(r)
    assert out.dtype is clgrad.int64 and out.device == r.device
    np.testing.assert_array_equal(to_numpy(out), [0, 0, 2, 2, 2])
    np.testing.assert_array_equal(to_numpy(r.repeat_interleave()), [0, 0, 2, 2, 2])


def test_unfold_is_a_view(device):
    x = clgrad.arange(6.0, device=device)
    w = x.unfold(0, 3, 1)
    assert w._base is x and w.stride() == (1, 1)
    x[2] = 10.0
    np.testing.assert_array_equal(to_numpy(w)[:, 2 - np.arange(3)].diagonal(), [10.0, 10.0, 10.0])
    s = clgrad.tensor(3.0, device=device).unfold(0, 1, 1)
    assert s.shape == (1,) and s.item() == 3.0


# (id, input shape, fn): gradients by finite differences; unfold's windows overlap, so its gradient sums
GRADS = [
    ("unfold-overlap", (2, 5), lambda x: x.unfold(1, 3, 1)),
    ("unfold-gap", (7, 2), lambda x: x.unfold(0, 2, 3)),
    ("unfold-0d", (), lambda x: x.unfold(0, 1, 1)),
    ("transpose_copy", (2, 3), lambda x: clgrad.transpose_copy(x, 0, 1)),
    ("expand_copy", (1, 3), lambda x: clgrad.expand_copy(x, (2, 3))),
    ("slice_copy", (5, 2), lambda x: clgrad.slice_copy(x, 0, 1, None, 2)),
    ("split_copy", (5, 2), lambda x: clgrad.split_copy(x, 2)),
    ("rot90", (2, 3), lambda x: clgrad.rot90(x, 3)),
    ("diagflat", (2, 2), lambda x: clgrad.diagflat(x, 1)),
    ("sum_to_size", (2, 3, 1), lambda x: x.sum_to_size(3, 1)),
    ("repeat_interleave", (3, 2), lambda x: x.repeat_interleave(2, dim=1)),
    ("repeat_interleave-t", (3, 2), lambda x: x.repeat_interleave(clgrad.tensor([1, 3, 0]), dim=0)),
    ("constant_pad_nd", (2, 3), lambda x: clgrad.constant_pad_nd(x, (1, -1, 2, 0), 3.0)),
]


def _grad_input(shape, device):
    dt = _dtype(device)
    return [clgrad.tensor(rand(shape, dt), dtype=getattr(clgrad, dt), device=device, requires_grad=True)]


@pytest.mark.parametrize("case", GRADS, ids=[c[0] for c in GRADS])
def test_gradcheck(device, case):
    _, shape, fn = case
    assert quiet_gradcheck(gradcheck, fn, _grad_input(shape, device), **grad_precision(device)[1])


@pytest.mark.parametrize("name", ["unfold-overlap", "repeat_interleave-t", "rot90", "constant_pad_nd"])
def test_gradgradcheck(device, name):
    _, shape, fn = next(c for c in GRADS if c[0] == name)
    assert quiet_gradcheck(gradgradcheck, fn, _grad_input(shape, device), **grad_precision(device)[1])


def test_unfold_node_name(device):
    x = _grad_input((4,), device)[0]
    assert x.unfold(0, 2, 1).grad_fn.name() == "UnfoldBackward0"


def test_resize(device):
    x = clgrad.arange(6.0, device=device)
    storage = x._storage
    assert x.resize_(2, 2) is x and x.shape == (2, 2) and x._storage is storage
    np.testing.assert_array_equal(to_numpy(x), [[0, 1], [2, 3]])
    x.resize_(3, 3)  # beyond the storage: the old elements stay, in a new bigger storage
    assert x.shape == (3, 3) and x.is_contiguous() and x._storage is not storage
    np.testing.assert_array_equal(to_numpy(x).reshape(-1)[:6], np.arange(6.0))
    y = clgrad.zeros(1, device=device).resize_as_(clgrad.ones(2, 3))
    assert y.shape == (2, 3)
    z = clgrad.empty(1, 2, 3, 4, device=device).resize_(2, 3, 4, 5, memory_format=clgrad.channels_last)
    assert z.stride() == (60, 1, 15, 3)
    v = clgrad.arange(8.0, device=device)[2:4]
    v.resize_(1)  # a view that shrinks stays a view of the same memory
    assert v._base is not None and v.item() == 2.0
    v.resize_(10)
    assert v._base is None and v.shape == (10,) and to_numpy(v)[0] == 2.0
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        clgrad.ones(2, requires_grad=True).resize_(3)
    with pytest.raises(RuntimeError, match="negative dimension"):
        clgrad.ones(2).resize_(-1)


def test_copy_out():
    out = clgrad.empty(0)
    x = clgrad.tensor(rand((2, 3)))
    assert clgrad.transpose_copy(x, 0, 1, out=out) is out
    assert_close(out, to_numpy(x).T)
    outs = [clgrad.empty(0), clgrad.empty(0)]
    assert clgrad.unbind_copy(x, 0, out=outs) is None
    assert_close(outs[1], to_numpy(x)[1])


def test_values_and_indices_copy():
    s = clgrad.sparse_coo_tensor(clgrad.tensor([[0, 1], [1, 0]]), clgrad.tensor([2.0, 3.0]), (2, 2)).coalesce()
    np.testing.assert_array_equal(to_numpy(clgrad.values_copy(s)), [2.0, 3.0])
    np.testing.assert_array_equal(to_numpy(clgrad.indices_copy(s)), [[0, 1], [1, 0]])


ERRORS = [
    (lambda: clgrad.hsplit(clgrad.tensor(1.0), 2), RuntimeError, "at least 1 dimension, but got a tensor with 0"),
    (lambda: clgrad.hsplit(clgrad.ones(2, 4), 3), RuntimeError, "size of the dimension 4 is not divisible by the "
                                                                  "split_size 3"),
    (lambda: clgrad.vsplit(clgrad.ones(4), 2), RuntimeError, "vsplit requires a tensor with at least 2 dimension"),
    (lambda: clgrad.dsplit(clgrad.ones(4, 2), 2), RuntimeError, "dsplit requires a tensor with at least 3"),
    (lambda: clgrad.rot90(clgrad.ones(2, 2), 1, [0]), RuntimeError, "expected total rotation dims == 2"),
    (lambda: clgrad.rot90(clgrad.ones(2), 1, [0, 1]), RuntimeError, "expected total dims >= 2"),
    (lambda: clgrad.rot90(clgrad.ones(2, 2), 1, [0, 0]), RuntimeError, "rotation dims to be different"),
    (lambda: clgrad.rot90(clgrad.ones(2, 2), 1, [0, 5]), IndexError, "Dimension out of range"),
    (lambda: clgrad.ones(2, 3).sum_to_size(1, 2, 3), RuntimeError, r"size \{\[1, 2, 3\]\} is not expandable"),
    (lambda: clgrad.ones(2, 3).sum_to_size(2, 2), RuntimeError, "is not expandable to size"),
    (lambda: clgrad.repeat_interleave(clgrad.ones(2), clgrad.tensor([1, 2, 3])), RuntimeError,
     "repeats must have the same size as input along dim"),
    (lambda: clgrad.repeat_interleave(clgrad.ones(2), clgrad.tensor([1, -2])), RuntimeError, "can not be negative"),
    (lambda: clgrad.repeat_interleave(clgrad.ones(2), clgrad.tensor([1.0, 2.0])), NotImplementedError, "Float"),
    (lambda: clgrad.repeat_interleave(clgrad.ones(2), clgrad.tensor([1, 2]), output_size=4), RuntimeError,
     "allocated size does not match"),
    (lambda: clgrad.repeat_interleave(clgrad.ones(2), clgrad.tensor([[1, 2]])), RuntimeError, "0-dim or 1-dim"),
    (lambda: clgrad.ones(2, 4).unfold(1, 5, 1), RuntimeError, "maximum size for tensor at dimension 1 is 4"),
    (lambda: clgrad.ones(2, 4).unfold(1, 2, 0), RuntimeError, "step is 0 but must be > 0"),
    (lambda: clgrad.ones(2, 4).unfold(1, -1, 1), RuntimeError, "size is -1 but must be >= 0"),
    (lambda: clgrad.constant_pad_nd(clgrad.ones(2), (1,)), RuntimeError, "Length of pad must be even"),
    (lambda: clgrad.slice_copy(clgrad.ones(4), 0, 0, 4, 0), RuntimeError, "slice step must be positive"),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_errors(k):
    fn, kind, match = ERRORS[k]
    with pytest.raises(kind, match=match):
        fn()
