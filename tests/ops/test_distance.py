"""Distances (clgrad/ops/distance.py) against PyTorch: values and gradients, including at zero distance and zero
norm (PyTorch's subgradients), broadcasting, cdist's matrix-product path, gradcheck and errors."""
from __future__ import annotations

import zlib

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.autograd import gradcheck
from tests.conftest import fp64_ok
from tests.helpers import grad_precision

torch = pytest.importorskip("torch")
TF = torch.nn.functional
INF = float("inf")

RNG = np.random.default_rng(11)
A = RNG.standard_normal((4, 5))
B = RNG.standard_normal((4, 5))
B[1] = A[1]  # a zero distance
B[2] = 0.0  # a zero norm
ROWS = RNG.standard_normal((5, 3))
ROWS[3] = ROWS[1]  # a repeated row: pdist 0 between them
Y = RNG.standard_normal((2, 6, 3))
Y[0, 2] = ROWS[0]
BIG = RNG.standard_normal((27, 3))  # more than 25 rows: cdist's matrix-product path by default

# (id, function of (lib, functional module, *tensors), inputs)
CASES = [
    ("cosine", lambda lib, f, a, b: f.cosine_similarity(a, b), [A, B]),
    ("cosine-dim0-eps", lambda lib, f, a, b: f.cosine_similarity(a, b, 0, 1e-3), [A, B]),
    ("cosine-broadcast", lambda lib, f, a, b: lib.cosine_similarity(a, b, -1), [A[:1], B]),
    ("pairwise", lambda lib, f, a, b: f.pairwise_distance(a, b), [A, B]),
    ("pairwise-p1-keepdim", lambda lib, f, a, b: f.pairwise_distance(a, b, 1.0, keepdim=True), [A, B]),
    ("pairwise-p3-eps0", lambda lib, f, a, b: lib.pairwise_distance(a, b, 3.0, 0.0), [A, B]),
    ("pairwise-inf", lambda lib, f, a, b: f.pairwise_distance(a, b, INF), [A, B]),
    ("pairwise-broadcast", lambda lib, f, a, b: f.pairwise_distance(a, b), [A[0], B]),
    ("pdist", lambda lib, f, x: f.pdist(x), [ROWS]),
    ("pdist-p1", lambda lib, f, x: lib.pdist(x, 1), [ROWS]),
    ("pdist-p0.5", lambda lib, f, x: f.pdist(x, 0.5), [ROWS]),
    ("pdist-p3", lambda lib, f, x: f.pdist(x, 3), [ROWS]),
    ("cdist", lambda lib, f, x, y: lib.cdist(x, y), [ROWS, Y]),
    ("cdist-p1", lambda lib, f, x, y: lib.cdist(x, y, 1.0), [ROWS, Y]),
    ("cdist-p1.5", lambda lib, f, x, y: lib.cdist(x, y, 1.5), [ROWS, Y]),
    ("cdist-p0", lambda lib, f, x, y: lib.cdist(x, y, 0.0), [ROWS, Y]),
    ("cdist-inf", lambda lib, f, x, y: lib.cdist(x, y, INF), [ROWS[:3], Y[:, :4]]),
    ("cdist-mm", lambda lib, f, x, y: lib.cdist(x, y, compute_mode="use_mm_for_euclid_dist"), [ROWS, Y + 0.1]),
    ("cdist-mm-big", lambda lib, f, x, y: lib.cdist(x, y), [BIG, ROWS + 0.1]),
    ("cdist-no-mm", lambda lib, f, x, y: lib.cdist(x, y, compute_mode="donot_use_mm_for_euclid_dist"), [BIG, ROWS]),
    ("dist", lambda lib, f, a, b: lib.dist(a, b), [A, B]),
    ("dist-method-p3-broadcast", lambda lib, f, a, b: a.dist(b, 3), [A[0], B]),
]


def _tensors(lib, arrays, device, dtype):
    if lib is torch:
        return [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    return [clgrad.tensor(a, dtype=dtype, device=device, requires_grad=True) for a in arrays]


@pytest.mark.parametrize("name,fn,arrays", CASES, ids=[c[0] for c in CASES])
def test_matches_torch_values_and_gradients(device, name, fn, arrays):
    dtype = clgrad.float64 if fp64_ok(device) else clgrad.float32
    tol = dict(rtol=1e-9, atol=1e-11) if dtype is clgrad.float64 else dict(rtol=1e-4, atol=1e-5)
    xs, txs = _tensors(clgrad, arrays, device, dtype), _tensors(torch, arrays, device, dtype)
    out, tout = fn(clgrad, F, *xs), fn(torch, TF, *txs)
    assert tuple(out.shape) == tuple(tout.shape)
    np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().cpu().numpy(), **tol)
    g = RNG.uniform(0.5, 1.5, tuple(tout.shape))
    out.backward(clgrad.tensor(g, dtype=dtype, device=device))
    tout.backward(torch.tensor(g))
    for x, tx in zip(xs, txs):
        np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.cpu().numpy(), **tol)


