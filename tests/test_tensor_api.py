"""The Tensor's Python protocol against PyTorch's: reflected operators with tensor and numpy operands,
``__format__``, ``__contains__``, ``__iter__``/``__reversed__``/``__len__``, conversions, ``to()``'s overloads and
``memory_format`` (``contiguous_format``, ``preserve_format``, ``channels_last``)."""
from __future__ import annotations

import operator

import numpy as np
import pytest

import clgrad
from tests.helpers import assert_close

REFLECTED = ["__radd__", "__rsub__", "__rmul__", "__rtruediv__", "__rfloordiv__", "__rmod__", "__rpow__",
             "__rmatmul__", "__rand__", "__ror__", "__rxor__", "__rlshift__", "__rrshift__"]
FLOAT_ONLY = {"__rand__", "__ror__", "__rxor__", "__rlshift__", "__rrshift__"}


@pytest.mark.parametrize("name", REFLECTED)
def test_reflected_operator_with_tensor_computes_other_op_self(device, name):
    torch = pytest.importorskip("torch")
    if name in FLOAT_ONLY:
        x, y = [3, 5, 6], [1, 2, 7]
    else:
        x, y = [1.5, 2.0, 3.0], [4.0, -2.0, 0.5]
    expected = getattr(torch.tensor(x), name)(torch.tensor(y)).numpy()
    got = getattr(clgrad.tensor(x, device=device), name)(clgrad.tensor(y, device=device))
    assert_close(got, expected)


@pytest.mark.parametrize("name", REFLECTED)
def test_reflected_operator_with_other_types_is_not_implemented(name):
    assert getattr(clgrad.ones(2), name)("a") is NotImplemented
    assert getattr(clgrad.ones(2), name)([1, 2]) is NotImplemented


@pytest.mark.parametrize("scalar", [np.float32(2.5), np.float64(2.5), np.int64(3), np.int32(3), np.bool_(True)])
@pytest.mark.parametrize("op", [operator.add, operator.mul, operator.sub, operator.truediv])
def test_numpy_scalar_operands_give_tensors(scalar, op):
    torch = pytest.importorskip("torch")
    if op is operator.sub and isinstance(scalar, np.bool_):
        pytest.skip("x - True is refused by both; torch takes numpy's bool as a number there")
    for left in (True, False):
        call = (lambda t, s=scalar: op(s, t)) if left else (lambda t, s=scalar: op(t, s))
        expected = call(torch.tensor([1.0, 2.0]))
        got = call(clgrad.tensor([1.0, 2.0]))
        assert isinstance(got, clgrad.Tensor), type(got)
        assert_close(got, expected.numpy())


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # numpy 2 about torch's __array_wrap__
@pytest.mark.parametrize("op", ["add", "sub", "mul", "floordiv", "mod", "pow", "and_", "or_", "xor",
                                "lshift", "rshift", "eq", "lt", "ge"])
def test_numpy_array_operands_as_torch(op):
    """``x op array`` converts the array as PyTorch's operators do (its ordering comparisons refuse it);
    ``array op x`` is left to numpy, which defers to the tensor and fails as with torch."""
    torch = pytest.importorskip("torch")
    arr = np.array([1, 2], dtype=np.int64)

    def run(lib):
        try:
            r = getattr(operator, op)(lib.tensor([3, 5]), arr)
            return str(r.dtype).split(".")[1], r.tolist()
        except TypeError:
            return TypeError

    assert run(clgrad) == run(torch)
    with pytest.raises(TypeError):
        arr * clgrad.tensor([3, 5])


@pytest.mark.parametrize("value, spec", [(2.5, "+.2f"), (2.5, ""), (5, "03d"), (7, "x"), (1e-5, ".2e"), (True, "")])
def test_format_of_zero_dim_tensor_formats_the_value(value, spec):
    torch = pytest.importorskip("torch")
    assert format(clgrad.tensor(value), spec) == format(torch.tensor(value), spec)
    assert f"{clgrad.tensor(value, dtype=clgrad.float64) if isinstance(value, float) else clgrad.tensor(value):{spec}}"


def test_format_of_other_tensors_as_torch():
    torch = pytest.importorskip("torch")
    for lib in (torch, clgrad):
        with pytest.raises(TypeError, match="unsupported format string passed to Tensor.__format__"):
            format(lib.tensor([2.5]), ".2f")
        with pytest.raises(TypeError, match="unsupported format string passed to Parameter.__format__"):
            format(lib.nn.Parameter(lib.tensor(2.5)), ".2f")
    assert f"{clgrad.tensor([5])}" == str(clgrad.tensor([5]))
    assert f"{clgrad.tensor(2.5, requires_grad=True):.2f}" == "2.50"


