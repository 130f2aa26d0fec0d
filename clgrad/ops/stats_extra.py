"""More statistics: ``quantile``/``nanquantile``, ``nanmedian``, ``mode``, ``cov``/``corrcoef``, ``histc``/
``histogram``, ``dist`` and ``renorm``, with PyTorch's signatures, defaults, dtypes and errors.

Everything is composed from existing clgrad ops, so every device runs it and the gradients are torch's:
quantile sorts (``SortBackward0``), gathers the two neighbouring order statistics and interpolates between them
(torch's own algorithm, so its gradient flows to the same elements with the same weights); ``nanmedian`` and
``mode`` pick an element of the stable sort and reuse the selecting ops' backward (the gradient goes to the
picked index). The histograms count with ``bincount`` and are not differentiable, as in torch.
"""
from __future__ import annotations

import math
import warnings

from .. import dtypes as D
from ..autograd.graph import needs_graph
from ..tensor import Tensor, is_tensor
from . import reduction as R
from . import scans as SC
from . import scans_extra as SE
from .creation import arange, full, zeros
from .gather import gather
from .guard import tensor_first, user_stacklevel
from .joins import cat
from .stats import vector_norm
from .views import wrap_dim

__all__ = ["quantile", "nanquantile", "nanmedian", "mode", "cov", "corrcoef", "histc", "histogram", "dist",
           "renorm"]

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


class _Histogram(tuple):
    """``(hist, bin_edges)`` as ``torch.return_types.histogram``."""

    def __new__(cls, hist, bin_edges):
        return tuple.__new__(cls, (hist, bin_edges))

    hist = property(lambda self: self[0])
    bin_edges = property(lambda self: self[1])

    def __repr__(self) -> str:
        return f"clgrad.return_types.histogram(\nhist={self[0]!r},\nbin_edges={self[1]!r})"


RETURN_TYPES = {name: type(name, (R._ReturnType,), {"_name": name, "__slots__": ()}) for name in ("nanmedian", "mode")}
RETURN_TYPES["histogram"] = type("histogram", (_Histogram,), {"__slots__": ()})


# ---- quantile / nanquantile ---------------------------------------------------------------------
def _quantile_q(input, q):
    """``q`` as a 1-D tensor on the input's device, checked as torch checks it; and whether it was a scalar."""
    if input.dtype not in (D.float32, D.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if not is_tensor(q):
        if not 0 <= q <= 1:
            raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q}")
        return full((1,), float(q), dtype=input.dtype, device=input.device), True
    if q.dim() > 1:
        raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    if q.dtype is not input.dtype:
        raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
    if q.device != input.device:
        raise RuntimeError("quantile() q tensor must be on the same device as the input tensor")
    q = q.detach()
    if q.numel() and not bool(((q >= 0) & (q <= 1)).all().item()):
        raise RuntimeError("quantile() q values must be in the range [0, 1]")
    return q.reshape(-1), q.dim() == 0


