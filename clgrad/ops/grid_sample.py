"""``grid_sample`` (bilinear/nearest/bicubic; zeros/border/reflection padding; 4-D and 5-D), ``affine_grid`` and
the ``grid_sampler_2d``/``grid_sampler_3d`` entry points.

Composed from clgrad ops: the source coordinates are elementwise arithmetic on the grid, each corner (tap) of the
interpolation is one ``gather`` from the input flattened over its spatial dims, weighted by a differentiable
weight. So the gradient w.r.t. the input is gather's (a scatter-add) and the gradient w.r.t. the grid flows
through the weights, as PyTorch's kernel computes them (an out-of-bounds tap of ``zeros`` padding contributes
nothing to either).
"""
from __future__ import annotations

import itertools
import warnings

from .. import dtypes as D
from . import creation
from .joins import cat, stack
from .linalg import matmul

__all__ = ["grid_sampler", "grid_sampler_2d", "grid_sampler_3d", "affine_grid_generator"]
FUNCTIONAL = ["grid_sample", "affine_grid"]

_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
_PADDINGS = {"zeros": 0, "border": 1, "reflection": 2}


def _unnormalize(coord, size: int, align_corners: bool):
    """[-1, 1] -> pixel coordinates: -1 and 1 are the corner pixels' centres, or the image's edges."""
    if align_corners:
        return (coord + 1) * ((size - 1) / 2)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord, twice_low: int, twice_high: int):
    """Reflect ``coord`` into [twice_low / 2, twice_high / 2] (PyTorch's reflect_coordinates)."""
    if twice_low == twice_high:
        return coord * 0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    c = (coord - low).abs()
    extra = c.fmod(span)
    flips = (c / span).floor()
    even = flips.fmod(2) == 0
    return (extra + low).where(even, span - extra + low)


def _pad_coord(coord, size: int, padding: int, align_corners: bool):
    """The coordinate after border (clip) or reflection padding; zeros padding leaves it as is."""
    if padding == 0:
        return coord
    if padding == 2:
        coord = _reflect(coord, 0, 2 * (size - 1)) if align_corners else _reflect(coord, -1, 2 * size - 1)
    return coord.clamp(0, size - 1)


def _cubic(t, A: float = -0.75):
    """The four cubic-convolution weights of fractional offset t (PyTorch's get_cubic_upsample_coefficients)."""
    def near(x):
        return ((A + 2) * x - (A + 3)) * x * x + 1

    def far(x):
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


class _Taps:
    """Collects the taps (flat spatial index, weight) of an interpolation of input (N, C, *spatial); ``result``
    gathers them all at once (one gather, so one scatter-add in the backward) and sums the weighted taps."""

    def __init__(self, input, out_spatial):
        self.n, self.c = input.shape[0], input.shape[1]
        self.spatial = tuple(input.shape[2:])
        self.flat = input.reshape(self.n, self.c, -1)
        self.out_spatial = out_spatial
        self.indices, self.weights = [], []

    def add(self, coords, weight, padding: int, align_corners: bool, integer_padding: bool = False):
        """Add input[coords] * weight; coords are float tensors (x, y[, z]) of integer values."""
        index, valid = None, None
        # coords are (x, y, z): x indexes the last spatial dim
        for axis, coord in enumerate(coords):
            size = self.spatial[-1 - axis]
            if integer_padding:
                coord = _pad_coord(coord, size, padding, align_corners)
            inside = (coord >= 0) & (coord <= size - 1)
            valid = inside if valid is None else valid & inside
            ci = coord.clamp(0, size - 1).to(D.int64)
            stride = 1
            for s in self.spatial[len(self.spatial) - axis:]:
                stride *= s
            index = ci * stride if index is None else index + ci * stride
        self.indices.append(index.reshape(self.n, 1, -1))
        self.weights.append(weight.where(valid, 0.0).reshape(self.n, 1, -1))

    def result(self):
        k = len(self.indices)
        index = cat(self.indices, 1) if k > 1 else self.indices[0]  # (N, taps, Q)
        q = index.shape[2]
        vals = self.flat.gather(2, index.reshape(self.n, 1, k * q).expand(self.n, self.c, k * q))
        weights = cat(self.weights, 1) if k > 1 else self.weights[0]
        out = (vals.reshape(self.n, self.c, k, q) * weights.unsqueeze(1)).sum(2)
        return out.reshape(self.n, self.c, *self.out_spatial)


def _check(input, grid, mode: int, nd: int):
    if input.dim() != nd + 2:
        raise RuntimeError(f"grid_sampler(): expected {nd + 2}D input and grid with same number of dimensions, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.dim() != nd + 2 or grid.shape[-1] != nd:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {nd} in last dimension, but got grid with "
                           f"sizes {list(grid.shape)}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if input.device != grid.device:
        raise RuntimeError(f"grid_sampler(): expected input and grid to be on same device, but input is on "
                           f"{input.device} and grid is on {grid.device}")
    if mode == 2 and nd != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    for d in range(2, input.dim()):
        if input.shape[d] <= 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                               f"sizes {list(input.shape)} with dimension {d} being empty")