def test_contains_as_torch():
    torch = pytest.importorskip("torch")
    for lib in (torch, clgrad):
        x = lib.tensor([[1, 2], [3, 4]])
        assert 2 in x and 5 not in x and 2.0 in x and np.int64(3) in x
        assert lib.tensor([3, 4]) in x and lib.tensor([5, 4]) in x and lib.tensor([5, 6]) not in x
        for bad in ("a", [1], None):
            with pytest.raises(RuntimeError, match="Tensor.__contains__ only supports Tensor or scalar"):
                bad in x  # noqa: B015


def test_iteration_len_reversed_hash():
    torch = pytest.importorskip("torch")
    x = clgrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    rows = list(x)
    assert [r.tolist() for r in rows] == [[1.0, 2.0], [3.0, 4.0]]
    assert [r.grad_fn.name() for r in rows] == [r.grad_fn.name() for r in torch.ones(2, 2, requires_grad=True) * 1]
    assert reversed(x).tolist() == [[3.0, 4.0], [1.0, 2.0]]
    assert reversed(clgrad.tensor(1.0)).item() == 1.0
    assert len(x) == 2 and hash(x) == id(x) and {x: 1}[x] == 1
    for lib in (torch, clgrad):
        with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
            len(lib.tensor(1.0))
        with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
            iter(lib.tensor(1.0))


@pytest.mark.parametrize("expr", [
    "int(L.tensor([[1.5]]))", "float(L.tensor([1, 2]))", "float(L.tensor([]))", "int(L.tensor(float('nan')))",
    "bool(L.tensor([1, 2]))", "bool(L.tensor([]))", "bool(L.tensor([0.0]))", "[1, 2, 3][L.tensor(True)]",
    "[1, 2, 3][L.tensor([1])]", "[1, 2, 3][L.tensor([1, 2])]", "[1, 2, 3][L.tensor(1.0)]", "complex(L.tensor(1.5))",
    "L.tensor(7).__index__()", "int(L.tensor(-2.7))",
])
def test_scalar_conversions_as_torch(expr):
    torch = pytest.importorskip("torch")

    def run(lib):
        try:
            return eval(expr, {"L": lib})
        except Exception as e:  # noqa: BLE001 - the error is what is compared
            return type(e), str(e)

    assert run(clgrad) == run(torch)


# ---- to() and memory_format ------------------------------------------------------------------------------------


@pytest.mark.parametrize("call", [
    lambda x, L: x.to("cpu", L.float64, False, True),
    lambda x, L: x.to(L.float64, True, True),
    lambda x, L: x.to("cpu", dtype=L.float64, copy=True),
    lambda x, L: x.to(x.double(), False, True),
    lambda x, L: x.to(tensor=x.double()),
    lambda x, L: x.to(dtype=L.int32, non_blocking=True),
    lambda x, L: x.to(float),
    lambda x, L: x.to(None),
    lambda x, L: x.to(),
    lambda x, L: x.to(x, memory_format=L.contiguous_format),
    lambda x, L: x.to(L.float32, copy=True),
    lambda x, L: x.to("cpu", L.float32, False, False),
])
def test_to_overloads_match_torch(call):
    torch = pytest.importorskip("torch")
    data = [[1.5, -2.0], [3.0, 4.25]]
    tx, cx = torch.tensor(data), clgrad.tensor(data)
    ty, cy = call(tx, torch), call(cx, clgrad)
    assert cy.dtype.name == str(ty.dtype).split(".")[1]
    assert (cy is cx) == (ty is tx)
    assert cy.tolist() == ty.tolist()


@pytest.mark.parametrize("call", [
    lambda x, L: x.to(other=x),
    lambda x, L: x.to(L.float64, device="cpu"),
    lambda x, L: x.to("cpu", bad=1),
    lambda x, L: x.to(L.float64, "cpu"),
    lambda x, L: x.to("cpu", L.float64, False, True, 1),
])
def test_to_bad_arguments_raise_type_error(call):
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError) as theirs:
        call(torch.ones(2), torch)
    with pytest.raises(TypeError) as ours:
        call(clgrad.ones(2), clgrad)
    assert str(ours.value).split(" - ")[0].split(" but ")[0] == str(theirs.value).split(" - ")[0].split(" but ")[0]


def test_to_copy_true_copies_on_device(device):
    x = clgrad.tensor([1.0, 2.0], device=device)
    y = x.to(device, x.dtype, False, True)
    assert y is not x and y._storage is not x._storage and y.tolist() == [1.0, 2.0]
    assert x.to(device) is x
    z = x.to("cpu", clgrad.float64, False, True)
    assert z.device.type == "cpu" and z.dtype is clgrad.float64


