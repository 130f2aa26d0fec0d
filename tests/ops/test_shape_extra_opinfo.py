"""PyTorch's own OpInfo samples (torch.testing._internal.common_methods_invocations.op_db) for the ops of
shape_extra.py and creation_extra.py: each sample runs through PyTorch and through clgrad (cpu and the first OpenCL
device), and the results must agree. A bounded number of samples per op, spread over the op's sample list."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import clgrad
from tests.conftest import DEVICES, fp64_ok
from tests.helpers import assert_close

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")
common = pytest.importorskip("torch.testing._internal.common_methods_invocations")

FUNCTIONS = [
    "alias_copy", "as_strided_copy", "constant_pad_nd", "diagflat", "diagonal_copy", "dsplit", "expand_copy",
    "fill", "hsplit", "logspace", "narrow_copy", "permute_copy", "repeat_interleave", "rot90", "scalar_tensor",
    "split_with_sizes", "split_with_sizes_copy", "squeeze_copy", "t_copy", "transpose_copy", "unbind_copy",
    "unfold_copy", "unsqueeze_copy", "view_copy", "vsplit", "empty_strided", "empty_permuted",
]
METHODS = ["sum_to_size", "unfold", "resize_", "resize_as_", "zero_"]
UNINITIALISED = {"empty_strided", "empty_permuted", "resize_", "resize_as_"}  # compare the layout, not the values
PER_OP = 6
OPS = {(op.name, op.variant_test_name): op for op in common.op_db if op.name in FUNCTIONS + METHODS}
FIRST_OPENCL = next((p.values[0] for p in DEVICES if p.values[0] != "cpu"), None)


def _to_clgrad(x, device):
    if isinstance(x, torch.Tensor):
        return clgrad.tensor(x.detach().numpy(), device=device)
    if isinstance(x, torch.dtype):
        return getattr(clgrad, str(x).removeprefix("torch."))
    if isinstance(x, torch.Size):
        return tuple(x)
    if isinstance(x, (list, tuple)):
        return type(x)(_to_clgrad(v, device) for v in x)
    if isinstance(x, dict):
        return {k: (device if k == "device" else _to_clgrad(v, device)) for k, v in x.items()}
    return x


def _spread(samples: list) -> list:
    if len(samples) <= PER_OP:
        return samples
    return [samples[int(i)] for i in np.linspace(0, len(samples) - 1, PER_OP)]


def _call(name, lib, sample, device=None):
    convert = (lambda v: _to_clgrad(v, device)) if lib is clgrad else (lambda v: v)
    x, args, kwargs = convert(sample.input), convert(sample.args), convert(sample.kwargs)
    if name in METHODS:
        return getattr(x.clone() if lib is torch else x, name)(*args, **kwargs)
    return getattr(lib, name)(x, *args, **kwargs)


def _compare(name, got, want):
    if isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _compare(name, g, w)
        return
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).removeprefix("torch.")
    if name in UNINITIALISED:
        assert got.stride() == want.stride()
        return
    assert_close(got, want.detach().numpy(), rtol=1e-6 if want.dtype == torch.float32 else None)


@pytest.mark.parametrize("key", sorted(OPS), ids=lambda k: "-".join(filter(None, k)))
@pytest.mark.parametrize("where", ["cpu", "opencl"])
def test_opinfo_samples(key, where):
    device = "cpu" if where == "cpu" else FIRST_OPENCL
    if device is None:
        pytest.skip("no OpenCL device selected")
    dtype = torch.float64 if fp64_ok(device) else torch.float32
    op = OPS[key]
    samples = _spread(list(itertools.islice(op.sample_inputs("cpu", dtype), 60)))  # logspace has 1201
    assert samples
    for sample in samples:
        want = _call(key[0], torch, sample)
        got = _call(key[0], clgrad, sample, device)
        _compare(key[0], got, want)
