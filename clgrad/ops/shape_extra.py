"""More shape ops: PyTorch's ``*_copy`` variants of the view ops, ``hsplit/vsplit/dsplit``,
``split_with_sizes``, ``Tensor.unfold`` (a view), ``rot90``, ``diagflat``, ``sum_to_size``,
``repeat_interleave``, ``resize_``/``resize_as_`` and ``constant_pad_nd``.

Everything is composed from existing differentiable clgrad ops (views, clone, flip, index_select, index_add), so
autograd comes for free; only ``unfold`` is its own view ``Function`` because its windows may overlap.
"""
from __future__ import annotations

import math
from numbers import Integral

import numpy as np

from .. import dtypes as D
from ..autograd.function import Function
from ..autograd.graph import needs_graph
from ..tensor import contiguous_format, is_tensor
from . import padding
from . import views as V
from .creation import tensor as _tensor
from .guard import tensor_first
from .joins import split, tensor_split, unbind

__all__ = [
    "view_copy", "permute_copy", "transpose_copy", "t_copy", "expand_copy", "squeeze_copy", "unsqueeze_copy",
    "diagonal_copy", "select_copy", "slice_copy", "narrow_copy", "unbind_copy", "split_copy",
    "split_with_sizes_copy", "alias_copy", "as_strided_copy", "detach_copy", "unfold_copy", "values_copy",
    "indices_copy", "hsplit", "vsplit", "dsplit", "split_with_sizes", "rot90", "diagflat", "repeat_interleave",
    "constant_pad_nd",
]


# ---- *_copy: the view, then a contiguous copy (PyTorch's functionalization ops) ---------------------


def _fresh(t):
    return t.clone(memory_format=contiguous_format)


def _into(out, result):
    """``out=``: resized to the result's shape (as PyTorch resizes a mismatched out), then written."""
    if out is None:
        return result
    if out.shape != result.shape:
        resize_(out, result.shape)
    return out.copy_(result)


def view_copy(input, size, *, out=None):  # noqa: A002
    """``input.view(size)`` as a new contiguous tensor: ``clgrad.view_copy(x, (2, -1))``."""
    return _into(out, _fresh(input.view(size)))


def permute_copy(input, dims, *, out=None):  # noqa: A002
    return _into(out, _fresh(input.permute(dims)))


def transpose_copy(input, dim0, dim1, *, out=None):  # noqa: A002
    return _into(out, _fresh(input.transpose(dim0, dim1)))


def t_copy(input, *, out=None):  # noqa: A002
    return _into(out, _fresh(input.t()))


def expand_copy(input, size, *, implicit=False, out=None):  # noqa: A002
    return _into(out, _fresh(input.expand(size)))


def squeeze_copy(input, dim=None, *, out=None):  # noqa: A002
    return _into(out, _fresh(input.squeeze() if dim is None else input.squeeze(dim)))


def unsqueeze_copy(input, dim, *, out=None):  # noqa: A002
    return _into(out, _fresh(input.unsqueeze(dim)))


def diagonal_copy(input, offset=0, dim1=0, dim2=1, *, out=None):  # noqa: A002
    return _into(out, _fresh(input.diagonal(offset, dim1, dim2)))


def select_copy(input, dim, index, *, out=None):  # noqa: A002
    return _into(out, _fresh(input.select(dim, index)))


def slice_copy(input, dim=0, start=None, end=None, step=1, *, out=None):  # noqa: A002
    """``input`` sliced ``start:end:step`` along ``dim`` (bounds clamped as Python's), copied."""
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    d = V.wrap_dim(dim, input.dim())
    return _into(out, _fresh(input[(slice(None),) * d + (slice(start, end, step),)]))


def narrow_copy(input, dim, start, length, *, out=None):  # noqa: A002
    return _into(out, _fresh(input.narrow(dim, start, length)))


