"""Convolution, pooling and interpolation against PyTorch (the oracle): forward values and shapes, gradients
(torch's backward in float32, gradcheck in float64), memory layouts, dtypes, PyTorch's error messages."""
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

TOL = {"float16": (1e-2, 1e-2), "float32": (1e-4, 1e-4), "float64": (1e-10, 1e-10)}

# (op, input shape, weight shape or None, keyword arguments): one line per case
CONV = [
    ("conv2d", (2, 3, 7, 6), (4, 3, 3, 3), {}),
    ("conv2d", (1, 3, 8, 7), (2, 3, 3, 2), {"stride": 2, "padding": 1}),
    ("conv2d", (2, 2, 9, 9), (3, 2, 3, 3), {"dilation": 2, "padding": (2, 1)}),
    ("conv2d", (2, 4, 5, 5), (6, 2, 3, 3), {"groups": 2, "stride": (1, 2)}),
    ("conv2d", (2, 3, 6, 6), (3, 1, 3, 3), {"groups": 3, "padding": 1}),  # depthwise
    ("conv2d", (2, 2, 6, 5), (2, 2, 4, 2), {"padding": "same"}),  # even kernel: the odd pad goes right
    ("conv2d", (1, 2, 7, 7), (3, 2, 3, 3), {"padding": "same", "dilation": 2}),
    ("conv2d", (2, 2, 5, 5), (2, 2, 2, 2), {"padding": "valid"}),
    ("conv2d", (2, 5, 4, 3), (3, 5, 1, 1), {}),  # 1x1: no im2col
    ("conv2d", (3, 1, 11, 13), (2, 1, 5, 3), {"stride": (3, 2), "padding": (2, 1), "dilation": (1, 2)}),
    ("conv2d", (3, 6, 6), (2, 3, 3, 3), {}),  # unbatched
    ("conv2d", (0, 3, 5, 5), (2, 3, 3, 3), {}),  # empty batch
    ("conv1d", (2, 3, 10), (4, 3, 3), {"stride": 2, "padding": 1, "dilation": 2}),
    ("conv1d", (1, 4, 9), (4, 2, 4), {"groups": 2, "padding": "same"}),
    ("conv1d", (3, 8), (2, 3, 3), {}),
    ("conv_transpose2d", (2, 3, 4, 5), (3, 2, 3, 3), {}),
    ("conv_transpose2d", (1, 2, 5, 4), (2, 3, 3, 2), {"stride": 2, "padding": 1, "output_padding": 1}),
    ("conv_transpose2d", (2, 4, 3, 3), (4, 1, 2, 3), {"groups": 2, "dilation": (2, 1), "stride": (1, 3)}),
    ("conv_transpose2d", (1, 2, 4, 4), (2, 2, 3, 3), {"dilation": 2, "output_padding": 1}),
    ("conv_transpose2d", (2, 5, 5), (2, 3, 2, 2), {"stride": 2}),  # unbatched
    ("conv_transpose1d", (2, 3, 6), (3, 2, 3), {"stride": 2, "output_padding": 1, "padding": 1}),
]

