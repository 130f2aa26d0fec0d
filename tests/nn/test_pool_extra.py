"""3-D, adaptive max, fractional and power-average pooling, max unpooling and their modules against PyTorch:
values, indices, gradients (torch's backward, gradcheck), layouts, unbatched inputs, PyTorch's error messages."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as CF
from clgrad.autograd import gradcheck
from tests.conftest import fp64_ok
from tests.helpers import grad_precision, make, quiet_gradcheck

torch = pytest.importorskip("torch")
F = torch.nn.functional

# (op, input shape, positional args, keyword arguments): one line per case
CASES = [
    ("max_pool3d", (2, 2, 4, 5, 6), (2,), {"return_indices": True}),
    ("max_pool3d", (1, 2, 5, 6, 7), ((2, 3, 2),), {"stride": (1, 2, 2), "padding": (1, 1, 0), "dilation": (2, 1, 1),
                                                   "ceil_mode": True, "return_indices": True}),
    ("max_pool3d", (2, 5, 4, 6), (3,), {"stride": 2, "padding": 1, "return_indices": True}),  # unbatched
    ("max_pool3d_with_indices", (1, 1, 4, 4, 4), (2,), {"stride": 1}),
    ("max_pool2d_with_indices", (2, 7, 6), (3,), {"stride": 2, "ceil_mode": True}),
    ("max_pool1d_with_indices", (2, 3, 9), (3,), {"padding": 1}),
    ("avg_pool3d", (2, 2, 5, 6, 7), ((2, 3, 2),), {"stride": (1, 2, 2), "padding": (1, 1, 0), "ceil_mode": True}),
    ("avg_pool3d", (1, 2, 5, 6, 7), (3,), {"stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False}),
    ("avg_pool3d", (2, 5, 4, 6), (3,), {"stride": 2, "padding": 1, "divisor_override": 5}),  # unbatched
    ("adaptive_max_pool1d", (2, 3, 7), (3,), {"return_indices": True}),
    ("adaptive_max_pool2d", (2, 3, 7, 5), ((3, None),), {"return_indices": True}),
    ("adaptive_max_pool2d", (3, 4, 5), (7,), {}),  # unbatched, more outputs than inputs
    ("adaptive_max_pool3d", (1, 3, 7, 5, 9), ((3, 4, 5),), {"return_indices": True}),
    ("adaptive_max_pool3d_with_indices", (2, 4, 5, 3), (2,), {}),
    ("lp_pool1d", (2, 3, 7), (2.0, 3), {"stride": 2}),
    ("lp_pool2d", (2, 3, 6, 7), (3.0, (3, 2)), {"ceil_mode": True}),
    ("lp_pool3d", (1, 2, 5, 6, 7), (2.0, (2, 3, 2)), {"stride": (1, 2, 2)}),
    ("max_pool3d", (0, 2, 3, 4, 4), (2,), {"return_indices": True}),  # empty batch
    ("avg_pool3d", (0, 2, 3, 4, 4), (2,), {}),
    ("adaptive_max_pool3d", (0, 2, 3, 4, 4), (2,), {"return_indices": True}),
]


OPENCL_CASES = {0, 1, 6, 7, 10, 12, 15}
OPENCL_MODULES = {0, 4}

def _on_device(device, i: int, subset) -> None:
    """Every case runs on cpu; an OpenCL device runs ``subset``: these ops are composed of primitives that their
    own tests check on every device, so a few cases per op there keep the suite fast."""
    if device != "cpu" and i not in subset:
        pytest.skip("cpu-only case (composed ops; a subset runs on each OpenCL device)")


def _ids(case):
    return f"{case[0]}-{'x'.join(map(str, case[1]))}-{case[2]}-" + ",".join(f"{k}={v}" for k, v in case[3].items())


def _dtype(device):
    return "float64" if fp64_ok(device) else "float32"


def _outputs(out):
    return out if isinstance(out, tuple) else (out,)


def _compare(ours, theirs, tol):
    for mine, ref in zip(_outputs(ours), _outputs(theirs)):
        assert tuple(mine.shape) == tuple(ref.shape)
        if ref.dtype == torch.int64:
            assert mine.dtype is clgrad.int64
            np.testing.assert_array_equal(mine.cpu().numpy(), ref.numpy())
        else:
            np.testing.assert_allclose(mine.detach().cpu().numpy(), ref.detach().numpy(), rtol=tol, atol=tol)


def _check(device, op, x, args, kwargs, layout="contiguous", extra=()):
    """op on clgrad and on torch: outputs (indices exactly), then the gradient of the first output."""
    dt = _dtype(device)
    tol = 1e-10 if dt == "float64" else 1e-5
    ours = make(x.astype(dt), device, layout).requires_grad_(True)
    theirs = torch.tensor(x.astype(dt), requires_grad=True)
    got = getattr(CF, op)(ours, *[make(e, device) for e in extra], *args, **kwargs)
    ref = getattr(F, op)(theirs, *[torch.tensor(e) for e in extra], *args, **kwargs)
    _compare(got, ref, tol)
    g = np.random.standard_normal(tuple(_outputs(ref)[0].shape)).astype(dt)
    _outputs(got)[0].backward(clgrad.tensor(g, device=device))
    _outputs(ref)[0].backward(torch.tensor(g))
    np.testing.assert_allclose(ours.grad.cpu().numpy(), theirs.grad.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("i", range(len(CASES)), ids=[_ids(c) for c in CASES])
def test_pool(device, i):
    _on_device(device, i, OPENCL_CASES)
    op, shape, args, kwargs = CASES[i]
    x = np.random.standard_normal(shape)
    _check(device, op, np.abs(x) + 0.1 if op.startswith("lp") else x, args, kwargs)


@pytest.mark.parametrize("layout", ["transposed", "sliced"])
def test_layouts(device, layout):
    for op, shape, args, kwargs in (CASES[1], CASES[7]):
        _check(device, op, np.random.standard_normal(shape), args, kwargs, layout)


@pytest.mark.parametrize("dims", [2, 3])
def test_fractional(device, dims):
    """Given the same _random_samples, PyTorch's windows (in float32 too), values, indices and gradients."""
    dt = _dtype(device)
    shape = (2, 3, 9, 11) if dims == 2 else (2, 2, 7, 9, 8)
    samples = np.random.rand(2, shape[1], dims).astype(dt)
    kernel = (2, 3) if dims == 2 else (2, 3, 2)
    op = f"fractional_max_pool{dims}d"
    for kwargs in ({"output_size": (4,) * dims}, {"output_ratio": (0.5,) * dims}):
        kwargs = dict(kwargs, return_indices=True)
        x = np.random.standard_normal(shape).astype(dt)
        ours = clgrad.tensor(x, device=device, requires_grad=True)
        theirs = torch.tensor(x, requires_grad=True)
        got = getattr(CF, op)(ours, kernel, _random_samples=clgrad.tensor(samples, device=device), **kwargs)
        ref = getattr(F, op)(theirs, kernel, _random_samples=torch.tensor(samples), **kwargs)
        _compare(got, ref, 1e-6)
        got[0].sum().backward()
        ref[0].sum().backward()
        np.testing.assert_array_equal(ours.grad.cpu().numpy(), theirs.grad.numpy())


