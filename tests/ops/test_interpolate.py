"""``F.interpolate``'s separable modes ('nearest-exact', 'bicubic', 'trilinear', 3-D 'nearest', 'area' on 5-D) and
``F.adaptive_avg_pool3d``: forward and backward against PyTorch over sizes, scale factors (with and without
``recompute_scale_factor``) and align_corners; gradcheck; PyTorch's errors."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import grad_precision, quiet_gradcheck

import clgrad
import clgrad.nn.functional as F

torch = pytest.importorskip("torch")

SHAPES = {3: (2, 2, 5), 4: (1, 2, 5, 4), 5: (1, 2, 3, 5, 4)}
CASES = [
    ("nearest-exact", 3), ("nearest-exact", 4), ("nearest-exact", 5),
    ("nearest", 5), ("area", 5), ("bicubic", 4), ("trilinear", 5),
]
RESIZE = [dict(size=7), dict(size=3), dict(scale_factor=1.7), dict(scale_factor=0.5),
          dict(scale_factor=2.3, recompute_scale_factor=True), dict(scale_factor=0.3)]


def _run(m, a, dtype, device, **kw):
    x = m.tensor(a, dtype=getattr(m, dtype), device=device, requires_grad=True)
    out = m.nn.functional.interpolate(x, **kw)
    w = m.tensor(np.random.RandomState(2).rand(*out.shape), dtype=out.dtype, device=device)
    (out * w).sum().backward()
    return out, x.grad


def _compare(a, device, **kw):
    dtype, _ = grad_precision(device)
    try:
        want = _run(torch, a, dtype, "cpu", **kw)
    except RuntimeError as e:  # an empty output: the same error
        with pytest.raises(RuntimeError, match=str(e).split(",")[0]):
            _run(clgrad, a, dtype, device, **kw)
        return
    got = _run(clgrad, a, dtype, device, **kw)
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == "float64" else dict(rtol=1e-4, atol=1e-5)
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape)
        np.testing.assert_allclose(g.detach().cpu().numpy(), w.detach().numpy(), **tol)


@pytest.mark.parametrize("resize", RESIZE, ids=lambda r: "-".join(f"{k}={v}" for k, v in r.items()))
@pytest.mark.parametrize("mode, nd", CASES)
def test_interpolate(device, mode, nd, resize):
    if mode == "area" and resize.get("scale_factor") == 0.3:  # torch's backward rejects an empty output
        pytest.skip("torch cannot differentiate an empty adaptive_avg_pool3d")
    corners = [False, True] if mode in ("bicubic", "trilinear") else [None]
    for align_corners in corners:
        _compare(np.random.randn(*SHAPES[nd]), device, mode=mode, align_corners=align_corners, **resize)


@pytest.mark.parametrize("size", [(6, 9), (2, 3), (1, 1), (5, 4)])
@pytest.mark.parametrize("align_corners", [False, True])
def test_bicubic_sizes(device, size, align_corners):
    """Upsampling reads the clamped border; downsampling and a single pixel too."""
    _compare(np.random.randn(2, 1, 5, 4), device, size=size, mode="bicubic", align_corners=align_corners)


@pytest.mark.parametrize("mode, nd", [("bicubic", 4), ("trilinear", 5), ("nearest-exact", 4), ("area", 5)])
def test_gradcheck(device, mode, nd):
    dtype, kw = grad_precision(device)
    small = {4: (1, 1, 3, 2), 5: (1, 1, 2, 3, 2)}[nd]  # gradcheck costs a forward per element
    x = clgrad.tensor(np.random.randn(*small), dtype=getattr(clgrad, dtype), device=device, requires_grad=True)
    ac = {"bicubic": True, "trilinear": False}.get(mode)
    fn = lambda t: F.interpolate(t, scale_factor=1.5, mode=mode, align_corners=ac)  # noqa: E731
    assert quiet_gradcheck(clgrad.autograd.gradcheck, fn, (x,), **kw)
    assert quiet_gradcheck(clgrad.autograd.gradgradcheck, fn, (x,), **kw)


@pytest.mark.parametrize("output_size", [(2, 3, 2), (1, 1, 1), (3, 5, 4), (2, None, 7), 2])
def test_adaptive_avg_pool3d(device, output_size):
    a = np.random.randn(1, 2, 3, 5, 4)
    dtype, _ = grad_precision(device)
    for batch in (a, a[0]):
        want = torch.nn.functional.adaptive_avg_pool3d(torch.tensor(batch, dtype=getattr(torch, dtype)), output_size)
        got = F.adaptive_avg_pool3d(clgrad.tensor(batch, dtype=getattr(clgrad, dtype), device=device), output_size)
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_float32_and_float16():
    a = np.random.randn(1, 2, 4, 3).astype(np.float32)
    for dt in ("float32", "float16"):
        want = torch.nn.functional.interpolate(torch.tensor(a, dtype=getattr(torch, dt)), scale_factor=2,
                                               mode="bicubic")
        got = F.interpolate(clgrad.tensor(a, dtype=getattr(clgrad, dt)), scale_factor=2, mode="bicubic")
        assert got.dtype is getattr(clgrad, dt)
        np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=1e-2 if dt == "float16" else 1e-5,
                                   atol=1e-2 if dt == "float16" else 1e-6)


@pytest.mark.parametrize("call, exc", [
    (lambda F, x4, x5: F.interpolate(x5, size=2, mode="bicubic"), NotImplementedError),
    (lambda F, x4, x5: F.interpolate(x4, size=2, mode="trilinear"), NotImplementedError),
    (lambda F, x4, x5: F.interpolate(x4, size=2, mode="nearest-exact", align_corners=True), ValueError),
    (lambda F, x4, x5: F.interpolate(x5, size=(2, 0, 3), mode="trilinear"), RuntimeError),
    (lambda F, x4, x5: F.interpolate(x5, size=(2, 3), mode="nearest"), ValueError),
    (lambda F, x4, x5: F.interpolate(x5, size=2, mode="bicubic", antialias=True), ValueError),
    (lambda F, x4, x5: F.adaptive_avg_pool3d(x5, (1, 1)), RuntimeError),
])
def test_errors(call, exc):
    with pytest.raises(exc):
        call(torch.nn.functional, torch.zeros(1, 1, 3, 4), torch.zeros(1, 1, 2, 3, 4))
    with pytest.raises(exc):
        call(F, clgrad.zeros(1, 1, 3, 4), clgrad.zeros(1, 1, 2, 3, 4))


def test_antialias_averages_when_shrinking():
    """antialias=True (4-D bilinear/bicubic; tested against torch in tests/nn/test_functional_misc.py) keeps a
    constant image constant: each output's weights sum to one."""
    out = F.interpolate(clgrad.ones(1, 1, 8, 8), size=3, mode="bicubic", antialias=True)
    np.testing.assert_allclose(out.numpy(), np.ones((1, 1, 3, 3)), rtol=1e-6)