# (op, input shape, keyword arguments) for the ops without a weight
POOL = [
    ("max_pool2d", (2, 3, 8, 8), {"kernel_size": 2}),
    ("max_pool2d", (1, 2, 7, 9), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
    ("max_pool2d", (2, 1, 9, 7), {"kernel_size": (3, 2), "stride": (2, 3), "padding": 1, "dilation": (2, 1),
                                  "ceil_mode": True}),
    ("max_pool2d", (2, 2, 6, 6), {"kernel_size": 3, "stride": 1, "padding": 1}),  # overlapping windows
    ("max_pool2d", (1, 1, 5, 5), {"kernel_size": 2, "ceil_mode": True}),  # a last window half outside
    ("max_pool2d", (1, 1, 6, 6), {"kernel_size": 3, "stride": 3, "padding": 1, "ceil_mode": True}),  # dropped
    ("max_pool2d", (3, 5, 5), {"kernel_size": 2, "stride": 1}),  # unbatched
    ("max_pool1d", (2, 3, 9), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
    ("max_pool1d", (3, 10), {"kernel_size": 2, "dilation": 3}),
    ("avg_pool2d", (2, 3, 7, 8), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
    ("avg_pool2d", (2, 3, 7, 8), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True,
                                  "count_include_pad": False}),
    ("avg_pool2d", (1, 2, 6, 5), {"kernel_size": (2, 3), "divisor_override": 4}),
    ("avg_pool2d", (3, 4, 4), {"kernel_size": 2}),
    ("avg_pool1d", (2, 3, 9), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
    ("adaptive_avg_pool2d", (2, 3, 7, 9), {"output_size": (3, 4)}),
    ("adaptive_avg_pool2d", (2, 3, 7, 9), {"output_size": 1}),
    ("adaptive_avg_pool2d", (2, 3, 7, 9), {"output_size": (None, 5)}),
    ("adaptive_avg_pool2d", (1, 2, 3, 3), {"output_size": (5, 7)}),  # more outputs than inputs
    ("adaptive_avg_pool1d", (2, 3, 10), {"output_size": 4}),
    ("interpolate", (2, 3, 4, 5), {"scale_factor": 2}),
    ("interpolate", (1, 2, 4, 5), {"size": (5, 13)}),
    ("interpolate", (2, 2, 8, 5), {"scale_factor": (0.6, 2.3)}),
    ("interpolate", (2, 3, 4, 5), {"scale_factor": 1.7, "mode": "bilinear"}),
    ("interpolate", (1, 2, 4, 5), {"size": (4, 17), "mode": "bilinear", "align_corners": True}),
    ("interpolate", (2, 2, 9, 7), {"size": (3, 3), "mode": "bilinear"}),  # downsampling
    ("interpolate", (2, 2, 5, 6), {"scale_factor": 1.7, "mode": "bilinear", "recompute_scale_factor": True}),
    ("interpolate", (2, 3, 7), {"scale_factor": 2.5}),
    ("interpolate", (2, 3, 7), {"size": 11, "mode": "linear", "align_corners": True}),
    ("interpolate", (2, 3, 7, 9), {"size": (3, 4), "mode": "area"}),
]


def _fn(lib, op):
    return getattr(CF if lib == "clgrad" else F, op)


def _ids(case):
    return f"{case[0]}-{'x'.join(map(str, case[1]))}-" + ",".join(f"{k}={v}" for k, v in case[-1].items())


def _torch(arrays, grad=False):
    return [torch.tensor(a, requires_grad=grad) if a is not None else None for a in arrays]


def _compare(got, expected, dtype):
    rtol, atol = TOL[dtype]
    assert tuple(got.shape) == tuple(expected.shape)
    assert got.dtype.name == dtype
    np.testing.assert_allclose(got.detach().cpu().numpy().astype(np.float64),
                               expected.detach().numpy().astype(np.float64), rtol=rtol, atol=atol)


def _check(device, op, arrays, kwargs, layout="contiguous", dtype="float32", backward=True):
    """op on clgrad (``layout`` inputs of ``dtype``) against op on torch, forward and (float32/64) backward."""
    ours = [make(a.astype(dtype), device, layout) if a is not None else None for a in arrays]
    # float16 is compared with float32 PyTorch on the same (rounded) values
    ref_arrays = [a.astype(dtype).astype(np.float32 if dtype == "float16" else dtype) if a is not None else None
                  for a in arrays]
    theirs = _torch(ref_arrays, grad=backward)
    backward = backward and dtype != "float16"
    if backward:
        for t in ours:
            if t is not None:
                t.requires_grad_(True)
    out = _fn("clgrad", op)(*ours, **kwargs)
    ref = _fn("torch", op)(*theirs, **kwargs)
    _compare(out, ref, dtype)
    if backward and ref.numel():
        g = np.random.standard_normal(tuple(ref.shape)).astype(dtype)
        out.backward(clgrad.tensor(g, device=device))
        ref.backward(torch.tensor(g))
        for mine, their in zip(ours, theirs):
            if mine is not None:
                _compare(mine.grad, their.grad, dtype)


def _conv_arrays(op, xs, ws, kwargs):
    bias = None
    if op != "conv1d" or "groups" not in kwargs:  # most cases carry a bias
        channels = ws[1] * kwargs.get("groups", 1) if "transpose" in op else ws[0]
        bias = np.random.standard_normal(channels)
    return [np.random.standard_normal(xs), np.random.standard_normal(ws), bias]


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("case", CONV, ids=_ids)
def test_conv(device, case, layout):
    op, xs, ws, kwargs = case
    _check(device, op, _conv_arrays(op, xs, ws, kwargs), kwargs, layout)


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("case", POOL, ids=_ids)
def test_pool_interpolate(device, case, layout):
    op, xs, kwargs = case
    _check(device, op, [np.random.standard_normal(xs)], kwargs, layout)


@pytest.mark.parametrize("dtype", ["float16", "float64"])
@pytest.mark.parametrize("case", [CONV[1], CONV[3], CONV[16], CONV[12]] + [POOL[i] for i in (1, 8, 10, 16, 23, 27)],
                         ids=_ids)
def test_dtypes(device, case, dtype):
    if dtype == "float64" and not fp64_ok(device):
        pytest.skip("no cl_khr_fp64")
    if len(case) == 4:
        arrays = _conv_arrays(*case[:3], case[3])
    else:
        arrays = [np.random.standard_normal(case[1])]
    _check(device, case[0], arrays, case[-1], dtype=dtype)


def test_max_pool_nan_inf(device):
    """The first maximum wins; NaN beats everything (and a later NaN replaces an earlier one), as in PyTorch."""
    a = np.random.standard_normal((1, 2, 6, 6)).astype(np.float32)
    a[0, 0, 0, 1] = a[0, 0, 1, 0] = np.nan
    a[0, 0, 4:, 4:] = -np.inf
    a[0, 1, :2, :2] = 7.0  # ties
    x = clgrad.tensor(a, device=device)
    for kwargs in ({"kernel_size": 2}, {"kernel_size": 3, "stride": 1, "padding": 1}):
        out, idx = CF.max_pool2d(x, return_indices=True, **kwargs)
        ref, ref_idx = F.max_pool2d(torch.tensor(a), return_indices=True, **kwargs)
        np.testing.assert_array_equal(out.cpu().numpy(), ref.numpy())
        np.testing.assert_array_equal(idx.cpu().numpy(), ref_idx.numpy())
        assert idx.dtype is clgrad.int64


def test_mnist_shapes(device):
    """The MNIST CNN's convolution and pooling layers (batch 64), forward and backward."""
    x = np.random.standard_normal((64, 1, 28, 28)).astype(np.float32)
    params = [np.random.standard_normal(s).astype(np.float32) * 0.2 for s in ((10, 1, 5, 5), (10,), (20, 10, 5, 5),
                                                                            (20,))]

    def net(lib, x, w1, b1, w2, b2):
        f = _fn(lib, "max_pool2d")
        h = f(_fn(lib, "conv2d")(x, w1, b1), 2).relu()
        return f(_fn(lib, "conv2d")(h, w2, b2), 2).relu()

    ours = [clgrad.tensor(a, device=device, requires_grad=True) for a in [x] + params]
    theirs = _torch([x] + params, grad=True)
    out, ref = net("clgrad", *ours), net("torch", *theirs)
    _compare(out, ref, "float32")
    g = np.random.standard_normal(tuple(ref.shape)).astype(np.float32)
    out.backward(clgrad.tensor(g, device=device))
    ref.backward(torch.tensor(g))
    for mine, their in zip(ours, theirs):
        np.testing.assert_allclose(mine.grad.cpu().numpy(), their.grad.numpy(), rtol=1e-4, atol=1e-3)


# ---- gradcheck (float64 central differences) on tiny shapes -------------------------------------------
def _g(device, *shape):
    """float64, or float32 on a device without cl_khr_fp64 (checked with wider tolerances: grad_precision)."""
    dt = getattr(clgrad, grad_precision(device)[0])
    return clgrad.tensor(np.random.standard_normal(shape), dtype=dt, device=device, requires_grad=True)


GRADCHECK = {
    "conv2d": (lambda x, w, b: CF.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2), groups=2),
               [(2, 4, 4, 5), (2, 2, 3, 2), (2,)]),
    "conv1d": (lambda x, w: CF.conv1d(x, w, stride=2, padding="valid"), [(1, 2, 7), (3, 2, 3)]),
    "conv_transpose2d": (lambda x, w, b: CF.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
                         [(1, 2, 3, 2), (2, 2, 2, 3), (2,)]),
    "max_pool2d": (lambda x: CF.max_pool2d(x, 3, 2, 1, ceil_mode=True), [(1, 2, 5, 6)]),
    "avg_pool2d": (lambda x: CF.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), [(1, 2, 5, 6)]),
    "adaptive_avg_pool2d": (lambda x: CF.adaptive_avg_pool2d(x, (2, 4)), [(1, 2, 5, 3)]),
    "nearest": (lambda x: CF.interpolate(x, scale_factor=1.5), [(1, 2, 3, 4)]),
    "bilinear": (lambda x: CF.interpolate(x, size=(5, 3), mode="bilinear"), [(1, 2, 3, 4)]),
    "linear": (lambda x: CF.interpolate(x, size=7, mode="linear", align_corners=True), [(1, 2, 4)]),
    "unfold": (lambda x: CF.unfold(x, 2, padding=1, stride=2), [(1, 2, 3, 4)]),
    "fold": (lambda x: CF.fold(x, (3, 4), 2, padding=1, stride=2), [(1, 8, 6)]),
}


