"""Pooling (max, average, adaptive average; 1-D and 2-D) and the linear 2-D ops whose backward is their adjoint
(pooling, upsampling, unfold/fold: each backward is the adjoint, whose backward is the op again, so gradients of
any order exist), with PyTorch's argument checks and messages. Every primitive works on [N, C, H, W]; 1-D ops
run as 2-D ones with H = 1.
"""
from __future__ import annotations

from numbers import Integral

from .. import backends
from .. import dtypes as D
from ..autograd.function import Function
from ..autograd.graph import needs_graph
from ..backends.cpu_conv import Window
from ..tensor import Tensor
from . import shape as S
from .conv import _as4d, _check_float, _check_tensor, _columns, _empty, _ints
from .guard import tensor_first
from .views import contiguous_strides, wrap_dim

__all__ = ["max_pool1d", "max_pool2d", "avg_pool1d", "adaptive_avg_pool1d"]
FUNCTIONAL = __all__ + ["avg_pool2d", "adaptive_avg_pool2d"]


# ---- linear ops whose backward is their adjoint -------------------------------------------------
class _Linear(Function):
    """A linear op ``raw(t, out_shape, *params)``; its backward is ``adjoint`` (whose backward is this op), so
    gradients of any order exist. Subclasses set ``node_name``, ``raw`` and ``adjoint``."""

    raw = None
    adjoint = None

    @classmethod
    def forward(cls, ctx, t, out_shape, *params):
        ctx.meta = (tuple(t.shape), params)
        return cls.raw(t, out_shape, *params)

    @classmethod
    def backward(cls, ctx, grad):
        shape, params = ctx.meta
        return (cls.adjoint.run(grad, shape, *params), None) + (None,) * len(params)

    @classmethod
    def run(cls, t, out_shape, *params):
        if needs_graph(t):
            return cls.apply(t, out_shape, *params)
        return cls.raw(t, out_shape, *params)


def _linear_pair(name: str, raw, adjoint_raw, adjoint_name: str | None = None):
    fwd = type(name, (_Linear,), {"node_name": f"{name}Backward0", "raw": staticmethod(raw)})
    adj = type(f"{name}Grad", (_Linear,), {"node_name": adjoint_name or f"{name}BackwardBackward0",
                                          "raw": staticmethod(adjoint_raw)})
    fwd.adjoint, adj.adjoint = adj, fwd
    return fwd, adj


def _into(out_shape, t, batched: bool, fill):
    """A new ``out_shape`` tensor like ``t``, filled by ``fill(out4, t4)`` on their 4-D views."""
    out = _empty(out_shape, t)
    if out.numel():
        fill(_as4d(out, batched), _as4d(t, batched))
    return out


def _avg_pool_raw(x, out_shape, win, include_pad, divisor):
    be = backends.get(x.device)
    return _into(out_shape, x, False, lambda o, i: be.avg_pool2d(o, i, win, include_pad, divisor))


def _avg_pool_grad_raw(g, in_shape, win, include_pad, divisor):
    be = backends.get(g.device)
    return _into(in_shape, g, False, lambda o, i: be.avg_pool2d_backward(o, i, win, include_pad, divisor))


def _adaptive_raw(x, out_shape):
    return _into(out_shape, x, False, backends.get(x.device).adaptive_avg_pool2d)


def _adaptive_grad_raw(g, in_shape):
    return _into(in_shape, g, False, backends.get(g.device).adaptive_avg_pool2d_backward)


def _max_grad_raw(g, in_shape, indices, win):
    be = backends.get(g.device)
    return _into(in_shape, g, False, lambda o, i: be.max_pool2d_backward(o, i, _as4d(indices.contiguous(), False), win))


def _gather_raw(src, out_shape, indices, win):
    be = backends.get(src.device)
    return _into(out_shape, src.contiguous(), False, lambda o, i: be.pool_gather(o, i, _as4d(indices, False)))


def _upsample_raw(x, out_shape, th, tw):
    return _into(out_shape, x, x.dim() == 3, lambda o, i: backends.get(x.device).upsample2d(o, i, th, tw))


