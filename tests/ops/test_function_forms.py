"""Function forms called with keyword arguments as PyTorch documents them (``clgrad.flatten(x, start_dim=1)``),
compared with torch; ``broadcast_shapes``, ``tile`` and ``round(decimals=)`` against torch too."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import clgrad
from tests.helpers import assert_close, grad_precision, quiet_gradcheck

A = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7 - 1.5
B = np.arange(12, dtype=np.float32).reshape(3, 4) / 5 - 1
IDX = [[0, 2, 1, 0], [1, 0, 2, 2]]

# name -> f(lib, a, b): one call with keywords, written once for torch and for clgrad
CASES = {
    "flatten": lambda L, a, b: L.flatten(a, start_dim=1, end_dim=-1),
    "reshape": lambda L, a, b: L.reshape(a, shape=(4, 6)),
    "permute": lambda L, a, b: L.permute(a, dims=(2, 0, 1)),
    "transpose": lambda L, a, b: L.transpose(a, dim0=0, dim1=2),
    "swapaxes": lambda L, a, b: L.swapaxes(a, axis0=0, axis1=2),
    "swapdims": lambda L, a, b: L.swapdims(a, dim0=0, dim1=2),
    "squeeze": lambda L, a, b: L.squeeze(a[:1], dim=0),
    "squeeze_tuple": lambda L, a, b: L.squeeze(a[:1, :1], dim=(0, 1)),
    "unsqueeze": lambda L, a, b: L.unsqueeze(a, dim=1),
    "narrow": lambda L, a, b: L.narrow(a, dim=2, start=1, length=2),
    "select": lambda L, a, b: L.select(a, dim=1, index=2),
    "t": lambda L, a, b: L.t(input=b),
    "adjoint": lambda L, a, b: L.adjoint(a),
    "as_strided": lambda L, a, b: L.as_strided(b, size=(2, 2), stride=(1, 2), storage_offset=1),
    "movedim": lambda L, a, b: L.movedim(a, source=0, destination=2),
    "unflatten": lambda L, a, b: L.unflatten(a, dim=2, sizes=(2, 2)),
    "clone": lambda L, a, b: L.clone(b.t(), memory_format=L.contiguous_format),
    "sum": lambda L, a, b: L.sum(a, dim=1, keepdim=True, dtype=L.float64),
    "sum_dims": lambda L, a, b: L.sum(a, dim=(0, 2)),
    "mean": lambda L, a, b: L.mean(a, dim=-1, keepdim=True),
    "prod": lambda L, a, b: L.prod(b, dim=0, keepdim=False, dtype=L.float64),
    "cumsum": lambda L, a, b: L.cumsum(b, dim=1, dtype=L.float64),
    "max_dim": lambda L, a, b: L.max(a, dim=1, keepdim=True),
    "min_dim": lambda L, a, b: L.min(a, dim=1),
    "max_other": lambda L, a, b: L.max(b, other=b.flip(0)),
    "amax": lambda L, a, b: L.amax(a, dim=(0, 1), keepdim=True),
    "argmax": lambda L, a, b: L.argmax(a, dim=2, keepdim=True),
    "std": lambda L, a, b: L.std(a, dim=1, correction=0, keepdim=True),
    "var": lambda L, a, b: L.var(a, dim=(0, 2), correction=2),
    "var_mean": lambda L, a, b: L.var_mean(a, dim=1, correction=0),
    "norm": lambda L, a, b: L.norm(a, p=2, dim=1, keepdim=True),
    "logsumexp": lambda L, a, b: L.logsumexp(a, dim=1, keepdim=True),
    "cat": lambda L, a, b: L.cat(tensors=[b, b], dim=1),
    "concatenate": lambda L, a, b: L.concatenate([b, b], axis=1),
    "stack": lambda L, a, b: L.stack(tensors=[b, b], dim=2),
    "split": lambda L, a, b: L.split(b, split_size_or_sections=2, dim=1),
    "chunk": lambda L, a, b: L.chunk(b, chunks=2, dim=1),
    "unbind": lambda L, a, b: L.unbind(b, dim=1),
    "gather": lambda L, a, b: L.gather(b[:2], dim=1, index=L.tensor(IDX)),
    "scatter": lambda L, a, b: L.scatter(b[:2], dim=1, index=L.tensor(IDX), src=b[:2] * 2),
    "scatter_value": lambda L, a, b: L.scatter(b[:2], dim=1, index=L.tensor(IDX), value=3.0),
    "index_select": lambda L, a, b: L.index_select(b, dim=1, index=L.tensor([0, 3])),
    "index_add": lambda L, a, b: L.index_add(b, dim=0, index=L.tensor([0, 2]), source=b[:2], alpha=2),
    "masked_fill": lambda L, a, b: L.masked_fill(b, mask=b > 0, value=0.5),
    "where": lambda L, a, b: L.where(condition=b > 0, input=b, other=-b),
    "clamp": lambda L, a, b: L.clamp(b, min=-0.5, max=0.5),
    "add": lambda L, a, b: L.add(b, other=b, alpha=2),
    "div": lambda L, a, b: L.div(b, other=0.3, rounding_mode="floor"),
    "pow": lambda L, a, b: L.pow(b, exponent=2),
    "round": lambda L, a, b: L.round(b, decimals=1),
    "matmul": lambda L, a, b: L.matmul(b, other=b.t()),
    "bmm": lambda L, a, b: L.bmm(a, mat2=a.transpose(1, 2)),
    "softmax": lambda L, a, b: L.softmax(b, dim=1),
    "sort": lambda L, a, b: L.sort(b, dim=1, descending=True, stable=True),
    "topk": lambda L, a, b: L.topk(b, k=2, dim=1, largest=False, sorted=True),
    "roll": lambda L, a, b: L.roll(b, shifts=1, dims=1),
    "tril": lambda L, a, b: L.tril(b, diagonal=-1),
    "diagonal": lambda L, a, b: L.diagonal(b, offset=1, dim1=0, dim2=1),
    "tile": lambda L, a, b: L.tile(b, dims=(2, 1)),
    "broadcast_to": lambda L, a, b: L.broadcast_to(b, size=(2, 3, 4)),
    "full_like": lambda L, a, b: L.full_like(b, fill_value=2.0),
    "zeros_like": lambda L, a, b: L.zeros_like(b, dtype=L.float64),
    "any": lambda L, a, b: L.any(b > 0, dim=1, keepdim=True),
    "nonzero": lambda L, a, b: L.nonzero(b > 0, as_tuple=True),
    "isclose": lambda L, a, b: L.isclose(b, other=b, rtol=0.0, atol=0.0, equal_nan=True),
    "take_along_dim": lambda L, a, b: L.take_along_dim(b[:2], indices=L.tensor(IDX), dim=1),
    "zeros": lambda L, a, b: L.zeros(size=(2, 3), dtype=L.int32),
    "arange": lambda L, a, b: L.arange(start=1, end=7, step=2, dtype=L.float32),
    "relu": lambda L, a, b: L.relu(input=b),
    "numel": lambda L, a, b: L.numel(input=b),
    "is_floating_point": lambda L, a, b: L.is_floating_point(input=b),
    "is_nonzero": lambda L, a, b: L.is_nonzero(b[1:2, 1]),
    "can_cast": lambda L, a, b: (L.can_cast(L.float32, L.int32), L.can_cast(from_=L.int32, to=L.float16),
                                 L.can_cast(L.int64, L.bool), L.can_cast(L.bool, L.uint8)),
}


def _plain(r):
    """A result as nested Python values: tensors as (dtype, shape, values)."""
    if hasattr(r, "detach"):
        arr = np.asarray(r.detach().cpu().numpy())
        return (arr.dtype.name, arr.shape, np.round(arr.astype(np.float64), 5).tolist())
    if isinstance(r, (tuple, list)):
        return [_plain(x) for x in r]
    return r


@pytest.mark.parametrize("name", sorted(CASES))
def test_function_form_keywords_match_torch(name):
    torch = pytest.importorskip("torch")
    f = CASES[name]
    expected = _plain(f(torch, torch.tensor(A), torch.tensor(B)))
    assert _plain(f(clgrad, clgrad.tensor(A), clgrad.tensor(B))) == expected


@pytest.mark.parametrize("call", [
    lambda L: L.flatten([1, 2]), lambda L: L.transpose("x", 0, 1), lambda L: L.squeeze(3.0),
    lambda L: L.narrow(None, 0, 0, 1), lambda L: L.t([[1.0]]), lambda L: L.clone([1.0]),
])
def test_function_form_rejects_non_tensor_input(call):
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError) as theirs:
        call(torch)
    with pytest.raises(TypeError, match=r"argument 'input' \(position 1\) must be Tensor") as ours:
        call(clgrad)
    assert str(ours.value).split("(")[0] == str(theirs.value).split("(")[0]  # the same function named


METHODS = [
    "x.sum(dim=1, keepdim=True, dtype=L.float64)", "x.std(dim=1, correction=0)", "x.max(dim=1, keepdim=True)",
    "x.var(dim=1, unbiased=False, keepdim=True)", "x.transpose(dim0=0, dim1=1)", "x.repeat(repeats=(2, 1))",
    "x.split(split_size=2, dim=1)", "x.chunk(chunks=2, dim=0)", "x.topk(k=2, dim=1, largest=True)", "x.flip(dims=(0,))",
    "x.roll(shifts=1, dims=0)", "x.to(dtype=L.float64)", "x.new_zeros(size=(2,))", "x.new_full(size=(2,), fill_value=3.0)",
    "x.where(condition=x > 0, other=0.0)", "x.addcmul(tensor1=x, tensor2=x, value=2)", "x.pow(exponent=2)",
    "x.clone(memory_format=L.preserve_format)", "x.unflatten(dim=1, sizes=(2, 2))", "x.tile(dims=(2,))",
    "x.index_fill(dim=1, index=L.tensor([0]), value=3.0)", "x.scatter(dim=1, index=L.tensor([[0], [1], [2]]), src=x)",
    "x.view(size=(12,))", "x.reshape(shape=(12,))", "x.round(decimals=1)", "x.masked_fill(mask=x > 0, value=1.0)",
    "x.gather(dim=1, index=L.tensor([[0], [1], [2]]))", "x.norm(p=1, dim=1)", "x.kthvalue(k=1, dim=1)",
]


@pytest.mark.parametrize("expr", METHODS)
def test_method_keywords_match_torch(expr):
    torch = pytest.importorskip("torch")
    expected = _plain(eval(expr, {"L": torch, "x": torch.tensor(B)}))
    assert _plain(eval(expr, {"L": clgrad, "x": clgrad.tensor(B)})) == expected


def test_view_methods_take_keywords():
    x = clgrad.tensor(A)
    assert x.flatten(start_dim=1).shape == (2, 12)
    assert x.view(size=(6, 4)).shape == x.reshape(shape=(4, 6)).T.shape
    assert x.permute(dims=(2, 1, 0)).shape == (4, 3, 2)
    assert x.expand(size=(2, 2, 3, 4)).shape == (2, 2, 3, 4)
    assert x.narrow(dim=2, start=1, length=2).shape == (2, 3, 2)
    assert x.select(dim=0, index=1).shape == (3, 4)
    assert x[:1].squeeze(dim=0).shape == (3, 4)
    assert x.unsqueeze(dim=-1).shape == (2, 3, 4, 1)
    y = x.as_strided(size=(2,), stride=(3,), storage_offset=1)
    assert y.tolist() == [A.reshape(-1)[1], A.reshape(-1)[4]]
    with pytest.raises(TypeError, match="unexpected keyword argument 'shape'"):
        x.view(shape=(24,))


@pytest.mark.parametrize("shapes, expected", [
    ((2, (3, 1)), (3, 2)), (((2,), (3, 1), (1, 1, 1)), (1, 3, 2)), ((), ()), (((),), ()),
    (((1, 2), clgrad.Size([3, 1])), (3, 2)), (([3, 1], [1, 4]), (3, 4)), (((0,), (1,)), (0,)), ((5,), (5,)),
])
def test_broadcast_shapes(shapes, expected):
    torch = pytest.importorskip("torch")
    out = clgrad.broadcast_shapes(*shapes)
    assert isinstance(out, clgrad.Size) and out == expected
    assert tuple(torch.broadcast_shapes(*[tuple(s) if isinstance(s, tuple) else s for s in shapes])) == expected


@pytest.mark.parametrize("shapes, exc", [(((2,), (3,)), RuntimeError), (((-1,),), ValueError), ((2.0,), RuntimeError)])
def test_broadcast_shapes_errors(shapes, exc):
    torch = pytest.importorskip("torch")
    with pytest.raises(exc) as theirs:
        torch.broadcast_shapes(*shapes)
    with pytest.raises(exc) as ours:
        clgrad.broadcast_shapes(*shapes)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("shape, reps", [((2, 3), ()), ((2, 3), (2,)), ((2, 3), (2, 2, 2)), ((2, 3), (1, 1)),
                                         ((2, 3), (0,)), ((), ()), ((), (2, 3)), ((3,), [2])])
def test_tile_matches_torch(shape, reps):
    torch = pytest.importorskip("torch")
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    expected = torch.tile(torch.tensor(a), reps).numpy()
    assert_close(clgrad.tile(clgrad.tensor(a), reps), expected)
    assert_close(clgrad.tensor(a).tile(*reps) if reps else clgrad.tensor(a).tile(reps), expected)


ROUND_VALUES = [1.25, -12.5, 3.14159, 0.05, -0.15, 2.675, 15.0, -25.0, 35.0, 1234.5678, 0.0, -0.0049]


@pytest.mark.parametrize("decimals", [-2, -1, 0, 1, 2, 3])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_round_decimals_matches_torch(device, dtype, decimals):
    torch = pytest.importorskip("torch")
    from tests.conftest import fp64_ok

    if dtype == "float64" and not fp64_ok(device):
        pytest.skip("no cl_khr_fp64")
    ref = torch.round(torch.tensor(ROUND_VALUES, dtype=getattr(torch, dtype)), decimals=decimals).numpy()
    x = clgrad.tensor(ROUND_VALUES, dtype=getattr(clgrad, dtype), device=device)
    np.testing.assert_array_equal(clgrad.round(x, decimals=decimals).cpu().numpy(), ref)
    np.testing.assert_array_equal(x.round(decimals=decimals).cpu().numpy(), ref)
    out = clgrad.empty(len(ROUND_VALUES), dtype=x.dtype, device=device)
    assert clgrad.round(x, decimals=decimals, out=out) is out
    np.testing.assert_array_equal(out.cpu().numpy(), ref)
    assert x.round_(decimals=decimals) is x
    np.testing.assert_array_equal(x.cpu().numpy(), ref)


def test_round_decimals_gradient_and_errors(device):
    dt, kw = grad_precision(device)
    x = clgrad.tensor([0.123, -4.56, 7.0], dtype=getattr(clgrad, dt), device=device, requires_grad=True)
    y = x.round(decimals=1)
    assert y.grad_fn.name() == "RoundBackward1"
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]
    assert quiet_gradcheck(clgrad.autograd.gradcheck, lambda t: t.round(decimals=2), (x.detach().requires_grad_(),),
                           **kw)
    with pytest.raises(NotImplementedError, match="Long"):
        clgrad.tensor([15, 25], device=device).round(decimals=1)
    assert clgrad.tensor([15, 25], device=device).round().tolist() == [15, 25]
    with pytest.raises(TypeError):
        clgrad.round(x, 1)  # decimals is keyword-only, as in PyTorch


def test_python_round_is_not_defined_as_in_torch():
    """PyTorch 2.x defines no ``Tensor.__round__``: ``round(t)`` raises TypeError; clgrad matches."""
    torch = pytest.importorskip("torch")
    for lib in (torch, clgrad):
        with pytest.raises(TypeError, match="__round__"):
            round(lib.tensor(2.5))


def test_pow_exponent_keyword():
    x = clgrad.tensor([1.0, 2.0, 3.0])
    assert clgrad.pow(x, exponent=2).tolist() == [1.0, 4.0, 9.0]
    assert x.pow(exponent=3).tolist() == [1.0, 8.0, 27.0]
    assert clgrad.pow(2, x).tolist() == [2.0, 4.0, 8.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.clone().pow_(exponent=2).tolist() == [1.0, 4.0, 9.0]