@pytest.mark.parametrize("name", list(GRADCHECK))
def test_gradcheck(device, name):
    fn, shapes = GRADCHECK[name]
    assert quiet_gradcheck(gradcheck, fn, [_g(device, *s) for s in shapes], **grad_precision(device)[1])


@pytest.mark.parametrize("name", ["conv2d", "conv_transpose2d", "max_pool2d", "avg_pool2d"])
def test_gradgradcheck(device, name):
    tiny = {"conv2d": (lambda x, w, b: CF.conv2d(x, w, b, padding=1, groups=2), [(1, 2, 3, 3), (2, 1, 2, 2), (2,)]),
            "conv_transpose2d": (lambda x, w: CF.conv_transpose2d(x, w, stride=2), [(1, 2, 2, 2), (2, 1, 2, 2)]),
            "max_pool2d": (lambda x: CF.max_pool2d(x, 2, 1), [(1, 1, 3, 4)]),
            "avg_pool2d": (lambda x: CF.avg_pool2d(x, 2, 1, 1), [(1, 1, 3, 3)])}
    fn, shapes = tiny[name]
    assert quiet_gradcheck(gradgradcheck, fn, [_g(device, *s) for s in shapes], **grad_precision(device)[1])


def test_node_names(device):
    x = clgrad.ones(1, 2, 4, 4, device=device, requires_grad=True)
    w = clgrad.ones(2, 2, 3, 3, device=device, requires_grad=True)
    names = {
        CF.conv2d(x, w): "ConvolutionBackward0",
        CF.conv_transpose2d(x, w): "ConvolutionBackward0",
        CF.conv1d(x[:, :, 0], w[:, :, 0]): "ConvolutionBackward0",
        CF.max_pool2d(x, 2): "MaxPool2DWithIndicesBackward0",
        CF.avg_pool2d(x, 2): "AvgPool2DBackward0",
        CF.adaptive_avg_pool2d(x, 2): "AdaptiveAvgPool2DBackward0",
        CF.interpolate(x, scale_factor=2): "UpsampleNearest2DBackward0",
        CF.interpolate(x, scale_factor=2, mode="bilinear"): "UpsampleBilinear2DBackward0",
        CF.interpolate(x[0], scale_factor=2, mode="linear"): "UpsampleLinear1DBackward0",
    }
    assert [t.grad_fn.name() for t in names] == list(names.values())
    _, idx = CF.max_pool2d(x, 2, return_indices=True)
    assert not idx.requires_grad


