"""Views and in-place ops: PyTorch's ``CopySlices`` and the ``AsStridedBackward0`` a view is rebuilt with.

Geometry is kept in storage terms (a view's shape, strides and offset relative to its base), so any view,
however it was made, is handled by one rule. Gradients of the base are built in the base's own memory
layout (a dense base may be a transpose), so that geometry applies to them unchanged.
"""
from __future__ import annotations

from .function import Function
from .graph import gradient_edge


def _layout(shape, strides):
    """The dim order of a dense layout (outermost first) and its inverse permutation."""
    order = sorted(range(len(shape)), key=lambda d: -strides[d])
    expect = 1
    for d in reversed(order):
        if shape[d] != 1 and strides[d] != expect:
            raise NotImplementedError(
                "in-place ops through views of a base tensor with gaps or overlaps in memory are not differentiable"
            )
        expect *= shape[d]
    inverse = [0] * len(order)
    for i, d in enumerate(order):
        inverse[d] = i
    return tuple(order), tuple(inverse)


def _geometry(base, view):
    order, inverse = _layout(base._shape, base._strides)
    return {"shape": view._shape, "strides": view._strides, "offset": view._offset - base._offset,
            "base_shape": base._shape, "order": order, "inverse": inverse, "dtype": base.dtype,
            "device": base.device}


class CopySlices(Function):
    """The base after a region of it (a strided view) was overwritten by ``value``."""

    node_name = "CopySlices"

    @staticmethod
    def forward(ctx, base, value, geometry):
        ctx.geometry = geometry
        return base._view(base._shape, base._strides)

    @staticmethod
    def backward(ctx, grad):
        from ..tensor import contiguous_format

        g = ctx.geometry
        # a fresh copy in the base's layout (offset 0), so the region's geometry applies to it directly
        root = grad.permute(*g["order"]).clone(memory_format=contiguous_format)
        region = root.as_strided(g["shape"], g["strides"], g["offset"])
        grad_value = region.clone() if ctx.needs_input_grad[1] else None
        region.zero_()  # the overwritten elements no longer depend on the base's old value
        return root.permute(*g["inverse"]), grad_value, None


CopySlices._backward_cls._qualified = True


class AsStrided(Function):
    """The node a view is rebuilt with after its memory changed: the gradient scattered into the base."""

    node_name = "AsStridedBackward0"

    @staticmethod
    def backward(ctx, grad):
        from ..ops.creation import zeros

        g = ctx.geometry
        shape, strides = g["shape"], g["strides"]
        # broadcast (stride 0) dims read one element many times: their gradients add up
        dims = tuple(i for i, (n, s) in enumerate(zip(shape, strides)) if s == 0 and n > 1)
        if dims:
            grad = grad.sum(dim=dims, keepdim=True)
            shape = tuple(1 if i in dims else n for i, n in enumerate(shape))
        root = zeros([g["base_shape"][d] for d in g["order"]], dtype=g["dtype"], device=g["device"])
        root.as_strided(shape, strides, g["offset"]).copy_(grad)
        return root.permute(*g["inverse"]), None


def rebase_view(base, view, value) -> None:
    """After ``value`` was written through ``view``: the base becomes a CopySlices node, and the view (like
    any other view of that memory) rebuilds its grad_fn from the base on its next use."""
    out = CopySlices.apply(base, value, _geometry(base, view))
    base.grad_fn, base._output_nr = out.grad_fn, 0
    view.__dict__["_view_version"] = -1


def refresh_view(view) -> None:
    """Point a tracked view's grad_fn at its base's current node (an ``AsStridedBackward0``)."""
    d = view.__dict__
    d["_view_version"] = view._storage.version
    base = view._base
    if base is None or not base.requires_grad:
        return  # nothing upstream to rebuild from: the view keeps the node it has
    ctx = AsStrided._backward_cls()
    ctx.needs_input_grad = (True, False)
    ctx.geometry = _geometry(base, view)
    ctx._edges = (gradient_edge(base), None)
    ctx.next_functions = ctx._edges[:1]
    ctx._input_meta = ((base._shape, base.dtype, base.device), None)
    ctx._output_meta = ((view._shape, view.dtype, view.device),)
    ctx._saved = ()
    d["_grad_fn"] = ctx
    view._output_nr = 0
