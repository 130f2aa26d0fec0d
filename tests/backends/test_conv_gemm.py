"""The implicit-GEMM convolution kernels (backends/opencl/conv_gemm.py) on odd geometries: forward with bias, the
stride-1 transposed convolution (input gradient) as a flipped-weight convolution, the batch-summed weight gradient,
and the ReLU epilogue, each against the cpu backend (im2col + matmul in numpy) and, where installed, PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad import backends
from clgrad.backends.common import Window
from clgrad.backends.opencl import conv_gemm, matmul, runtime
from clgrad.ops import conv_fold
from tests.helpers import assert_close, make

# x shape, weight shape, stride, padding, dilation, groups: odd sizes, every window parameter, groups, 'same'
GEOMETRIES = [
    ((2, 3, 7, 9), (5, 3, 3, 3), 1, 1, 1, 1),
    ((1, 2, 6, 5), (3, 2, 1, 1), 1, 0, 1, 1),
    ((3, 4, 11, 10), (6, 4, 3, 2), 2, (1, 0), 1, 1),
    ((2, 6, 9, 8), (9, 2, 3, 3), 1, 2, 2, 3),
    ((2, 3, 5, 13), (7, 3, 4, 4), 1, "same", 1, 1),
    ((1, 5, 8, 8), (33, 5, 5, 5), 3, 2, (1, 2), 1),
]


@pytest.fixture
def fused(device, monkeypatch):
    """The device's implicit-GEMM capability, taken for every convolution (no size thresholds, no folded
    products), with a call count."""
    if device == "cpu":
        pytest.skip("the cpu backend has no implicit-GEMM kernels")
    monkeypatch.setattr(conv_gemm, "CPU_MIN_ROWS", 0)
    monkeypatch.setattr(conv_gemm, "CPU_MIN_TAPS", 0)
    monkeypatch.setattr(conv_fold, "FOLD_POSITIONS", 0)  # few output positions would take the folded products
    cap = backends.get(clgrad.device(device)).fused_conv
    calls = []
    for name in ("conv", "conv_weight"):
        original = getattr(cap, name)
        monkeypatch.setattr(cap, name, lambda *a, _f=original, _n=name, **k: (calls.append(_n), _f(*a, **k))[1])
    return calls


def _run(device, geometry, dtype, layout="contiguous"):
    xs, ws, stride, padding, dilation, groups = geometry
    rng = np.random.default_rng(sum(xs))
    # multiples of 1/4: products and sums are exact in float32 for these sizes, so any summation order agrees
    x, w, b = (rng.integers(-4, 5, s).astype(dtype) / 4 for s in (xs, ws, ws[:1]))
    results, gy = [], None
    for dev, lay in ((device, layout), ("cpu", "contiguous")):
        tx, tw, tb = (make(a, dev, lay).requires_grad_(True) for a in (x, w, b))
        y = F.conv2d(tx, tw, tb, stride, padding, dilation, groups)
        gy = rng.integers(-4, 5, tuple(y.shape)).astype(dtype) / 4 if gy is None else gy
        y.backward(clgrad.tensor(gy, device=dev))
        results.append([t.detach().cpu().numpy() for t in (y, tx.grad, tw.grad, tb.grad)])
    return results, (x, w, b)


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=lambda g: "x".join(map(str, g[0])) + f"-w{g[1][0]}")
def test_conv2d_forward_and_gradients(device, fused, geometry):
    (got, want), _ = _run(device, geometry, np.float32, "sliced")
    for g, w in zip(got, want):
        assert_close(clgrad.tensor(g), w)
    assert "conv" in fused
    if geometry[5] == 1:
        assert "conv_weight" in fused


def test_float64_and_transposed_layout(device, fused):
    if not clgrad.opencl.get_device_properties(device).fp64:
        pytest.skip("no cl_khr_fp64")
    (got, want), _ = _run(device, GEOMETRIES[0], np.float64, "transposed")
    for g, w in zip(got, want):
        assert_close(clgrad.tensor(g), w)


def test_float16_forward(device, fused):
    rng = np.random.default_rng(3)
    x, w, b = (rng.integers(-4, 5, s).astype(np.float16) / 4 for s in ((2, 3, 6, 7), (4, 3, 3, 3), (4,)))
    y = F.conv2d(*(clgrad.tensor(a, device=device) for a in (x, w, b)), padding=1)
    ref = F.conv2d(*(clgrad.tensor(a.astype(np.float32)) for a in (x, w, b)), padding=1)
    assert_close(y, ref.numpy().astype(np.float16))


def test_conv_transpose2d_stride1(device, fused):
    rng = np.random.default_rng(4)
    x, w, b = (rng.integers(-4, 5, s).astype(np.float32) / 4 for s in ((2, 4, 5, 6), (4, 3, 3, 2), (6,)))
    kw = dict(padding=(1, 0), output_padding=(0, 1), groups=2, dilation=(1, 2))
    got = F.conv_transpose2d(*(clgrad.tensor(a, device=device) for a in (x, w, b)), **kw)
    want = F.conv_transpose2d(*(clgrad.tensor(a) for a in (x, w, b)), **kw)
    assert_close(got, want.numpy())
    assert fused == ["conv"]


def test_relu_epilogue(device, fused):
    rng = np.random.default_rng(5)
    x, w, b = (rng.integers(-4, 5, s).astype(np.float32) / 4 for s in ((2, 3, 6, 7), (5, 3, 3, 3), (5,)))
    tx, tw, tb = (clgrad.tensor(a, device=device) for a in (x, w, b))
    out = clgrad.empty(2, 5, 6, 7, device=device)
    cap = backends.get(clgrad.device(device)).fused_conv
    cap.conv(out, tx, tw.reshape(1, 5, 27).contiguous(), tb, Window(3, 3, 1, 1, 1, 1, 1, 1, 6, 7), 1, relu=True)
    want = F.relu(F.conv2d(*(clgrad.tensor(a) for a in (x, w, b)), padding=1))
    assert_close(out, want.numpy())


def test_matches_torch(device, fused):
    torch = pytest.importorskip("torch")
    geometry = GEOMETRIES[3]
    (got, _), (x, w, b) = _run(device, geometry, np.float32)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    y = torch.nn.functional.conv2d(tx, tw, tb, *geometry[2:])
    np.testing.assert_allclose(got[0], y.detach().numpy(), rtol=1e-5, atol=1e-5)


def test_narrow_convs_keep_im2col_on_cpu_devices(device):
    """Below the thresholds a CPU device runs im2col + matmul (faster there for MNIST's few channels)."""
    if device == "cpu" or runtime.get(int(device.split(":")[1])).rank < 2:
        pytest.skip("thresholds apply to CPU OpenCL devices")
    x = clgrad.ones(2, 1, 8, 8, device=device)
    assert not backends.get(x.device).fused_conv.usable(x, 10, 25, 25)
    assert backends.get(x.device).fused_conv.usable(x, 64, 576, 576)


@pytest.mark.parametrize("form", ["gpu tiling", "64-bit indices"])
def test_other_kernel_forms(device, fused, monkeypatch, form):
    """The GPU tiling (scalar work-items, padded local rows) and 64-bit index math, on whatever device runs."""
    if form == "gpu tiling":
        monkeypatch.setattr(conv_gemm, "tiling", lambda dev, acc, short=False: matmul.TILINGS["gpu"][1])
    else:
        monkeypatch.setattr(conv_gemm, "INT32_MAX", 0)
    (got, want), _ = _run(device, GEOMETRIES[3], np.float32, "sliced")
    for g, w in zip(got, want):
        assert_close(clgrad.tensor(g), w)
