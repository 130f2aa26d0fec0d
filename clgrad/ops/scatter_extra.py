"""Reducing scatters and scatters into views: ``scatter_reduce``/``index_reduce``, ``masked_scatter``,
``select_scatter``/``slice_scatter``/``diagonal_scatter``/``as_strided_scatter``; and the index helpers
``unravel_index``, ``tril_indices``/``triu_indices``, ``unique_consecutive``.

Everything is composed from existing ops, so it runs on every backend and most gradients come with the
composition. ``sum``/``mean`` reductions are ``scatter_add`` (plus a count); ``prod`` is ``scatter(reduce=
'multiply')`` with PyTorch's zero-aware backward; ``amax``/``amin`` have no atomic float max: they sort the
scattered values by (target position, value) with two stable sorts and keep each segment's last (first) value,
which is deterministic; their gradient is shared evenly among ties, as PyTorch does.
"""
from __future__ import annotations

import math
from numbers import Integral

import numpy as np

from .. import dtypes as D
from ..autograd.function import Function
from ..autograd.grad_mode import no_grad
from ..autograd.graph import inplace, needs_graph
from ..tensor import is_tensor
from . import views as V
from .creation import arange, full, tensor, zeros
from .gather import _pad_to, _scatter_checks, gather, scatter, scatter_add
from .guard import tensor_first
from .joins import cat
from .math import where
from .scans import argsort, cumsum

__all__ = ["scatter_reduce", "index_reduce", "masked_scatter", "select_scatter", "slice_scatter",
           "diagonal_scatter", "as_strided_scatter", "unravel_index", "tril_indices", "triu_indices",
           "unique_consecutive"]

_REDUCES = ("sum", "prod", "mean", "amax", "amin")


# ---- scatter_reduce / index_reduce ---------------------------------------------------------------


def _head(src, index):
    """The part of ``src`` that ``index`` covers (src may be larger than index in every dim)."""
    if tuple(src._shape) == tuple(index._shape):
        return src
    return src[tuple(slice(0, n) for n in index._shape)]


def _positions(shape, dim: int, index):
    """Row-major flat position in a tensor of ``shape`` of every element of gather/scatter's index space."""
    strides = _row_major(shape)
    pos = index * strides[dim]
    for k, n in enumerate(index._shape):
        if k != dim and n > 1:
            pos = pos + arange(n, device=index.device).reshape([n if j == k else 1 for j in range(index.dim())]) \
                * strides[k]
    return pos


def _row_major(shape) -> list:
    strides, step = [], 1
    for n in reversed(tuple(shape)):
        strides.insert(0, step)
        step *= max(n, 1)
    return strides


def _check_bounds(index, dim: int, size: int) -> None:
    """The positions below fold ``index`` into flat offsets, so an index out of range must fail first."""
    bad = index[(index < 0) | (index >= size)]
    if bad.numel():
        raise RuntimeError(f"index {int(bad[0].item())} is out of bounds for dimension {dim} with size {size}")


def _extreme(x, dim: int, index, src, reduce: str, include_self: bool):
    """scatter_reduce amax/amin without a graph: two stable sorts put every target's values in order."""
    with no_grad():
        x1 = x.reshape(1) if x.dim() == 0 else x
        i1 = index.reshape(1) if index.dim() == 0 else index
        s1 = src.reshape(1) if src.dim() == 0 else src
        out = x1.contiguous().clone()
        if i1.numel() == 0:
            return out.reshape(x._shape)
        _check_bounds(i1, dim, x1._shape[dim])
        flat = out.reshape(-1)
        pos = _positions(x1._shape, dim, i1).reshape(-1)
        vals = _head(s1, i1).reshape(-1)
        order = argsort(vals, stable=True)  # NaN last
        pos, vals = pos[order], vals[order]
        order = argsort(pos, stable=True)
        pos, vals = pos[order], vals[order]
        step = pos[1:] != pos[:-1]
        one = tensor([True], device=x.device)
        edge = cat([step, one]) if reduce == "amax" else cat([one, step])
        p, v = pos[edge], vals[edge]
        if include_self:
            v = flat[p].maximum(v) if reduce == "amax" else flat[p].minimum(v)
        flat[p] = v
        if reduce == "amin" and x.dtype.kind == "f":  # a NaN sorts last but wins, as in PyTorch
            flat[pos[vals.isnan()]] = math.nan
        return out.reshape(x._shape)


def _prod(x, dim: int, index, src, include_self: bool):
    base = x if include_self else scatter(x, dim, index, 1)
    return scatter(base, dim, index, src, reduce="multiply")


