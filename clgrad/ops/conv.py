"""Convolution, pooling and interpolation, forward and backward, with PyTorch's argument checks and messages.

Convolutions run as im2col + the batched matmul primitive (col2im for transposed ones and input gradients), so they
get every matmul improvement. Measured on PoCL (batch 64, forward): conv 10->20 k5 on 12x12 2.6 ms against 3.4 ms
for a direct kernel (one work-item per output row x 10 channels, float16 vectors); conv 1->10 k5 on 28x28 3.6 ms
against 1.1 ms direct, but 0.8 ms with an 8-row matmul tile for its M = 10 (matmul's 64-row tile wastes most of its
work there). Every 2-D primitive works on [N, C, H, W]; 1-D ops run as 2-D ones with H = 1. Each op is a ``Function`` whose backward is
written in these same ops, so gradients of gradients work: a convolution's input gradient is a transposed
convolution, its weight gradient a ``ConvWeight`` (bilinear, its own gradients are convolutions again), and each
linear pooling/interpolation op has its adjoint as backward, whose backward is the op again.
"""
from __future__ import annotations

from numbers import Integral

from .. import backends
from .. import dtypes as D
from ..autograd.function import Function
from ..autograd.graph import needs_graph
from ..backends.cpu_conv import Window
from ..tensor import Tensor
from . import pointwise as P
from . import shape as S
from .guard import tensor_first
from .reduction import sum as reduce_sum
from .views import contiguous_strides, wrap_dim

__all__ = ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "max_pool1d", "max_pool2d", "avg_pool1d",
           "adaptive_avg_pool1d"]
FUNCTIONAL = __all__ + ["avg_pool2d", "adaptive_avg_pool2d"]


def _empty(shape, like):
    return Tensor._empty(shape, like.dtype, like.device)


def _as4d(t, batched: bool = True):
    """A raw [N, C, H, W] view: [N, C, L] -> [N, C, 1, L] when ``batched``, else an unbatched [C, H, W]."""
    if t.dim() == 4:
        return t
    if batched:
        return t._view((t.shape[0], t.shape[1], 1, t.shape[2]), (t._strides[0], t._strides[1], 0, t._strides[2]))
    return t._view((1,) + tuple(t.shape), (0,) + tuple(t._strides))


def _check_float(op: str, *tensors) -> None:
    for t in tensors:
        if t is not None and t.dtype.kind != "f":
            raise P.unsupported(op, t.dtype, t.device)


def _check_tensor(op: str, name: str, pos: int, x, optional: bool = False) -> None:
    if not (P.is_tensor(x) or (optional and x is None)):
        what = "Tensor" + (" or None" if optional else "")
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be {what}, not {type(x).__name__}")


def _ints(value, n: int) -> tuple:
    """An int or a sequence of ints as a tuple, the int repeated ``n`` times (PyTorch's IntArrayRef[n])."""
    if isinstance(value, Integral) and not isinstance(value, bool):
        return (int(value),) * n
    return tuple(int(v) for v in value)


# ---- convolution: raw computations ------------------------------------------------------------
def _batched_weights(wm, n: int):
    """[groups, M, K] weight matrices as the [n * groups, M, K] operand of one batched matmul."""
    groups, m, k = wm.shape
    if groups == 1:
        return wm._view((n, m, k), (0,) + tuple(wm._strides[1:]))
    if n == 1:
        return wm
    return S.expand(S.unsqueeze(wm, 0), (n, groups, m, k)).contiguous()._view((n * groups, m, k), (m * k, k, 1))


def _columns(x4, win: Window):
    """im2col of x4 as a contiguous [N, C*kh*kw, oh*ow]; a 1x1 window that covers the input needs no copy."""
    n, c, h, w = x4.shape
    if win[:8] == (1, 1, 1, 1, 0, 0, 1, 1) and (win.oh, win.ow) == (h, w):
        return S.reshape(x4, n, c, h * w).contiguous()
    cols = _empty((n, c * win.kh * win.kw, win.oh * win.ow), x4)
    backends.get(x4.device).im2col(cols, x4, win)
    return cols


def _add_bias(out, bias):
    if bias is not None and out.numel():
        backends.get(out.device).conv_bias(out, bias)
    return out


