"""Indexing ops (clgrad/ops/indexing.py) on every device: advanced __getitem__/__setitem__, gather/scatter,
index_select/index_add/index_put/index_fill, masks, nonzero; compared with numpy (PyTorch where their
semantics differ from numpy's), plus bounds errors, gradients and an Oclgrind subset."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
from clgrad.autograd import gradcheck
from tests.conftest import fp64_ok
from tests.helpers import LAYOUTS, assert_close, make

ERROR_MARKERS = ("Invalid read", "Invalid write", "data race", "Uninitialized", "Oclgrind - ")


def _maker(device):
    """Index values as clgrad tensors on ``device`` (lists of ints become int64, of bools become bool)."""
    def T(a):
        a = np.asarray(a)
        return clgrad.tensor(a.astype(np.int64) if a.dtype.kind in "iu" else a, device=device)

    return T


def _skip_fp64(device, dtype="float64"):
    if dtype == "float64" and not fp64_ok(device):
        pytest.skip("no cl_khr_fp64")


MASK34 = [[True, False, True, True], [False, False, False, False], [True, True, False, True]]

# (name, shape, index maker): T makes an index array (np.asarray for numpy, a clgrad tensor for clgrad)
GETITEMS = [
    ("long", (4, 5), lambda T: T([0, 3, -1, 0])),
    ("long_2d", (4, 5), lambda T: T([[0, 1], [3, 3]])),
    ("adjacent", (3, 4, 5), lambda T: (slice(None), T([0, 2]), T([1, -1]))),
    ("broadcast", (3, 4, 5), lambda T: (T([[0], [2]]), T([1, 3, 0]))),
    ("separated", (3, 4, 5), lambda T: (T([0, 2]), slice(1, 3), T([1, 4]))),
    ("none_ellipsis", (3, 4, 5), lambda T: (None, T([0, 2]), Ellipsis, T([1, 4]))),
    ("ellipsis", (3, 4, 5), lambda T: (Ellipsis, T([4, 0]))),
    ("step_slice", (6, 5), lambda T: (slice(None, None, 2), T([4, 0, 4]))),
    ("int_adjacent", (3, 4, 5), lambda T: (1, T([0, 2]), slice(None))),
    ("mask_full", (3, 4), lambda T: T(MASK34)),
    ("mask_rows", (3, 4), lambda T: T([True, False, True])),
    ("mask_middle", (2, 3, 4), lambda T: (slice(None), T(MASK34))),
    ("mask_and_long", (3, 4), lambda T: (T([True, False, True]), T([0, 3]))),
    ("mask_none", (3, 4), lambda T: T([False, False, False])),
    ("python_true", (3, 4), lambda T: True),
    ("python_false", (3, 4), lambda T: False),
    ("list", (4, 5), lambda T: [3, 1]),
    ("list_bool", (3, 4), lambda T: [True, False, True]),
    ("empty_index", (4, 5), lambda T: T(np.zeros(0, np.int64))),
    ("zero_size", (0, 5), lambda T: (slice(None), T([1, 4]))),
    ("empty_dim", (3, 0), lambda T: T([2, 0])),
    ("scalar_tensor_mask", (), lambda T: T(True)),
]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name, shape, index", GETITEMS, ids=[g[0] for g in GETITEMS])
def test_getitem_vs_numpy(device, name, shape, index, layout):
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    x = make(a, device, layout)
    assert_close(x[index(_maker(device))], a[index(np.asarray)])


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float64"])
def test_getitem_dtypes(device, dtype):
    _skip_fp64(device, dtype)
    a = (np.arange(20) % 7 - 3).astype(dtype).reshape(4, 5)
    x = make(a, device, "transposed")
    T = _maker(device)
    assert_close(x[T([3, 0, 3]), T([[1], [4]])], a[[3, 0, 3], [[1], [4]]])
    assert_close(x[x != 0], a[a != 0])


def test_getitem_strided_index(device):
    """Index tensors that are themselves transposed, sliced or offset views."""
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    i, j = np.array([[0, 2, 1], [2, 2, 0]]), np.array([[4, 0, 3], [1, 1, 2]])
    x = make(a, device, "sliced")
    for layout in LAYOUTS:
        assert_close(x[make(i, device, layout), :, make(j, device, layout)], a[i, :, j])


# PyTorch differs from numpy where an int sits among separated advanced indices (it selects first)
TORCH_ONLY = [
    ("int_separated", lambda T: (0, slice(None), T([0, 1]))),
    ("list_as_tuple", lambda T: [[0, 1], [1, 2]]),
    ("tensor_0d_int", lambda T: (T(1), T([0, 2]))),
]


@pytest.mark.filterwarnings("ignore:Using a non-tuple sequence")
@pytest.mark.parametrize("name, index", TORCH_ONLY, ids=[t[0] for t in TORCH_ONLY])
def test_getitem_matches_torch(device, name, index):
    torch = pytest.importorskip("torch")
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    expected = torch.from_numpy(a)[index(lambda v: torch.tensor(v))].numpy()
    assert_close(clgrad.tensor(a, device=device)[index(_maker(device))], expected)


def test_basic_indexing_still_views(device):
    x = clgrad.arange(12.0, device=device).view(3, 4)
    v = x[1:, ::2]
    v[0, 0] = 100
    assert x[1, 0].item() == 100
    c = x[clgrad.tensor([1], device=device)]
    c[0, 0] = -5
    assert x[1, 0].item() == 100


# (name, shape, index maker, value maker(T, result shape)) for x[index] = value
SETITEMS = [
    ("mask_scalar", (3, 4), lambda T: T(MASK34), lambda T, s: 0),
    ("mask_rows_scalar", (3, 4), lambda T: T([True, False, True]), lambda T, s: -1.5),
    ("mask_0d_tensor", (3, 4), lambda T: T(MASK34), lambda T, s: T(np.float32(7))),
    ("mask_tensor", (3, 4), lambda T: T(MASK34), lambda T, s: T(np.arange(np.prod(s), dtype=np.float32))),
    ("mask_middle", (2, 3, 4), lambda T: (slice(None), T(MASK34)), lambda T, s: 5),
    ("long_scalar", (4, 5), lambda T: T([0, 2]), lambda T, s: 7),
    ("long_row", (4, 5), lambda T: T([0, -2]), lambda T, s: T(np.arange(5, dtype=np.float32))),
    ("two_long", (4, 5), lambda T: (T([0, 2]), T([1, 3])), lambda T, s: T(np.float32([10, 20]))),
    ("separated", (3, 4, 5), lambda T: (T([0, 2]), slice(None), T([1, 4])),
     lambda T, s: T(np.arange(np.prod(s), dtype=np.float32).reshape(s))),
    ("leading_ones", (4, 5), lambda T: T([1, 3]), lambda T, s: T(np.ones((1, 1, 5), np.float32))),
    ("list", (4, 5), lambda T: [3, 0], lambda T, s: 9),
    ("empty", (4, 5), lambda T: T(np.zeros(0, np.int64)), lambda T, s: 1),
]


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("name, shape, index, value", SETITEMS, ids=[s[0] for s in SETITEMS])
def test_setitem_vs_numpy(device, name, shape, index, value, layout):
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    x = make(a, device, layout)
    T = _maker(device)
    result_shape = a[index(np.asarray)].shape
    x[index(T)] = value(T, result_shape)
    v = value(np.asarray, result_shape)
    a[index(np.asarray)] = v.reshape(v.shape[2:]) if name == "leading_ones" else v
    assert_close(x, a)


def test_setitem_issue_examples(device):
    """``grad_h[h < 0] = 0``, ``c[:, 1] = c[:, 2]`` and ``c[idx] = v`` from the issue, int and float."""
    h = np.array([[-1.0, 2.0], [3.0, -4.0]], np.float32)
    grad_h = clgrad.tensor(h * 10, device=device)
    grad_h[clgrad.tensor(h, device=device) < 0] = 0
    assert_close(grad_h, np.where(h < 0, 0, h * 10).astype(np.float32))
    c = clgrad.arange(12, device=device).view(3, 4)
    c[:, 1] = c[:, 2]
    c[clgrad.tensor([0, 2], device=device)] = clgrad.tensor([-1, -2, -3, -4], device=device)
    ref = np.arange(12).reshape(3, 4)
    ref[:, 1] = ref[:, 2]
    ref[[0, 2]] = [-1, -2, -3, -4]
    assert_close(c, ref)


# ---- accumulation with duplicate indices: every atomic path of the template --------------------------

ACCUMULATE_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]


def _dup_index(n=300, slots=5):
    return np.random.RandomState(1).randint(-slots, slots, n)


@pytest.mark.parametrize("dtype", ACCUMULATE_DTYPES)
def test_index_put_accumulate_duplicates(device, dtype):
    _skip_fp64(device, dtype)
    idx = _dup_index()
    vals = (np.arange(idx.size) % 3).astype(dtype)  # small integers: every summation order is exact
    base = (np.arange(5) % 2).astype(dtype)
    x = clgrad.tensor(base, device=device)
    x.index_put_((clgrad.tensor(idx, device=device),), clgrad.tensor(vals, device=device), accumulate=True)
    ref = base.copy()
    (np.logical_or if dtype == "bool" else np.add).at(ref, idx, vals)
    assert_close(x, ref)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "float16", "float32", "float64"])
def test_index_add_and_scatter_add_duplicates(device, dtype):
    _skip_fp64(device, dtype)
    idx = _dup_index(60) % 5
    src = (np.arange(120) % 4).astype(dtype).reshape(2, 60)
    x = make(np.zeros((2, 5), dtype), device, "transposed")
    out = x.index_add(1, clgrad.tensor(idx, device=device), make(src, device, "sliced"), alpha=2)
    ref = np.zeros((2, 5), dtype)
    np.add.at(ref, (slice(None), idx), src * 2)
    assert_close(out, ref)
    sidx = np.stack([idx, idx[::-1]])
    out = x.scatter_add(1, clgrad.tensor(sidx, device=device), clgrad.tensor(src, device=device))
    ref = np.zeros((2, 5), dtype)
    for r in range(2):
        np.add.at(ref[r], sidx[r], src[r])
    assert_close(out, ref)


@pytest.mark.parametrize("dtype", ["int16", "int32", "int64", "float32"])
def test_scatter_multiply_duplicates(device, dtype):
    idx = np.array([0, 0, 2, 0, 2, 1])
    x = clgrad.full((3,), 3, dtype=getattr(clgrad, dtype), device=device)
    out = x.scatter(0, clgrad.tensor(idx, device=device), clgrad.full((6,), 2, dtype=x.dtype, device=device),
                    reduce="multiply")
    assert_close(out, np.array([24, 6, 12], dtype))
    out = x.scatter(0, clgrad.tensor(idx, device=device), 5, reduce="add")
    assert_close(out, np.array([18, 8, 13], dtype))


def test_serial_fallback_without_int64_atomics(device, monkeypatch):
    """64-bit accumulation on a device without cl_khr_int64_base_atomics takes the one-work-item kernel."""
    if device == "cpu":
        pytest.skip("OpenCL only")
    from clgrad.backends.opencl import index as cl_index

    monkeypatch.setattr(cl_index, "has_int64_atomics", lambda dev: False)
    idx = _dup_index(40)
    for dtype in ["int64"] + (["float64"] if fp64_ok(device) else []):
        x = clgrad.zeros(5, dtype=getattr(clgrad, dtype), device=device)
        x.index_put_((clgrad.tensor(idx, device=device),), clgrad.ones(40, dtype=x.dtype, device=device),
                     accumulate=True)
        ref = np.zeros(5, dtype)
        np.add.at(ref, idx, 1)
        assert_close(x, ref)


# ---- gather / scatter / index_select / index_fill / take_along_dim ---------------------------------


def _scatter_ref(a, dim, index, src, op=None):
    out = a.copy()
    for pos in np.ndindex(*index.shape):
        target = list(pos)
        target[dim] = index[pos]
        v = src[pos] if isinstance(src, np.ndarray) else src
        out[tuple(target)] = v if op is None else op(out[tuple(target)], v)
    return out


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather_scatter_vs_numpy(device, dim, layout):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    rng = np.random.RandomState(dim + 5)
    index = rng.randint(0, a.shape[dim], size=(2, 3))
    x, i = make(a, device, layout), make(index, device, layout)
    assert_close(x.gather(dim, i), np.take_along_axis(a[:, :3] if dim == 0 else a[:2], index, dim))
    uniq = np.argsort(rng.rand(*(a.shape[dim], 3) if dim == 0 else (2, a.shape[dim])), axis=dim)[:2, :3]
    src = np.arange(100, 106, dtype=np.float32).reshape(2, 3)
    ui = make(uniq, device, layout)
    assert_close(x.scatter(dim, ui, make(src, device, layout)), _scatter_ref(a, dim % 2, uniq, src))
    assert_close(x.scatter(dim, ui, -1.0), _scatter_ref(a, dim % 2, uniq, -1.0))
    y = x.clone()
    y.scatter_(dim, ui, make(src, device, layout))
    assert_close(y, _scatter_ref(a, dim % 2, uniq, src))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_index_select_fill_take_along_dim(device, layout):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = make(a, device, layout)
    idx = np.array([2, 0, 2, 1])
    for dim in range(3):
        i = idx % a.shape[dim]
        assert_close(x.index_select(dim, make(i, device, layout)), np.take(a, i, axis=dim))
    assert_close(x.index_fill(2, clgrad.tensor([-1, 0], device=device), -7.0),
                 np.where(np.isin(np.arange(4), [0, 3]), -7.0, a).astype(np.float32))
    ti = np.array([[[-1], [0], [2]]])
    assert_close(x.take_along_dim(make(ti, device, layout), 2), np.take_along_axis(a, ti % 4, 2))
    assert_close(clgrad.take_along_dim(x, clgrad.tensor([5, -2], device=device)), a.reshape(-1)[[5, -2]])
    assert_close(clgrad.tensor(5.0, device=device).index_select(0, clgrad.tensor([0], device=device)),
                 np.float32(5.0))


def test_zero_size_and_scalars(device):
    T = _maker(device)
    z = clgrad.zeros(2, 0, device=device)
    assert_close(z.gather(1, clgrad.zeros(2, 0, dtype=clgrad.int64, device=device)), np.zeros((2, 0), np.float32))
    assert_close(z.index_select(0, T([1, 1, 0])), np.zeros((3, 0), np.float32))
    assert_close(clgrad.tensor(4.0, device=device).gather(0, T(0)), np.float32(4.0))
    x = clgrad.arange(5.0, device=device)
    assert_close(x.index_add(0, T(np.zeros(0, np.int64)), clgrad.zeros(0, device=device)), np.arange(5.0, dtype=np.float32))
    assert_close(x.scatter(0, T(np.zeros(0, np.int64)), clgrad.zeros(0, device=device)), np.arange(5.0, dtype=np.float32))


# ---- masks and nonzero ----------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
def test_masked_fill_select(device, layout):
    a = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    m = np.array([True, False, False, True])
    x, mask = make(a, device, layout), make(m, device, layout)
    assert_close(x.masked_fill(mask, 2.5), np.where(m, 2.5, a).astype(np.float32))
    assert_close(x.masked_fill(mask, clgrad.tensor(-1.0, device=device)), np.where(m, -1, a).astype(np.float32))
    assert_close(x.masked_select(mask), np.broadcast_to(a, (3, 4))[np.broadcast_to(m, (3, 4))])
    xi = make(a.astype(np.int32), device, layout)
    assert_close(xi.masked_fill(mask, 2.7), np.where(m, 2, a).astype(np.int32))
    y = x.clone()
    y.masked_fill_(make(a > 0, device, layout), 0)
    assert_close(y, np.where(a > 0, 0, a).astype(np.float32))


@pytest.mark.parametrize("dtype", ["bool", "int8", "int32", "int64", "float16", "float32", "float64"])
def test_nonzero(device, dtype):
    _skip_fp64(device, dtype)
    a = (np.random.RandomState(0).rand(5, 7, 3) > 0.6).astype(dtype)
    if dtype.startswith("float"):
        a[0, 0, 0], a[1, 1, 1] = -0.0, np.nan
    x = make(a, device, "transposed")
    assert_close(x.nonzero(), np.argwhere(a))
    for got, ref in zip(clgrad.where(x), np.nonzero(a)):
        assert_close(got, ref)
    assert_close(clgrad.argwhere(x[:, 2]), np.argwhere(a[:, 2]))


def test_nonzero_edges(device):
    big = np.zeros(70001, np.float32)
    big[[0, 5, 69999, 70000]] = 1
    assert_close(clgrad.tensor(big, device=device).nonzero(), np.argwhere(big))
    assert_close(clgrad.zeros(0, 3, device=device).nonzero(), np.zeros((0, 2), np.int64))
    assert_close(clgrad.tensor(3.0, device=device).nonzero(), np.zeros((1, 0), np.int64))
    (got,) = clgrad.tensor(0.0, device=device).nonzero(as_tuple=True)
    assert_close(got, np.zeros(0, np.int64))
    assert_close(clgrad.where(clgrad.tensor([1, 0], device=device) > 0, 1.0, 2.0), np.float32([1, 2]))


# ---- errors: PyTorch's types and words; the device keeps working afterwards ------------------------

ERRORS = [
    ("getitem", lambda x, T: x[T([5])], IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    ("getitem_neg", lambda x, T: x[:, T([-5])], IndexError, "index -5 is out of bounds for dimension 0 with size 4"),
    ("getitem_second", lambda x, T: x[T([0, 1]), T([1, 4])], IndexError,
     "index 4 is out of bounds for dimension 1 with size 4"),
    ("gather", lambda x, T: x.gather(1, T([[0], [4]])), RuntimeError,
     "index 4 is out of bounds for dimension 1 with size 4"),
    ("gather_neg", lambda x, T: x.gather(1, T([[-1]])), RuntimeError,
     "index -1 is out of bounds for dimension 1 with size 4"),
    ("scatter", lambda x, T: x.scatter(0, T([[3]]), 1.0), RuntimeError,
     "index 3 is out of bounds for dimension 0 with size 3"),
    ("scatter_add", lambda x, T: x.scatter_add(1, T([[9]]), x), RuntimeError,
     "index 9 is out of bounds for dimension 1 with size 4"),
    ("index_add", lambda x, T: x.index_add(1, T([-1]), x[:, :1]), RuntimeError,
     "index -1 is out of bounds for dimension 1 with size 4"),
    ("index_select", lambda x, T: x.index_select(0, T([1, 3])), IndexError,
     "index 3 is out of bounds for dimension 0 with size 3"),
    ("index_put", lambda x, T: x.index_put_((T([3]),), x[0, 0].clone()), IndexError,
     "index 3 is out of bounds for dimension 0 with size 3"),
    ("index_put_acc", lambda x, T: x.index_put_((T([0]), T([-9])), x[0, 0].clone(), accumulate=True), IndexError,
     "index -9 is out of bounds for dimension 1 with size 4"),
    ("setitem", lambda x, T: x.__setitem__(T([0, 7]), 1.0), IndexError,
     "index 7 is out of bounds for dimension 0 with size 3"),
    ("index_fill", lambda x, T: x.index_fill(1, T([4]), 1.0), IndexError,
     "index 4 is out of bounds for dimension 1 with size 4"),
    ("mask_shape", lambda x, T: x[T([True, False])], IndexError,
     "The shape of the mask [2] at index 0 does not match the shape of the indexed tensor [3, 4] at index 0"),
    ("mask_shape_2d", lambda x, T: x[T([[True, False, True, True]])], IndexError,
     "The shape of the mask [1, 4] at index 0 does not match the shape of the indexed tensor [3, 4] at index 0"),
    ("mask_shape_set", lambda x, T: x.__setitem__((slice(None), T([True])), 0), IndexError,
     "The shape of the mask [1] at index 0 does not match the shape of the indexed tensor [3, 4] at index 1"),
    ("too_many", lambda x, T: x[T([0]), 0, 0], IndexError, "too many indices for tensor of dimension 2"),
    ("float_index", lambda x, T: x[T(np.float32([1]))], IndexError,
     "tensors used as indices must be long, int, byte or bool tensors"),
    ("broadcast", lambda x, T: x[T([0, 1]), T([0, 1, 2])], IndexError,
     "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]"),
    ("value_shape", lambda x, T: x.__setitem__(T([0, 1]), x[:, :2]), RuntimeError,
     "shape mismatch: value tensor of shape [3, 2] cannot be broadcast to indexing result of shape [2, 4]"),
    ("value_dtype", lambda x, T: x.index_put_((T([0]),), T([1])), RuntimeError,
     "Index put requires the source and destination dtypes match, got Float for the destination and Long for the "
     "source."),
    ("gather_dtype", lambda x, T: x.gather(0, T([[0]]).to(clgrad.int16)), RuntimeError,
     "gather(): Expected dtype int32/int64 for index"),
    ("gather_dims", lambda x, T: x.gather(0, T([0])), RuntimeError,
     "Index tensor must have the same number of dimensions as input tensor"),
    ("scatter_dtype", lambda x, T: x.scatter(0, T([[0]]), T([[1]])), RuntimeError,
     "scatter(): Expected self.dtype to be equal to src.dtype"),
    ("reduce", lambda x, T: x.scatter(0, T([[0]]), 1.0, reduce="max"), RuntimeError,
     "reduce argument must be either add or multiply."),
    ("masked_fill_mask", lambda x, T: x.masked_fill(T([1, 0, 1, 0]), 1.0), RuntimeError,
     "masked_fill_ only supports boolean masks, but got mask with dtype long int"),
    ("masked_fill_value", lambda x, T: x.masked_fill(x > 0, x[0]), RuntimeError,
     "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s)."),
    ("masked_select", lambda x, T: x.masked_select(T([1, 0, 1, 0])), RuntimeError,
     "masked_select: expected BoolTensor for mask"),
    ("index_select_vector", lambda x, T: x.index_select(0, T([[0]])), IndexError,
     "index_select(): Index is supposed to be a vector"),
    ("index_add_count", lambda x, T: x.index_add(1, T([0]), x[:, :2]), RuntimeError,
     "index_add_(): Number of indices (1) should be equal to source.size(dim): (2), for dim: 1"),
]


@pytest.mark.parametrize("name, fn, exc, message", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(device, name, fn, exc, message):
    T = _maker(device)
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = clgrad.tensor(a, device=device)
    with pytest.raises(exc) as info:
        fn(x, T)
    assert str(info.value) == message
    # a failed op poisons nothing: x is unchanged outside what valid indices touched, and indexing still works
    assert_close(x[T([2, 0]), T([-1, 1])], a[[2, 0], [-1, 1]])


@pytest.mark.parametrize("name, fn, exc, message", ERRORS[:12], ids=[e[0] for e in ERRORS[:12]])
def test_errors_match_torch(name, fn, exc, message):
    """The bounds messages above are PyTorch's own (except index_select, whose PyTorch text names no size)."""
    torch = pytest.importorskip("torch")
    if name == "index_select":
        pytest.skip("PyTorch's message differs here")
    with pytest.raises(exc) as info:
        fn(torch.arange(12.0).view(3, 4), lambda v: torch.tensor(np.asarray(v)))
    assert str(info.value) == message