def _mean(x, dim: int, index, src, include_self: bool):
    base = x if include_self else scatter(x, dim, index, 0)
    total = scatter_add(base, dim, index, src)
    count = scatter_add(full(x._shape, int(include_self), dtype=x.dtype, device=x.device), dim, index,
                        full(index._shape, 1, dtype=x.dtype, device=x.device))
    count = where(count == 0, 1, count)
    if x.dtype.kind == "f":
        return total / count
    return total.div(count, rounding_mode="floor")


def _reduce_raw(x, dim: int, index, src, reduce: str, include_self: bool):
    with no_grad():
        if reduce == "prod":
            return _prod(x, dim, index, src, include_self)
        return _extreme(x, dim, index, src, reduce, include_self)


class ScatterReduce(Function):
    """scatter_reduce prod/amax/amin (sum and mean are compositions); backward as PyTorch's."""

    node_name = "ScatterReduceBackward0"

    @staticmethod
    def forward(ctx, x, dim, index, src, reduce, include_self):
        out = _reduce_raw(x, dim, index, src, reduce, include_self)
        ctx.meta = (dim, reduce, include_self)
        ctx.save_for_backward(x, index, src, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, index, src, out = ctx.saved_tensors
        dim, reduce, include_self = ctx.meta
        part = _head(src, index)
        if reduce == "prod":
            gx, gsrc = _prod_grads(grad, x, dim, index, part, out, include_self)
        else:
            value = gather(out, dim, index)
            hit_x, hit_src = (x == out), (part == value)
            n = scatter_add(hit_x.to(grad.dtype), dim, index, hit_src.to(grad.dtype))
            share = grad / n
            gx, gsrc = hit_x * share, hit_src * gather(share, dim, index)
        if not include_self:
            gx = scatter(gx, dim, index, 0)
        return gx, None, None, _pad_to(gsrc, src._shape), None, None


def _prod_grads(grad, x, dim, index, src, out, include_self):
    """PyTorch's prod gradient: the product of the others, also where an input is zero."""
    masked_x = x.masked_fill(x == 0, 1)
    gx = grad * scatter_reduce(masked_x, dim, index, src, "prod", include_self=include_self) / masked_x
    src_zero = src == 0
    zeros_at = gather(scatter_add(zeros(x._shape, dtype=x.dtype, device=x.device), dim, index,
                                  src_zero.to(x.dtype)), dim, index)
    single = src_zero & (zeros_at == 1)
    others = scatter_reduce(x, dim, index, src.masked_fill(single, 1), "prod", include_self=include_self)
    gsrc = where(single, gather(grad * others, dim, index), gather(grad * out, dim, index) / src.masked_fill(src_zero, 1))
    return gx, gsrc


def _scatter_reduce(x, dim, index, src, reduce, include_self, in_place: bool):
    if reduce not in _REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if not is_tensor(src):
        raise TypeError(f"scatter_reduce(): argument 'src' must be Tensor, not {type(src).__name__}")
    if reduce == "mean" and x.dtype is D.bool:
        raise NotImplementedError("\"scatter_reduce_mean\" not implemented for 'Bool'")
    d = V.wrap_dim(dim, x.dim())
    _scatter_checks("scatter_reduce", x, d, index, src)
    index = index.to(x.device, D.int64)
    if reduce in ("sum", "mean"):
        if reduce == "sum":
            fn = lambda old: scatter_add(old if include_self else scatter(old, d, index, 0), d, index, src)  # noqa: E731
        else:
            fn = lambda old: _mean(old, d, index, src, include_self)  # noqa: E731
    elif needs_graph(x, src):
        fn = lambda old: ScatterReduce.apply(old, d, index, src, reduce, include_self)  # noqa: E731
    else:
        fn = lambda old: _reduce_raw(old, d, index, src, reduce, include_self)  # noqa: E731
    if not in_place:
        return fn(x)
    if needs_graph(x, src):
        return inplace(x, fn)
    with no_grad():
        return x.copy_(fn(x))


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):  # noqa: A002
    """A copy of ``input`` where each ``src`` value along ``dim`` at ``index`` is reduced (sum, prod, mean,
    amax, amin) into its target, together with the value there when ``include_self``.

    >>> clgrad.zeros(2).scatter_reduce(0, clgrad.tensor([0, 0, 1]), clgrad.tensor([1., 3., 2.]), "amax")
    """
    return _scatter_reduce(input, dim, index, src, reduce, include_self, in_place=False)


def scatter_reduce_(input, dim, index, src, reduce, *, include_self=True):  # noqa: A002
    return _scatter_reduce(input, dim, index, src, reduce, include_self, in_place=True)


