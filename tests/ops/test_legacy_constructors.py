"""The legacy typed constructors (``clgrad.FloatTensor(...)`` & co.), ``Tensor(...)``, ``x.new(...)``,
``isinstance(x, clgrad.FloatTensor)`` and ``x.type(clgrad.DoubleTensor)``, against torch."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad

TYPES = ["FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ShortTensor", "CharTensor",
         "ByteTensor", "BoolTensor"]
DATA = [lambda L: [1, 0], lambda L: [[1.7, 2.0], [-0.0, 3.0]], lambda L: (1, 2), lambda L: np.array([1.5, 0.0]),
        lambda L: np.array([3, 1], dtype=np.int32), lambda L: [True, False], lambda L: []]


def _plain(t):
    return str(t.dtype).split(".")[1], tuple(t.shape), np.asarray(t.tolist()).tolist()


@pytest.mark.parametrize("name", TYPES)
@pytest.mark.parametrize("data", range(len(DATA)))
def test_typed_constructor_from_data(name, data):
    torch = pytest.importorskip("torch")
    expected = getattr(torch, name)(DATA[data](torch))
    got = getattr(clgrad, name)(DATA[data](clgrad))
    assert type(got) is clgrad.Tensor and got.device.type == "cpu" and not got.requires_grad
    assert _plain(got) == _plain(expected)


@pytest.mark.parametrize("name", TYPES + ["Tensor"])
@pytest.mark.parametrize("sizes", [(2, 3), (3,), (), (clgrad.Size([2, 1]),), (np.int64(2), 2), (0,)])
def test_typed_constructor_from_sizes(name, sizes):
    torch = pytest.importorskip("torch")
    tsizes = tuple(torch.Size(s) if isinstance(s, clgrad.Size) else s for s in sizes)
    expected = getattr(torch, name)(*tsizes)
    got = getattr(clgrad, name)(*sizes)
    assert got.shape == tuple(expected.shape) and got.dtype.name == str(expected.dtype).split(".")[1]
    assert got.is_contiguous()


@pytest.mark.parametrize("call", [
    lambda L: L.FloatTensor(3.5), lambda L: L.FloatTensor("a"), lambda L: L.FloatTensor(-1),
    lambda L: L.FloatTensor([[1], [2, 3]]), lambda L: L.FloatTensor(L.ones(2, dtype=L.float64)),
    lambda L: L.FloatTensor([1], dtype=L.float64),
])
def test_typed_constructor_errors_as_torch(call):
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception) as theirs:  # noqa: PT011 - the type is compared below
        call(torch)
    with pytest.raises(type(theirs.value)):
        call(clgrad)


def test_typed_constructor_of_a_tensor_is_that_tensor():
    x = clgrad.ones(2)
    assert clgrad.FloatTensor(x) is x
    y = clgrad.ones(2, dtype=clgrad.int64)
    assert clgrad.Tensor(y).dtype is clgrad.int64 and clgrad.Tensor(y)._storage is y._storage  # as torch.Tensor(t)
    with pytest.raises(RuntimeError, match="legacy constructor expects device type: cpu"):
        clgrad.FloatTensor(2, device="opencl")


@pytest.mark.parametrize("name", TYPES)
def test_isinstance_and_type_conversion(device, name):
    torch = pytest.importorskip("torch")
    legacy = getattr(clgrad, name)
    assert legacy.__name__ == name and legacy.dtype.tensor_type_name == name and not legacy.is_cuda
    assert repr(legacy) == f"<class 'clgrad.{name}'>"
    for dt in ("float32", "float64", "int64", "bool"):
        ours = clgrad.zeros(2, dtype=getattr(clgrad, dt))
        theirs = torch.zeros(2, dtype=getattr(torch, dt))
        assert isinstance(ours, legacy) == isinstance(theirs, getattr(torch, name))
    x = clgrad.tensor([1.0, 0.0], device=device)
    y = x.type(legacy)
    assert y.dtype is legacy.dtype and y.device.type == "cpu" and isinstance(y, legacy)
    assert y.type() == f"clgrad.{name}" and x.type(f"torch.{name}").dtype is legacy.dtype
    assert isinstance(x, clgrad.FloatTensor) == (x.device.type == "cpu")  # a device tensor is no cpu type
    assert isinstance(x, clgrad.Tensor) and not issubclass(legacy, clgrad.Tensor)


def test_new_uses_the_tensor_dtype_and_device(device):
    x = clgrad.zeros(2, dtype=clgrad.int32, device=device)
    assert x.new(2, 3).shape == (2, 3) and x.new(2, 3).dtype is clgrad.int32 and x.new(2, 3).device == x.device
    assert x.new([1.7, 2]).tolist() == [1, 2] and x.new().shape == (0,)
    assert x.new([1], dtype=clgrad.int16).dtype is clgrad.int16
