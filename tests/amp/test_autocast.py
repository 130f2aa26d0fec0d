"""clgrad.autocast against torch.autocast: which ops change dtype on cpu (PyTorch's CPU lists, checked against
torch) and on OpenCL (PyTorch's CUDA lists), nesting, the cast cache, backward, and the device-type rules."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import clgrad

torch = pytest.importorskip("torch")

OPS = {
    "matmul": lambda m, F, h, t: h @ h,
    "mm": lambda m, F, h, t: m.mm(h, h),
    "bmm": lambda m, F, h, t: m.bmm(h[None], h[None]),
    "addmm": lambda m, F, h, t: m.addmm(h, h, h),
    "baddbmm": lambda m, F, h, t: m.baddbmm(h[None], h[None], h[None]),
    "addbmm": lambda m, F, h, t: m.addbmm(h, h[None], h[None]),
    "addmv": lambda m, F, h, t: m.addmv(h[0], h, h[0]),
    "addr": lambda m, F, h, t: m.addr(h, h[0], h[0]),
    "linear": lambda m, F, h, t: F.linear(h, h, h[0]),
    "conv1d": lambda m, F, h, t: F.conv1d(h[None], h[:, :, None]),
    "conv2d": lambda m, F, h, t: F.conv2d(h[None, None], h[None, None, :2, :2]),
    "softmax": lambda m, F, h, t: m.softmax(h, 0),
    "log_softmax": lambda m, F, h, t: F.log_softmax(h, 0),
    "layer_norm": lambda m, F, h, t: F.layer_norm(h, (4,)),
    "group_norm": lambda m, F, h, t: F.group_norm(h.reshape(1, 4, 4), 2),
    "nll_loss": lambda m, F, h, t: F.nll_loss(h, t),
    "cross_entropy": lambda m, F, h, t: F.cross_entropy(h, t),
    "mse_loss": lambda m, F, h, t: F.mse_loss(h, h),
    "l1_loss": lambda m, F, h, t: F.l1_loss(h, h),
    "bce_with_logits": lambda m, F, h, t: F.binary_cross_entropy_with_logits(h, h.sigmoid()),
    "smooth_l1_loss": lambda m, F, h, t: F.smooth_l1_loss(h, h),
    "huber_loss": lambda m, F, h, t: F.huber_loss(h, h),
    "kl_div": lambda m, F, h, t: F.kl_div(h, h, reduction="batchmean"),
    "add": lambda m, F, h, t: h + h,
}
# PyTorch's CUDA autocast lists, which clgrad's "opencl" regions follow (no CUDA to compare with here)
GPU_FLOAT16 = {"matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "addmv", "addr", "linear", "conv1d", "conv2d"}
GPU_FLOAT32 = {"softmax", "log_softmax", "layer_norm", "group_norm", "nll_loss", "cross_entropy", "mse_loss",
               "l1_loss", "bce_with_logits", "smooth_l1_loss", "huber_loss", "kl_div"}


def _run(m, name, device, dtype):
    kw = {} if m is torch else {"device": device}
    a = m.tensor(np.random.default_rng(0).normal(size=(4, 4)).astype(np.float32), **kw)
    t = m.zeros(4, dtype=m.int64, **kw)
    F = m.nn.functional
    with m.autocast("cpu" if m is torch else clgrad.device(device).type, dtype=getattr(m, dtype)):
        h = a @ a  # the op's input: float16 like in a real region
        return OPS[name](m, F, h, t)


@pytest.mark.parametrize("name", sorted(OPS))
def test_cpu_policy_matches_torch(name):
    ours, theirs = _run(clgrad, name, "cpu", "float16"), _run(torch, name, "cpu", "float16")
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    tol = 1e-2 if ours.dtype is clgrad.float16 else 2e-3
    np.testing.assert_allclose(ours.float().numpy(), theirs.float().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(OPS))
def test_opencl_policy_is_cudas(device, name):
    if device == "cpu":
        pytest.skip("OpenCL regions follow PyTorch's CUDA lists")
    out = _run(clgrad, name, device, "float16")
    want = clgrad.float16 if name in GPU_FLOAT16 or name == "add" else clgrad.float32
    assert out.dtype is want and out.device == clgrad.device(device)


def test_backward_runs_in_forward_dtypes(device):
    """Gradients of float32 leaves are float32; backward ops are never autocast (PyTorch's rule)."""
    x = clgrad.randn(8, 4, device=device, requires_grad=True)
    lin = clgrad.nn.Linear(4, 3).to(device)
    with clgrad.autocast(clgrad.device(device).type, dtype=clgrad.float16):
        out = lin(x)
        loss = clgrad.nn.functional.cross_entropy(out, clgrad.zeros(8, dtype=clgrad.int64, device=device))
    assert out.dtype is clgrad.float16 and loss.dtype is clgrad.float32
    loss.backward()
    assert x.grad.dtype is lin.weight.grad.dtype is clgrad.float32
    ref = clgrad.nn.functional.cross_entropy(lin(x.detach()), clgrad.zeros(8, dtype=clgrad.int64, device=device))
    assert abs(loss.item() - ref.item()) < 1e-2


def test_nesting_decorator_and_cache():
    a = clgrad.ones(2, 2)
    w = clgrad.ones(2, 2, requires_grad=True)
    with clgrad.autocast("cpu", dtype=clgrad.float16):
        assert clgrad.is_autocast_enabled("cpu") and clgrad.is_autocast_cpu_enabled()
        with clgrad.autocast("cpu", enabled=False):
            assert (a @ a).dtype is clgrad.float32 and not clgrad.is_autocast_enabled("cpu")
        assert (a @ a).dtype is clgrad.float16
        from clgrad.amp.policy import _cast_one

        regions = {"cpu": clgrad.float16}
        assert _cast_one(w, regions, True) is _cast_one(w, regions, True)  # a weight is cast once per region
    assert not clgrad.is_autocast_enabled("cpu")

    @clgrad.autocast("cpu", dtype=clgrad.float16)
    def f(x):
        return x @ x

    assert f(a).dtype is clgrad.float16 and (a @ a).dtype is clgrad.float32


def test_device_type_rules():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with clgrad.autocast("cuda"):
            assert not clgrad.is_autocast_enabled("cuda")
        with clgrad.autocast("cpu", dtype=clgrad.float64):
            assert not clgrad.is_autocast_enabled("cpu")
    assert "CUDA is not available" in str(caught[0].message)
    assert "target dtype is not supported" in str(caught[1].message)
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'tpu'"):
        clgrad.autocast("tpu")
    with pytest.raises(ValueError, match="device_type"):
        clgrad.autocast(0)
    assert clgrad.get_autocast_dtype("opencl") is clgrad.float16
    assert clgrad.amp.is_autocast_available("opencl") and not clgrad.amp.is_autocast_available("cuda")


def test_custom_fwd_casts_inputs_and_bwd_keeps_state():
    class Square(clgrad.autograd.Function):
        @staticmethod
        @clgrad.amp.custom_fwd(device_type="cpu", cast_inputs=clgrad.float32)
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.inner = (x.dtype, clgrad.is_autocast_enabled("cpu"))
            return x * x

        @staticmethod
        @clgrad.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = clgrad.ones(3, dtype=clgrad.float16, requires_grad=True)
    with clgrad.autocast("cpu", dtype=clgrad.float16):
        y = Square.apply(x)
    assert y.dtype is clgrad.float32
    y.sum().backward()
    assert x.grad.dtype is clgrad.float16 and x.grad.float().numpy().tolist() == [2.0, 2.0, 2.0]
