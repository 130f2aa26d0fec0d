"""Rebasing a view's base after an in-place op on the view (PyTorch's CopySlices)."""
from __future__ import annotations

from .function import Function


class CopySlices(Function):
    """The base after a region of it (a strided view) was overwritten by ``value``."""

    node_name = "CopySlices"

    @staticmethod
    def forward(ctx, base, value, geometry):
        ctx.geometry = geometry
        return base._view(base._shape, base._strides)

    @staticmethod
    def backward(ctx, grad):
        shape, strides, offset = ctx.geometry
        grad_base = grad.clone()
        region = grad_base.as_strided(shape, strides, offset)
        grad_value = region.clone()
        region.zero_()
        return grad_base, grad_value, None


def rebase_view(base, view) -> None:
    if not base.is_contiguous():
        raise NotImplementedError("in-place ops on views of non-contiguous base tensors are not differentiable yet")
    geometry = (view._shape, view._strides, view._offset - base._offset)
    out = CopySlices.apply(base, view, geometry)
    base.grad_fn, base._output_nr = out.grad_fn, out._output_nr
