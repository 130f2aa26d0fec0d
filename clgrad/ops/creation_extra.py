"""More creation ops: ``empty_strided``, ``empty_permuted``, ``logspace``, ``scalar_tensor`` and the function
forms ``fill``, ``fill_`` and ``zero_``."""
from __future__ import annotations

import math
import operator

import numpy as np

from .. import dtypes as D
from ..autograd.function import Function
from ..autograd.graph import needs_graph
from ..device import resolve
from ..tensor import Tensor, is_tensor
from . import copy as C
from .creation import _creation_args, _finish, _from_host, _linspace_values, _number
from .guard import tensor_first
from .views import wrap_dim

__all__ = ["empty_strided", "empty_permuted", "logspace", "scalar_tensor", "fill", "fill_", "zero_"]


def _on_storage(shape, strides, dt: D.dtype, dev):
    """A new tensor of ``shape`` and ``strides`` over a storage just big enough for them (not a view)."""
    extent = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if all(shape) else 0
    flat = Tensor._empty((extent,), dt, dev)
    return Tensor._make(flat._storage, dt, shape, strides, 0)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """An uninitialised tensor with the given strides: ``clgrad.empty_strided((2, 3), (1, 2))``."""
    shape, dt, dev = _creation_args(size, dtype, device)
    strides = tuple(operator.index(s) for s in stride)
    if len(strides) != len(shape):
        raise RuntimeError(f"dimensionality of sizes ({len(shape)}) must match dimensionality of strides "
                           f"({len(strides)})")
    if any(s < 0 for s in strides):
        raise RuntimeError("as_strided: Negative strides are not supported at the moment, got strides: "
                           f"{list(strides)}")
    return _finish(_on_storage(shape, strides, dt, dev), requires_grad)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,
                   pin_memory=False):
    """An uninitialised tensor of logical shape ``size`` laid out in memory in the dim order ``physical_layout``
    (outermost first): ``clgrad.empty_permuted((2, 3, 4), (0, 2, 1))`` has strides (12, 1, 3)."""
    shape, dt, dev = _creation_args(size, dtype, device)
    order = tuple(physical_layout)
    if len(order) != len(shape):
        raise RuntimeError(
            "Number of dimensions in size does not match the length of the physical_layout; i.e. "
            f"len(size) = {len(shape)} is not equal to len(physical_layout) = {len(order)}"
        )
    order = tuple(wrap_dim(d, len(shape)) for d in order)
    if len(set(order)) != len(order):
        raise RuntimeError("Duplicate dim not allowed")
    strides, acc = [0] * len(shape), 1
    for d in reversed(order):
        strides[d] = acc
        acc *= max(shape[d], 1)
    return _finish(_on_storage(shape, tuple(strides), dt, dev), requires_grad)


def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False):
    """``steps`` values ``base ** e`` for ``e`` evenly spaced from ``start`` to ``end``: ``logspace(0, 3, 4)``
    is [1, 10, 100, 1000]. The exponents are PyTorch's (linspace's, in the dtype), the power in double."""
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) and not is_tensor(steps):
        raise TypeError(f"logspace(): argument 'steps' (position 3) must be int, not {type(steps).__name__}")
    steps = operator.index(steps)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dt = D.as_dtype(dtype) if dtype is not None else (out.dtype if out is not None else D.get_default_dtype())
    exps = _linspace_values(_number(start), _number(end), steps, dt)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        values = np.power(np.float64(_number(base)), exps.astype(np.float64))
        if dt.kind in "iu":
            values = np.trunc(values).astype(np.int64)
        elif dt is D.bool:
            values = values != 0
    result = _finish(_from_host(np.asarray(values), dt, resolve(device)), requires_grad)
    if out is None:
        return result
    if out.shape != result.shape:
        out.resize_(result.shape)
    return out.copy_(result)


def scalar_tensor(s, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """A 0-dim tensor holding ``s``, of the default float dtype unless ``dtype`` says otherwise."""
    s = _number(s)
    _, dt, dev = _creation_args((), dtype, device)
    arr = np.asarray(s)
    if dt.kind in "iu" and isinstance(s, float):
        if not math.isfinite(s):
            raise RuntimeError(f"value cannot be converted to type {dt.c_int_name} without overflow")
        arr = np.trunc(arr)
    return _finish(_from_host(arr.astype(dt.np), dt, dev), requires_grad)


class Fill(Function):
    """``clgrad.fill``: the output does not depend on the input's values, so the gradient is zero."""

    node_name = "FillBackward0"

    @staticmethod
    def forward(ctx, x, value):
        return C.fill_(x._empty_like(), value)

    @staticmethod
    def backward(ctx, grad):
        return grad.new_zeros(grad.shape), None


def fill(input, value):  # noqa: A002
    """A new tensor like ``input`` filled with ``value`` (its gradient to ``input`` is zero): ``clgrad.fill(x, 2)``."""
    if needs_graph(input):
        return Fill.apply(input, value)
    return C.fill_(input._empty_like(), value)


def fill_(input, value):  # noqa: A002
    """``input.fill_(value)`` as a function."""
    return input.fill_(value)


def zero_(input):  # noqa: A002
    """``input.zero_()`` as a function."""
    return input.zero_()


tensor_first(globals(), __all__)
