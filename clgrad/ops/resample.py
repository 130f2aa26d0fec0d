"""Resampling ops: ``interpolate`` (every mode but lanczos; antialias for bilinear/bicubic) and ``unfold``/``fold``, forward and
backward. Helpers and checks come from ``conv.py`` (imported as ``C``), the adjoint-pair ops from ``pooling.py``."""
from __future__ import annotations

import math

from .. import dtypes as D
from ..backends.cpu_conv import Window, interp_table
from . import conv as C
from . import pooling as Pool
from . import resample_aa
from . import resample_matrix as M
from .guard import tensor_first

FUNCTIONAL = ["interpolate", "unfold", "fold", "adaptive_avg_pool3d"]


# ---- interpolation --------------------------------------------------------------------------------
_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"


def _interp_sizes(input, size, scale_factor, recompute_scale_factor, dims):
    """Output sizes and the scale factors the kernels use (None: derived from the sizes)."""
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dims:
                raise ValueError("Input and output must have the same number of spatial dimensions, but got input with "
                                 f"spatial dimensions of {list(input.shape[2:])} and output size of {size}. Please "
                                 "provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, "
                                 "...,oK) format.")
            out = tuple(int(v) for v in size)
        else:
            out = (int(size),) * dims
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        return out, (None,) * dims
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if isinstance(scale_factor, (list, tuple)):
        if len(scale_factor) != dims:
            raise ValueError("Input and scale_factor must have the same number of spatial dimensions, but got input "
                             f"with spatial dimensions of {list(input.shape[2:])} and scale_factor of shape "
                             f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                             "scale_factor in (s1, s2, ...,sK) format.")
        scales = tuple(float(v) for v in scale_factor)
    else:
        scales = (float(scale_factor),) * dims
    out = tuple(math.floor(n * s) for n, s in zip(input.shape[2:], scales))
    return out, ((None,) * dims if recompute_scale_factor else scales)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
                antialias=False):
    """Resize [N, C, L], [N, C, H, W] or [N, C, D, H, W] by ``size`` or ``scale_factor``, as
    ``torch.nn.functional.interpolate``: 'nearest', 'nearest-exact', 'area' on any of them, 'linear' (3-D),
    'bilinear' and 'bicubic' (4-D), 'trilinear' (5-D). 1-D/2-D nearest and (bi)linear run their own kernels; the
    other modes are separable matrix products (``resample_matrix``; ``antialias=True``: ``resample_aa``)."""
    C._check_tensor("interpolate", "input", 1, input)
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                             "bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dims = input.dim() - 2
    area_scales = mode == "area" and size is None  # area needs sizes: PyTorch recomputes the scales
    out, scales = _interp_sizes(input, size, scale_factor, recompute_scale_factor or area_scales, dims)
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.dim() == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D "
                         "tensor as input")
    wanted = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}
    if mode in wanted and input.dim() != wanted[mode] and input.dim() in (3, 4, 5):
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {wanted[mode]}D input")
    if mode not in _MODES.split(" | ") or input.dim() not in (3, 4, 5):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
                                  f"the modes: {_MODES} (got {mode})")
    if mode == "area":
        pool = {1: Pool.adaptive_avg_pool1d, 2: Pool.adaptive_avg_pool2d, 3: adaptive_avg_pool3d}[dims]
        return pool(input, out)
    if antialias and mode != "lanczos":  # separable anti-aliased weight matrices
        return resample_aa.antialiased(input, mode, out, scales, bool(align_corners))
    C._check_float(f"upsample_{mode.replace('-', '_')}{dims}d", input)
    if any(n <= 0 for n in out) or any(n <= 0 for n in input.shape[2:]):
        names = ("D", "H", "W")[-dims:]
        given = ", ".join(f"{a}: {n}" for a, n in zip(names, input.shape[2:]))
        got = ", ".join(f"{a}: {n}" for a, n in zip(names, out))
        joint = " and" if dims == 1 else ""  # PyTorch's 1-D and 2-D messages differ by this word
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({given}){joint} output "
                           f"({got})")
    if mode not in ("nearest", "linear", "bilinear") or dims == 3:  # separable matrix products
        return M.separable(input, mode, out, scales, bool(align_corners))
    linear = mode != "nearest"
    acc = "float64" if input.dtype is D.float64 else "float32"
    tables = [interp_table(n, o, s, linear, bool(align_corners), acc) for n, o, s in zip(input.shape[2:], out, scales)]
    if dims == 1:
        tables.insert(0, interp_table(1, 1, None, linear, bool(align_corners), acc))
    key = {"nearest": "Nearest", "linear": "Linear", "bilinear": "Bilinear"}[mode] + f"{dims}D"
    return Pool.UPSAMPLE[key].run(input, tuple(input.shape[:2]) + out, *tables)


