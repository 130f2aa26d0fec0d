"""View ops as functions: each returns a tensor sharing storage with its input."""
from __future__ import annotations

import operator
from numbers import Number

from ..autograd.graph import needs_graph
from ..tensor import is_tensor
from . import indexing as I
from . import views as V


def _type_name(t) -> str:
    return t.type()


def view(t, *shape):
    """The same data with another shape, without copying: ``x.view(-1, 8)``."""
    if len(shape) == 1 and hasattr(shape[0], "itemsize") and hasattr(shape[0], "kind"):
        raise NotImplementedError("view(dtype) is not supported; use .to(dtype)")
    shape = V.infer_size(V.as_size(shape, "view"), t.numel())
    strides = V.view_strides(t._shape, t._strides, shape)
    if strides is None:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one dimension spans across "
            "two contiguous subspaces). Use .reshape(...) instead."
        )
    return t._view(shape, strides)


def reshape(t, *shape):
    """A view when the memory layout allows one (as ``view``), else a contiguous copy."""
    shape = V.infer_size(V.as_size(shape, "reshape"), t.numel())
    strides = V.view_strides(t._shape, t._strides, shape)
    if strides is None:
        return view(t.contiguous(), shape)
    return t._view(shape, strides)


def permute(t, *dims):
    dims = V.as_size(dims, "permute")
    if len(dims) != t.dim():
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired "
            f"ordering of dimensions i.e. input.dim() = {t.dim()} is not equal to len(dims) = {len(dims)}"
        )
    dims = [V.wrap_dim(d, t.dim()) for d in dims]
    if len(set(dims)) != len(dims):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return t._view(tuple(t._shape[d] for d in dims), tuple(t._strides[d] for d in dims))


def transpose(t, dim0, dim1):
    n = t.dim()
    d0, d1 = V.wrap_dim(dim0, n), V.wrap_dim(dim1, n)
    if n == 0:
        return t._view((), ())
    order = list(range(n))
    order[d0], order[d1] = order[d1], order[d0]
    return permute(t, order)


def t_(t):
    if t.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {t.dim()}D")
    return transpose(t, 0, 1) if t.dim() == 2 else t._view(t._shape, t._strides)


def expand(t, *sizes):
    """Broadcast size-1 dims to ``sizes`` with stride 0 (no copy); -1 keeps a dim's size."""
    shape, strides = V.expand_strides(t._shape, t._strides, V.as_size(sizes, "expand"), _type_name(t))
    return t._view(shape, strides)


def expand_as(t, other):
    return expand(t, other.shape)


def squeeze(t, dim=None):
    """Drop size-1 dims: all of them, or those among ``dim`` (an int or a tuple of ints)."""
    if dim is None:
        dims = {d for d, n in enumerate(t._shape) if n == 1}
    else:
        listed = [V.wrap_dim(d, t.dim()) for d in (dim if isinstance(dim, (tuple, list)) else (dim,))]
        for d in listed:
            if listed.count(d) > 1:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        dims = {d for d in listed if t.dim() and t._shape[d] == 1}
    keep = [d for d in range(t.dim()) if d not in dims]
    return t._view(tuple(t._shape[d] for d in keep), tuple(t._strides[d] for d in keep))


def unsqueeze(t, dim):
    """Insert a size-1 dim at ``dim`` (negative counts from the end of the result)."""
    d = V.wrap_dim(dim, t.dim() + 1)
    stride = t._strides[d] * t._shape[d] if d < t.dim() else 1
    return t._view(t._shape[:d] + (1,) + t._shape[d:], t._strides[:d] + (stride,) + t._strides[d:])


def flatten(t, start_dim=0, end_dim=-1):
    """Merge dims ``start_dim..end_dim`` into one (a view when possible, like ``reshape``)."""
    if t.dim() == 0:
        return reshape(t, 1)
    s, e = V.wrap_dim(start_dim, t.dim()), V.wrap_dim(end_dim, t.dim())
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return t
    n = 1
    for k in t._shape[s : e + 1]:
        n *= k
    return reshape(t, t._shape[:s] + (n,) + t._shape[e + 1 :])


def narrow(t, dim, start, length):
    """``length`` elements of ``dim`` from ``start`` (which may be negative), as a view."""
    if t.dim() == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    start, length = operator.index(start), operator.index(length)
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    d = V.wrap_dim(dim, t.dim())
    size = t._shape[d]
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    if start < 0:
        start += size
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    shape = t._shape[:d] + (length,) + t._shape[d + 1 :]
    return t._view(shape, t._strides, t._offset + start * t._strides[d])


def select(t, dim, index):
    """The slice at ``index`` of ``dim``, with that dim removed: ``x.select(1, 2)`` is ``x[:, 2]``."""
    if t.dim() == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    index = operator.index(index)
    d = V.wrap_dim(dim, t.dim())
    size = t._shape[d]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(t._shape)} at dimension {d}")
    index %= size
    return t._view(t._shape[:d] + t._shape[d + 1 :], t._strides[:d] + t._strides[d + 1 :], t._offset + index * t._strides[d])


def as_strided(t, size, stride, storage_offset=None):
    off = t._offset if storage_offset is None else storage_offset
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    extent = off + sum((n - 1) * s for n, s in zip(size, stride)) + 1 if all(size) else 0
    if extent > t._storage.size:
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {off} require {extent} elements "
            f"but the storage has only {t._storage.size}"
        )
    return t._view(size, stride, off)


def getitem(t, index):
    """Basic indexing (ints, slices with steps, None, ...) returns a view; tensors, lists and bools among the
    indices go to ``ops.indexing`` (advanced indexing copies, as in numpy and PyTorch)."""
    resolved = V.basic_index(t, index)
    if resolved is None:
        return I.getitem(t, index)
    return t._view(*resolved)


def setitem(t, index, value):
    """``t[index] = value``: a number fills, a tensor (any device, broadcastable) is copied in; tensors,
    lists and bools among the indices go to ``ops.indexing``."""
    resolved = V.basic_index(t, index)
    if resolved is None:
        return I.setitem(t, index, value)
    # a tensor in the graph is written through a tracked view, so even a number written in reaches autograd
    target = t[index] if needs_graph(t) else t._view(*resolved)
    if is_tensor(value):
        if value.dim() == 0 and value.device.type == "cpu" and not value.requires_grad:
            target.fill_(value.item())
            return
        # PyTorch drops the value's leading size-1 dims before broadcasting it to the target
        lead = 0
        while lead < value.dim() and value._shape[lead] == 1:
            lead += 1
        V.expand_strides(value._shape[lead:], value._strides[lead:], target._shape, _type_name(value))  # checks
        target.copy_(value.reshape(value._shape[lead:]) if lead else value)
    elif isinstance(value, Number) or type(value).__module__ == "numpy" and getattr(value, "ndim", 1) == 0:
        target.fill_(value)
    else:
        kind = type(value).__name__ if type(value).__module__ == "builtins" else f"{type(value).__module__}.{type(value).__name__}"
        raise TypeError(f"can't assign a {kind} to a {_type_name(t)}")
