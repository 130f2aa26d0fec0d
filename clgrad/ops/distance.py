"""Distances: cosine similarity, pairwise, pdist, cdist and dist, composed from clgrad ops the way ATen composes
them, so values round alike and gradients follow PyTorch's conventions: every p-norm goes through
``stats.norm``, whose backward is PyTorch's (0 at a zero distance, ties of the inf-norm share).

>>> clgrad.cdist(clgrad.zeros(2, 3), clgrad.ones(4, 3))  # 2 x 4, every entry sqrt(3)
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as D
from ..autograd.grad_mode import no_grad
from . import joins, stats
from .creation import ones_like, tensor
from .guard import tensor_first
from .views import broadcast_shapes

__all__ = ["cosine_similarity", "pairwise_distance", "pdist", "cdist", "dist"]
FUNCTIONAL = ["cosine_similarity", "pairwise_distance", "pdist"]
_CDIST_MODES = {"use_mm_for_euclid_dist_if_necessary": 0, "use_mm_for_euclid_dist": 1,
                "donot_use_mm_for_euclid_dist": 2}


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """``<x1, x2> / (max(|x1|, eps) * max(|x2|, eps))`` along ``dim``, broadcasting: ``F.cosine_similarity(a, b)``.

    As ATen does, each input is divided by its clamped norm first (the result stays in [-1, 1]), and the clamp
    is invisible to autograd: the gradient flows through the unclamped norm.
    """
    common = D.result_type(x1, x2)
    if common.kind != "f":
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is {common.scalar_name}")
    x1, x2 = (x.to(common) if x.dtype.kind != "f" else x for x in (x1, x2))
    shape = broadcast_shapes(x1.shape, x2.shape)
    x1, x2 = x1.expand(shape), x2.expand(shape)
    n1 = stats.norm(x1, 2, dim, keepdim=True).clone()
    n2 = stats.norm(x2, 2, dim, keepdim=True).clone()
    with no_grad():
        n1.clamp_min_(eps)
        n2.clamp_min_(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """``||x1 - x2 + eps||_p`` over the last dim, broadcasting: ``F.pairwise_distance(a, b)``."""
    last = max(x1.dim(), x2.dim()) - 1
    return stats.norm(x1 - x2 + eps, p, last, keepdim)


def pdist(input, p=2):
    """The p-norm distance between each pair of rows of an (N, M) input, in the order of the upper triangle
    (row-major, no diagonal): N * (N - 1) / 2 values. ``F.pdist(x)``."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if input.dtype.kind != "f":
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    rows, cols = np.triu_indices(input.shape[0], 1)
    diff = input.index_select(0, tensor(rows, device=input.device)) - input.index_select(
        0, tensor(cols, device=input.device))
    if diff.numel() == 0:  # no pairs (or no columns): the empty or zero distances, still in the graph
        return diff.abs().sum(1)
    return stats.norm(diff, p, 1)


def _check_cdist(x1, x2, p, compute_mode) -> int:
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    for name, x in (("X1", x1), ("X2", x2)):
        if x.dim() < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {x.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    for name, x in (("X1", x1), ("X2", x2)):
        if x.dtype.kind != "f":
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: {x.dtype.scalar_name}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    return _CDIST_MODES[compute_mode]


def _euclidean_mm(x1, x2):
    """ATen's _euclidean_dist: ``sqrt(clamp(|a|^2 - 2 a.b + |b|^2, 0))`` as one batched product."""
    n1 = x1.square().sum(-1, keepdim=True)
    n2 = x2.square().sum(-1, keepdim=True)
    a = joins.cat([x1 * -2, n1, ones_like(n1)], -1)
    b = joins.cat([x2, ones_like(n2), n2], -1)
    return a.matmul(b.mT).clamp_min(0).sqrt()


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distance between each row of ``x1`` [B..., P, M] and each row of ``x2`` [B..., R, M]:
    [B..., P, R], batch dims broadcast. For p = 2 a matrix product computes it when ``compute_mode`` asks for it
    (by default when P or R exceeds 25), as in PyTorch. ``clgrad.cdist(a, b)``."""
    mode = _check_cdist(x1, x2, p, compute_mode)
    r1, r2 = x1.shape[-2], x2.shape[-2]
    if p == 2 and x1.numel() and x2.numel() and (mode == 1 or (mode == 0 and (r1 > 25 or r2 > 25))):
        return _euclidean_mm(x1, x2)
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    if diff.numel() == 0:
        return diff.abs().sum(-1)
    return stats.norm(diff, p, -1)


def dist(input, other, p=2):
    """The p-norm of ``input - other`` (broadcast) over every element: ``clgrad.dist(a, b)``."""
    return stats.norm(input - other, p)


def install(T) -> None:
    """Attach ``Tensor.dist``."""
    T.dist = dist


# a list or a number where a tensor belongs raises PyTorch's TypeError (see guard.py)
tensor_first(globals(), __all__)
