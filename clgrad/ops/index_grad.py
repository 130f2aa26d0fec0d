"""Backward of the indexing ops: one ``Function`` per op, with PyTorch's node names.

The forward of each is the raw op in ``indexing.py`` (imported as ``I``) or ``gather.py`` (``Ga``); backward formulas are written in
clgrad ops, so double backward works.
"""
from __future__ import annotations

from ..autograd.function import Function
from ..tensor import is_tensor
from . import gather as Ga
from . import indexing as I
from . import pointwise as P
from .creation import zeros


def _reduce_to(g, shape):
    """Sum a gradient over the dims broadcasting added (after dropping the value's leading 1s, as setitem)."""
    shape = tuple(shape)
    strip = shape
    while len(strip) > g.dim() and strip[0] == 1:
        strip = strip[1:]
    lead = g.dim() - len(strip)
    dims = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(strip) if n == 1 and g._shape[lead + i] != 1)
    if dims:
        g = g.sum(dim=dims, keepdim=True)
    return g.reshape(shape) if tuple(g._shape) != shape else g


def _pad_to(g, shape):
    """``g`` in the top corner of zeros of ``shape`` (scatter's src may be larger than its index)."""
    if tuple(g._shape) == tuple(shape):
        return g
    z = I._zeros(shape, g)
    z[tuple(slice(0, n) for n in g._shape)] = g
    return z


class Index(Function):
    node_name = "IndexBackward0"

    @staticmethod
    def forward(ctx, x, checked, *indices):
        ctx.meta = (x._shape, x.dtype, x.device)
        I._save_indices(ctx, indices)
        return I._index(x, list(indices), checked)

    @staticmethod
    def backward(ctx, grad):
        shape, dt, dev = ctx.meta
        indices = I._saved_indices(ctx)
        g = I.index_put(zeros(shape, dtype=dt, device=dev), indices, grad, accumulate=True)
        return (g, None) + (None,) * len(indices)


class IndexPut(Function):
    node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, x, values, accumulate, checked, *indices):
        ctx.accumulate = accumulate
        ctx.vshape = values._shape if is_tensor(values) else None
        I._save_indices(ctx, indices)
        out = x.clone()
        I._index_put_raw(out, list(indices), values, accumulate, checked)
        return out

    @staticmethod
    def backward(ctx, grad):
        indices = I._saved_indices(ctx)
        gx = gv = None
        if ctx.needs_input_grad[0]:
            gx = grad if ctx.accumulate else I.index_put(grad, indices, I._zeros((), grad))
        if ctx.needs_input_grad[1]:
            gv = _reduce_to(I.index(grad, indices), ctx.vshape)
        return (gx, gv, None, None) + (None,) * len(indices)


class Gather(Function):
    node_name = "GatherBackward0"

    @staticmethod
    def forward(ctx, x, dim, index):
        ctx.meta = (x._shape, dim)
        ctx.save_for_backward(index)
        return Ga._gather(x, dim, index)

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        shape, dim = ctx.meta
        return Ga.scatter_add(I._zeros(shape, grad), dim, index, grad), None, None


class Scatter(Function):
    node_name = "ScatterBackward0"

    @staticmethod
    def forward(ctx, x, dim, index, src, reduce):
        ctx.meta = (dim, reduce, src._shape if is_tensor(src) else None)
        ctx.save_for_backward(index)
        out = x.clone()
        Ga._scatter_raw(out, dim, index, src, Ga._REDUCE_MODES[reduce])
        return out

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        dim, reduce, src_shape = ctx.meta
        if reduce == "multiply":
            raise NotImplementedError("the derivative of scatter with reduce='multiply' is not implemented")
        gx = gsrc = None
        if ctx.needs_input_grad[0]:
            gx = grad if reduce == "add" else Ga.scatter(grad, dim, index, 0)
        if src_shape is not None and ctx.needs_input_grad[3]:
            gsrc = _pad_to(Ga.gather(grad, dim, index), src_shape)
        return gx, None, None, gsrc, None


class ScatterValue(Scatter):
    node_name = "ScatterBackward1"


class ScatterAdd(Scatter):
    node_name = "ScatterAddBackward0"


class IndexSelect(Function):
    node_name = "IndexSelectBackward0"

    @staticmethod
    def forward(ctx, x, dim, index):
        ctx.meta = (x._shape, dim)
        ctx.save_for_backward(index)
        return Ga._index_select(x, dim, index)

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        shape, dim = ctx.meta
        return Ga.index_add(I._zeros(shape, grad), dim, index, grad.reshape(grad._shape or (1,))), None, None


class IndexAdd(Function):
    node_name = "IndexAddBackward0"

    @staticmethod
    def forward(ctx, x, dim, index, source):
        ctx.meta = (dim, source._shape)
        ctx.save_for_backward(index)
        out = x.clone()
        Ga._index_add_raw(out, dim, index, source)
        return out

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        dim, src_shape = ctx.meta
        gsrc = Ga.index_select(grad, dim, index).reshape(src_shape) if ctx.needs_input_grad[3] else None
        return grad, None, None, gsrc


class IndexFill(Function):
    node_name = "IndexFillBackward0"

    @staticmethod
    def forward(ctx, x, dim, index, value):
        ctx.dim = dim
        ctx.save_for_backward(index)
        out = x.clone()
        Ga._index_fill_raw(out, dim, index, value)
        return out

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        gv = Ga.index_select(grad, ctx.dim, index).sum() if ctx.needs_input_grad[3] else None
        return Ga.index_fill(grad, ctx.dim, index, 0), None, None, gv


class MaskedFill(Function):
    node_name = "MaskedFillBackward0"

    @staticmethod
    def forward(ctx, x, mask, value):
        ctx.save_for_backward(mask)
        return I._masked_fill_raw(x, mask, value)

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        gv = P.apply("where", mask, grad, 0.0).sum() if ctx.needs_input_grad[2] else None
        return I.masked_fill(grad, mask, 0), None, gv


class MaskedFillTensor(MaskedFill):
    node_name = "MaskedFillBackward1"


class MaskedSelect(Function):
    node_name = "MaskedSelectBackward0"

    @staticmethod
    def forward(ctx, x, mask):
        out, indices, shape = I._masked_select(x, mask)
        ctx.meta = shape
        I._save_indices(ctx, indices)
        return out

    @staticmethod
    def backward(ctx, grad):
        shape = ctx.meta
        g = I.index_put(I._zeros(shape or (1,), grad), I._saved_indices(ctx), grad)
        return (g if shape else g.reshape(())), None


