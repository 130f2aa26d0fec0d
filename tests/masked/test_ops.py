"""clgrad.masked against torch.masked: values, dtypes, fully masked-out rows, broadcast masks and gradients."""
from __future__ import annotations

import math

import numpy as np
import pytest

import clgrad
from clgrad.autograd import gradcheck
from tests.conftest import fp64_ok
from tests.helpers import grad_precision, quiet_gradcheck

torch = pytest.importorskip("torch")

REDUCTIONS = ["sum", "prod", "amax", "amin", "mean", "norm", "var", "std", "logsumexp"]
ALONG_DIM = ["cumsum", "cumprod", "softmax", "log_softmax", "softmin", "argmax", "argmin", "median"]


def _data(device):
    rng = np.random.default_rng(0)
    dt = "float64" if fp64_ok(device) else "float32"
    x = rng.uniform(-2, 2, (3, 4, 5)).astype(dt)
    mask = rng.random((3, 4, 5)) > 0.4
    mask[1, 2, :] = False  # a fully masked-out row along the last dim
    mask[:, 0, :] = False  # and along dim 1 for some columns
    return x, mask


def _pair(x, mask, device):
    return (clgrad.tensor(x, device=device), clgrad.tensor(mask, device=device)), (torch.tensor(x), torch.tensor(mask))


def _check(got, want):
    assert tuple(got.shape) == tuple(want.shape)
    assert got.dtype.name == str(want.dtype).removeprefix("torch.")
    np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-5, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("op", REDUCTIONS)
@pytest.mark.parametrize("dim", [None, -1, (0, 2)])
def test_reductions_match_torch(device, op, dim):
    x, mask = _data(device)
    (cx, cm), (tx, tm) = _pair(x, mask, device)
    kw = dict(keepdim=dim == -1)
    lead = (2.0, dim) if op == "norm" else (dim,)  # norm's first argument is ord
    _check(getattr(clgrad.masked, op)(cx, *lead, mask=cm, **kw), getattr(torch.masked, op)(tx, *lead, mask=tm, **kw))


@pytest.mark.parametrize("op", ALONG_DIM)
def test_along_dim_ops_match_torch(device, op):
    x, mask = _data(device)
    (cx, cm), (tx, tm) = _pair(x, mask, device)
    _check(getattr(clgrad.masked, op)(cx, -1, mask=cm), getattr(torch.masked, op)(tx, -1, mask=tm))


def test_broadcast_mask_none_mask_and_normalize(device):
    x, _ = _data(device)
    cx, tx = clgrad.tensor(x, device=device), torch.tensor(x)
    row = np.array([True, False, True, True, False])
    _check(clgrad.masked.sum(cx, 1, mask=clgrad.tensor(row, device=device)),
           torch.masked.sum(tx, 1, mask=torch.tensor(row)))
    _check(clgrad.masked.mean(cx, 0), torch.masked.mean(tx, 0))
    _check(clgrad.masked.normalize(cx, 2.0, 1, mask=clgrad.tensor(row, device=device)),
           torch.masked.normalize(tx, 2.0, 1, mask=torch.tensor(row)))
    _check(clgrad.masked.var(cx, 2, correction=0), torch.masked.var(tx, 2, correction=0))


def test_logaddexp_masks_both_sides(device):
    a = np.array([-100.0, -200, -300, 1.0], np.float32)
    b = np.array([-1.0, -2, -3, 2.0], np.float32)
    m = np.array([True, False, True, False])
    got = clgrad.masked.logaddexp(clgrad.tensor(a, device=device), clgrad.tensor(b, device=device),
                                  input_mask=clgrad.tensor(m, device=device), other_mask=clgrad.tensor(m, device=device))
    want = torch.masked.logaddexp(torch.tensor(a), torch.tensor(b), input_mask=torch.tensor(m), other_mask=torch.tensor(m))
    _check(got, want)
    assert got[1].item() == -math.inf


def test_integer_inputs(device):
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    m = np.array([[True, False, True, True]] * 3)
    (cx, cm), (tx, tm) = _pair(x, m, device)
    _check(clgrad.masked.sum(cx, 1, mask=cm), torch.masked.sum(tx, 1, mask=tm))  # int32 sums to int64
    _check(clgrad.masked.amax(cx, 1, mask=cm), torch.masked.amax(tx, 1, mask=tm))
    _check(clgrad.masked.median(cx, 1, mask=cm), torch.masked.median(tx, 1, mask=tm))
    with pytest.raises(ValueError, match="Could not infer output dtype"):
        clgrad.masked.mean(cx, 1, mask=cm)
    with pytest.raises(ValueError, match="fully masked out rows"):
        clgrad.masked.median(cx, 1, mask=clgrad.zeros(3, 4, dtype=clgrad.bool, device=device))


def test_bad_masks_and_dims(device):
    x = clgrad.ones(2, 3, device=device)
    with pytest.raises(IndexError, match="mask dimensionality higher"):
        clgrad.masked.sum(x, 0, mask=clgrad.ones(1, 2, 3, dtype=clgrad.bool, device=device))
    with pytest.raises(RuntimeError, match="appears multiple times"):
        clgrad.masked.sum(x, (0, -2), mask=clgrad.ones(2, 3, dtype=clgrad.bool, device=device))
    with pytest.raises(IndexError, match="Dimension out of range"):
        clgrad.masked.amax(x, 2, mask=clgrad.ones(2, 3, dtype=clgrad.bool, device=device))


@pytest.mark.parametrize("op", ["sum", "amax", "var", "norm", "softmax", "softmin", "logsumexp", "prod", "mean", "std"])
def test_gradients(device, op):
    dt, kw = grad_precision(device)
    rng = np.random.default_rng(1)
    x = clgrad.tensor(rng.uniform(0.5, 2, (3, 4)).astype(dt), device=device, requires_grad=True)
    m = clgrad.tensor(rng.random((3, 4)) > 0.3, device=device)
    m[:, 0] = True  # no fully masked-out row: NaN rows have no finite difference
    fn = getattr(clgrad.masked, op)
    lead = (2.0, 1) if op == "norm" else (1,)
    assert quiet_gradcheck(gradcheck, lambda t: fn(t, *lead, mask=m), (x,), **kw)


def test_log_softmax_gradient_matches_torch(device):
    """Masked-out outputs are -inf (no finite differences): compare the gradient of the masked-in sum with torch's."""
    x, mask = _data(device)
    mask[1, 2, 0] = True
    (cx, cm), (tx, tm) = _pair(x, mask, device)
    cx.requires_grad_(True)
    tx.requires_grad_(True)
    clgrad.where(cm, clgrad.masked.log_softmax(cx, -1, mask=cm), 0.0).sum().backward()
    torch.where(tm, torch.masked.log_softmax(tx, -1, mask=tm), 0.0).sum().backward()
    np.testing.assert_allclose(cx.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