# ---- errors: PyTorch's exception type and message, word for word ------------------------------------
def _r(*shape, dtype="float32"):
    return np.random.standard_normal(shape).astype(dtype)


ERRORS = [
    ("conv2d", (_r(5, 5), _r(2, 3, 3, 3)), {}),
    ("conv2d", (_r(1, 4, 5, 5), _r(2, 3, 3, 3)), {}),
    ("conv2d", (_r(1, 4, 5, 5), _r(3, 2, 3, 3)), {"groups": 2}),
    ("conv2d", (_r(1, 5, 5, 5), _r(4, 2, 3, 3)), {"groups": 2}),
    ("conv2d", (_r(1, 3, 2, 2), _r(2, 3, 3, 3)), {}),
    ("conv2d", (_r(1, 3, 5, 5), _r(2, 3, 3, 3)), {"padding": -1}),
    ("conv2d", (_r(1, 3, 5, 5), _r(2, 3, 3, 3)), {"stride": 0}),
    ("conv2d", (_r(1, 3, 5, 5), _r(2, 3, 3, 3)), {"dilation": 0}),
    ("conv2d", (_r(1, 3, 5, 5), _r(2, 3, 3, 3)), {"groups": 0}),
    ("conv2d", (_r(1, 3, 5, 5), _r(2, 3, 3, 3)), {"stride": 2, "padding": "same"}),
    ("conv2d", (_r(1, 3, 5, 5), _r(2, 3, 3, 3)), {"padding": "foo"}),
    ("conv2d", (_r(1, 3, 5, 5), _r(2, 3, 3, 3), _r(3)), {}),
    ("conv2d", (_r(1, 3, 5, 5), _r(2, 3, 3)), {}),
    ("conv2d", (_r(1, 3, 5, 5), _r(2, 3, 3, 3)), {"padding": (1, 1, 1)}),
    ("conv2d", (_r(1, 3, 5, 5), _r(2, 3, 3, 3, dtype="float64")), {}),
    ("conv2d", (_r(1, 3, 5, 5, dtype="float64"), _r(2, 3, 3, 3)), {}),
    ("conv2d", (_r(1, 3, 5, 5), _r(2, 3, 3, 3), _r(2, dtype="float64")), {}),
    ("conv1d", (_r(1, 1, 3, 5), _r(2, 3, 3)), {}),
    ("conv1d", (_r(1, 3, 2), _r(2, 3, 3)), {}),
    ("conv_transpose2d", (_r(1, 4, 5, 5), _r(3, 2, 3, 3)), {}),
    ("conv_transpose2d", (_r(1, 3, 5, 5), _r(3, 2, 3, 3)), {"output_padding": 1}),
    ("conv_transpose2d", (_r(1, 3, 5, 5), _r(3, 2, 3, 3)), {"stride": 2, "output_padding": 2}),
    ("conv_transpose2d", (_r(1, 3, 5, 5), _r(3, 2, 3, 3)), {"groups": 2}),
    ("conv_transpose2d", (_r(1, 3, 1, 1), _r(3, 2, 3, 3)), {"padding": 3}),
    ("conv_transpose2d", (_r(1, 3, 5, 5), _r(3, 2, 3, 3), _r(3)), {}),
    ("conv_transpose2d", (_r(5, 5), _r(3, 2, 3, 3)), {}),
    ("max_pool2d", (_r(5, 5), 2), {}),
    ("max_pool2d", (_r(1, 2, 5, 5), 2), {"padding": 2}),
    ("max_pool2d", (_r(1, 2, 5, 5), 0), {}),
    ("max_pool2d", (_r(1, 2, 5, 5), 2), {"stride": 0}),
    ("max_pool2d", (_r(1, 2, 5, 5), 2), {"dilation": 0}),
    ("max_pool2d", (_r(1, 2, 5, 5), 2), {"padding": -1}),
    ("max_pool2d", (_r(1, 1, 1, 1), 3), {}),
    ("max_pool2d", (_r(1, 2, 5, 5), (2, 2, 2)), {}),
    ("max_pool2d", (_r(1, 0, 5, 5), 2), {}),
    ("max_pool2d", (_r(1, 1, 5, 5), (2, 4)), {"dilation": 3, "padding": (0, 2)}),
    ("max_pool1d", (_r(5), 2), {}),
    ("max_pool1d", (_r(1, 1, 1), 2), {}),
    ("max_pool1d", (_r(1, 1, 5), 2), {"padding": 2}),
    ("avg_pool2d", (_r(1, 2, 5, 5), 2), {"padding": 2}),
    ("avg_pool2d", (_r(1, 2, 5, 5), 0), {}),
    ("avg_pool2d", (_r(1, 1, 1, 1), 3), {}),
    ("avg_pool2d", (_r(5, 5), 2), {}),
    ("avg_pool2d", (_r(1, 2, 5, 5), 2), {"divisor_override": 0}),
    ("avg_pool1d", (_r(5), 2), {}),
    ("avg_pool1d", (_r(1, 1, 5), 2), {"padding": 2}),
    ("avg_pool1d", (_r(1, 1, 1), 2), {}),
    ("avg_pool1d", (_r(1, 1, 5), (2, 2)), {}),
    ("adaptive_avg_pool2d", (_r(5, 5), 2), {}),
    ("adaptive_avg_pool2d", (_r(1, 2, 5, 5), -1), {}),
    ("adaptive_avg_pool2d", (_r(1, 2, 0, 5), 2), {}),
    ("adaptive_avg_pool2d", (_r(1, 2, 5, 5), (2, 2, 2)), {}),
    ("adaptive_avg_pool2d", (_r(5, 5), (2, 2, 2)), {}),
    ("adaptive_avg_pool1d", (_r(5), 2), {}),
    ("interpolate", (_r(1, 2, 5, 5),), {"size": 3, "scale_factor": 2}),
    ("interpolate", (_r(1, 2, 5, 5),), {}),
    ("interpolate", (_r(1, 2, 5, 5),), {"scale_factor": 2, "align_corners": True}),
    ("interpolate", (_r(1, 2, 5),), {"scale_factor": 2, "mode": "bilinear"}),
    ("interpolate", (_r(1, 2, 5, 5),), {"scale_factor": 2, "mode": "linear"}),
    ("interpolate", (_r(1, 2, 5, 5),), {"scale_factor": 2, "mode": "foo"}),
    ("interpolate", (_r(1, 2, 5, 5),), {"size": (2, 3, 4)}),
    ("interpolate", (_r(1, 2, 5, 5),), {"scale_factor": (2, 3, 4)}),
    ("interpolate", (_r(5, 5),), {"scale_factor": 2}),
    ("interpolate", (_r(1, 2, 5, 5),), {"size": 0}),
    ("interpolate", (_r(1, 2, 5),), {"scale_factor": -1.0}),
    ("interpolate", (_r(1, 2, 5, 5),), {"size": 3, "recompute_scale_factor": True}),
    ("unfold", (_r(1, 2, 3, 3), 4), {}),
    ("fold", (_r(1, 8, 5), (3, 4), 2), {}),
]