def _index_reduce(x, dim, index, source, reduce, include_self, in_place: bool):
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    if not is_tensor(index) or index.dim() > 1 or index.dtype not in (D.int64, D.int32):
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    if source.dtype is not x.dtype:
        raise RuntimeError(f"index_reduce_(): self ({x.dtype.scalar_name}) and source ({source.dtype.scalar_name}) "
                           "must have the same scalar type")
    d = V.wrap_dim(dim, x.dim())
    count = source._shape[d] if source.dim() else 1
    if index.numel() != count:
        raise RuntimeError(f"index_reduce_(): Number of indices ({index.numel()}) should be equal to source.size(dim):"
                           f" ({count}), for dim: {d}")
    if x.dim() == 0:
        x1, s1 = x.reshape(1), source.reshape(1)
        out = _scatter_reduce(x1, 0, index.reshape(1), s1, reduce, include_self, in_place=False).reshape(())
        return x.copy_(out) if in_place else out
    wide = index.to(x.device, D.int64).reshape([-1 if k == d else 1 for k in range(source.dim())])
    return _scatter_reduce(x, d, wide.expand(source._shape), source, reduce, include_self, in_place)


def index_reduce(input, dim, index, source, reduce, *, include_self=True):  # noqa: A002
    """A copy of ``input`` with the slices of ``source`` reduced (prod, mean, amax, amin) at ``index`` along
    ``dim``, together with the slice there when ``include_self``."""
    return _index_reduce(input, dim, index, source, reduce, include_self, in_place=False)


def index_reduce_(input, dim, index, source, reduce, *, include_self=True):  # noqa: A002
    return _index_reduce(input, dim, index, source, reduce, include_self, in_place=True)


# ---- masked_scatter and scatters into a view -------------------------------------------------------


def _masked_scatter(x, mask, source, in_place: bool):
    if not is_tensor(mask) or mask.dtype is not D.bool:
        got = mask.dtype.scalar_name if is_tensor(mask) else type(mask).__name__
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype {got}")
    if source.dtype is not x.dtype:
        raise RuntimeError("masked_scatter: expected self and source to have same dtypes but got "
                           f"{x.dtype.scalar_name} and {source.dtype.scalar_name}")
    shape = tuple(x._shape) if in_place else V.broadcast_shapes(x._shape, mask._shape)
    m = mask.to(x.device).expand(shape)
    picks = cumsum(m.reshape(-1), 0) - 1  # the k-th True takes source's k-th element (row-major)
    needed = int(picks[-1].item()) + 1 if picks.numel() else 0
    if needed > source.numel():
        raise RuntimeError("Number of elements of source < number of ones in mask")

    def compute(old):
        if needed == 0:
            return old.expand(shape).clone()
        vals = source.reshape(-1)[picks.clamp(min=0)].reshape(shape)
        return where(m, vals, old)

    if not in_place:
        return compute(x)
    if needs_graph(x, source):
        return inplace(x, compute)
    with no_grad():
        return x.copy_(compute(x))


def masked_scatter(input, mask, source):  # noqa: A002
    """A copy of ``input`` with ``source``'s elements, in order, written where ``mask`` is True (row-major)."""
    return _masked_scatter(input, mask, source, in_place=False)


def masked_scatter_(input, mask, source):  # noqa: A002
    return _masked_scatter(input, mask, source, in_place=True)


def _into_view(x, src, pick):
    """A copy of ``x`` with ``src`` written into the view ``pick`` selects, found on a row-major position map
    of ``x``'s shape (so autograd comes with index_copy)."""
    where_to = pick(arange(x.numel(), device=x.device).reshape(x._shape))
    if tuple(src._shape) != tuple(where_to._shape):
        raise RuntimeError("expected src to have a size equal to the slice of self. src size = "
                           f"{list(src._shape)}, slice size = {list(where_to._shape)}")
    flat = x.reshape(-1)
    return flat.index_copy(0, where_to.reshape(-1), src.to(x.dtype).reshape(-1)).reshape(x._shape)


def select_scatter(input, src, dim, index):  # noqa: A002
    """A copy of ``input`` with ``src`` written into ``input.select(dim, index)``."""
    return _into_view(input, src, lambda t: t.select(dim, index))


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):  # noqa: A002
    """A copy of ``input`` with ``src`` written into the slice ``start:end:step`` along ``dim``."""
    d = V.wrap_dim(dim, input.dim())
    return _into_view(input, src, lambda t: t[(slice(None),) * d + (slice(start, end, step),)])


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):  # noqa: A002
    """A copy of ``input`` with ``src`` written into ``input.diagonal(offset, dim1, dim2)``."""
    return _into_view(input, src, lambda t: t.diagonal(offset, dim1, dim2))


def _memory_offsets(shape, strides, offset: int, device):
    """The storage offset of every element of a view with ``shape``/``strides``/``offset``."""
    at = full(tuple(shape), offset, dtype=D.int64, device=device)
    for k, (n, step) in enumerate(zip(shape, strides)):
        if n > 1 and step:
            at = at + arange(n, device=device).reshape([n if j == k else 1 for j in range(len(shape))]) * step
    return at.reshape(-1)