def _upsample_grad_raw(g, in_shape, th, tw):
    return _into(in_shape, g, g.dim() == 3, lambda o, i: backends.get(g.device).upsample2d_backward(o, i, th, tw))


def _unfold_raw(x, out_shape, win):
    cols = _columns(_as4d(x, False), win)
    if cols._storage is x._storage:  # a 1x1 window's columns can be x itself; unfold returns new memory
        cols = cols.clone()
    return cols._view(out_shape, _contiguous(out_shape))


def _fold_raw(cols, out_shape, win):
    out = _empty(out_shape, cols)
    if out.numel():
        c4 = _as4d(out, False)
        backends.get(cols.device).col2im(c4, S.reshape(cols, c4.shape[0], -1, win.oh * win.ow).contiguous(), win)
    return out


def _contiguous(shape) -> tuple:
    return contiguous_strides(shape)


AvgPool2d, _AvgPool2dGrad = _linear_pair("AvgPool2D", _avg_pool_raw, _avg_pool_grad_raw)
AdaptiveAvgPool2d, _AdaptiveGrad = _linear_pair("AdaptiveAvgPool2D", _adaptive_raw, _adaptive_grad_raw)
MaxPool2dGrad, _PoolGather = _linear_pair("MaxPool2DWithIndicesBackward", _max_grad_raw, _gather_raw)
Im2Col, Col2Im = _linear_pair("Im2Col", _unfold_raw, _fold_raw, "Col2ImBackward0")
UPSAMPLE = {key: _linear_pair(f"Upsample{key}", _upsample_raw, _upsample_grad_raw)[0]
            for key in ("Nearest1D", "Linear1D", "Nearest2D", "Bilinear2D")}


class MaxPool2d(Function):
    node_name = "MaxPool2DWithIndicesBackward0"

    @staticmethod
    def forward(ctx, x, out_shape, win):
        out, indices = _max_pool_raw(x, out_shape, win)
        ctx.meta = (tuple(x.shape), win)
        ctx.save_for_backward(indices)
        ctx.mark_non_differentiable(indices)
        return out, indices

    @staticmethod
    def backward(ctx, grad, _grad_indices=None):
        (indices,) = ctx.saved_tensors
        shape, win = ctx.meta
        return MaxPool2dGrad.run(grad, shape, indices, win), None, None


def _max_pool_raw(x, out_shape, win):
    out = _empty(out_shape, x)
    indices = Tensor._empty(out_shape, D.int64, x.device)
    if out.numel():
        backends.get(x.device).max_pool2d(_as4d(out, False), _as4d(indices, False), _as4d(x, False), win)
    return out, indices


# ---- pooling: PyTorch's checks ---------------------------------------------------------------
def _cdiv(a: int, b: int) -> int:
    """C's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _pool_out(size: int, k: int, p: int, s: int, d: int, ceil: bool) -> int:
    """PyTorch's pooling_output_shape."""
    if s == 0:
        raise RuntimeError("stride should not be zero")
    if p < 0:
        raise RuntimeError(f"pad must be non-negative, but got pad: {p}")
    if p > _cdiv((k - 1) * d + 1, 2):
        raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, kernel_size={k} and "
                           f"dilation={d}")
    out = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    if ceil and (out - 1) * s >= size + p:
        out -= 1  # the last window must start inside the input or its left padding
    return out


