"""Built-in differentiable view, clone and copy ops as ``Function`` subclasses: forward in raw ops, backward in
clgrad ops. Where PyTorch gives one op several node names (its overloads), a call picks a *variant*: a subclass that
differs only in ``node_name``. (The elementwise Functions are generated from the registry in ``elementwise.py``.)
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as D
from ..autograd.function import Function, variant
from . import shape as S
from . import views as V

_apply = Function.apply.__func__  # the plain apply, for dispatchers that pick a variant class first


# ---- views -----------------------------------------------------------------------------------
# View Functions set ``is_view``: their outputs are tracked as views of the input's memory, so an in-place
# change of that memory (through the base or another view) reaches their gradient (autograd/view_rules.py).

def _reshape_name(x, fn, args) -> str:
    """PyTorch's reshape is a view (ViewBackward0) when the layout allows, else a copy (UnsafeViewBackward0)."""
    if fn is S.flatten:
        if x.dim() == 0:
            return "ViewBackward0"
        start = V.wrap_dim(args[0] if args else 0, x.dim())
        end = V.wrap_dim(args[1] if len(args) > 1 else -1, x.dim())
        n = 1
        for k in x._shape[start : end + 1]:
            n *= k
        shape = x._shape[:start] + (n,) + x._shape[end + 1 :]
    else:
        shape = V.infer_size(V.as_size(args, "reshape"), x.numel())
    return "ViewBackward0" if V.view_strides(x._shape, x._strides, shape) is not None else "UnsafeViewBackward0"


def _squeeze_name(args) -> str:
    if not args or args[0] is None:
        return "SqueezeBackward0"
    return "SqueezeBackward2" if isinstance(args[0], (tuple, list)) else "SqueezeBackward1"


def _getitem_name(index) -> str:
    """Named after the last step PyTorch's indexing takes: an int selects, None unsqueezes, a slice slices."""
    items = index if isinstance(index, tuple) else (index,)
    for item in reversed(items):
        if item is Ellipsis or item == slice(None):
            continue  # PyTorch skips whole-dim slices (unless nothing else is there)
        if item is None:
            return "UnsqueezeBackward0"
        return "SliceBackward0" if isinstance(item, slice) else "SelectBackward0"
    # only whole-dim slices and ellipses: PyTorch slices for a bare ``x[:]``, and aliases for a tuple or ``x[...]``
    return "SliceBackward0" if isinstance(index, slice) else "AliasBackward0"


def _view_name(x, fn, args):
    name = fn.__name__
    if name in ("reshape", "flatten"):
        return _reshape_name(x, fn, args)
    if name == "squeeze":
        return _squeeze_name(args)
    if name == "getitem":
        return _getitem_name(args[0])
    return {"unsqueeze": "UnsqueezeBackward0", "select": "SelectBackward0",
            "as_strided": "AsStridedBackward0"}.get(name)


class _NamedView(Function):
    """A view Function called as ``apply(x, fn, args)``; its node takes PyTorch's name for ``fn``."""

    is_view = True

    @classmethod
    def apply(cls, x, fn, args):
        name = _view_name(x, fn, args)
        return _apply(cls if name is None or name == cls.node_name else variant(cls, name), x, fn, args)


class View(_NamedView):
    """view/reshape/flatten/squeeze/unsqueeze: the gradient is reshaped back."""

    node_name = "ViewBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, x, fn, args):
        ctx.shape = x.shape
        return fn(x, *args)

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.shape), None, None


class Permute(Function):
    node_name = "PermuteBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = tuple(d % max(x.dim(), 1) for d in dims)
        return S.permute(x, dims)

    @staticmethod
    def backward(ctx, grad):
        inverse = [0] * len(ctx.dims)
        for i, d in enumerate(ctx.dims):
            inverse[d] = i
        return grad.permute(*inverse), None


# PyTorch's names for the same permutation Function when reached through transpose() and t()
Transpose = variant(Permute, "TransposeBackward0")
T = variant(Permute, "TBackward0")


class Expand(Function):
    """The engine sums the broadcast gradient back to the input's shape."""

    node_name = "ExpandBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, x, sizes):
        return S.expand(x, sizes)

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def _memory_index(shape, strides, offset):
    """int64 numpy [numel]: the memory element of each element of (shape, strides, offset), in order."""
    index = np.full((), offset, np.int64)
    for d, (n, st) in enumerate(zip(shape, strides)):
        index = index + (np.arange(n, dtype=np.int64) * st).reshape((n,) + (1,) * (len(shape) - d - 1))
    return np.broadcast_to(index, tuple(shape)).reshape(-1)


class AsStrided(_NamedView):
    """``as_strided``: the gradient goes to memory elements and back to the input's elements, as PyTorch's
    as_strided_backward: view elements sharing a memory element add up, an input whose elements share memory splits
    it evenly, and memory the input does not cover (a view reaching past it) is dropped. The element maps are built
    on the host (as_strided is rare; its views are small)."""

    node_name = "AsStridedBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, x, fn, args):
        out = fn(x, *args)
        ctx.geometry = ((x._shape, x._strides, x._offset), (out._shape, out._strides, out._offset))
        return out

    @staticmethod
    def backward(ctx, grad):
        (xs, xst, xo), view = ctx.geometry
        ix, iv = _memory_index(xs, xst, xo), _memory_index(*view)
        lo = int(min(ix.min(initial=0), iv.min(initial=0)))
        size = int(max(ix.max(initial=0), iv.max(initial=0))) - lo + 1
        memory = grad.new_zeros(size)
        memory.index_add_(0, grad.new_tensor(iv - lo, dtype=D.int64), grad.reshape(-1))
        gx = memory[grad.new_tensor(ix - lo, dtype=D.int64)]
        counts = np.bincount(ix - lo, minlength=size)[ix - lo] if ix.size else ix
        if (counts > 1).any():
            gx = gx / grad.new_tensor(counts.astype(np.float64), dtype=grad.dtype)
        return gx.reshape(xs), None, None


class Slice(_NamedView):
    """Any strided sub-view (indexing, select, narrow, as_strided): the gradient is scattered back by
    replaying the same view on a zero tensor of the input's shape."""

    node_name = "SliceBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, x, fn, args):
        ctx.meta, ctx.fn, ctx.args = (x.shape, x.dtype, x.device), fn, args
        return fn(x, *args)

    @staticmethod
    def backward(ctx, grad):
        shape, dtype, device = ctx.meta
        z = grad.new_zeros(shape, dtype=dtype, device=device)
        ctx.fn(z, *ctx.args).copy_(grad)
        return z, None, None
