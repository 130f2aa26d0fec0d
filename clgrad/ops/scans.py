"""The reduction tail, scans and sorting: ``var``/``std``, ``logsumexp``, ``norm``, ``cumsum``/``cumprod``,
``sort``/``topk``/``kthvalue``/``median``, ``unique``, ``bincount`` with PyTorch's signatures, dtypes and errors.

Statistics are compositions of the reductions (two-pass variance: the mean, then the sum of squared deviations,
float16 computing in float32). Scans and sorts are backend primitives (``scan``, ``sort``, ``gather_dim``,
``scatter_dim``, ``bincount``); ``topk``, ``kthvalue``, ``median`` and ``unique`` are built on the stable sort.
Each differentiable op is a ``Function`` named as PyTorch names its node; its backward is written in clgrad ops.
"""
from __future__ import annotations

import builtins
import math
import warnings

from .. import backends
from .. import dtypes as D
from ..autograd.function import Function
from ..autograd.graph import needs_graph
from ..tensor import Tensor
from . import reduction as R
from . import shape as S
from .creation import full, zeros
from .guard import tensor_first, user_stacklevel
from .pointwise import apply, fill
from .reduction import _unreduce
from .views import wrap_dim

__all__ = ["var", "std", "var_mean", "std_mean", "logsumexp", "norm", "count_nonzero", "aminmax", "cumsum",
           "cumprod", "sort", "argsort", "msort", "topk", "kthvalue", "median", "unique", "bincount"]

RETURN_TYPES = {name: type(name, (R._ReturnType,), {"_name": name, "__slots__": ()})
                for name in ("sort", "topk", "kthvalue", "median")}


class _MinMax(tuple):
    """``(min, max)`` as ``torch.return_types.aminmax``."""

    def __new__(cls, mn, mx):
        return tuple.__new__(cls, (mn, mx))

    min = property(lambda self: self[0])  # noqa: A003 - torch's field names
    max = property(lambda self: self[1])  # noqa: A003

    def __repr__(self) -> str:
        return f"clgrad.return_types.aminmax(\nmin={self[0]!r},\nmax={self[1]!r})"


def _new(shape, dt, device):
    return Tensor._empty(tuple(shape), dt, device)


def _squeeze_dims(t, dims, keepdim: bool):
    """Drop the (size-1) reduced ``dims`` of a keepdim result unless ``keepdim``."""
    if keepdim:
        return t
    return t.reshape(tuple(n for d, n in enumerate(t.shape) if d not in dims))


def _count(x, dims) -> int:
    return math.prod(x.shape[d] for d in dims)


def _float_in(x):
    """float16 computes in float32 (sums of squares overflow half quickly); other dtypes as they are."""
    return x.float() if x.dtype is D.float16 else x


# ---- var / std ----------------------------------------------------------------------------------
def _correction(name: str, dim, unbiased, correction):
    if isinstance(dim, bool):  # var(x, True): the legacy unbiased flag in dim's place
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{name}() received an invalid combination of arguments - got both 'unbiased' and 'correction'")
    if correction is None:
        correction = 1 if unbiased is None else int(bool(unbiased))
    return dim, correction


def _moments(x, dims: tuple, correction, keepdim: bool):
    """(variance, mean) in x's dtype: the mean first, then the sum of squared deviations from it."""
    xf = _float_in(x)
    mu = R.mean(xf, dims, keepdim=True)
    dev = xf - mu
    n = _count(x, dims)
    dof = builtins.max(0, n - correction)
    if dof <= 0:
        warnings.warn("var(): degrees of freedom is <= 0. Correction should be strictly less than the reduction "
                      "factor (input numel divided by output numel).", UserWarning, stacklevel=user_stacklevel())
    v = R.sum(dev * dev, dims, keepdim=keepdim) / dof
    return v.to(x.dtype), _squeeze_dims(mu, dims, keepdim).to(x.dtype)


def _check_float(name: str, x) -> None:
    if x.dtype.kind != "f":
        raise RuntimeError("std and var only support floating point and complex dtypes")