def _pool_shape_check(x, k, s, p, d, out) -> None:
    """PyTorch's pool2d_shape_check."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw), (oh, ow) = k, s, p, d, out
    if kw <= 0 or kh <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kH: {kh} kW: {kw}")
    if sw <= 0 or sh <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got dH: {sh} dW: {sw}")
    if dh <= 0 or dw <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilationH: {dh} dilationW: {dw}")
    shape = x.shape
    valid = shape[1] != 0 and shape[2] != 0
    if not ((x.dim() == 3 and shape[0] != 0 and valid) or (x.dim() == 4 and valid and shape[3] != 0)):
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but "
                           f"got:{list(shape)}")
    if not (kw // 2 >= pw and kh // 2 >= ph):
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got padW = {pw}, padH = "
                           f"{ph}, kW = {kw}, kH = {kh}")
    if ow < 1 or oh < 1:
        c, h, w = shape[-3:]
        raise RuntimeError(f"Given input size: ({c}x{h}x{w}). Calculated output size: ({c}x{oh}x{ow}). Output size "
                           "is too small")


def _pool_param(op: str, value, name: str, allow_empty: bool = False) -> tuple:
    values = () if value is None else _ints(value, 2)
    if len(values) in (1, 2) or (allow_empty and not values):
        return values * 2 if len(values) == 1 else values
    what = {"kernel_size": "must either be a single int, or a tuple of two ints",
            "stride": "must either be omitted, a single int, or a tuple of two ints",
            "padding": "must either be a single int, or a tuple of two ints",
            "dilation": "must be either a single int, or a tuple of two ints"}[name]
    raise RuntimeError(f"{op}: {name} {what}")


def _pool_window(op, x, kernel_size, stride, padding, dilation, ceil_mode) -> Window:
    k = _pool_param(op, kernel_size, "kernel_size")
    s = _pool_param(op, stride, "stride", allow_empty=True) or k
    p = _pool_param(op, padding, "padding")
    d = _pool_param(op, dilation, "dilation") if dilation is not None else (1, 1)
    if op == "max_pool2d" and x.dim() not in (3, 4):
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    if op == "avg_pool2d":
        wrap_dim(-3, x.dim())  # PyTorch reads input.size(-3) first
    h, w = x.shape[-2:]
    out = (_pool_out(h, k[0], p[0], s[0], d[0], ceil_mode), _pool_out(w, k[1], p[1], s[1], d[1], ceil_mode))
    _pool_shape_check(x, k, s, p, d, out)
    return Window(k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1], out[0], out[1])


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """2-D max pooling of [N, C, H, W] or [C, H, W]; ``return_indices`` adds the flat h * W + w argmax per plane."""
    _check_tensor("max_pool2d", "input", 1, input)
    win = _pool_window("max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode)
    _check_float("max_pool2d", input)
    out_shape = tuple(input.shape[:-2]) + (win.oh, win.ow)
    if needs_graph(input):
        out, indices = MaxPool2d.apply(input, out_shape, win)
    else:
        out, indices = _max_pool_raw(input, out_shape, win)
    return (out, indices) if return_indices else out


def _check_dim_range(op: str, x, lo: int, hi: int) -> None:
    if not lo <= x.dim() < hi:
        raise RuntimeError(f"Expected {lo} to {hi - 1} dimensions, but got {x.dim()}-dimensional tensor for argument "
                           f"#1 'self' (while checking arguments for {op})")


def _one(op: str, name: str, value) -> int:
    values = _ints(value, 1)
    if len(values) != 1:
        raise RuntimeError(f"{op}() argument '{name}' should contain one int (got {len(values)})")
    return values[0]


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """1-D max pooling of [N, C, L] or [C, L] (run as 2-D pooling with a 1-row window)."""
    _check_tensor("max_pool1d", "input", 1, input)
    shape = input.shape
    if not ((input.dim() == 2 and shape[0] and shape[1]) or (input.dim() == 3 and shape[1] and shape[2])):
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
                           f"input, but got:{list(shape)}")
    sizes = {}
    for name, value in (("kernel_size", kernel_size), ("stride", stride), ("padding", padding), ("dilation", dilation)):
        v = () if value is None else _ints(value, 1)
        if len(v) != 1 and not (name == "stride" and not v):
            what = {"kernel_size": "an int, list of ints or tuple of ints", "stride": "None, an int, list of ints, or "
                    "tuple of ints"}.get(name, "an int, list of ints, or tuple of ints")
            raise RuntimeError(f"max_pool1d() {name} must be {what} of size 1 but got size {len(v)}")
        sizes[name] = v[0] if v else None
    k, p, d = sizes["kernel_size"], sizes["padding"], sizes["dilation"]
    s = k if sizes["stride"] is None else sizes["stride"]
    for name, bad, value in (("kernel_size", k <= 0, k), ("stride", s <= 0, s)):
        if bad:
            raise RuntimeError(f"max_pool1d() {name} must be greater than zero, but got {value}")
    if p < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p}")
    if p > k // 2:
        raise RuntimeError(f"max_pool1d() padding should be at most half of kernel size, but got padding={p} and "
                           f"kernel_size={k}")
    if d <= 0:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d}")
    out = _pool_out(shape[-1], k, p, s, d, ceil_mode)
    if out <= 0:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {out}")
    result = max_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, p), (1, d), ceil_mode, return_indices)
    if return_indices:
        return result[0].squeeze(-2), result[1].squeeze(-2)
    return result.squeeze(-2)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """2-D average pooling of [N, C, H, W] or [C, H, W], with PyTorch's divisor rules."""
    _check_tensor("avg_pool2d", "input", 1, input)
    if divisor_override is not None and divisor_override == 0:
        for name, value in (("kernel_size", kernel_size), ("stride", stride), ("padding", padding)):
            _pool_param("avg_pool2d", value, name, allow_empty=name == "stride")
        raise RuntimeError("divisor must be not zero")
    win = _pool_window("avg_pool2d", input, kernel_size, stride, padding, None, ceil_mode)
    _check_float("avg_pool2d", input)
    out_shape = tuple(input.shape[:-2]) + (win.oh, win.ow)
    return AvgPool2d.run(input, out_shape, win, bool(count_include_pad), divisor_override)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """1-D average pooling of [N, C, L] or [C, L]."""
    _check_tensor("avg_pool1d", "input", 1, input)
    stride = kernel_size if stride is None or (not isinstance(stride, Integral) and not len(stride)) else stride
    _check_dim_range("avg_pool1d", input, 2, 4)
    k, s, p = (_one("avg_pool1d", n, v) for n, v in (("kernel_size", kernel_size), ("stride", stride),
                                                     ("padding", padding)))
    return avg_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, p), ceil_mode, count_include_pad).squeeze(-2)


