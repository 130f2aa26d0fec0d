"""matmul / mm / bmm / mv / dot / outer and ``@`` against numpy: shapes, dtypes, memory layouts, errors."""
from __future__ import annotations

import re

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad import backends
from clgrad.backends.opencl import matmul as clmatmul
from clgrad.tensor import Tensor
from tests.conftest import fp64_ok
from tests.helpers import assert_close, make, rand

# (left shape, right shape): every matmul dispatch path, edge sizes, and more than one 64x64 tile
SHAPES = [
    ((5,), (5,)),  # dot
    ((4,), (4, 3)),  # vector @ matrix
    ((3, 4), (4,)),  # mv
    ((3, 4), (4, 5)),  # mm
    ((2, 1, 3, 4), (5, 4, 2)),  # broadcast batch dims
    ((2, 3, 4), (4, 5)),  # folded into one mm
    ((2, 3, 4), (4,)),  # folded into one mv
    ((4,), (2, 4, 3)),  # vector @ batch
    ((3, 4), (2, 4, 5)),  # matrix @ batch: stride-0 batch
    ((2, 3, 4), (2, 4, 5)),
    ((0, 4), (4, 5)), ((3, 0), (0, 5)), ((3, 4), (4, 0)), ((0,), (0,)), ((2, 0, 3), (2, 3, 4)), ((0, 3, 4), (4, 5)),
    ((1, 1), (1, 1)),
    ((17, 31), (31, 13)),
    ((70, 33), (33, 130)),
]
LAYOUT_PAIRS = [
    ("contiguous", "contiguous"), ("transposed", "transposed"), ("sliced", "offset"),
    ("contiguous", "transposed"), ("transposed", "sliced"),
]
DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8"]
TOL = {"float16": (2e-3, 2e-3), "float32": (1e-5, 1e-4), "float64": (1e-10, 1e-10)}


def _skip_fp64(device, dtype):
    if dtype == "float64" and not fp64_ok(device):
        pytest.skip("no cl_khr_fp64")


def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """numpy's matmul in exact arithmetic, rounded (floats) or wrapped (integers) to the operands' dtype."""
    if a.dtype.kind == "f":
        return np.asarray(np.matmul(a.astype(np.float64), b.astype(np.float64))).astype(a.dtype)
    with np.errstate(all="ignore"):
        return np.asarray(np.matmul(a.astype(np.uint64), b.astype(np.uint64))).astype(a.dtype)


def check(got, a, b):
    rtol, atol = TOL.get(a.dtype.name, (None, None))
    assert_close(got, reference(a, b), rtol=rtol, atol=atol)


@pytest.mark.parametrize("layouts", LAYOUT_PAIRS, ids="-".join)
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_matmul_shapes_layouts(device, shapes, layouts):
    a, b = rand(shapes[0]), rand(shapes[1])
    x, y = make(a, device, layouts[0]), make(b, device, layouts[1])
    check(clgrad.matmul(x, y), a, b)
    check(x @ y, a, b)


