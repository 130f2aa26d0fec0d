"""Views: shape, stride and offset arithmetic only. No data moves until ``contiguous()`` is asked for."""
from __future__ import annotations

import math
from numbers import Integral

from ..strides import contiguous_strides, dense_strides_like, is_non_overlapping_and_dense, wrap_dim  # noqa: F401
from ..tensor import is_tensor


def as_size(args, fn: str | None = None) -> tuple:
    """Accept ``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])`` and ``f(clgrad.Size([2, 3]))`` size arguments.

    ``fn`` names the caller in the TypeError for a non-int entry, as PyTorch's argument parser does.
    """
    if len(args) == 1 and not is_tensor(args[0]) and hasattr(args[0], "__iter__"):
        args = tuple(args[0])
    out = []
    for a in args:
        if type(a) is int:
            out.append(a)
            continue
        if is_tensor(a) and a.numel() == 1 and a.dtype.kind in "iu":
            a = a.item()
        if not isinstance(a, Integral) or isinstance(a, bool):
            what = type(a).__name__
            if fn is None:
                raise TypeError(f"size must be a tuple of ints, but got an element of type {what}")
            raise TypeError(f"{fn}(): argument 'size' (position 1) must be tuple of ints, but found element of type {what} at pos {len(out)}")
        out.append(int(a))
    return tuple(out)


def infer_size(shape, numel: int) -> tuple:
    """Fill in the one ``-1`` of ``shape`` so it holds ``numel`` elements (PyTorch's infer_size)."""
    shape = list(shape)
    infer = None
    for i, n in enumerate(shape):
        if n == -1:
            if infer is not None:
                raise RuntimeError("only one dimension can be inferred")
            infer = i
        elif n < 0:
            raise RuntimeError(f"invalid shape dimension {n} at index {i} of shape {shape}")
    known = math.prod(n for n in shape if n != -1)
    if numel == known or (infer is not None and known > 0 and numel % known == 0):
        if infer is not None:
            if known == 0:
                raise RuntimeError(
                    f"cannot reshape tensor of 0 elements into shape {shape} because the unspecified dimension "
                    "size -1 can be any value and is ambiguous"
                )
            shape[infer] = numel // known
        return tuple(shape)
    raise RuntimeError(f"shape '{shape}' is invalid for input of size {numel}")


