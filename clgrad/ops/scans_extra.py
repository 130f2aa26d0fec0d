"""Scans beyond cumsum/cumprod: ``logcumsumexp``, ``cummax`` and ``cummin`` with PyTorch's signatures, dtypes,
return types and gradients.

They are compositions of clgrad ops, so they run on every device and autograd comes for free: an inclusive scan
with an associative ``combine`` is ``ceil(log2 n)`` doubling steps (Hillis-Steele), each one elementwise op on
narrowed views (``out[k:] = combine(out[:-k], out[k:])``). ``logcumsumexp`` combines with a stable log-add-exp;
``cummax``/``cummin`` scan the values, find each running extreme's index with a second (integer max) scan, and
gather the values through ``gather`` so their gradient is torch's ``scatter_add`` of the output gradient.
"""
from __future__ import annotations

from .. import dtypes as D
from ..autograd.graph import needs_graph
from . import reduction as R
from .creation import arange
from .gather import gather
from .guard import tensor_first
from .joins import cat
from .views import wrap_dim

__all__ = ["logcumsumexp", "cummax", "cummin"]

RETURN_TYPES = {name: type(name, (R._ReturnType,), {"_name": name, "__slots__": ()}) for name in ("cummax", "cummin")}


def _doubling_scan(x, dim: int, combine):
    """Inclusive scan of ``x`` along ``dim`` with an associative ``combine(earlier, later)``."""
    n, k = x.shape[dim], 1
    while k < n:
        head = x.narrow(dim, 0, k)
        tail = combine(x.narrow(dim, 0, n - k), x.narrow(dim, k, n - k))
        x = cat([head, tail], dim)
        k *= 2
    return x


def _logaddexp(a, b):
    """``log(exp(a) + exp(b))`` that keeps -inf + -inf = -inf and inf + inf = inf (the shift is detached, so the
    gradient is exactly ``exp(a - out)``)."""
    m = R.amax(cat([a.detach().unsqueeze(0), b.detach().unsqueeze(0)], 0), 0)
    m = m.where(~m.isinf(), 0.0)
    return ((a - m).exp() + (b - m).exp()).log() + m


def _as_rows(input, dim):
    """(x as at least 1-D, wrapped dim, whether the input was 0-dim)."""
    scalar = input.dim() == 0
    d = wrap_dim(dim, max(input.dim(), 1))
    return (input.reshape(1) if scalar else input), d, scalar


def logcumsumexp(input, dim):
    """``log(cumsum(exp(input), dim))`` computed stably (no overflow or underflow of the exponentials).

    >>> clgrad.logcumsumexp(clgrad.tensor([0.0, 0.0]), 0)  # tensor([0.0000, 0.6931])
    """
    if input.dtype.kind != "f":
        raise NotImplementedError(f"\"logcumsumexp\" not implemented for '{input.dtype.scalar_name}'")
    x, d, scalar = _as_rows(input, dim)
    out = _doubling_scan(x, d, _logaddexp) if x.numel() else x.clone()
    return out.reshape(()) if scalar else out


def _cumextreme(name: str, input, dim, pick):
    x, d, scalar = _as_rows(input, dim)
    if x.numel() == 0:
        values, indices = x.clone(), x.detach().to(D.int64)
    else:
        raw = x.detach()
        running = _doubling_scan(raw, d, pick)
        # a position holds the running extreme when it equals it (NaN: every NaN, so the last NaN wins, as torch)
        hit = (raw == running) | raw.isnan() if raw.dtype.kind == "f" else raw == running
        pos = arange(x.shape[d], device=x.device).reshape(tuple(-1 if i == d else 1 for i in range(x.dim())))
        indices = _doubling_scan(pos.where(hit, 0), d, _max)
        values = gather(x, d, indices) if needs_graph(x) else running
    if scalar:
        values, indices = values.reshape(()), indices.reshape(())
    return RETURN_TYPES[name](values, indices)


def _max(a, b):
    return a.maximum(b) if a.dtype is not D.bool else a | b


def _min(a, b):
    return a.minimum(b) if a.dtype is not D.bool else a & b


def cummax(input, dim):
    """Running maxima along ``dim`` and the index of each (the latest of equal maxima; NaN propagates).

    >>> clgrad.cummax(clgrad.tensor([1, 3, 2]), 0).values  # tensor([1, 3, 3])
    """
    return _cumextreme("cummax", input, dim, _max)


def cummin(input, dim):
    """Running minima along ``dim`` and the index of each (the latest of equal minima; NaN propagates)."""
    return _cumextreme("cummin", input, dim, _min)


def install(T) -> None:
    """Attach this module's ops to Tensor as methods."""
    for name in __all__:
        setattr(T, name, globals()[name])


# a list or a number where a tensor belongs raises PyTorch's TypeError (see guard.py)
tensor_first(globals(), __all__)
