"""Normalization (batch_norm, layer_norm, group_norm) on every device against numpy and PyTorch, with gradients."""
from __future__ import annotations

import re

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.autograd import gradcheck, gradgradcheck
from tests.helpers import assert_close, make
from tests.ops.test_nnops import TF, _close, _leaf, _rand, _skip_fp64, check, torch


# ---- normalization -------------------------------------------------------------------------------
@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("shape", [(4, 3), (3, 5, 7), (2, 4, 3, 3)], ids=str)
def test_batch_norm_training(device, shape, affine):
    C = shape[1]
    a, w, b = _rand(shape, seed=1) + 2, _rand((C,), seed=2), _rand((C,), seed=3)
    rm, rv = clgrad.zeros(C, device=device), clgrad.ones(C, device=device)
    trm, trv = torch.zeros(C), torch.ones(C)
    arrays = [a, w, b] if affine else [a]
    out = check(lambda x, *wb: F.batch_norm(x, rm, rv, *wb, training=True, momentum=0.3),
                lambda x, *wb: TF.batch_norm(x, trm, trv, *wb, training=True, momentum=0.3), arrays, device,
                ["transposed"] + ["contiguous"] * (len(arrays) - 1), rtol=1e-4, atol=1e-5)
    assert out.grad_fn.name() == "NativeBatchNormBackward0"
    _close(rm, trm, rtol=1e-5, atol=1e-6)
    _close(rv, trv, rtol=1e-5, atol=1e-6)


def test_batch_norm_eval_and_torch_form(device):
    a, rm, rv = _rand((4, 3, 5)), np.array([0.5, -1, 2], np.float32), np.array([1.5, 0.5, 3], np.float32)
    w, b = _rand((3,), seed=2), _rand((3,), seed=3)
    check(lambda x, g, h: F.batch_norm(x, make(rm, device), make(rv, device), g, h),
          lambda x, g, h: TF.batch_norm(x, torch.tensor(rm), torch.tensor(rv), g, h), [a, w, b], device)
    # torch.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled)
    got = clgrad.batch_norm(make(a, device), make(w, device), make(b, device), make(rm, device), make(rv, device),
                            False, 0.1, 1e-5, True)
    _close(got, torch.batch_norm(*map(torch.tensor, (a, w, b, rm, rv)), False, 0.1, 1e-5, False))


@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("shape,ns", [((4, 6), (6,)), ((2, 3, 40), (40,)), ((2, 3, 4, 5), (4, 5)), ((5,), (5,))], ids=str)
def test_layer_norm(device, shape, ns, affine):
    a, w, b = _rand(shape, seed=1) + 3, _rand(ns, seed=2), _rand(ns, seed=3)
    arrays = [a, w, b] if affine else [a]
    out = check(lambda x, *wb: F.layer_norm(x, ns, *wb), lambda x, *wb: TF.layer_norm(x, ns, *wb), arrays, device,
                ["sliced"] + ["contiguous"] * (len(arrays) - 1), rtol=1e-4, atol=1e-5)
    assert out.grad_fn.name() == "NativeLayerNormBackward0"


@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("shape,groups", [((2, 4, 3), 2), ((3, 6, 2, 2), 3), ((2, 6), 3), ((2, 8, 5), 1)], ids=str)
def test_group_norm(device, shape, groups, affine):
    C = shape[1]
    a, w, b = _rand(shape, seed=1) - 1, _rand((C,), seed=2), _rand((C,), seed=3)
    arrays = [a, w, b] if affine else [a]
    out = check(lambda x, *wb: F.group_norm(x, groups, *wb), lambda x, *wb: TF.group_norm(x, groups, *wb), arrays,
                device, ["transposed"] + ["contiguous"] * (len(arrays) - 1), rtol=1e-4, atol=1e-5)
    assert out.grad_fn.name() == "NativeGroupNormBackward0"


def test_norm_half_and_large_offset(device):
    # float16 statistics accumulate in float32; a large common offset does not cancel catastrophically
    a = (np.random.default_rng(0).standard_normal((4, 300)) + 1000).astype(np.float32)
    _close(F.layer_norm(make(a, device), (300,)), TF.layer_norm(torch.tensor(a), (300,)), rtol=1e-3, atol=2e-3)
    h = a.astype(np.float16) - np.float16(1000)
    got = F.group_norm(make(h.reshape(4, 3, 100), device), 3)
    _close(got, TF.group_norm(torch.tensor(h.reshape(4, 3, 100)).float(), 3).half(), "float16", atol=1e-2)


