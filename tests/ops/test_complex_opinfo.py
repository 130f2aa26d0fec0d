"""PyTorch's OpInfo samples as the oracle for the complex entries (view_as_real, view_as_complex, complex, polar,
cfloat, cdouble): forward values and gradients of a real loss, (view_as_real(out) ** 2).sum() for complex outputs,
on cpu and the OpenCL devices (float64/complex128 samples where the device has fp64, else float32/complex64)."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
from tests.conftest import fp64_ok

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")
from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402

ENTRIES = ("view_as_real", "view_as_complex", "complex", "polar", "cfloat", "cdouble")
OPS = {op.name: op for op in op_db if op.name in ENTRIES and not op.variant_test_name}
N = 4  # samples per entry


def _dtype(op, wide: bool):
    dts = op.supported_dtypes("cpu")
    for d in ((torch.float64, torch.complex128) if wide else (torch.float32, torch.complex64)):
        if d in dts:
            return d
    pytest.skip(f"{op.name} has no sample dtype for this device")


def _to_clgrad(x, device, memo):
    if isinstance(x, torch.Tensor):
        t = clgrad.tensor(x.detach().numpy(), device=device)
        t.requires_grad_(x.requires_grad)
        memo[id(x)] = t
        return t
    if isinstance(x, (list, tuple)):
        return type(x)(_to_clgrad(v, device, memo) for v in x)
    return x


def _loss(m, out):
    r = m.view_as_real(out) if out.dtype.is_complex else out
    return (r * r).sum()


def _call(m, name, x, args, kwargs):
    return getattr(x, name)(*args, **kwargs) if name in ("cfloat", "cdouble") else getattr(m, name)(x, *args, **kwargs)


@pytest.mark.parametrize("name", ENTRIES)
def test_opinfo_samples(device, name):
    op = OPS[name]
    wide = fp64_ok(device)
    if name == "cdouble" and not wide:
        pytest.skip("complex128 needs cl_khr_fp64")
    dt = _dtype(op, wide)
    tol = dict(rtol=1e-9, atol=1e-9) if wide else dict(rtol=1e-4, atol=1e-4)
    for sample in list(op.sample_inputs("cpu", dt, requires_grad=op.supports_autograd))[:N]:
        want = _call(torch, name, sample.input, sample.args, sample.kwargs)
        memo: dict = {}
        x = _to_clgrad(sample.input, device, memo)
        args = _to_clgrad(sample.args, device, memo)
        got = _call(clgrad, name, x, args, sample.kwargs)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        np.testing.assert_allclose(np.asarray(got.detach().cpu()), want.detach().numpy(), **tol)
        leaves = [t for t in [sample.input, *sample.args] if isinstance(t, torch.Tensor) and t.requires_grad]
        if not leaves or not want.requires_grad:
            continue
        grads = torch.autograd.grad(_loss(torch, want), leaves)
        _loss(clgrad, got).backward()
        for g, t in zip(grads, leaves):
            np.testing.assert_allclose(np.asarray(memo[id(t)].grad.cpu()), g.numpy(), **tol)
