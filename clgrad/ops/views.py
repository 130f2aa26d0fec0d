"""Views: shape, stride and offset arithmetic only. No data moves until ``contiguous()`` is asked for."""
from __future__ import annotations

import math
from numbers import Integral


def contiguous_strides(shape) -> tuple:
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


def wrap_dim(dim, ndim: int) -> int:
    """Normalise a possibly negative dim, with PyTorch's IndexError for an out-of-range one."""
    if not isinstance(dim, Integral) or isinstance(dim, bool):
        raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def as_size(args) -> tuple:
    """Accept ``f(2, 3)``, ``f((2, 3))`` and ``f([2, 3])`` size arguments."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    if len(args) == 1 and hasattr(args[0], "__iter__") and not hasattr(args[0], "_storage"):
        args = tuple(args[0])
    out = []
    for a in args:
        if hasattr(a, "_storage") and a.numel() == 1 and a.dtype.kind in "iu":
            a = a.item()
        if not isinstance(a, Integral) or isinstance(a, bool):
            raise TypeError(f"size must be a tuple of ints, but got an element of type {type(a).__name__}")
        out.append(int(a))
    return tuple(out)


def infer_size(shape, numel: int) -> tuple:
    shape = list(shape)
    neg = [i for i, n in enumerate(shape) if n == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    if any(n < -1 for n in shape):
        raise RuntimeError(f"invalid shape dimension {min(shape)}")
    known = math.prod(n for n in shape if n != -1)
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return tuple(shape)


def view_strides(old_shape, old_strides, new_shape):
    """Strides that let ``new_shape`` view memory laid out as (old_shape, old_strides), or None.

    PyTorch's computeStride: each chunk of old dims that is contiguous within itself can be split
    into any new dims of the same total size.
    """
    if math.prod(old_shape) == 0:
        return contiguous_strides(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base = old_strides[-1] if old_strides else 1
    tensor_numel, view_numel = 1, 1
    for d in reversed(range(len(old_shape))):
        tensor_numel *= old_shape[d]
        if d == 0 or (old_shape[d - 1] != 1 and old_strides[d - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_base = old_strides[d - 1]
                tensor_numel, view_numel = 1, 1
    if view_d != -1:
        return None
    return tuple(new_strides)


def broadcast_shapes(*shapes) -> tuple:
    """numpy broadcasting, with PyTorch's error message."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, n in enumerate(s):
            d = ndim - len(s) + i
            if out[d] == 1:
                out[d] = n
            elif n != 1 and n != out[d]:
                raise RuntimeError(
                    f"The size of tensor a ({out[d]}) must match the size of tensor b ({n}) at non-singleton dimension {i}"
                )
    return tuple(out)


def expand_strides(shape, strides, new_shape):
    """Strides that broadcast (shape, strides) to ``new_shape``; -1 in new_shape keeps a size."""
    if len(new_shape) < len(shape):
        raise RuntimeError(
            f"expand: the number of sizes provided ({len(new_shape)}) must be greater or equal to the number of dimensions in the tensor ({len(shape)})"
        )
    lead = len(new_shape) - len(shape)
    out_shape, out_strides = [], []
    for i, n in enumerate(new_shape):
        if i < lead:
            if n < 0:
                raise RuntimeError(f"expand: -1 is not allowed in a leading, non-existing dimension {i}")
            out_shape.append(n)
            out_strides.append(0)
            continue
        old, st = shape[i - lead], strides[i - lead]
        if n == -1:
            n = old
        if old == n:
            out_strides.append(st)
        elif old == 1:
            out_strides.append(0)
        else:
            raise RuntimeError(
                f"The expanded size of the tensor ({n}) must match the existing size ({old}) at non-singleton "
                f"dimension {i}.  Target sizes: {list(new_shape)}.  Tensor sizes: {list(shape)}"
            )
        out_shape.append(n)
    return tuple(out_shape), tuple(out_strides)


def basic_index(t, index):
    """Resolve ints, slices (with steps), None and ... into a view's (shape, strides, offset).

    Returns None when the index needs advanced indexing (tensors, lists, bools).
    """
    if not isinstance(index, tuple):
        index = (index,)
    for item in index:
        if not (item is None or item is Ellipsis or isinstance(item, (slice, Integral))) or isinstance(item, bool):
            return None
    n_ellipsis = sum(item is Ellipsis for item in index)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(1 for item in index if item is not None and item is not Ellipsis)
    if used > t.dim():
        raise IndexError(f"too many indices for tensor of dimension {t.dim()}")
    if n_ellipsis:
        i = index.index(Ellipsis)
        index = index[:i] + (slice(None),) * (t.dim() - used) + index[i + 1 :]
    shape, strides, offset = [], [], t._offset
    d = 0
    for item in index:
        if item is None:
            shape.append(1)
            strides.append(0)
            continue
        size, stride = t.shape[d], t._strides[d]
        if isinstance(item, Integral):
            i = int(item)
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for dimension {d} with size {size}")
            offset += (i % size) * stride
        else:
            start, stop, step = item.start, item.stop, item.step
            step = 1 if step is None else int(step)
            if step <= 0:
                raise ValueError("step must be greater than zero")
            start, stop, _ = slice(start, stop, step).indices(size)
            n = max(0, -(-(stop - start) // step))
            if n:
                offset += start * stride
            shape.append(n)
            strides.append(stride * step)
        d += 1
    shape += t.shape[d:]
    strides += t._strides[d:]
    return tuple(shape), tuple(strides), offset
