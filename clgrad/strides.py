"""Stride arithmetic on plain tuples, below the Tensor: ``tensor.py`` lays out new tensors with it and
``ops/views.py`` builds the view rules on it. Nothing here touches a tensor."""
from __future__ import annotations

import math
from numbers import Integral


def contiguous_strides(shape) -> tuple:
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


def wrap_dim(dim, ndim: int, scalar_ok: bool = True) -> int:
    """Normalise a possibly negative dim, with PyTorch's IndexError for an out-of-range one.

    A 0-dim tensor accepts dims 0 and -1 as if it had one dim (``squeeze``, ``sum``), except where
    PyTorch says it has none (``size(0)``, ``stride(0)``): pass ``scalar_ok=False`` there.
    """
    if type(dim) is not int and (not isinstance(dim, Integral) or isinstance(dim, bool)):  # the ABC check is slow
        raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    if ndim == 0 and not scalar_ok:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return int(dim) % n


def is_non_overlapping_and_dense(shape, strides) -> bool:
    """Whether the elements fill a block of memory exactly once, in some dim order."""
    if len(shape) == 1:
        return shape[0] < 2 or strides[0] == 1
    expect = 1
    for st, n in sorted((st, n) for n, st in zip(shape, strides) if n != 1):
        if st != expect:
            return False
        expect *= n
    return True


def dense_strides_like(shape, strides) -> tuple:
    """The strides a ``*_like``, ``clone`` or ``to`` result gets (``torch.preserve_format``): the
    input's own when it is dense and non-overlapping (a transpose stays a transpose), else contiguous."""
    if math.prod(shape) and is_non_overlapping_and_dense(shape, strides):
        return tuple(strides)
    return contiguous_strides(shape)