def _conv_raw(x, w, bias, win: Window, groups: int, keep: list | None = None):
    """conv(x, w): x [N, C, (H,) W], w [Co, C/groups, (kh,) kw] -> [N, Co, (oh,) ow]; the column matrix is
    appended to ``keep`` when given (the weight gradient reuses it)."""
    x4, w4 = _as4d(x), _as4d(w)
    n, c = x4.shape[:2]
    co = w4.shape[0]
    kg, cog, length = c // groups * win.kh * win.kw, co // groups, win.oh * win.ow
    out = _empty((n, co, win.oh, win.ow), x)
    if out.numel() and kg:
        cols = _columns(x4, win)
        if keep is not None:
            keep.append(cols)
        a = _batched_weights(S.reshape(w4, groups, cog, kg), n)
        b = cols._view((n * groups, kg, length), (kg * length, length, 1))
        backends.get(x.device).matmul(out._view((n * groups, cog, length), (cog * length, length, 1)), a, b)
    elif out.numel():
        P.fill(out, 0)
    _add_bias(out, bias)
    return out if x.dim() == 4 else out._view((n, co, win.ow), (co * win.ow, win.ow, 1))


def _conv_t_raw(x, w, bias, win: Window, groups: int, size: tuple):
    """conv_transpose(x, w): the adjoint of conv with window ``win`` from the output (spatial ``size``) to x."""
    x4, w4 = _as4d(x), _as4d(w)
    n, cin = x4.shape[:2]
    cog, k = w4.shape[1], win.kh * win.kw
    cgin, co, length = cin // groups, cog * groups, win.oh * win.ow
    h, wd = (1,) + tuple(size) if len(size) == 1 else size
    out = _empty((n, co, h, wd), x)
    if out.numel() and cgin:
        wm = S.reshape(w4, groups, cgin, cog * k)
        a = _batched_weights(wm._view((groups, cog * k, cgin), (wm._strides[0], wm._strides[2], wm._strides[1])), n)
        xm = S.reshape(x4, n, cin, length)
        b = xm if groups == 1 else xm.contiguous()._view((n * groups, cgin, length), (cgin * length, length, 1))
        cols = _empty((n * groups, cog * k, length), x)
        be = backends.get(x.device)
        be.matmul(cols, a, b)
        be.col2im(out, cols._view((n, co * k, length), (co * k * length, length, 1)), win)
    elif out.numel():
        P.fill(out, 0)
    _add_bias(out, bias)
    return out if x.dim() == 4 else out._view((n, co, wd), (co * wd, wd, 1))


def _conv_weight_raw(x, gy, win: Window, groups: int, wshape: tuple, cols=None):
    """The weight gradient of <gy, conv(x, w)>: sum over the batch of gy[n] @ im2col(x)[n]^T, per group."""
    x4, g4 = _as4d(x), _as4d(gy)
    n, c = x4.shape[:2]
    co = g4.shape[1]
    kg, cog, length = c // groups * win.kh * win.kw, co // groups, win.oh * win.ow
    if n * length == 0 or kg == 0:
        return P.fill(_empty(wshape, x), 0)
    if groups == 1:
        return S.reshape(_weight_sum(x4, S.reshape(g4, n, co, length), win, cols), *wshape)
    cols = _columns(x4, win)
    gm = S.reshape(g4, n, co, length)
    a = gm if groups == 1 else gm.contiguous()._view((n * groups, cog, length), (cog * length, length, 1))
    b = cols._view((n * groups, length, kg), (kg * length, 1, length))
    prod = _empty((n * groups, cog, kg), x)
    backends.get(x.device).matmul(prod, a, b)
    total = prod._view((co * kg,), (1,)) if n == 1 else reduce_sum(prod._view((n, co * kg), (co * kg, 1)), 0)
    return S.reshape(total, *wshape)


# Weight-gradient work-groups to aim for per launch (assuming 16 x 64 tiles): enough for every core, few partial
# sums to add up after. On PoCL the MNIST weight gradients took 1.2-1.5 ms as 64 per-sample products + a sum.
WEIGHT_CHUNK_GROUPS = 16
KEEP_COLS_BYTES = 64 << 20  # the largest column matrix a convolution keeps from forward for its weight gradient


