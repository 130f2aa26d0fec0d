"""The Tensor: storage + dtype + shape + strides + offset. Operators delegate to ``clgrad.ops``."""
from __future__ import annotations

import math
from numbers import Number

import numpy as np

from . import backends
from . import dtypes as D
from .autograd.grad_mode import no_grad
from .autograd.graph import needs_graph
from .autograd.variable import AutogradMixin
from .device import device, resolve
from .ops import views as V
from .storage import Storage


class memory_format:  # noqa: N801 - torch's name
    """``clgrad.contiguous_format`` / ``clgrad.preserve_format``, accepted where PyTorch takes them."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"clgrad.{self.name}"


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")


class Tensor(AutogradMixin):
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
            src = creation.empty(*(args or (0,)), dtype=dt, device=device)
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
    def _empty(cls, shape, dt: D.dtype, dev: device, strides=None) -> Tensor:
        """A new tensor; ``strides`` (a dense, non-overlapping layout) default to contiguous."""
        shape = tuple(shape)
        storage = backends.get(dev).empty(dev, dt, math.prod(shape))
        return cls._make(storage, dt, shape, V.contiguous_strides(shape) if strides is None else strides)

    def _empty_like(self, dt: D.dtype | None = None, dev: device | None = None, memory_format=None) -> Tensor:
        """A new tensor shaped like this one, laid out like it when it is dense (``preserve_format``)."""
        keep = memory_format is None or memory_format is preserve_format
        strides = V.dense_strides_like(self._shape, self._strides) if keep else None
        return Tensor._empty(self._shape, dt or self.dtype, dev or self.device, strides)

    def _view(self, shape, strides, offset=None) -> Tensor:
        """A view of the same memory; it remembers the tensor that owns the memory (for autograd)."""
        t = Tensor._make(self._storage, self.dtype, shape, strides, self._offset if offset is None else offset)
        t._base = self._base if self._base is not None else self
        return t

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
        return Size(self._shape) if dim is None else self._shape[V.wrap_dim(dim, self.dim(), scalar_ok=False)]

    def stride(self, dim=None):
        return self._strides if dim is None else self._strides[V.wrap_dim(dim, self.dim(), scalar_ok=False)]

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
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.numel() * self.dtype.itemsize

    def data_ptr(self) -> int:
        """An address for identity checks: equal for tensors that start at the same element of the same
        memory. On OpenCL it is the buffer handle plus the byte offset, not a device address."""
        data = self._storage.data
        if data is None:
            return 0
        base = data.ctypes.data if self.device.type == "cpu" else data.int_ptr
        return base + self._offset * self.dtype.itemsize

    def get_device(self) -> int:
        """-1 on cpu, the OpenCL index otherwise (``torch.Tensor.get_device``)."""
        return -1 if self.device.type == "cpu" else self.device.index

    @property
    def is_cuda(self) -> bool:
        return False

    @property
    def is_cpu(self) -> bool:
        return self.device.type == "cpu"

    @property
    def is_opencl(self) -> bool:
        return self.device.type == "opencl"

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def is_contiguous(self, memory_format=None) -> bool:
        if self.numel() == 0:
            return True
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
                f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to "
                "host memory first."
            )
        from .backends.cpu import view_of

        return view_of(self)

    def __array__(self, dtype=None, copy=None):
        # unlike PyTorch, an OpenCL tensor converts too (a copy), so np.asarray works on any device
        arr = self.numpy() if self.device.type == "cpu" else backends.get(self.device).read(self)
        return arr if dtype is None else arr.astype(dtype, copy=False)

    def _host(self) -> np.ndarray:
        """The values as a numpy array (a view on cpu, a copy from a device)."""
        return self.numpy() if self.device.type == "cpu" else backends.get(self.device).read(self)

    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        return self._host().reshape(-1)[0].item()

    def tolist(self):
        return self._host().tolist()

    def _scalar(self):
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __bool__(self) -> bool:
        if self.numel() == 0:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
        if self.numel() > 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __int__(self):
        return int(self._scalar())

    def __float__(self):
        return float(self._scalar())

    def __index__(self):
        if self.dtype.kind not in "iub" or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def to(self, *args, **kwargs) -> Tensor:
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(other)``: a converted copy, or
        ``self`` when nothing changes (unless ``copy=True``). The copy keeps a dense input's layout."""
        copy = kwargs.pop("copy", False)
        fmt = kwargs.pop("memory_format", None)
        kwargs.pop("non_blocking", None)
        dev, dt = self.device, self.dtype
        for key, a in [(None, a) for a in args] + list(kwargs.items()):
            if key not in (None, "device", "dtype", "other", "tensor"):
                raise TypeError(f"to() got an unexpected keyword argument '{key}'")
            if isinstance(a, Tensor):
                dev, dt = a.device, a.dtype
            elif isinstance(a, D.dtype) or a in (float, int, bool):
                dt = D.as_dtype(a)
            elif isinstance(a, (str, device, int)):
                dev = resolve(a)
            elif a is not None:
                got = ", ".join(type(x).__name__ for x in args)
                raise TypeError(f"to() received an invalid combination of arguments - got ({got})")
        if dev == self.device and dt is self.dtype and not copy and fmt in (None, preserve_format):
            return self
        if needs_graph(self):
            from .ops.functions import ToCopy

            return ToCopy.apply(self, dev, dt)
        with no_grad():
            return self._empty_like(dt, dev, fmt).copy_(self)

    def cpu(self) -> Tensor:
        return self.to("cpu")

    def opencl(self, index=None) -> Tensor:
        """A copy on ``opencl:index`` (the default OpenCL device when None), like ``Tensor.cuda``."""
        return self.to(device("opencl", index))

    def type(self, dtype=None, non_blocking: bool = False):
        """``x.type()`` is the type name (``'clgrad.FloatTensor'``, ``'clgrad.opencl.FloatTensor'``);
        ``x.type(clgrad.float64)`` or ``x.type('clgrad.DoubleTensor')`` converts."""
        if dtype is None:
            where = "" if self.device.type == "cpu" else "opencl."
            return f"clgrad.{where}{_TYPE_NAMES[self.dtype.name]}"
        if isinstance(dtype, D.dtype):
            return self.to(dtype)
        if isinstance(dtype, str):
            dev, name = _parse_type_name(dtype, self.device)
            return self.to(dev, D.as_dtype(name))
        raise ValueError(f"invalid type: '{getattr(dtype, '__name__', dtype)}'")

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
        """Copy ``src`` (any device, any dtype, broadcastable to this shape) into this tensor in place."""
        if not isinstance(src, Tensor):
            raise TypeError(f"copy_(): argument 'other' (position 1) must be Tensor, not {type(src).__name__}")
        shape = V.broadcast_shapes(self._shape, src._shape)
        if shape != self._shape:
            raise RuntimeError(f"output with shape {list(self._shape)} doesn't match the broadcast shape {list(shape)}")
        if needs_graph(self, src):
            from .autograd.graph import inplace
            from .ops.functions import Expand

            return inplace(self, lambda old: Expand.apply(src.to(self.device, self.dtype), self._shape))
        if self.numel() == 0:
            return self
        V.check_no_internal_overlap(self)
        if src.device != self.device:
            if self._write_from_host(src):
                return self
            src = _staged(src, self.device)
        else:
            V.check_no_partial_overlap(self, src)
        from .ops import pointwise as P  # transitional: the ops helper's branch removes this

        P.cast_into(self, src)
        self._storage.version += 1
        return self

    def _write_from_host(self, src: Tensor) -> bool:
        """The cross-device fast path: one transfer straight into a contiguous destination of src's dtype."""
        if not (self.is_contiguous() and src._shape == self._shape and src.dtype is self.dtype):
            return False
        backends.get(self.device).write(self._storage, src._host(), offset=self._offset)
        self._storage.version += 1
        return True

    def contiguous(self, memory_format=None) -> Tensor:
        return self if self.is_contiguous() else self.clone(memory_format=contiguous_format)

    def clone(self, memory_format=None) -> Tensor:
        """A copy in new memory; a dense layout (a transpose) is kept, as ``torch.preserve_format`` does."""
        if needs_graph(self):
            from .ops.functions import Clone

            return Clone.apply(self, memory_format)
        from .ops import pointwise as P

        return P.cast_into(self._empty_like(memory_format=memory_format), self)

    def fill_(self, value) -> Tensor:
        if isinstance(value, Tensor):
            if value.dim() > 0:
                raise RuntimeError(
                    f"fill_ only supports 0-dimension value tensor but got tensor with {value.dim()} dimensions."
                )
            value = value.item()
        if not isinstance(value, (Number, np.bool_)):
            raise TypeError(f"fill_() received an invalid combination of arguments - got ({type(value).__name__})")
        from .ops import pointwise as P

        return P.fill(self, value)

    def zero_(self) -> Tensor:
        from .ops import pointwise as P

        return P.fill(self, 0)

    # ---- new_* : same dtype and device unless told otherwise --------------------------------
    def new_empty(self, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
        from .ops import creation

        return creation.empty(*size, **self._new_kw(dtype, device, requires_grad))

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
        from .ops import creation

        return creation.zeros(*size, **self._new_kw(dtype, device, requires_grad))

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
        from .ops import creation

        return creation.ones(*size, **self._new_kw(dtype, device, requires_grad))

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
        from .ops import creation

        return creation.full(size, fill_value, **self._new_kw(dtype, device, requires_grad))

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False) -> Tensor:
        from .ops import creation

        return creation.tensor(data, **self._new_kw(dtype, device, requires_grad))

    def _new_kw(self, dtype, device, requires_grad) -> dict:
        return {"dtype": self.dtype if dtype is None else dtype, "device": self.device if device is None else device,
                "requires_grad": requires_grad}

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