def adaptive_avg_pool2d(input, output_size):
    """Average pooling to a fixed [oh, ow] (an int for both; None keeps the input's size)."""
    _check_tensor("adaptive_avg_pool2d", "input", 1, input)
    if isinstance(output_size, Integral):
        size = (int(output_size),) * 2
    else:
        size = tuple(output_size)
        if input.dim() <= len(size):
            raise ValueError(f"Input dimension should be at least {len(size) + 1}")
        size = tuple(input.shape[-len(size) + i] if v is None else int(v) for i, v in enumerate(size))
    if len(size) != 2:
        raise RuntimeError("adaptive_avg_pool2d: output_size must be 2")
    if size[0] < 0 or size[1] < 0:
        raise RuntimeError("adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but "
                           f"received {{{size[0]}, {size[1]}}}")
    if input.dim() not in (3, 4):
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {list(input.shape)}")
    for d in (-2, -1):
        if input.shape[d] <= 0:
            raise RuntimeError("adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, "
                               f"but input has sizes {list(input.shape)} with dimension {d + input.dim()} being empty")
    _check_float("adaptive_avg_pool2d", input)
    return AdaptiveAvgPool2d.run(input, tuple(input.shape[:-2]) + size)


def adaptive_avg_pool1d(input, output_size):
    """Average pooling of [N, C, L] or [C, L] to a fixed length."""
    _check_tensor("adaptive_avg_pool1d", "input", 1, input)
    _check_dim_range("adaptive_avg_pool1d", input, 2, 4)
    size = _one("adaptive_avg_pool1d", "output_size", output_size)
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, size)).squeeze(-2)


def install(T) -> None:
    """PyTorch has none of these as Tensor methods (``Tensor.unfold`` is a different op)."""


# a list or a number where a tensor belongs raises PyTorch's TypeError (see guard.py)
tensor_first(globals(), FUNCTIONAL)
