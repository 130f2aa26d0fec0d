"""Loss functions (``F.cross_entropy``, ``F.nll_loss``, ``F.mse_loss``...), forward and backward.

Built on the fused softmax and nll kernels of ``nnops.py`` (imported as ``N``).
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import dtypes as D
from ..amp.policy import autocast_float32
from ..autograd.function import Function
from ..autograd.graph import needs_graph
from . import math as M
from . import nnops as N
from . import pointwise as P
from .creation import arange
from .guard import tensor_first, user_stacklevel

FUNCTIONAL = ['cross_entropy', 'nll_loss', 'mse_loss', 'l1_loss', 'binary_cross_entropy',
              'binary_cross_entropy_with_logits', 'smooth_l1_loss', 'huber_loss', 'kl_div', 'cosine_embedding_loss']


def _reduction(size_average, reduce, reduction: str) -> str:
    """PyTorch's reduction argument, including the deprecated ``size_average`` / ``reduce`` pair."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "mean" if size_average and reduce else "sum" if reduce else "none"
        warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' "
                      "instead.", stacklevel=user_stacklevel())
    _check_reduction(reduction)
    return reduction


def _check_reduction(reduction: str, allowed=("none", "mean", "sum")) -> None:
    if reduction not in allowed:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _reduce(loss, reduction: str):
    return loss if reduction == "none" else loss.sum() if reduction == "sum" else loss.mean()


def _class_view(weight, ndim: int, cdim: int):
    """A [C] class weight shaped to broadcast along the class dim of an ``ndim``-dim input."""
    return weight.reshape([-1 if d == cdim else 1 for d in range(ndim)])


def _check_class_weight(weight, C: int, prefix: str = "") -> None:
    if weight is not None and (weight.dim() != 1 or weight.numel() != C):
        raise RuntimeError(f"{prefix}weight tensor should be defined either for all {C} classes or no classes but "
                           f"got weight tensor of shape: {list(weight.shape)}")