class _Moments(Function):
    """var / std (and with the mean): ``d var / dx = 2 (x - mean) / (N - correction)``."""

    sqrt, with_mean = False, False

    @classmethod
    def forward(cls, ctx, x, dims, correction, keepdim):
        v, mu = _moments(x, dims, correction, keepdim)
        out = v.sqrt() if cls.sqrt else v
        ctx.meta = (dims, correction, keepdim)
        ctx.save_for_backward(x, out)
        return (out, mu) if cls.with_mean else out

    @classmethod
    def backward(cls, ctx, grad, grad_mean=None):
        x, out = ctx.saved_tensors
        dims, correction, keepdim = ctx.meta
        if cls.sqrt:  # d std = d var / (2 std); torch gives 0 where std is 0
            grad = (grad / (2 * out)).where(out != 0, 0.0)
        n = _count(x, dims)
        dof = n - correction
        scale = 2 / dof if dof > 0 else math.inf  # as torch: no degrees of freedom give inf / nan gradients
        g = _unreduce(grad, x.shape, dims, keepdim) * (x - R.mean(x, dims, keepdim=True)) * scale
        if grad_mean is not None:
            g = g + _unreduce(grad_mean, x.shape, dims, keepdim) / n
        return g, None, None, None


class _Var(_Moments):
    node_name = "VarBackward0"


class _Std(_Moments):
    node_name, sqrt = "StdBackward0", True


class _VarMean(_Moments):
    node_name, with_mean = "VarMeanBackward0", True


class _StdMean(_Moments):
    node_name, sqrt, with_mean = "StdMeanBackward0", True, True


def _stat(fn, name, input, dim, unbiased, keepdim, correction):
    dim, correction = _correction(name, dim, unbiased, correction)
    _check_float(name, input)
    dims = R._dims(name, input, dim)
    if needs_graph(input):
        return fn.apply(input, dims, correction, keepdim)
    v, mu = _moments(input, dims, correction, keepdim)
    out = v.sqrt() if fn.sqrt else v
    return (out, mu) if fn.with_mean else out


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance over ``dim`` (int, tuple or None) with ``correction`` (default 1, Bessel's) or ``unbiased``.

    >>> clgrad.var(clgrad.tensor([1.0, 2.0, 4.0]))  # tensor(2.3333)
    """
    return _stat(_Var, "var", input, dim, unbiased, keepdim, correction)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Standard deviation: the square root of ``var`` with the same arguments."""
    return _stat(_Std, "std", input, dim, unbiased, keepdim, correction)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(var, mean)`` over ``dim`` in one call."""
    return _stat(_VarMean, "var_mean", input, dim, unbiased, keepdim, correction)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(std, mean)`` over ``dim`` in one call."""
    return _stat(_StdMean, "std_mean", input, dim, unbiased, keepdim, correction)


# ---- logsumexp ----------------------------------------------------------------------------------
def _logsumexp(x, dims: tuple, keepdim: bool):
    xf = _float_in(x)
    kept = tuple(1 if d in dims else n for d, n in enumerate(x.shape))
    if _count(x, dims) == 0:  # an empty sum of exponentials is 0
        return _squeeze_dims(full(kept, -math.inf, dtype=x.dtype, device=x.device), dims, keepdim)
    m = R.amax(xf, dims, keepdim=True)
    m = m.where(~m.isinf(), 0.0)  # rows of -inf (or with +inf) must not shift by an infinity: inf - inf is nan
    out = R.sum((xf - m).exp(), dims, keepdim=True).log() + m
    return _squeeze_dims(out, dims, keepdim).to(x.dtype)


class _Logsumexp(Function):
    node_name = "LogsumexpBackward0"

    @staticmethod
    def forward(ctx, x, dims, keepdim):
        out = _logsumexp(x, dims, keepdim)
        ctx.meta = (dims, keepdim)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        dims, keepdim = ctx.meta
        return _unreduce(grad, x.shape, dims, keepdim) * (x - _unreduce(out, x.shape, dims, keepdim)).exp(), None, None


def logsumexp(input, dim=(), keepdim=False):
    """``log(sum(exp(x)))`` over ``dim``, shifted by the row maximum so large values don't overflow.

    >>> clgrad.logsumexp(clgrad.tensor([1000.0, 1000.0]), 0)  # tensor(1000.6931)
    """
    if input.dtype.kind != "f":
        input = input.to(D.get_default_dtype())
    dims = R._dims("logsumexp", input, dim)
    if needs_graph(input):
        return _Logsumexp.apply(input, dims, keepdim)
    return _logsumexp(input, dims, keepdim)


# ---- norm ---------------------------------------------------------------------------------------
def _vector_norm(x, p, dims: tuple, keepdim: bool):
    xf = _float_in(x)
    if p == 0:
        out = R.sum(xf != 0, dims, keepdim=keepdim).to(xf.dtype)
    elif math.isinf(p):
        if x.numel() == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {p} norm on an empty tensor because the "
                               "operation does not have an identity")
        out = (R.amax if p > 0 else R.amin)(xf.abs(), dims, keepdim=keepdim)
    elif p == 1:
        out = R.sum(xf.abs(), dims, keepdim=keepdim)
    elif p == 2:
        out = R.sum(xf * xf, dims, keepdim=keepdim).sqrt()
    else:
        out = R.sum(xf.abs() ** p, dims, keepdim=keepdim) ** (1.0 / p)
    return out.to(x.dtype)


