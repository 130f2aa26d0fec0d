"""Anti-aliased resizing (``interpolate(..., antialias=True)`` for 'bilinear' and 'bicubic';
``_upsample_bilinear2d_aa``, ``_upsample_bicubic2d_aa``), as separable per-axis weight matrices.

When shrinking, PyTorch's anti-aliased kernels widen the interpolation filter by the scale (a triangle or a
Keys cubic with a = -0.5 over ``support * scale`` inputs) and normalize each output's weights to sum to one
(Pillow's resampling). The weights of one axis form an [out, in] matrix built on the host exactly as
``_compute_weights_aa`` computes them, and ``resample_matrix`` applies them as matrix products, so the op is a
linear Function whose backward is the adjoint product.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from . import pooling as Pool
from . import resample_matrix as M

__all__ = ["_upsample_bilinear2d_aa", "_upsample_bicubic2d_aa"]

NODES = {mode: Pool._linear_pair(name, M._forward_raw, M._adjoint_raw)[0]
         for mode, name in (("bilinear", "UpsampleBilinear2DAa"), ("bicubic", "UpsampleBicubic2DAa"))}
_SUPPORT = {"bilinear": 1.0, "bicubic": 2.0}  # half the filter's width at scale 1


def _filter(mode: str, x: np.ndarray) -> np.ndarray:
    x = np.abs(x)
    if mode == "bilinear":
        return np.where(x < 1, 1 - x, 0)
    a = -0.5  # the anti-aliased bicubic uses Keys' a = -0.5, not the -0.75 of the plain bicubic
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = (((x - 5) * x + 8) * x - 4) * a
    return np.where(x < 1, near, np.where(x < 2, far, 0))


@lru_cache(maxsize=128)
def aa_matrix(mode: str, size: int, out: int, scale, align_corners: bool, acc: str) -> np.ndarray:
    """The [out, size] anti-aliased weights of one axis (read-only, cached)."""
    t = np.dtype(acc).type
    if align_corners:
        s = t(size - 1) / t(out - 1) if out > 1 else t(0)
    else:
        s = M._scale_value(scale, size, out, t)
    support = t(_SUPPORT[mode] * s) if s >= 1 else t(_SUPPORT[mode])
    invscale = t(1) / s if s >= 1 else t(1)
    w = np.zeros((out, size), acc)
    for i in range(out):
        center = s * (t(i) + t(0.5))
        lo = max(int(center - support + t(0.5)), 0)
        hi = min(int(center + support + t(0.5)), size)
        taps = _filter(mode, ((np.arange(lo, hi).astype(acc) - center + t(0.5)) * invscale).astype(acc))
        total = taps.sum(dtype=acc)
        w[i, lo:hi] = taps / total if total != 0 else taps
    w.flags.writeable = False
    return w


def antialiased(x, mode: str, out_sizes, scales, align_corners: bool):
    """x [N, C, H, W] resized to out_sizes with the anti-aliased ``mode`` ('bilinear' or 'bicubic')."""
    acc = "float64" if x.dtype.itemsize == 8 else "float32"
    mats = tuple((k - 2, aa_matrix(mode, x.shape[k - 2], out_sizes[k], scales[k], bool(align_corners), acc))
                 for k in range(2))
    return NODES[mode].run(x, tuple(x.shape[:2]) + tuple(out_sizes), mats)


def _aa(mode: str, input, output_size, align_corners, scales):
    if input.dim() != 4:
        raise RuntimeError(f"It is expected input_size equals to 4, but got size {input.dim()}")
    scales = tuple(scales) if scales is not None else (None, None)
    if output_size is None:
        if scales[0] is None:
            raise RuntimeError("Must specify exactly one of output_size and scale_factors")
        output_size = tuple(math.floor(n * s) for n, s in zip(input.shape[2:], scales))
    return antialiased(input, mode, tuple(int(v) for v in output_size), scales, bool(align_corners))


def _upsample_bilinear2d_aa(input, output_size, align_corners, scale_factors=None, scales_h=None, scales_w=None):
    """``torch._upsample_bilinear2d_aa``: anti-aliased bilinear resize of (N, C, H, W) input."""
    scales = scale_factors if scale_factors is not None else (scales_h, scales_w)
    return _aa("bilinear", input, output_size, align_corners, scales)


def _upsample_bicubic2d_aa(input, output_size, align_corners, scale_factors=None, scales_h=None, scales_w=None):
    """``torch._upsample_bicubic2d_aa``: anti-aliased bicubic resize of (N, C, H, W) input."""
    scales = scale_factors if scale_factors is not None else (scales_h, scales_w)
    return _aa("bicubic", input, output_size, align_corners, scales)