def test_bad_index_never_writes_outside(device):
    base = clgrad.zeros(12, device=device)
    view = base[4:8]
    with pytest.raises(IndexError):
        view.index_put_((clgrad.tensor([0, 9, -9, 3], device=device),), clgrad.tensor(1.0, device=device),
                        accumulate=True)
    got = base.cpu().numpy()
    assert (got[:4] == 0).all() and (got[8:] == 0).all()
    with pytest.raises(RuntimeError):
        view.scatter_(0, clgrad.tensor([5, 1], device=device), 2.0)
    got = base.cpu().numpy()
    assert (got[:4] == 0).all() and (got[8:] == 0).all()


# ---- gradients ------------------------------------------------------------------------------------


def _grad_cases(T):
    """(name, fn, input shapes, PyTorch's node name): fn(*inputs) with float64 inputs requiring grad."""
    from clgrad.ops.indexing import getitem

    i3 = T([0, 2, 0])

    def setitem(x, v):
        c = x.clone()
        c[T([2, 0])] = v
        return c

    def setmask(x):
        c = x * 1
        c[x < 0] = 0
        return c

    return [
        ("getitem", lambda x: getitem(x, i3), [(3, 4)], "IndexBackward0"),
        ("getitem_separated", lambda x: getitem(x, (T([[0], [2]]), slice(None), T([1, 1, 3]))), [(3, 2, 4)],
         "IndexBackward0"),
        ("getitem_mask", lambda x: getitem(x, x > 0), [(3, 4)], "IndexBackward0"),
        ("gather", lambda x: x.gather(1, T([[0, 0], [1, 3], [2, 2]])), [(3, 4)], "GatherBackward0"),
        ("scatter", lambda x, s: x.scatter(0, T([[0, 1, 2, 0]]), s), [(3, 4), (2, 4)], "ScatterBackward0"),
        ("scatter_value", lambda x: x.scatter(1, T([[1], [0], [3]]), 1.5), [(3, 4)], "ScatterBackward1"),
        ("scatter_add", lambda x, s: x.scatter_add(0, T([[0, 1, 2, 0], [0, 0, 0, 0]]), s), [(3, 4), (2, 4)],
         "ScatterAddBackward0"),
        ("index_select", lambda x: x.index_select(1, T([3, 3, 0])), [(3, 4)], "IndexSelectBackward0"),
        ("index_add", lambda x, s: x.index_add(0, T([2, 2]), s, alpha=2), [(3, 4), (2, 4)], "IndexAddBackward0"),
        ("index_put", lambda x, v: x.index_put((T([2, 0]),), v), [(3, 4), (4,)], "IndexPutBackward0"),
        ("index_put_acc", lambda x, v: x.index_put((i3,), v, accumulate=True), [(3, 4), (3, 1)],
         "IndexPutBackward0"),
        ("setitem", setitem, [(3, 4), (4,)], "IndexPutBackward0"),
        ("setitem_mask", setmask, [(3, 4)], None),
        ("masked_fill", lambda x: x.masked_fill(x > 0, 2.0), [(3, 4)], "MaskedFillBackward0"),
        ("masked_fill_tensor", lambda x, s: x.masked_fill(T([True, False, True, False]), s), [(3, 4), ()],
         "MaskedFillBackward1"),
        ("masked_select", lambda x: x.masked_select(T([True, False, True, False])), [(3, 4)],
         "MaskedSelectBackward0"),
        ("take_along_dim", lambda x: x.take_along_dim(T([[-1], [0], [1]]), 1), [(3, 4)], "GatherBackward0"),
        ("index_fill", lambda x: x.index_fill(1, T([-1]), 3.0), [(3, 4)], "IndexFillBackward0"),
    ]


