"""clgrad/ops/scatter_extra.py on every device against PyTorch: scatter_reduce / index_reduce (every reduction,
include_self, ties, NaN, int dtypes, in place), masked_scatter, the *_scatter ops, unravel_index, tril/triu_indices,
unique_consecutive; gradients with gradcheck and against torch's (ties share evenly)."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
from clgrad.autograd import gradcheck
from tests.conftest import fp64_ok
from tests.helpers import assert_close, grad_precision, make

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta"),
              pytest.mark.filterwarnings("ignore:Input #")]  # gradcheck in float32 on devices without fp64

IDX = np.array([[0, 1, 0, 2], [2, 2, 0, 0], [1, 1, 1, 0]])  # duplicates in every column and row


def _fdt(device):
    return "float64" if fp64_ok(device) else "float32"


def _both(device, fn, *arrays, layout="contiguous"):
    """``fn(lib, *tensors)`` with clgrad on ``device`` and with torch; the results compared."""
    ours = fn(clgrad, *[make(a, device, layout if a.dtype.kind == "f" else "contiguous") for a in arrays])
    theirs = fn(torch, *[torch.from_numpy(np.ascontiguousarray(a)) for a in arrays])
    if not isinstance(theirs, tuple):
        ours, theirs = (ours,), (theirs,)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert_close(o, t.numpy())


def _values(rng, shape, dtype):
    if np.dtype(dtype).kind == "f":
        return rng.randint(-4, 5, size=shape).astype(dtype)  # small ints: ties happen, products stay exact
    return rng.randint(-4, 5, size=shape).astype(dtype)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(device, reduce, include_self):
    rng = np.random.RandomState(0)
    for dt, layout in ((_fdt(device), "transposed"), ("int64", "contiguous")):
        x, src = _values(rng, (3, 5), dt), _values(rng, (4, 6), dt)  # src larger than index
        for dim, idx in ((0, IDX), (1, IDX.clip(0, 4))):
            _both(device, lambda L, a, i, s, dim=dim: a.scatter_reduce(dim, i, s, reduce, include_self=include_self),
                  x, idx, src, layout=layout)


@pytest.mark.parametrize("reduce", ["amax", "amin", "sum", "prod", "mean"])
def test_scatter_reduce_nan_and_empty(device, reduce):
    fdt = _fdt(device)
    x = np.array([1.0, np.nan, 3.0, 4.0], fdt)
    src = np.array([np.nan, 2.0, 5.0, 0.5, -1.0], fdt)
    idx = np.array([0, 0, 2, 1, 2])
    _both(device, lambda L, a, i, s: L.scatter_reduce(a, 0, i, s, reduce), x, idx, src)
    _both(device, lambda L, a, i, s: L.scatter_reduce(a, 0, i, s, reduce, include_self=False), x, idx, src)
    _both(device, lambda L, a, i, s: L.scatter_reduce(a, 0, i, s, reduce), x, idx[:0], src[:0])


def test_scatter_reduce_inplace_and_errors(device):
    x = clgrad.zeros(3, device=device)
    out = x.scatter_reduce_(0, clgrad.tensor([0, 0, 2], device=device), clgrad.tensor([1., 3., 2.], device=device),
                            "amax", include_self=False)
    assert out is x
    assert_close(x, np.array([3, 0, 2], np.float32))
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean, amax or amin"):
        x.scatter_reduce(0, clgrad.tensor([0], device=device), x, "max")
    with pytest.raises(RuntimeError, match="Expected self.dtype to be equal to src.dtype"):
        x.scatter_reduce(0, clgrad.tensor([0], device=device), x.long(), "sum")
    with pytest.raises(RuntimeError, match="index 3 is out of bounds for dimension 0 with size 3"):
        x.scatter_reduce(0, clgrad.tensor([3], device=device), x, "amax")  # out of range
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        x.bool().scatter_reduce(0, clgrad.tensor([0], device=device), x.bool(), "mean")


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
def test_index_reduce(device, reduce):
    rng = np.random.RandomState(1)
    dt = _fdt(device)
    x, src = _values(rng, (4, 3), dt), _values(rng, (4, 5), dt)
    idx = np.array([0, 2, 0, 1, 2])
    for include_self in (True, False):
        _both(device, lambda L, a, i, s, inc=include_self: a.index_reduce(1, i, s, reduce, include_self=inc), x, idx, src)
        _both(device, lambda L, a, i, s, inc=include_self: a.clone().index_reduce_(1, i, s, reduce, include_self=inc),
              x, idx, src)
    xi, si = x.astype(np.int64), src.astype(np.int64)
    _both(device, lambda L, a, i, s: L.index_reduce(a, 1, i, s, reduce), xi, idx, si)
    with pytest.raises(RuntimeError, match="Expected reduce to be one of prod, mean, amax or amin"):
        make(x, device).index_reduce(1, make(idx, device), make(src, device), "sum")


def test_masked_scatter(device):
    dt = _fdt(device)
    x = np.arange(12, dtype=dt).reshape(3, 4)
    src = -np.arange(1, 13, dtype=dt).reshape(4, 3)
    mask = np.array([True, False, True, True])
    _both(device, lambda L, a, m, s: a.masked_scatter(m, s), x, mask, src, layout="transposed")
    _both(device, lambda L, a, m, s: L.masked_scatter(a[0], m.reshape(1, 4).expand(2, 4), s), x, mask, src)
    _both(device, lambda L, a, m, s: a.clone().masked_scatter_(m, s), x, mask, src)
    _both(device, lambda L, a, m, s: a.masked_scatter(m & False, s[:0]), x, mask, src)
    t = make(x, device)
    with pytest.raises(RuntimeError, match="Number of elements of source < number of ones in mask"):
        t.masked_scatter(make(mask, device), make(src[:2], device))
    with pytest.raises(RuntimeError, match="only supports boolean masks"):
        t.masked_scatter(make(mask.astype(dt), device), make(src, device))


VIEW_CASES = {
    "select": (lambda L, a, s: L.select_scatter(a, s[0, :4], 0, -1), (3, 4)),
    "select_dim1": (lambda L, a, s: a.select_scatter(s[:, 0], 1, 2), (3, 4)),
    "slice": (lambda L, a, s: L.slice_scatter(a, s[:, :2], 1, 1, None, 2), (3, 4)),
    "slice_default": (lambda L, a, s: a.slice_scatter(s[:2], start=1), (3, 4)),
    "diagonal": (lambda L, a, s: L.diagonal_scatter(a, s[0, :3]), (3, 4)),
    "diagonal_offset": (lambda L, a, s: a.diagonal_scatter(s[0, :2], -1), (3, 4)),
    "diagonal_dims": (lambda L, a, s: L.diagonal_scatter(a, s[:3, :1], 1, 2, 0), (2, 3, 2)),
    "as_strided": (lambda L, a, s: L.as_strided_scatter(a, s[:2, :2], (2, 2), (1, 4), 1), (3, 4)),
}


@pytest.mark.parametrize("case", sorted(VIEW_CASES))
def test_view_scatters(device, case):
    fn, shape = VIEW_CASES[case]
    dt = _fdt(device)
    x = np.arange(np.prod(shape), dtype=dt).reshape(shape)
    src = -np.arange(1, 13, dtype=dt).reshape(3, 4)
    _both(device, fn, x, src)
    dtype, kw = grad_precision(device)
    a = clgrad.tensor(x, dtype=getattr(clgrad, dtype), device=device, requires_grad=True)
    s = clgrad.tensor(src, dtype=getattr(clgrad, dtype), device=device, requires_grad=True)
    assert gradcheck(lambda a, s: fn(clgrad, a, s), [a, s], **kw)


def test_view_scatter_errors(device):
    x = clgrad.zeros(3, 4, device=device)
    with pytest.raises(RuntimeError, match="expected src to have a size equal to the slice of self"):
        clgrad.select_scatter(x, clgrad.ones(3, device=device), 0, 0)
    with pytest.raises(RuntimeError, match="expected src to have a size equal to the slice of self"):
        clgrad.diagonal_scatter(x, clgrad.ones(4, device=device))


def test_unravel_and_tri_indices(device):
    for shape in ((2, 3), 7, (2, 1, 4)):
        flat = np.array([[0, 5, -1], [6, 3, 2]])
        _both(device, lambda L, i, shape=shape: L.unravel_index(i, shape), flat)
    for row, col, off in ((3, 3, 0), (4, 2, 1), (2, 5, -1), (0, 3, 0), (3, 4, 7)):
        for fn in ("tril_indices", "triu_indices"):
            ours = getattr(clgrad, fn)(row, col, off, device=device)
            assert_close(ours, getattr(torch, fn)(row, col, off).numpy())
    assert clgrad.tril_indices(3, 3, dtype=clgrad.int32).dtype is clgrad.int32
    with pytest.raises(TypeError, match="expected 'indices' to be integer dtype, but got clgrad.float32"):
        clgrad.unravel_index(clgrad.ones(2, device=device), (2,))
    with pytest.raises(ValueError, match="'shape' cannot have negative values"):
        clgrad.unravel_index(clgrad.tensor([1], device=device), (2, -3))


@pytest.mark.parametrize("dim", [None, 0, 1])
def test_unique_consecutive(device, dim):
    x = np.array([[1, 1, 2, 2], [1, 1, 2, 2], [3, 1, 1, 2], [3, 1, 1, 2]], np.int64)
    _both(device, lambda L, a: L.unique_consecutive(a, True, True, dim), x)
    _both(device, lambda L, a: a.unique_consecutive(return_counts=True, dim=dim), x[:0] if dim != 1 else x[:, :0])
    f = np.array([1.0, 1.0, np.nan, np.nan, 2.0], _fdt(device))
    _both(device, lambda L, a: L.unique_consecutive(a, return_inverse=True), f)


def _grad_inputs(device, rng, *shapes):
    dtype, kw = grad_precision(device)
    dt = getattr(clgrad, dtype)
    # distinct values (no ties) keep finite differences away from amax/amin's kinks
    vals = rng.permutation(np.arange(1, 1 + sum(int(np.prod(s)) for s in shapes))) / 7.0
    out, at = [], 0
    for s in shapes:
        n = int(np.prod(s))
        out.append(clgrad.tensor(vals[at:at + n].reshape(s), dtype=dt, device=device, requires_grad=True))
        at += n
    return out, kw


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_gradcheck(device, reduce):
    rng = np.random.RandomState(2)
    idx = clgrad.tensor(IDX[:2, :3], device=device)
    for include_self in (True, False):
        (x, s), kw = _grad_inputs(device, rng, (3, 4), (2, 4))
        out = x.scatter_reduce(0, idx, s, reduce, include_self=include_self)
        if reduce in ("prod", "amax", "amin"):
            assert out.grad_fn.name().split("::")[-1] == "ScatterReduceBackward0"
        assert gradcheck(lambda a, b, inc=include_self: a.scatter_reduce(0, idx, b, reduce, include_self=inc), [x, s],
                         **kw)
    (x, s), kw = _grad_inputs(device, rng, (3,), (4,))
    i1 = clgrad.tensor([0, 2, 0, 2], device=device)
    assert gradcheck(lambda a, b: a.index_reduce(0, i1, b, reduce if reduce != "sum" else "mean"), [x, s], **kw)


@pytest.mark.parametrize("reduce", ["amax", "amin", "prod"])
def test_scatter_reduce_grad_ties_and_zeros_like_torch(device, reduce):
    """Ties share the gradient evenly (amax/amin); a single zero still gets the product of the others (prod)."""
    dt = _fdt(device)
    x = np.array([2.0, 0.0, 1.0], dt)
    src = np.array([2.0, 2.0, 0.0, 3.0, 1.0], dt)
    idx = np.array([0, 0, 1, 1, 2])
    g = np.array([1.0, 2.0, 3.0], dt)
    for include_self in (True, False):
        grads = []
        for L, conv in ((clgrad, lambda a: make(a, device)), (torch, torch.from_numpy)):
            a, s = conv(x).requires_grad_(), conv(src).requires_grad_()
            out = L.scatter_reduce(a, 0, conv(idx), s, reduce, include_self=include_self)
            out.backward(conv(g))
            grads.append((a.grad, s.grad))
        for o, t in zip(*grads):
            assert_close(o, t.numpy())


def test_masked_scatter_grad_and_inplace_graph(device):
    rng = np.random.RandomState(4)
    (x, s), kw = _grad_inputs(device, rng, (2, 3), (5,))
    m = clgrad.tensor([[True, False, True], [False, True, True]], device=device)
    assert gradcheck(lambda a, b: a.masked_scatter(m, b), [x, s], **kw)
    y = x * 1
    y.masked_scatter_(m, s)
    y.sum().backward()
    assert_close(s.grad, np.array([1, 1, 1, 1, 0], s.dtype.np))
    assert_close(x.grad, (~m).to(x.dtype).cpu().numpy())


@pytest.mark.parametrize("args", [((2,), (1,), 0), ((2,), (1,), 4), ((2,), (1,)), ((2, 2), (1, 4), 1)])
def test_as_strided_scatter_uses_input_storage_offsets(device, args):
    """The view's offsets are input's storage offsets (transposed, strided, offset inputs), as in PyTorch."""
    makers = (lambda L, **kw: L.arange(12.0, **kw).reshape(3, 4).t(),
              lambda L, **kw: L.arange(24.0, **kw).reshape(3, 8)[:, ::2],
              lambda L, **kw: L.arange(10.0, **kw)[3:])
    for mk in makers:
        src = -np.arange(1.0, 1 + np.prod(args[0]), dtype=np.float32).reshape(args[0])
        expected = torch.as_strided_scatter(mk(torch), torch.from_numpy(src), *args)
        got = clgrad.as_strided_scatter(mk(clgrad, device=device), clgrad.tensor(src, device=device), *args)
        assert_close(got, expected.numpy())
    with pytest.raises(RuntimeError):  # beyond input's storage
        clgrad.as_strided_scatter(makers[2](clgrad, device=device), clgrad.ones(2, device=device), (2,), (1,), 9)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_inplace_on_view_grads_like_torch(device, reduce):
    res = []
    for L, kw in ((torch, {}), (clgrad, dict(device=device))):
        x = L.tensor([1.0, 5.0, 3.0, 2.0], requires_grad=True, **kw)
        s = L.tensor([4.0, 2.0, 6.0], requires_grad=True, **kw)
        y = x * 2
        y[1:].scatter_reduce_(0, L.tensor([0, 0, 2], **kw), s, reduce, include_self=False)
        (y * L.tensor([1.0, 2.0, 3.0, 4.0], **kw)).sum().backward()
        res.append([t.detach().cpu().numpy() for t in (y, x.grad, s.grad)])
    for ours, theirs in zip(res[1], res[0]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)