def unbind_copy(input, dim=0, *, out=None):  # noqa: A002
    return _into_list(out, tuple(_fresh(t) for t in unbind(input, dim)))


def split_copy(input, split_size, dim=0, *, out=None):  # noqa: A002
    return _into_list(out, tuple(_fresh(t) for t in split(input, split_size, dim)))


def split_with_sizes_copy(input, split_sizes, dim=0, *, out=None):  # noqa: A002
    return _into_list(out, tuple(_fresh(t) for t in split_with_sizes(input, split_sizes, dim)))


def _into_list(out, results):
    if out is None:
        return results
    if len(out) != len(results):
        raise RuntimeError(f"expected out to have {len(results)} tensors, but got {len(out)}")
    for o, r in zip(out, results):
        _into(o, r)
    return None  # PyTorch's list-out overloads return None


def alias_copy(input, *, out=None):  # noqa: A002
    return _into(out, _fresh(input))


def as_strided_copy(input, size, stride, storage_offset=None, *, out=None):  # noqa: A002
    return _into(out, _fresh(input.as_strided(size, stride, storage_offset)))


def detach_copy(input, *, out=None):  # noqa: A002
    return _into(out, _fresh(input.detach()))


def unfold_copy(input, dimension, size, step, *, out=None):  # noqa: A002
    return _into(out, _fresh(unfold(input, dimension, size, step)))


def values_copy(input, *, out=None):  # noqa: A002
    """The values of a sparse COO tensor, copied."""
    return _into(out, _fresh(input.values()))


def indices_copy(input, *, out=None):  # noqa: A002
    """The indices of a coalesced sparse COO tensor, copied."""
    return _into(out, _fresh(input.indices()))


# ---- splits ---------------------------------------------------------------------------------------


def split_with_sizes(input, split_sizes, dim=0):  # noqa: A002
    """Views of consecutive pieces of ``dim`` with the listed sizes: ``x.split_with_sizes([1, 3])``."""
    if not isinstance(split_sizes, (list, tuple)) and not (is_tensor(split_sizes) and split_sizes.dim() == 1):
        raise TypeError(f"split_with_sizes(): argument 'split_sizes' must be tuple of ints, not "
                        f"{type(split_sizes).__name__}")
    return split(input, [int(s) for s in split_sizes], dim)


def _dir_split(name: str, input, sections, min_dim: int, dim: int):  # noqa: A002
    if input.dim() < min_dim:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dim} dimension, but got a tensor with "
                           f"{input.dim()} dimensions!")
    if isinstance(sections, Integral) and not isinstance(sections, bool):
        n = input.shape[dim]
        if sections == 0 or n % sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the size of the "
                               f"dimension {n} is not divisible by the split_size {sections}!")
    return tensor_split(input, sections, dim)


def hsplit(input, indices_or_sections):  # noqa: A002
    """Split columns (dim 1; dim 0 of a 1-D tensor): ``clgrad.hsplit(x, 2)`` or ``hsplit(x, [1, 3])``."""
    return _dir_split("hsplit", input, indices_or_sections, 1, 0 if input.dim() == 1 else 1)


def vsplit(input, indices_or_sections):  # noqa: A002
    """Split rows (dim 0) of an at least 2-D tensor."""
    return _dir_split("vsplit", input, indices_or_sections, 2, 0)


def dsplit(input, indices_or_sections):  # noqa: A002
    """Split depth (dim 2) of an at least 3-D tensor."""
    return _dir_split("dsplit", input, indices_or_sections, 3, 2)


# ---- unfold: sliding windows as a view ------------------------------------------------------------


