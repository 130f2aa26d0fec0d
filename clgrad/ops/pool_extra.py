"""Fractional max pooling, max unpooling and max pooling's backward as an op, composed from gather/scatter.

Fractional max pooling uses PyTorch's (CPU) interval formula in the input's dtype, so given the same
``_random_samples`` the windows, values and indices are PyTorch's. Its windows differ per plane; ``pool_window``
takes per-plane index tables. Max unpooling is a scatter of the values to their indices (its gradient is the
gather back).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as D
from ..random import rand
from . import creation
from .conv import _check_float, _check_tensor, _ints
from .gather import scatter, scatter_add
from .guard import tensor_first
from .pool3d import _planes
from .pool_window import box_argmax, flat, take
from .pooling import max_pool2d

__all__ = ["max_pool2d_with_indices_backward"]  # aten's op, at the top level for op_db (torch.ops.aten there)
FUNCTIONAL = ["fractional_max_pool2d", "fractional_max_pool3d", "fractional_max_pool2d_with_indices",
              "fractional_max_pool3d_with_indices", "max_unpool1d", "max_unpool2d", "max_unpool3d"]


# ---- fractional max pooling ------------------------------------------------------------------------------
def _intervals(samples: np.ndarray, size: int, out: int, k: int) -> np.ndarray:
    """[P, out, k] window positions of PyTorch's generate_intervals, computed in the samples' dtype."""
    dt = samples.dtype.type
    seq = np.empty((samples.shape[0], out), np.int64)
    if out > 1:
        alpha = dt(size - k) / dt(out - 1)
        i = np.arange(out - 1).astype(samples.dtype)
        seq[:, :-1] = ((i[None, :] + samples[:, None]) * alpha).astype(np.int64) - \
            (samples * alpha).astype(np.int64)[:, None]
    if out > 0:
        seq[:, -1] = size - k
    return seq[:, :, None] + np.arange(k)[None, None, :]


_NAMES = {2: ("height", "width"), 3: ("time", "height", "width")}


def _fractional(op: str, dims: int, input, kernel_size, output_size, output_ratio, samples):
    _check_tensor(op, "input", 1, input)
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    kernel = _ints(kernel_size, dims)
    if output_size is None:
        ratio = tuple(output_ratio) if isinstance(output_ratio, (tuple, list)) else (output_ratio,) * dims
        if len(ratio) != dims:
            raise ValueError(f"{op} requires output_ratio to either be a single Int or tuple of Ints.")
        output_size = [int(input.shape[input.dim() - dims + i] * ratio[i]) for i in range(dims)]
    size = _ints(output_size, dims)
    if len(kernel) != dims or len(size) != dims:
        raise RuntimeError(f"{op}: kernel_size and output_size must either be a single Int or tuple of {dims} Ints")
    if input.dim() not in (dims + 1, dims + 2):
        raise RuntimeError(f"{op}(): Expected {dims + 1}D or {dims + 2}D tensor, but got: {list(input.shape)}")
    _check_float(op, input)
    planes = _planes(input, dims)
    spatial = tuple(planes.shape[1:])
    for name, n, o, k in zip(_NAMES[dims], spatial, size, kernel):
        if o + k - 1 > n:
            where = op + ("()" if dims == 2 else "_out()")
            raise RuntimeError(f"{where}: pool {name} {k} too large relative to input {name} {n}")
    if samples is None:
        batch = 1 if input.dim() == dims + 1 else input.shape[0]
        samples = rand(batch, input.shape[-dims - 1], dims, dtype=input.dtype, device=input.device)
    if samples.dim() != 3 or samples.shape[2] != dims:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {dims}; got {samples.shape[-1]}.")
    s = samples.detach().cpu().numpy().astype(input.dtype.np).reshape(-1, dims)  # intervals in the input dtype
    if s.shape[0] != planes.shape[0]:
        raise RuntimeError(f"Expect _random_samples to have {planes.shape[0]} planes; got {s.shape[0]}.")
    # PyTorch's 2-D kernel takes sample 0 for the width, 1 for the height; the 3-D one takes them in (t, h, w) order
    which = (1, 0) if dims == 2 else (0, 1, 2)
    tables = [_intervals(s[:, j], n, o, k) for j, n, o, k in zip(which, spatial, size, kernel)]
    fi = box_argmax(planes, tables)
    shape = tuple(input.shape[:input.dim() - dims]) + size
    return take(planes, fi).reshape(shape), fi.reshape(shape)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                                       _random_samples=None):
    """Fractional 2-D max pooling of [N, C, H, W] or [C, H, W]: (values, flat h * W + w indices)."""
    return _fractional("fractional_max_pool2d", 2, input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                                       _random_samples=None):
    """Fractional 3-D max pooling of [N, C, D, H, W] or [C, D, H, W]: (values, flat indices)."""
    return _fractional("fractional_max_pool3d", 3, input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Fractional 2-D max pooling (Graham, 2014): pseudo-random window starts from ``_random_samples`` [N, C, 2]
    (drawn with ``clgrad.rand`` when None)."""
    out, indices = fractional_max_pool2d_with_indices(input, kernel_size, output_size, output_ratio,
                                                      _random_samples=_random_samples)
    return (out, indices) if return_indices else out


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Fractional 3-D max pooling; ``_random_samples`` is [N, C, 3]."""
    out, indices = fractional_max_pool3d_with_indices(input, kernel_size, output_size, output_ratio,
                                                      _random_samples=_random_samples)
    return (out, indices) if return_indices else out


# ---- max unpooling ---------------------------------------------------------------------------------------
def _unpool_output_size(x, kernel, stride, padding, output_size) -> list:
    """PyTorch's _unpool_output_size."""
    n = len(kernel)
    default = [(x.shape[x.dim() - n + d] - 1) * stride[d] + kernel[d] - 2 * padding[d] for d in range(n)]
    if output_size is None:
        return default
    output_size = list(output_size)
    if len(output_size) == n + 2:
        output_size = output_size[2:]
    if len(output_size) != n:
        raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} elements, but it has a length "
                         f"of '{len(output_size)}'")
    for d in range(n):
        lo, hi = default[d] - stride[d], default[d] + stride[d]
        if not lo < output_size[d] < hi:
            raise ValueError(f'invalid output_size "{tuple(output_size)}" (dim {d} must be between {lo} and {hi})')
    return [int(v) for v in output_size]


