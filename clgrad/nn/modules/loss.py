"""Loss layers. Where ``clgrad.nn.functional`` lacks a loss, its functional form is composed here from
differentiable clgrad ops (so autograd gives its gradient)."""
from __future__ import annotations

import warnings

from ...ops import losses as _losses
from .. import functional as F
from .module import Module

__all__ = ["smooth_l1_loss", "huber_loss", "kl_div", "cosine_embedding_loss"]


def _where(cond, a, b):
    import clgrad

    return clgrad.where(cond, a, b)


def _check_reduction(reduction: str, allowed=("none", "mean", "sum")) -> None:
    if reduction not in allowed:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """Squared error below ``beta``, absolute error above it (scaled to meet smoothly)."""
    reduction = _losses._reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _losses._check_same_size(input, target, "smooth_l1_loss")
    diff = (input - target).abs()
    loss = diff if beta == 0 else _where(diff < beta, diff * diff * (0.5 / beta), diff - 0.5 * beta)
    return _losses._reduce(loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """Squared error below ``delta``, ``delta`` times the absolute error above it."""
    _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _losses._check_same_size(input, target, "huber_loss")
    diff = (input - target).abs()
    loss = _where(diff < delta, diff * diff * 0.5, (diff - 0.5 * delta) * delta)
    if weight is not None:
        loss = loss * weight
    return _losses._reduce(loss, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """KL(target || exp(input)) summed pointwise: ``target * (log(target) - input)``, 0 where target is 0."""
    import clgrad

    if size_average is not None or reduce is not None:
        reduction = _losses._reduction(size_average, reduce, reduction)
    _check_reduction(reduction, ("none", "mean", "sum", "batchmean"))
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      stacklevel=2)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = clgrad.xlogy(target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.dim() != 0 else loss.sum()
    return _losses._reduce(loss, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """``1 - cos(x1, x2)`` where target is 1, ``max(0, cos(x1, x2) - margin)`` where it is -1."""
    reduction = _losses._reduction(size_average, reduce, reduction)
    if input1.dim() not in (1, 2) or input1.shape != input2.shape:
        raise RuntimeError(f"cosine_embedding_loss: expected inputs of the same 1-D or 2-D shape, got "
                           f"{list(input1.shape)} and {list(input2.shape)}")
    dim = input1.dim() - 1
    eps = 1e-12  # ATen's EPSILON
    prod = (input1 * input2).sum(dim)
    denom = (((input1 * input1).sum(dim) + eps) * ((input2 * input2).sum(dim) + eps)).sqrt()
    cos = prod / denom
    zeros = cos * 0
    loss = _where(target == 1, 1 - cos, zeros) + _where(target == -1, (cos - margin).clamp_min(0), zeros)
    return _losses._reduce(loss, reduction)


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = _losses._reduction(size_average, reduce, reduction)
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class MSELoss(_Loss):
    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class NLLLoss(_WeightedLoss):
    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """``log_softmax`` + ``nll_loss``; targets are class indices or class probabilities."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean", label_smoothing: float = 0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class BCELoss(_WeightedLoss):
    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean", pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight, pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class KLDivLoss(_Loss):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class CosineEmbeddingLoss(_Loss):
    def __init__(self, margin: float = 0.0, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return cosine_embedding_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)
