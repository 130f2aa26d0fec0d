"""Joins, splits and layout ops (clgrad/ops/joins.py) on every device: forward against numpy over input
layouts and dtypes, views that share storage, gradients by gradcheck in float64, node names, PyTorch's errors."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.autograd import gradcheck, gradgradcheck
from tests.conftest import fp64_ok
from tests.helpers import LAYOUTS, assert_close, grad_precision, make, quiet_gradcheck, rand, to_numpy


def _np_pad(a, pad, mode="constant", value=0):
    """numpy's pad from PyTorch's pad tuple (last dim first; negative amounts crop, constant mode only)."""
    widths = [(0, 0)] * a.ndim
    for i in range(len(pad) // 2):
        widths[a.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    crop = tuple(slice(max(-lo, 0), a.shape[d] - max(-hi, 0)) for d, (lo, hi) in enumerate(widths))
    widths = [(max(lo, 0), max(hi, 0)) for lo, hi in widths]
    kw = {"constant_values": value} if mode == "constant" else {}
    return np.pad(a[crop], widths, mode={"replicate": "edge", "circular": "wrap"}.get(mode, mode), **kw)


def _np_roll_2(a):
    return np.roll(a, (1, -2), (0, 1))


def _np_diag_embed(a, offset=0):
    n = a.shape[-1] + abs(offset)
    out = np.zeros(a.shape[:-1] + (n, n), a.dtype)
    idx = np.arange(a.shape[-1])
    rows, cols = (idx, idx + offset) if offset >= 0 else (idx - offset, idx)
    out[..., rows, cols] = a
    return out


# (id, input shapes, clgrad fn, numpy fn): every fn takes the inputs as a list
FORWARD = [
    ("cat0", [(2, 3), (1, 3)], lambda x: clgrad.cat(x), lambda x: np.concatenate(x)),
    ("cat1", [(2, 3), (2, 4), (2, 1)], lambda x: clgrad.cat(x, dim=1), lambda x: np.concatenate(x, 1)),
    ("cat-neg", [(2, 2, 3), (2, 2, 1)], lambda x: clgrad.concat(x, -1), lambda x: np.concatenate(x, -1)),
    ("cat-empty", [(2, 0), (2, 3), (2, 0)], lambda x: clgrad.cat(x, 1), lambda x: np.concatenate(x, 1)),
    ("cat-legacy", [(0,), (2, 3)], lambda x: clgrad.cat(x, 1), lambda x: x[1]),
    ("concatenate", [(2, 3), (2, 3)], lambda x: clgrad.concatenate(x, axis=1), lambda x: np.concatenate(x, 1)),
    ("stack0", [(2, 3), (2, 3)], lambda x: clgrad.stack(x), lambda x: np.stack(x)),
    ("stack-neg", [(2, 3), (2, 3), (2, 3)], lambda x: clgrad.stack(x, -1), lambda x: np.stack(x, -1)),
    ("stack-0d", [(), ()], lambda x: clgrad.stack(x), lambda x: np.stack(x)),
    ("hstack", [(2, 3), (2, 1)], clgrad.hstack, np.hstack),
    ("hstack1d", [(2,), (3,)], clgrad.hstack, np.hstack),
    ("vstack", [(3,), (2, 3)], clgrad.vstack, np.vstack),
    ("dstack", [(2, 3), (2, 3)], clgrad.dstack, np.dstack),
    ("column_stack", [(3,), (3, 2)], clgrad.column_stack, np.column_stack),
    ("repeat", [(2, 3)], lambda x: x[0].repeat(2, 1, 3), lambda x: np.tile(x[0], (2, 1, 3))),
    ("repeat0", [(2, 3)], lambda x: x[0].repeat(0, 2), lambda x: np.tile(x[0], (0, 2))),
    ("tile", [(2, 3)], lambda x: clgrad.tile(x[0], (2,)), lambda x: np.tile(x[0], (2,))),
    ("flip0", [(2, 3, 4)], lambda x: x[0].flip(0), lambda x: np.flip(x[0], 0)),
    ("flip-all", [(2, 3, 4)], lambda x: clgrad.flip(x[0], (0, -1, 1)), lambda x: np.flip(x[0])),
    ("flip-none", [(2, 3)], lambda x: x[0].flip(), lambda x: x[0]),
    ("fliplr", [(2, 3)], lambda x: clgrad.fliplr(x[0]), lambda x: np.fliplr(x[0])),
    ("flipud", [(2, 3)], lambda x: x[0].flipud(), lambda x: np.flipud(x[0])),
    ("roll-flat", [(2, 3)], lambda x: x[0].roll(4), lambda x: np.roll(x[0], 4)),
    ("roll-dim", [(3, 4)], lambda x: clgrad.roll(x[0], -1, 1), lambda x: np.roll(x[0], -1, 1)),
    ("roll-2", [(3, 4)], lambda x: x[0].roll((1, -2), (0, 1)), lambda x: _np_roll_2(x[0])),
    ("roll-same-dim", [(3, 4)], lambda x: x[0].roll((1, 2), (1, -1)), lambda x: np.roll(x[0], 3, 1)),
    ("roll-big", [(3, 4)], lambda x: x[0].roll(7, 0), lambda x: np.roll(x[0], 7, 0)),
    ("tril", [(3, 4)], lambda x: x[0].tril(), lambda x: np.tril(x[0])),
    ("tril-k", [(2, 3, 4)], lambda x: clgrad.tril(x[0], -1), lambda x: np.tril(x[0], -1)),
    ("triu-k", [(2, 4, 3)], lambda x: clgrad.triu(x[0], 1), lambda x: np.triu(x[0], 1)),
    ("diag-1d", [(3,)], lambda x: clgrad.diag(x[0]), lambda x: np.diag(x[0])),
    ("diag-1d-k", [(3,)], lambda x: x[0].diag(-2), lambda x: np.diag(x[0], -2)),
    ("diag-2d", [(3, 4)], lambda x: clgrad.diag(x[0], 1), lambda x: np.diag(x[0], 1)),
    ("diag-2d-far", [(3, 4)], lambda x: clgrad.diag(x[0], 9), lambda x: np.diag(x[0], 9)),
    ("diagonal", [(2, 3, 4)], lambda x: x[0].diagonal(1, -1, 0), lambda x: np.diagonal(x[0], 1, -1, 0)),
    ("diagonal-neg", [(4, 3)], lambda x: clgrad.diagonal(x[0], -1), lambda x: np.diagonal(x[0], -1)),
    ("diag_embed", [(2, 3)], lambda x: clgrad.diag_embed(x[0], 1), lambda x: _np_diag_embed(x[0], 1)),
    ("broadcast_to", [(3, 1)], lambda x: clgrad.broadcast_to(x[0], (2, 3, 4)), lambda x: np.broadcast_to(x[0], (2, 3, 4))),
    ("broadcast_tensors", [(3, 1), (4,)], lambda x: clgrad.broadcast_tensors(*x), lambda x: np.broadcast_arrays(*x)),
    ("meshgrid-ij", [(3,), (2,)], lambda x: clgrad.meshgrid(*x, indexing="ij"), lambda x: np.meshgrid(*x, indexing="ij")),
    ("meshgrid-xy", [(3,), (2,), (4,)], lambda x: clgrad.meshgrid(x, indexing="xy"), lambda x: np.meshgrid(*x)),
    ("movedim", [(2, 3, 4)], lambda x: clgrad.movedim(x[0], 0, -1), lambda x: np.moveaxis(x[0], 0, -1)),
    ("moveaxis", [(2, 3, 4)], lambda x: x[0].moveaxis((0, 1), (2, 0)), lambda x: np.moveaxis(x[0], (0, 1), (2, 0))),
    ("swapaxes", [(2, 3, 4)], lambda x: clgrad.swapaxes(x[0], 0, 2), lambda x: np.swapaxes(x[0], 0, 2)),
    ("unflatten", [(2, 6)], lambda x: x[0].unflatten(-1, (3, -1)), lambda x: x[0].reshape(2, 3, 2)),
    ("ravel", [(2, 3)], lambda x: clgrad.ravel(x[0]), lambda x: np.ravel(x[0])),
    ("pad-const", [(2, 3)], lambda x: F.pad(x[0], (1, 2)), lambda x: _np_pad(x[0], (1, 2))),
    ("pad-value", [(2, 3)], lambda x: F.pad(x[0], (1, 0, 0, 2), value=2.5), lambda x: _np_pad(x[0], (1, 0, 0, 2), value=2.5)),
    ("pad-crop", [(3, 4)], lambda x: F.pad(x[0], (-1, 2, 1, -2)), lambda x: _np_pad(x[0], (-1, 2, 1, -2))),
    ("reflect1d", [(2, 4)], lambda x: F.pad(x[0], (3, 2), mode="reflect"), lambda x: _np_pad(x[0], (3, 2), "reflect")),
    ("reflect2d", [(1, 3, 4)], lambda x: F.pad(x[0], (1, 2, 2, 1), "reflect"), lambda x: _np_pad(x[0], (1, 2, 2, 1), "reflect")),
    ("reflect3d", [(1, 2, 3, 3)], lambda x: F.pad(x[0], (1, 1, 2, 0, 1, 1), "reflect"),
     lambda x: _np_pad(x[0], (1, 1, 2, 0, 1, 1), "reflect")),
    ("replicate1d", [(1, 2, 3)], lambda x: F.pad(x[0], (4, 1), "replicate"), lambda x: _np_pad(x[0], (4, 1), "replicate")),
    ("replicate2d", [(1, 2, 3)], lambda x: F.pad(x[0], (1, 2, 3, 1), "replicate"), lambda x: _np_pad(x[0], (1, 2, 3, 1), "replicate")),
    ("circular2d", [(1, 3, 4)], lambda x: F.pad(x[0], (4, 1, 2, 3), "circular"), lambda x: _np_pad(x[0], (4, 1, 2, 3), "circular")),
]


def _as_list(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def _check(got, want):
    got, want = _as_list(got), _as_list(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_close(g, np.asarray(w))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("case", FORWARD, ids=[c[0] for c in FORWARD])
def test_forward(device, case, layout):
    _, shapes, fn, ref = case
    arrays = [rand(s) for s in shapes]
    _check(fn([make(a, device, layout) for a in arrays]), ref(arrays))


# ops that copy, over every dtype: (id, clgrad fn, numpy fn) on one (2, 3, 4) input
COPIES = [
    ("cat", lambda x: clgrad.cat([x, x[:, :1]], 1), lambda a: np.concatenate([a, a[:, :1]], 1)),
    ("stack", lambda x: clgrad.stack([x, x], 1), lambda a: np.stack([a, a], 1)),
    ("repeat", lambda x: x.repeat(1, 2, 1), lambda a: np.tile(a, (1, 2, 1))),
    ("flip", lambda x: x.flip(0, 2), lambda a: np.flip(a, (0, 2))),
    ("roll", lambda x: x.roll((1, 1), (1, 2)), lambda a: np.roll(a, (1, 1), (1, 2))),
    ("tril", lambda x: x.tril(1), lambda a: np.tril(a, 1)),
    ("triu", lambda x: x.triu(), lambda a: np.triu(a)),
    ("diag", lambda x: clgrad.diag(x[0], 1), lambda a: np.diag(a[0], 1)),
    ("pad", lambda x: F.pad(x, (1, 1), value=1), lambda a: _np_pad(a, (1, 1), value=1)),
    ("reflect", lambda x: F.pad(x, (2, 1), "reflect"), lambda a: _np_pad(a, (2, 1), "reflect")),
    ("replicate", lambda x: F.pad(x, (1, 1, 1, 1), "replicate"), lambda a: _np_pad(a, (1, 1, 1, 1), "replicate")),
]
DTYPES = ["bool", "uint8", "int32", "int64", "float16", "float64"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", COPIES, ids=[c[0] for c in COPIES])
def test_dtypes(device, case, dtype):
    if dtype == "float64" and device != "cpu" and not clgrad.opencl.get_device_properties(device).fp64:
        pytest.skip("no fp64")
    _, fn, ref = case
    a = rand((2, 3, 4), dtype)
    _check(fn(make(a, device, "transposed")), ref(a))


@pytest.mark.parametrize("dtypes, expected", [
    (("int32", "float64"), "float64"), (("bool", "int32"), "int32"), (("float16", "int64"), "float16"),
    (("bool", "bool"), "bool"), (("uint8", "int8"), "int16"),
])
def test_cat_promotes(device, dtypes, expected):
    if not fp64_ok(device):  # integer with floating promotion, to float32: float64 can't be on this device
        dtypes = tuple("float32" if d == "float64" else d for d in dtypes)
        expected = "float32" if expected == "float64" else expected
    arrays = [rand((2, 2), d) for d in dtypes]
    tensors = [make(a, device) for a in arrays]
    assert_close(clgrad.cat(tensors), np.concatenate([a.astype(expected) for a in arrays]))
    assert_close(clgrad.stack(tensors), np.stack([a.astype(expected) for a in arrays]))
    # a skipped legacy empty tensor still takes part in promotion, as in PyTorch
    assert clgrad.cat([tensors[0], clgrad.zeros(0, dtype=clgrad.float32, device=device)]).dtype is clgrad.float32


def test_flip_result_is_dense(device):
    x = make(rand((3, 4)), device, "sliced")
    for r in (x.flip(0, 1), F.pad(x.unsqueeze(0), (2, 2), "reflect"), x.fliplr()):
        assert all(s > 0 for s in r.stride()) and r.is_contiguous()


# views share storage with their input
VIEWS = [
    ("split", lambda x: x.split(2, 1)), ("split-sizes", lambda x: clgrad.split(x, [1, 3], -1)),
    ("chunk", lambda x: x.chunk(3, 1)), ("unbind", lambda x: clgrad.unbind(x, 1)),
    ("tensor_split", lambda x: x.tensor_split([1, 3], 1)), ("diagonal", lambda x: x.diagonal(1)),
    ("movedim", lambda x: x.movedim(0, 1)), ("unflatten", lambda x: x.unflatten(1, (2, 2))),
    ("broadcast_to", lambda x: x.broadcast_to((2, 3, 4))), ("meshgrid", lambda x: clgrad.meshgrid(x[0], indexing="ij")),
]


@pytest.mark.parametrize("case", VIEWS, ids=[c[0] for c in VIEWS])
def test_views_share_storage(device, case):
    x = make(rand((3, 4)), device, "offset")
    for r in _as_list(case[1](x)):
        assert r._storage is x._storage
    assert x.split(2, 1)[1].storage_offset() == x.storage_offset() + 2


@pytest.mark.parametrize("fn, sizes", [
    (lambda x: x.split(2), [2, 2, 1]), (lambda x: x.split(0 + 5), [5]), (lambda x: x.split([0, 5, 0]), [0, 5, 0]),
    (lambda x: x.chunk(2), [3, 2]), (lambda x: x.chunk(6), [1] * 5), (lambda x: x.unbind(), [1] * 5),
    (lambda x: clgrad.tensor_split(x, 3), [2, 2, 1]), (lambda x: x.tensor_split([4, 2, -1]), [4, 0, 2, 1]),
    (lambda x: x[:0].chunk(3), [0, 0, 0]), (lambda x: x[:0].split(2), [0]),
])
def test_split_sizes(device, fn, sizes):
    a = rand((5, 2))
    pieces = fn(make(a, device))
    assert isinstance(pieces, tuple)
    assert [p.shape[0] if p.dim() == 2 else 1 for p in pieces] == sizes
    if sum(sizes) == 5 and len(pieces) > 1 and pieces[0].dim() == 2:
        _check(clgrad.cat(pieces), a)


# ---- gradients -----------------------------------------------------------------------------------

GRADS = [
    ("cat", [(2, 3), (2, 1)], lambda a, b: clgrad.cat([a, clgrad.zeros(2, 0, dtype=a.dtype, device=a.device), b], 1)),
    ("stack", [(2, 3), (2, 3)], lambda a, b: clgrad.stack([a, b], -1)),
    ("hstack", [(2,), (3,)], lambda a, b: clgrad.hstack([a, b])),
    ("split", [(5, 2)], lambda x: x.split(2)),
    ("split-sizes", [(5, 2)], lambda x: x.split([1, 4])[1]),
    ("chunk", [(2, 5)], lambda x: x.chunk(2, -1)),
    ("unbind", [(3, 2)], lambda x: x.unbind(1)[0]),
    ("tensor_split", [(5,)], lambda x: x.tensor_split([1, 3])),
    ("repeat", [(2, 3)], lambda x: x.repeat(2, 1, 2)),
    ("tile", [(3,)], lambda x: x.tile(2, 2)),
    ("flip", [(2, 3)], lambda x: x.flip(0, 1)),
    ("roll", [(2, 3)], lambda x: x.roll((1, 2), (0, 1))),
    ("roll-flat", [(2, 3)], lambda x: x.roll(2)),
    ("tril", [(3, 3)], lambda x: x.tril(-1)),
    ("triu", [(2, 3, 3)], lambda x: x.triu(1)),
    ("diag-1d", [(3,)], lambda x: clgrad.diag(x, 1)),
    ("diag-2d", [(3, 4)], lambda x: clgrad.diag(x, -1)),
    ("diagonal", [(2, 3, 4)], lambda x: x.diagonal(1, 2, 0)),
    ("diag_embed", [(2, 2)], lambda x: clgrad.diag_embed(x, -1, 0, 2)),
    ("broadcast_to", [(3, 1)], lambda x: x.broadcast_to((2, 3, 2))),
    ("meshgrid", [(3,), (2,)], lambda a, b: clgrad.meshgrid(a, b, indexing="xy")),
    ("movedim", [(2, 3, 1)], lambda x: x.movedim((0, 2), (1, 0))),
    ("unflatten", [(2, 4)], lambda x: x.unflatten(1, (2, 2))),
    ("pad-const", [(2, 3)], lambda x: F.pad(x, (1, -1, 2, 0), value=1.0)),
    ("reflect1d", [(2, 4)], lambda x: F.pad(x, (3, 2), mode="reflect")),
    ("reflect2d", [(1, 3, 3)], lambda x: F.pad(x, (1, 2, 2, 1), mode="reflect")),
    ("reflect-crop", [(1, 5)], lambda x: F.pad(x, (-3, 3), mode="reflect")),
    ("replicate2d", [(1, 2, 3)], lambda x: F.pad(x, (2, 1, 1, 2), mode="replicate")),
    ("circular", [(1, 3)], lambda x: F.pad(x, (2, 1), mode="circular")),
]


def _grad_inputs(shapes, device):
    """float64, or float32 on a device without cl_khr_fp64 (checked with wider tolerances: grad_precision)."""
    dt = grad_precision(device)[0]
    return [clgrad.tensor(rand(s, dt), dtype=getattr(clgrad, dt), device=device, requires_grad=True) for s in shapes]


@pytest.mark.parametrize("case", GRADS, ids=[c[0] for c in GRADS])
def test_gradcheck(device, case):
    _, shapes, fn = case
    assert quiet_gradcheck(gradcheck, fn, _grad_inputs(shapes, device), **grad_precision(device)[1])


@pytest.mark.parametrize("name", ["cat", "split", "repeat", "flip", "diagonal", "reflect2d", "replicate2d", "pad-const"])
def test_gradgradcheck(device, name):
    _, shapes, fn = next(c for c in GRADS if c[0] == name)
    assert quiet_gradcheck(gradgradcheck, fn, _grad_inputs(shapes, device), **grad_precision(device)[1])


@pytest.mark.parametrize("fn, name", [
    (lambda x: clgrad.cat([x, x]), "CatBackward0"), (lambda x: clgrad.stack([x, x]), "StackBackward0"),
    (lambda x: x.split(1)[0], "SplitBackward0"), (lambda x: x.split([1, 1])[1], "SplitWithSizesBackward0"),
    (lambda x: x.chunk(2)[0], "SplitBackward0"), (lambda x: x.unbind()[0], "UnbindBackward0"),
    (lambda x: x.repeat(2, 1), "RepeatBackward0"), (lambda x: x.tile(2), "RepeatBackward0"),
    (lambda x: x.flip(0), "FlipBackward0"), (lambda x: x.roll(1), "RollBackward0"),
    (lambda x: x.tril(), "TrilBackward0"), (lambda x: x.triu(), "TriuBackward0"),
    (lambda x: x.diagonal(), "DiagonalBackward0"), (lambda x: clgrad.diag(x), "DiagonalBackward0_copy"),
    (lambda x: clgrad.diag(x[0]), "DiagEmbedBackward0"), (lambda x: x.broadcast_to((2, 2, 2)), "ExpandBackward0"),
    (lambda x: x.movedim(0, 1), "PermuteBackward0"), (lambda x: x.unflatten(0, (1, 2)), "ViewBackward0"),
    (lambda x: F.pad(x, (1, 1)), "ConstantPadNdBackward0"), (lambda x: F.pad(x, (1, 1), "reflect"), "ReflectionPad1DBackward0"),
    (lambda x: F.pad(x[None], (1, 1, 1, 1), "reflect"), "ReflectionPad2DBackward0"),
    (lambda x: F.pad(x[None], (1, 1, 1, 1), "replicate"), "ReplicationPad2DBackward0"),
])
def test_node_names(fn, name):
    x = clgrad.ones(2, 2, requires_grad=True)
    assert fn(x).grad_fn.name() == name


def test_cat_mixed_dtype_grads(device):
    a = clgrad.ones(2, dtype=clgrad.float32, device=device, requires_grad=True)
    b = clgrad.ones(3, dtype=clgrad.float16, device=device, requires_grad=True)
    n = clgrad.ones(2, dtype=clgrad.int32, device=device)
    out = clgrad.cat([a, n, b])
    assert out.dtype is clgrad.float32
    (out * clgrad.arange(7.0, device=device)).sum().backward()
    assert_close(a.grad, np.array([0, 1], np.float32))
    assert_close(b.grad, np.array([4, 5, 6], np.float16))


def test_cat_empty_piece_grad(device):
    a = clgrad.ones(2, 3, device=device, requires_grad=True)
    e = clgrad.ones(2, 0, device=device, requires_grad=True)
    legacy = clgrad.ones(0, device=device, requires_grad=True)
    clgrad.cat([a, e, legacy], 1).sum().backward()
    assert_close(a.grad, np.ones((2, 3), np.float32))
    assert e.grad.shape == (2, 0) and legacy.grad.shape == (0,)


def test_split_partial_use_and_inplace(device):
    x = clgrad.arange(6.0, device=device).requires_grad_()
    y = x * 1
    first, second = y.split(3)
    second.sum().backward()
    assert_close(x.grad, np.array([0, 0, 0, 1, 1, 1], np.float32))
    x.grad = None
    m = (x * 1).reshape(2, 3)
    m.tril_()
    m.sum().backward()
    assert_close(x.grad, np.array([1, 0, 0, 1, 1, 0], np.float32))


def test_tril_inplace(device):
    a = rand((3, 3))
    x = make(a, device)
    assert x.triu_(1) is x
    assert_close(x, np.triu(a, 1))


# ---- errors ------------------------------------------------------------------------------------

ERRORS = [
    (lambda x: clgrad.cat([x, clgrad.zeros(2, 4, device=x.device)]), RuntimeError,
     "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for tensor number 1 in the list."),
    (lambda x: clgrad.cat([x, x[:, :1].t()], 1), RuntimeError,
     "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 1 for tensor number 1 in the list."),
    (lambda x: clgrad.cat([x, x[0]]), RuntimeError, "Tensors must have same number of dimensions: got 2 and 1"),
    (lambda x: clgrad.cat([]), ValueError, "torch.cat(): expected a non-empty list of Tensors"),
    (lambda x: clgrad.cat([x, x[0, 0]]), RuntimeError, "zero-dimensional tensor (at position 1) cannot be concatenated"),
    (lambda x: clgrad.cat(x), TypeError, "cat(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor"),
    (lambda x: clgrad.cat([x, 1]), TypeError, "expected Tensor as element 1 in argument 0, but got int"),
    (lambda x: clgrad.cat([x, x], 2), IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda x: clgrad.stack([x, x[:, :2]]), RuntimeError,
     "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [2, 2] at entry 1"),
    (lambda x: clgrad.stack([]), RuntimeError, "stack expects a non-empty TensorList"),
    (lambda x: clgrad.hstack([]), RuntimeError, "hstack expects a non-empty TensorList"),
    (lambda x: x.split([1, 1], 1), RuntimeError,
     "split_with_sizes expects split_sizes to sum exactly to 3 (input tensor's size at dimension 1), but got split_sizes=[1, 1]"),
    (lambda x: x.split(0, 1), RuntimeError, "split_size can only be 0 if dimension size is 0, but got dimension size of 3"),
    (lambda x: x.split(-1), RuntimeError, "split expects split_size be non-negative, but got split_size=-1"),
    (lambda x: x.chunk(0), RuntimeError, "chunk expects `chunks` to be greater than 0, got: 0"),
    (lambda x: x[0, 0].unbind(), IndexError, "Dimension specified as 0 but tensor has no dimensions"),
    (lambda x: x.tensor_split(0), RuntimeError, "number of sections must be larger than 0, got 0"),
    (lambda x: x.repeat(2), RuntimeError,
     "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"),
    (lambda x: x.repeat(-1, 1), RuntimeError, "Trying to create tensor with negative dimension -2: [-2, 3]"),
    (lambda x: x.flip(0, -2), RuntimeError, "dim 0 appears multiple times in the list of dims"),
    (lambda x: clgrad.flip(x, 0), TypeError, "flip(): argument 'dims' (position 2) must be tuple of ints, not int"),
    (lambda x: clgrad.fliplr(x[0]), RuntimeError, "Input must be >= 2-d."),
    (lambda x: x.roll((1, 2), 0), RuntimeError, "shifts and dimensions must align. shifts: 2, dims:1"),
    (lambda x: x.roll([]), RuntimeError, "`shifts` required"),
    (lambda x: x[0].tril(), RuntimeError, "tril: input tensor must have at least 2 dimensions"),
    (lambda x: clgrad.diag(x[0, 0]), RuntimeError, "diag(): Supports 1D or 2D tensors. Got 0D"),
    (lambda x: x.diagonal(0, -1, 1), RuntimeError, "diagonal dimensions cannot be identical -1, 1"),
    (lambda x: clgrad.broadcast_to(x, (4, 3)), RuntimeError,
     "The expanded size of the tensor (4) must match the existing size (2) at non-singleton dimension 0.  Target sizes: [4, 3].  Tensor sizes: [2, 3]"),
    (lambda x: clgrad.meshgrid(x[0], x[0].int(), indexing="ij"), RuntimeError,
     "meshgrid expects all tensors to have the same dtype"),
    (lambda x: clgrad.meshgrid(x[0], indexing="foo"), RuntimeError,
     'torch.meshgrid: indexing must be one of "xy" or "ij", but received: foo'),
    (lambda x: clgrad.movedim(x, (0,), (1, 0)), RuntimeError,
     "movedim: Invalid source or destination dims: source ([0] dims) should contain the same number of dims as destination ([1, 0] dims)"),
    (lambda x: clgrad.movedim(x, (0, -2), (1, 0)), RuntimeError, "movedim: repeated dim in `source` ([0, -2])"),
    (lambda x: x.unflatten(-1, (2, 2)), RuntimeError,
     "unflatten: Provided sizes [2, 2] don't multiply up to the size of dim 1 (3) in the input tensor"),
    (lambda x: x.unflatten(1, ()), RuntimeError, "unflatten: sizes must be non-empty"),
    (lambda x: F.pad(x, (1,)), RuntimeError, "Padding length must be divisible by 2"),
    (lambda x: F.pad(x, (1,) * 6), RuntimeError,
     "Padding length should be less than or equal to two times the input dimension but got padding length 6 and input of dimension 2"),
    (lambda x: F.pad(x, (-4, 1)), RuntimeError, "narrow(): length must be non-negative."),
    (lambda x: F.pad(x[None], (3, 1), "reflect"), RuntimeError,
     "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (3, 1) at dimension 2 of input [1, 2, 3]"),
    (lambda x: F.pad(x[None, None], (0, 0, 2, 0), "reflect"), RuntimeError,
     "Argument #6: Padding size should be less than the corresponding input dimension, but got: padding (2, 0) at dimension 2 of input [1, 1, 2, 3]"),
    (lambda x: F.pad(x, (1, 1), "reflect", 1.0), RuntimeError, 'Padding mode "reflect" doesn\'t take in value argument'),
    (lambda x: F.pad(x, (1, 1), "foo"), NotImplementedError, "Unrecognised padding mode foo"),
    (lambda x: F.pad(x[0], (1, 1), "reflect"), NotImplementedError, "Padding size 2 is not supported for 1D input tensor."),
    (lambda x: F.pad(x[None, :, :0], (1, 1), "replicate"), RuntimeError,
     "Expected 2D or 3D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: [1, 2, 0]"),
    (lambda x: F.pad(x[None], (-3, -1), "replicate"), RuntimeError, "input (W: 3) is too small. Calculated output W: -1"),
    (lambda x: F.pad(x[None], (4, 1), "circular"), RuntimeError, "Padding value causes wrapping around more than once."),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_errors(k):
    fn, exc, msg = ERRORS[k]
    with pytest.raises(exc) as info:
        fn(clgrad.zeros(2, 3))
    assert str(info.value).startswith(msg)


def test_meshgrid_warns_without_indexing():
    with pytest.warns(UserWarning, match="it will be required to pass the indexing argument"):
        clgrad.meshgrid(clgrad.zeros(2), clgrad.zeros(3))


def test_device_mismatch(device):
    if device == "cpu":
        pytest.skip("needs an OpenCL device")
    x = clgrad.zeros(2, 3, device=device)
    msg = f"Expected all tensors to be on the same device, but found at least two devices, {x.device} and cpu!"
    for fn in (lambda: clgrad.cat([x, clgrad.zeros(2, 3)]), lambda: clgrad.stack([clgrad.zeros(2, 3), x])):
        with pytest.raises(RuntimeError) as info:
            fn()
        assert str(info.value) == msg


def test_negative_pads(device):
    # reflect and replicate pad the uncropped input, then crop (PyTorch's order)
    x = make(np.arange(5, dtype=np.float32).reshape(1, 1, 5), device)
    assert to_numpy(F.pad(x, (-3, 3), "reflect")).tolist() == [[[3, 4, 3, 2, 1]]]
    assert to_numpy(F.pad(x, (2, -4), "reflect")).tolist() == [[[2, 1, 0]]]
    assert to_numpy(F.pad(x, (3, -4), "replicate")).tolist() == [[[0, 0, 0, 0]]]