def _unpool(dims: int, input, indices, kernel_size, stride, padding, output_size):
    _check_tensor(f"max_unpool{dims}d", "input", 1, input)
    _check_tensor(f"max_unpool{dims}d", "indices", 2, indices)
    kernel = _ints(kernel_size, dims)
    stride = kernel if stride is None else _ints(stride, dims)
    size = _unpool_output_size(input, kernel, stride, _ints(padding, dims), output_size)
    if indices.dtype is not D.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: {indices.dtype.scalar_name}")
    nd = max(dims, 2)  # 1-D unpooling is 2-D unpooling with a width of 1, as in PyTorch
    if input.dim() not in (nd + 1, nd + 2) and dims > 1:
        lo = nd + 1
        raise RuntimeError(f"Input to max_unpooling{nd}d should be a {lo}d or {lo + 1}d Tensor, but got a tensor "
                           f"with {input.dim()} dimensions.")
    if tuple(input.shape) != tuple(indices.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({list(input.shape)}) "
                           f"but got indices tensor with shape: {list(indices.shape)}")
    planes = _planes(input, dims)
    idx = flat(indices.reshape(planes.shape))
    total = int(np.prod(size))
    if idx.numel():
        lo, hi = int(idx.min().item()), int(idx.max().item())
        if lo < 0 or hi >= total:
            raise RuntimeError(f"Found an invalid max index: {hi if hi >= total else lo} (output volumes are of size "
                               f"{'x'.join(map(str, size))})")
    out = creation.zeros(planes.shape[0], total, dtype=input.dtype, device=input.device)
    out = scatter(out, 1, idx, flat(planes))
    return out.reshape(*input.shape[:input.dim() - dims], *size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool1d: values written at their indices, zeros elsewhere."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Input to max_unpooling2d should be a 3d or 4d Tensor, but got a tensor with "
                           f"{input.dim() + 1} dimensions.")
    return _unpool(1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool2d (``output_size`` picks among the sizes that pool to the input's)."""
    return _unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool3d."""
    return _unpool(3, input, indices, kernel_size, stride, padding, output_size)


def max_pool2d_with_indices_backward(grad_output, input=None, kernel_size=(), stride=(), padding=(0,),  # noqa: A002
                                     dilation=(1,), ceil_mode=False, indices=None, **kwargs):
    """max_pool2d's input gradient: ``grad_output`` added at ``indices`` (aten's op).

    Called with one tensor and keywords (``indices`` None), it is op_db's sample function of that name: the
    gradient of max_pool2d of that tensor for a gradient of ones."""
    if indices is None:
        out, indices = max_pool2d(grad_output, kernel_size, stride or None, padding, dilation, ceil_mode, True)
        grad_output, input = creation.ones(out.shape, dtype=out.dtype, device=out.device), grad_output  # noqa: A001
    planes = _planes(input, 2)
    g = flat(grad_output.reshape(planes.shape[0], *grad_output.shape[-2:]))
    out = creation.zeros(planes.shape[0], planes.shape[1] * planes.shape[2], dtype=grad_output.dtype,
                         device=grad_output.device)
    return scatter_add(out, 1, flat(indices.reshape(g.shape)), g).reshape(input.shape)


def install(T) -> None:
    """PyTorch has none of these as Tensor methods."""


tensor_first(globals(), FUNCTIONAL + __all__)