def test_fractional_random(device):
    """Without _random_samples the windows are random, but every output is the max of a kernel-sized window."""
    x = clgrad.randn(2, 3, 10, 10, device=device)
    out, idx = CF.fractional_max_pool2d(x, 3, output_size=4, return_indices=True)
    assert out.shape == (2, 3, 4, 4)
    np.testing.assert_array_equal(np.take_along_axis(x.cpu().numpy().reshape(2, 3, -1),
                                                     idx.cpu().numpy().reshape(2, 3, -1), 2).reshape(2, 3, 4, 4),
                                  out.cpu().numpy())


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_max_unpool(device, dims):
    dt = _dtype(device)
    shape = {1: (2, 3, 8), 2: (2, 7, 6), 3: (1, 2, 4, 6, 6)}[dims]
    x = np.random.standard_normal(shape)
    pooled, idx = getattr(F, f"max_pool{dims}d")(torch.tensor(x), 2, stride=2, return_indices=True)
    size = {1: None, 2: (7, 7), 3: (4, 6, 7)}[dims]
    _check(device, f"max_unpool{dims}d", pooled.numpy(), (2,), {"output_size": size}, extra=(idx.numpy(),))
    roundtrip = getattr(CF, f"max_unpool{dims}d")(clgrad.tensor(pooled.numpy().astype(dt), device=device),
                                                  clgrad.tensor(idx.numpy(), device=device), 2)
    assert roundtrip.shape == getattr(F, f"max_unpool{dims}d")(pooled, idx, 2).shape