def view_strides(old_shape, old_strides, new_shape):
    """Strides that let ``new_shape`` view memory laid out as (old_shape, old_strides), or None.

    PyTorch's computeStride: each chunk of old dims that is contiguous within itself can be split
    into any new dims of the same total size.
    """
    if not old_shape:  # a 0-dim tensor is one element, like shape (1,)
        old_shape, old_strides = (1,), (1,)
    if math.prod(old_shape) == 0:
        return tuple(old_strides) if tuple(old_shape) == tuple(new_shape) else contiguous_strides(new_shape)
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
    """numpy broadcasting, with PyTorch's error message (the dim is counted in the result)."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, n in enumerate(s):
            d = ndim - len(s) + i
            if out[d] == 1:
                out[d] = n
            elif n != 1 and n != out[d]:
                raise RuntimeError(
                    f"The size of tensor a ({out[d]}) must match the size of tensor b ({n}) at non-singleton dimension {d}"
                )
    return tuple(out)


def expand_strides(shape, strides, new_shape, what: str = "Tensor"):
    """Strides that broadcast (shape, strides) to ``new_shape``; -1 in new_shape keeps a size.

    ``what`` names the tensor's type in PyTorch's error for too few sizes (``clgrad.FloatTensor``).
    """
    if len(new_shape) < len(shape):
        raise RuntimeError(
            f"expand({what}{{{list(shape)}}}, size={list(new_shape)}): the number of sizes provided "
            f"({len(new_shape)}) must be greater or equal to the number of dimensions in the tensor ({len(shape)})"
        )
    lead = len(new_shape) - len(shape)
    out_shape, out_strides = [], []
    for i, n in enumerate(new_shape):
        if n < -1:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {list(new_shape)}")
        if i < lead:
            if n == -1:
                raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension {i}")
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


# ---- memory overlap (PyTorch's MemOverlap.cpp) ---------------------------------------------


def check_no_internal_overlap(t) -> None:
    """Refuse to write into a tensor in which several elements share memory (an expanded tensor)."""
    if is_non_overlapping_and_dense(t._shape, t._strides):
        return
    if any(st == 0 and n > 1 for n, st in zip(t._shape, t._strides)):
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a single memory "
            "location. Please clone() the tensor before performing the operation."
        )


def check_no_partial_overlap(a, b) -> None:
    """Refuse ``a.copy_(b)`` when ``b`` overlaps ``a``'s memory without being the same view of it.

    Like PyTorch only dense operands are compared; strided ones that interleave (``c[:, 1] = c[:, 2]``)
    are allowed, and the copy then reads a snapshot of the source.
    """
    if a._storage is not b._storage or not a.numel() or not b.numel():
        return
    if not (is_non_overlapping_and_dense(a._shape, a._strides) and is_non_overlapping_and_dense(b._shape, b._strides)):
        return
    a0, a1 = a._offset, a._offset + a.numel()
    b0, b1 = b._offset, b._offset + b.numel()
    if (a0, a1) == (b0, b1) and a._strides == b._strides:
        return  # the same memory, element for element
    if a0 < b1 and b0 < a1:
        raise RuntimeError(
            "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
            "memory location. Please clone() the tensor before performing the operation."
        )


# ---- basic indexing --------------------------------------------------------------------------

_INVALID_INDEX = "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices (got {})"


def _index_item(item):
    """An index entry as int, slice, None or Ellipsis; "advanced" for a tensor/list/bool index."""
    if item is None or item is Ellipsis or isinstance(item, slice):
        return item
    if isinstance(item, bool):
        return "advanced"
    if isinstance(item, Integral):
        return int(item)
    if is_tensor(item):
        # a 0-dim integer tensor indexes like the int it holds, as in PyTorch
        return int(item.item()) if item.dim() == 0 and item.dtype.kind in "iu" else "advanced"
    if isinstance(item, (list, tuple, range)) or (hasattr(item, "__array__") and type(item).__name__ != "bool"):
        return "advanced"
    raise IndexError(_INVALID_INDEX.format(type(item).__name__))


def basic_index(t, index):
    """Resolve ints, slices (with steps), None and ... into a view's (shape, strides, offset).

    Returns None when the index needs advanced indexing (tensors, lists, bools).
    """
    items = [_index_item(i) for i in (index if isinstance(index, tuple) else (index,))]
    if any(isinstance(i, str) for i in items):
        return None
    if sum(i is Ellipsis for i in items) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(1 for i in items if i is not None and i is not Ellipsis)
    if t.dim() == 0 and used:
        if any(isinstance(i, int) for i in items):
            raise IndexError(
                "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to "
                "convert a 0-dim tensor to a number"
            )
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    if used > t.dim():
        raise IndexError(f"too many indices for tensor of dimension {t.dim()}")
    if Ellipsis in items:
        i = items.index(Ellipsis)
        items[i : i + 1] = [slice(None)] * (t.dim() - used)
    shape, strides, offset, d = [], [], t._offset, 0
    for item in items:
        if item is None:
            # PyTorch's unsqueeze stride: spans the next dim, or 1 at the end
            shape.append(1)
            strides.append(t._shape[d] * t._strides[d] if d < t.dim() else 1)
            continue
        size, stride = t._shape[d], t._strides[d]
        d += 1
        if isinstance(item, int):
            if not -size <= item < size:
                raise IndexError(f"index {item} is out of bounds for dimension {d - 1} with size {size}")
            offset += (item % size) * stride
            continue
        if item.step is not None and int(item.step) < 0:
            raise ValueError("step must be greater than zero")
        start, stop, step = item.indices(size)  # raises "slice step cannot be zero"
        shape.append(max(0, -(-(stop - start) // step)))
        strides.append(stride * step)
        offset += start * stride
    shape += t._shape[d:]
    strides += t._strides[d:]
    return tuple(shape), tuple(strides), offset
