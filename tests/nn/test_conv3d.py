"""conv3d / conv_transpose3d and their modules against PyTorch: forward values, gradients (torch's backward,
gradcheck in float64), memory layouts, unbatched inputs, PyTorch's error messages."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as CF
from clgrad.autograd import gradcheck, gradgradcheck
from tests.conftest import fp64_ok
from tests.helpers import grad_precision, make, quiet_gradcheck

torch = pytest.importorskip("torch")
F = torch.nn.functional
pytestmark = pytest.mark.filterwarnings("ignore:Using padding=.same.:UserWarning")

# (op, input shape, weight shape, keyword arguments): one line per case
CASES = [
    ("conv3d", (2, 3, 4, 5, 6), (4, 3, 2, 3, 3), {}),
    ("conv3d", (1, 4, 5, 6, 7), (6, 2, 3, 2, 3), {"stride": (2, 1, 2), "padding": (1, 0, 1), "dilation": (2, 1, 1),
                                                  "groups": 2}),
    ("conv3d", (1, 2, 5, 4, 5), (3, 2, 2, 3, 2), {"padding": "same", "dilation": (2, 1, 1)}),  # asymmetric pads
    ("conv3d", (2, 2, 3, 4, 4), (2, 2, 1, 2, 2), {"padding": "valid"}),
    ("conv3d", (3, 3, 5, 4), (2, 3, 3, 3, 3), {"padding": 1, "stride": 2}),  # unbatched, odd sizes
    ("conv3d", (0, 2, 3, 3, 3), (2, 2, 2, 2, 2), {}),  # empty batch
    ("conv_transpose3d", (2, 3, 3, 4, 3), (3, 2, 2, 3, 2), {}),
    ("conv_transpose3d", (1, 4, 3, 3, 4), (4, 2, 3, 2, 3), {"stride": (2, 1, 2), "padding": (1, 0, 1),
                                                            "output_padding": (1, 0, 1), "groups": 2,
                                                            "dilation": (2, 1, 1)}),
    ("conv_transpose3d", (2, 3, 3, 4), (2, 3, 2, 2, 2), {"stride": 3, "output_padding": 2}),  # unbatched
    ("conv_transpose3d", (1, 2, 2, 3, 3), (2, 2, 2, 2, 2), {"dilation": 3, "output_padding": (2, 1, 0),
                                                            "padding": 1}),
    ("conv_transpose3d", (0, 2, 2, 2, 2), (2, 1, 2, 2, 2), {}),  # empty batch
]


OPENCL_CASES = {1, 2, 4, 7, 9}

def _on_device(device, i: int, subset) -> None:
    """Every case runs on cpu; an OpenCL device runs ``subset``: these ops are composed of primitives that their
    own tests check on every device, so a few cases per op there keep the suite fast."""
    if device != "cpu" and i not in subset:
        pytest.skip("cpu-only case (composed ops; a subset runs on each OpenCL device)")


def _ids(case):
    return f"{case[0]}-{'x'.join(map(str, case[1]))}-" + ",".join(f"{k}={v}" for k, v in case[-1].items())


def _arrays(op, xs, ws, kwargs):
    channels = ws[1] * kwargs.get("groups", 1) if "transpose" in op else ws[0]
    return [np.random.standard_normal(s) for s in (xs, ws, (channels,))]


def _dtype(device):
    return "float64" if fp64_ok(device) else "float32"


def _check(device, op, arrays, kwargs, layout="contiguous"):
    dt = _dtype(device)
    tol = 1e-10 if dt == "float64" else 1e-4
    ours = [make(a.astype(dt), device, layout).requires_grad_(True) for a in arrays]
    theirs = [torch.tensor(a.astype(dt), requires_grad=True) for a in arrays]
    out, ref = getattr(CF, op)(*ours, **kwargs), getattr(F, op)(*theirs, **kwargs)
    assert tuple(out.shape) == tuple(ref.shape) and out.dtype.name == dt
    np.testing.assert_allclose(out.detach().cpu().numpy(), ref.detach().numpy(), rtol=tol, atol=tol)
    if ref.numel():
        g = np.random.standard_normal(tuple(ref.shape)).astype(dt)
        out.backward(clgrad.tensor(g, device=device))
        ref.backward(torch.tensor(g))
        for mine, their in zip(ours, theirs):
            np.testing.assert_allclose(mine.grad.cpu().numpy(), their.grad.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("i", range(len(CASES)), ids=[_ids(c) for c in CASES])
def test_conv3d(device, i):
    _on_device(device, i, OPENCL_CASES)
    op, xs, ws, kwargs = CASES[i]
    _check(device, op, _arrays(op, xs, ws, kwargs), kwargs)


@pytest.mark.parametrize("layout", ["transposed", "sliced"])
def test_conv3d_layouts(device, layout):
    for op, xs, ws, kwargs in (CASES[1], CASES[7]):
        _check(device, op, _arrays(op, xs, ws, kwargs), kwargs, layout)


@pytest.mark.parametrize("op", ["conv3d", "conv_transpose3d"])
def test_gradcheck(device, op):
    dt, kw = grad_precision(device)
    opts = dict(dtype=getattr(clgrad, dt), device=device, requires_grad=True)
    x = clgrad.randn(1, 2, 3, 2, 1, **opts)
    if op == "conv3d":
        w, b = clgrad.randn(2, 1, 2, 2, 1, **opts), clgrad.randn(2, **opts)

        def fn(x, w, b):
            return CF.conv3d(x, w, b, stride=(2, 1, 1), padding=(1, 1, 0), groups=2)
    else:
        w, b = clgrad.randn(2, 1, 2, 1, 2, **opts), clgrad.randn(2, **opts)

        def fn(x, w, b):
            return CF.conv_transpose3d(x, w, b, stride=(2, 1, 1), padding=(1, 0, 0), output_padding=(1, 0, 0),
                                       groups=2)
    assert quiet_gradcheck(gradcheck, fn, (x, w, b), **kw)
    if device == "cpu":  # double backward composes the same ops: one device is enough
        assert quiet_gradcheck(gradgradcheck, lambda x, w: fn(x, w, None), (x, w))


ERRORS = [
    (lambda t: t.conv3d(t.zeros(2, 3, 3), t.zeros(1, 2, 1, 1, 1)), "Expected 4D (unbatched) or 5D (batched)"),
    (lambda t: t.conv3d(t.zeros(1, 2, 3, 3, 3), t.zeros(1, 3, 1, 1, 1)), "expected input[1, 2, 3, 3, 3] to have 3"),
    (lambda t: t.conv3d(t.zeros(1, 2, 2, 3, 3), t.zeros(1, 2, 3, 1, 1)), "Kernel size can't be greater"),
    (lambda t: t.conv3d(t.zeros(1, 2, 3, 3, 3), t.zeros(1, 2, 1, 1, 1), stride=(1, 2)),
     "expected stride to be a single integer value or a list of 3 values"),
    (lambda t: t.conv3d(t.zeros(1, 2, 3, 3, 3), t.zeros(1, 2, 1, 1, 1), padding="same", stride=2),
     "padding='same' is not supported for strided convolutions"),
    (lambda t: t.conv_transpose3d(t.zeros(1, 2, 3, 3, 3), t.zeros(2, 1, 1, 1, 1), output_padding=1),
     "output padding must be smaller than either stride or dilation"),
]


def _raised(fn, lib):
    try:
        fn(lib)
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return e
    raise AssertionError("no error raised")


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(i):
    fn, text = ERRORS[i]
    theirs, ours = _raised(fn, _TorchF), _raised(fn, _ClgradF)
    assert type(ours) is type(theirs)
    assert text in str(theirs)
    assert str(ours) == str(theirs)


class _TorchF:
    zeros = staticmethod(lambda *s: torch.zeros(*s, dtype=torch.float64))
    conv3d, conv_transpose3d = staticmethod(F.conv3d), staticmethod(F.conv_transpose3d)


class _ClgradF:
    zeros = staticmethod(lambda *s: clgrad.zeros(*s, dtype=clgrad.float64))
    conv3d, conv_transpose3d = staticmethod(CF.conv3d), staticmethod(CF.conv_transpose3d)


@pytest.mark.parametrize("cls", ["Conv3d", "ConvTranspose3d"])
def test_modules(device, cls):
    """The modules hold PyTorch's parameter layout (weights copied from torch give torch's output)."""
    dt = _dtype(device)
    kwargs = {"stride": 2, "padding": 1, "groups": 2, "bias": True}
    if cls == "ConvTranspose3d":
        kwargs["output_padding"] = 1
    theirs = getattr(torch.nn, cls)(4, 6, (3, 2, 3), **kwargs).to(getattr(torch, dt))
    ours = getattr(clgrad.nn, cls)(4, 6, (3, 2, 3), **kwargs).to(device, getattr(clgrad, dt))
    assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in theirs.state_dict().items()]
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x = np.random.standard_normal((2, 4, 5, 4, 5)).astype(dt)
    got, ref = ours(clgrad.tensor(x, device=device)), theirs(torch.tensor(x))
    np.testing.assert_allclose(got.detach().cpu().numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-5)
    assert repr(ours) == repr(theirs)


def test_conv3d_padding_modes():
    """Non-zero padding modes pad the input with F.pad, as PyTorch's Conv3d does."""
    theirs = torch.nn.Conv3d(2, 3, 3, padding=1, padding_mode="circular").double()
    ours = clgrad.nn.Conv3d(2, 3, 3, padding=1, padding_mode="circular").double()
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x = np.random.standard_normal((1, 2, 3, 4, 5))
    np.testing.assert_allclose(ours(clgrad.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy(),
                               rtol=1e-10, atol=1e-10)


def test_batchnorm3d(device):
    dt = _dtype(device)
    ours, theirs = clgrad.nn.BatchNorm3d(3).to(device, getattr(clgrad, dt)), torch.nn.BatchNorm3d(3).to(
        getattr(torch, dt))
    x = np.random.standard_normal((2, 3, 2, 3, 2)).astype(dt)
    got, ref = ours(clgrad.tensor(x, device=device)), theirs(torch.tensor(x))
    np.testing.assert_allclose(got.detach().cpu().numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours.running_var.cpu().numpy(), theirs.running_var.numpy(), rtol=1e-5)
    with pytest.raises(ValueError, match="expected 5D input"):
        ours(clgrad.zeros(2, 3, 4, device=device))
