"""Views and in-place ops: PyTorch's ``CopySlices`` and the ``AsStridedBackward0`` a view is rebuilt with.

Geometry is kept in storage terms (a view's shape, strides and offset relative to its base), so any view,
however it was made, is handled by one rule. Gradients of the base are built in the base's own memory
layout (a dense base may be a transpose), so that geometry applies to them unchanged. These are nodes
only; ``graph.rebase_view`` and ``graph.refresh_view`` wire them in.
"""
from __future__ import annotations

import numpy as np

from ..dtypes import int64
from ..tensor import contiguous_format
from .nodes import BackwardCFunction


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


def geometry(base, view):
    order, inverse = _layout(base._shape, base._strides)
    return {"shape": view._shape, "strides": view._strides, "offset": view._offset - base._offset,
            "base_shape": base._shape, "order": order, "inverse": inverse, "dtype": base.dtype,
            "device": base.device}


class CopySlices(BackwardCFunction):
    """The base after a region of it (a strided view) was overwritten by ``value``: inputs (base, value)."""

    _qualified = True

    def apply(self, grad):
        g = self.geometry
        # a fresh copy in the base's layout (offset 0), so the region's geometry applies to it directly
        root = grad.permute(*g["order"]).clone(memory_format=contiguous_format)
        region = root.as_strided(g["shape"], g["strides"], g["offset"])
        grad_value = region.clone() if self.needs_input_grad[1] else None
        region.zero_()  # the overwritten elements no longer depend on the base's old value
        return root.permute(*g["inverse"]), grad_value, None


class AsStridedBackward0(BackwardCFunction):
    """The node a view is rebuilt with after its memory changed: the gradient scattered into the base."""

    def apply(self, grad):
        g = self.geometry
        shape, strides = g["shape"], g["strides"]
        # broadcast (stride 0) dims read one element many times: their gradients add up
        dims = tuple(i for i, (n, s) in enumerate(zip(shape, strides)) if s == 0 and n > 1)
        if dims:
            grad = grad.sum(dim=dims, keepdim=True)
            shape = tuple(1 if i in dims else n for i, n in enumerate(shape))
        root = grad.new_zeros([g["base_shape"][d] for d in g["order"]], dtype=g["dtype"], device=g["device"])
        if _overlaps(shape, strides):  # several view elements share a memory element: their gradients add up
            root.reshape(-1).index_add_(0, _flat_index(grad, shape, strides, g["offset"]), grad.reshape(-1))
        else:
            root.as_strided(shape, strides, g["offset"]).copy_(grad)
        return root.permute(*g["inverse"]), None


def _overlaps(shape, strides) -> bool:
    """Whether two elements of the view (shape, strides) are the same memory element."""
    reach = 1  # elements spanned by the dims seen so far, innermost first
    for s, n in sorted((s, n) for n, s in zip(shape, strides) if n > 1):
        if s < reach:
            return True
        reach = s * (n - 1) + reach
    return False


def _flat_index(like, shape, strides, offset):
    """int64 [numel]: the memory element each element of the view (shape, strides, offset) reads, in order
    (built on the host: only views that overlap themselves, which are rare, come here)."""
    index = np.full((), offset, np.int64)
    for d, (n, s) in enumerate(zip(shape, strides)):
        index = index + (np.arange(n, dtype=np.int64) * s).reshape((n,) + (1,) * (len(shape) - d - 1))
    return like.new_tensor(np.broadcast_to(index, shape).reshape(-1), dtype=int64)
