"""Tensor creation: from data, filled, ranges, identity and the ``*_like`` family."""
from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from numbers import Number

import numpy as np

from .. import backends
from .. import dtypes as D
from ..device import resolve
from ..tensor import Tensor, is_tensor
from . import pointwise as P
from .guard import tensor_first
from .views import as_size

# ---- from data ---------------------------------------------------------------------------------


def _item_dtype(x) -> D.dtype:
    """The dtype one (non-sequence) element of Python data contributes to inference."""
    if is_tensor(x):
        return x.dtype
    if isinstance(x, (np.ndarray, np.generic)):  # before float: np.float64 is a float subclass
        return D.from_numpy_dtype(x.dtype)
    if isinstance(x, bool):
        return D.bool
    if isinstance(x, int):
        return D.int64
    if isinstance(x, float):
        return D.get_default_dtype()
    if isinstance(x, str):
        raise TypeError(f"new(): invalid data type '{type(x).__name__}'")
    if isinstance(x, complex):
        return D.complex_of(D.get_default_dtype())
    raise RuntimeError(f"Could not infer dtype of {type(x).__name__}")


def _infer_dtype(data) -> D.dtype:
    """PyTorch's inference for nested data: promote over the elements, where a Python bool is bool, an
    int int64, a float the default dtype, and a numpy scalar, array or tensor keeps its own dtype."""
    if not isinstance(data, (list, tuple)):
        return _item_dtype(data)
    result, todo = None, [data]
    while todo:
        seq = todo.pop()
        kinds = set(map(type, seq))
        if kinds <= {int, float, bool}:  # the common case, without a Python loop per element
            for k in kinds:
                d = {int: D.int64, float: D.get_default_dtype(), bool: D.bool}[k]
                result = d if result is None else D.promote_types(result, d)
            continue
        for x in seq:
            if isinstance(x, (list, tuple)):
                todo.append(x)
            else:
                d = _item_dtype(x)
                result = d if result is None else D.promote_types(result, d)
    return D.get_default_dtype() if result is None else result


def _unwrap(data):
    """Nested data as numpy-convertible values: tensors inside lists become arrays."""
    if is_tensor(data):
        return np.asarray(data)
    if isinstance(data, (list, tuple)):
        return [_unwrap(x) for x in data]
    return data


def _ragged_error(data, dim: int = 0):
    """PyTorch's error for nested sequences of unequal lengths."""
    if not isinstance(data, (list, tuple)) or not data:
        return None
    lens = [len(x) if isinstance(x, (list, tuple)) else None for x in data]
    first = lens[0]
    for n in lens[1:]:
        if n != first:
            if first is None or n is None:
                return TypeError("not a sequence")
            return ValueError(f"expected sequence of length {first} at dim {dim + 1} (got {n})")
    return next((e for e in (_ragged_error(x, dim + 1) for x in data) if e is not None), None)


def _host_array(data) -> np.ndarray:
    try:
        arr = np.asarray(_unwrap(data))
    except ValueError:
        arr = None
    if arr is None or arr.dtype == object:
        err = _ragged_error(data)
        if err is not None:
            raise err
        if arr is not None and any(isinstance(x, int) for x in np.ravel(arr)):
            raise ValueError("Overflow when unpacking long long")
        raise TypeError(f"could not convert data of type {type(data).__name__} to a tensor")
    return arr


def _check_overflow(arr: np.ndarray, dt: D.dtype) -> None:
    """PyTorch refuses Python numbers that don't fit an integer dtype (numpy arrays wrap instead)."""
    if dt.kind not in "iu" or arr.size == 0:
        return
    info = np.iinfo(dt.np)
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr < info.min) | (arr > info.max)
    elif dt.kind == "u":  # ints may wrap from below, as -1 -> 255
        bad = (arr > info.max) | (arr < -int(info.max))
    else:
        bad = (arr > info.max) | (arr < info.min)
    if bad.any():
        raise RuntimeError(f"value cannot be converted to type {dt.name} without overflow")


