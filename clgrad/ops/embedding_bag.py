"""``embedding_bag``: sums, means or maxima of bags of embedding rows, without building the per-index rows of
every bag as separate tensors.

Composed: the rows of all indices are one ``embedding`` lookup; the bags (given by ``offsets``, read on the host
as PyTorch's CPU kernel does) become a padded (bags, longest bag) position matrix, one ``index_select`` gathers
the rows into it, and a masked sum or max reduces each bag. Gradients (w.r.t. weight and per_sample_weights) come
from those ops; ``padding_idx`` entries and the padding of short bags are masked out of both directions.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as D
from . import creation
from .nnops import embedding

__all__: list[str] = []
FUNCTIONAL = ["embedding_bag"]

_MODES = ("sum", "mean", "max")


def _flat_inputs(input, offsets, per_sample_weights):
    """(1-D indices, offsets, flat per_sample_weights): a 2-D input is bags of its row length."""
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {offsets.type()}")
        step = input.shape[1]
        offsets = creation.arange(0, input.numel(), step if step else 1, dtype=input.dtype, device=input.device)
        if step == 0:
            offsets = creation.zeros((input.shape[0],), dtype=input.dtype, device=input.device)
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    return input, offsets, per_sample_weights


def _bag_positions(offsets, numel: int, include_last_offset: bool):
    """(positions [bags, longest], valid [bags, longest]) as numpy arrays: bag b holds indices
    offsets[b] .. offsets[b + 1] - 1 (the last bag ends at numel, or at the last offset)."""
    offs = np.asarray(offsets.cpu().numpy(), dtype=np.int64)
    if offs.size and offs[0] != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                           f"position 0. However, got {offs[0]}")
    ends = np.append(offs[1:], numel) if not include_last_offset else offs[1:]
    starts = offs if not include_last_offset else offs[:-1]
    ends = np.minimum(ends, numel)
    if np.any(ends < starts):
        raise RuntimeError("offsets must be a non-decreasing sequence")
    lengths = ends - starts
    longest = int(lengths.max()) if lengths.size else 0
    cols = np.arange(longest, dtype=np.int64)
    valid = cols[None, :] < lengths[:, None]
    pos = np.where(valid, starts[:, None] + cols[None, :], 0)
    return pos, valid


def _check(input, weight, offsets, mode, per_sample_weights):
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if input.dtype not in (D.int64, D.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {input.type()} instead (while checking arguments for embedding_bag)")
    if offsets is not None and offsets.dtype not in (D.int64, D.int32):
        raise RuntimeError("Expected tensor for argument #1 'offsets' to have one of the following scalar types: "
                           f"Long, Int; but got {offsets.type()} instead (while checking arguments for "
                           "embedding_bag)")
    if mode not in _MODES:
        raise ValueError(f"mode has to be one of sum, mean or max, but got {mode}")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                      f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                                      f"on GitHub.")
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ValueError(f"embedding_bag: If per_sample_weights ({tuple(per_sample_weights.shape)}) is not None, "
                             f"then it must have the same shape as the input ({tuple(input.shape)})")


def _reduce_bags(rows, mask, mode: str, psw):
    """rows [bags, longest, D] and mask [bags, longest] -> [bags, D]."""
    count = mask.sum(1, keepdim=True)
    if mode == "max":
        neg = rows.masked_fill(mask.logical_not().unsqueeze(-1), float("-inf"))
        best = neg.max(1).values
        return best.where(count > 0, 0.0)
    w = mask.to(rows.dtype)
    if psw is not None:
        w = w * psw
    total = (rows * w.unsqueeze(-1)).sum(1)
    return total / count.clamp(min=1).to(rows.dtype) if mode == "mean" else total


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Per bag, the sum/mean/max of the rows of ``weight`` its indices pick: bags are the rows of a 2-D ``input``,
    or the runs of a 1-D ``input`` starting at ``offsets``.

    >>> F.embedding_bag(clgrad.tensor([1, 2, 4, 5, 4]), w, clgrad.tensor([0, 2]), mode="sum").shape
    clgrad.Size([2, 3])
    """
    if weight.dtype.kind in "iu" and input.dtype.kind == "f":  # the old (weight, input) argument order
        input, weight = weight, input
    _check(input, weight, offsets, mode, per_sample_weights)
    input, offsets, psw = _flat_inputs(input, offsets, per_sample_weights)
    num, dim = weight.shape
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise AssertionError("padding_idx must be within the number of embeddings")
        padding_idx %= num
    if sparse:
        raise NotImplementedError("embedding_bag: sparse gradients are not supported by clgrad; use sparse=False")
    pos, valid = _bag_positions(offsets, input.numel(), include_last_offset)
    bags, longest = pos.shape
    if longest == 0:
        keep = weight.sum() * 0 if psw is None else weight.sum() * 0 + psw.sum() * 0
        return creation.zeros((bags, dim), dtype=weight.dtype, device=weight.device) + keep
    flat = embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq)
    where = creation.tensor(pos.reshape(-1), dtype=D.int64, device=weight.device)
    rows = flat.index_select(0, where).reshape(bags, longest, dim)
    mask = creation.tensor(valid, device=weight.device)
    if padding_idx is not None:
        mask = mask & (input.index_select(0, where).reshape(bags, longest) != padding_idx)
    w = psw.index_select(0, where).reshape(bags, longest) if psw is not None else None
    return _reduce_bags(rows, mask, mode, w)