def as_strided_scatter(input, src, size, stride, storage_offset=None):  # noqa: A002
    """A copy of ``input`` with ``src`` written into ``input.as_strided(size, stride, storage_offset)``: the
    view's storage offsets are matched against ``input``'s own (an offset no element of ``input`` has is
    dropped, as in PyTorch)."""
    x, dev = input, input.device
    off = x._offset if storage_offset is None else int(storage_offset)
    x.detach().as_strided(size, stride, off)  # the view must fit in input's storage
    if tuple(src._shape) != tuple(size):
        raise RuntimeError("expected src to have a size equal to the slice of self. src size = "
                           f"{list(src._shape)}, slice size = {list(size)}")
    if x.numel() == 0 or src.numel() == 0:
        return x.clone()
    extent = x._offset + sum((n - 1) * s for n, s in zip(x._shape, x._strides)) + 1
    table = full((extent,), -1, dtype=D.int64, device=dev)  # storage offset -> input's row-major position
    table[_memory_offsets(x._shape, x._strides, x._offset, dev)] = arange(x.numel(), device=dev)
    at = _memory_offsets(tuple(size), tuple(stride), off, dev)
    pos = where(at < extent, table[at.clamp(max=extent - 1)], -1)
    keep = pos >= 0
    flat = x.reshape(-1)
    return flat.index_copy(0, pos[keep], src.to(x.dtype).reshape(-1)[keep]).reshape(x._shape)


# ---- index helpers ---------------------------------------------------------------------------------


def unravel_index(indices, shape):
    """The coordinates in a row-major tensor of ``shape`` of flat ``indices`` (a tuple of int64 tensors);
    indices outside the range wrap, as in PyTorch."""
    if not is_tensor(indices):
        indices = tensor(indices)
    if indices.dtype.kind not in "iu":
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, Integral) else tuple(int(n) for n in shape)
    if any(n < 0 for n in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    rest, coords = indices.to(D.int64), []
    for n in reversed(shape):
        coords.insert(0, rest.remainder(n))
        rest = rest.div(n, rounding_mode="floor")
    return tuple(coords)


def _tri_indices(which, row, col, offset, dtype, device):
    dt = D.int64 if dtype is None else dtype
    if dt not in (D.int64, D.int32):
        raise NotImplementedError(f"\"{which}_indices\" not implemented for '{dt.scalar_name}'")
    for name, n in (("row", row), ("col", col)):
        if n < 0:
            raise RuntimeError(f"{name} must be non-negative, got{n}")
    rows, cols = (np.tril_indices if which == "tril" else np.triu_indices)(row, offset, col)
    return tensor(np.stack([rows, cols]).astype(np.int64).reshape(2, -1), dtype=dt, device=device)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (2, N) coordinates of the lower triangle of a ``row`` x ``col`` matrix, row by row."""
    return _tri_indices("tril", row, col, offset, dtype, device)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (2, N) coordinates of the upper triangle of a ``row`` x ``col`` matrix, row by row."""
    return _tri_indices("triu", row, col, offset, dtype, device)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """``input`` with each run of equal consecutive elements (slices along ``dim``) kept once; optionally
    each element's run number (``return_inverse``) and the run lengths (``return_counts``)."""
    x = input.detach()
    if dim is None:
        rows, lead = x.reshape(-1, 1), x.reshape(-1)
    else:
        d = V.wrap_dim(dim, x.dim())
        lead = x.movedim(d, 0)
        rows = lead.reshape(lead._shape[0], -1) if lead._shape[0] else lead.reshape(0, 1)
    n = rows._shape[0]
    if n:
        new = cat([tensor([True], device=x.device), (rows[1:] != rows[:-1]).any(1)])
    else:
        new = zeros(0, dtype=D.bool, device=x.device)
    starts = new.nonzero().reshape(-1)
    values = lead[starts] if dim is None else lead[starts].movedim(0, d)
    result = [values]
    if return_inverse:
        inverse = cumsum(new.to(D.int64), 0) - 1
        result.append(inverse.reshape(x._shape) if dim is None else inverse)
    if return_counts:
        ends = cat([starts[1:], tensor([n], device=x.device)])
        result.append(ends - starts)
    return result[0] if len(result) == 1 else tuple(result)


def install(T) -> None:
    """Attach this module's ops to Tensor as methods."""
    for fn in (scatter_reduce, scatter_reduce_, index_reduce, index_reduce_, masked_scatter, masked_scatter_,
               select_scatter, slice_scatter, diagonal_scatter, as_strided_scatter, unique_consecutive):
        setattr(T, fn.__name__, fn)


# a list or a number where a tensor belongs raises PyTorch's TypeError (see guard.py)
tensor_first(globals(), __all__)