def is_tensor(x) -> bool:
    """Whether ``x`` is a clgrad tensor (a Parameter included): the one test every layer above uses."""
    return isinstance(x, Tensor)


def _staged(src: Tensor, dev: device) -> Tensor:
    """``src``'s values on another device, same dtype and shape: a transfer through host memory."""
    staged = Tensor._empty(src._shape, src.dtype, dev)
    backends.get(dev).write(staged._storage, src._host())
    return staged


class Size(tuple):
    """``torch.Size``: a tuple of ints that prints as ``clgrad.Size([2, 3])``."""

    def __repr__(self) -> str:
        return f"clgrad.Size({list(self)})"

    def __getitem__(self, key):
        item = super().__getitem__(key)
        return Size(item) if isinstance(key, slice) else item

    def __add__(self, other):
        return Size(tuple(self) + tuple(other))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))

    def __mul__(self, n):
        return Size(tuple(self) * n)

    __rmul__ = __mul__

    def numel(self) -> int:
        return math.prod(self)


_TYPE_NAMES = {
    "bool": "BoolTensor", "uint8": "ByteTensor", "int8": "CharTensor", "int16": "ShortTensor",
    "int32": "IntTensor", "int64": "LongTensor", "float16": "HalfTensor", "float32": "FloatTensor",
    "float64": "DoubleTensor",
}
_BY_TYPE_NAME = {v: k for k, v in _TYPE_NAMES.items()}


def _parse_type_name(text: str, current: device):
    """``'clgrad.DoubleTensor'`` -> (cpu, 'float64'); ``'clgrad.opencl.IntTensor'`` -> (an OpenCL device, 'int32').

    ``torch.`` works as well as ``clgrad.``, so code written for PyTorch's cpu type names runs.
    """
    parts = text.split(".")
    if len(parts) in (2, 3) and parts[0] in ("clgrad", "torch") and parts[-1] in _BY_TYPE_NAME:
        if len(parts) == 2:
            return "cpu", _BY_TYPE_NAME[parts[-1]]
        if parts[1] == "opencl":
            return (current if current.type == "opencl" else "opencl"), _BY_TYPE_NAME[parts[-1]]
    raise ValueError(f"invalid type: '{text}'")


def _bind_methods() -> None:
    """Attach ops as methods and operators: each a one-line delegation."""
    from .ops import methods

    methods.install(Tensor)
