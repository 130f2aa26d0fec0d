"""3-D max and average pooling, the ``*_with_indices`` forms, adaptive max pooling and power-average pooling,
composed from the 2-D pooling kernels and ``pool_window``'s gather/argmax, so every device and gradients of any
order come for free.

``max_pool3d`` pools each depth slice with the 2-D kernel (depth folded into the channels), then takes the max over
each depth window; the pooled values are a gather of the input at the resulting flat indices. ``avg_pool3d`` sums
each depth slice's 2-D windows (``avg_pool2d`` with divisor 1), adds the depth taps, and divides by PyTorch's
divisor, which is a product of per-dim counts.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as D
from ..autograd.grad_mode import no_grad
from . import creation
from .conv import _check_float, _check_tensor, _ints
from .guard import tensor_first
from .math import relu
from .padding import pad as _pad
from .pool_window import adaptive, box_argmax, sliding, take
from .pooling import _check_dim_range, _one, _pool_out, avg_pool1d, avg_pool2d, max_pool1d, max_pool2d

__all__ = ["max_pool3d", "max_pool1d_with_indices", "adaptive_max_pool1d"]  # torch.<name> too
FUNCTIONAL = __all__ + ["avg_pool3d", "max_pool2d_with_indices", "max_pool3d_with_indices", "adaptive_max_pool2d",
                        "adaptive_max_pool3d", "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
                        "adaptive_max_pool3d_with_indices", "lp_pool1d", "lp_pool2d", "lp_pool3d"]

_WHAT = {"max_pool3d": {"kernel_size": "must either be a single int, or a tuple of three ints",
                        "stride": "must either be omitted, a single int, or a tuple of three ints",
                        "padding": "must either be a single int, or a tuple of three ints",
                        "dilation": "must be either a single int, or a tuple of three ints"},
         "avg_pool3d": {"kernel_size": "must be a single int, or a tuple of three ints",
                        "stride": "must be omitted, a single int, or a tuple of three ints",
                        "padding": "must be a single int, or a tuple of three ints"}}


def _param3(op: str, value, name: str) -> tuple:
    values = () if value is None else _ints(value, 3)
    if len(values) in (1, 3) or (name == "stride" and not values):
        return values * 3 if len(values) == 1 else values
    raise RuntimeError(f"{op}: {name} {_WHAT[op][name]}")


def _shape_check(op: str, x, k, s, p, d, out) -> None:
    """PyTorch's pool3d_shape_check."""
    if min(k) <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kT: {k[0]} kH: {k[1]} kW: {k[2]}")
    if min(s) <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got dT: {s[0]} dH: {s[1]} dW: {s[2]}")
    if min(d) <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilationT: {d[0]} dilationH: {d[1]} "
                           f"dilationW: {d[2]}")
    for i in range(x.dim() - 4, x.dim()):
        if x.shape[i] <= 0:
            raise RuntimeError(f"{op}: Expected input's non-batch dimensions to have positive length, but input has a "
                               f"shape of {list(x.shape)} and non-batch dimension {x.shape[i]} has length zero!")
    if any(kk // 2 < pp for kk, pp in zip(k, p)):
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got kT: {k[0]} kW: {k[2]} "
                           f"kH: {k[1]} padT: {p[0]} padW: {p[2]} padH: {p[1]}")
    if min(out) < 1:
        c, t, h, w = x.shape[-4:]
        raise RuntimeError(f"Given input size: ({c}x{t}x{h}x{w}). Calculated output size: ({c}x{out[0]}x{out[1]}x"
                           f"{out[2]}). Output size is too small")


def _geometry(op, x, kernel_size, stride, padding, dilation, ceil_mode):
    k = _param3(op, kernel_size, "kernel_size")
    s = _param3(op, stride, "stride") or k
    p = _param3(op, padding, "padding")
    d = (1, 1, 1) if dilation is None else _param3(op, dilation, "dilation")
    if x.dim() not in (4, 5):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    out = tuple(_pool_out(n, kk, pp, ss, dd, ceil_mode) for n, kk, pp, ss, dd in zip(x.shape[-3:], k, p, s, d))
    _shape_check(op, x, k, s, p, d, out)
    _check_float(op, x)
    return k, s, p, d, out


