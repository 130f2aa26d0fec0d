"""Searching sorted data: ``searchsorted``, ``bucketize``, ``isin``.

No binary-search kernel: the boundaries and the values of a row are concatenated and sorted together (stable,
so the order of the two parts decides ties: values first counts boundaries ``<`` a value, boundaries first
counts those ``<=``), and a cumulative count of the boundaries seen so far is each value's insertion point.
That is O((n + m) log(n + m)) per row on every backend, deterministic, with no comparison matrix.
"""
from __future__ import annotations

import math

from .. import dtypes as D
from ..autograd.grad_mode import no_grad
from ..tensor import is_tensor
from .creation import tensor, zeros
from .guard import tensor_first
from .joins import cat
from .scans import argsort, cumsum, sort

__all__ = ["searchsorted", "bucketize", "isin"]


def _side(side, right) -> bool:
    if side is None:
        return bool(right)
    if side not in ("left", "right"):
        raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
    if side == "left" and right:
        raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left while "
                           "right was True")
    return side == "right"


def _rows(seq, values):
    """(B, n) boundaries and (B, m) values: one row each, or one shared row when ``seq`` is 1-D."""
    if seq.dim() == 1:
        return seq.reshape(1, -1), values.reshape(1, -1)
    if seq.dim() == 0 or tuple(seq._shape[:-1]) != tuple(values._shape[:-1]):
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries "
            f"tensor and input value tensor must match, but we got boundaries tensor {list(seq._shape)} and input "
            f"value tensor {list(values._shape)}")
    rows = math.prod(seq._shape[:-1])
    return seq.reshape(rows, seq._shape[-1]), values.reshape(rows, values._shape[-1])


def _insertion_points(seq, vals, right: bool):
    """Per row, how many of ``seq``'s entries are < (<= when ``right``) each of ``vals``'s."""
    b, n = seq._shape
    m = vals._shape[1]
    if n == 0 or m == 0:
        return zeros((b, m), dtype=D.int64, device=vals.device)
    keys = cat([seq, vals], 1) if right else cat([vals, seq], 1)
    order = argsort(keys, dim=1, stable=True)
    is_seq = order < n if right else order >= m
    seen = cumsum(is_seq.to(D.int64), 1)
    placed = zeros((b, n + m), dtype=D.int64, device=vals.device).scatter(1, order, seen)
    return placed[:, n:] if right else placed[:, :m]


def _common(a, b):
    dt = D.promote_types(a.dtype, b.dtype)
    return a.to(dt), b.to(dt)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None,  # noqa: A002
                 out=None):
    """Where each of ``input`` would go in the innermost dim of ``sorted_sequence`` to keep it sorted: the
    count of boundaries ``<`` the value (``<=`` with ``right=True`` / ``side='right'``).

    >>> clgrad.searchsorted(clgrad.tensor([1, 3, 5]), clgrad.tensor([3, 6]))  # tensor([1, 3])
    """
    at_right = _side(side, right)
    scalar = not is_tensor(input)
    values = tensor(input, device=sorted_sequence.device) if scalar else input
    if sorter is not None:
        if not is_tensor(sorter) or sorter.dtype is not D.int64:
            got = sorter.dtype.scalar_name if is_tensor(sorter) else type(sorter).__name__
            raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but got dtype {got}")
        if tuple(sorter._shape) != tuple(sorted_sequence._shape):
            raise RuntimeError("torch.searchsorted(): boundary and sorter must have the same size, but got boundary "
                               f"tensor {list(sorted_sequence._shape)}and got sorter tensor {list(sorter._shape)}")
    with no_grad():
        seq = sorted_sequence.detach()
        if sorter is not None:
            seq = seq.gather(-1, sorter.to(seq.device))
        seq, values = _common(seq, values.detach())
        rows, vals = _rows(seq, values)
        result = _insertion_points(rows, vals, at_right).reshape(values._shape)
    result = result.to(D.int32) if out_int32 else result
    if out is not None:
        return out.copy_(result)
    return result


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):  # noqa: A002
    """The bucket of each of ``input`` among the 1-D sorted ``boundaries``: ``searchsorted(boundaries, input)``.

    >>> clgrad.bucketize(clgrad.tensor([0.5, 2.0]), clgrad.tensor([1.0, 2.0]))  # tensor([0, 1])
    """
    if boundaries.dim() != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right, out=out)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each of ``elements`` occurs in ``test_elements`` (``~`` that with ``invert``); either may be a
    number. NaN is never found, as NaN != NaN.

    >>> clgrad.isin(clgrad.tensor([1, 2, 3]), clgrad.tensor([3, 1]))  # tensor([True, False, True])
    """
    if not is_tensor(elements) and not is_tensor(test_elements):
        raise TypeError(f"isin() received an invalid combination of arguments - got ({type(elements).__name__}, "
                        f"{type(test_elements).__name__}), but expected a Tensor for one of them")
    dev = (elements if is_tensor(elements) else test_elements).device
    e = elements.detach() if is_tensor(elements) else tensor(elements, device=dev)
    t = test_elements.detach() if is_tensor(test_elements) else tensor(test_elements, device=dev)
    with no_grad():
        e, t = _common(e, t.to(dev))
        pool = sort(t.reshape(-1)).values
        if pool.numel() == 0:
            found = zeros(e._shape, dtype=D.bool, device=dev)
        else:
            at = _insertion_points(pool.reshape(1, -1), e.reshape(1, -1), False).reshape(-1)
            found = (pool[at.clamp(max=pool.numel() - 1)] == e.reshape(-1)).reshape(e._shape)
    return ~found if invert else found



# a list where a tensor belongs raises PyTorch's TypeError (see guard.py)
tensor_first(globals(), __all__)
