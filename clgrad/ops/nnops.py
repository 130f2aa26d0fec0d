"""Neural-network functional ops: the softmax family, one_hot, embedding and dropout, with autograd Functions
named as PyTorch names their nodes (``SoftmaxBackward0``, ``EmbeddingBackward0``...). Losses are in ``losses.py``,
normalization in ``norms.py``, linear and bilinear in ``linalg.py``.

Fused kernels do what compositions do badly: the row-wise softmax (one read for max and sum, one write) and
embedding's gather and its duplicate-safe accumulation. Everything else composes clgrad ops, and backward
formulas are written in clgrad ops too, so they are differentiable themselves.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from .. import backends
from .. import dtypes as D
from ..amp.policy import autocast_float32_gpu
from ..autograd.function import Function
from ..autograd.grad_mode import no_grad
from ..autograd.graph import needs_graph
from ..random import bernoulli_
from ..tensor import Tensor
from . import math as M
from . import pointwise as P
from .creation import arange, ones, zeros
from .guard import tensor_first, user_stacklevel
from .views import wrap_dim

# names PyTorch has at top level (clgrad.X); each also takes PyTorch's top-level signature (see the functions)
__all__ = ["softmax", "log_softmax", "dropout", "feature_dropout", "embedding"]
# names that belong in clgrad.nn.functional (F.X)
FUNCTIONAL = ["softmax", "log_softmax", "softmin", "embedding", "dropout", "dropout1d", "dropout2d", "dropout3d",
              "one_hot"]


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


@autocast_float32_gpu
def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``exp(x) / sum(exp(x))`` along ``dim``, numerically stable; ``dtype`` casts first.

    >>> clgrad.softmax(clgrad.tensor([1.0, 2.0, 3.0]), dim=0)  # tensor([0.0900, 0.2447, 0.6652])
    """
    dim, dtype = _softmax_args("softmax", input, dim, _stacklevel, dtype)
    if needs_graph(input):
        return Softmax.apply(input, dim, dtype)
    return _softmax_out("softmax", input, dim, dtype)


@autocast_float32_gpu
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
    acc_dt = D.float32 if grad.dtype in D.HALF_FLOATS else grad.dtype
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
