"""PyTorch's own OpInfo samples (torch.testing._internal op_db) for the ops of clgrad/ops/scatter_extra.py and
clgrad/ops/search.py: a bounded, evenly spread subset of each op's samples, forward against torch and, where the
op is differentiable, the input gradients of a weighted sum of the output."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import clgrad
from tests.conftest import DEVICES, fp64_ok
from tests.helpers import assert_close

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # index_reduce is beta in torch

REDUCES = ("sum", "prod", "mean", "amax", "amin")
CASES = (["masked_scatter", "select_scatter", "slice_scatter", "diagonal_scatter", "as_strided_scatter",
          "unravel_index", "tril_indices", "triu_indices", "unique_consecutive", "searchsorted", "bucketize", "isin"]
         + [f"scatter_reduce.{r}" for r in REDUCES] + [f"index_reduce.{r}" for r in REDUCES[1:]])
INT_OPS = ("unravel_index", "tril_indices", "triu_indices")
PER_OP = 5
FIRST_CL = next((p.values[0] for p in DEVICES if p.values[0] != "cpu"), None)


@functools.lru_cache(maxsize=1)
def _infos() -> dict:
    """op_db takes seconds to import: only when a test here runs, once."""
    pytest.importorskip("expecttest")
    from torch.testing._internal.common_methods_invocations import op_db

    names = {c.split(".")[0] for c in CASES}
    return {f"{o.name}.{o.variant_test_name}".rstrip("."): o for o in op_db if o.name in names}


def _ours(x, device, grad: bool = False):
    """A torch sample argument as clgrad's: tensors (on ``device``), dtypes and devices converted."""
    if isinstance(x, torch.Tensor):
        t = clgrad.tensor(x.detach().numpy(), device=device)
        return t.requires_grad_() if grad and x.requires_grad else t
    if isinstance(x, torch.dtype):
        return getattr(clgrad, str(x).split(".")[1])
    if isinstance(x, (list, tuple)):
        return type(x)(_ours(a, device, grad) for a in x)
    if isinstance(x, dict):
        return {k: (device if k == "device" else _ours(v, device, grad)) for k, v in x.items()}
    return x


def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


@pytest.mark.parametrize("name", CASES)
def test_opinfo_samples(device, name):
    if device not in ("cpu", FIRST_CL):
        pytest.skip("OpInfo samples run on cpu and the first OpenCL device only (CI time)")
    info = _infos()[name]
    fp64 = fp64_ok(device)
    dt = torch.int64 if info.name in INT_OPS else torch.float64 if fp64 else torch.float32
    grad = info.supports_autograd and dt.is_floating_point
    samples = list(info.sample_inputs("cpu", dt, requires_grad=grad))
    fn = getattr(clgrad, info.name)
    for sample in samples[:: max(1, len(samples) // PER_OP)]:
        theirs = _flat(info.op(sample.input, *sample.args, **sample.kwargs))
        args = [_ours(a, device, grad) for a in (sample.input, *sample.args)]
        ours = _flat(fn(*args, **_ours(sample.kwargs, device, grad)))
        assert len(ours) == len(theirs), sample
        for o, t in zip(ours, theirs):
            assert_close(o, t.detach().numpy(), rtol=None if fp64 else 1e-4, atol=None if fp64 else 1e-5)
        if not grad:
            continue
        leaves = [(o, t) for o, t in zip(args, (sample.input, *sample.args)) if isinstance(t, torch.Tensor)
                  and t.requires_grad]
        w = [np.random.RandomState(0).randn(*t.shape) for t in theirs]
        torch.autograd.backward(theirs, [torch.tensor(a, dtype=t.dtype) for a, t in zip(w, theirs)])
        clgrad.autograd.backward(ours, [clgrad.tensor(a, dtype=o.dtype, device=device) for a, o in zip(w, ours)])
        if info.name == "as_strided_scatter":  # torch 2.13's input gradient fails its own gradcheck (it keeps
            leaves = leaves[1:]  # the grad inside the view, not outside); test_scatter_extra gradchecks ours
        for o, t in leaves:
            expected = np.zeros(t.shape, t.detach().numpy().dtype) if t.grad is None else t.grad.numpy()
            got = o.grad if o.grad is not None else clgrad.zeros(o.shape, dtype=o.dtype)
            assert_close(got, expected, rtol=None if fp64 else 1e-4, atol=None if fp64 else 1e-5)