@pytest.mark.parametrize("case", ERRORS, ids=lambda c: f"{c[0]}-{c[2]}")
def test_errors(device, case):
    op, args, kwargs = case
    if not fp64_ok(device):  # the dtype-mismatch cases pair float32 with float16 there: float64 can't be on the device
        args = tuple(a.astype(np.float16) if isinstance(a, np.ndarray) and a.dtype == np.float64 else a for a in args)
    with pytest.raises(Exception) as expected:
        _fn("torch", op)(*[torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args], **kwargs)
    with pytest.raises(type(expected.value)) as got:
        _fn("clgrad", op)(*[clgrad.tensor(a, device=device) if isinstance(a, np.ndarray) else a for a in args],
                          **kwargs)
    if str(expected.value).startswith(("Input type (torch.Half", "expected scalar type Half")):
        # PyTorch's CPU conv takes a float16 input down its oneDNN path or not by the CPU it runs on (the first
        # message on an Intel Xeon, the second on an AMD EPYC, both torch 2.13): either is PyTorch's
        assert str(got.value).startswith(("Input type (torch.Half", "expected scalar type Half")), str(got.value)
        return
    assert str(got.value) == str(expected.value)


def test_unsupported_dtype(device):
    x = clgrad.ones(1, 1, 4, 4, dtype=clgrad.int64, device=device)
    for call in (lambda: CF.conv2d(x, x), lambda: CF.max_pool2d(x, 2), lambda: CF.interpolate(x, scale_factor=2)):
        with pytest.raises(NotImplementedError, match=f"'Long'.*on device {device}"):
            call()