def _ranks(sorted_, q, interpolation: str, ignore_nan: bool):
    """Fractional positions of the quantiles in each sorted row ([..., k]), rounded as ``interpolation`` says."""
    nan = sorted_.isnan()
    n = sorted_.shape[-1]
    if ignore_nan:
        ranks = (q * (R.sum(~nan, -1, keepdim=True) - 1)).clamp_min(0.0)  # an all-NaN row picks its first NaN
    else:  # a row with a NaN gives NaN: its last element, since NaN sorts last
        ranks = (q * (n - 1)).where(~R.any(nan, -1, keepdim=True), float(n - 1))
    if interpolation == "lower":
        return ranks.floor()
    if interpolation == "higher":
        return ranks.ceil()
    if interpolation == "nearest":
        return ranks.round()  # half to even, as torch rounds
    return ranks


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan):
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError("quantile() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    q, scalar_q = _quantile_q(input, q)
    if input.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")  # torch says quantile() for both
    if dim is None:
        rows, kept = input.reshape(-1), (1,) * input.dim()
    else:
        d = wrap_dim(dim, max(input.dim(), 1))
        x = input.reshape(1) if input.dim() == 0 else input
        rows = x.unsqueeze(-1).transpose(d, -1)  # torch's layout: the reduced dim last, a 1 in its place
        kept = tuple(rows.shape[:-1])[: input.dim()]
    sorted_ = SC.sort(rows, -1).values
    ranks = _ranks(sorted_, q, interpolation, ignore_nan)
    ranks = ranks.expand(tuple(sorted_.shape[:-1]) + (q.numel(),))
    below = ranks.to(D.int64)
    out = gather(sorted_, -1, below)
    if interpolation in ("linear", "midpoint"):
        above = gather(sorted_, -1, ranks.ceil().to(D.int64))
        weights = full((), 0.5, dtype=ranks.dtype, device=ranks.device) if interpolation == "midpoint" \
            else ranks - below
        out = out.lerp(above, weights)
    out = out.movedim(-1, 0)  # the quantiles first
    shape = kept if keepdim else tuple(s for i, s in enumerate(kept) if dim is not None and i != d)
    return out.reshape(((q.numel(),) if not scalar_q else ()) + shape)


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """The ``q``-th quantiles of ``input`` (all of it, or each row along ``dim``); ``q`` is a float or a 1-D
    tensor, whose quantiles then come first in the result. A row holding NaN gives NaN.

    >>> clgrad.quantile(clgrad.tensor([1.0, 2.0, 3.0, 4.0]), 0.5)  # tensor(2.5000)
    """
    return _out(_quantile(input, q, dim, keepdim, interpolation, False), out)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """``quantile`` ignoring NaN (a row of only NaN gives NaN)."""
    return _out(_quantile(input, q, dim, keepdim, interpolation, True), out)


def _out(result, out):
    if out is None:
        return result
    if tuple(out.shape) != tuple(result.shape):  # torch resizes out; clgrad tensors cannot be resized
        raise RuntimeError(f"out= must have the result's shape {list(result.shape)} (clgrad does not resize out= "
                           f"tensors), but got {list(out.shape)}")
    return out.copy_(result)


# ---- nanmedian / mode ---------------------------------------------------------------------------
def _pick_nanmedian(x, dim, keepdim):
    """The lower median of each row's non-NaN values; a row of only NaN gives its first NaN (index 0)."""
    values, indices = SC._sort_raw(x, dim, False)
    count = R.sum(~x.isnan(), dim, keepdim=True) if x.dtype.kind == "f" else \
        full(tuple(1 if i == dim else s for i, s in enumerate(x.shape)), x.shape[dim], dtype=D.int64, device=x.device)
    pos = ((count - 1) // 2).clamp_min(0)
    return SC._keep(values.gather(dim, pos), indices.gather(dim, pos), dim, keepdim)


def _pick_mode(x, dim, keepdim):
    """The most frequent value of each row (the smallest of equally frequent ones) and its last index."""
    values, indices = SC._sort_raw(x, dim, False)
    n = x.shape[dim]
    pos = arange(n, device=x.device).reshape(tuple(-1 if i == dim else 1 for i in range(x.dim())))
    # where a run of equal values starts: the first element, and each that differs from the one before it
    first = full(tuple(1 if i == dim else s for i, s in enumerate(x.shape)), True, dtype=D.bool, device=x.device)
    new = cat([first, values.narrow(dim, 1, n - 1) != values.narrow(dim, 0, n - 1)], dim)
    run_start = SE._doubling_scan(pos.where(new, 0), dim, SE._max)
    best = R.argmax(pos - run_start, dim, keepdim=True)  # the first longest run ends here: its last element
    return SC._keep(values.gather(dim, best), indices.gather(dim, best), dim, keepdim)


_NanMedianDim = type("_NanMedianDim", (SC._Selecting,),
                     {"node_name": "NanmedianBackward1", "pick": staticmethod(_pick_nanmedian)})
_Mode = type("_Mode", (SC._Selecting,), {"node_name": "ModeBackward0", "pick": staticmethod(_pick_mode)})


class _NanMedianAll(SC._MedianAll):
    """``nanmedian(x)``: the gradient is shared among the elements equal to the result, as median's."""

    node_name = "NanmedianBackward0"

    @staticmethod
    def forward(ctx, x):
        out = _nanmedian_all(x)
        ctx.save_for_backward(x, out)
        return out


def _nanmedian_all(x):
    if x.numel() == 0:
        return full((), math.nan, dtype=x.dtype, device=x.device)
    return _pick_nanmedian(x.reshape(-1), 0, False)[0]


def _check_rows(name: str, input, dim) -> int:
    d = wrap_dim(dim, max(input.dim(), 1))
    if input.dim() and input.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    return d


def nanmedian(input, dim=None, keepdim=False):
    """``median`` ignoring NaN: ``nanmedian(x)`` a value, ``nanmedian(x, dim)`` ``(values, indices)``."""
    if dim is None:
        return _NanMedianAll.apply(input) if needs_graph(input) else _nanmedian_all(input)
    _check_rows("median", input, dim)
    return RETURN_TYPES["nanmedian"](*SC._select(_NanMedianDim, "median", input, dim, bool(keepdim)))


def mode(input, dim=-1, keepdim=False):
    """The most frequent value along ``dim`` (the smallest if several are) and the index of its last occurrence.

    >>> clgrad.mode(clgrad.tensor([2, 1, 2, 1])).values  # tensor(1)
    """
    d = _check_rows("mode", input, dim)
    if input.numel() == 0:
        shape = tuple(1 if keepdim and i == d else s for i, s in enumerate(input.shape) if keepdim or i != d)
        return RETURN_TYPES["mode"](Tensor._empty(shape, input.dtype, input.device),
                                    Tensor._empty(shape, D.int64, input.device))
    return RETURN_TYPES["mode"](*SC._select(_Mode, "median", input, dim, bool(keepdim)))


# ---- cov / corrcoef -----------------------------------------------------------------------------
def _cov_weight(kind: str, w, n: int):
    if w.dim() > 1:
        raise RuntimeError(f"cov(): expected {kind} to have one or fewer dimensions but got {kind} with "
                           f"{w.dim()} dimensions")
    if w.numel() != n:
        raise RuntimeError(f"cov(): expected {kind} to have the same numel as there are observations in the input "
                           f"but got {w.numel()} != {n}")
    want = "iu" if kind == "fweights" else "f"
    if w.dtype.kind not in want:
        what = "integral" if kind == "fweights" else "floating point"
        raise RuntimeError(f"cov(): expected {kind} to have {what} dtype but got {kind} with "
                           f"{w.dtype.scalar_name} dtype")
    if w.numel() and float(R.amin(w).item()) < 0:
        raise RuntimeError(f"cov(): {kind} cannot be negative")
    return w


def _cov_weights(fweights, aweights, n: int):
    w = None if fweights is None else _cov_weight("fweights", fweights, n)
    if aweights is not None:
        aweights = _cov_weight("aweights", aweights, n)
        w = aweights if w is None else w * aweights
    return w, aweights


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in the rows of ``input`` (observations in the columns), with
    optional integer frequency weights and float observation weights, as ``numpy.cov``.

    >>> clgrad.cov(clgrad.tensor([[0.0, 2.0], [1.0, 1.0]]))  # tensor([[ 2., -1.], [-1.,  0.5]])
    """
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    if x.dtype.kind != "f":
        x = x.to(D.get_default_dtype())
    n = x.shape[1]
    w, aweights = _cov_weights(fweights, aweights, n)
    w_sum = R.sum(w).to(x.dtype) if w is not None else n
    avg = R.sum(x * w if w is not None else x, 1) / w_sum
    if w is not None and correction != 0 and aweights is not None:
        norm = w_sum - correction * R.sum(w * aweights) / w_sum
    else:
        norm = w_sum - correction
    bad = bool((norm <= 0).item()) if is_tensor(norm) else norm <= 0
    if bad:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=user_stacklevel())
        norm = norm.clamp_min(0) if is_tensor(norm) else 0
    x = x - avg.unsqueeze(1)
    c = x.matmul((x * w if w is not None else x).t())
    return (c / norm).squeeze()


def corrcoef(input):
    """Pearson correlation coefficients of the variables in the rows of ``input``, clipped to [-1, 1].

    >>> clgrad.corrcoef(clgrad.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))  # tensor([[ 1., -1.], [-1.,  1.]])
    """
    c = cov(input)
    if c.dim() == 0:
        return c / c
    std = c.diagonal().sqrt()
    c = c / std.unsqueeze(1) / std.unsqueeze(0)
    return c.clamp(-1, 1)


# ---- histc / histogram ---------------------------------------------------------------------------
def _check_hist_input(name: str, input) -> None:
    if input.dtype.kind != "f":
        raise NotImplementedError(f"\"{name}\" not implemented for '{input.dtype.scalar_name}'")


def _count(x, pos, valid, nbins: int, weight, dtype):
    """Per bin, the number (or weight) of the elements of ``x`` with ``valid`` set, each in bin ``pos``."""
    w = valid.to(D.float64 if dtype is D.float64 else D.float32)
    if weight is not None:
        w = w * weight.detach().reshape(-1)
    pos = pos.where(valid, 0).to(D.int64)
    if x.numel() == 0:
        return zeros(nbins, dtype=dtype, device=x.device)
    return SC.bincount(pos, w, minlength=nbins).to(dtype)


def histc(input, bins=100, min=0, max=0, *, out=None):  # noqa: A002 - torch's names
    """Counts of ``input``'s elements in ``bins`` equal-width bins over [min, max] (the data's own range when
    min == max); elements outside are ignored. Not differentiable (as in torch).

    >>> clgrad.histc(clgrad.tensor([1.0, 2.0, 1.0]), bins=4, min=0, max=3)  # tensor([0., 2., 1., 0.])
    """
    _check_hist_input("histc", input)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    lo, hi = float(min), float(max)
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    x = input.detach().reshape(-1)
    if lo == hi and x.numel():
        lo, hi = float(R.amin(x).item()), float(R.amax(x).item())
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo:g}, {hi:g}] is not finite")
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    valid = (x >= lo) & (x <= hi)
    pos = ((x - lo) * bins / (hi - lo)).floor().clamp(0, bins - 1)
    return _out(_count(x, pos, valid, bins, None, input.dtype), out)


def _histogram_edges(x, bins, range_):
    """The bin edges: ``bins`` equal-width bins over ``range`` (default the data's range), or the given edges."""
    if is_tensor(bins):
        if bins.dim() != 1:
            raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but got {bins.dim()} "
                               "dimensions in the bins tensor for dimension 0")
        if bins.dtype is not x.dtype:
            raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have the same dtype, but "
                               f"got input with dtype {x.dtype.scalar_name.lower()} and bins for dimension 0 "
                               f"with dtype {bins.dtype.scalar_name.lower()}")
        if bins.numel() < 2:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins.numel() - 1} for dimension 0")
        return bins.detach()
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    if range_ is not None:
        lo, hi = (float(v) for v in range_)
        if lo > hi:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {lo:g} max {hi:g} "
                               "for dimension 0")
    elif x.numel():
        lo, hi = float(R.amin(x).item()), float(R.amax(x).item())
    else:
        lo, hi = 0.0, 1.0
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return _linspace(lo, hi, int(bins), x)


