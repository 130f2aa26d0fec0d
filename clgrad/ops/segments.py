"""Reductions over segments and bins: ``segment_reduce`` (op_db's ``_segment_reduce``) and ``histogramdd``.

Both are composed from clgrad ops. ``segment_reduce`` reads the segment lengths (or offsets) on the host, gathers
the data into a padded (segments, longest, ...) block with one ``index_select`` and reduces it masked, so it is
differentiable as its parts are. ``histogramdd`` bins each coordinate with ``histogram``'s helpers and counts the
combined bin numbers with one ``bincount``.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from .. import dtypes as D
from ..tensor import is_tensor
from . import creation
from . import stats_extra as H

__all__ = ["segment_reduce", "_segment_reduce", "histogramdd"]

_REDUCES = ("sum", "mean", "max", "min", "prod")


def _segment_layout(lengths, offsets, size: int):
    """(positions, valid) numpy arrays [segments, longest] of the data rows in each segment."""
    if (lengths is None) == (offsets is None):
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined")
    if lengths is not None:
        lens = np.asarray(lengths.cpu().numpy(), np.int64)
        if lens.ndim != 1:
            raise NotImplementedError("segment_reduce: clgrad supports 1-D lengths/offsets (one segmentation of the "
                                      "reduced axis), not batched ones")
        starts = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    else:
        offs = np.asarray(offsets.cpu().numpy(), np.int64)
        if offs.ndim != 1:
            raise NotImplementedError("segment_reduce: clgrad supports 1-D lengths/offsets (one segmentation of the "
                                      "reduced axis), not batched ones")
        starts, lens = offs[:-1], np.diff(offs)
    if (lens < 0).any():
        raise RuntimeError("lengths contains negative value!")
    if lens.sum() != size:
        raise RuntimeError(f"Expected all rows of lengths along axis to sum to data.size(lengths.dim()-1) when "
                           f"!unsafe, but got {int(lens.sum())} and {size}")
    longest = int(lens.max()) if lens.size else 0
    cols = np.arange(longest, dtype=np.int64)
    valid = cols[None, :] < lens[:, None]
    return np.where(valid, starts[:, None] + cols[None, :], 0), valid


def _reduce_block(rows, mask, reduce: str, initial):
    """rows [segments, longest, ...] reduced over dim 1 where ``mask`` [segments, longest, 1...] is set."""
    if reduce in ("max", "min"):
        fill = float("-inf") if reduce == "max" else float("inf")
        vals = rows.masked_fill(mask.logical_not(), fill)
        out = vals.amax(1) if reduce == "max" else vals.amin(1)
        if initial is not None:
            out = out.clamp(min=initial) if reduce == "max" else out.clamp(max=initial)
        return out
    if reduce == "prod":
        out = rows.masked_fill(mask.logical_not(), 1.0).prod(1)
        return out * initial if initial is not None else out
    total = rows.masked_fill(mask.logical_not(), 0.0).sum(1)
    if initial is not None:
        total = total + initial
    if reduce == "sum":
        return total
    count = mask.sum(1).to(rows.dtype)
    return total / (count if initial is None else count.clamp(min=1))


def segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None):
    """Reduce ``data`` along ``axis`` over consecutive segments given by ``lengths`` (or ``offsets``): 'sum',
    'mean', 'max', 'min' or 'prod', ``initial`` joining every segment (the value of an empty one).

    >>> clgrad.segment_reduce(clgrad.tensor([1., 2., 3.]), "sum", lengths=clgrad.tensor([1, 2]))  # [1., 5.]
    """
    if reduce not in _REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, max, min, mean or prod, got {reduce}")
    if indices is not None:
        raise NotImplementedError("segment_reduce(): indices based reduction is not supported yet.")
    axis = axis + data.dim() if axis < 0 else axis
    seg = lengths if lengths is not None else offsets
    if seg is not None and axis != seg.dim() - 1:
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of lengths but got {axis}.")
    x = data.movedim(axis, 0)
    pos, valid = _segment_layout(lengths, offsets, x.shape[0])
    segments, longest = pos.shape
    rest = tuple(x.shape[1:])
    if longest == 0:
        x = creation.zeros((1,) + rest, dtype=data.dtype, device=data.device) + x.sum(0) * 0
        pos, valid = np.zeros((segments, 1), np.int64), np.zeros((segments, 1), bool)
        longest = 1
    where = creation.tensor(pos.reshape(-1), dtype=D.int64, device=data.device)
    rows = x.index_select(0, where).reshape(segments, longest, *rest)
    mask = creation.tensor(valid.reshape(segments, longest, *(1,) * len(rest)), device=data.device)
    return _reduce_block(rows, mask, reduce, initial).movedim(0, axis)


_segment_reduce = segment_reduce


class _HistogramDD(tuple):
    """``(hist, bin_edges)`` as ``torch.return_types.histogramdd``."""

    def __new__(cls, hist, bin_edges):
        return tuple.__new__(cls, (hist, bin_edges))

    hist = property(lambda self: self[0])
    bin_edges = property(lambda self: self[1])

    def __repr__(self) -> str:
        return f"clgrad.return_types.histogramdd(\nhist={self[0]!r},\nbin_edges={self[1]!r})"


def _dd_bins(bins, dims: int):
    if isinstance(bins, int):
        return [bins] * dims
    bins = list(bins)
    if len(bins) != dims:
        raise RuntimeError(f"torch.histogramdd: expected {dims} sequences of bin edges for each of the {dims} "
                           f"dimensions of the input, but got {len(bins)}")
    return bins


def histogramdd(input, bins, *, range=None, weight=None, density=False, out=None):  # noqa: A002 - torch's names
    """``(hist, bin_edges)``: a D-dimensional histogram of the points in the rows of ``input`` (..., D); ``bins``
    per dimension is a count of equal-width bins (over ``range`` = [lo0, hi0, lo1, hi1, ...] or the data's) or a
    1-D tensor of edges. Not differentiable (as in torch).

    >>> clgrad.histogramdd(clgrad.rand(100, 2), bins=[3, 4]).hist.shape  # clgrad.Size([3, 4])
    """
    H._check_hist_input("histogramdd", input)
    if input.dim() < 2:
        raise RuntimeError(f"torch.histogramdd: input tensor should have at least 2 dimensions, but got "
                           f"{input.dim()}")
    dims = input.shape[-1]
    x = input.detach().reshape(-1, dims)
    bins = _dd_bins(bins, dims)
    if range is not None and len(range) != 2 * dims:
        raise RuntimeError(f"torch.histogramdd: for a {dims}-dimensional histogram range should have {2 * dims} "
                           f"elements, but got {len(range)}")
    if weight is not None and tuple(weight.shape) != tuple(input.shape[:-1]):
        raise RuntimeError("torch.histogramdd: if weight tensor is provided it should have the same shape as the "
                           f"input tensor excluding its innermost dimension, but got input with shape "
                           f"{list(input.shape)} and weight with shape {list(weight.shape)}")
    edges, flat, valid, sizes = [], None, None, []
    for d in builtins.range(dims):  # ``range`` is torch's parameter here
        col = x[:, d].contiguous()
        e = H._histogram_edges(col, bins[d], range[2 * d:2 * d + 2] if range is not None else None)
        n = e.numel() - 1
        inside = (col >= e[0]) & (col <= e[n])
        pos = H._bins_of(col.where(inside, e[0]), e, not is_tensor(bins[d])) if col.numel() else col.to(D.int64)
        flat = pos if flat is None else flat * n + pos
        valid = inside if valid is None else valid & inside
        edges.append(e)
        sizes.append(n)
    total = math.prod(sizes)
    if flat is None or x.shape[0] == 0:
        hist = creation.zeros(tuple(sizes), dtype=input.dtype, device=input.device)
    else:
        hist = H._count(x[:, 0], flat, valid, total, weight, input.dtype).reshape(*sizes)
    if density:
        hist = hist / hist.sum()
        for d, e in enumerate(edges):
            shape = [1] * dims
            shape[d] = sizes[d]
            hist = hist / (e[1:] - e[:-1]).reshape(shape)
    if out is not None:
        out[0].copy_(hist)
        return _HistogramDD(out[0], edges)
    return _HistogramDD(hist, edges)
