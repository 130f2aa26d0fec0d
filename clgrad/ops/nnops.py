"""Neural-network functional ops: the softmax family, losses, embedding, dropout, normalization and linear,
with autograd Functions named as PyTorch names their nodes (``SoftmaxBackward0``, ``NllLossBackward0``...).

Fused kernels do what compositions do badly: the row-wise softmax (one read for max and sum, one write),
nll_loss's class pick with a device-side bounds check, embedding's gather and its duplicate-safe accumulation,
and normalization moments (Welford; float32 for float16). Everything else composes clgrad ops, and backward
formulas are written in clgrad ops too, so they are differentiable themselves.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from .. import backends
from .. import dtypes as D
from ..autograd.function import Function
from ..autograd.grad_mode import no_grad
from ..autograd.graph import needs_graph
from ..random import bernoulli_
from ..tensor import Tensor
from . import math as M
from . import pointwise as P
from .creation import arange, ones, zeros
from .guard import tensor_first, user_stacklevel
from .linalg import matmul, matmul_bias
from .views import wrap_dim

# names PyTorch has at top level (clgrad.X); each also takes PyTorch's top-level signature (see the functions)
__all__ = ["softmax", "log_softmax", "dropout", "feature_dropout", "embedding", "batch_norm", "layer_norm",
           "group_norm", "bilinear"]
# names that belong in clgrad.nn.functional (F.X)
FUNCTIONAL = ["softmax", "log_softmax", "softmin", "embedding", "dropout", "dropout1d", "dropout2d", "dropout3d",
              "batch_norm", "layer_norm", "group_norm", "linear", "bilinear", "one_hot", "normalize"]


def _empty(shape, dt: D.dtype, dev):
    return Tensor._empty(tuple(shape), dt, dev)


def _backend(t):
    return backends.get(t.device)


def _as_rows(t):
    """A 0-dim tensor as a 1-element row (kernels see at least one dim)."""
    return t._view((1,), (1,)) if t.dim() == 0 else t


# ---- softmax family ----------------------------------------------------------------------------
def _softmax_args(name: str, input, dim, stacklevel, dtype):
    if isinstance(stacklevel, D.dtype):  # torch.softmax(x, dim, dtype) passes the dtype third
        dtype = stacklevel
    if dim is None:
        warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
                      "dim=X as an argument.", stacklevel=user_stacklevel())
        dim = 0 if input.dim() in (0, 1, 3) else 1
    return wrap_dim(dim, input.dim()), None if dtype is None else D.as_dtype(dtype)


def _softmax_out(mode: str, x, dim: int, dtype):
    """One fused kernel: ``mode`` ('softmax' / 'log_softmax') of ``x`` along ``dim``, computed in ``dtype``."""
    dt = x.dtype if dtype is None else dtype
    if dt.kind != "f":
        raise P.unsupported(mode, dt, x.device)
    out = _empty(x.shape, dt, x.device)
    _backend(x).softmax(mode, _as_rows(out), (_as_rows(x),), dim)
    return out


def _softmax_grad(mode: str, grad, y, dim: int):
    """softmax: y * (g - sum(g * y)); log_softmax: g - exp(y) * sum(g). A fused kernel, or the same
    formula in clgrad ops when the gradient itself is being differentiated."""
    if needs_graph(grad, y):
        if mode == "softmax":
            return y * (grad - (grad * y).sum(dim, keepdim=True))
        return grad - y.exp() * grad.sum(dim, keepdim=True)
    grad = grad.to(y.dtype)
    out = _empty(y.shape, y.dtype, y.device)
    _backend(y).softmax(mode + "_backward", _as_rows(out), (_as_rows(grad), _as_rows(y)), dim)
    return out


class Softmax(Function):
    node_name = "SoftmaxBackward0"
    mode = "softmax"

    @classmethod
    def forward(cls, ctx, x, dim, dtype):
        y = _softmax_out(cls.mode, x, dim, dtype)
        ctx.dim, ctx.in_dtype = dim, x.dtype
        ctx.save_for_backward(y)
        return y

    @classmethod
    def backward(cls, ctx, grad):
        (y,) = ctx.saved_tensors
        return _softmax_grad(cls.mode, grad, y, ctx.dim).to(ctx.in_dtype), None, None


class LogSoftmax(Softmax):
    node_name = "LogSoftmaxBackward0"
    mode = "log_softmax"


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``exp(x) / sum(exp(x))`` along ``dim``, numerically stable; ``dtype`` casts first.

    >>> clgrad.softmax(clgrad.tensor([1.0, 2.0, 3.0]), dim=0)  # tensor([0.0900, 0.2447, 0.6652])
    """
    dim, dtype = _softmax_args("softmax", input, dim, _stacklevel, dtype)
    if needs_graph(input):
        return Softmax.apply(input, dim, dtype)
    return _softmax_out("softmax", input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``x - log(sum(exp(x)))`` along ``dim``, numerically stable: ``F.log_softmax(logits, dim=1)``."""
    dim, dtype = _softmax_args("log_softmax", input, dim, _stacklevel, dtype)
    if needs_graph(input):
        return LogSoftmax.apply(input, dim, dtype)
    return _softmax_out("log_softmax", input, dim, dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """``softmax(-x)`` along ``dim``: ``F.softmin(x, dim=1)``."""
    dim, dtype = _softmax_args("softmin", input, dim, _stacklevel, dtype)
    return softmax(-input, dim, dtype=dtype)


class _Scratch:
    """A throwaway ctx: the no-graph path runs a Function's forward without recording anything."""

    def save_for_backward(self, *tensors) -> None:
        pass


def one_hot(tensor, num_classes=-1):
    """int64 one-hot encoding along a new last dim: ``F.one_hot(clgrad.tensor([0, 2]), 3)``."""
    if tensor.dtype is not D.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if tensor.numel() == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(tensor.max()) + 1
    if tensor.numel():
        if int(tensor.min()) < 0:
            raise RuntimeError("Class values must be non-negative.")
        if int(tensor.max()) >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    return (tensor.unsqueeze(-1) == arange(num_classes, device=tensor.device)).to(D.int64)




# ---- linear --------------------------------------------------------------------------------------
class Linear(Function):
    node_name = "LinearBackward0"

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        if bias is not None and x.dim() >= 1 and x.device == weight.device == bias.device \
                and x.dtype is weight.dtype is bias.dtype and x.dtype.kind == "f" and weight.dim() == 2 \
                and x.shape[-1] == weight.shape[1] and bias.dim() == 1 and bias.shape[0] == weight.shape[0]:
            return matmul_bias(x, weight.t(), bias)  # the bias added in the product's store: one kernel
        out = matmul(x, weight.t())
        return out if bias is None else P.apply("add", out, bias, out=out)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        need = ctx.needs_input_grad
        rows = grad.reshape(-1, weight.shape[0])
        gx = matmul(grad, weight) if need[0] else None
        gw = matmul(rows.t(), x.reshape(-1, weight.shape[1])) if need[1] else None
        gb = rows.sum(0) if len(need) > 2 and need[2] else None
        return gx, gw, gb


def linear(input, weight, bias=None):
    """``input @ weight.T + bias``: ``F.linear(x, w, b)`` for x [*, in], w [out, in], b [out]."""
    if needs_graph(input, weight, bias):
        return Linear.apply(input, weight, bias)
    return Linear.forward(_Scratch(), input, weight, bias)


def bilinear(input1, input2, weight, bias=None):
    """``x1^T A x2 + b`` for every output feature: x1 [*, in1], x2 [*, in2], weight [out, in1, in2]."""
    lead = tuple(input1.shape[:-1])
    x1, x2 = input1.reshape(-1, 1, 1, input1.shape[-1]), input2.reshape(-1, 1, input2.shape[-1])
    t = matmul(x1, weight.unsqueeze(0))  # [n, out, 1, in2]
    out = (t.squeeze(2) * x2).sum(-1)
    out = out if bias is None else out + bias
    return out.reshape(lead + (weight.shape[0],))


# ---- embedding -----------------------------------------------------------------------------------
def _embedding_args(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse):
    """``F.embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse)`` or
    ``torch.embedding(weight, indices, padding_idx=-1, scale_grad_by_freq, sparse)``: the indices are the
    integer tensor, so the two argument orders are told apart by dtype."""
    if input.dtype.kind == "f" and weight.dtype.kind != "f":
        input, weight = weight, input
        padding_idx = None if padding_idx is None or padding_idx < 0 else padding_idx
        if isinstance(max_norm, bool):
            scale_grad_by_freq, max_norm = max_norm, None
        if isinstance(norm_type, bool):
            sparse, norm_type = norm_type, 2.0
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    if input.dtype not in (D.int64, D.int32):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {input.type()} instead (while checking arguments for embedding)")
    num = weight.shape[0]
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx %= num
    if sparse:
        raise NotImplementedError("embedding: sparse gradients are not supported by clgrad; use sparse=False")
    P.common_device([input, weight])
    return input, weight, padding_idx, max_norm, norm_type, bool(scale_grad_by_freq)


def _embedding_out(idx, weight):
    """``weight[idx]`` for a flat contiguous ``idx``, with an IndexError for an index out of range."""
    out = _empty((idx.shape[0], weight.shape[1]), weight.dtype, weight.device)

    def on_error():
        i = idx._host().astype(np.int64)
        bad = i[(i < 0) | (i >= weight.shape[0])][0]
        raise IndexError(f"index out of range in self: index {bad} is out of bounds for dimension 0 with size "
                         f"{weight.shape[0]}")

    if not _backend(weight).embedding(out, weight, idx, on_error):
        on_error()
    return out


def _counts(idx, num: int, padding_idx, dt):
    """How often each of the ``num`` rows occurs in ``idx`` (0 for padding_idx), as a [num, 1] column."""
    counts = zeros((num, 1), dtype=dt, device=idx.device)
    pad = -1 if padding_idx is None else padding_idx
    _backend(idx).embedding_backward(counts, ones((idx.shape[0], 1), dtype=dt, device=idx.device), idx, pad)
    return counts


def _embedding_grad(grad, idx, num: int, padding_idx, freq: bool):
    """The [num, D] weight gradient: each row of ``grad`` [N, D] added into its index's row."""
    acc_dt = D.float32 if grad.dtype is D.float16 else grad.dtype
    acc = zeros((num, grad.shape[1]), dtype=acc_dt, device=grad.device)
    _backend(grad).embedding_backward(acc, grad, idx, -1 if padding_idx is None else padding_idx)
    if freq:
        P.apply("div", acc, _counts(idx, num, padding_idx, acc_dt).clamp(min=1), out=acc)
    return acc.to(grad.dtype)


class Embedding(Function):
    node_name = "EmbeddingBackward0"

    @staticmethod
    def forward(ctx, weight, idx, shape, padding_idx, freq):
        ctx.meta = (weight.shape[0], padding_idx, freq)
        ctx.save_for_backward(idx)
        return _embedding_out(idx, weight).reshape(shape)

    @staticmethod
    def backward(ctx, grad):
        (idx,) = ctx.saved_tensors
        rows = grad.reshape(-1, grad.shape[-1])
        if needs_graph(rows):
            return EmbeddingDenseBackward.apply(rows, idx, *ctx.meta), None, None, None, None
        return _embedding_grad(rows, idx, *ctx.meta), None, None, None, None


class EmbeddingDenseBackward(Function):
    """The weight gradient as a function of the output gradient (for double backward): its own
    gradient gathers rows back, zero at padding_idx, scaled like the forward when ``freq``."""

    node_name = "EmbeddingDenseBackwardBackward0"

    @staticmethod
    def forward(ctx, rows, idx, num, padding_idx, freq):
        ctx.meta = (padding_idx, freq, num)
        ctx.save_for_backward(idx)
        return _embedding_grad(rows, idx, num, padding_idx, freq)

    @staticmethod
    def backward(ctx, grad):
        (idx,) = ctx.saved_tensors
        padding_idx, freq, num = ctx.meta
        rows = embedding(idx, grad)
        if padding_idx is not None:
            rows = rows * (idx != padding_idx).unsqueeze(1)
        if freq:
            rows = rows / embedding(idx, _counts(idx, num, padding_idx, grad.dtype).clamp(min=1))
        return rows, None, None, None, None


def _renorm_(weight, idx, max_norm: float, norm_type: float) -> None:
    """PyTorch's embedding_renorm_: rows ``idx`` refers to whose norm exceeds ``max_norm`` are scaled down to
    it, in place."""
    with no_grad():
        hit = _counts(idx, weight.shape[0], None, D.float32) > 0
        mag = weight.abs()
        norms = mag.amax(1, keepdim=True) if math.isinf(norm_type) else \
            (mag ** norm_type).sum(1, keepdim=True) ** (1.0 / norm_type)
        scale = M.where(hit & (norms > max_norm), max_norm / (norms + 1e-7), 1.0)
        P.apply("mul", weight, scale, out=weight)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Rows of ``weight`` [V, D] picked by the integer ``input``: output shape ``input.shape + (D,)``.
    ``padding_idx``'s row gets no gradient; ``max_norm`` renormalizes the rows used, in place.

    >>> F.embedding(clgrad.tensor([[1, 2], [0, 1]]), clgrad.randn(10, 3)).shape  # clgrad.Size([2, 2, 3])
    """
    input, weight, padding_idx, max_norm, norm_type, freq = _embedding_args(
        input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse)
    idx = input.reshape(-1).contiguous().to(weight.device)
    if max_norm is not None:
        _renorm_(weight, idx, max_norm, norm_type)
    shape = tuple(input.shape) + (weight.shape[1],)
    if needs_graph(weight):
        return Embedding.apply(weight, idx, shape, padding_idx, freq)
    return _embedding_out(idx, weight).reshape(shape)


# ---- dropout ------------------------------------------------------------------------------------
def _check_p(p) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _dropout(input, p, training: bool, inplace: bool, mask_shape):
    """``input * mask / (1 - p)`` with mask ~ Bernoulli(1 - p) of ``mask_shape`` (broadcast over the input),
    drawn from the Philox stream; the gradient is multiplied by the same mask."""
    _check_p(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        return input.mul_(0) if inplace else input * 0
    mask = bernoulli_(_empty(mask_shape, input.dtype, input.device), 1 - p)
    P.apply("div", mask, 1 - p, out=mask)
    return input.mul_(mask) if inplace else input * mask


def dropout(input, p=0.5, training=True, inplace=False, *, train=None):
    """Zero each element with probability ``p`` and scale the others by ``1 / (1 - p)``, in training only.
    ``train=`` is ``torch.dropout``'s name for ``training``."""
    return _dropout(input, p, training if train is None else train, inplace, input.shape)


def _channels(input, batched: bool) -> tuple:
    """The shape of a whole-channel mask: one value per (sample, channel), or per channel unbatched."""
    lead = input.shape[:2] if batched else input.shape[:1]
    return tuple(lead) + (1,) * (input.dim() - len(lead))


def feature_dropout(input, p, train, inplace=False):
    """``torch.feature_dropout``: zero whole channels of an (N, C, ...) input."""
    return _dropout(input, p, train, inplace, _channels(input, True))


def _feature_warning(k: int, nd: int) -> None:
    if nd not in (k + 1, k + 2):
        warnings.warn(f"dropout{k}d: Received a {nd}-D input to dropout{k}d, which is deprecated and will result in "
                      "an error in a future release. To retain the behavior and silence this warning, please use "
                      f"dropout instead. Note that dropout{k}d exists to provide channel-wise dropout on inputs with "
                      f"{k} spatial dimensions, a channel dimension, and an optional batch dimension (i.e. {k + 1}D "
                      f"or {k + 2}D inputs).", stacklevel=user_stacklevel())


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of an (N, C, L) or (C, L) input with probability ``p``."""
    _check_p(p)
    if input.dim() not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _dropout(input, p, training, inplace, _channels(input, input.dim() == 3))


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of an (N, C, H, W) input with probability ``p``; a 3-D input is read as
    (N, C, L), as PyTorch does (with its warning)."""
    _check_p(p)
    _feature_warning(2, input.dim())
    if input.dim() == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
                      "This behavior will change in a future release to interpret the input as one without a "
                      "batch dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, "
                      "please switch to using dropout1d instead.", stacklevel=user_stacklevel())
    return _dropout(input, p, training, inplace, _channels(input, True))


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of an (N, C, D, H, W) or (C, D, H, W) input with probability ``p``."""
    _check_p(p)
    _feature_warning(3, input.dim())
    return _dropout(input, p, training, inplace, _channels(input, input.dim() != 4))


# ---- normalization ------------------------------------------------------------------------------
@dataclass(frozen=True)
class NormSpec:
    """How a normalization sees its input x: statistics over ``dims`` of x reshaped to ``shape`` (None: as
    is); weight and bias reshaped to ``affine``, their gradients summed over ``affine_dims``.
    ``batch_stats`` is False when the statistics are constants (batch norm's running stats in eval)."""

    dims: tuple
    shape: tuple | None
    affine: tuple
    affine_dims: tuple
    eps: float
    batch_stats: bool = True

    def view(self, t):
        return t if self.shape is None else t.reshape(self.shape)


def _moments(x, spec: NormSpec):
    """Mean and biased variance over the spec's dims, one fused read of x (float32 for float16)."""
    xs = spec.view(x)
    kept = tuple(1 if d in spec.dims else n for d, n in enumerate(xs.shape))
    acc = D.float32 if x.dtype is D.float16 else x.dtype
    mean, var = _empty(kept, acc, x.device), _empty(kept, acc, x.device)
    _backend(x).moments(mean, var, xs, spec.dims)
    return mean, var


def _stats(x, spec: NormSpec):
    """Mean and 1/sqrt(var + eps) over the spec's dims."""
    mean, var = _moments(x, spec)
    return mean, (var + spec.eps).rsqrt()


def _sum_over(t, dims):
    return t.sum(dims) if dims else t


def _affine(x, mean, rstd, weight, bias, spec: NormSpec):
    y = P.apply("sub", spec.view(x), mean)
    P.apply("mul", y, rstd, out=y)
    y = y.reshape(x.shape)
    if weight is not None:
        P.apply("mul", y, weight.reshape(spec.affine), out=y)
    if bias is not None:
        P.apply("add", y, bias.reshape(spec.affine), out=y)
    return y.to(x.dtype)


def _norm_grads(grad, x, weight, mean, rstd, spec: NormSpec, need):
    acc = D.float32 if x.dtype is D.float16 else x.dtype
    xs = spec.view(x)
    if spec.batch_stats and needs_graph(grad, x, weight):
        # this gradient is being differentiated: rebuild the statistics in clgrad ops so they depend on x
        xa = xs.to(acc)
        mean = xa.mean(spec.dims, keepdim=True)
        rstd = ((xa - mean).square().mean(spec.dims, keepdim=True) + spec.eps).rsqrt()
    g = grad.to(acc)
    xhat = (xs - mean) * rstd
    gxhat = spec.view(g if weight is None else g * weight.reshape(spec.affine))
    gx = None
    if need[0]:
        if spec.batch_stats:
            dims = spec.dims
            gx = (gxhat - gxhat.mean(dims, keepdim=True) - xhat * (gxhat * xhat).mean(dims, keepdim=True)) * rstd
        else:
            gx = gxhat * rstd
        gx = gx.reshape(x.shape).to(x.dtype)
    gw = _sum_over(g * xhat.reshape(x.shape), spec.affine_dims) if weight is not None and need[1] else None
    gb = _sum_over(g, spec.affine_dims) if need[2] else None
    return gx, gw, gb


class NativeBatchNorm(Function):
    node_name = "NativeBatchNormBackward0"

    @staticmethod
    def forward(ctx, x, weight, bias, spec, mean, rstd):
        ctx.spec = spec
        ctx.params = [(t.shape, t.dtype) if t is not None else None for t in (weight, bias)]
        ctx.save_for_backward(x, weight, mean, rstd)
        return _affine(x, mean, rstd, weight, bias, spec)

    @staticmethod
    def backward(ctx, grad):
        x, weight, mean, rstd = ctx.saved_tensors
        gx, gw, gb = _norm_grads(grad, x, weight, mean, rstd, ctx.spec, ctx.needs_input_grad)
        gw, gb = (g if g is None else g.reshape(p[0]).to(p[1]) for g, p in zip((gw, gb), ctx.params))
        return gx, gw, gb, None, None, None


class NativeLayerNorm(NativeBatchNorm):
    node_name = "NativeLayerNormBackward0"


class NativeGroupNorm(NativeBatchNorm):
    node_name = "NativeGroupNormBackward0"


def _normalized(fn, x, weight, bias, spec, mean, rstd):
    if needs_graph(x, weight, bias):
        return fn.apply(x, weight, bias, spec, mean, rstd)
    return _affine(x, mean, rstd, weight, bias, spec)


def _verify_batch_size(size) -> None:
    if size[0] * math.prod(size[2:]) == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")


_BN_F = ("running_mean", "running_var", "weight", "bias", "training", "momentum", "eps")
_BN_TORCH = ("weight", "bias", "running_mean", "running_var", "training", "momentum", "eps", "cudnn_enabled")


def batch_norm(input, *args, **kwargs):
    """``F.batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
    eps=1e-5)``: per-channel (dim 1) normalization with batch statistics in training (updating the running
    ones, with the unbiased variance) and running statistics in eval. Called with ``cudnn_enabled`` (nine
    arguments) it is ``torch.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
    cudnn_enabled)``, whose tensors come in another order."""
    names = _BN_TORCH if len(args) == 8 or "cudnn_enabled" in kwargs else _BN_F
    if len(args) > len(names):
        raise TypeError(f"batch_norm() takes at most {len(names) + 1} arguments ({len(args) + 1} given)")
    a = dict(running_mean=None, running_var=None, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5)
    a.update(zip(names, args))
    for key, value in kwargs.items():
        if key not in names or key in names[: len(args)]:
            raise TypeError(f"batch_norm() got an unexpected keyword argument '{key}'")
        a[key] = value
    a.pop("cudnn_enabled", None)
    return _batch_norm(input, **a)


def _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps):
    if training:
        _verify_batch_size(input.size())
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    if eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    C = input.shape[1] if input.dim() > 1 else input.shape[0]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != C:
            raise RuntimeError(f"{name} should contain {C} elements not {t.numel()}")
        if t is None and not training and name.startswith("running"):
            raise RuntimeError(f"{name} must be defined in evaluation mode")
    nd = input.dim()
    affine = (1, C) + (1,) * (nd - 2)
    dims = (0,) + tuple(range(2, nd))
    spec = NormSpec(dims, None, affine, dims, eps, bool(training))
    if training:
        mean, var = _moments(input, spec)
        _update_running(running_mean, running_var, mean, var, input.numel() // C, momentum)
        rstd = (var + eps).rsqrt()
    else:
        mean = running_mean.detach().reshape(affine)
        rstd = (running_var.detach() + eps).rsqrt().reshape(affine)
    return _normalized(NativeBatchNorm, input, weight, bias, spec, mean, rstd)


def _update_running(running_mean, running_var, mean, var, n: int, momentum: float) -> None:
    """``running = (1 - momentum) * running + momentum * batch``, with the unbiased batch variance."""
    with no_grad():
        if running_mean is not None:
            P.apply("mul", running_mean, 1 - momentum, out=running_mean)
            P.apply("add", running_mean, (mean.reshape(-1) * momentum).to(running_mean.dtype), out=running_mean)
        if running_var is not None:
            unbiased = var.reshape(-1) * (momentum * n / (n - 1))
            P.apply("mul", running_var, 1 - momentum, out=running_var)
            P.apply("add", running_var, unbiased.to(running_var.dtype), out=running_var)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    """Normalize over the trailing ``normalized_shape`` dims, then ``* weight + bias`` (each of that shape)."""
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k, nd = len(ns), input.dim()
    if not ns:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                           f"element, but got normalized_shape = {list(ns)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != ns:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{list(t.shape)} and normalized_shape = {list(ns)}")
    if nd < k or tuple(input.shape[nd - k:]) != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape [*, "
                           f"{', '.join(map(str, ns))}], but got input of size{list(input.shape)}")
    spec = NormSpec(tuple(range(nd - k, nd)), None, ns, tuple(range(nd - k)), eps)
    return _normalized(NativeLayerNorm, input, weight, bias, spec, *_stats(input, spec))


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    """Normalize each of ``num_groups`` groups of channels per sample, then per-channel ``* weight + bias``."""
    nd = input.dim()
    if nd < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {nd}")
    N, C = input.shape[:2]
    _verify_batch_size([N * C // num_groups, num_groups] + list(input.shape[2:]))
    if C % num_groups:
        raise RuntimeError("Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != C):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, but "
                               f"got {name} of shape {list(t.shape)} and input of shape {list(input.shape)}")
    per_group = input.numel() // max(N * num_groups, 1)
    spec = NormSpec((2,), (N, num_groups, per_group), (1, C) + (1,) * (nd - 2), (0,) + tuple(range(2, nd)), eps)
    return _normalized(NativeGroupNorm, input, weight, bias, spec, *_stats(input, spec))


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input / max(||input||_p, eps)`` along ``dim``: ``F.normalize(x, dim=1)``."""
    mag = input.abs()
    if math.isinf(p):
        norm = mag.amax(dim, keepdim=True).clamp(min=eps)
    else:  # max(s ** (1/p), eps) == max(s, eps ** p) ** (1/p), and a zero vector gets a zero gradient
        norm = (mag ** p).sum(dim, keepdim=True).clamp(min=eps ** p) ** (1.0 / p)
    result = input / norm
    return result if out is None else out.copy_(result)


def _softmax_method(self, dim, dtype=None):
    return softmax(self, dim, dtype=dtype)


def _log_softmax_method(self, dim, dtype=None):
    return log_softmax(self, dim, dtype=dtype)


def install(T) -> None:
    """Attach this module's ops to Tensor as methods."""
    T.softmax = _softmax_method
    T.log_softmax = _log_softmax_method


# a list or a number where a tensor belongs raises PyTorch's TypeError (see guard.py)
tensor_first(globals(), __all__ + FUNCTIONAL)