DTYPE_METHODS = ["float", "double", "half", "int", "long", "short", "bool", "byte", "char"]


@pytest.mark.parametrize("method", DTYPE_METHODS)
def test_dtype_methods_take_memory_format_as_torch(method):
    torch = pytest.importorskip("torch")
    for fmt in ("preserve_format", "contiguous_format"):
        tx, cx = torch.ones(2, 3).t(), clgrad.ones(2, 3).t()
        ty = getattr(tx, method)(memory_format=getattr(torch, fmt))
        cy = getattr(cx, method)(memory_format=getattr(clgrad, fmt))
        assert (cy is cx) == (ty is tx) and cy.stride() == ty.stride() and cy.tolist() == ty.tolist()
    t4, c4 = torch.ones(1, 2, 3, 4), clgrad.ones(1, 2, 3, 4)
    ty = getattr(t4, method)(memory_format=torch.channels_last)
    cy = getattr(c4, method)(memory_format=clgrad.channels_last)
    assert cy.stride() == ty.stride() and cy.dtype.name == str(ty.dtype).split(".")[1]
    with pytest.raises(TypeError):
        getattr(c4, method)(clgrad.preserve_format)  # keyword-only, as in PyTorch


@pytest.mark.parametrize("call", [
    lambda x, L: x.contiguous(memory_format=L.channels_last),
    lambda x, L: x.clone(memory_format=L.channels_last),
    lambda x, L: x.contiguous(memory_format=L.channels_last).contiguous(),
    lambda x, L: x.contiguous(memory_format=L.channels_last).clone(),
    lambda x, L: x.contiguous(memory_format=L.channels_last).to(memory_format=L.contiguous_format),
    lambda x, L: L.empty_like(x.contiguous(memory_format=L.channels_last)),
    lambda x, L: L.zeros_like(x, memory_format=L.channels_last),
    lambda x, L: L.ones_like(x.contiguous(memory_format=L.channels_last), memory_format=L.contiguous_format),
    lambda x, L: x.to(memory_format=L.channels_last),
    lambda x, L: x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2).float(memory_format=L.contiguous_format),
    lambda x, L: x[:, :, :1, :1].contiguous(memory_format=L.channels_last),
    lambda x, L: x.unsqueeze(2).contiguous(memory_format=L.channels_last_3d),
    lambda x, L: x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2).clone(memory_format=L.preserve_format),
])
def test_memory_format_layouts_match_torch(device, call):
    torch = pytest.importorskip("torch")
    a = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4) * 0.5
    ty = call(torch.tensor(a), torch)
    cy = call(clgrad.tensor(a, device=device), clgrad)
    assert cy.stride() == ty.stride()
    assert cy.is_contiguous() == ty.is_contiguous()
    assert cy.is_contiguous(memory_format=clgrad.channels_last) == ty.is_contiguous(memory_format=torch.channels_last)
    if "like" not in str(call.__code__.co_names):
        assert_close(cy, ty.numpy())


def test_memory_format_errors_as_torch():
    torch = pytest.importorskip("torch")
    for lib in (torch, clgrad):
        x = lib.ones(2, 3)
        with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
            x.contiguous(memory_format=lib.channels_last)
        with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
            x.to(memory_format=lib.channels_last)
        with pytest.raises(RuntimeError, match="required rank 5 tensor to use channels_last_3d format"):
            x.clone(memory_format=lib.channels_last_3d)
        assert x.contiguous(memory_format=lib.preserve_format) is x
        with pytest.raises(RuntimeError, match="preserve memory format is unsupported by the contiguous operator"):
            x.t().contiguous(memory_format=lib.preserve_format)
    assert repr(clgrad.channels_last) == "clgrad.channels_last"


def test_memory_format_copy_is_recorded_by_autograd():
    x = clgrad.ones(1, 2, 3, 4, dtype=clgrad.float64, requires_grad=True)
    y = x.to(memory_format=clgrad.channels_last)
    assert y.grad_fn.name() == "ToCopyBackward0" and y.stride() == (24, 1, 8, 2)
    (y * clgrad.arange(24.0, dtype=clgrad.float64).reshape(1, 2, 3, 4)).sum().backward()
    assert x.grad.reshape(-1).tolist() == list(range(24))
    z = x.float(memory_format=clgrad.channels_last)
    assert z.dtype is clgrad.float32 and z.stride() == (24, 1, 8, 2) and z.requires_grad