GRAD_NAMES = [c[0] for c in _grad_cases(lambda v: None)]


@pytest.mark.parametrize("case", GRAD_NAMES)
def test_gradcheck(device, case):
    _skip_fp64(device)
    name, fn, shapes, node = next(c for c in _grad_cases(_maker(device)) if c[0] == case)
    rng = np.random.RandomState(3)
    inputs = [clgrad.tensor(rng.randn(*s), dtype=clgrad.float64, device=device, requires_grad=True) for s in shapes]
    out = fn(*inputs)
    if node is not None:
        assert out.grad_fn.name().split("::")[-1] == node
    assert gradcheck(fn, inputs)


def test_getitem_operator_gradient(device):
    """``x[idx]`` itself (not only ops.indexing.getitem) records IndexBackward0."""
    x = clgrad.ones(3, 2, requires_grad=True, device=device)
    y = x[clgrad.tensor([0, 0, 2], device=device)]
    assert type(y.grad_fn).__name__ == "IndexBackward0"
    y.sum().backward()
    assert_close(x.grad, np.float32([[2, 2], [0, 0], [1, 1]]))


def test_inplace_gradients(device):
    """``c = a.clone(); c[idx] = b`` gives gradients to both; the custom-Function ReLU of the tutorial."""
    a = clgrad.ones(4, 2, requires_grad=True, device=device)
    b = clgrad.full((2,), 3.0, requires_grad=True, device=device)
    c = a.clone()
    c[clgrad.tensor([1, 3], device=device)] = b
    (c * clgrad.arange(8.0, device=device).view(4, 2)).sum().backward()
    assert_close(a.grad, np.float32([[0, 1], [0, 0], [4, 5], [0, 0]]))
    assert_close(b.grad, np.float32([2 + 6, 3 + 7]))

    class MyReLU(clgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.clamp(min=0)

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            grad_input = grad_output.clone()
            grad_input[x < 0] = 0
            return grad_input

    x = clgrad.tensor([-1.0, 2.0, -3.0, 4.0], device=device, requires_grad=True)
    MyReLU.apply(x).sum().backward()
    assert_close(x.grad, np.float32([0, 1, 0, 1]))


def test_double_backward(device):
    _skip_fp64(device)
    x = clgrad.tensor([1.0, 2.0, 3.0], dtype=clgrad.float64, device=device, requires_grad=True)
    i = clgrad.tensor([0, 0, 2], device=device)
    y = (x.gather(0, i) ** 2).sum()
    (g,) = clgrad.autograd.grad(y, x, create_graph=True)
    (gg,) = clgrad.autograd.grad(g.sum(), x)
    assert_close(g, np.array([4.0, 0.0, 6.0]))
    assert_close(gg, np.array([4.0, 0.0, 2.0]))


# ---- Oclgrind: every kernel of the family once, small ---------------------------------------------


@pytest.mark.oclgrind
def test_index_kernels_oclgrind(device, capfd):
    """gather, put (store / atomic add on every path / mul), the three nonzero passes and the bounds flag.
    No duplicate indices in plain stores: Oclgrind rightly calls those a data race."""
    T = _maker(device)
    a = np.arange(35, dtype=np.float32).reshape(5, 7)
    x = make(a, device, "sliced")
    assert_close(x[T([4, -1, 0]), 2:5], a[[4, -1, 0], 2:5])
    assert_close(x[x > 20], a[a > 20])
    y = x.clone()
    y[T([0, 3]), T([6, 1])] = T(np.float32([-1, -2]))
    ref = a.copy()
    ref[[0, 3], [6, 1]] = [-1, -2]
    assert_close(y, ref)
    idx = np.array([0, 2, 2, 0, 1, 2])
    dtypes = ["int8", "int16", "int32", "int64", "float16", "float32"] + (["float64"] if fp64_ok(device) else [])
    for dtype in dtypes:
        z = clgrad.zeros(3, dtype=getattr(clgrad, dtype), device=device)
        z.index_add_(0, T(idx), clgrad.ones(6, dtype=z.dtype, device=device))
        assert_close(z, np.array([2, 1, 3], dtype))
    m = clgrad.full((3,), 2, dtype=clgrad.int32, device=device).scatter(0, T(idx), 3, reduce="multiply")
    assert_close(m, np.int32([18, 6, 54]))
    with pytest.raises(IndexError):
        x[T([0, 5])]
    if device != "cpu":
        clgrad.opencl.synchronize()
    err = capfd.readouterr().err
    found = [mk for mk in ERROR_MARKERS if mk.lower() in err.lower()]
    assert not found, f"the OpenCL runtime reported {found}:\n{err[:4000]}"