def test_zero_distance_and_zero_norm_gradients_are_zero_not_nan(device):
    dtype = clgrad.float64 if fp64_ok(device) else clgrad.float32
    x = clgrad.tensor([[1.0, 2.0], [1.0, 2.0]], dtype=dtype, device=device, requires_grad=True)
    F.pdist(x).sum().backward()
    assert x.grad.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    z = clgrad.zeros(2, 3, dtype=dtype, device=device, requires_grad=True)
    F.cosine_similarity(z, clgrad.ones(2, 3, dtype=dtype, device=device)).sum().backward()
    np.testing.assert_allclose(z.grad.cpu().numpy(), np.full((2, 3), 1e8 / np.sqrt(3)), rtol=1e-5)  # 1 / (eps |y|)


GRAD_CASES = [c for c in CASES if c[0] in ("cosine", "cosine-broadcast", "pairwise", "pairwise-p3-eps0", "pdist",
                                           "pdist-p3", "cdist", "cdist-p1.5", "cdist-mm", "dist")]


@pytest.mark.parametrize("name,fn,arrays", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradcheck(device, name, fn, arrays):
    dtype, kw = grad_precision(device)
    # random points: no zero distance, where the distances are not differentiable; drawn from the case's own seed,
    # so that the float32 check (no fp64) does not depend on which tests ran before in the worker
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    xs = [clgrad.tensor(rng.standard_normal(a.shape), dtype=dtype, device=device, requires_grad=True) for a in arrays]
    assert gradcheck(lambda *t: fn(clgrad, F, *t), xs, **kw)


def test_empty_inputs():
    assert F.pdist(clgrad.ones(1, 3)).shape == (0,)
    x = clgrad.ones(1, 3, requires_grad=True)
    assert F.pdist(x, INF).shape == torch.pdist(torch.ones(1, 3), INF).shape
    assert clgrad.cdist(clgrad.ones(0, 3), clgrad.ones(4, 3)).shape == (0, 4)
    assert clgrad.cdist(clgrad.ones(2, 1, 3, 2), clgrad.ones(4, 5, 2)).shape == (2, 4, 3, 5)  # batch dims broadcast
    assert clgrad.cdist(clgrad.ones(2, 1, 30, 2), clgrad.ones(4, 5, 2)).shape == (2, 4, 30, 5)  # by a product


ERRORS = [
    (lambda: F.cosine_similarity(clgrad.ones(2, 3, dtype=clgrad.int64), clgrad.ones(2, 3, dtype=clgrad.int64)),
     RuntimeError, "expected common dtype to be floating point, yet common dtype is Long"),
    (lambda: F.cosine_similarity(clgrad.ones(3), clgrad.ones(3)), IndexError, "Dimension out of range"),
    (lambda: F.cosine_similarity(clgrad.ones(2, 3), clgrad.ones(4, 3)), RuntimeError,
     "The size of tensor a"),
    (lambda: F.pairwise_distance(clgrad.ones(2, 3), clgrad.ones(4, 3)), RuntimeError, "The size of tensor a"),
    (lambda: F.pdist(clgrad.ones(3)), RuntimeError, "pdist only supports 2D tensors, got: 1D"),
    (lambda: F.pdist(clgrad.ones(3, 2), -1), RuntimeError, "pdist only supports non-negative p values"),
    (lambda: F.pdist(clgrad.ones(3, 2, dtype=clgrad.int64)), RuntimeError, "pdist only supports floating-point dtypes"),
    (lambda: clgrad.cdist(clgrad.ones(3), clgrad.ones(3, 3)), RuntimeError,
     "cdist only supports at least 2D tensors, X1 got: 1D"),
    (lambda: clgrad.cdist(clgrad.ones(3, 2), clgrad.ones(3, 3)), RuntimeError,
     "X1 and X2 must have the same number of columns. X1: 2 X2: 3"),
    (lambda: clgrad.cdist(clgrad.ones(3, 2), clgrad.ones(3, 2), -1), RuntimeError,
     "cdist only supports non-negative p values"),
    (lambda: clgrad.cdist(clgrad.ones(3, 2, dtype=clgrad.int64), clgrad.ones(3, 2, dtype=clgrad.int64)), RuntimeError,
     "cdist only supports floating-point dtypes, X1 got: Long"),
    (lambda: clgrad.cdist(clgrad.ones(3, 2), clgrad.ones(3, 2), compute_mode="bogus"), ValueError,
     "bogus is not a valid value for compute_mode"),
    (lambda: F.pdist([[1.0]]), TypeError, r"pdist\(\): argument 'input' \(position 1\) must be Tensor, not list"),
]


@pytest.mark.parametrize("call,exc,match", ERRORS)
def test_errors_match_pytorch(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