def _unfold_view(x, d: int, size: int, step: int):
    if x.dim() == 0:
        return x._view((size,), (1,))
    n = x._shape[d]
    shape = x._shape[:d] + ((n - size) // step + 1,) + x._shape[d + 1:] + (size,)
    strides = x._strides[:d] + (x._strides[d] * step,) + x._strides[d + 1:] + (x._strides[d],)
    return x._view(shape, strides)


class Unfold(Function):
    """Windows may overlap, so the gradient is summed back with ``index_add`` (not copied as Slice does)."""

    node_name = "UnfoldBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, x, d, size, step):
        ctx.meta = (x.shape, d, size, step)
        return _unfold_view(x, d, size, step)

    @staticmethod
    def backward(ctx, grad):
        shape, d, size, step = ctx.meta
        if not shape:
            return grad.sum().reshape(()), None, None, None
        windows = grad.shape[d]
        g = grad.movedim(-1, d + 1).flatten(d, d + 1)  # (..., windows * size, ...)
        idx = (np.arange(windows)[:, None] * step + np.arange(size)[None, :]).reshape(-1)
        index = _tensor(idx, dtype=D.int64, device=grad.device)
        return grad.new_zeros(shape).index_add(d, index, g), None, None, None


def unfold(self, dimension, size, step):
    """All windows of ``size`` elements, ``step`` apart, along ``dimension``, as a new last dim (a view):
    ``clgrad.arange(5.).unfold(0, 2, 1)`` is [[0, 1], [1, 2], [2, 3], [3, 4]]."""
    d = V.wrap_dim(dimension, self.dim())
    n = self._shape[d] if self.dim() else 1
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if needs_graph(self):
        return Unfold.apply(self, d, size, step)
    return _unfold_view(self, d, size, step)


# ---- rot90, diagflat, sum_to_size ------------------------------------------------------------------


def rot90(input, k=1, dims=(0, 1)):  # noqa: A002
    """Rotate by 90 degrees ``k`` times in the plane ``dims``, from the first towards the second axis."""
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.dim() < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.dim()}")
    d0, d1 = (V.wrap_dim(d, input.dim()) for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k %= 4
    if k == 1:
        return input.flip(d1).transpose(d0, d1)
    if k == 2:
        return input.flip((d0, d1))
    if k == 3:
        return input.flip(d0).transpose(d0, d1)
    return input.clone(memory_format=contiguous_format)


def diagflat(input, offset=0):  # noqa: A002
    """The flattened input on diagonal ``offset`` of a square matrix: ``clgrad.diagflat(x)``."""
    return input.reshape(-1).diag(offset)


def sum_to_size(self, *size):
    """Sum ``self`` down to ``size`` (a shape ``self`` broadcasts from): ``x.sum_to_size(1, 3)``."""
    size = V.as_size(size, "sum_to_size")
    try:
        V.broadcast_shapes(tuple(size), self.shape)
        ok = len(size) <= self.dim() and V.broadcast_shapes(tuple(size), self.shape) == tuple(self.shape)
    except RuntimeError:
        ok = False
    if not ok:
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(self.shape)}}}.")
    lead = self.dim() - len(size)
    out = self.sum(tuple(range(lead))) if lead else self
    keep = tuple(i for i, n in enumerate(size) if n == 1 and out.shape[i] != 1)
    return out.sum(keep, keepdim=True) if keep else out


# ---- repeat_interleave -----------------------------------------------------------------------------