def _weight_sum(x4, gm, win: Window, cols=None):
    """sum over n of gm[n] [Co, L] @ im2col(x4)[n]^T, the batch summed inside the product in a few chunks
    (``cols``: im2col(x4) when the forward kept it)."""
    n, co, length = gm.shape
    kg = x4.shape[1] * win.kh * win.kw
    cols = _columns(x4, win) if cols is None else cols
    tiles = -(-co // 16) * -(-kg // 64)
    chunks = max(1, min(n, -(-WEIGHT_CHUNK_GROUPS // tiles)))
    chunks = -(-n // -(-n // chunks))  # no empty chunks
    part = _empty((chunks, co, kg), x4)
    backends.get(x4.device).matmul_sum(part, gm, cols._view((n, length, kg), (kg * length, 1, length)))
    return part._view((co, kg), (kg, 1)) if chunks == 1 else reduce_sum(part, 0)


# ---- convolution: autograd ----------------------------------------------------------------------
class Convolution(Function):
    """conv (``transposed`` False) or transposed conv of x with w, plus bias."""

    node_name = "ConvolutionBackward0"

    @staticmethod
    def forward(ctx, x, w, bias, win, groups, transposed, size):
        ctx.meta = (win, groups, transposed, tuple(x.shape[2:]))
        ctx.save_for_backward(x, w)
        if transposed or groups != 1 or not w.requires_grad:
            ctx.cols = None
            return _convolve(x, w, bias, win, groups, transposed, size)
        # the weight gradient needs im2col(x) again: keep the forward's (the MNIST step's two recomputations cost
        # ~0.5 ms on PoCL) unless it is large
        keep = []
        out = _conv_raw(x, w, bias, win, groups, keep)
        ctx.cols = keep[0] if keep and keep[0].numel() * keep[0].dtype.itemsize <= KEEP_COLS_BYTES else None
        return out

    @staticmethod
    def backward(ctx, gy):
        x, w = ctx.saved_tensors
        win, groups, transposed, xsize = ctx.meta
        gx = gw = gb = None
        if ctx.needs_input_grad[0]:
            gx = _conv_any(gy, w, None, win, groups, not transposed, xsize)
        cols, ctx.cols = getattr(ctx, "cols", None), None  # a second backward (retain_graph) recomputes it
        if ctx.needs_input_grad[1]:
            # a transposed conv is the adjoint of a conv from its output to its input, with the same weight
            gw = _weight_any(gy, x, win, groups, w.shape) if transposed else _weight_any(x, gy, win, groups, w.shape,
                                                                                          cols)
        if ctx.needs_input_grad[2]:
            gb = gy.sum((0, 2, 3) if gy.dim() == 4 else (0, 2))
        return gx, gw, gb, None, None, None, None


class ConvWeight(Function):
    """The weight gradient as a function of (x, gy): bilinear, so its gradients are convolutions with ggw."""

    node_name = "ConvolutionBackwardBackward0"

    @staticmethod
    def forward(ctx, x, gy, win, groups, wshape):
        ctx.meta = (win, groups, tuple(x.shape[2:]))
        ctx.save_for_backward(x, gy)
        return _conv_weight_raw(x, gy, win, groups, wshape)

    @staticmethod
    def backward(ctx, ggw):
        x, gy = ctx.saved_tensors
        win, groups, xsize = ctx.meta
        gx = _conv_any(gy, ggw, None, win, groups, True, xsize) if ctx.needs_input_grad[0] else None
        ggy = _conv_any(x, ggw, None, win, groups, False, None) if ctx.needs_input_grad[1] else None
        return gx, ggy, None, None, None


def _convolve(x, w, bias, win, groups, transposed, size):
    return _conv_t_raw(x, w, bias, win, groups, size) if transposed else _conv_raw(x, w, bias, win, groups)


def _conv_any(x, w, bias, win, groups, transposed, size):
    if needs_graph(x, w, bias):
        return Convolution.apply(x, w, bias, win, groups, transposed, size)
    return _convolve(x, w, bias, win, groups, transposed, size)


def _weight_any(x, gy, win, groups, wshape, cols=None):
    if needs_graph(x, gy):
        return ConvWeight.apply(x, gy, win, groups, tuple(wshape))
    return _conv_weight_raw(x, gy, win, groups, tuple(wshape), cols)


# ---- convolution: PyTorch's checks ------------------------------------------------------------
def _batchify(op: str, x, dims: int):
    if x.dim() not in (dims + 1, dims + 2):
        raise RuntimeError(f"Expected {dims + 1}D (unbatched) or {dims + 2}D (batched) input to {op}, but got input "
                           f"of size: {list(x.shape)}")
    return x.dim() == dims + 2


def _expand_param(values: tuple, name: str, dims: int) -> tuple:
    if len(values) == 1:
        return values * dims
    if len(values) != dims:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {dims} values to match the "
                           f"convolution dimensions, but got {name}={list(values)}")
    return values


def _check_conv_shapes(x, w, bias, stride, padding, dilation, groups, transposed, output_padding):
    """PyTorch's check_shape_forward (x is batched)."""
    ws = list(w.shape)
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got {list(dilation)}")
    if w.dim() != x.dim():
        raise RuntimeError(f"Expected {w.dim()}-dimensional input for {w.dim()}-dimensional weight {ws}, but got "
                           f"{x.dim()}-dimensional input of size {list(x.shape)} instead")
    if ws[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, but got "
                           f"weight of size {ws} instead")
    if ws[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                           f"got weight of size [{ws}] instead")
    if transposed:
        if x.shape[1] != ws[0]:
            raise RuntimeError(f"Given transposed=1, weight of size {ws}, expected input{list(x.shape)} to have "
                               f"{ws[0]} channels, but got {x.shape[1]} channels instead")
        if bias is not None and (bias.dim() != 1 or bias.shape[0] != ws[1] * groups):
            raise RuntimeError(f"Given transposed=1, weight of size {ws}, expected bias to be 1-dimensional with "
                               f"{ws[1] * groups} elements, but got bias of size {list(bias.shape)} instead")
        return
    if x.shape[1] != ws[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {ws}, expected input{list(x.shape)} to have "
                           f"{ws[1] * groups} channels, but got {x.shape[1]} channels instead")
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != ws[0]):
        raise RuntimeError(f"Given weight of size {ws}, expected bias to be 1-dimensional with {ws[0]} elements, but "
                           f"got bias of size {list(bias.shape)} instead")
    padded = [n + 2 * p for n, p in zip(x.shape[2:], padding)]
    kernel = [d * (k - 1) + 1 for d, k in zip(dilation, ws[2:])]
    if any(i < k for i, k in zip(padded, kernel)):
        raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel "
                           f"size: ({' x '.join(map(str, kernel))}). Kernel size can't be greater than actual input "
                           "size")


def _check_dtypes(x, w) -> None:
    if w.dtype is not x.dtype:
        raise RuntimeError(f"expected scalar type {x.dtype.scalar_name} but found {w.dtype.scalar_name}")


def _window(kernel, stride, pad_before, dilation, out) -> Window:
    """The 2-D window of a 1-D or 2-D geometry (1-D gets a trivial height)."""
    if len(kernel) == 1:
        return Window(1, kernel[0], 1, stride[0], 0, pad_before[0], 1, dilation[0], 1, out[0])
    return Window(kernel[0], kernel[1], stride[0], stride[1], pad_before[0], pad_before[1], dilation[0],
                  dilation[1], out[0], out[1])


def _conv_prologue(op, dims, input, weight, bias, groups):
    """PyTorch's checks that come before the geometry: argument types, bias dtype, input rank, groups.
    Returns the batched input, whether the input was batched, and the weight's spatial rank."""
    _check_tensor(op, "input", 1, input)
    _check_tensor(op, "weight", 2, weight)
    _check_tensor(op, "bias", 3, bias, optional=True)
    if bias is not None and bias.dtype is not input.dtype:
        raise RuntimeError(f"Input type ({input.dtype.cpp_name}) and bias type ({bias.dtype.cpp_name}) "
                           "should be the same")
    batched = _batchify(op, input, dims)
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    return (input if batched else input.unsqueeze(0)), batched, weight.dim() - 2


def _conv_epilogue(op, x, weight, bias) -> None:
    _check_dtypes(x, weight)
    _check_float(op, x)
    P.common_device([x, weight] + ([bias] if bias is not None else []))


def _conv_nd(op, dims, input, weight, bias, stride, padding, dilation, groups):
    x, batched, k = _conv_prologue(op, dims, input, weight, bias, groups)
    stride, dilation = _expand_param(_ints(stride, dims), "stride", k), _expand_param(_ints(dilation, dims), "dilation", k)
    before = None
    if isinstance(padding, str):
        before, padding = _string_padding(padding, weight, stride, dilation, k)
    padding = _expand_param(_ints(padding, dims), "padding", k)
    _check_conv_shapes(x, weight, bias, stride, padding, dilation, groups, False, (0,) * k)
    _conv_epilogue(op, x, weight, bias)
    if before is None:
        before = padding
        out = [(n + 2 * p - d * (kk - 1) - 1) // s + 1
               for n, p, d, kk, s in zip(x.shape[2:], padding, dilation, weight.shape[2:], stride)]
    else:
        out = list(x.shape[2:])
    y = _conv_any(x, weight, bias, _window(tuple(weight.shape[2:]), stride, before, dilation, out), groups, False, None)
    return y if batched else y.squeeze(0)


def _string_padding(padding: str, weight, stride, dilation, k):
    """'valid' is no padding; 'same' pads d*(k-1) in total, the odd one on the right (PyTorch pads the input)."""
    if padding == "valid":
        return None, 0
    if padding != "same":
        raise RuntimeError(f"Invalid padding string: '{padding}'")
    if any(s != 1 for s in stride):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    total = [d * (kk - 1) for d, kk in zip(dilation, weight.shape[2:])]
    before = tuple(t // 2 for t in total)
    return before, tuple(max(t - t // 2, t // 2) for t in total)  # the larger side, for the kernel-size check


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution of [N, C, L] (or unbatched [C, L]) with weight [Co, C/groups, k]: ``F.conv1d(x, w)``."""
    return _conv_nd("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution of [N, C, H, W] (or unbatched [C, H, W]) with weight [Co, C/groups, kh, kw].

    >>> F.conv2d(clgrad.ones(1, 1, 5, 5), clgrad.ones(2, 1, 3, 3), padding='same').shape
    clgrad.Size([1, 2, 5, 5])
    """
    return _conv_nd("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose_nd(op, dims, input, weight, bias, stride, padding, output_padding, groups, dilation):
    if isinstance(padding, str):
        raise TypeError(f"{op}(): argument 'padding' must be tuple of ints, not str")
    x, batched, k = _conv_prologue(op, dims, input, weight, bias, groups)
    stride, padding = _expand_param(_ints(stride, dims), "stride", k), _expand_param(_ints(padding, dims), "padding", k)
    dilation = _expand_param(_ints(dilation, dims), "dilation", k)
    output_padding = _expand_param(_ints(output_padding, dims), "output_padding", k)
    _check_conv_shapes(x, weight, bias, stride, padding, dilation, groups, True, output_padding)
    _conv_epilogue(op, x, weight, bias)
    names = ("height", "width")[-k:]
    if not all(o < s or o < d for o, s, d in zip(output_padding, stride, dilation)):
        parts = [f"output_padding_{n}: {o}" for n, o in zip(names, output_padding)]
        parts += [f"stride_{n}: {s}" for n, s in zip(names, stride)] + [f"dilation_{n}: {d}" for n, d in zip(names, dilation)]
        raise RuntimeError("output padding must be smaller than either stride or dilation, but got " + " ".join(parts))
    size = [(n - 1) * s - 2 * p + d * (kk - 1) + o + 1
            for n, s, p, d, kk, o in zip(x.shape[2:], stride, padding, dilation, weight.shape[2:], output_padding)]
    if any(n < 1 for n in size):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, x.shape[2:]))}). Calculated output "
                           f"size per channel: ({' x '.join(map(str, size))}). Output size is too small")
    win = _window(tuple(weight.shape[2:]), stride, padding, dilation, tuple(x.shape[2:]))
    y = _conv_any(x, weight, bias, win, groups, True, tuple(size))
    return y if batched else y.squeeze(0)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """1-D transposed convolution; weight is [C, Co/groups, k]."""
    return _conv_transpose_nd("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
                              dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """2-D transposed convolution (the input gradient of conv2d); weight is [C, Co/groups, kh, kw]."""
    return _conv_transpose_nd("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
                              dilation)


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
