"""Scans and sorting: ``cumsum``/``cumprod``, ``sort``/``argsort``/``topk``/``kthvalue``/``median``,
``unique``, ``bincount`` with PyTorch's signatures, dtypes and errors (statistics are in ``stats.py``).

Scans and sorts are backend primitives (``scan``, ``sort``, ``gather_dim``,
``scatter_dim``, ``bincount``); ``topk``, ``kthvalue``, ``median`` and ``unique`` are built on the stable sort.
Each differentiable op is a ``Function`` named as PyTorch names its node; its backward is written in clgrad ops.
"""
from __future__ import annotations

import builtins
import math

from .. import backends
from .. import dtypes as D
from ..autograd.function import Function
from ..autograd.graph import needs_graph
from ..tensor import Tensor
from . import pointwise as P
from . import reduction as R
from . import shape as S
from .creation import full, zeros
from .guard import tensor_first
from .pointwise import apply, fill
from .views import wrap_dim

__all__ = ["cumsum", "cumprod", "sort", "argsort", "msort", "topk", "kthvalue", "median", "unique", "bincount"]

RETURN_TYPES = {name: type(name, (R._ReturnType,), {"_name": name, "__slots__": ()})
                for name in ("sort", "topk", "kthvalue", "median")}


def _new(shape, dt, device):
    return Tensor._empty(tuple(shape), dt, device)


# ---- cumsum / cumprod ---------------------------------------------------------------------------
def _scan(op: str, x, dim: int, dtype=None, reverse: bool = False):
    if x.dtype.kind == "c":
        raise P.unsupported("cum" + op, x.dtype, x.device)
    x = R._cast(x, dtype)
    out_dt = x.dtype if dtype is not None or x.dtype.kind == "f" else D.int64
    out = _new(x.shape, out_dt, x.device)
    backends.get(x.device).scan(op, x, dim, out, reverse)
    return out


class _Cumsum(Function):
    node_name = "CumsumBackward0"

    @staticmethod
    def forward(ctx, x, dim, dtype):
        ctx.meta = (dim, x.dtype)
        return _scan("sum", x, dim, dtype)

    @staticmethod
    def backward(ctx, grad):
        dim, dt = ctx.meta
        g = _RevCumsum.apply(grad, dim)
        return (g if g.dtype is dt else g.to(dt)), None, None


class _RevCumsum(Function):
    """Sums from each position to the end of the row: the gradient of cumsum (and cumsum is its gradient)."""

    node_name = "CumsumBackward0"

    @staticmethod
    def forward(ctx, g, dim):
        ctx.dim = dim
        return _scan("sum", g, dim, reverse=True)

    @staticmethod
    def backward(ctx, grad):
        return _Cumsum.apply(grad, ctx.dim, None), None


def _revcumsum(t, dim):
    return _RevCumsum.apply(t, dim) if needs_graph(t) else _scan("sum", t, dim, reverse=True)


class _Cumprod(Function):
    """Zero-safe: before a row's first zero the gradient is revcumsum(g * y) / x; at the first zero it is the
    revcumsum of g times the cumprod with that zero replaced by 1; after it, 0."""

    node_name = "CumprodBackward0"

    @staticmethod
    def forward(ctx, x, dim, dtype):
        out = _scan("prod", x, dim, dtype)
        ctx.meta = (dim, x.dtype)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        dim, dt = ctx.meta
        x = x.to(y.dtype) if x.dtype is not y.dtype else x
        zeros_so_far = cumsum(x == 0, dim)
        before = zeros_so_far == 0
        first = (x == 0) & (zeros_so_far == 1)
        a = _revcumsum(grad * y, dim) / x.where(before, 1.0)
        b = _revcumsum(grad * cumprod(x.where(~first, 1.0), dim), dim)
        g = a.where(before, b.where(first, 0.0))
        return (g if g.dtype is dt else g.to(dt)), None, None