# ---- Oclgrind: each kernel of conv.cl.mako and pool.cl.mako once, tiny --------------------------------
ERROR_MARKERS = ("Invalid read", "Invalid write", "data race", "Uninitialized", "Oclgrind - ")


def _assert_simulator_clean(device, capfd) -> None:
    """After the device's work is done, the OpenCL runtime (Oclgrind) reported no memory error or data race."""
    if device != "cpu":
        clgrad.opencl.synchronize()
    err = capfd.readouterr().err
    found = [m for m in ERROR_MARKERS if m.lower() in err.lower()]
    assert not found, f"the OpenCL runtime reported {found}:\n{err[:4000]}"


@pytest.mark.oclgrind
def test_conv_kernels_oclgrind(device, capfd):
    """im2col, col2im, the pooling and interpolation kernels forward and backward, and max-pool's gather."""
    x = clgrad.tensor(np.random.standard_normal((2, 2, 5, 4)).astype(np.float32), device=device, requires_grad=True)
    w = clgrad.tensor(np.random.standard_normal((2, 2, 3, 2)).astype(np.float32), device=device, requires_grad=True)
    outs = [
        CF.conv2d(x, w, stride=(2, 1), padding=1, dilation=(1, 2)),  # im2col; backward: col2im, weight grad
        CF.max_pool2d(x, 3, 2, 1, ceil_mode=True),
        CF.max_pool2d(x, 2, 2, 1),  # disjoint windows: the backward scatters
        CF.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
        CF.adaptive_avg_pool2d(x, (3, 3)),
        CF.interpolate(x, size=(7, 3)),
        CF.interpolate(x, scale_factor=1.5, mode="bilinear"),
    ]
    total = sum((o * o).sum() for o in outs)
    (gx,) = clgrad.autograd.grad(total, x, create_graph=True)
    gx.sum().backward()  # second order: max-pool's gather, the adjoints of the linear ops
    ref_x = torch.tensor(x.detach().cpu().numpy(), requires_grad=True)
    ref_w = torch.tensor(w.detach().cpu().numpy())
    ref = [F.conv2d(ref_x, ref_w, stride=(2, 1), padding=1, dilation=(1, 2)), F.max_pool2d(ref_x, 3, 2, 1, ceil_mode=True),
           F.max_pool2d(ref_x, 2, 2, 1),
           F.avg_pool2d(ref_x, 3, 2, 1, ceil_mode=True, count_include_pad=False), F.adaptive_avg_pool2d(ref_x, (3, 3)),
           F.interpolate(ref_x, size=(7, 3)), F.interpolate(ref_x, scale_factor=1.5, mode="bilinear")]
    (ref_gx,) = torch.autograd.grad(sum((o * o).sum() for o in ref), ref_x)
    _compare(gx, ref_gx, "float32")
    # float16 storage: vload_half/vstore_half paths, and backward kernels writing a float32 temporary
    xh = x.detach().half().requires_grad_(True)
    wh = w.detach().half()
    half = (CF.conv2d(xh, wh, padding=1).sum() + CF.max_pool2d(xh, 2).sum() + CF.avg_pool2d(xh, 2).sum()
            + CF.adaptive_avg_pool2d(xh, 2).sum() + CF.interpolate(xh, scale_factor=2, mode="bilinear").sum())
    half.backward()
    xf = x.detach().requires_grad_(True)
    full = (CF.conv2d(xf, w.detach(), padding=1).sum() + CF.max_pool2d(xf, 2).sum() + CF.avg_pool2d(xf, 2).sum()
            + CF.adaptive_avg_pool2d(xf, 2).sum() + CF.interpolate(xf, scale_factor=2, mode="bilinear").sum())
    full.backward()
    np.testing.assert_allclose(xh.grad.float().cpu().numpy(), xf.grad.cpu().numpy(), rtol=1e-2, atol=2e-2)
    _assert_simulator_clean(device, capfd)


