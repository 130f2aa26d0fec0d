"""Elementwise in-place forms (methods, operators, out=) and PyTorch's errors for bad operands."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
from tests.conftest import fp64_ok
from tests.helpers import assert_close, make, to_numpy
from tests.ops.test_pointwise import _skip_fp64

# ---- in-place forms ------------------------------------------------------------------------------
INPLACE = [  # (id, in-place fn, numpy reference, dtype)
    ("iadd", lambda x, y: x.__iadd__(y), np.add, "int32"),
    ("add_", lambda x, y: x.add_(y), np.add, "float32"),
    ("add_alpha_", lambda x, y: x.add_(y, alpha=3), lambda a, b: a + 3 * b, "int64"),
    ("sub_alpha_", lambda x, y: x.sub_(y, alpha=0.5), lambda a, b: a - 0.5 * b, "float32"),
    ("isub", lambda x, y: x.__isub__(y), np.subtract, "int16"),
    ("imul_scalar", lambda x, y: x.__imul__(3), lambda a, b: a * 3, "uint8"),
    ("itruediv", lambda x, y: x.__itruediv__(y), np.true_divide, "float32"),
    ("ifloordiv", lambda x, y: x.__ifloordiv__(y), np.floor_divide, "int32"),
    ("imod", lambda x, y: x.__imod__(y), np.remainder, "int64"),
    ("ipow_scalar", lambda x, y: x.__ipow__(2), lambda a, b: a**2, "int32"),
    ("iand", lambda x, y: x.__iand__(y), np.bitwise_and, "int32"),
    ("ior", lambda x, y: x.__ior__(y), np.bitwise_or, "uint8"),
    ("ixor", lambda x, y: x.__ixor__(y), np.bitwise_xor, "int8"),
    ("ilshift", lambda x, y: x.__ilshift__(1), lambda a, b: a << 1, "int32"),
    ("irshift", lambda x, y: x.__irshift__(1), lambda a, b: a >> 1, "int32"),
    ("clamp_", lambda x, y: x.clamp_(-1, 1), lambda a, b: np.clip(a, -1, 1), "float32"),
    ("clamp_min_tensor_", lambda x, y: x.clamp_(min=y), np.maximum, "int32"),
    ("mul_float_into_double", lambda x, y: x.mul_(y), np.multiply, "float64"),
    ("eq_", lambda x, y: x.eq_(y), lambda a, b: (a == b).astype(a.dtype), "float32"),
    ("neg_", lambda x, y: x.neg_(), lambda a, b: -a, "float32"),
    ("exp_", lambda x, y: x.exp_(), lambda a, b: np.exp(a), "float32"),
    ("int_add_bool_", lambda x, y: x.add_(y > 2), lambda a, b: a + (b > 2), "int32"),
]


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("fn,ref,dtype", [e[1:] for e in INPLACE], ids=[e[0] for e in INPLACE])
def test_inplace(device, fn, ref, dtype, layout):
    _skip_fp64(device, dtype)
    a = np.array([[5, 7, 1], [3, 4, 9]], dtype=dtype)
    b = np.array([[2, 3, 1], [4, 2, 5]], dtype=dtype if dtype != "float64" else "float32")
    x = make(a, device, layout)
    y = make(b, device)
    result = fn(x, y)
    assert result is x  # in-place ops return self
    with np.errstate(all="ignore"):
        expected = np.asarray(ref(a, b)).astype(dtype)
    assert_close(x, expected)


def test_inplace_broadcast_self_overlap(device):
    # an input that is a (broadcast) view of the output reads a snapshot, never half-updated values
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = make(a, device)
    x.add_(x[0])
    assert_close(x, a + a[0])
    x = make(a, device)
    x[1:] += x[:-1]
    expected = a.copy()
    expected[1:] = a[1:] + a[:-1]
    assert_close(x, expected)


@pytest.mark.parametrize(
    "dtype,fn,message",
    [
        ("int64", lambda x: x.__iadd__(2.5), "result type Float can't be cast to the desired output type Long"),
        ("int64", lambda x: x.div_(2), "result type Float can't be cast to the desired output type Long"),
        ("int32", lambda x: x.mul_(clgrad.ones(3, 2, dtype=clgrad.float16, device=x.device)),
         "result type Half can't be cast to the desired output type Int"),
        ("bool", lambda x: x.add_(clgrad.ones(3, 2, dtype=clgrad.int64, device=x.device)),
         "result type Long can't be cast to the desired output type Bool"),
        ("uint8", lambda x: x.clamp_(min=0.5), "result type Float can't be cast to the desired output type Byte"),
        ("float32", lambda x: x[:1].expand(3, 2).add_(1), "more than one element of the written-to tensor refers to a single memory location"),
        ("float32", lambda x: x.add_(clgrad.ones(2, 3, 2, device=x.device)),
         r"output with shape \[3, 2\] doesn't match the broadcast shape \[2, 3, 2\]"),
    ],
)
def test_inplace_errors(device, dtype, fn, message):
    x = clgrad.ones(3, 2, dtype=getattr(clgrad, dtype), device=device)
    before = to_numpy(x)
    with pytest.raises(RuntimeError, match=message):
        fn(x)
    assert np.array_equal(to_numpy(x), before)  # nothing was written


def test_inplace_error_wording_matches_torch():
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as want:
        torch.ones(2, dtype=torch.long).add_(2.5)
    with pytest.raises(RuntimeError) as got:
        clgrad.ones(2, dtype=clgrad.long).add_(2.5)
    assert str(got.value) == str(want.value)


def test_out_argument(device):
    a, b = np.array([1.5, 2.5], np.float32), np.array([2.0, 4.0], np.float32)
    out = clgrad.empty(2, dtype=clgrad.float64, device=device) if fp64_ok(device) else clgrad.empty(2, device=device)
    r = clgrad.mul(make(a, device), make(b, device), out=out)
    assert r is out
    assert_close(out, (a * b).astype(out.dtype.np))
    flags = clgrad.zeros(2, dtype=clgrad.int32, device=device)
    clgrad.lt(make(a, device), 2.0, out=flags)  # bool results may go into any dtype
    assert_close(flags, np.array([1, 0], np.int32))


# ---- errors --------------------------------------------------------------------------------------
def _opencl_only(device):
    if device == "cpu":
        pytest.skip("needs an OpenCL device")
    return int(device.split(":")[1])


def test_device_mismatch(device):
    n = _opencl_only(device)
    x, c = clgrad.ones(3, device=device), clgrad.ones(3)
    message = f"Expected all tensors to be on the same device, but found at least two devices, opencl:{n} and cpu!"
    for fn in (lambda: x + c, lambda: c + x, lambda: clgrad.where(x > 0, c, x), lambda: x.add_(c), lambda: c.add_(x),
               lambda: clgrad.add(x, x, out=clgrad.empty(3))):
        with pytest.raises(RuntimeError, match=message):
            fn()
    # a 0-dim cpu tensor joins the OpenCL tensor (but not as an output)
    assert (x + clgrad.zeros(())).device == clgrad.device(device)
    with pytest.raises(RuntimeError, match=message):
        clgrad.add(x[0], x[1], out=clgrad.zeros(()))


def test_broadcast_mismatch(device):
    a, b = clgrad.ones(2, 3, device=device), clgrad.ones(2, 4, device=device)
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of tensor b \(4\) at non-singleton dimension 1"):
        a + b
    with pytest.raises(RuntimeError, match="must match the size"):
        clgrad.where(a > 0, a, b)


@pytest.mark.parametrize("op", ["bitwise_and", "bitwise_or", "bitwise_xor", "lshift", "rshift"])
def test_bitwise_on_float_names_op_dtype_device(device, op):
    x = clgrad.ones(3, device=device)
    with pytest.raises(NotImplementedError, match=f"\"{op}\" not implemented for 'Float' .* on device {device}"):
        getattr(clgrad, op)(x, x)
    with pytest.raises(RuntimeError, match="bitwise_not"):
        clgrad.bitwise_not(x)
    with pytest.raises(TypeError, match=r"~ \(operator.invert\) is only implemented on integer and Boolean-type tensors"):
        x.__invert__()


@pytest.mark.parametrize(
    "fn,exc,message",
    [
        (lambda x: x + "a", TypeError, "unsupported operand"),
        (lambda x: x + None, TypeError, "unsupported operand"),
        (lambda x: x + [1, 2], TypeError, "unsupported operand"),
        (lambda x: clgrad.add(x, "a"), TypeError, "str"),
        (lambda x: clgrad.mul(2, 3), TypeError, "must be Tensor"),
        (lambda x: clgrad.where(x > 0, x, None), TypeError, "NoneType"),
        (lambda x: clgrad.where(x, x, x), RuntimeError, "where expected condition to be a boolean tensor, but got a tensor with dtype Float"),
        (lambda x: clgrad.div(x, 2, rounding_mode="bad"), RuntimeError, "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'bad'"),
        (lambda x: x.bool() - x.bool(), RuntimeError, "Subtraction, the `-` operator, with two bool tensors is not supported"),
        (lambda x: x - True, RuntimeError, "Subtraction, the `-` operator, with a bool tensor is not supported"),
        (lambda x: -x.bool(), RuntimeError, "Negation, the `-` operator, on a bool tensor is not supported"),
        (lambda x: x.clamp(), RuntimeError, "At least one of 'min' or 'max' must not be None"),
        (lambda x: x.long().add(x.long(), alpha=0.5), RuntimeError, "For integral input tensors, argument alpha must not be a floating point number."),
        (lambda x: x.add(x, alpha=True), RuntimeError, "Boolean alpha only supported for Boolean results."),
        (lambda x: x.bool().clamp(min=False), NotImplementedError, "clamp"),
    ],
)
def test_errors(device, fn, exc, message):
    with pytest.raises(exc, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        fn(clgrad.ones(3, device=device))


def test_unknown_operand_returns_not_implemented(device):
    x = clgrad.ones(2, device=device)
    assert x.__add__("a") is NotImplemented
    assert x.__radd__("a") is NotImplemented
    assert x.__eq__(None) is NotImplemented
    assert (x == None) is False  # noqa: E711 - Python falls back to identity

    class Other:
        def __radd__(self, other):
            return "radd"

    assert x + Other() == "radd"  # NotImplemented lets the other operand answer