def _linspace(lo: float, hi: float, bins: int, x):
    """``bins + 1`` edges from ``lo`` to ``hi`` computed in ``x``'s dtype as torch's linspace computes them (the
    first half up from ``lo``, the second down from ``hi``), so that values on an edge fall in torch's bin."""
    lo_t, hi_t = full((), lo, dtype=x.dtype, device=x.device), full((), hi, dtype=x.dtype, device=x.device)
    step = (hi_t - lo_t) / bins
    idx = arange(bins + 1, device=x.device)
    return (lo_t + step * idx).where(idx < (bins + 1) // 2, hi_t - step * (bins - idx))


def _bins_of(x, edges, equal_width: bool):
    """Each element's bin (all within the edges): the last edge at or below it, the right edge closing the last
    bin. Equal-width bins guess it arithmetically and correct the guess by one against the edges (torch's local
    search, so the edges decide as in torch); given edges are compared with every element."""
    nbins = edges.numel() - 1
    if not equal_width:
        return (R.sum(x.unsqueeze(1) >= edges.unsqueeze(0), 1) - 1).clamp(0, nbins - 1)
    lo, hi = edges[0], edges[nbins]
    pos = ((x - lo) * nbins / (hi - lo)).floor().clamp(0, nbins - 1).to(D.int64)
    pos = (pos - (x < edges.gather(0, pos)).to(D.int64)).clamp_min(0)
    return pos + ((x >= edges.gather(0, pos + 1)) & (pos < nbins - 1)).to(D.int64)


def histogram(input, bins, *, range=None, weight=None, density=False, out=None):  # noqa: A002 - torch's names
    """``(hist, bin_edges)``: counts (or summed ``weight``) of ``input``'s elements per bin; ``bins`` is a count of
    equal-width bins over ``range`` or a 1-D tensor of increasing edges. The last bin includes its right edge.

    >>> clgrad.histogram(clgrad.tensor([1.0, 2.0, 1.0]), bins=2).hist  # tensor([2., 1.])
    """
    _check_hist_input("histogramdd", input)
    x = input.detach().reshape(-1)
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise RuntimeError("torch.histogramdd: if weight tensor is provided it should have the same shape as the "
                           f"input tensor excluding its innermost dimension, but got input with shape "
                           f"{list(input.shape) + [1]} and weight with shape {list(weight.shape)}")
    edges = _histogram_edges(x, bins, range)
    nbins = edges.numel() - 1
    valid = (x >= edges[0]) & (x <= edges[nbins])
    pos = _bins_of(x.where(valid, edges[0]), edges, not is_tensor(bins)) if x.numel() else x.to(D.int64)
    hist = _count(x, pos, valid, nbins, weight, input.dtype)
    if density:
        widths = edges.narrow(0, 1, nbins) - edges.narrow(0, 0, nbins)
        hist = hist / R.sum(hist) / widths
    if out is not None:
        _out(hist, out[0]), _out(edges, out[1])
    return RETURN_TYPES["histogram"](hist, edges)


# ---- dist / renorm ------------------------------------------------------------------------------
def dist(input, other, p=2):
    """The ``p``-norm of ``input - other`` (broadcast): ``clgrad.dist(x, y)`` is their Euclidean distance."""
    if input.dtype.kind not in "fc":
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. "
                           f"Got {input.dtype.scalar_name} instead.")
    return vector_norm(input - other, p)


def renorm(input, p, dim, maxnorm):
    """Each slice of ``input`` along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled down to norm ``maxnorm``.

    >>> clgrad.renorm(clgrad.ones(2, 2), 1, 0, 1.0)  # tensor([[0.5, 0.5], [0.5, 0.5]]) (about: 1e-7 slack)
    """
    if input.dim() <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.dim()} dimensions")
    if not p > 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    d = wrap_dim(dim, input.dim())
    norm = vector_norm(input, p, tuple(i for i in range(input.dim()) if i != d), keepdim=True)
    factor = (maxnorm / (norm + 1e-7)).where(norm > maxnorm, 1.0)
    return input * factor


def _renorm_(self, p, dim, maxnorm):
    return self.copy_(renorm(self, p, dim, maxnorm))


def install(T) -> None:
    """Attach this module's ops to Tensor as methods."""
    for name in __all__:
        setattr(T, name, globals()[name])
    T.renorm_ = _renorm_


# a list or a number where a tensor belongs raises PyTorch's TypeError (see guard.py)
tensor_first(globals(), __all__)