def adaptive_avg_pool3d(input, output_size):
    """Average pooling of [N, C, D, H, W] (or [C, D, H, W]) to a fixed [od, oh, ow] (an int for all three; None
    keeps that size): a product of one averaging matrix per axis (see ``resample_matrix``)."""
    C._check_tensor("adaptive_avg_pool3d", "input", 1, input)
    if input.dim() not in (4, 5) or any(n == 0 for n in input.shape[-3:]):
        raise RuntimeError("adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got " + str(list(input.shape)))
    size = (output_size,) * 3 if isinstance(output_size, int) else tuple(output_size)
    if len(size) != 3:
        raise RuntimeError("adaptive_avg_pool3d: output_size must be 3")
    size = tuple(n if o is None else int(o) for n, o in zip(input.shape[-3:], size))
    C._check_float("adaptive_avg_pool3d", input)
    return M.separable(input, "area", size, (None,) * 3, False)


# ---- unfold / fold (im2col / col2im as ops) -----------------------------------------------------
def _fold_window(op, kernel_size, dilation, padding, stride, size, spatial):
    k, d, p, s = (C._ints(v, 2) for v in (kernel_size, dilation, padding, stride))
    for name, v in (("kernel_size", k), ("dilation", d), ("padding", p), ("stride", s)):
        if len(v) != 2:
            raise RuntimeError(f"{op}(): {name} must be an int or a tuple of two ints, but got {len(v)} values")
    if min(k) <= 0 or min(d) <= 0 or min(s) <= 0 or min(p) < 0:
        raise RuntimeError(f"{op}(): expected positive kernel_size, dilation and stride and non-negative padding, but "
                           f"got kernel_size={list(k)}, dilation={list(d)}, padding={list(p)}, stride={list(s)}")
    out = [(n + 2 * pp - dd * (kk - 1) - 1) // ss + 1 for n, pp, dd, kk, ss in zip(size, p, d, k, s)]
    if min(out) < 1:
        raise RuntimeError(f"Given input with spatial size ({size[0]}, {size[1]}), kernel_size=({k[0]}, {k[1]}), "
                           f"dilation=({d[0]}, {d[1]}), padding=({p[0]}, {p[1]}), calculated shape of the array of "
                           f"sliding blocks as ({out[0]}, {out[1]}), but its components must be at least one.")
    return Window(k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1], out[0], out[1])


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """im2col: the sliding blocks of [N, C, H, W] (or [C, H, W]) as [N, C*kh*kw, L] columns."""
    C._check_tensor("unfold", "input", 1, input)
    if input.dim() not in (3, 4):
        raise RuntimeError(f"Input Error: Only 3D or 4D input Tensors are supported (got {input.dim()}D)")
    C._check_float("im2col", input)
    win = _fold_window("unfold", kernel_size, dilation, padding, stride, tuple(input.shape[-2:]), 2)
    shape = tuple(input.shape[:-3]) + (input.shape[-3] * win.kh * win.kw, win.oh * win.ow)
    return Pool.Im2Col.run(input, shape, win)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """col2im: sums [N, C*kh*kw, L] sliding blocks into [N, C, *output_size] (``unfold``'s adjoint)."""
    C._check_tensor("fold", "input", 1, input)
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported (got "
                           f"{input.dim()}D)")
    C._check_float("col2im", input)
    size = C._ints(output_size, 2)
    win = _fold_window("fold", kernel_size, dilation, padding, stride, size, 2)
    rows = input.shape[-2]
    if rows % (win.kh * win.kw):
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={rows} and kernel_size=({win.kh}, {win.kw})")
    if input.shape[-1] != win.oh * win.ow:
        raise RuntimeError(f"Given output_size=({size[0]}, {size[1]}), kernel_size=({win.kh}, {win.kw}), "
                           f"dilation=({win.dh}, {win.dw}), padding=({win.ph}, {win.pw}), stride=({win.sh}, "
                           f"{win.sw}), expected size of input's dimension 2 to match the calculated number of "
                           f"sliding blocks {win.oh} * {win.ow} = {win.oh * win.ow}, but got "
                           f"input.size(2)={input.shape[-1]}.")
    shape = tuple(input.shape[:-2]) + (rows // (win.kh * win.kw),) + size
    return Pool.Col2Im.run(input, shape, win)


# a list or a number where a tensor belongs raises PyTorch's TypeError (see guard.py)
tensor_first(globals(), FUNCTIONAL)