# C++ type names PyTorch uses when a fill value does not fit (full, fill_, masked_fill, index_fill)


def _fill_name(dt: D.dtype) -> str:
    """The type name PyTorch's fill overflow message uses: the C name ('int8_t'), except plain 'int' for int32."""
    return "int" if dt is D.int32 else dt.c_int_name


def check_fill_value(value, dt: D.dtype) -> None:
    """A fill value must fit an integer dtype: nan, inf and out-of-range numbers raise PyTorch's RuntimeError."""
    if dt.kind not in "iu" or isinstance(value, (bool, np.bool_)) or is_tensor(value):
        return
    try:
        _check_overflow(np.array(value), dt)
    except RuntimeError:
        raise RuntimeError(f"value cannot be converted to type {_fill_name(dt)} without overflow") from None


def _from_host(arr: np.ndarray, dt: D.dtype, dev):
    """A new tensor on ``dev`` holding a copy of ``arr`` converted to ``dt``."""
    T = Tensor
    host = backends.cpu.cast(arr, dt) if arr.dtype != dt.np else arr
    host = np.asarray(host, order="C")  # keeps a 0-dim array 0-dim, unlike ascontiguousarray
    out = T._empty(host.shape, dt, dev)
    backends.get(dev).write(out._storage, host)
    return out


def tensor(data, dtype=None, device=None, requires_grad: bool = False, pin_memory: bool = False):
    """A new tensor copying ``data`` (nested lists, numbers, numpy arrays or tensors), with PyTorch's
    dtype inference: ``clgrad.tensor([[1., 2.]], device="opencl")``."""
    T = Tensor
    dev = resolve(device)
    if isinstance(data, T):
        dev = data.device if device is None else dev  # a tensor's data stays where it is, as in torch
        out = data.to(dev, D.as_dtype(dtype) if dtype is not None else data.dtype, copy=True)
        return _finish(out, requires_grad)
    if data is None:
        raise RuntimeError("Could not infer dtype of NoneType")
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes, list, tuple)):
        data = list(data)  # range(3) and other sequences
    inferred = _infer_dtype(data)
    dt = D.as_dtype(dtype) if dtype is not None else inferred
    arr = _host_array(data)
    if not isinstance(data, (np.ndarray, np.generic)):
        if inferred.kind == "i" and arr.dtype.kind != "i" and dt.kind != "f":
            # numpy fell back to uint64 or float64: a Python int beyond int64
            raise ValueError("Overflow when unpacking long long")
        _check_overflow(arr, dt)
    return _finish(_from_host(arr, dt, dev), requires_grad)


def as_tensor(data, dtype=None, device=None):
    """Like ``tensor``, but without a copy when ``data`` already is a tensor of that dtype and device, or
    a numpy array of that dtype and the device is cpu (then the two share memory)."""
    T = Tensor
    if isinstance(data, T):
        return data.to(device=device if device is not None else data.device, dtype=dtype)
    if isinstance(data, np.ndarray) and resolve(device).type == "cpu":
        try:
            same = dtype is None or D.as_dtype(dtype) is D.from_numpy_dtype(data.dtype)
            if same:
                return from_numpy(data)
        except (TypeError, ValueError):  # an unsupported dtype or negative strides: copy instead
            pass
    return tensor(data, dtype=dtype, device=device)


