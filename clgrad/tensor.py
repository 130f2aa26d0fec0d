"""The Tensor: storage + dtype + shape + strides + offset. Operators delegate to ``clgrad.ops``."""
from __future__ import annotations

import math

import numpy as np

from . import backends
from . import dtypes as D
from .device import device, resolve
from .ops import pointwise as P
from .ops import views as V
from .storage import Storage


class Tensor:
    """An n-dimensional array on a device. Build one with ``clgrad.tensor``, ``zeros``, ``randn``…"""

    __slots__ = ("_storage", "dtype", "_shape", "_strides", "_offset", "__dict__", "__weakref__")

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

    def __init__(self, *args, dtype=None, device=None):
        # the legacy constructor: Tensor(2, 3) is an uninitialised float tensor, Tensor([1, 2]) copies data
        if args and isinstance(args[0], Storage):
            return
        from .ops import creation

        dt = D.as_dtype(dtype) if dtype is not None else D.get_default_dtype()
        if len(args) == 1 and not isinstance(args[0], (int, np.integer)):
            src = creation.tensor(args[0], dtype=dt, device=device)
        else:
            src = creation.empty(*args, dtype=dt, device=device)
        self._assign(src._storage, src.dtype, src._shape, src._strides, src._offset)

    def _assign(self, storage, dt, shape, strides, offset):
        self._storage, self.dtype = storage, dt
        self._shape, self._strides, self._offset = tuple(shape), tuple(strides), offset

    @classmethod
    def _make(cls, storage: Storage, dt: D.dtype, shape, strides, offset: int = 0) -> Tensor:
        t = object.__new__(cls)
        t._assign(storage, dt, shape, strides, offset)
        return t

    @classmethod
    def _empty(cls, shape, dt: D.dtype, dev: device) -> Tensor:
        shape = tuple(shape)
        storage = backends.get(dev).empty(dev, dt, math.prod(shape))
        return cls._make(storage, dt, shape, V.contiguous_strides(shape))

    def _view(self, shape, strides, offset=None) -> Tensor:
        return Tensor._make(self._storage, self.dtype, shape, strides, self._offset if offset is None else offset)

    def _same_view(self, other) -> bool:
        return (self._storage is other._storage and self._offset == other._offset
                and self._shape == other._shape and self._strides == other._strides)

    # ---- metadata -------------------------------------------------------------------------
    @property
    def device(self) -> device:
        return self._storage.device

    @property
    def shape(self) -> Size:
        return Size(self._shape)

    def size(self, dim=None):
        return Size(self._shape) if dim is None else self._shape[V.wrap_dim(dim, self.dim())]

    def stride(self, dim=None):
        return self._strides if dim is None else self._strides[V.wrap_dim(dim, self.dim())]

    def storage_offset(self) -> int:
        return self._offset

    def dim(self) -> int:
        return len(self._shape)

    ndim = property(dim)

    def numel(self) -> int:
        return math.prod(self._shape)

    nelement = numel

    def element_size(self) -> int:
        return self.dtype.itemsize

    @property
    def is_cuda(self) -> bool:
        return False

    @property
    def is_opencl(self) -> bool:
        return self.device.type == "opencl"

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def is_contiguous(self) -> bool:
        expect = 1
        for n, s in zip(reversed(self._shape), reversed(self._strides)):
            if n != 1 and s != expect:
                return False
            expect *= n
        return True

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    # ---- data movement --------------------------------------------------------------------
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The data as numpy. On cpu it shares memory with the tensor, as in PyTorch."""
        if self.device.type != "cpu":
            if force:
                return self.cpu().numpy()
            raise TypeError(
                f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first."
            )
        from .backends.cpu import view_of

        return view_of(self)

    def __array__(self, dtype=None, copy=None):
        arr = backends.get(self.device).read(self) if self.device.type != "cpu" else self.numpy()
        return arr if dtype is None else arr.astype(dtype)

    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        return backends.get(self.device).read(self).reshape(-1)[0].item()

    def tolist(self):
        return backends.get(self.device).read(self).tolist()

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise RuntimeError(f"Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __int__(self):
        return int(self.item())

    def __float__(self):
        return float(self.item())

    def __index__(self):
        if self.dtype.kind not in "iub" or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def to(self, *args, **kwargs) -> Tensor:
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(other)``; a no-op returns self."""
        dev, dt, copy = self.device, self.dtype, kwargs.pop("copy", False)
        kwargs.pop("non_blocking", None)
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, Tensor):
                dev, dt = a.device, a.dtype
            elif isinstance(a, D.dtype) or a in (float, int, bool):
                dt = D.as_dtype(a)
            elif a is not None:
                dev = resolve(a)
        if dev == self.device and dt is self.dtype and not copy:
            return self
        out = Tensor._empty(self._shape, dt, dev)
        return out.copy_(self)

    def cpu(self) -> Tensor:
        return self.to("cpu")

    def opencl(self, index=None) -> Tensor:
        return self.to(device("opencl", index))

    def type(self, dtype=None):
        if dtype is None:
            return f"clgrad.{_TYPE_NAMES[self.dtype.name]}"
        return self.to(D.as_dtype(dtype))

    def float(self) -> Tensor:
        return self.to(D.float32)

    def double(self) -> Tensor:
        return self.to(D.float64)

    def half(self) -> Tensor:
        return self.to(D.float16)

    def long(self) -> Tensor:
        return self.to(D.int64)

    def int(self) -> Tensor:
        return self.to(D.int32)

    def short(self) -> Tensor:
        return self.to(D.int16)

    def char(self) -> Tensor:
        return self.to(D.int8)

    def byte(self) -> Tensor:
        return self.to(D.uint8)

    def bool(self) -> Tensor:
        return self.to(D.bool)

    def copy_(self, src, non_blocking: bool = False) -> Tensor:
        """Copy ``src`` (any device, any dtype, broadcastable) into this tensor in place."""
        if not isinstance(src, Tensor):
            from .ops.creation import tensor

            src = tensor(src, device=self.device)
        V.broadcast_shapes(self._shape, src._shape)
        if src.dim() > self.dim() or V.broadcast_shapes(self._shape, src._shape) != self._shape:
            raise RuntimeError(f"output with shape {list(self._shape)} doesn't match the broadcast shape {list(V.broadcast_shapes(self._shape, src._shape))}")
        if src.device != self.device:
            host = backends.get(src.device).read(src) if src.device.type != "cpu" else src.numpy()
            staged = Tensor._empty(src._shape, src.dtype, self.device)
            backends.get(self.device).write(staged._storage, np.ascontiguousarray(host))
            src = staged
        P.cast_into(self, src)
        return self

    def contiguous(self) -> Tensor:
        return self if self.is_contiguous() else self.clone()

    def clone(self) -> Tensor:
        out = Tensor._empty(self._shape, self.dtype, self.device)
        return P.cast_into(out, self)

    def fill_(self, value) -> Tensor:
        if isinstance(value, Tensor):
            if value.numel() != 1 or value.dim() > 0:
                raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.dim()} dimensions.")
            value = value.item()
        return P.fill(self, value)

    def zero_(self) -> Tensor:
        return P.fill(self, 0)

    def __repr__(self) -> str:
        from ._tensor_str import tensor_repr

        return tensor_repr(self)

    __str__ = __repr__

    def __hash__(self):
        return id(self)

    def __iter__(self):
        if not self._shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._shape[0]))

    def __reduce_ex__(self, protocol):
        from .ops.creation import _rebuild

        return (_rebuild, (backends.get(self.device).read(self), str(self.device)))


class Size(tuple):
    """``torch.Size``: a tuple of ints that prints as ``clgrad.Size([2, 3])``."""

    def __repr__(self) -> str:
        return f"clgrad.Size({list(self)})"

    def numel(self) -> int:
        return math.prod(self)


_TYPE_NAMES = {
    "bool": "BoolTensor", "uint8": "ByteTensor", "int8": "CharTensor", "int16": "ShortTensor",
    "int32": "IntTensor", "int64": "LongTensor", "float16": "HalfTensor", "float32": "FloatTensor",
    "float64": "DoubleTensor",
}


def _bind_methods() -> None:
    """Attach ops as methods and operators: each a one-line delegation."""
    from .ops import methods

    methods.install(Tensor)

