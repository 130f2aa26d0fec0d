"""Built-in differentiable ops as ``Function`` subclasses: forward in raw ops, backward in clgrad ops.

Elementwise Functions are generated from the op table (ewtable.OPS) and its gradient table (grads.GRADS),
so a new elementwise op costs one line in each.
"""
from __future__ import annotations

from ..autograd.function import Function
from ..autograd.graph import needs_graph
from ..backends.ewtable import OPS
from . import pointwise as P
from . import shape as S
from .grads import GRADS, NO_INPUTS, USES_OUT


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


class Elementwise(Function):
    """Base of the table-generated elementwise Functions; ``op`` names the table entry.
    forward and backward are classmethods (they read ``cls.op``); ``apply`` calls them like staticmethods."""

    op = "identity"

    @classmethod
    def forward(cls, ctx, *operands, compute=None):
        out = P.apply(cls.op, *operands, compute=compute)
        if cls.op in GRADS:
            keep = cls.op not in NO_INPUTS
            ctx.save_for_backward(*[x if keep and P.is_tensor(x) else None for x in operands],
                                  out if cls.op in USES_OUT else None)
            ctx.scalars = tuple(None if P.is_tensor(x) else x for x in operands)
        return out

    @classmethod
    def backward(cls, ctx, grad):
        if cls.op not in GRADS:  # piecewise-constant ops (floor_divide...) pass no gradient
            return (None,) * len(ctx.needs_input_grad)
        saved = ctx.saved_tensors
        args = [s if s is not None else c for s, c in zip(saved[:-1], ctx.scalars)]
        grads = GRADS[cls.op](grad, *args, saved[-1])
        return tuple(g if ctx.needs_input_grad[i] else None for i, g in enumerate(grads))


ELEMENTWISE = {
    name: type(_camel(name), (Elementwise,), {"op": name, "node_name": f"{_camel(name)}Backward0"})
    for name in OPS
}


def elementwise(op: str, *operands, out=None):
    """The differentiable entry point of every elementwise op (``out=`` is not differentiable)."""
    if out is not None:
        if needs_graph(out, *operands):
            raise RuntimeError(f"{op}(): functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad.")
        return P.apply(op, *operands, out=out)
    return ELEMENTWISE[op].apply(*operands)


# ---- views -----------------------------------------------------------------------------------
class View(Function):
    """view/reshape/flatten/squeeze/unsqueeze: the gradient is reshaped back."""

    node_name = "ViewBackward0"

    @staticmethod
    def forward(ctx, x, fn, args):
        ctx.shape = x.shape
        return fn(x, *args)

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.shape), None, None


class Permute(Function):
    node_name = "PermuteBackward0"

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


class Expand(Function):
    """The engine sums the broadcast gradient back to the input's shape."""

    node_name = "ExpandBackward0"

    @staticmethod
    def forward(ctx, x, sizes):
        return S.expand(x, sizes)

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class Slice(Function):
    """Any strided sub-view (indexing, select, narrow, as_strided): the gradient is scattered back by
    replaying the same view on a zero tensor of the input's shape."""

    node_name = "SliceBackward0"

    @staticmethod
    def forward(ctx, x, fn, args):
        ctx.meta, ctx.fn, ctx.args = (x.shape, x.dtype, x.device), fn, args
        return fn(x, *args)

    @staticmethod
    def backward(ctx, grad):
        from .creation import zeros

        shape, dtype, device = ctx.meta
        z = zeros(shape, dtype=dtype, device=device)
        ctx.fn(z, *ctx.args).copy_(grad)
        return z, None, None


class Clone(Function):
    node_name = "CloneBackward0"

    @staticmethod
    def forward(ctx, x, memory_format=None):
        return x.clone(memory_format=memory_format)

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class ToCopy(Function):
    """Device and dtype changes: the gradient goes back to the input's device and dtype."""

    node_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx, x, device, dtype):
        ctx.src = (x.device, x.dtype)
        return x.to(device, dtype, copy=True)

    @staticmethod
    def backward(ctx, grad):
        return grad.to(*ctx.src), None, None