# ---- the folded products (conv_fold.py) and the per-image ones, on the same cases ---------------------------
@pytest.mark.parametrize("positions", [0, 1 << 30], ids=["per-image", "folded"])
@pytest.mark.parametrize("case", [c for c in CONV if c[3].get("groups", 1) == 1] + [
    ("conv2d", (3, 16, 1, 1), (8, 16, 3, 3), {"padding": 1}),  # ResNet-18's last layers: 1x1 positions
    ("conv2d", (2, 8, 4, 4), (6, 8, 3, 3), {"stride": 2, "padding": 1}),
    ("conv_transpose2d", (3, 8, 1, 1), (8, 4, 3, 3), {"padding": 1}),
], ids=_ids)
def test_conv_both_product_forms(device, case, positions, monkeypatch):
    """Each convolution (forward, input and weight gradients, bias) with the batch folded into one product's rows
    and with one product per image, against PyTorch: the threshold of output positions picks the form."""
    from clgrad.ops import conv_fold
    monkeypatch.setattr(conv_fold, "FOLD_POSITIONS", positions)
    op, xs, ws, kwargs = case
    _check(device, op, _conv_arrays(op, xs, ws, kwargs), kwargs, "transposed")


@pytest.mark.parametrize("case", [
    (lambda x, w, b: CF.conv2d(x, w, b, stride=2, padding=1), [(2, 3, 4, 3), (2, 3, 3, 3), (2,)]),
    (lambda x, w, b: CF.conv2d(x, w, b, padding=1), [(2, 3, 1, 1), (2, 3, 3, 3), (2,)]),
    (lambda x, w: CF.conv_transpose2d(x, w, stride=2, padding=1), [(1, 2, 2, 2), (2, 2, 3, 3)]),
    (lambda x, w: CF.conv1d(x, w, padding=1), [(2, 2, 3), (3, 2, 3)]),
], ids=["strided", "one-position", "transposed", "conv1d"])
def test_folded_gradcheck(device, case):
    """Folded convolutions (every case here has at most 32 output positions per image) pass gradcheck and
    gradgradcheck."""
    fn, shapes = case
    args = [_g(device, *s) for s in shapes]
    assert quiet_gradcheck(gradcheck, fn, args, **grad_precision(device)[1])
    assert quiet_gradcheck(gradgradcheck, fn, args, **grad_precision(device)[1])