def test_norm_errors(device):
    x = make(_rand((2, 3)), device)
    cases = [
        (lambda: F.batch_norm(x[:1], None, None, training=True), ValueError, "Expected more than 1 value per channel"),
        (lambda: F.batch_norm(x, clgrad.zeros(4, device=device), None, training=True), RuntimeError,
         "running_mean should contain 3 elements not 4"),
        (lambda: F.batch_norm(x, None, None), RuntimeError, "running_mean must be defined in evaluation mode"),
        (lambda: F.layer_norm(x, (4,)), RuntimeError,
         "Given normalized_shape=[4], expected input with shape [*, 4], but got input of size[2, 3]"),
        (lambda: F.layer_norm(x, (3,), clgrad.ones(4, device=device)), RuntimeError,
         "Expected weight to be of same shape as normalized_shape, but got weight of shape [4] and normalized_shape = [3]"),
        (lambda: F.group_norm(make(_rand((2, 4, 3)), device), 3), RuntimeError,
         "Expected number of channels in input to be divisible by num_groups, but got input of shape [2, 4, 3] and "
         "num_groups=3"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc, match=re.escape(msg)):
            fn()


@pytest.mark.parametrize("name", ["batch_norm", "layer_norm", "group_norm", "batch_norm_eval"])
def test_norm_gradcheck(device, name):
    _skip_fp64(device)
    x, w, b = (_leaf(_rand(s, "float64", 1.0, seed=k), device) for k, s in enumerate([(3, 4, 2), (4,), (4,)]))
    fn = {
        "batch_norm": lambda v, g, h: F.batch_norm(v, None, None, g, h, training=True),
        "batch_norm_eval": lambda v, g, h: F.batch_norm(v, clgrad.zeros(4, dtype=clgrad.float64, device=device),
                                                         clgrad.ones(4, dtype=clgrad.float64, device=device), g, h),
        "layer_norm": lambda v, g, h: F.layer_norm(v.transpose(1, 2), (4,), g, h),
        "group_norm": lambda v, g, h: F.group_norm(v, 2, g, h),
    }[name]
    assert gradcheck(fn, (x, w, b))
    if name != "batch_norm_eval":
        assert gradgradcheck(lambda v: fn(v, w, b), (x,))


def test_half_kernels(device):
    """float16 storage with float32 computation in the nll, embedding and moments kernels."""
    a = _rand((4, 5), "float16")
    t = np.array([1, 0, 4, 2])
    _close(F.cross_entropy(make(a, device), make(t, device)),
           TF.cross_entropy(torch.tensor(a).float(), torch.tensor(t)).half(), "float16")
    w = _leaf(_rand((6, 3), "float16"), device)
    idx = np.array([5, 1, 5, 0])
    F.embedding(make(idx, device), w).sum().backward()
    assert_close(w.grad, np.array([[1] * 3, [1] * 3, [0] * 3, [0] * 3, [0] * 3, [2] * 3], np.float16))
    _close(F.layer_norm(make(a, device), (5,)), TF.layer_norm(torch.tensor(a).float(), (5,)).half(), "float16",
           atol=1e-2)


def test_more_gradchecks(device):
    _skip_fp64(device)
    x, y = (_leaf(_rand((2, 3), "float64", 1.0, seed=k), device) for k in range(2))
    assert gradcheck(lambda a, b: F.l1_loss(a, b), (x, y))
    assert gradcheck(lambda a: F.softmin(a, 1), (x,))
    assert gradcheck(lambda a: F.normalize(a, dim=1), (x,))


def test_normalize(device):
    a = _rand((3, 4))
    a[1] = 0
    for p in (2.0, 1.0, float("inf")):
        check(lambda x, p=p: F.normalize(x, p=p), lambda x, p=p: TF.normalize(x, p=p), [a], device, rtol=1e-5,
              atol=1e-6)


@pytest.mark.oclgrind
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("shape", [(3, 16, 8, 8), (2, 12, 5, 37), (5, 9, 33), (2, 10, 96), (2, 9, 57)], ids=str)
def test_moments_vector_form(device, shape, dtype):
    """Statistics of rows long enough for the CPU vector form (a work-item per row over the contiguous last dim in
    two vector streams plus a scalar tail, segment by segment), against float64 numpy: batch-norm's per-channel rows
    (a segment per sample), layer-norm's contiguous rows, lengths that leave one vector and a tail. A constant
    channel gets a zero variance exactly, as Welford's update gives."""
    if dtype == "float64":
        _skip_fp64(device)
    rng = np.random.default_rng(sum(shape))
    a = (rng.standard_normal(shape) * 3 + 5).astype(dtype)
    a[:, 1] = 7.25  # a constant channel
    x = clgrad.tensor(a, device=device)
    xf = x.float() if dtype == "float16" else x  # batch_norm computes in float32 for float16 only under autocast
    ref = a.astype(np.float64)
    dims = (0,) + tuple(range(2, len(shape)))
    tol = dict(float16=1e-5, float32=1e-5, float64=1e-12)[dtype]
    rm = clgrad.zeros(shape[1], device=device, dtype=xf.dtype)
    rv = clgrad.ones(shape[1], device=device, dtype=xf.dtype)
    F.batch_norm(xf, rm, rv, training=True, momentum=1.0)
    n = ref.size // shape[1]
    np.testing.assert_allclose(rm.cpu().numpy(), ref.mean(dims), rtol=tol, atol=tol)
    np.testing.assert_allclose(rv.cpu().numpy(), ref.var(dims) * n / (n - 1), rtol=10 * tol, atol=tol)
    assert rv.cpu().numpy()[1] == 0
    ln = F.layer_norm(x, shape[-1:], eps=1e-30).cpu().numpy().astype(np.float64)
    want = (ref - ref.mean(-1, keepdims=True)) / np.sqrt(ref.var(-1, keepdims=True) + 1e-30)
    assert (ln[:, 1] == 0).all()
    np.testing.assert_allclose(ln, want, rtol=1e-2 if dtype == "float16" else 100 * tol,
                               atol=1e-2 if dtype == "float16" else 100 * tol)