def from_numpy(arr: np.ndarray):
    """A cpu tensor sharing memory with ``arr``: writes through either are seen by the other.

    Any non-negative strides work (a slice or transpose of an array); negative strides raise ValueError.
    """
    T = Tensor
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(arr).__name__})")
    if not arr.dtype.isnative:
        raise ValueError(
            "given numpy array has byte order different from the native byte order. Conversion between byte "
            "orders is currently not supported."
        )
    dt = D.from_numpy_dtype(arr.dtype)
    item = arr.itemsize
    if any(s < 0 for s in arr.strides):
        raise ValueError(
            "At least one stride in the given numpy array is negative, and tensors with negative strides are not "
            "currently supported. (You can probably work around this by making a copy of your array  with array.copy().) "
        )
    if any(s % item for s in arr.strides):
        raise ValueError(
            "given numpy array strides not a multiple of the element byte size. Copy the numpy array to reallocate "
            "the memory."
        )
    strides = tuple(s // item for s in arr.strides)
    if arr.size == 0:
        flat = np.empty(0, arr.dtype)
    else:
        extent = 1 + sum((n - 1) * s for n, s in zip(arr.shape, strides))
        # a 1-D window over the array's memory, starting at its first (lowest-address) element
        flat = np.lib.stride_tricks.as_strided(arr, shape=(extent,), strides=(item,), writeable=arr.flags.writeable)
    if dt.kind == "c":  # a complex storage holds (re, im) pairs of the real dtype
        storage = backends.get(resolve("cpu")).wrap(flat.view(dt.real.np), dt.real)
    else:
        storage = backends.get(resolve("cpu")).wrap(flat, dt)
    return T._make(storage, dt, arr.shape, strides)


def _rebuild(host: np.ndarray, dev: str, requires_grad: bool = False):
    """Unpickling: the values back on the device they were pickled from when this machine has it, else cpu."""
    try:
        target = resolve(dev)
    except RuntimeError:
        target = resolve("cpu")
    return tensor(host, device=target, requires_grad=requires_grad)


# ---- filled ------------------------------------------------------------------------------------


def _size_arg(fn: str, size: tuple, kwargs: dict) -> tuple:
    """``f(2, 3)``, ``f((2, 3))`` or ``f(size=(2, 3))``; PyTorch's TypeError when there is none."""
    extra = set(kwargs) - {"size", "layout", "pin_memory", "memory_format"}
    if extra:
        raise TypeError(f"{fn}() got an unexpected keyword argument '{sorted(extra)[0]}'")
    if "size" in kwargs:
        if size:
            raise TypeError(f"{fn}() got multiple values for argument 'size'")
        size = (kwargs["size"],)
    if not size:
        raise TypeError(f'{fn}() missing 1 required positional arguments: "size"')
    return as_size(size, fn)


def _creation_args(size, dtype, device, default=None):
    shape = as_size(size)
    if any(n < 0 for n in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(shape)}: {list(shape)}")
    dt = D.as_dtype(dtype) if dtype is not None else (default or D.get_default_dtype())
    return shape, dt, resolve(device)


def _filled(t, value):
    """A new tensor set to ``value``: the fill is its creation, not an in-place write, so its version stays 0
    (as PyTorch's ``zeros``/``ones``/``full``)."""
    P.fill(t, value)
    t._storage.version = 0
    return t


def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


def empty(*size, dtype=None, device=None, requires_grad=False, **kwargs):
    """An uninitialised tensor: ``clgrad.empty(2, 3, device="opencl")``."""
    shape, dt, dev = _creation_args(_size_arg("empty", size, kwargs), dtype, device)
    return _finish(Tensor._empty(shape, dt, dev), requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False, **kwargs):
    """A tensor of zeros: ``clgrad.zeros(5, 3, dtype=clgrad.long)``."""
    shape = _size_arg("zeros", size, kwargs)
    if any(n < 0 for n in shape):
        raise RuntimeError("zeros: Dimension size must be non-negative.")
    shape, dt, dev = _creation_args(shape, dtype, device)
    return _finish(_filled(Tensor._empty(shape, dt, dev), 0), requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False, **kwargs):
    """A tensor of ones: ``clgrad.ones(2, 3)``."""
    shape, dt, dev = _creation_args(_size_arg("ones", size, kwargs), dtype, device)
    return _finish(_filled(Tensor._empty(shape, dt, dev), 1), requires_grad)


def _fill_value(value, fn: str = "full"):
    """A Python number from ``fill_value`` (a number or a 0-dim tensor), else PyTorch's TypeError."""
    if is_tensor(value) and value.dim() == 0:
        value = value.item()
    if not isinstance(value, (Number, np.bool_)):
        raise TypeError(f"{fn}(): argument 'fill_value' (position 2) must be Number, not {type(value).__name__}")
    return value


def full(size, fill_value, dtype=None, device=None, requires_grad=False, **kwargs):
    """A tensor filled with ``fill_value``; its dtype follows the value (bool, int64 or the default float)."""
    fill_value = _fill_value(fill_value)
    if dtype is None:
        dtype = D.scalar_dtype(fill_value)
    shape, dt, dev = _creation_args((size,), dtype, device)
    check_fill_value(fill_value, dt)
    return _finish(_filled(Tensor._empty(shape, dt, dev), fill_value), requires_grad)


def _like_fill(name: str, args: tuple, kwargs: dict):
    """``full_like``'s ``fill_value``, given by position or by keyword."""
    given = args + ((kwargs["fill_value"],) if "fill_value" in kwargs else ())
    if len(given) != 1:
        raise TypeError(f'{name}() missing 1 required positional arguments: "fill_value"' if not given
                        else f"{name}() got multiple values for argument 'fill_value'")
    return given[0]


def _like(name, value):
    def like(input, *args, dtype=None, device=None, requires_grad=False, memory_format=None, **kwargs):  # noqa: A002
        """Shape, dtype, device and (dense) memory layout of ``input``, each but the shape overridable."""
        fill_value = _fill_value(_like_fill(name, args, kwargs), name) if value == "arg" else value
        dt = D.as_dtype(dtype) if dtype is not None else input.dtype
        out = input._empty_like(dt, resolve(device) if device is not None else input.device, memory_format)
        if fill_value is not None:
            check_fill_value(fill_value, dt)
            P.fill(out, fill_value)
        return _finish(out, requires_grad)

    like.__name__ = like.__qualname__ = name
    like.__doc__ = f"``{name}(t)``: like ``{name[:-5]}`` with the shape, dtype, device and layout of ``t``."
    return like


empty_like = _like("empty_like", None)
zeros_like = _like("zeros_like", 0)
ones_like = _like("ones_like", 1)
full_like = _like("full_like", "arg")
tensor_first(globals(), ["empty_like", "zeros_like", "ones_like", "full_like"])


# ---- ranges ------------------------------------------------------------------------------------


def _number(v):
    return v.item() if is_tensor(v) or isinstance(v, np.generic) else v


def _arange_values(start, end, step, dt: D.dtype) -> np.ndarray:
    """PyTorch's arange: bounds converted to the accumulate type first; int64 counts in integers,
    every other dtype takes ``ceil((end - start) / step)`` elements computed in double."""
    if dt.kind in "iu":
        xstart, xend, xstep = int(start), int(end), int(step)
    else:
        xstart, xend, xstep = float(start), float(end), float(step)
    if xstep == 0:
        # PyTorch raises ValueError when a nonzero float step truncates to 0 for an integer dtype
        raise (ValueError if step else RuntimeError)("step must be nonzero")
    if (xstep > 0 and xend < xstart) or (xstep < 0 and xend > xstart):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dt is D.int64:
        sgn = 1 if xstep > 0 else -1
        n = (xend - xstart + xstep - sgn) // xstep
    else:
        n = math.ceil((float(end) - float(start)) / float(step))
    if dt.kind in "iu":
        return xstart + np.arange(n, dtype=np.int64) * xstep
    acc = np.float32 if dt in D.HALF_FLOATS else np.float64
    return acc(xstart) + np.arange(n, dtype=acc) * acc(xstep)


def arange(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False, **_):
    """Values from ``start`` to ``end`` (exclusive) by ``step``: ``arange(5)``, ``arange(0, 1, 0.25)``.

    Integer arguments give int64, any float argument the default dtype, as in PyTorch.
    """
    if end is None:
        start, end = 0, start
    start, end, step = (_number(v) for v in (start, end, step))
    for v in (start, end, step):
        if not isinstance(v, Number) or isinstance(v, complex):
            raise TypeError(f"arange(): argument 'end' must be Number, not {type(v).__name__}")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    if dtype is None:
        dtype = D.get_default_dtype() if any(isinstance(v, float) for v in (start, end, step)) else D.int64
    dt = D.as_dtype(dtype)
    if dt is D.bool:
        raise NotImplementedError("\"arange_cpu\" not implemented for 'Bool'")
    return _finish(_from_host(_arange_values(start, end, step, dt), dt, resolve(device)), requires_grad)


def _linspace_values(start, end, steps: int, dt: D.dtype) -> np.ndarray:
    """PyTorch's symmetric linspace: the first half counts up from ``start``, the second half down from
    ``end``; floats compute in their own dtype, ints convert the bounds first and step in double."""
    if dt.kind in "iub":
        start, end = (backends.cpu.cast(np.array(v), dt)[()].item() for v in (start, end))
        ct = np.float64
    else:
        ct = dt.np.type
    start, end = ct(start), ct(end)
    i = np.arange(steps)
    if steps == 1:
        return np.array([start], dtype=ct)
    step = (end - start) / ct(steps - 1)
    with np.errstate(over="ignore", invalid="ignore"):
        low = start + i.astype(ct) * step
        high = end - (steps - 1 - i).astype(ct) * step
    return np.where(i < steps // 2, low, high).astype(ct)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False, **_):
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive: ``linspace(0, 1, 5)``."""
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) and not is_tensor(steps):
        raise TypeError(f"linspace(): argument 'steps' (position 3) must be int, not {type(steps).__name__}")
    steps = operator.index(steps)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    start, end = _number(start), _number(end)
    dt = D.as_dtype(dtype) if dtype is not None else D.get_default_dtype()
    return _finish(_from_host(_linspace_values(start, end, steps, dt), dt, resolve(device)), requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False, **_):
    """The identity matrix (``n`` x ``m``, ones on the diagonal): ``eye(3)``."""
    for name, pos, v in (("n", 1, n), ("m", 2, m)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer))):
            raise TypeError(f"eye(): argument '{name}' (position {pos}) must be int, not {type(v).__name__}")
    m = n if m is None else m
    for name, v in (("n", n), ("m", m)):
        if v < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {v}")
    dt = D.as_dtype(dtype) if dtype is not None else D.get_default_dtype()
    out = zeros(n, m, dtype=dt, device=device)
    if n and m:
        # the diagonal is a strided view with step m + 1
        out._view((min(n, m),), (m + 1,)).fill_(1)
    return _finish(out, requires_grad)


# ---- Tensor methods (attached by methods.install) ----------------------------------------------


def _new_kw(self, dtype, device, requires_grad) -> dict:
    """``new_*``: the same dtype and device unless told otherwise."""
    return {"dtype": self.dtype if dtype is None else dtype, "device": self.device if device is None else device,
            "requires_grad": requires_grad}


def new_empty(self, *size, dtype=None, device=None, requires_grad=False, **kwargs) -> Tensor:
    return empty(*size, **kwargs, **_new_kw(self, dtype, device, requires_grad))


def new_zeros(self, *size, dtype=None, device=None, requires_grad=False, **kwargs) -> Tensor:
    return zeros(*size, **kwargs, **_new_kw(self, dtype, device, requires_grad))


def new_ones(self, *size, dtype=None, device=None, requires_grad=False, **kwargs) -> Tensor:
    return ones(*size, **kwargs, **_new_kw(self, dtype, device, requires_grad))


def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    return full(size, fill_value, **_new_kw(self, dtype, device, requires_grad))


def new_tensor(self, data, dtype=None, device=None, requires_grad=False) -> Tensor:
    return tensor(data, **_new_kw(self, dtype, device, requires_grad))


def reduce_ex(self, protocol):
    """Pickling: the values, the device name and requires_grad, rebuilt by ``_rebuild``."""
    host = self._host().copy() if self.dtype.kind == "c" else backends.get(self.device).read(self)
    return (_rebuild, (host, str(self.device), self.requires_grad))
