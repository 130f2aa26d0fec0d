"""Issue 17's ops on PyTorch's own OpInfo samples (shapes, broadcasting, scalar operands, 0-dim and empty
inputs): a bounded number per op, on cpu and the first OpenCL device, against PyTorch's results. Precision over
wide ranges is test_special_extra.py's business, so tolerances here are loose (PyTorch's igamma and bessel_j0 are
only ~1e-7 accurate in float64)."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
from tests.conftest import DEVICES, fp64_ok
from tests.helpers import assert_close

OPS = ("acosh asinh atanh erfinv i0 sinc deg2rad rad2deg positive isneginf isposinf isreal signbit heaviside "
       "logaddexp2 nextafter float_power ldexp frexp gcd lcm igamma igammac special.xlog1py special.entr "
       "special.erfcx special.ndtr special.ndtri special.log_ndtr special.i0e special.i1 special.i1e special.zeta "
       "special.bessel_j0 special.bessel_j1").split()
PER_OP = 4


@pytest.fixture(scope="module")
def op_db():
    pytest.importorskip("expecttest")
    torch = pytest.importorskip("torch")
    from torch.testing._internal.common_methods_invocations import op_db

    return torch, {o.name: o for o in op_db}


def _to_clgrad(x, device):
    torch = pytest.importorskip("torch")
    return clgrad.tensor(x.detach().numpy(), device=device) if isinstance(x, torch.Tensor) else x


def _fn(module, path: str):
    for part in path.split("."):
        module = getattr(module, part)
    return module


@pytest.mark.parametrize("name", OPS)
def test_opinfo_samples(device, op_db, name):
    first_cl = next((p.values[0] for p in DEVICES if p.values[0] != "cpu"), None)
    if device not in ("cpu", first_cl):
        pytest.skip("cpu and the first OpenCL device only")
    if name == "float_power" and not fp64_ok(device):
        pytest.skip("float_power computes in float64")
    torch, ops = op_db
    info = ops[name]
    dtype = torch.float64 if fp64_ok(device) else torch.float32
    if dtype not in info.supported_dtypes("cpu"):
        dtype = torch.int64
    for k, s in enumerate(info.sample_inputs("cpu", dtype)):
        if k >= PER_OP:
            break
        want = info.op(s.input, *s.args, **s.kwargs)
        got = _fn(clgrad, name)(_to_clgrad(s.input, device), *[_to_clgrad(a, device) for a in s.args],
                                **{key: _to_clgrad(v, device) for key, v in s.kwargs.items()})
        for g, w in zip(*((got, want) if isinstance(want, tuple) else ((got,), (want,)))):
            w = w.numpy()
            tol = dict(rtol=1e-5, atol=1e-6) if w.dtype.kind == "f" else {}
            assert_close(g, np.asarray(w), **tol)
