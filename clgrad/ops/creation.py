"""Tensor creation: from data, filled, ranges, identity and the ``*_like`` family."""
from __future__ import annotations

import builtins
import math

import numpy as np

from .. import backends
from .. import dtypes as D
from ..device import resolve
from . import pointwise as P
from .views import as_size


def _tensor_cls():
    from ..tensor import Tensor

    return Tensor


def _infer_dtype(data) -> D.dtype:
    """The dtype PyTorch infers for nested Python data: bool, int64 or the default float."""
    arr = np.asarray(data)
    if arr.dtype == object:
        raise TypeError(f"could not infer a dtype for data of type {type(data).__name__}")
    if arr.dtype.kind == "b":
        return D.bool
    if arr.dtype.kind in "iu":
        return D.int64 if not isinstance(data, np.ndarray) else D.from_numpy_dtype(arr.dtype)
    if arr.dtype.kind == "f":
        return D.get_default_dtype() if not isinstance(data, np.ndarray) else D.from_numpy_dtype(arr.dtype)
    raise TypeError(f"can't convert data of numpy dtype {arr.dtype} to a tensor")


def _from_host(arr: np.ndarray, dt: D.dtype, dev):
    """A new tensor on ``dev`` holding a copy of ``arr`` converted to ``dt``."""
    T = _tensor_cls()
    host = np.ascontiguousarray(backends.cpu.cast(arr, dt) if arr.dtype != dt.np else arr)
    out = T._empty(host.shape, dt, dev)
    backends.get(dev).write(out._storage, host)
    return out


def _unwrap(data):
    """Nested lists may hold 0-dim or 1-element tensors; replace them by numbers."""
    T = _tensor_cls()
    if isinstance(data, T):
        return np.asarray(data)
    if isinstance(data, (list, tuple)):
        return [_unwrap(x) for x in data]
    return data


def tensor(data, dtype=None, device=None, requires_grad: bool = False):
    """A new tensor copying ``data`` (nested lists, numbers, numpy arrays or tensors):
    ``clgrad.tensor([[1., 2.]], device="opencl")``."""
    T = _tensor_cls()
    dev = resolve(device)
    if isinstance(data, T):
        out = data.to(dev, D.as_dtype(dtype) if dtype is not None else data.dtype, copy=True)
    else:
        data = _unwrap(data)
        dt = D.as_dtype(dtype) if dtype is not None else _infer_dtype(data)
        arr = np.asarray(data)
        if arr.dtype == object:
            raise TypeError(f"could not convert data of type {type(data).__name__} to a tensor")
        out = _from_host(arr, dt, dev)
    if requires_grad:
        out.requires_grad_(True)
    return out


def as_tensor(data, dtype=None, device=None):
    """Like ``tensor``, but shares memory when ``data`` is already a tensor or a cpu-compatible array."""
    T = _tensor_cls()
    if isinstance(data, T):
        return data.to(device=device if device is not None else data.device, dtype=dtype)
    if isinstance(data, np.ndarray) and (device is None or resolve(device).type == "cpu") and dtype is None:
        try:
            return from_numpy(data)
        except (TypeError, ValueError):
            pass
    return tensor(data, dtype=dtype, device=device)