class _Norm(Function):
    """PyTorch's linalg_vector_norm_backward: subgradient 0 where the norm is 0, ties of the inf-norm share."""

    node_name = "LinalgVectorNormBackward0"

    @staticmethod
    def forward(ctx, x, p, dims, keepdim):
        out = _vector_norm(x, p, dims, keepdim)
        ctx.meta = (p, dims, keepdim)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        p, dims, keepdim = ctx.meta
        g, norm = _unreduce(grad, x.shape, dims, keepdim), _unreduce(out, x.shape, dims, keepdim)
        if p == 0:
            return x * 0, None, None, None
        if p == 1:
            return g * x.sign(), None, None, None
        if math.isinf(p):
            hit = x.abs() == norm
            return x.sign() * g * hit / R.sum(hit, dims, keepdim=True), None, None, None
        if p < 1:
            scaled = x.sign() * (x.abs() ** (p - 1)).where(x != 0, 0.0)
            return scaled * g * norm ** (1 - p), None, None, None
        scaled = x * x.abs() ** (p - 2) if p >= 2 else x.sign() * x.abs() ** (p - 1)
        scale = (g / norm ** (p - 1)).where(norm != 0, 0.0)
        return scaled * scale, None, None, None


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """The vector p-norm over ``dim`` (all elements by default): p = 2 / 'fro', 1, inf, -inf, 0 or any number.

    >>> clgrad.norm(clgrad.tensor([3.0, 4.0]))  # tensor(5.)
    """
    if p is None or p == "fro":
        if isinstance(dim, (tuple, list)) and len(dim) > 2:
            raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
        p = 2
    elif p == "nuc":
        raise NotImplementedError("norm(): the nuclear norm (p='nuc') is not implemented in clgrad")
    elif isinstance(p, str):
        raise RuntimeError(f"linalg.vector_norm: Expected a number for ord, but got '{p}'")
    if dtype is not None:
        input = input.to(D.as_dtype(dtype))
    if input.dtype.kind != "f":
        raise RuntimeError(
            f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got {input.dtype.scalar_name}")
    dims = R._dims("norm", input, dim)
    if needs_graph(input):
        return _Norm.apply(input, float(p), dims, keepdim)
    return _vector_norm(input, float(p), dims, keepdim)


def count_nonzero(input, dim=None):
    """How many elements over ``dim`` (int, tuple or None for all) are not zero, as int64."""
    return R.sum(input != 0, dim=dim)


def aminmax(input, *, dim=None, keepdim=False):
    """``(min, max)`` over ``dim`` (or every element) in one call."""
    if input.numel() == 0 and dim is None:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity.")
    d = () if dim is None else dim
    return _MinMax(R.amin(input, d, keepdim), R.amax(input, d, keepdim))


# ---- cumsum / cumprod ---------------------------------------------------------------------------
def _scan(op: str, x, dim: int, dtype=None, reverse: bool = False):
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
        if name not in ("var_mean", "std_mean"):
            setattr(T, name, globals()[name])
    T.cumsum_ = lambda self, dim, *, dtype=None: self.copy_(cumsum(self, dim, dtype=dtype))
    T.cumprod_ = lambda self, dim, *, dtype=None: self.copy_(cumprod(self, dim, dtype=dtype))


# a list or a number where a tensor belongs raises PyTorch's TypeError (see guard.py)
tensor_first(globals(), __all__)