# ---- im2col/col2im: the grid kernels (CPU devices) and the row kernels, on the same cases -------------------
GRID_CASES = [
    ("conv2d", (3, 2, 12, 11), (3, 2, 5, 5), {}),  # MNIST-like: unpadded, every tap inside
    ("conv2d", (2, 3, 9, 10), (4, 3, 3, 3), {"padding": 2}),  # padded: the masked loads
    ("conv2d", (2, 3, 16, 15), (2, 3, 7, 7), {"stride": 2, "padding": 3}),  # a ResNet stem: stride 2, 49 taps
    ("conv2d", (2, 2, 14, 13), (3, 2, 3, 3), {"dilation": (2, 3), "padding": (1, 2)}),
    ("conv2d", (2, 2, 9, 9), (2, 2, 9, 9), {"padding": 4}),  # 81 taps: past GRID_TAPS, the row kernels
    ("conv1d", (2, 3, 70), (2, 3, 5), {"padding": 1}),  # one row of 68 positions
    ("conv1d", (1, 1, 1100), (1, 1, 3), {}),  # 1098 positions: wider than a grid work-group
    ("conv_transpose2d", (2, 3, 7, 8), (3, 2, 3, 3), {"padding": 1}),  # stride 1: col2im on the grid
    ("conv_transpose2d", (2, 3, 7, 8), (3, 2, 3, 3), {"stride": 2}),  # col2im's row kernel
]


@pytest.mark.parametrize("folded", [False, True], ids=["per-image", "folded"])
@pytest.mark.parametrize("grid", [True, False], ids=["grid", "rows"])
@pytest.mark.parametrize("case", GRID_CASES, ids=_ids)
def test_im2col_kernels(device, case, grid, folded, monkeypatch):
    """Convolutions with one product per image over im2col's columns (col2im for the input gradient), or folded
    (the batch in one product: column matrices [taps, N*L] and, scattered by position, [N*L, taps]), with the grid
    kernels allowed and with the row kernels only, against PyTorch, in float32 and, for the bit-moving im2col and
    col2im's accumulators, float16 and float64."""
    from clgrad.backends.opencl import conv as clconv
    from clgrad.ops import conv_fold
    monkeypatch.setattr(clconv, "GRID_TAPS", clconv.GRID_TAPS if grid else 0)
    monkeypatch.setattr(conv_fold, "FOLD_POSITIONS", 1 << 30 if folded else 0)
    op, xs, ws, kwargs = case
    arrays = _conv_arrays(op, xs, ws, kwargs)
    _check(device, op, arrays, kwargs)
    _check(device, op, arrays, kwargs, dtype="float16", backward=False)
    if fp64_ok(device):
        _check(device, op, arrays, kwargs, dtype="float64")


@pytest.mark.oclgrind
def test_im2col_grid_kernels_oclgrind(device, capfd):
    """The grid kernels (padded and unpadded im2col, col2im; float32 and float16) under Oclgrind's memory checks:
    more than FOLD_POSITIONS positions, so one product per image."""
    cases = [((1, 2, 7, 6), (2, 2, 3, 3), {"padding": 1}), ((1, 2, 8, 9), (2, 2, 2, 3), {})]
    for xs, ws, kwargs in cases:
        for dtype in ("float32", "float16"):
            _check(device, "conv2d", _conv_arrays("conv2d", xs, ws, kwargs), kwargs, dtype=dtype,
                   backward=dtype == "float32")
    _check(device, "conv_transpose2d", _conv_arrays("conv_transpose2d", (1, 2, 7, 6), (2, 1, 3, 3), {}), {})
    _assert_simulator_clean(device, capfd)


@pytest.mark.parametrize("flip", [True, False], ids=["cols@gyT", "gy@colsT"])
@pytest.mark.parametrize("case", [("conv2d", (3, 6, 10, 9), (4, 6, 3, 3), {}),
                                  ("conv2d", (2, 2, 12, 12), (8, 2, 3, 3), {"padding": 1})], ids=_ids)
def test_weight_gradient_orientations(device, case, flip, monkeypatch):
    """The per-image weight gradient multiplied both ways round (dW^T = cols @ gy^T where taps outnumber the output
    channels FLIP_TAPS times, else gy @ cols^T), against PyTorch."""
    from clgrad.ops import conv
    monkeypatch.setattr(conv, "FLIP_TAPS", 1 if flip else 10**9)
    op, xs, ws, kwargs = case
    _check(device, op, _conv_arrays(op, xs, ws, kwargs), kwargs)
    if fp64_ok(device):
        _check(device, op, _conv_arrays(op, xs, ws, kwargs), kwargs, dtype="float64")
