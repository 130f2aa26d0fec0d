"""Convolutions (1-D, 2-D, transposed), forward and backward, with PyTorch's argument checks and messages.

Convolutions run as im2col + the batched matmul primitive (col2im for transposed ones and input gradients), so they
get every matmul improvement. Measured on PoCL (batch 64, forward): conv 10->20 k5 on 12x12 2.6 ms against 3.4 ms
for a direct kernel (one work-item per output row x 10 channels, float16 vectors); conv 1->10 k5 on 28x28 3.6 ms
against 1.1 ms direct, but 0.8 ms with an 8-row matmul tile for its M = 10 (matmul's 64-row tile wastes most of its
work there). Every 2-D primitive works on [N, C, H, W]; 1-D ops run as 2-D ones with H = 1. Each op is a ``Function`` whose backward is
written in these same ops, so gradients of gradients work: a convolution's input gradient is a transposed
convolution, its weight gradient a ``ConvWeight`` (bilinear, its own gradients are convolutions again). Pooling is
in ``pooling.py``, interpolation and unfold/fold in ``resample.py``; both share this module's argument helpers.
"""
from __future__ import annotations

from numbers import Integral

from .. import backends
from .. import dtypes as D
from ..amp.policy import autocast_lower
from ..autograd.function import Function
from ..autograd.graph import needs_graph
from ..backends.cpu_conv import Window
from ..tensor import Tensor, is_tensor
from . import conv_fold
from . import pointwise as P
from . import shape as S
from .guard import tensor_first
from .reduction import sum as reduce_sum

__all__ = ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d"]
FUNCTIONAL = __all__


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
    if not (is_tensor(x) or (optional and x is None)):
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


def _fused(x, n: int, rows: int, taps: int, depth: int = 0):
    """The backend's implicit-GEMM convolutions (``fused_conv``) when it has them for x and a product of ``rows``
    output channels over ``taps``, ``depth`` terms deep (default ``taps``), with ``n`` output matrices (at most
    one launch's), else None."""
    fused = getattr(backends.get(x.device), "fused_conv", None)
    ok = fused is not None and n <= MAX_FUSED_BATCH and fused.usable(x, rows, taps, depth or taps)
    return fused if ok else None


def _conv_raw(x, w, bias, win: Window, groups: int, keep: list | None = None):
    """conv(x, w): x [N, C, (H,) W], w [Co, C/groups, (kh,) kw] -> [N, Co, (oh,) ow]; the column matrix is
    appended to ``keep`` when given (the weight gradient reuses it)."""
    x4, w4 = _as4d(x), _as4d(w)
    n, c = x4.shape[:2]
    co = w4.shape[0]
    kg, cog, length = c // groups * win.kh * win.kw, co // groups, win.oh * win.ow
    if conv_fold.folds(win, groups) and n * co * win.oh * win.ow and kg:  # few positions: one product for the batch
        out = conv_fold.conv(x4, w4, win)
        _add_bias(out, bias)
        return out if x.dim() == 4 else out._view((n, co, win.ow), (co * win.ow, win.ow, 1))
    out = _empty((n, co, win.oh, win.ow), x)
    fused = _fused(x, n * groups, cog, kg) if out.numel() and kg else None
    if fused is not None:  # the product reads x through the im2col map and adds the bias in its store
        fused.conv(out, x4, S.reshape(w4, groups, cog, kg).contiguous(), _bias_arg(bias), win, groups)
        return out if x.dim() == 4 else out._view((n, co, win.ow), (co * win.ow, win.ow, 1))
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
    if conv_fold.folds(win, groups) and n * co * h * wd and cgin and length:
        out = _empty((n, co, h, wd), x)
        conv_fold.transposed(out, x4, w4, win)
        _add_bias(out, bias)
        return out if x.dim() == 4 else out._view((n, co, wd), (co * wd, wd, 1))
    fused = _fused(x, n * groups, cog, cgin * k) if win.sh == win.sw == 1 and cgin and n * cin else None
    if fused is not None:  # stride 1: a convolution with the flipped weight, no column matrix
        out = _conv_flipped(fused, x4, w4, bias, win, groups, (h, wd))
        return out if x.dim() == 4 else out._view((n, co, wd), (co * wd, wd, 1))
    out = _empty((n, co, h, wd), x)
    if out.numel() and cgin:
        wm = S.reshape(w4, groups, cgin, cog * k)
        wt = wm._view((groups, cog * k, cgin), (wm._strides[0], wm._strides[2], wm._strides[1]))
        # one group: the weight's transpose as a (small) row-major copy, whose tiles the product copies faster (MNIST
        # ~2%); several groups get one from _batched_weights already
        a = _batched_weights(wt.contiguous() if groups == 1 else wt, n)
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


def _bias_arg(bias):
    return None if bias is None else bias.contiguous()