def _check_nll(input, target, weight) -> None:
    nd = input.dim()
    if nd < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {nd})")
    if nd != 1 and target.dim() and input.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0]}).")
    if nd <= 2 and target.dim() > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    expected = [input.shape[0]] + list(input.shape[2:]) if nd > 1 else []
    if list(target.shape) != expected:
        if nd > 2:
            raise RuntimeError(f"Expected target size {expected}, got {list(target.shape)}")
        raise RuntimeError(f"size mismatch (got input: {list(input.shape)}, target: {list(target.shape)})")
    if target.dtype not in (D.int64, D.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {target.dtype.scalar_name}")
    if input.dtype.kind != "f":
        raise P.unsupported("nll_loss", input.dtype, input.device)
    _check_class_weight(weight, input.shape[1] if nd > 1 else input.shape[0])
    if weight is not None and weight.dtype is not input.dtype:
        raise RuntimeError(f"expected scalar type {input.dtype.scalar_name} but found {weight.dtype.scalar_name}")
    P.common_device([input, target] + ([weight] if weight is not None else []))


def _nll_pieces(x, target, weight, ignore_index: int):
    """Per-sample ``-w[t] * x[n, t]`` and ``w[t]`` (0 where ignored) for x [N, C, d...], target [N, d...]."""
    target = target.to(x.device)
    loss, wt = N._empty(target.shape, x.dtype, x.device), N._empty(target.shape, x.dtype, x.device)
    on_error = lambda: _raise_target_bounds(target, x.shape[1], ignore_index)  # noqa: E731
    if not N._backend(x).nll(loss, wt, x, target, weight, int(ignore_index), on_error):
        on_error()
    return loss, wt


def _raise_target_bounds(target, C: int, ignore_index: int):
    t = target._host().reshape(-1).astype(np.int64)
    bad = t[(t != ignore_index) & ((t < 0) | (t >= C))]
    raise IndexError(f"Target {bad[0]} is out of bounds.")


def _nll_grad(grad, x, target, wt, lse, total, shape, ignore_index: int):
    """The input gradient of nll_loss (``x`` None) or of the fused cross-entropy: one kernel, or the same formula
    in clgrad ops when the gradient itself is being differentiated."""
    if needs_graph(grad, x):
        coef = wt * (grad / total if total is not None else grad)
        coef = M.where(target == ignore_index, 0.0, coef).unsqueeze(1)
        classes = arange(shape[1], device=grad.device).reshape((1, -1) + (1,) * (len(shape) - 2))
        # ignored targets get no gradient even when every target is ignored (total weight 0)
        hit = (classes == target.unsqueeze(1)) & (target != ignore_index).unsqueeze(1)
        if x is None:
            return M.where(hit, -coef, 0.0)
        return (N.softmax(x, 1) - hit.to(x.dtype)) * coef
    out = N._empty(shape, wt.dtype, wt.device)
    N._backend(wt).xent_backward(out, x, target, wt, lse, grad.to(wt.dtype), total, int(ignore_index))
    return out


def _reduce_pieces(loss, wt, reduction: str):
    """(the reduced per-sample losses, the summed weights a mean divides by, or None)."""
    if reduction == "none":
        return loss, None
    if reduction == "sum":
        return loss.sum(), None
    total = wt.sum()
    return loss.sum() / total, total


class NllLoss(Function):
    node_name = "NllLossBackward0"

    @staticmethod
    def forward(ctx, x, target, weight, reduction, ignore_index):
        loss, wt = _nll_pieces(x, target, weight, ignore_index)
        value, total = _reduce_pieces(loss, wt, reduction)
        ctx.meta = (x.shape, ignore_index)
        ctx.save_for_backward(target, wt, total)
        return value

    @staticmethod
    def backward(ctx, grad):
        target, wt, total = ctx.saved_tensors
        shape, ignore_index = ctx.meta
        return _nll_grad(grad, None, target, wt, None, total, shape, ignore_index), None, None, None, None


class CrossEntropy(Function):
    """``nll_loss(log_softmax(x, 1), target)`` fused: one row kernel forward (loss, weight and logsumexp per
    sample) and one backward, ``w[t] * g * (softmax(x) - onehot(t))``."""

    node_name = "NllLossBackward0"

    @staticmethod
    def forward(ctx, x, target, weight, reduction, ignore_index):
        target = target.to(x.device)
        loss, wt = N._empty(target.shape, x.dtype, x.device), N._empty(target.shape, x.dtype, x.device)
        lse = N._empty(target.shape, D.float32 if x.dtype in D.HALF_FLOATS else x.dtype, x.device)
        on_error = lambda: _raise_target_bounds(target, x.shape[1], ignore_index)  # noqa: E731
        if not N._backend(x).xent(loss, wt, lse, x, target, weight, int(ignore_index), on_error):
            on_error()
        value, total = _reduce_pieces(loss, wt, reduction)
        ctx.ignore_index = ignore_index
        ctx.save_for_backward(x, target, wt, lse, total)
        return value

    @staticmethod
    def backward(ctx, grad):
        x, target, wt, lse, total = ctx.saved_tensors
        return _nll_grad(grad, x, target, wt, lse, total, x.shape, ctx.ignore_index), None, None, None, None


@autocast_float32
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log-likelihood of class indices; ``mean`` divides by the summed weights of the targets.

    >>> F.nll_loss(F.log_softmax(logits, dim=1), labels)
    """
    reduction = _reduction(size_average, reduce, reduction)
    _check_nll(input, target, weight)
    if input.dim() == 1:  # no batch dim: one sample
        out = nll_loss(input.unsqueeze(0), target.reshape(1), weight, ignore_index=ignore_index, reduction=reduction)
        return out.reshape(()) if reduction == "none" else out
    if needs_graph(input):
        return NllLoss.apply(input, target, weight, reduction, ignore_index)
    return NllLoss.forward(N._Scratch(), input, target, weight, reduction, ignore_index)


@autocast_float32
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """``nll_loss(N.log_softmax(input, 1), target)`` for class indices, or ``-sum(target * N.log_softmax)`` for class
    probabilities (a float target shaped like the input); ``label_smoothing`` mixes in a uniform target."""
    reduction = _reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    cdim = 0 if input.dim() == 1 else 1
    if label_smoothing == 0.0 and tuple(target.shape) != tuple(input.shape) and input.dtype.kind == "f":
        return _cross_entropy_fused(input, target, weight, reduction, ignore_index)
    logp = N.log_softmax(input, cdim)
    if tuple(target.shape) == tuple(input.shape):
        if target.dtype.kind != "f":
            raise RuntimeError(f"Expected floating point type for target with class probabilities, got "
                               f"{target.dtype.scalar_name}")
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        return _ce_probs(logp, target, weight, reduction, label_smoothing, cdim)
    loss = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing == 0.0:
        return loss
    C = logp.shape[cdim]
    smooth = -(logp * _class_view(weight, logp.dim(), cdim) if weight is not None else logp).sum(cdim)
    ignored = target == ignore_index
    smooth = M.where(ignored, 0.0, smooth)
    if reduction == "mean":
        if weight is not None:  # the same denominator as the weighted nll mean
            x2 = logp.detach() if logp.dim() > 1 else logp.detach().unsqueeze(0)
            denom = _nll_pieces(x2, target.reshape(x2.shape[:1] + x2.shape[2:]), weight, ignore_index)[1].sum()
        else:
            denom = (~ignored).sum()
        smooth = smooth.sum() / denom
    elif reduction == "sum":
        smooth = smooth.sum()
    return loss * (1 - label_smoothing) + smooth * (label_smoothing / C)


def _cross_entropy_fused(input, target, weight, reduction: str, ignore_index: int):
    _check_nll(input, target, weight)
    if input.dim() == 1:  # no batch dim: one sample
        out = _cross_entropy_fused(input.unsqueeze(0), target.reshape(1), weight, reduction, ignore_index)
        return out.reshape(()) if reduction == "none" else out
    if needs_graph(input):
        return CrossEntropy.apply(input, target, weight, reduction, ignore_index)
    return CrossEntropy.forward(N._Scratch(), input, target, weight, reduction, ignore_index)


def _ce_probs(logp, target, weight, reduction, label_smoothing, cdim):
    C = logp.shape[cdim]
    _check_class_weight(weight, C, "cross_entropy: ")
    if label_smoothing > 0:
        target = target * (1 - label_smoothing) + label_smoothing / C
    prod = logp * target
    if weight is not None:
        prod = prod * _class_view(weight, logp.dim(), cdim)
    if reduction == "none":
        return -prod.sum(cdim)
    if reduction == "sum":
        return -prod.sum()
    return -prod.sum() / (logp.numel() / max(C, 1))  # mean over samples, not over weights


def _check_same_size(input, target, fn: str) -> None:
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.size()}) that is different to the input size "
                      f"({input.size()}). This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.", stacklevel=user_stacklevel())


class MseLoss(Function):
    node_name = "MseLossBackward0"

    @staticmethod
    def forward(ctx, x, t, reduction):
        ctx.save_for_backward(x, t)
        ctx.reduction = reduction
        return _reduce((x - t).square(), reduction)

    @staticmethod
    def backward(ctx, grad):
        x, t = ctx.saved_tensors
        diff = (x - t) * 2
        gx = diff * (grad / diff.numel() if ctx.reduction == "mean" else grad)
        return gx, -gx if ctx.needs_input_grad[1] else None, None


@autocast_float32
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error ``(input - target) ** 2``, reduced: ``F.mse_loss(pred, y)``."""
    _check_same_size(input, target, "mse_loss")
    reduction = _reduction(size_average, reduce, reduction)
    if weight is not None:  # PyTorch's weighted form: a weighted mean
        if tuple(weight.shape) != tuple(input.shape):
            raise ValueError("Weights and input must have the same size.")
        sq = (input - target).square() * weight
        return sq if reduction == "none" else sq.sum() if reduction == "sum" else sq.sum() / weight.sum()
    if needs_graph(input, target):
        return MseLoss.apply(input, target, reduction)
    return MseLoss.forward(N._Scratch(), input, target, reduction)


@autocast_float32
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error ``|input - target|``, reduced: ``F.l1_loss(pred, y)``."""
    _check_same_size(input, target, "l1_loss")
    reduction = _reduction(size_average, reduce, reduction)
    loss = (input - target).abs()
    return _reduce(loss if weight is None else loss * weight, reduction)


class BinaryCrossEntropy(Function):
    node_name = "BinaryCrossEntropyBackward0"

    @staticmethod
    def forward(ctx, x, t, weight, reduction):
        if x.numel() and not bool(((x >= 0) & (x <= 1)).all()):
            raise RuntimeError("all elements of input should be between 0 and 1")
        ctx.save_for_backward(x, t, weight)
        ctx.reduction = reduction
        # PyTorch clamps each log at -100, so a 0 or 1 input gives a finite loss
        loss = -(t * x.log().clamp(min=-100) + (1 - t) * (1 - x).log().clamp(min=-100))
        return _reduce(loss if weight is None else loss * weight, reduction)

    @staticmethod
    def backward(ctx, grad):
        x, t, weight = ctx.saved_tensors
        scale = grad / x.numel() if ctx.reduction == "mean" else grad
        if weight is not None:
            scale = scale * weight
        gx = scale * (x - t) / ((1 - x) * x).clamp(min=1e-12)
        gt = scale * ((1 - x).log() - x.log()) if ctx.needs_input_grad[1] else None
        return gx, gt, None, None


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """``-(t log x + (1 - t) log(1 - x))`` for probabilities ``x`` in [0, 1]: ``F.binary_cross_entropy(p, y)``."""
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.size()}) that is different to the input size "
                         f"({input.size()}) is deprecated. Please ensure they have the same size.")
    if weight is not None:
        weight = weight.expand(target.shape)
    if needs_graph(input, target, weight):
        return BinaryCrossEntropy.apply(input, target, weight, reduction)
    return BinaryCrossEntropy.forward(N._Scratch(), input, target, weight, reduction)


@autocast_float32
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """Binary cross entropy of ``sigmoid(input)``, computed stably from the logits; ``pos_weight`` weighs the
    positive term per class."""
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.size()}) must be the same as input size ({input.size()})")
    log_sigmoid = input.minimum(0) - (-input.abs()).exp().log1p()
    if pos_weight is not None:
        log_sigmoid = log_sigmoid * ((pos_weight - 1) * target + 1)
    loss = (1 - target) * input - log_sigmoid
    return _reduce(loss if weight is None else loss * weight, reduction)


# Losses without a kernel of their own, composed from differentiable ops (so autograd gives their gradients).


@autocast_float32
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """Squared error below ``beta``, absolute error above it (scaled to meet smoothly)."""
    reduction = _reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _check_same_size(input, target, "smooth_l1_loss")
    diff = (input - target).abs()
    loss = diff if beta == 0 else M.where(diff < beta, diff * diff * (0.5 / beta), diff - 0.5 * beta)
    return _reduce(loss, reduction)


@autocast_float32
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """Squared error below ``delta``, ``delta`` times the absolute error above it."""
    _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _check_same_size(input, target, "huber_loss")
    diff = (input - target).abs()
    loss = M.where(diff < delta, diff * diff * 0.5, (diff - 0.5 * delta) * delta)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@autocast_float32
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """KL(target || exp(input)) summed pointwise: ``target * (log(target) - input)``, 0 where target is 0."""
    if size_average is not None or reduce is not None:
        reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction, ("none", "mean", "sum", "batchmean"))
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      stacklevel=user_stacklevel())
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = M.FUNCS["xlogy"](target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.dim() != 0 else loss.sum()
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """``1 - cos(x1, x2)`` where target is 1, ``max(0, cos(x1, x2) - margin)`` where it is -1."""
    reduction = _reduction(size_average, reduce, reduction)
    if input1.dim() not in (1, 2) or input1.shape != input2.shape:
        raise RuntimeError(f"cosine_embedding_loss: expected inputs of the same 1-D or 2-D shape, got "
                           f"{list(input1.shape)} and {list(input2.shape)}")
    dim = input1.dim() - 1
    eps = 1e-12  # ATen's EPSILON
    prod = (input1 * input2).sum(dim)
    denom = (((input1 * input1).sum(dim) + eps) * ((input2 * input2).sum(dim) + eps)).sqrt()
    cos = prod / denom
    zeros = cos * 0
    loss = M.where(target == 1, 1 - cos, zeros) + M.where(target == -1, (cos - margin).clamp_min(0), zeros)
    return _reduce(loss, reduction)


# a list or a number where a tensor belongs raises PyTorch's TypeError (see guard.py)
tensor_first(globals(), FUNCTIONAL)
