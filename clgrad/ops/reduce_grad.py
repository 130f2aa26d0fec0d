"""Differentiable reductions: each a Function whose forward is the raw op in ``reduction.py``.

Gradients are broadcast back over the reduced dims; ties follow PyTorch: ``max(x, dim)`` sends the gradient to
the returned index, ``max(x)``/``amax`` share it evenly among the tied elements.
"""
from __future__ import annotations

from ..autograd.function import Function
from . import views as V

_apply = Function.apply.__func__


def _named(cls, node_name: str):
    """``cls`` with another node name: PyTorch names a reduction over all elements and one over ``dim``
    apart (``SumBackward0`` / ``SumBackward1``), and ``min`` apart from ``max``."""
    key = (cls, node_name)
    sub = _NAMED.get(key)
    if sub is None:
        sub = _NAMED[key] = type(cls.__name__, (cls,), {"node_name": node_name})
    return sub


_NAMED: dict = {}


def _over_dim(dim) -> bool:
    return dim is not None and dim != () and dim != []


def _dims_of(x, dim) -> tuple:
    if dim is None or dim == ():
        return tuple(range(x.dim()))
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    return tuple(sorted(V.wrap_dim(d, x.dim()) for d in dims))


def _unreduce(grad, shape, dims, keepdim):
    """Broadcast a reduced gradient back to ``shape``."""
    if not keepdim:
        for d in dims:
            grad = grad.unsqueeze(d)
    return grad.expand(shape)


class Sum(Function):
    node_name = "SumBackward0"

    @classmethod
    def apply(cls, x, dim, keepdim, dtype):
        return _apply(_named(cls, "SumBackward1") if _over_dim(dim) else cls, x, dim, keepdim, dtype)

    @staticmethod
    def forward(ctx, x, dim, keepdim, dtype):
        from .reduction import sum as raw

        ctx.meta = (x.shape, x.dtype, _dims_of(x, dim), keepdim)
        return raw(x, dim, keepdim, dtype=dtype)

    @staticmethod
    def backward(ctx, grad):
        shape, dt, dims, keepdim = ctx.meta
        return _unreduce(grad, shape, dims, keepdim).to(dt), None, None, None


class Mean(Function):
    node_name = "MeanBackward0"

    @classmethod
    def apply(cls, x, dim, keepdim, dtype):
        return _apply(_named(cls, "MeanBackward1") if _over_dim(dim) else cls, x, dim, keepdim, dtype)

    @staticmethod
    def forward(ctx, x, dim, keepdim, dtype):
        from .reduction import mean as raw

        dims = _dims_of(x, dim)
        count = 1
        for d in dims:
            count *= x.shape[d]
        ctx.meta = (x.shape, x.dtype, dims, keepdim, count)
        return raw(x, dim, keepdim, dtype=dtype)

    @staticmethod
    def backward(ctx, grad):
        shape, dt, dims, keepdim, count = ctx.meta
        return (_unreduce(grad, shape, dims, keepdim) / count).to(dt), None, None, None


class Prod(Function):
    node_name = "ProdBackward0"

    @classmethod
    def apply(cls, x, dim, keepdim, dtype):
        return _apply(_named(cls, "ProdBackward1") if dim is not None else cls, x, dim, keepdim, dtype)

    @staticmethod
    def forward(ctx, x, dim, keepdim, dtype):
        from .reduction import prod as raw

        ctx.meta = (_dims_of(x, dim), keepdim)
        ctx.save_for_backward(x)
        return raw(x, dim, keepdim, dtype=dtype)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        dims, keepdim = ctx.meta
        # zero-safe: the product of the *other* elements, without dividing by zero
        nonzero = x != 0
        x1 = x.where(nonzero, 1.0)
        p1 = x1.prod(dim=dims[0], keepdim=True) if len(dims) == 1 else x1.reshape(-1).prod().reshape([1] * x.dim())
        zeros = (~nonzero).sum(dim=dims, keepdim=True)
        local = (p1 / x1).where(zeros == 0, 0.0).where(nonzero, p1.where(zeros == 1, 0.0).expand(x.shape))
        return _unreduce(grad, x.shape, dims, keepdim) * local, None, None, None


class MaxMinDim(Function):
    """``max(x, dim)`` / ``min(x, dim)``: values and indices; the gradient goes to the indices."""

    node_name = "MaxBackward0"

    @classmethod
    def apply(cls, x, name, dim, keepdim):
        return _apply(_named(cls, "MinBackward0") if name == "min" else cls, x, name, dim, keepdim)

    @staticmethod
    def forward(ctx, x, name, dim, keepdim):
        from . import reduction

        values, indices = getattr(reduction, name)(x, dim, keepdim)
        ctx.meta = (x.shape, V.wrap_dim(dim, x.dim()), keepdim)
        ctx.save_for_backward(indices)
        ctx.mark_non_differentiable(indices)
        return values, indices

    @staticmethod
    def backward(ctx, grad, _grad_indices=None):
        from .creation import arange

        (indices,) = ctx.saved_tensors
        shape, d, keepdim = ctx.meta
        if not keepdim:
            grad, indices = grad.unsqueeze(d), indices.unsqueeze(d)
        positions = arange(shape[d], device=grad.device).reshape([-1 if i == d else 1 for i in range(len(shape))])
        return grad * (positions == indices), None, None, None


class MaxMinAll(Function):
    """``max(x)``, ``amax``/``amin``: the gradient is shared evenly among tied extreme elements."""

    node_name = "AmaxBackward0"

    @classmethod
    def apply(cls, x, name, dim, keepdim):
        node = {"max": "MaxBackward1", "min": "MinBackward1", "amin": "AminBackward0"}.get(name)
        return _apply(_named(cls, node) if node else cls, x, name, dim, keepdim)

    @staticmethod
    def forward(ctx, x, name, dim, keepdim):
        from . import reduction

        out = reduction.max(x) if name == "max" else reduction.min(x) if name == "min" else \
            getattr(reduction, name)(x, dim, keepdim)
        dims = _dims_of(x, None if name in ("max", "min") else dim)
        ctx.meta = (dims, keepdim and name not in ("max", "min"))
        ctx.nan_aware = name in ("max", "min")
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        dims, keepdim = ctx.meta
        extreme = _unreduce(out, x.shape, dims, keepdim)
        hit = x == extreme
        if ctx.nan_aware:  # max()/min() of all elements: a NaN result shares its gradient among the NaNs
            hit = hit | (x.isnan() & extreme.isnan())
        count = hit.sum(dim=dims, keepdim=True)
        return _unreduce(grad, x.shape, dims, keepdim) * hit / count, None, None, None