def cumsum(input, dim, *, dtype=None):
    """Running sums along ``dim``; bool and integer inputs give int64 unless ``dtype`` says otherwise.

    >>> clgrad.cumsum(clgrad.tensor([1, 2, 3]), 0)  # tensor([1, 3, 6])
    """
    d = wrap_dim(dim, input.dim())
    if input.dtype.kind == "c" and dtype is None:
        return P.COMPLEX["cumsum"](input, d)
    if needs_graph(input):
        return _Cumsum.apply(input, d, dtype)
    return _scan("sum", input, d, dtype)


def cumprod(input, dim, *, dtype=None):
    """Running products along ``dim``; bool and integer inputs give int64 unless ``dtype`` says otherwise."""
    d = wrap_dim(dim, input.dim())
    if needs_graph(input):
        return _Cumprod.apply(input, d, dtype)
    return _scan("prod", input, d, dtype)


# ---- gather / scatter along a dim: the gradients of the sort family ---------------------------------
class _Gather(Function):
    """``out[.., j, ..] = x[.., index[.., j, ..], ..]``; its gradient scatters back (indices are distinct)."""

    node_name = "GatherBackward0"

    @staticmethod
    def forward(ctx, x, dim, index):
        ctx.meta = (dim, x.shape[dim])
        ctx.save_for_backward(index)
        out = _new(index.shape, x.dtype, x.device)
        backends.get(x.device).gather_dim(x, dim, index, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        return _ScatterInto.apply(grad, ctx.meta[0], index, ctx.meta[1]), None, None


class _ScatterInto(Function):
    """Zeros of size ``n`` along ``dim`` with ``src`` placed at ``index``: gives a selected value its gradient."""

    node_name = "ScatterBackward0"

    @staticmethod
    def forward(ctx, src, dim, index, n):
        ctx.dim = dim
        ctx.save_for_backward(index)
        out = zeros(tuple(n if d == dim else s for d, s in enumerate(src.shape)), dtype=src.dtype, device=src.device)
        backends.get(src.device).scatter_dim(src, dim, index, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        return _Gather.apply(grad, ctx.dim, index), None, None, None


# ---- sort / topk / kthvalue / median -------------------------------------------------------------
def _sort_raw(x, dim: int, descending: bool):
    values, indices = _new(x.shape, x.dtype, x.device), _new(x.shape, D.int64, x.device)
    backends.get(x.device).sort(x, dim, descending, values, indices)
    return values, indices


def _head(t, dim: int, start: int, length: int):
    return S.narrow(t, dim, start, length).contiguous()


class _Selecting(Function):
    """Ops whose values are picked from the input (sort, topk, kthvalue, median with a dim): the gradient of
    each value goes to its index. ``pick(x, *args)`` returns (values, indices, keepdim-shaped indices)."""

    @classmethod
    def forward(cls, ctx, x, dim, *args):
        values, indices, kept = cls.pick(x, dim, *args)
        ctx.meta = (dim, x.shape[dim], tuple(kept.shape))
        ctx.save_for_backward(kept)
        ctx.mark_non_differentiable(indices)
        return values, indices

    @classmethod
    def backward(cls, ctx, grad, _grad_indices=None):
        (kept,) = ctx.saved_tensors
        dim, n, shape = ctx.meta
        return (_ScatterInto.apply(grad.reshape(shape), dim, kept, n),) + (None,) * (len(ctx.needs_input_grad) - 1)


def _pick_sort(x, dim, descending):
    values, indices = _sort_raw(x, dim, descending)
    return values, indices, indices


def _pick_topk(x, dim, k, largest):
    values, indices = _sort_raw(x, dim, largest)
    values, indices = _head(values, dim, 0, k), _head(indices, dim, 0, k)
    return values, indices, indices


def _pick_kth(x, dim, k, keepdim):
    values, indices = _sort_raw(x, dim, False)
    return _keep(_head(values, dim, k - 1, 1), _head(indices, dim, k - 1, 1), dim, keepdim)


def _pick_median(x, dim, keepdim):
    """The lower median; a row with NaN gives its first NaN (they sort last, in order), as torch does."""
    values, indices = _sort_raw(x, dim, False)
    n = x.shape[dim]
    if x.dtype.kind == "f":
        nans = R.sum(x.isnan(), dim, keepdim=True)
        pos = (n - nans).where(nans > 0, (n - 1) // 2)
    else:
        pos = full(tuple(1 if d == dim else s for d, s in enumerate(x.shape)), (n - 1) // 2, dtype=D.int64,
                   device=x.device)
    be = backends.get(x.device)
    v, i = _new(pos.shape, x.dtype, x.device), _new(pos.shape, D.int64, x.device)
    be.gather_dim(values, dim, pos, v)
    be.gather_dim(indices, dim, pos, i)
    return _keep(v, i, dim, keepdim)


def _keep(v, i, dim, keepdim):
    if keepdim:
        return v, i, i
    return S.squeeze(v, dim), S.squeeze(i, dim), i


_Sort = type("_Sort", (_Selecting,), {"node_name": "SortBackward0", "pick": staticmethod(_pick_sort)})
_Topk = type("_Topk", (_Selecting,), {"node_name": "TopkBackward0", "pick": staticmethod(_pick_topk)})
_Kthvalue = type("_Kthvalue", (_Selecting,), {"node_name": "KthvalueBackward0", "pick": staticmethod(_pick_kth)})
_MedianDim = type("_MedianDim", (_Selecting,), {"node_name": "MedianBackward1", "pick": staticmethod(_pick_median)})


def _select(fn, name: str, input, dim, *args):
    """Run a selecting op: 0-dim inputs act as one-element rows; the op's (values, indices) come back."""
    scalar = input.dim() == 0
    d = wrap_dim(dim, input.dim())
    x = input.reshape(1) if scalar else input
    out = fn.apply(x, d, *args) if needs_graph(x) else fn.pick(x, d, *args)[:2]
    if scalar:
        out = tuple(t.reshape(()) if t.dim() == 1 and t.numel() == 1 else t for t in out)
    return RETURN_TYPES[name](*out)


def sort(input, dim=-1, descending=False, stable=False):
    """Sorted values along ``dim`` and their indices; always stable (equal keys keep their order), NaN last
    (first when ``descending``), as PyTorch sorts.

    >>> clgrad.sort(clgrad.tensor([3, 1, 2])).indices  # tensor([1, 2, 0])
    """
    return _select(_Sort, "sort", input, dim, bool(descending))


def argsort(input, dim=-1, descending=False, stable=False):
    """The indices that sort ``input`` along ``dim`` (stable)."""
    return sort(input, dim, descending).indices


def msort(input):
    """``sort(input, dim=0).values``."""
    return sort(input, 0).values


def _size(x, dim) -> int:
    return x.shape[wrap_dim(dim, x.dim())] if x.dim() else 1


def topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A002 - torch's name
    """The ``k`` largest (or smallest) values along ``dim`` and their indices, in order; NaN counts as largest."""
    if not 0 <= k <= _size(input, dim):
        raise RuntimeError("selected index k out of range")
    return _select(_Topk, "topk", input, dim, int(k), bool(largest))


def kthvalue(input, k, dim=-1, keepdim=False):
    """The ``k``-th smallest value along ``dim`` (1-based) and its index."""
    d = wrap_dim(dim, input.dim())
    n = _size(input, dim)
    if n == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size.")
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    return _select(_Kthvalue, "kthvalue", input, dim, int(k), bool(keepdim))


class _MedianAll(Function):
    """``median(x)``: the gradient is shared evenly among the elements equal to the median (torch's rule)."""

    node_name = "MedianBackward0"

    @staticmethod
    def forward(ctx, x):
        out = _median_all(x)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        hit = (x == out) | (x.isnan() & out.isnan())
        return grad * hit / R.sum(hit), None


def _median_all(x):
    if x.numel() == 0:
        return full((), math.nan, dtype=x.dtype, device=x.device)
    return _pick_median(x.reshape(-1), 0, False)[0]


def median(input, dim=None, keepdim=False):
    """``median(x)``: the lower median of every element (NaN if there is one); ``median(x, dim)``:
    ``(values, indices)`` along ``dim``."""
    if dim is None:
        return _MedianAll.apply(input) if needs_graph(input) else _median_all(input)
    d = wrap_dim(dim, input.dim())
    if _size(input, dim) == 0:
        raise IndexError(f"median(): Expected reduction dim {d} to have non-zero size.")
    return _select(_MedianDim, "median", input, dim, bool(keepdim))


# ---- unique / bincount --------------------------------------------------------------------------
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """The distinct values of ``input`` in ascending order (NaNs each stay distinct, as in torch), optionally with
    each element's position among them (``return_inverse``) and how often each occurs (``return_counts``)."""
    if dim is not None:
        raise NotImplementedError("unique(dim=...) is not implemented in clgrad; use dim=None (flattened)")
    x, dev = input.detach().reshape(-1), input.device
    n = x.numel()
    be = backends.get(dev)
    values, perm = _sort_raw(x, 0, False)
    flags = _new((n,), D.int64, dev)  # 1 where a sorted value differs from the one before it
    if n:
        fill(S.narrow(flags, 0, 0, 1), 1)
        apply("ne", S.narrow(values, 0, 1, n - 1), S.narrow(values, 0, 0, n - 1), out=S.narrow(flags, 0, 1, n - 1))
    ids = _scan("sum", flags, 0)
    apply("sub", ids, 1, out=ids)  # each sorted element's place among the distinct values
    u = int(ids[n - 1].item()) + 1 if n else 0
    out = _new((u,), x.dtype, dev)
    be.scatter_dim(values, 0, ids, out, mask=flags)
    result = [out]
    if return_inverse:
        inverse = _new((n,), D.int64, dev)
        be.scatter_dim(ids, 0, perm, inverse)
        result.append(inverse.reshape(input.shape))
    if return_counts:
        starts = _new((u + 1,), D.int64, dev)
        fill(S.narrow(starts, 0, u, 1), n)
        be.scatter_dim(None, 0, ids, S.narrow(starts, 0, 0, u), mask=flags)
        result.append(S.narrow(starts, 0, 1, u) - S.narrow(starts, 0, 0, u))
    return result[0] if len(result) == 1 else tuple(result)


def bincount(input, weights=None, minlength=0):
    """How often each value 0, 1, ... occurs in the 1-D non-negative int ``input`` (or the sum of its ``weights``).

    >>> clgrad.bincount(clgrad.tensor([1, 1, 3]))  # tensor([0, 2, 0, 1])
    """
    if input.dim() != 1 or input.dtype.kind not in "iu":
        if input.dtype.kind in "fb":
            raise NotImplementedError(f"\"bincount\" not implemented for '{input.dtype.scalar_name}'")
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is not None and (weights.dim() != 1 or weights.shape[0] != input.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    if input.numel() == 0:  # torch's early return: int64 zeros even with weights
        return zeros(minlength, dtype=D.int64, device=input.device)
    if int(R.amin(input).item()) < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    nbins = builtins.max(int(R.amax(input).item()) + 1, minlength)
    out_dt = D.int64 if weights is None else D.float32 if weights.dtype is D.float32 else D.float64
    out = _new((nbins,), out_dt, input.device)
    w = None if weights is None else weights.detach().to(out_dt)
    backends.get(input.device).bincount(input, w, out)
    return out


def install(T) -> None:
    """Attach this module's ops to Tensor as methods."""
    for name in __all__:
        setattr(T, name, globals()[name])
    T.cumsum_ = lambda self, dim, *, dtype=None: self.copy_(cumsum(self, dim, dtype=dtype))
    T.cumprod_ = lambda self, dim, *, dtype=None: self.copy_(cumprod(self, dim, dtype=dtype))


# a list or a number where a tensor belongs raises PyTorch's TypeError (see guard.py)
tensor_first(globals(), __all__)