def from_numpy(arr: np.ndarray):
    """A cpu tensor sharing memory with ``arr``: writes through either are seen by the other."""
    T = _tensor_cls()
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(arr).__name__})")
    dt = D.from_numpy_dtype(arr.dtype)
    item = arr.itemsize
    if any(s < 0 for s in arr.strides):
        raise ValueError(
            "At least one stride in the given numpy array is negative, and tensors with negative strides are not "
            "currently supported. (You can probably work around this by making a copy of your array  with array.copy().)"
        )
    if any(s % item for s in arr.strides):
        raise ValueError("given numpy array strides not a multiple of the element byte size. Copy the numpy array to reallocate the memory.")
    strides = tuple(s // item for s in arr.strides)
    if arr.size == 0:
        flat = np.empty(0, arr.dtype)
    else:
        extent = 1 + sum((n - 1) * s for n, s in zip(arr.shape, strides))
        # a 1-D window over the array's memory, starting at its first (lowest-address) element
        flat = np.lib.stride_tricks.as_strided(arr, shape=(extent,), strides=(item,))
        flat = flat.view(arr.dtype)
        flat.flags.writeable = arr.flags.writeable
    storage = backends.get(resolve("cpu")).wrap(flat, dt)
    return T._make(storage, dt, arr.shape, strides if arr.size else tuple(1 for _ in arr.shape))


def _rebuild(host: np.ndarray, dev: str):
    return tensor(host, device=dev if dev == "cpu" else None)


def _creation_args(size, dtype, device, default=None):
    shape = as_size(size)
    if any(n < 0 for n in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(shape)}: {list(shape)}")
    dt = D.as_dtype(dtype) if dtype is not None else (default or D.get_default_dtype())
    return shape, dt, resolve(device)


def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


def empty(*size, dtype=None, device=None, requires_grad=False, **_):
    shape, dt, dev = _creation_args(size, dtype, device)
    return _finish(_tensor_cls()._empty(shape, dt, dev), requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad=False, **_):
    if dtype is None:
        dtype = D.scalar_dtype(fill_value)
    shape, dt, dev = _creation_args((size,), dtype, device)
    return _finish(P.fill(_tensor_cls()._empty(shape, dt, dev), fill_value), requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False, **_):
    shape, dt, dev = _creation_args(size, dtype, device)
    return _finish(P.fill(_tensor_cls()._empty(shape, dt, dev), 0), requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False, **_):
    shape, dt, dev = _creation_args(size, dtype, device)
    return _finish(P.fill(_tensor_cls()._empty(shape, dt, dev), 1), requires_grad)


def _like(fn):
    def like(t, *args, dtype=None, device=None, requires_grad=False, **kw):
        return fn(t.shape, *args, dtype=dtype or t.dtype, device=device if device is not None else t.device,
                  requires_grad=requires_grad)

    like.__name__ = fn.__name__ + "_like"
    like.__doc__ = f"``{fn.__name__}`` with the shape, dtype and device of ``t`` (each overridable)."
    return like


empty_like, zeros_like, ones_like, full_like = _like(empty), _like(zeros), _like(ones), _like(full)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """Values from ``start`` to ``end`` (exclusive) by ``step``: ``arange(5)``, ``arange(0, 1, 0.25)``."""
    if end is None:
        start, end = 0, start
    vals = [v.item() if hasattr(v, "item") and hasattr(v, "_storage") else v for v in (start, end, step)]
    start, end, step = vals
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    if dtype is None:
        dtype = D.get_default_dtype() if any(isinstance(v, float) for v in vals) else D.int64
    dt = D.as_dtype(dtype)
    n = builtins.max(0, math.ceil((end - start) / step))
    # computed as start + i * step like PyTorch, so float ranges don't accumulate error
    host = start + np.arange(n, dtype=np.float64 if dt.kind == "f" else np.int64) * step
    return _finish(_from_host(host, dt, resolve(device)), requires_grad)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dt = D.as_dtype(dtype) if dtype is not None else D.get_default_dtype()
    host = np.linspace(start, end, steps, dtype=np.float64)
    return _finish(_from_host(host, dt, resolve(device)), requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    m = n if m is None else m
    if n < 0 or m < 0:
        raise RuntimeError(f"n and m must be non-negative, got n={n}, m={m}")
    dt = D.as_dtype(dtype) if dtype is not None else D.get_default_dtype()
    out = zeros(n, m, dtype=dt, device=device)
    if n and m:
        # the diagonal is a strided view with step m + 1
        out._view((min(n, m),), (m + 1,)).fill_(1)
    return _finish(out, requires_grad)