def _conv_flipped(fused, x4, w4, bias, win: Window, groups: int, size: tuple):
    """A stride-1 transposed convolution as a convolution of x4 with the flipped, transposed weight: output (h, w)
    reads x4 at (h - (dh*(kh-1) - ph) + ki*dh, ...), so the implicit-GEMM kernel needs no column matrix either."""
    cin, cog, kh, kw = w4.shape
    cg = cin // groups
    s0, s1, s2, s3 = w4._strides
    flipped = w4._view((groups, cog, cg, kh, kw), (cg * s0, s1, s0, -s2, -s3),
                       w4._offset + (kh - 1) * s2 + (kw - 1) * s3).contiguous()
    h, wd = size
    fwin = Window(kh, kw, 1, 1, win.dh * (kh - 1) - win.ph, win.dw * (kw - 1) - win.pw, win.dh, win.dw, h, wd)
    out = _empty((x4.shape[0], cog * groups, h, wd), x4)
    taps = cg * kh * kw
    fused.conv(out, x4, flipped._view((groups, cog, taps), (cog * taps, taps, 1)), _bias_arg(bias), fwin, groups)
    return out


def _conv_weight_raw(x, gy, win: Window, groups: int, wshape: tuple, cols=None):
    """The weight gradient of <gy, conv(x, w)>: sum over the batch of gy[n] @ im2col(x)[n]^T, per group."""
    x4, g4 = _as4d(x), _as4d(gy)
    n, c = x4.shape[:2]
    co = g4.shape[1]
    kg, cog, length = c // groups * win.kh * win.kw, co // groups, win.oh * win.ow
    if n * length == 0 or kg == 0:
        return P.fill(_empty(wshape, x), 0)
    if conv_fold.folds(win, groups):
        return S.reshape(conv_fold.weight(x4, g4, win), *wshape)
    fused = _fused(x, 1, co, kg, n * length) if groups == 1 and cols is None else None
    if fused is not None:  # the batch-summed product reads x through the im2col map
        part = _empty((fused.weight_chunks(n, co, kg), co, kg), x)
        fused.conv_weight(part, x4, S.reshape(g4, n, co, length).contiguous(), win)
        total = part._view((co, kg), (kg, 1)) if part.shape[0] == 1 else reduce_sum(part, 0)
        return S.reshape(total, *wshape)
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
FLIP_TAPS = 4  # _weight_sum multiplies cols @ gy^T from this many taps per output channel
MAX_FUSED_BATCH = 65535  # output matrices of one implicit-GEMM launch (the grid's 3rd dimension)


def _weight_sum(x4, gm, win: Window, cols=None):
    """sum over n of gm[n] [Co, L] @ im2col(x4)[n]^T, the batch summed inside the product in a few chunks
    (``cols``: im2col(x4) when the forward kept it)."""
    n, co, length = gm.shape
    kg = x4.shape[1] * win.kh * win.kw
    cols = _columns(x4, win) if cols is None else cols
    # many taps over few channels (MNIST's conv2: 250 over 20) multiply the other way round, dW^T = cols @ gy^T,
    # both operands row-major (gy^T is a copy the size of gy): on PoCL 0.6 against 1.0 ms; with few taps (conv1: 25
    # over 10) the product's 10 columns waste most of its tile (0.8 against 0.56 ms)
    flip = kg >= FLIP_TAPS * co
    m, cn = (kg, co) if flip else (co, kg)
    tiles = -(-m // 16) * -(-cn // 64)
    chunks = max(1, min(n, -(-WEIGHT_CHUNK_GROUPS // tiles)))
    chunks = -(-n // -(-n // chunks))  # no empty chunks
    part = _empty((chunks, m, cn), x4)
    if flip:
        backends.get(x4.device).matmul_sum(part, cols, S.permute(gm, 0, 2, 1).contiguous())
    else:
        backends.get(x4.device).matmul_sum(part, gm, cols._view((n, length, kg), (kg * length, 1, length)))
    total = part._view((m, cn), (cn, 1)) if chunks == 1 else reduce_sum(part, 0)
    return S.permute(total, 1, 0) if flip else total


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
    if w.dtype is x.dtype:
        return
    if x.dtype is D.float16:  # PyTorch's CPU conv checks a half input on another path, with its own words
        raise RuntimeError(f"Input type (torch.{x.dtype.tensor_type_name}) and weight type "
                           f"(torch.{w.dtype.tensor_type_name}) should be the same or input should be a MKLDNN "
                           "tensor and weight is a dense tensor")
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


@autocast_lower
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution of [N, C, L] (or unbatched [C, L]) with weight [Co, C/groups, k]: ``F.conv1d(x, w)``."""
    return _conv_nd("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


@autocast_lower
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


@autocast_lower
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """1-D transposed convolution; weight is [C, Co/groups, k]."""
    return _conv_transpose_nd("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
                              dilation)


@autocast_lower
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """2-D transposed convolution (the input gradient of conv2d); weight is [C, Co/groups, kh, kw]."""
    return _conv_transpose_nd("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
                              dilation)


def install(T) -> None:
    """PyTorch has none of these as Tensor methods."""


# a list or a number where a tensor belongs raises PyTorch's TypeError (see guard.py)
tensor_first(globals(), FUNCTIONAL)