def test_max_pool2d_with_indices_backward(device):
    dt = _dtype(device)
    x = np.random.standard_normal((2, 3, 6, 5)).astype(dt)
    out, idx = F.max_pool2d(torch.tensor(x), 3, stride=1, padding=1, return_indices=True)
    g = np.random.standard_normal(tuple(out.shape)).astype(dt)
    ref = torch.ops.aten.max_pool2d_with_indices_backward(torch.tensor(g), torch.tensor(x), [3, 3], [1, 1], [1, 1],
                                                          [1, 1], False, idx)
    got = clgrad.max_pool2d_with_indices_backward(clgrad.tensor(g, device=device), clgrad.tensor(x, device=device),
                                                  [3, 3], [1, 1], [1, 1], [1, 1], False,
                                                  clgrad.tensor(idx.numpy(), device=device))
    np.testing.assert_allclose(got.cpu().numpy(), ref.numpy(), rtol=1e-6, atol=1e-6)


GRADCHECK = [
    ("max_pool3d", (1, 1, 3, 3, 2), lambda x: CF.max_pool3d(x, 2, stride=1, padding=1)),
    ("avg_pool3d", (1, 1, 3, 3, 2), lambda x: CF.avg_pool3d(x, 2, padding=1, ceil_mode=True, count_include_pad=False)),
    ("adaptive_max_pool2d", (1, 1, 5, 4), lambda x: CF.adaptive_max_pool2d(x, 3)),
    ("lp_pool2d", (1, 1, 4, 4), lambda x: CF.lp_pool2d(x.abs() + 0.5, 2.0, 2)),
    ("fractional_max_pool2d", (1, 1, 5, 5),
     lambda x: CF.fractional_max_pool2d(x, 2, output_size=3,
                                        _random_samples=clgrad.full((1, 1, 2), 0.4, dtype=x.dtype, device=x.device))),
]


@pytest.mark.parametrize("i", range(len(GRADCHECK)), ids=[c[0] for c in GRADCHECK])
def test_gradcheck(device, i):
    _on_device(device, i, {0, 4})
    case = GRADCHECK[i]
    dt, kw = grad_precision(device)
    # distinct values well apart: a finite-difference step never changes which element is the max
    x = np.random.permutation(np.prod(case[1])).reshape(case[1]) * 0.1
    assert quiet_gradcheck(gradcheck, case[2], (clgrad.tensor(x, dtype=getattr(clgrad, dt), device=device,
                                                              requires_grad=True),), **kw)


ERRORS = [
    lambda t: t.F.max_pool3d(t.zeros(2, 3, 3), 2),
    lambda t: t.F.max_pool3d(t.zeros(1, 1, 3, 3, 3), (2, 2)),
    lambda t: t.F.max_pool3d(t.zeros(1, 1, 3, 3, 3), 2, padding=2),
    lambda t: t.F.max_pool3d(t.zeros(1, 1, 1, 3, 3), 2),
    lambda t: t.F.avg_pool3d(t.zeros(1, 1, 3, 3, 3), 2, divisor_override=0),
    lambda t: t.F.avg_pool3d(t.zeros(1, 1, 3, 3, 3), (2, 2, 2, 2)),
    lambda t: t.F.adaptive_max_pool2d(t.zeros(2, 3), 2),
    lambda t: t.F.adaptive_max_pool2d(t.zeros(1, 2, 0, 3), 2),
    lambda t: t.F.adaptive_max_pool3d(t.zeros(1, 2, 3, 3), (2, None, 2, 1)),
    lambda t: t.F.adaptive_max_pool1d(t.zeros(1, 2, 3), (2, 2)),
    lambda t: t.F.fractional_max_pool2d(t.zeros(1, 2, 5, 5), 3, output_size=4),
    lambda t: t.F.fractional_max_pool2d(t.zeros(1, 2, 5, 5), 3),
    lambda t: t.F.fractional_max_pool3d(t.zeros(1, 2, 5, 5, 5), 3, output_size=4),
    lambda t: t.F.max_unpool2d(t.zeros(1, 1, 2, 2), t.long(t.zeros(1, 1, 2, 2) + 16), 2),
    lambda t: t.F.max_unpool2d(t.zeros(1, 1, 2, 2), t.zeros(1, 1, 2, 2), 2),
    lambda t: t.F.max_unpool2d(t.zeros(1, 1, 2, 2), t.long(t.zeros(1, 1, 2, 2)), 2, output_size=(9, 9)),
    lambda t: t.F.max_unpool2d(t.zeros(2, 2), t.long(t.zeros(2, 2)), 2),
    lambda t: t.F.max_unpool3d(t.zeros(1, 1, 2, 2, 2), t.long(t.zeros(1, 1, 2, 2, 2) + 64), 2),
    lambda t: t.nn.FractionalMaxPool2d(2),
    lambda t: t.nn.FractionalMaxPool2d(2, output_size=2, output_ratio=0.5),
    lambda t: t.nn.FractionalMaxPool3d(2, output_ratio=1.5),
]


