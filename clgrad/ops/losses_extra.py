"""More losses (``F.gaussian_nll_loss``, margin losses, triplet losses...), composed from differentiable clgrad ops
as ATen or ``torch.nn.functional`` composes them, so autograd gives their gradients with PyTorch's subgradients
(a hinge ``max(0, z)`` passes the gradient at ``z == 0`` where ATen clamps, and stops it where ATen's kernel tests
``z > 0``). Reductions and the legacy ``size_average`` / ``reduce`` pair follow ``losses.py``.
"""
from __future__ import annotations

import math

from .. import dtypes as D
from ..autograd.grad_mode import no_grad
from . import math as M
from . import pointwise as P
from .creation import arange, ones_like
from .distance import pairwise_distance
from .guard import tensor_first
from .losses import _check_reduction, _reduce, _reduction

# names PyTorch has at top level (clgrad.X)
__all__ = ["poisson_nll_loss", "hinge_embedding_loss", "margin_ranking_loss", "triplet_margin_loss"]
FUNCTIONAL = ["gaussian_nll_loss", "poisson_nll_loss", "hinge_embedding_loss", "margin_ranking_loss",
              "multi_margin_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss", "soft_margin_loss",
              "triplet_margin_loss", "triplet_margin_with_distance_loss"]


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """``0.5 * (log(var) + (input - target)^2 / var)`` (+ ``0.5 log(2 pi)`` if ``full``), ``var`` clamped to
    ``eps`` without changing its gradient: ``F.gaussian_nll_loss(mu, y, var)``."""
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * ones_like(input)
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if var.shape != input.shape:
        if input.shape[:-1] == var.shape:  # homoscedastic: one variance per sample
            var = var.unsqueeze(-1)
        elif not (input.dim() == var.dim() and sum(v for i, v in zip(input.shape, var.shape) if i != v) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var.clone()
    with no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """Poisson negative log-likelihood: ``exp(input) - target * input`` for log rates, else
    ``input - target * log(input + eps)``; ``full`` adds Stirling's term where target > 1."""
    reduction = _reduction(size_average, reduce, reduction)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        loss = loss + stirling.masked_fill(target <= 1, 0.0)
    return _reduce(loss, reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """``input`` where target is 1, ``max(0, margin - input)`` where it is -1 (both for other values):
    ``F.hinge_embedding_loss(d, y)``."""
    reduction = _reduction(size_average, reduce, reduction)
    hinge = M.where(target != 1, (margin - input).clamp_min(0), 0.0)
    return _reduce(hinge + M.where(target != -1, input, 0.0), reduction)


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """``max(0, -target * (input1 - input2) + margin)``: ``F.margin_ranking_loss(a, b, y)``."""
    reduction = _reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} ")
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``log(1 + exp(-target * input))``: ``F.soft_margin_loss(x, y)`` for targets of +-1."""
    reduction = _reduction(size_average, reduce, reduction)
    return _reduce((-input * target).exp().log1p(), reduction)


def _margin_shapes(input, target, name: str) -> tuple:
    """(input as [N, C], target, whether there was no batch dim), with ATen's shape checks."""
    nd = input.dim()
    if not ((nd == 2 and input.shape[1] != 0) or (nd == 1 and input.shape[0] != 0) or nd == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    if input.dtype.kind != "f":
        raise P.unsupported(name, input.dtype, input.device)
    if target.dtype is not D.int64:
        raise RuntimeError(f"expected scalar type Long but found {target.dtype.scalar_name}")
    return (input.reshape(1, -1), True) if nd < 2 else (input, False)


def _check_targets(target, low: int, C: int) -> None:
    if target.numel() and bool(((target < low) | (target >= C)).any()):
        raise RuntimeError("target out of range")


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Multi-class hinge: ``sum_{i != y} max(0, margin - x[y] + x[i])^p / C`` per sample (times ``weight[y]``):
    ``F.multi_margin_loss(scores, labels)``."""
    reduction = _reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    x, unbatched = _margin_shapes(input, target, "multi_margin_loss")
    n, C = x.shape
    if target.dim() > 1 or target.numel() != n:
        raise RuntimeError(f"inconsistent target size, expected {n} but got {list(target.shape)}")
    if weight is not None and weight.numel() != C:
        raise RuntimeError(f"inconsistent weight size, expected {C} but got {list(weight.shape)}")
    _check_targets(target, 0, C)
    t = target.reshape(n, 1)
    z = M.relu(margin - x.gather(1, t) + x)  # ATen adds where z > 0: no gradient at z == 0
    z = z if p == 1 else z * z
    if weight is not None:
        z = z * weight.index_select(0, t.reshape(n)).reshape(n, 1)
    loss = z.masked_fill(arange(C, device=x.device) == t, 0.0).sum(1) / C
    return _reduce(loss.reshape(()) if unbatched else loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Multi-label hinge: for each sample, the labels listed in ``target`` up to its first -1 (y), and each
    other class i: ``sum max(0, 1 - (x[y] - x[i])) / C``. ``F.multilabel_margin_loss(scores, labels)``."""
    reduction = _reduction(size_average, reduce, reduction)
    x, unbatched = _margin_shapes(input, target, "multilabel_margin_loss")
    if target.shape != input.shape:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    n, C = x.shape
    t = target.reshape(n, C)
    _check_targets(t, -1, C)
    valid = (t >= 0).to(D.int64).cumprod(1) > 0  # the labels before each row's first -1
    labels = t.clamp_min(0)
    is_target = ((labels.unsqueeze(2) == arange(C, device=x.device)) & valid.unsqueeze(2)).any(1)  # [n, C]
    # z[n, k, i] = 1 - x[n, y_k] + x[n, i] for listed labels y_k and non-target classes i
    z = M.relu(1 - x.gather(1, labels).unsqueeze(2) + x.unsqueeze(1))
    keep = valid.unsqueeze(2) & ~is_target.unsqueeze(1)
    loss = z.where(keep, 0.0).sum((1, 2)) / C
    return _reduce(loss.reshape(()) if unbatched else loss, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Per-class logistic loss averaged over the classes (last dim): ``F.multilabel_soft_margin_loss(x, y)``."""
    if size_average is not None or reduce is not None:
        reduction = _reduction(size_average, reduce, reduction)
    loss = -(target * M.logsigmoid(input) + (1 - target) * M.logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _reduce(loss, reduction)


def _check_triplet_dims(anchor, positive, negative) -> None:
    a, p, n = anchor.dim(), positive.dim(), negative.dim()
    if not a == p == n:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a}D, positive {p}D, and negative {n}D inputs")


def _triplet(dist_pos, dist_neg, dist_swap, margin, reduction):
    if dist_swap is not None:
        dist_neg = dist_neg.minimum(dist_swap)
    return _reduce((margin + dist_pos - dist_neg).clamp_min(0), reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """``max(0, margin + d(a, p) - d(a, n))`` with ``d`` the pairwise p-distance; ``swap`` uses
    ``min(d(a, n), d(p, n))``: ``F.triplet_margin_loss(a, p, n)``."""
    reduction = _reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_dims(anchor, positive, negative)
    swapped = pairwise_distance(positive, negative, p, eps) if swap else None
    return _triplet(pairwise_distance(anchor, positive, p, eps), pairwise_distance(anchor, negative, p, eps),
                    swapped, margin, reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    """``triplet_margin_loss`` with any ``distance_function(x, y)`` (default ``pairwise_distance``)."""
    _check_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_dims(anchor, positive, negative)
    d = pairwise_distance if distance_function is None else distance_function
    swapped = d(positive, negative) if swap else None
    return _triplet(d(anchor, positive), d(anchor, negative), swapped, margin, reduction)


# a list or a number where a tensor belongs raises PyTorch's TypeError (see guard.py)
tensor_first(globals(), FUNCTIONAL)
