"""Creation on every device: tensor/as_tensor/from_numpy (dtype inference and the numpy bridge),
empty/zeros/ones/full, arange/linspace/eye and the *_like family, against PyTorch and numpy."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import fp64_ok

import clgrad

# PyTorch's own advice, printed when the oracle runs the same calls
pytestmark = [pytest.mark.filterwarnings("ignore:To copy construct from a tensor"),
              pytest.mark.filterwarnings("ignore:The given NumPy array is not writable")]


def _torch():
    return pytest.importorskip("torch")


def result(t):
    return (tuple(t.shape), str(t.dtype).split(".")[-1], t.cpu().tolist())


def outcome(fn, m, device):
    try:
        return result(fn(m, device))
    except Exception as exc:  # noqa: BLE001 - failures are compared with torch's
        return type(exc), str(exc).replace("clgrad.", "torch.")


def same_as_torch(fn, device, exact_error=True, rtol=0.0):
    """``fn(module, device)`` gives the same shape, dtype and values in clgrad as in torch, or the
    same exception (type, and message unless ``exact_error`` is False). ``rtol`` allows float values
    to differ by rounding (PyTorch's vectorised arange rounds differently per SIMD width)."""
    torch = _torch()
    got, expected = outcome(fn, clgrad, device), outcome(fn, torch, "cpu")
    if isinstance(expected[0], type) and not exact_error:
        got, expected = got[0], expected[0]
    if rtol and not isinstance(expected[0], type) and got[:2] == expected[:2]:
        np.testing.assert_allclose(got[2], expected[2], rtol=rtol, atol=rtol)
        return
    assert got == expected


# (name, data maker(m), dtype name or None): clgrad.tensor infers and converts like torch.tensor
DATA = [
    ("int", lambda m: 3, None), ("float", lambda m: 3.5, None), ("bool", lambda m: True, None),
    ("neg_zero", lambda m: -0.0, None), ("list_int", lambda m: [1, 2, 3], None),
    ("list_mixed", lambda m: [1, 2.5], None), ("list_bool_int", lambda m: [True, 2], None),
    ("list_bool", lambda m: [True, False], None), ("nested", lambda m: [[1, 2], [3, 4]], None),
    ("deep", lambda m: [[[1.0]], [[2.0]]], None), ("tuple", lambda m: (1, 2), None),
    ("empty", lambda m: [], None), ("empty2", lambda m: [[], []], None), ("range", lambda m: range(3), None),
    ("np_f64", lambda m: np.array([1.5, 2]), None), ("np_i32", lambda m: np.array([1], np.int32), None),
    ("np_0d", lambda m: np.array(2.5), None), ("np_scalar_f64", lambda m: np.float64(2.5), None),
    ("np_scalar_i32", lambda m: np.int32(2), None), ("np_bool", lambda m: np.bool_(True), None),
    ("np_T", lambda m: np.arange(6.0).reshape(2, 3).T, None), ("np_f16", lambda m: np.ones(2, np.float16), None),
    ("list_np_i32", lambda m: [np.int32(1), np.int32(2)], None), ("list_np_i32_int", lambda m: [np.int32(1), 2], None),
    ("list_np_f32_int", lambda m: [np.float32(1), 2], None), ("list_np_bool_float", lambda m: [np.bool_(True), 1.5], None),
    ("list_0d_tensors", lambda m: [m.tensor(1.0), m.tensor(2.0)], None),
    ("list_0d_i32", lambda m: [m.tensor(1, dtype=m.int32), m.tensor(2, dtype=m.int32)], None),
    ("tensor", lambda m: m.tensor([1, 2]), None), ("big_int", lambda m: [2**40, -(2**62)], None),
    ("dtype_int", lambda m: [1.7, -2.7], "int32"), ("dtype_bool", lambda m: [0.5, 0, -1], "bool"),
    ("dtype_half", lambda m: [1.5, 65504, 70000, 1e-8], "float16"), ("dtype_uint8_wrap", lambda m: [-1, 255, -255], "uint8"),
    ("dtype_f64", lambda m: [0.1, 1e300], "float64"), ("dtype_from_tensor", lambda m: m.tensor([1.5]), "int64"),
    ("dtype_bool_nan", lambda m: [float("nan"), 2.0], "bool"), ("np_wraps_uint8", lambda m: np.array([300, -1]), "uint8"),
]


@pytest.mark.parametrize("name, data, dtype", DATA, ids=[d[0] for d in DATA])
def test_tensor_matches_torch(device, name, data, dtype):
    if (dtype == "float64" or name in ("np_f64", "np_0d", "np_scalar_f64", "np_T")) and not fp64_ok(device):
        pytest.skip("no fp64")
    same_as_torch(lambda m, d: m.tensor(data(m), dtype=getattr(m, dtype) if dtype else None, device=d), device)


# (name, data, dtype): rejected like torch.tensor, same exception type and message
BAD_DATA = [
    ("ragged", [[1, 2], [3]], None), ("ragged_deep", [[[1], [2]], [[3]]], None), ("none", None, None),
    ("str", "abc", None), ("dict", {1: 2}, None), ("object", object(), None),
    ("uint8_overflow", [256], "uint8"), ("uint8_negative_overflow", [-256], "uint8"), ("int8_overflow", [128], "int8"),
    ("int8_float_overflow", [127.9], "int8"), ("uint8_negative_float", [-0.5], "uint8"),
    ("int32_overflow", [1.5e10], "int32"), ("int_inf", [float("inf")], "int64"), ("int_nan", [float("nan")], "int32"),
    ("int64_overflow", [1, 2**63], None),
]


@pytest.mark.parametrize("name, data, dtype", BAD_DATA, ids=[d[0] for d in BAD_DATA])
def test_tensor_errors(device, name, data, dtype):
    same_as_torch(lambda m, d: m.tensor(data, dtype=getattr(m, dtype) if dtype else None, device=d), device,
                  exact_error=name not in ("str", "int64_overflow"))


def test_tensor_copies(device):
    a = np.arange(3.0, dtype=np.float32)
    t = clgrad.tensor(a, device=device)
    a[0] = 100
    assert t.tolist() == [0.0, 1.0, 2.0]
    u = clgrad.tensor(t)
    u.fill_(7)
    assert t.tolist() == [0.0, 1.0, 2.0] and u.device == t.device


def test_default_dtype_inference(device):
    before = clgrad.get_default_dtype()
    try:
        clgrad.set_default_dtype(clgrad.float64)
        if fp64_ok(device):
            assert clgrad.tensor([1.5], device=device).dtype is clgrad.float64
            assert clgrad.tensor([np.float32(1), 2.5], device=device).dtype is clgrad.float64
            assert clgrad.arange(0, 1, 0.5, device=device).dtype is clgrad.float64
        assert clgrad.tensor([np.float32(1), 2], device=device).dtype is clgrad.float32
        assert clgrad.tensor([1, 2], device=device).dtype is clgrad.int64
    finally:
        clgrad.set_default_dtype(before)


# ---- the numpy bridge --------------------------------------------------------------------------

ARRAYS = [
    ("contiguous", lambda: np.arange(12.0).reshape(3, 4)),
    ("transposed", lambda: np.arange(12, dtype=np.int32).reshape(3, 4).T),
    ("sliced", lambda: np.arange(40.0, dtype=np.float32).reshape(5, 8)[1:4, 2::3]),
    ("broadcast", lambda: np.broadcast_to(np.arange(3.0), (2, 3))),
    ("0d", lambda: np.array(5, dtype=np.int16)),
    ("empty", lambda: np.zeros((0, 3), np.float32)),
    ("bool", lambda: np.array([True, False])),
    ("half", lambda: np.arange(4, dtype=np.float16)),
    ("fortran", lambda: np.asfortranarray(np.arange(6, dtype=np.uint8).reshape(2, 3))),
]


@pytest.mark.parametrize("name, make", ARRAYS, ids=[a[0] for a in ARRAYS])
def test_from_numpy_shares_memory(name, make):
    arr = make()
    t = clgrad.from_numpy(arr)
    assert t.device == "cpu" and t.dtype.np == arr.dtype and t.shape == arr.shape
    assert t.stride() == tuple(s // arr.itemsize for s in arr.strides)
    np.testing.assert_array_equal(t.numpy(), arr)
    back = t.numpy()
    assert np.shares_memory(back, arr) or arr.size == 0
    if arr.size and arr.flags.writeable:
        t.fill_(1)  # tensor -> numpy
        assert (arr == 1).all()
        arr[...] = 0  # numpy -> tensor
        assert t.tolist() == np.zeros_like(arr).tolist()
    torch = pytest.importorskip("torch")
    assert t.stride() == torch.from_numpy(make()).stride()


def test_numpy_bridge_acceptance():
    """The issue's snippet: changes through numpy show in the tensor and back, on cpu."""
    a = clgrad.ones(5)
    b = a.numpy()
    a.add_(1)
    assert b.tolist() == [2.0] * 5
    c = np.ones(5)
    d = clgrad.from_numpy(c)
    np.add(c, 1, out=c)
    assert d.tolist() == [2.0] * 5 and d.dtype is clgrad.float64
    d.mul_(3)
    assert c.tolist() == [6.0] * 5


FROM_NUMPY_ERRORS = [
    ("negative", lambda: np.arange(3)[::-1], ValueError, "At least one stride in the given numpy array is negative"),
    ("byteorder", lambda: np.arange(3, dtype=">i4"), ValueError, "byte order different from the native byte order"),
    ("list", lambda: [1, 2], TypeError, "expected np.ndarray (got list)"),
    ("complex256", lambda: np.zeros(2, np.clongdouble), TypeError, "can't convert np.ndarray of type complex256"),
]


@pytest.mark.parametrize("name, make, exc, msg", FROM_NUMPY_ERRORS, ids=[e[0] for e in FROM_NUMPY_ERRORS])
def test_from_numpy_errors(name, make, exc, msg):
    with pytest.raises(exc) as info:
        clgrad.from_numpy(make())
    assert msg in str(info.value)
    if name == "negative":
        torch = _torch()
        with pytest.raises(ValueError) as tinfo:
            torch.from_numpy(make())
        assert str(info.value) == str(tinfo.value)


def test_as_tensor(device):
    arr = np.arange(3)
    t = clgrad.as_tensor(arr)  # cpu, same dtype: shares
    t[0] = 9
    assert arr[0] == 9
    t2 = clgrad.as_tensor(arr, dtype=clgrad.int64)
    t2[1] = 8
    assert arr[1] == 8
    t3 = clgrad.as_tensor(arr, dtype=clgrad.float32)  # another dtype: a copy
    t3[2] = 7
    assert arr[2] == 2 and t3.dtype is clgrad.float32
    t4 = clgrad.as_tensor(np.arange(3)[::-1].copy()[::-1])  # negative strides: copied instead
    assert t4.tolist() == [0, 1, 2]
    x = clgrad.zeros(2, device=device)
    assert clgrad.as_tensor(x) is x and clgrad.as_tensor(x, dtype=clgrad.float32, device=device) is x
    y = clgrad.as_tensor(arr, device=device)
    assert y.device == device and y.tolist() == arr.tolist()
    assert clgrad.as_tensor([1, 2], device=device).dtype is clgrad.int64


def test_numpy_on_opencl_raises(device):
    t = clgrad.arange(4, device=device)
    if device == "cpu":
        assert np.shares_memory(t.numpy(), t.numpy())
        return
    with pytest.raises(TypeError) as info:
        t.numpy()
    assert str(info.value) == (
        f"can't convert {device} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first."
    )
    assert t.numpy(force=True).tolist() == [0, 1, 2, 3]


def test_array_protocol(device):
    t = clgrad.arange(6, device=device).view(2, 3).t()
    a = np.asarray(t)
    assert a.tolist() == [[0, 3], [1, 4], [2, 5]] and a.dtype == np.int64
    assert np.asarray(t, dtype=np.float32).dtype == np.float32
    assert np.asarray(clgrad.tensor(2.5, device=device)).shape == ()
    if device == "cpu":
        assert np.shares_memory(np.asarray(t), t.numpy())


# ---- filled ------------------------------------------------------------------------------------

# (name, maker(m, d)): compared with torch for shape, dtype and values
FILLED = [
    ("zeros", lambda m, d: m.zeros(2, 3, device=d)), ("zeros_tuple", lambda m, d: m.zeros((2, 3), device=d)),
    ("zeros_list", lambda m, d: m.zeros([2, 3], device=d)), ("zeros_size", lambda m, d: m.zeros(m.Size([2, 1]), device=d)),
    ("zeros_kw", lambda m, d: m.zeros(size=(2,), device=d)), ("zeros_long", lambda m, d: m.zeros(5, 3, dtype=m.long, device=d)),
    ("zeros_0d", lambda m, d: m.zeros((), device=d)), ("zeros_empty", lambda m, d: m.zeros(0, 2, device=d)),
    ("zeros_np_int", lambda m, d: m.zeros(np.int64(2), device=d)), ("zeros_tensor_size", lambda m, d: m.zeros(m.tensor(2), device=d)),
    ("ones", lambda m, d: m.ones(2, 2, device=d)), ("ones_bool", lambda m, d: m.ones(2, dtype=m.bool, device=d)),
    ("ones_half", lambda m, d: m.ones(3, dtype=m.half, device=d)), ("ones_uint8", lambda m, d: m.ones(1, 2, dtype=m.uint8, device=d)),
    ("empty_shape", lambda m, d: m.empty(2, 3, device=d).zero_()), ("empty_0", lambda m, d: m.empty(0, device=d)),
    ("full_float", lambda m, d: m.full((2, 2), 1.5, device=d)), ("full_int", lambda m, d: m.full((2,), 7, device=d)),
    ("full_bool", lambda m, d: m.full((2,), True, device=d)), ("full_0d", lambda m, d: m.full((), 7, device=d)),
    ("full_dtype", lambda m, d: m.full((2,), 7.9, dtype=m.int32, device=d)),
    ("full_tensor_value", lambda m, d: m.full((2,), m.tensor(3.5), device=d)),
    ("full_tensor_int_value", lambda m, d: m.full((2,), m.tensor(3), device=d)),
    ("full_np_value", lambda m, d: m.full((2,), np.float32(2.5), device=d)),
    ("full_empty", lambda m, d: m.full((0, 2), 1, device=d)),
    ("eye", lambda m, d: m.eye(3, device=d)), ("eye_nm", lambda m, d: m.eye(2, 4, device=d)),
    ("eye_mn", lambda m, d: m.eye(4, 2, device=d)), ("eye_0", lambda m, d: m.eye(0, device=d)),
    ("eye_0m", lambda m, d: m.eye(2, 0, device=d)), ("eye_int", lambda m, d: m.eye(2, dtype=m.int32, device=d)),
    ("eye_bool", lambda m, d: m.eye(2, dtype=m.bool, device=d)),
]


@pytest.mark.parametrize("name, make", FILLED, ids=[f[0] for f in FILLED])
def test_filled_matches_torch(device, name, make):
    same_as_torch(make, device)
    assert make(clgrad, device).device == device


FILLED_ERRORS = [
    ("empty_neg", lambda m, d: m.empty(2, -3, device=d), True), ("zeros_neg", lambda m, d: m.zeros(2, -1, device=d), True),
    ("ones_neg", lambda m, d: m.ones(-1, device=d), True), ("full_neg", lambda m, d: m.full((2, -1), 1.0, device=d), True),
    ("zeros_missing", lambda m, d: m.zeros(device=d), True), ("empty_float", lambda m, d: m.empty(2.0, device=d), False),
    ("zeros_bool_size", lambda m, d: m.zeros(True, device=d), False),
    ("full_2d_value", lambda m, d: m.full((2,), m.tensor([1.0, 2.0]), device=d), True),
    ("eye_neg", lambda m, d: m.eye(-1, device=d), True), ("eye_neg_m", lambda m, d: m.eye(2, -1, device=d), True),
    ("eye_float", lambda m, d: m.eye(2.0, device=d), False),
]


@pytest.mark.parametrize("name, make, exact", FILLED_ERRORS, ids=[f[0] for f in FILLED_ERRORS])
def test_filled_errors(device, name, make, exact):
    same_as_torch(make, device, exact_error=exact)


def test_like(device):
    torch = _torch()
    base = clgrad.arange(6, dtype=clgrad.int32, device=device).view(2, 3)
    tb = torch.arange(6, dtype=torch.int32).view(2, 3)
    for name, args, kw in [("zeros_like", (), {}), ("ones_like", (), {"dtype": "float32"}), ("full_like", (2.7,), {}),
                           ("full_like", (2,), {"dtype": "float32"}), ("empty_like", (), {}), ("ones_like", (), {"dtype": "bool"})]:
        for view in (lambda x: x, lambda x: x.t(), lambda x: x[:, ::2], lambda x: x[0, 0]):
            c = getattr(clgrad, name)(view(base), *args, **{k: getattr(clgrad, v) for k, v in kw.items()})
            t = getattr(torch, name)(view(tb), *args, **{k: getattr(torch, v) for k, v in kw.items()})
            assert c.shape == t.shape and c.stride() == t.stride() and str(c.dtype)[7:] == str(t.dtype)[6:]
            assert c.device == device and c._storage is not base._storage
            if name != "empty_like":
                assert c.tolist() == t.tolist()


def test_like_device_override(device):
    x = clgrad.ones(2, 3, device="cpu")
    y = clgrad.ones_like(x, device=device)  # the snippet
    assert y.device == device and y.tolist() == [[1.0] * 3] * 2
    z = clgrad.zeros_like(y, device="cpu", dtype=clgrad.int64)
    assert z.device == "cpu" and z.dtype is clgrad.int64
    assert clgrad.full_like(y, 4, device="cpu").tolist() == [[4.0] * 3] * 2
    assert clgrad.empty_like(clgrad.zeros(0, 2, device=device)).shape == (0, 2)


# ---- ranges ------------------------------------------------------------------------------------

RANGES = [
    ("int", lambda m, d: m.arange(5, device=d)), ("start_end", lambda m, d: m.arange(2, 7, device=d)),
    ("step", lambda m, d: m.arange(-3, 10, 4, device=d)), ("neg_step", lambda m, d: m.arange(10, -3, -4, device=d)),
    ("float", lambda m, d: m.arange(0, 1, 0.25, device=d)), ("neg_float", lambda m, d: m.arange(1, 0, -0.3, device=d)),
    ("len_rule", lambda m, d: m.arange(1, 1.3, 0.1, device=d)), ("len_rule2", lambda m, d: m.arange(-1, 1, 0.1, device=d)),
    ("third", lambda m, d: m.arange(0, 1, 1 / 3, device=d)), ("float_start", lambda m, d: m.arange(1.0, 4, device=d)),
    ("empty", lambda m, d: m.arange(5, 5, device=d)), ("empty_float", lambda m, d: m.arange(1.0, 1.0, 0.5, device=d)),
    ("dtype_f32", lambda m, d: m.arange(5, dtype=m.float32, device=d)),
    ("dtype_int_from_float", lambda m, d: m.arange(0.5, 3.7, dtype=m.int64, device=d)),
    ("dtype_i32_from_float", lambda m, d: m.arange(0.5, 3.7, 1.5, dtype=m.int32, device=d)),
    ("dtype_i16_neg", lambda m, d: m.arange(-2.5, 3.7, 1.5, dtype=m.int16, device=d)),
    ("dtype_i64_neg", lambda m, d: m.arange(-2.5, 3.7, 1.5, dtype=m.int64, device=d)),
    ("uint8_wraps", lambda m, d: m.arange(250, 260, dtype=m.uint8, device=d)),
    ("half", lambda m, d: m.arange(0, 1, 0.1, dtype=m.half, device=d)),
    ("half_big", lambda m, d: m.arange(0, 3000, 7.3, dtype=m.half, device=d)),
    ("tensor_arg", lambda m, d: m.arange(m.tensor(3), device=d)),
    ("tensor_float_arg", lambda m, d: m.arange(m.tensor(3.0), device=d)),
    ("np_arg", lambda m, d: m.arange(np.int64(3), device=d)), ("kw", lambda m, d: m.arange(start=1, end=4, device=d)),
    ("big", lambda m, d: m.arange(2**31, 2**31 + 3, device=d)),
    ("linspace", lambda m, d: m.linspace(0, 1, 5, device=d)), ("linspace_7", lambda m, d: m.linspace(0, 1, 7, device=d)),
    ("linspace_1", lambda m, d: m.linspace(2, 5, 1, device=d)), ("linspace_0", lambda m, d: m.linspace(0, 1, 0, device=d)),
    ("linspace_desc", lambda m, d: m.linspace(3, -2, 6, device=d)),
    ("linspace_int", lambda m, d: m.linspace(0, 10, 4, dtype=m.int64, device=d)),
    ("linspace_int_desc", lambda m, d: m.linspace(10, 0, 4, dtype=m.int32, device=d)),
    ("linspace_uint8", lambda m, d: m.linspace(-3, 3, 4, dtype=m.uint8, device=d)),
    ("linspace_half", lambda m, d: m.linspace(0, 1, 7, dtype=m.half, device=d)),
    ("linspace_tensor", lambda m, d: m.linspace(m.tensor(0.0), m.tensor(1.0), 3, device=d)),
]


@pytest.mark.parametrize("name, make", RANGES, ids=[r[0] for r in RANGES])
def test_ranges_match_torch(device, name, make):
    same_as_torch(make, device, rtol=1e-3 if "half" in name else 1e-6)


def test_arange_values_are_exactly_rounded(device):
    """clgrad computes start + i * step in double and rounds once (PyTorch may differ by an ulp)."""
    t = clgrad.arange(-1, 1, 0.1, device=device)
    expected = (-1 + np.arange(20) * 0.1).astype(np.float32)
    np.testing.assert_array_equal(t.cpu().numpy(), expected)


@pytest.mark.parametrize("steps", [2, 3, 7, 100])
def test_linspace_f64(device, steps):
    if not fp64_ok(device):
        pytest.skip("no fp64")
    same_as_torch(lambda m, d: m.linspace(-1.5, 2.25, steps, dtype=m.float64, device=d), device, rtol=1e-14)
    same_as_torch(lambda m, d: m.arange(-1.5, 2.25, 3.75 / steps, dtype=m.float64, device=d), device, rtol=1e-14)


RANGE_ERRORS = [
    ("step0", lambda m, d: m.arange(0, 5, 0, device=d), True),
    ("step_truncates_to_0", lambda m, d: m.arange(0, 2.5, 0.5, dtype=m.int64, device=d), True),
    ("sign", lambda m, d: m.arange(0, 5, -1, device=d), True), ("sign_float", lambda m, d: m.arange(1.0, 0.0, device=d), True),
    ("nan", lambda m, d: m.arange(0, float("nan"), device=d), True), ("inf", lambda m, d: m.arange(0, float("inf"), device=d), True),
    ("bool", lambda m, d: m.arange(2, dtype=m.bool, device=d), True),
    ("linspace_neg", lambda m, d: m.linspace(0, 1, -1, device=d), True),
    ("linspace_float_steps", lambda m, d: m.linspace(0, 1, 2.0, device=d), False),
]


@pytest.mark.parametrize("name, make, exact", RANGE_ERRORS, ids=[r[0] for r in RANGE_ERRORS])
def test_range_errors(device, name, make, exact):
    same_as_torch(make, device, exact_error=exact)


# ---- zero-size and 0-dim everywhere -------------------------------------------------------------

EDGE_SHAPES = [(), (0,), (2, 0), (0, 3, 1), (1,), (1, 1)]


@pytest.mark.parametrize("shape", EDGE_SHAPES, ids=str)
def test_edge_shapes(device, shape):
    expected = np.zeros(shape, np.float32)
    for t in (clgrad.zeros(shape, device=device), clgrad.ones(shape, device=device) * 0,
              clgrad.full(shape, 0.0, device=device), clgrad.empty(shape, device=device).zero_(),
              clgrad.tensor(expected, device=device), clgrad.zeros_like(clgrad.zeros(shape, device=device))):
        assert t.shape == shape and t.device == device and t.numel() == expected.size
        np.testing.assert_array_equal(np.asarray(t), expected)
        assert t.clone().shape == shape and t.contiguous().shape == shape
        assert t.to("cpu").shape == shape and t.to(clgrad.int32).tolist() == expected.astype(np.int32).tolist()
        assert t.view(-1).shape == (expected.size,) if expected.size else True


def test_filled_tensors_start_at_version_zero(device):
    """zeros/ones/full are creations, not in-place writes: their version counter starts at 0, as in PyTorch, and
    the first in-place write makes it 1."""
    for t in (clgrad.zeros(3, device=device), clgrad.ones(2, 2, device=device), clgrad.full((2,), 7, device=device)):
        assert t._version == 0
        t.add_(1)
        assert t._version == 1