# Dtypes change the kernels' loads, stores and accumulator: one kernel build each, whose copy paths for
# every layout run here (dispatch paths are float32's job above).
@pytest.mark.parametrize("shapes", [((17, 31), (31, 13)), ((70, 33), (33, 130))], ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_dtypes(device, dtype, shapes):
    _skip_fp64(device, dtype)
    a, b = rand(shapes[0], dtype), rand(shapes[1], dtype)
    for layouts in (("contiguous", "contiguous"), ("transposed", "transposed"), ("sliced", "offset")):
        check(clgrad.matmul(make(a, device, layouts[0]), make(b, device, layouts[1])), a, b)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64"])
def test_integer_products_wrap(device, dtype):
    info = np.iinfo(dtype)
    a = np.random.randint(info.max // 2, info.max, size=(5, 9), dtype=dtype)
    b = np.random.randint(info.max // 2, info.max, size=(9, 3), dtype=dtype)
    check(clgrad.mm(make(a, device), make(b, device)), a, b)


def test_named_ops(device):
    a, b, v, w = rand((3, 4)), rand((4, 5)), rand((4,)), rand((3,))
    ba, bb = rand((2, 3, 4)), rand((2, 4, 5))
    check(clgrad.mm(make(a, device), make(b, device, "transposed")), a, b)
    check(clgrad.bmm(make(ba, device, "sliced"), make(bb, device)), ba, bb)
    check(clgrad.mv(make(a, device, "transposed"), make(v, device, "sliced")), a, v)
    check(clgrad.dot(make(v, device, "offset"), make(v, device)), v, v)
    assert_close(clgrad.outer(make(w, device), make(v, device, "sliced")), np.outer(w, v))
    x = make(a, device)
    check(x.mm(make(b, device)), a, b)
    check(x.mv(make(v, device)), a, v)
    check(x.matmul(make(b, device)), a, b)
    check(make(ba, device).bmm(make(bb, device)), ba, bb)
    check(make(v, device).dot(make(v, device)), v, v)
    assert_close(make(w, device).outer(make(v, device)), np.outer(w, v))
    half = np.array([0.5], np.float64 if fp64_ok(device) else np.float32)  # int64 x float promotes to the float
    assert_close(clgrad.outer(make(np.arange(3), device), make(half, device)), np.outer(np.arange(3), half).astype(half.dtype))


def test_vector_times_transposed_batch(device):
    """1-D @ N-D folds into one mv when the right operand's .mT is contiguous (PyTorch's transposed fold)."""
    v, b = rand((4,)), rand((2, 3, 4))
    y = make(b, device).mT
    assert clgrad.ops.linalg._should_fold(make(v, device), y)
    check(clgrad.matmul(make(v, device), y), v, b.swapaxes(-1, -2))


def test_k_zero_gives_zeros(device):
    out = clgrad.matmul(clgrad.ones(3, 0, device=device), clgrad.ones(0, 5, device=device))
    assert_close(out, np.zeros((3, 5), np.float32))
    assert_close(clgrad.dot(clgrad.ones(0, device=device), clgrad.ones(0, device=device)), np.float32(0))


def test_operator_protocol(device):
    x = make(rand((3, 3)), device)
    assert x.__matmul__(2) is NotImplemented
    assert x.__rmatmul__(2.0) is NotImplemented
    with pytest.raises(TypeError, match="unsupported operand"):
        x @ 2  # noqa: B018
    with pytest.raises(TypeError, match="unsupported operand"):
        [[1.0]] @ x  # noqa: B018
    a, c = rand((3, 3)), rand((3, 3))
    check(make(c, device).__rmatmul__(make(a, device)), a, c)


# (call, exception type, PyTorch 2.13's message)
def _f(shape, dtype="float32"):
    return lambda device: clgrad.zeros(shape, dtype=getattr(clgrad, _stand_in(dtype, device)), device=device)


def _stand_in(dtype, device):
    """The dtype-mismatch cases pair float32 with float64; a device without cl_khr_fp64 cannot hold float64, so
    there float16 is the mismatched dtype, and the message names it as PyTorch does (see _stand_in_message)."""
    return "float16" if dtype == "float64" and not fp64_ok(device) else dtype


def _stand_in_message(message, device):
    return message if fp64_ok(device) else message.replace("Double", "Half").replace("double", "c10::Half")


ERRORS = [
    (lambda d: clgrad.mm(_f((2, 3))(d), _f((4, 5))(d)), RuntimeError, "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    (lambda d: clgrad.matmul(_f((2, 3))(d), _f((4, 5))(d)), RuntimeError, "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    (lambda d: clgrad.matmul(_f((3,))(d), _f((4, 5))(d)), RuntimeError, "mat1 and mat2 shapes cannot be multiplied (1x3 and 4x5)"),
    (lambda d: clgrad.matmul(_f((2, 3, 4))(d), _f((5, 6))(d)), RuntimeError, "mat1 and mat2 shapes cannot be multiplied (6x4 and 5x6)"),
    (lambda d: clgrad.mm(_f((2, 3))(d), _f((3, 5), "float64")(d)), RuntimeError,
     "expected m1 and m2 to have the same dtype, but got: float != double"),
    (lambda d: clgrad.matmul(_f((2, 3), "int32")(d), _f((3, 5), "int64")(d)), RuntimeError,
     "expected m1 and m2 to have the same dtype, but got: int != long int"),
    (lambda d: clgrad.mm(_f((2, 3), "float16")(d), _f((3, 5), "int8")(d)), RuntimeError,
     "expected m1 and m2 to have the same dtype, but got: c10::Half != signed char"),
    (lambda d: clgrad.mm(_f((2, 3, 4))(d), _f((4, 5))(d)), RuntimeError, "self must be a matrix"),
    (lambda d: clgrad.mm(_f((3, 4))(d), _f((4,))(d)), RuntimeError, "mat2 must be a matrix"),
    (lambda d: clgrad.bmm(_f((2, 3, 4))(d), _f((3, 4, 5))(d)), RuntimeError,
     "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [3, 4]."),
    (lambda d: clgrad.bmm(_f((3, 4))(d), _f((2, 4, 5))(d)), RuntimeError, "batch1 must be a 3D tensor"),
    (lambda d: clgrad.bmm(_f((2, 3, 4))(d), _f((4, 5))(d)), RuntimeError, "batch2 must be a 3D tensor"),
    (lambda d: clgrad.bmm(_f((2, 3, 4))(d), _f((2, 4, 5), "float64")(d)), RuntimeError,
     "expected scalar type Float but found Double"),
    (lambda d: clgrad.matmul(_f((2, 3, 4))(d), _f((2, 5, 6))(d)), RuntimeError,
     "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 5]."),
    (lambda d: clgrad.matmul(_f((3, 4))(d), _f((2, 5, 6))(d)), RuntimeError,
     "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 5]."),
    (lambda d: clgrad.matmul(_f((2, 3, 3, 4))(d), _f((5, 4, 2))(d)), RuntimeError,
     "The size of tensor a (3) must match the size of tensor b (5) at non-singleton dimension 1"),
    (lambda d: clgrad.matmul(_f((3, 4))(d), _f((2, 4, 5), "float64")(d)), RuntimeError,
     "expected scalar type Float but found Double"),
    (lambda d: clgrad.matmul(_f((2, 3, 4))(d), _f((4,), "float64")(d)), RuntimeError,
     "addmv input tensors must have the same dtype, but got Double, Float, and Double"),
    (lambda d: clgrad.mv(_f((3, 4))(d), _f((5,))(d)), RuntimeError, "size mismatch, got input (3), mat (3x4), vec (5)"),
    (lambda d: clgrad.mv(_f((3,))(d), _f((3,))(d)), RuntimeError, "vector + matrix @ vector expected, got 1, 1, 1"),
    (lambda d: clgrad.dot(_f((3,))(d), _f((4,))(d)), RuntimeError,
     "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements, but got 3 and 4 "
     "elements respectively"),
    (lambda d: clgrad.dot(_f((3,))(d), _f((3,), "float64")(d)), RuntimeError,
     "dot : expected both vectors to have same dtype, but found Float and Double"),
    (lambda d: clgrad.dot(_f((3, 1))(d), _f((3,))(d)), RuntimeError, "1D tensors expected, but got 2D and 1D tensors"),
    (lambda d: clgrad.matmul(_f(())(d), _f((3,))(d)), RuntimeError,
     "both arguments to matmul need to be at least 1D, but they are 0D and 1D"),
    (lambda d: clgrad.outer(_f((3, 1))(d), _f((3,))(d)), RuntimeError, "outer: Expected 1-D argument self, but got 2-D"),
    (lambda d: clgrad.matmul(_f((3,))(d), 2), TypeError, "matmul(): argument 'other' (position 2) must be Tensor, not int"),
    (lambda d: clgrad.mm(_f((2, 2), "bool")(d), _f((2, 2), "bool")(d)), NotImplementedError,
     "'mm' is not implemented for dtype bool on device"),
    (lambda d: clgrad.matmul(_f((2,), "bool")(d), _f((2,), "bool")(d)), NotImplementedError,
     "'dot' is not implemented for dtype bool on device"),
]


@pytest.mark.parametrize("call, exc, message", ERRORS, ids=[e[2][:40] for e in ERRORS])
def test_errors(device, call, exc, message):
    with pytest.raises(exc, match=re.escape(_stand_in_message(message, device))):
        call(device)


def test_device_mismatch(device):
    if device == "cpu":
        pytest.skip("needs an OpenCL device")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        clgrad.mm(clgrad.ones(2, 2, device=device), clgrad.ones(2, 2))


# ---- the primitive itself: arbitrary strides, offsets and stride-0 batches ---------------------------------
def _strided(arr, device, strides, offset):
    """``arr`` written through an as_strided view with the given element strides and storage offset."""
    size = offset + sum((n - 1) * s for n, s in zip(arr.shape, strides)) + 1
    base = clgrad.zeros(size, dtype=clgrad.dtypes.from_numpy_dtype(arr.dtype), device=device)
    view = base.as_strided(arr.shape, strides, offset)
    view.copy_(clgrad.tensor(arr))
    return view


PRIMITIVE_CASES = [  # (B, M, K, N, a strides, a offset, b strides, b offset)
    (3, 5, 7, 4, (0, 7, 1), 2, (28, 4, 1), 0),  # a broadcast over the batch
    (3, 5, 7, 4, (35, 1, 5), 1, (0, 1, 7), 3),  # transposed inner strides, b broadcast
    (2, 66, 40, 67, (2640, 40, 1), 5, (40 * 67, 67, 1), 9),  # interior and edge tiles
    (2, 65, 33, 70, (65 * 33 * 2, 2, 65 * 2), 0, (2400, 1, 33), 4),  # a without unit stride, transposed b
    (1, 20, 64, 64, (64 * 20, 64, 1), 0, (64 * 64 * 3, 3 * 64, 3), 1),  # b without unit stride
]


@pytest.mark.parametrize("case", PRIMITIVE_CASES, ids=str)
def test_primitive_strides(device, case):
    nb, m, k, n, sa, oa, sb, ob = case
    a, b = rand((1 if sa[0] == 0 else nb, m, k)), rand((1 if sb[0] == 0 else nb, k, n))
    x = _strided(a[0], device, sa[1:], oa).unsqueeze(0).expand(nb, m, k) if sa[0] == 0 else _strided(a, device, sa, oa)
    y = _strided(b[0], device, sb[1:], ob).unsqueeze(0).expand(nb, k, n) if sb[0] == 0 else _strided(b, device, sb, ob)
    assert x.stride() == sa and y.stride() == sb
    out = Tensor._empty((nb, m, n), clgrad.float32, x.device)
    backends.get(x.device).matmul(out, x, y)
    check(out, np.broadcast_to(a, (nb, m, k)), np.broadcast_to(b, (nb, k, n)))


SUM_CASES = [  # (B, chunks, M, K, N, b transposed): out[z] = the sum of a[i] @ b[i] over chunk z's batches
    (5, 2, 10, 37, 25, True),  # a short last chunk; few rows and columns
    (7, 3, 20, 9, 70, True),  # 17-32 rows (3 row tiles on CPU devices); K below the slab depth
    (4, 4, 33, 70, 13, False),  # one batch per chunk; a product taller than the short tilings
    (3, 1, 1, 40, 130, False),  # a single chunk; a skinny product
    (6, 2, 40, 5, 1, True),  # a matrix @ vector one, computed transposed
]


@pytest.mark.parametrize("case", SUM_CASES, ids=str)
def test_matmul_sum(device, case):
    """The batch-summed product behind a convolution's weight gradient, on each backend."""
    nb, z, m, k, n, transposed = case
    a, b = rand((nb, m, k)), rand((nb, k, n))
    x = make(a, device)
    y = make(b.transpose(0, 2, 1).copy(), device).transpose(1, 2) if transposed else make(b, device)
    out = Tensor._empty((z, m, n), clgrad.float32, x.device)
    backends.get(x.device).matmul_sum(out, x, y)
    per = -(-nb // z)
    want = np.stack([np.einsum("bmk,bkn->mn", a[i * per:(i + 1) * per].astype(np.float64),
                               b[i * per:(i + 1) * per].astype(np.float64)) for i in range(z)])
    np.testing.assert_allclose(out.cpu().numpy(), want, rtol=1e-4, atol=1e-4)


def _force_tiling(monkeypatch, table):
    """Pick tilings from the ``table`` tables ('gpu' or 'cpu') whatever the device class."""
    chosen = clmatmul.tiling
    monkeypatch.setattr(clmatmul, "tiling", lambda dev, acc, skinny=False, short=False:
                        chosen(dev, acc, skinny, kind=table, short=short))


@pytest.mark.parametrize("table", ["gpu", "cpu"])
@pytest.mark.parametrize("shapes", [((17, 31), (31, 13)), ((10, 25), (25, 576)), ((2, 20, 250), (250, 64)), ((2, 70, 33), (33, 130)), ((3, 0), (0, 5)), ((300,), (300, 257)),
                                    ((2, 129), (129, 3)), ((200, 129), (129,))], ids=str)
def test_both_tilings(device, monkeypatch, table, shapes):
    """Each device class's tiling runs on every OpenCL device, so the GPU kernel is checked on PoCL too."""
    if device == "cpu":
        pytest.skip("OpenCL tilings")
    _force_tiling(monkeypatch, table)
    a, b = rand(shapes[0]), rand(shapes[1])
    check(clgrad.matmul(make(a, device), make(b, device, "transposed")), a, b)
    if len(shapes[0]) == 3:
        a, b = a.astype(np.float16), b.astype(np.float16)
        check(clgrad.matmul(make(a, device, "transposed"), make(b, device, "sliced")), a, b)


def test_tiling_geometry():
    """Work-items cover each output tile exactly with their register blocks (the template relies on it)."""
    for table in clmatmul.TILINGS.values():
        for t in table:
            lx, ly, _ = t.local_size
            assert t.tm == ly * t.wm and t.tn == lx * t.wn * t.vw and lx * ly <= 256


def test_long_indices_and_batch_chunks(device, monkeypatch):
    """The 64-bit index variant and batches split over several launches, forced at small sizes."""
    if device == "cpu":
        pytest.skip("OpenCL launch limits")
    monkeypatch.setattr(clmatmul, "INT32_MAX", 0)
    monkeypatch.setattr(clmatmul, "MAX_BATCH", 2)
    a, b = rand((5, 9, 70)), rand((70, 3))
    check(clgrad.matmul(make(a, device, "sliced"), make(b, device)), a, b)  # not foldable: a bmm of 5


# ---- Oclgrind: odd sizes through every code path, no invalid access or data race -------------------------
ERROR_MARKERS = ("Invalid read", "Invalid write", "data race", "Uninitialized", "Oclgrind - ")


@pytest.mark.oclgrind
@pytest.mark.parametrize("table", ["gpu", "cpu"])
def test_simulator_clean(device, monkeypatch, capfd, table):
    if device == "cpu":
        pytest.skip("OpenCL only")
    _force_tiling(monkeypatch, table)
    a, b = rand((2, 67, 35)), rand((35, 66))
    check(clgrad.matmul(make(a, device), make(b, device)), a, b)  # one interior tile plus edge tiles
    check(clgrad.matmul(make(a, device, "transposed"), make(b, device, "transposed")), a, b)
    a, v = rand((35,)), rand((35, 67))  # a skinny product, and a matrix @ vector one computed transposed
    check(clgrad.matmul(make(a, device), make(v, device, "transposed")), a, v)
    check(clgrad.matmul(make(v.T.copy(), device, "sliced"), make(a, device)), v.T.copy(), a)
    for m in (10, 20):  # batch-summed products (conv weight gradients) with short tilings
        x, y = rand((3, m, 35)), rand((3, 35, 27))
        xt, yt = make(x, device), make(y, device, "transposed")
        out = Tensor._empty((2, m, 27), clgrad.float32, xt.device)
        backends.get(out.device).matmul_sum(out, xt, yt)
        want = np.stack([x[:2].astype(np.float64).__matmul__(y[:2]).sum(0), x[2] @ y[2]])
        np.testing.assert_allclose(out.cpu().numpy(), want, rtol=1e-4, atol=1e-4)
    clgrad.opencl.synchronize()
    err = capfd.readouterr().err
    found = [m for m in ERROR_MARKERS if m.lower() in err.lower()]
    assert not found, f"the OpenCL runtime reported {found}:\n{err[:4000]}"


@pytest.mark.parametrize("table", ["gpu", "cpu"])
@pytest.mark.parametrize("x_shape,out_features,dtype", [((5, 7), 13, "float32"), ((2, 3, 40), 70, "float32"),
                                                        ((33,), 17, "float32"), ((0, 4), 6, "float32"),
                                                        ((9, 20), 130, "float64")], ids=str)
def test_linear_bias_fused_in_the_product(device, monkeypatch, table, x_shape, out_features, dtype):
    """F.linear adds its bias in the matmul kernel's store: bit-identical to the product followed by an add (the
    same roundings), for both tilings (vector and scalar stores), tails, 1-D and batched inputs, and no rows."""
    if device == "cpu" and table == "gpu":
        pytest.skip("tiling tables are an OpenCL matter")
    if dtype == "float64" and not fp64_ok(device):
        pytest.skip("the device lacks cl_khr_fp64")
    if device != "cpu":
        _force_tiling(monkeypatch, table)
    rng = np.random.default_rng(3)
    x = clgrad.tensor(rng.standard_normal(x_shape), dtype=getattr(clgrad, dtype), device=device)
    w = clgrad.tensor(rng.standard_normal((out_features, x_shape[-1])), dtype=x.dtype, device=device)
    b = clgrad.tensor(rng.standard_normal(out_features), dtype=x.dtype, device=device)
    fused = F.linear(x, w, b)
    two_steps = clgrad.matmul(x, w.t()) + b
    assert fused.shape == two_steps.shape and fused.dtype is x.dtype
    np.testing.assert_array_equal(fused.cpu().numpy(), two_steps.cpu().numpy())
    strided_bias = clgrad.tensor(rng.standard_normal(2 * out_features), dtype=x.dtype, device=device)[::2]
    np.testing.assert_array_equal(F.linear(x, w, strided_bias).cpu().numpy(),
                                  (clgrad.matmul(x, w.t()) + strided_bias).cpu().numpy())