class _Lib:
    def __init__(self, lib):
        self.F, self.nn = lib.nn.functional, lib.nn
        self.zeros = lambda *s: lib.zeros(*s, dtype=lib.float64)
        self.long = lambda t: t.long()


def _raised(fn, lib):
    try:
        fn(_Lib(lib))
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return e
    raise AssertionError("no error raised")


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(i):
    theirs, ours = _raised(ERRORS[i], torch), _raised(ERRORS[i], clgrad)
    assert type(ours) is type(theirs)
    assert str(ours) == str(theirs)


MODULES = [
    ("MaxPool3d", (2,), {"stride": 1, "return_indices": True}, (1, 2, 3, 4, 5)),
    ("AvgPool3d", (3,), {"stride": 2, "padding": 1, "ceil_mode": True}, (2, 4, 5, 3)),
    ("AdaptiveMaxPool1d", (3,), {"return_indices": True}, (2, 3, 7)),
    ("AdaptiveMaxPool2d", ((2, None),), {}, (2, 3, 7, 5)),
    ("AdaptiveMaxPool3d", (2,), {"return_indices": True}, (2, 3, 4, 5)),
    ("AdaptiveAvgPool3d", ((2, 3, 1),), {}, (1, 2, 3, 5, 4)),
    ("LPPool1d", (2, 3), {}, (2, 3, 7)),
    ("LPPool2d", (1.5, 2), {"stride": 1}, (1, 2, 4, 5)),
    ("LPPool3d", (2, 2), {"ceil_mode": True}, (1, 2, 3, 5, 4)),
]


@pytest.mark.parametrize("i", range(len(MODULES)), ids=[c[0] for c in MODULES])
def test_modules(device, i):
    _on_device(device, i, OPENCL_MODULES)
    name, args, kwargs, shape = MODULES[i]
    dt = _dtype(device)
    x = np.abs(np.random.standard_normal(shape)).astype(dt) + 0.1
    ours, theirs = getattr(clgrad.nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    _compare(ours(clgrad.tensor(x, device=device)), theirs(torch.tensor(x)), 1e-5)
    assert repr(ours) == repr(theirs)


def test_unpool_and_fractional_modules(device):
    dt = _dtype(device)
    x = np.random.standard_normal((1, 2, 6, 8)).astype(dt)
    samples = np.random.rand(1, 2, 2).astype(dt)
    ours = clgrad.nn.FractionalMaxPool2d(2, output_ratio=(0.5, 0.5), return_indices=True,
                                         _random_samples=clgrad.tensor(samples, device=device))
    theirs = torch.nn.FractionalMaxPool2d(2, output_ratio=(0.5, 0.5), return_indices=True,
                                          _random_samples=torch.tensor(samples))
    got, ref = ours(clgrad.tensor(x, device=device)), theirs(torch.tensor(x))
    _compare(got, ref, 1e-6)
    unpooled = clgrad.nn.MaxUnpool2d(2)(got[0], got[1], output_size=(6, 8))
    _compare(unpooled, torch.nn.MaxUnpool2d(2)(ref[0], ref[1], output_size=(6, 8)), 1e-6)
    assert repr(clgrad.nn.MaxUnpool3d(2, 1)) == repr(torch.nn.MaxUnpool3d(2, 1))
