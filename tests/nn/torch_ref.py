"""Shared by the issue-17 nn tests: run a clgrad function and its torch counterpart on the same numpy inputs and
compare the outputs and the gradients of a random weighting of the outputs (float64, or float32 on a device
without cl_khr_fp64)."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
from tests.conftest import fp64_ok
from tests.helpers import grad_precision

TOL = {"float64": dict(rtol=1e-9, atol=1e-10), "float32": dict(rtol=2e-4, atol=2e-5)}


def float_name(device) -> str:
    return "float64" if fp64_ok(device) else "float32"


def _leaves(arrays, grad, device, dtype, torch):
    cl, th = [], []
    for i, a in enumerate(arrays):
        if not isinstance(a, np.ndarray):
            cl.append(a)
            th.append(a)
            continue
        a = a.astype(dtype) if a.dtype.kind == "f" else a
        req = i in grad and a.dtype.kind == "f"
        cl.append(clgrad.tensor(a, device=device, requires_grad=req))
        th.append(torch.tensor(a, requires_grad=req))
    return cl, th


def _as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def check(device, cl_fn, torch_fn, arrays, grad=(), tol=None, backward=True):
    """cl_fn(*clgrad inputs) == torch_fn(*torch inputs) on ``device``, forward and (for the inputs numbered in
    ``grad``) the gradient of sum(out * w) for a random w; returns the clgrad outputs."""
    torch = pytest.importorskip("torch")
    dtype = float_name(device)
    tol = tol or TOL[dtype]
    cl, th = _leaves(arrays, grad, device, dtype, torch)
    got, want = _as_list(cl_fn(*cl)), _as_list(torch_fn(*th))
    assert len(got) == len(want)
    rng = np.random.default_rng(0)
    cl_loss, th_loss = None, None
    for g, w in zip(got, want):
        if w is None:
            assert g is None
            continue
        assert tuple(g.shape) == tuple(w.shape)
        np.testing.assert_allclose(g.detach().cpu().numpy(), w.detach().numpy(), equal_nan=True, **tol)
        if backward and w.requires_grad and w.dtype.is_floating_point:
            r = rng.standard_normal(tuple(w.shape)).astype(dtype)
            term_c, term_t = (g * clgrad.tensor(r, device=device)).sum(), (w * torch.tensor(r)).sum()
            cl_loss = term_c if cl_loss is None else cl_loss + term_c
            th_loss = term_t if th_loss is None else th_loss + term_t
    if cl_loss is not None and grad:
        cl_loss.backward()
        th_loss.backward()
        for i in grad:
            if th[i] is None:
                continue
            if th[i].grad is None:  # unused by torch too
                assert cl[i].grad is None or not cl[i].grad.abs().sum().item()
                continue
            assert cl[i].grad is not None, f"input {i} got no gradient"
            np.testing.assert_allclose(cl[i].grad.cpu().numpy(), th[i].grad.numpy(), **tol)
    return got


def gradcheck(device, fn, arrays):
    """clgrad.autograd.gradcheck of fn at the float arrays (float64, or float32 with wider tolerances)."""
    dtype, kw = grad_precision(device)
    inputs = [clgrad.tensor(a.astype(dtype), device=device, requires_grad=True) for a in arrays]
    assert clgrad.autograd.gradcheck(fn, tuple(inputs), **kw)