def _planes(x, spatial: int):
    """x as [P, *spatial dims] (P = the product of the leading dims, possibly 0)."""
    lead = int(np.prod(x.shape[:x.dim() - spatial], dtype=np.int64))
    return x.reshape(lead, *x.shape[x.dim() - spatial:])


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """3-D max pooling of [N, C, D, H, W] or [C, D, H, W]: (values, flat d * H * W + h * W + w indices)."""
    _check_tensor("max_pool3d", "input", 1, input)
    k, s, p, d, out = _geometry("max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode)
    planes = _planes(input, 3)
    depth, h, w = planes.shape[1:]
    with no_grad():
        v2, i2 = max_pool2d(planes.detach(), k[1:], s[1:], p[1:], d[1:], ceil_mode, return_indices=True)
        offset = creation.arange(depth, dtype=D.int64, device=input.device).reshape(1, depth, 1, 1) * (h * w)
        fi = i2 + offset
        fi = box_argmax(v2, [sliding(depth, out[0], k[0], s[0], p[0], d[0]), None, None], fi)
    shape = tuple(input.shape[:-3]) + out
    return take(planes, fi).reshape(shape), fi.reshape(shape)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """3-D max pooling of [N, C, D, H, W] or [C, D, H, W]; ``return_indices`` adds the flat argmax per plane."""
    out, indices = max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, indices) if return_indices else out


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """``max_pool1d`` returning (values, indices) always."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """``max_pool2d`` returning (values, indices) always."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)


def _counts(size: int, out: int, k: int, s: int, p: int, include_pad: bool) -> np.ndarray:
    """Per-dim element counts of PyTorch's average-pooling divisor."""
    start = np.arange(out) * s - p
    end = np.minimum(start + k, size + p)
    if include_pad:
        return end - start
    return np.minimum(end, size) - np.maximum(start, 0)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """3-D average pooling of [N, C, D, H, W] or [C, D, H, W], with PyTorch's divisor rules."""
    _check_tensor("avg_pool3d", "input", 1, input)
    k, s, p, _, out = _geometry("avg_pool3d", input, kernel_size, stride, padding, None, ceil_mode)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    planes = _planes(input, 3)
    depth = planes.shape[1]
    sums = avg_pool2d(planes, k[1:], s[1:], p[1:], ceil_mode, True, 1)  # [P, D, oh, ow] window sums
    after = max(0, (out[0] - 1) * s[0] + k[0] - depth - p[0])
    if p[0] or after:
        sums = _pad(sums, (0, 0, 0, 0, p[0], after))
    last = s[0] * (out[0] - 1) + 1
    total = sums[:, 0:last:s[0]]
    for t in range(1, k[0]):
        total = total + sums[:, t:t + last:s[0]]
    if divisor_override is not None:
        result = total / divisor_override
    else:
        counts = [_counts(n, o, kk, ss, pp, bool(count_include_pad))
                  for n, o, kk, ss, pp in zip(input.shape[-3:], out, k, s, p)]
        div = counts[0][:, None, None] * counts[1][None, :, None] * counts[2][None, None, :]
        result = total / creation.tensor(div.astype(input.dtype.np), device=input.device)
    return result.reshape(tuple(input.shape[:-3]) + out)


# ---- adaptive max pooling ---------------------------------------------------------------------------------
def _adaptive_size(x, output_size, dims: int) -> tuple:
    """PyTorch's _list_with_default: an int for every dim; None keeps the input's size."""
    if isinstance(output_size, int):
        return (output_size,) * dims
    size = tuple(output_size)
    if x.dim() <= len(size):
        raise ValueError(f"Input dimension should be at least {len(size) + 1}")
    return tuple(x.shape[x.dim() - len(size) + i] if v is None else int(v) for i, v in enumerate(size))