def _repeat_counts(repeats, n: int):
    if repeats.dim() > 1:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    if repeats.dtype not in (D.int32, D.int64):
        raise NotImplementedError(f"\"repeat_interleave_cpu\" not implemented for '{repeats.dtype.scalar_name}'")
    counts = np.asarray(repeats.detach().cpu().numpy(), dtype=np.int64).reshape(-1)  # sizes are host data
    if counts.size == 1 and repeats.dim() == 0:
        counts = np.full(n, counts[0])
    if counts.size != n:
        raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                           f"{counts.size} and input.size(0) = {n}")
    if (counts < 0).any():
        raise RuntimeError("repeats can not be negative")
    return counts


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):  # noqa: A002
    """Repeat each element (or slice along ``dim``) ``repeats`` times: ``x.repeat_interleave(2)``, or by a
    tensor of per-element counts; ``repeat_interleave(counts)`` alone gives ``arange(n)`` repeated."""
    if repeats is None:  # the one-argument overload: indices repeated
        counts = _repeat_counts(input, input.numel())
        out = np.repeat(np.arange(counts.size), counts)
        return _check_size(_tensor(out, dtype=input.dtype, device=input.device), output_size)
    x = input.reshape(-1) if dim is None else input
    if x.dim() == 0:
        x = x.reshape(1)
    d = V.wrap_dim(0 if dim is None else dim, x.dim())
    n = x.shape[d]
    if not is_tensor(repeats):
        if repeats < 0:
            raise RuntimeError("repeats can not be negative")
        shape = list(x.shape)
        shape.insert(d + 1, int(repeats))
        out = x.unsqueeze(d + 1).expand(shape).flatten(d, d + 1)
        return _check_size(out, output_size, d)
    counts = _repeat_counts(repeats, n)
    index = _tensor(np.repeat(np.arange(n), counts), dtype=D.int64, device=x.device)
    return _check_size(x.index_select(d, index), output_size, d)


def _check_size(out, output_size, d: int = 0):
    if output_size is not None and out.shape[d] != output_size:
        raise RuntimeError("allocated size does not match required size")
    return out


# ---- constant_pad_nd, resize_ ----------------------------------------------------------------------


def constant_pad_nd(input, pad, value=0):  # noqa: A002
    """Pad (or, with negative amounts, crop) the last dims with ``value``; ``pad`` lists the last dim first."""
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError(f"Length of pad must be even but instead it equals {len(pad)}")
    if len(pad) // 2 > input.dim():
        raise RuntimeError(f"Length of pad should be no more than twice the number of dimensions of the input. "
                           f"Pad length is {len(pad)} while the input has {input.dim()} dimensions.")
    return padding._constant_pad(input, pad, value)


def resize_(self, *sizes, memory_format=None):
    """Give ``self`` the shape ``sizes`` with contiguous strides (or ``memory_format``'s), in place. The data
    up to the old extent stays in the storage; new elements are uninitialised. When the storage is too small
    this tensor moves to a new, larger storage (PyTorch grows the storage itself, so other views would see it;
    clgrad's storages have a fixed size, so other views keep the old memory)."""
    shape = tuple(V.as_size(sizes, "resize_"))
    if any(n < 0 for n in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(shape)}: {list(shape)}")
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    strides = (memory_format or contiguous_format).strides(shape)
    need = self._offset + math.prod(shape)
    if need > self._storage.size:
        bigger = self.__class__._empty((need,), self.dtype, self.device)
        old = self._storage.size
        if old:
            bigger[:old].copy_(self._view((old,), (1,), 0))
        self._assign(bigger._storage, self.dtype, shape, strides, self._offset)
        if self._base is not None:
            self._base = None  # no longer a view: its memory is its own now
    else:
        self._assign(self._storage, self.dtype, shape, strides, self._offset)
    return self


def resize_as_(self, the_template, *, memory_format=None):
    """``self.resize_(the_template.shape)``."""
    return resize_(self, the_template.shape, memory_format=memory_format)


def _narrow_copy_method(self, dim, start, length):
    return narrow_copy(self, dim, start, length)


def install(T) -> None:
    """Attach this module's methods to Tensor."""
    T.unfold, T.sum_to_size, T.resize_, T.resize_as_ = unfold, sum_to_size, resize_, resize_as_
    T.narrow_copy = _narrow_copy_method
    for name in ("hsplit", "vsplit", "dsplit", "split_with_sizes", "rot90", "diagflat", "repeat_interleave"):
        setattr(T, name, globals()[name])


# a list or a number where a tensor belongs raises PyTorch's TypeError (see guard.py)
tensor_first(globals(), __all__)
