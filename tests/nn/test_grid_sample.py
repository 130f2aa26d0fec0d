"""grid_sample (every mode, padding mode and align_corners; 4-D and 5-D), grid_sampler_2d/3d and affine_grid
against torch, with gradients w.r.t. the input and the grid, on every device."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from tests.nn.torch_ref import check, float_name, gradcheck

RNG = np.random.default_rng(5)
CASES = [(nd, mode, pad, ac) for nd, mode, pad, ac in itertools.product(
    (2, 3), ("bilinear", "nearest", "bicubic"), ("zeros", "border", "reflection"), (False, True))
    if not (nd == 3 and mode == "bicubic")]


def _inputs(nd: int):
    shape = (2, 2, 3, 4) if nd == 2 else (1, 2, 2, 3, 4)
    grid = RNG.uniform(-1.6, 1.6, (shape[0], 2, 3) + ((2,) if nd == 3 else ()) + (nd,))
    return [RNG.standard_normal(shape), grid]


@pytest.mark.parametrize("nd,mode,pad,ac", CASES, ids=["-".join(map(str, c)) for c in CASES])
def test_grid_sample_matches_torch(device, nd, mode, pad, ac):
    torch = pytest.importorskip("torch")
    check(device, lambda x, g: F.grid_sample(x, g, mode, pad, ac),
          lambda x, g: torch.nn.functional.grid_sample(x, g, mode, pad, ac), _inputs(nd), grad=(0, 1))


def test_grid_sampler_entry_points_and_layouts(device):
    torch = pytest.importorskip("torch")
    x, g = _inputs(2)
    check(device, lambda a, b: clgrad.grid_sampler_2d(a.transpose(2, 3), b, 0, 2, False),
          lambda a, b: torch.grid_sampler_2d(a.transpose(2, 3), b, 0, 2, False), [x, g], grad=(0, 1))
    x, g = _inputs(3)
    check(device, lambda a, b: clgrad.grid_sampler_3d(a, b[:, :, ::2], 1, 1, True),
          lambda a, b: torch.grid_sampler_3d(a, b[:, :, ::2], 1, 1, True), [x, g], grad=(0,))


def test_grid_sample_gradcheck(device):
    x, g = _inputs(2)
    gradcheck(device, lambda a, b: F.grid_sample(a, b, "bilinear", "reflection", False), [x[:1, :1], g[:1, :1, :2]])


@pytest.mark.parametrize("nd,ac", [(2, False), (2, True), (3, False), (3, True)])
def test_affine_grid(device, nd, ac):
    torch = pytest.importorskip("torch")
    size = (2, 3, 4, 5) if nd == 2 else (2, 3, 2, 4, 5)
    theta = RNG.standard_normal((2, nd, nd + 1))
    check(device, lambda t: F.affine_grid(t, size, align_corners=ac),
          lambda t: torch.nn.functional.affine_grid(t, size, align_corners=ac), [theta], grad=(0,))


def test_affine_grid_then_sample_identity(device):
    dt = float_name(device)
    img = clgrad.tensor(RNG.standard_normal((1, 2, 4, 5)).astype(dt), device=device)
    theta = clgrad.tensor(np.array([[[1.0, 0, 0], [0, 1.0, 0]]], dt), device=device)
    out = F.grid_sample(img, F.affine_grid(theta, img.shape, align_corners=False), align_corners=False)
    np.testing.assert_allclose(out.cpu().numpy(), img.cpu().numpy(), rtol=1e-5, atol=1e-6)


def test_errors(device):
    x = clgrad.zeros(1, 1, 3, 3, device=device)
    g = clgrad.zeros(1, 2, 2, 2, device=device)
    with pytest.raises(ValueError, match="expected mode to be 'bilinear', 'nearest' or 'bicubic'"):
        F.grid_sample(x, g, mode="linear")
    with pytest.raises(ValueError, match="padding_mode"):
        F.grid_sample(x, g, padding_mode="circular")
    with pytest.raises(RuntimeError, match="expected grid to have size 2 in last dimension"):
        F.grid_sample(x, clgrad.zeros(1, 2, 2, 3, device=device))
    with pytest.raises(ValueError, match="bicubic interpolation only supports 4D input"):
        F.grid_sample(x.unsqueeze(2), clgrad.zeros(1, 1, 2, 2, 3, device=device), mode="bicubic")
    with pytest.raises(ValueError, match="Expected a batch of 2D affine matrices of shape Nx2x3"):
        F.affine_grid(clgrad.zeros(1, 3, 3, device=device), (1, 1, 3, 3), align_corners=False)
    with pytest.warns(UserWarning, match="align_corners=False"):
        F.affine_grid(clgrad.zeros(1, 2, 3, device=device), (1, 1, 3, 3))
