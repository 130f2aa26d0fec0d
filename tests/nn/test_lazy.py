"""Lazy modules and UninitializedParameter/UninitializedBuffer against PyTorch: inferred shapes, the class each
becomes, state_dict keys, initialization order, loading a checkpoint into a lazy module."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import clgrad
from clgrad import nn

torch = pytest.importorskip("torch")

# (class, constructor args, kwargs, input shape)
CASES = [
    ("LazyLinear", (4,), {}, (2, 3)),
    ("LazyLinear", (4,), {"bias": False}, (2, 5, 3)),
    ("LazyConv1d", (4, 3), {"stride": 2}, (2, 3, 8)),
    ("LazyConv2d", (6, 3), {"groups": 3, "padding": 1}, (6, 5, 5)),  # unbatched: channels from dim 0
    ("LazyConv3d", (2, (2, 1, 2)), {"bias": False}, (1, 3, 3, 4, 4)),
    ("LazyConvTranspose1d", (4, 3), {"groups": 2}, (2, 4, 5)),
    ("LazyConvTranspose2d", (2, 2), {"stride": 2}, (1, 3, 3, 3)),
    ("LazyConvTranspose3d", (2, 2), {"output_padding": 1, "stride": 2}, (1, 3, 2, 2, 2)),
    ("LazyBatchNorm1d", (), {}, (4, 3)),
    ("LazyBatchNorm2d", (), {"affine": False}, (2, 3, 2, 2)),
    ("LazyBatchNorm3d", (), {"track_running_stats": False}, (2, 3, 2, 2, 2)),
    ("LazyInstanceNorm1d", (), {}, (2, 3, 5)),
    ("LazyInstanceNorm2d", (), {"affine": False}, (2, 3, 4, 4)),
    ("LazyInstanceNorm3d", (), {}, (2, 3, 2, 3, 2)),
]


OPENCL_CASES = {0, 4, 7, 10}

def _on_device(device, i: int, subset) -> None:
    """Every case runs on cpu; an OpenCL device runs ``subset``: these ops are composed of primitives that their
    own tests check on every device, so a few cases per op there keep the suite fast."""
    if device != "cpu" and i not in subset:
        pytest.skip("cpu-only case (composed ops; a subset runs on each OpenCL device)")


def _ids(case):
    return f"{case[0]}-{'x'.join(map(str, case[3]))}"


def _shapes(module) -> list:
    return [(k, tuple(v.shape)) for k, v in module.state_dict().items()]


@pytest.mark.parametrize("i", range(len(CASES)), ids=[_ids(c) for c in CASES])
def test_infers_like_torch(device, i):
    _on_device(device, i, OPENCL_CASES)
    name, args, kwargs, shape = CASES[i]
    ours, theirs = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert ours.has_uninitialized_params() == theirs.has_uninitialized_params()
    ours.to(device)
    x = np.random.standard_normal(shape).astype(np.float32)
    theirs(torch.tensor(x))
    out = ours(clgrad.tensor(x, device=device))
    assert type(ours).__name__ == type(theirs).__name__ == name[4:]  # LazyLinear becomes Linear
    assert _shapes(ours) == _shapes(theirs)
    assert all(p.device == out.device for p in ours.parameters())
    assert all(type(p) is nn.Parameter and p.requires_grad for p in ours.parameters())
    # with torch's weights, torch's output
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    ours.train(theirs.training)
    np.testing.assert_allclose(ours(clgrad.tensor(x, device=device)).detach().cpu().numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-5)


def test_initialization():
    """Parameters are initialized (not left empty) the way the eager module initializes them."""
    clgrad.manual_seed(0)
    lazy = nn.LazyLinear(50)
    lazy(clgrad.zeros(1, 20))
    bound = 1 / np.sqrt(20)
    w = lazy.weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > bound / 2
    norm = nn.LazyBatchNorm2d()
    norm(clgrad.randn(2, 3, 2, 2))
    np.testing.assert_array_equal(norm.weight.detach().numpy(), np.ones(3, np.float32))
    assert int(norm.num_batches_tracked.item()) == 1


def test_uninitialized_parameter():
    p = nn.UninitializedParameter()
    assert repr(p) == "<UninitializedParameter>" and p.requires_grad
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized parameter"):
        p.shape  # noqa: B018
    p.materialize((2, 3), dtype=clgrad.float64)
    assert type(p) is nn.Parameter and p.shape == (2, 3) and p.dtype is clgrad.float64
    b = nn.UninitializedBuffer()
    assert repr(b) == "<UninitializedBuffer>" and not b.requires_grad
    b.materialize((4,))
    assert type(b) is clgrad.Tensor and b.shape == (4,)
    assert isinstance(copy.deepcopy(nn.UninitializedParameter()), nn.UninitializedParameter)


def test_uninitialized_repr_and_errors():
    m = nn.LazyLinear(3)
    t = torch.nn.LazyLinear(3)
    assert repr(m) == repr(t)
    assert repr(m.weight) == repr(t.weight)
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.LazyConv2d(4, 3, groups=2)(clgrad.zeros(1, 3, 5, 5))


def test_load_state_dict_materializes():
    """Loading a checkpoint into a lazy module gives its placeholders the checkpoint's shapes (then the first
    forward only changes the class), as in PyTorch."""
    src = nn.Conv2d(3, 4, 3)
    lazy = nn.LazyConv2d(4, 3)
    lazy.load_state_dict(src.state_dict())
    assert not lazy.has_uninitialized_params() and lazy.weight.shape == (4, 3, 3, 3)
    x = clgrad.randn(1, 3, 5, 5)
    np.testing.assert_allclose(lazy(x).detach().numpy(), src(x).detach().numpy(), rtol=1e-6)
    assert type(lazy) is nn.Conv2d


def test_optimizer_after_first_forward():
    m = nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.LazyLinear(1))
    m(clgrad.zeros(2, 3))
    opt = clgrad.optim.SGD(m.parameters(), lr=0.1)
    m(clgrad.randn(5, 3)).sum().backward()
    opt.step()
    assert m[0].weight.grad.shape == (4, 3) and m[2].weight.shape == (1, 4)