def test_node_names():
    x1, x2, x3 = (clgrad.zeros(*s, requires_grad=True) for s in ((1, 1, 3), (1, 1, 3, 4), (1, 1, 2, 3, 4)))
    for node, fn in (
        ("UpsampleNearestExact1DBackward0", lambda: F.interpolate(x1, scale_factor=2, mode="nearest-exact")),
        ("UpsampleNearestExact2DBackward0", lambda: F.interpolate(x2, scale_factor=2, mode="nearest-exact")),
        ("UpsampleNearestExact3DBackward0", lambda: F.interpolate(x3, scale_factor=2, mode="nearest-exact")),
        ("UpsampleNearest3DBackward0", lambda: F.interpolate(x3, scale_factor=2)),
        ("UpsampleBicubic2DBackward0", lambda: F.interpolate(x2, scale_factor=2, mode="bicubic")),
        ("UpsampleTrilinear3DBackward0", lambda: F.interpolate(x3, scale_factor=2, mode="trilinear")),
        ("AdaptiveAvgPool3DBackward0", lambda: F.interpolate(x3, size=(1, 2, 2), mode="area")),
        ("AdaptiveAvgPool3DBackward0", lambda: F.adaptive_avg_pool3d(x3[0], 1)),
    ):
        assert fn().grad_fn.name() == node