def grid_sampler(input, grid, interpolation_mode: int, padding_mode: int, align_corners: bool):
    """``grid_sample`` with PyTorch's integer modes (0 bilinear, 1 nearest, 2 bicubic; 0 zeros, 1 border,
    2 reflection)."""
    nd = input.dim() - 2
    _check(input, grid, interpolation_mode, nd)
    if input.dtype != grid.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have the same dtype, but input has "
                           f"{input.dtype} and grid has {grid.dtype}")
    taps = _Taps(input, tuple(grid.shape[1:-1]))
    sizes = [input.shape[-1 - a] for a in range(nd)]  # x, y, z sizes
    raw = [_unnormalize(grid[..., a], sizes[a], align_corners) for a in range(nd)]
    if input.numel() == 0 or grid.numel() == 0:
        return creation.zeros((input.shape[0], input.shape[1], *grid.shape[1:-1]), dtype=input.dtype,
                              device=input.device) + grid.sum() * 0
    if interpolation_mode == 2:
        _bicubic(taps, raw, padding_mode, align_corners)
        return taps.result()
    src = [_pad_coord(c, s, padding_mode, align_corners) for c, s in zip(raw, sizes)]
    if interpolation_mode == 1:
        ones = sum(c * 0 for c in src) + 1  # the grid's gradient is zero, as PyTorch's (not None)
        taps.add([c.round() for c in src], ones, padding_mode, align_corners)
        return taps.result()
    lows = [c.floor() for c in src]
    fracs = [c - lo for c, lo in zip(src, lows)]
    for corner in itertools.product((0, 1), repeat=nd):
        w = None
        for bit, f in zip(corner, fracs):
            wa = f if bit else 1 - f
            w = wa if w is None else w * wa
        taps.add([lo + bit for bit, lo in zip(corner, lows)], w, padding_mode, align_corners)
    return taps.result()


def _bicubic(taps: _Taps, raw, padding: int, align_corners: bool) -> None:
    x, y = raw
    x0, y0 = x.floor(), y.floor()
    wx, wy = _cubic(x - x0), _cubic(y - y0)
    for i in range(4):
        for j in range(4):
            taps.add([x0 + (i - 1), y0 + (j - 1)], wx[i] * wy[j], padding, align_corners, integer_padding=True)


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    """``torch.grid_sampler_2d``: 4-D ``grid_sampler``."""
    if input.dim() != 4:
        raise RuntimeError(f"grid_sampler_2d(): expected 4D input, but got input with sizes {list(input.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    """``torch.grid_sampler_3d``: 5-D ``grid_sampler`` (bilinear is trilinear)."""
    if input.dim() != 5:
        raise RuntimeError(f"grid_sampler_3d(): expected 5D input, but got input with sizes {list(input.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample ``input`` (N, C, H_in, W_in) at the normalized locations ``grid`` (N, H, W, 2), or the 5-D forms.

    >>> F.grid_sample(img, F.affine_grid(theta, img.shape, align_corners=False), align_corners=False)
    """
    if mode not in _MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but "
                         f"got: '{mode}'")
    if padding_mode not in _PADDINGS:
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if mode == "bicubic" and input.dim() != 4:
        raise ValueError("nn.functional.grid_sample(): bicubic interpolation only supports 4D input")
    if align_corners is None:
        align_corners = False
    return grid_sampler(input, grid, _MODES[mode], _PADDINGS[padding_mode], align_corners)


def _base_axis(size: int, align_corners: bool, like):
    """The normalized pixel centres of one axis: linspace(-1, 1), shrunk by (size - 1) / size without
    align_corners."""
    if size <= 1:
        return creation.zeros((max(size, 0),), dtype=like.dtype, device=like.device)
    t = creation.linspace(-1.0, 1.0, size, dtype=like.dtype, device=like.device)
    return t if align_corners else t * ((size - 1) / size)


def affine_grid_generator(theta, size, align_corners):
    """``torch.affine_grid_generator``: the (N, *spatial, k) sampling grid of affine matrices theta."""
    spatial = list(size[2:])
    nd = len(spatial)
    n = size[0]
    axes = [_base_axis(s, align_corners, theta) for s in reversed(spatial)]  # x, y[, z]
    cols = []
    for a, ax in enumerate(axes):
        shape = [1] * nd
        shape[nd - 1 - a] = spatial[nd - 1 - a]
        cols.append(ax.reshape(shape).expand(*spatial))
    cols.append(creation.ones(tuple(spatial), dtype=theta.dtype, device=theta.device))
    base = stack(cols, -1)
    grid = matmul(base.reshape(1, -1, nd + 1), theta.transpose(1, 2))
    return grid.reshape(n, *spatial, nd)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid of a batch of affine matrices: theta (N, 2, 3) for a 4-D ``size`` (N, C, H, W), or
    (N, 3, 4) for a 5-D one; for ``grid_sample``.

    >>> F.affine_grid(theta, (1, 3, 8, 8), align_corners=False).shape
    clgrad.Size([1, 8, 8, 2])
    """
    if align_corners is None:
        warnings.warn("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                      "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                      "grid_sample for details.", stacklevel=2)
        align_corners = False
    if theta.dtype.kind != "f":
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = tuple(size)
    if len(size) == 4:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got "
                             f"{list(theta.shape)}.")
    elif len(size) == 5:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. Got "
                             f"{list(theta.shape)}.")
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != size[0]:
        raise ValueError(f"Expected theta's batch size {theta.shape[0]} to match size[0] = {size[0]}")
    return affine_grid_generator(theta, size, align_corners)
