"""View ops as functions: each returns a tensor sharing storage with its input."""
from __future__ import annotations

from . import views as V


def view(t, *shape):
    if len(shape) == 1 and not isinstance(shape[0], (int, tuple, list)) and hasattr(shape[0], "np"):
        raise NotImplementedError("view(dtype) is not supported; use .to(dtype)")
    shape = V.infer_size(V.as_size(shape), t.numel())
    strides = V.view_strides(t._shape, t._strides, shape)
    if strides is None:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one dimension spans across "
            "two contiguous subspaces). Use .reshape(...) instead."
        )
    return t._view(shape, strides)


def reshape(t, *shape):
    shape = V.infer_size(V.as_size(shape), t.numel())
    strides = V.view_strides(t._shape, t._strides, shape)
    if strides is None:
        return view(t.clone(), shape)
    return t._view(shape, strides)


def permute(t, *dims):
    dims = V.as_size(dims)
    if len(dims) != t.dim():
        raise RuntimeError(
            f"permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = {t.dim()} is not equal to len(dims) = {len(dims)}"
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
    shape, strides = V.expand_strides(t._shape, t._strides, V.as_size(sizes))
    return t._view(shape, strides)


def squeeze(t, dim=None):
    if dim is None:
        dims = {d for d, n in enumerate(t._shape) if n == 1}
    else:
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        dims = {V.wrap_dim(d, t.dim()) for d in dims}
        dims = {d for d in dims if t.dim() and t._shape[d] == 1}
    keep = [d for d in range(t.dim()) if d not in dims]
    return t._view(tuple(t._shape[d] for d in keep), tuple(t._strides[d] for d in keep))


def unsqueeze(t, dim):
    d = V.wrap_dim(dim, t.dim() + 1)
    stride = t._strides[d] * t._shape[d] if d < t.dim() else 1
    return t._view(t._shape[:d] + (1,) + t._shape[d:], t._strides[:d] + (stride,) + t._strides[d:])


def flatten(t, start_dim=0, end_dim=-1):
    if t.dim() == 0:
        return reshape(t, 1)
    s, e = V.wrap_dim(start_dim, t.dim()), V.wrap_dim(end_dim, t.dim())
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    n = 1
    for k in t._shape[s : e + 1]:
        n *= k
    return reshape(t, t._shape[:s] + (n,) + t._shape[e + 1 :])


def narrow(t, dim, start, length):
    d = V.wrap_dim(dim, t.dim())
    size = t._shape[d]
    if start < 0:
        start += size
    if not (0 <= start <= size) or length < 0 or start + length > size:
        raise IndexError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    shape = t._shape[:d] + (length,) + t._shape[d + 1 :]
    return t._view(shape, t._strides, t._offset + start * t._strides[d])


def select(t, dim, index):
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
        raise RuntimeError(f"mismatch in length of strides and shape")
    extent = off + sum((n - 1) * s for n, s in zip(size, stride)) + 1 if all(size) else 0
    if extent > t._storage.size:
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {off} require {extent} elements "
            f"but the storage has only {t._storage.size}"
        )
    return t._view(size, stride, off)


def getitem(t, index):
    """Basic indexing (ints, slices with steps, None, ...) returns a view."""
    if hasattr(index, "_storage") or isinstance(index, list) or (
        isinstance(index, tuple) and any(hasattr(i, "_storage") or isinstance(i, (list, bool)) for i in index)
    ):
        raise NotImplementedError("advanced indexing (tensors, lists, booleans as indices) is not implemented yet")
    resolved = V.basic_index(t, index)
    if resolved is None:
        raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and tensors are valid indices (got {type(index).__name__})")
    return t._view(*resolved)


def setitem(t, index, value):
    target = getitem(t, index)
    if hasattr(value, "_storage"):
        target.copy_(value)
    else:
        target.fill_(value)