def _adaptive_max(op: str, x, size: tuple, dims: int):
    lo = dims + 1
    if x.dim() not in (lo, lo + 1):
        raise RuntimeError(f"{op}(): Expected {lo}D or {lo + 1}D tensor, but got: {list(x.shape)}")
    for i in range(1, x.dim()):
        if x.shape[i] <= 0:
            raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch dimensions, but input has "
                               f"sizes {list(x.shape)} with dimension {i} being empty")
    if len(size) != dims:
        raise RuntimeError(f"{op}(): internal error: output_size.size() must be {dims}")
    if min(size) < 0:
        raise RuntimeError(f"{op}(): elements of output_size must be greater than or equal to 0 but received "
                           f"{{{', '.join(map(str, size))}}}")
    _check_float(op, x)
    planes = _planes(x, dims)
    fi = box_argmax(planes, [adaptive(n, o) for n, o in zip(planes.shape[1:], size)])
    shape = tuple(x.shape[:x.dim() - dims]) + size
    return take(planes, fi).reshape(shape), fi.reshape(shape)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    """Max pooling of [N, C, L] or [C, L] to a fixed length: (values, indices)."""
    _check_tensor("adaptive_max_pool1d", "input", 1, input)
    _check_dim_range("adaptive_max_pool1d", input, 2, 4)
    size = _one("adaptive_max_pool1d", "output_size", output_size)
    return _adaptive_max("adaptive_max_pool1d", input, (size,), 1)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    """Max pooling of [N, C, H, W] or [C, H, W] to a fixed [oh, ow]: (values, flat h * W + w indices)."""
    _check_tensor("adaptive_max_pool2d", "input", 1, input)
    return _adaptive_max("adaptive_max_pool2d", input, _adaptive_size(input, output_size, 2), 2)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """Max pooling of [N, C, D, H, W] or [C, D, H, W] to a fixed [od, oh, ow]: (values, flat indices)."""
    _check_tensor("adaptive_max_pool3d", "input", 1, input)
    return _adaptive_max("adaptive_max_pool3d", input, _adaptive_size(input, output_size, 3), 3)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Adaptive 1-D max pooling; ``return_indices`` adds the argmax positions."""
    out, indices = adaptive_max_pool1d_with_indices(input, output_size)
    return (out, indices) if return_indices else out


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Adaptive 2-D max pooling (None in ``output_size`` keeps that input size).

    >>> F.adaptive_max_pool2d(clgrad.arange(16.).reshape(1, 4, 4), 2)
    tensor([[[ 5.,  7.],
             [13., 15.]]])
    """
    out, indices = adaptive_max_pool2d_with_indices(input, output_size)
    return (out, indices) if return_indices else out


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Adaptive 3-D max pooling (None in ``output_size`` keeps that input size)."""
    out, indices = adaptive_max_pool3d_with_indices(input, output_size)
    return (out, indices) if return_indices else out


# ---- power-average pooling -----------------------------------------------------------------------------------
def _lp(out, norm_type, window: int):
    return (out.sign() * relu(out.abs())).mul(window).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling: (sum over each window of x ** p) ** (1 / p), as PyTorch computes it."""
    out = avg_pool1d(input.pow(norm_type), kernel_size, kernel_size if stride is None else stride, 0, ceil_mode)
    return _lp(out, norm_type, kernel_size)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """2-D power-average pooling."""
    kh, kw = _ints(kernel_size, 2)
    out = avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp(out, norm_type, kh * kw)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """3-D power-average pooling."""
    kd, kh, kw = _ints(kernel_size, 3)
    out = avg_pool3d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp(out, norm_type, kd * kh * kw)


def install(T) -> None:
    """PyTorch has none of these as Tensor methods."""


tensor_first(globals(), FUNCTIONAL)
