"""The Tensor: storage + dtype + shape + strides + offset, and its autograd state.

This module sits below autograd and the ops: it holds the data and the metadata, moves data to the host, and
keeps the plain autograd attributes (``requires_grad``, ``grad``, ``detach``). Everything that runs an op
or walks the graph is attached as a method by ``ops/methods.py`` (``install``) and ``autograd/variable.py``.
"""
from __future__ import annotations

import copy
import math

import numpy as np

from . import backends
from . import dtypes as D
from . import strides as St
from ._tensor_str import tensor_repr
from .backends.cpu import view_of
from .device import device
from .storage import Storage


class memory_format:  # noqa: N801 - torch's name
    """``clgrad.contiguous_format``, ``preserve_format``, ``channels_last`` (NHWC) and ``channels_last_3d``
    (NDHWC): the layout a new tensor gets where PyTorch takes ``memory_format=``."""

    def __init__(self, name: str, order: tuple | None = None):
        self.name, self.order = name, order  # order: the dims from the innermost out (channels-last formats)

    def __repr__(self) -> str:
        return f"clgrad.{self.name}"

    def strides(self, shape) -> tuple:
        """This format's strides for ``shape`` (PyTorch's error for a channels-last format of another rank)."""
        if self.order is None:
            return St.contiguous_strides(shape)
        self.check_rank(len(shape))
        strides, acc = [0] * len(shape), 1
        for d in self.order:
            strides[d] = acc
            acc *= max(shape[d], 1)
        return tuple(strides)

    def check_rank(self, ndim: int) -> None:
        if self.order is not None and ndim != len(self.order):
            raise RuntimeError(f"required rank {len(self.order)} tensor to use {self.name} format")

    def is_contiguous(self, shape, strides) -> bool:
        """Whether (shape, strides) is this channels-last format's layout, size-1 dims ignored."""
        if len(shape) != len(self.order):
            return False
        expect = 1
        for d in self.order:
            if shape[d] != 1:
                if strides[d] != expect:
                    return False
                expect *= shape[d]
        return True


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last", (1, 3, 2, 0))
channels_last_3d = memory_format("channels_last_3d", (1, 4, 3, 2, 0))


class layout:  # noqa: N801 - torch's name
    """A tensor's memory layout: ``clgrad.strided`` (dense) or ``clgrad.sparse_coo`` (ops/sparse.py)."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"clgrad.{self.name}"


strided = layout("strided")
sparse_coo = layout("sparse_coo")


class Tensor:
    """An n-dimensional array on a device. Build one with ``clgrad.tensor``, ``zeros``, ``randn``…"""

    __slots__ = ("_storage", "dtype", "_shape", "_strides", "_offset", "__dict__", "__weakref__")
    __array_priority__ = 1000  # numpy scalars' operators defer to the tensor's (``np.float32(2) * x`` is a tensor)

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

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
        return cls._make(storage, dt, shape, St.contiguous_strides(shape) if strides is None else strides)

    def _empty_like(self, dt: D.dtype | None = None, dev: device | None = None, memory_format=None) -> Tensor:
        """A new tensor shaped like this one, laid out like it when it is dense (``preserve_format``)."""
        if memory_format is None or memory_format is preserve_format:
            strides = St.dense_strides_like(self._shape, self._strides)
        else:
            strides = memory_format.strides(self._shape)
        return Tensor._empty(self._shape, dt or self.dtype, dev or self.device, strides)

    def _view(self, shape, strides, offset=None) -> Tensor:
        """A view of the same memory; it remembers the tensor that owns the memory (for autograd)."""
        t = Tensor._make(self._storage, self.dtype, shape, strides, self._offset if offset is None else offset)
        t._base = self._base if self._base is not None else self
        return t

    def _same_view(self, other) -> bool:
        return (self._storage is other._storage and self._offset == other._offset
                and self._shape == other._shape and self._strides == other._strides)

    # ---- autograd state (the graph itself is autograd's: grad_fn, backward and hooks are attached by
    # autograd/variable.py); the defaults live on the class so untracked tensors carry no extra state
    _grad = None
    _grad_fn = None
    _requires_grad = False
    _output_nr = 0
    _base = None  # the tensor owning the memory this view looks at

    @property
    def grad(self):
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        """PyTorch's checks on an assigned gradient: a tensor (or None) of this tensor's device, dtype and size."""
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type {type(value).__name__}")
            if value.device != self.device:
                raise RuntimeError("assigned grad has data located on a different device")
            if value.dtype is not self.dtype:
                raise RuntimeError("assigned grad has data of a different type")
            if value._shape != self._shape:
                raise RuntimeError("assigned grad has data of a different size")
        self.__dict__["_grad"] = value

    @grad.deleter
    def grad(self) -> None:
        self.__dict__.pop("_grad", None)

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad or self.grad_fn is not None

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Start (or stop) recording operations on this leaf tensor."""
        if self.grad_fn is not None:
            if not requires_grad:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want to use a computed variable "
                    "in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
                )
            return self
        if requires_grad and self.dtype.kind not in "fc":
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def _version(self) -> int:
        """How many in-place writes the memory has seen (shared by every view of it)."""
        return self._storage.version

    @property
    def data(self) -> Tensor:
        """The same memory, outside the graph, and unlike ``detach()`` with its own version counter: writes
        through ``.data`` are invisible to autograd's in-place checks, as in PyTorch."""
        s = self._storage
        # a second Storage object over the same memory; its "free" callback only keeps the owner alive
        alias = Storage(s.device, s.dtype, s.size, s.data, free=_KeepAlive(s))
        alias.shared = s.shared
        return type(self)._make(alias, self.dtype, self._shape, self._strides, self._offset)

    @data.setter
    def data(self, other) -> None:
        self._assign(other._storage, other.dtype, other._shape, other._strides, other._offset)

    def detach(self) -> Tensor:
        """A tensor sharing memory with this one, cut out of the graph."""
        return type(self)._make(self._storage, self.dtype, self._shape, self._strides, self._offset)

    def detach_(self) -> Tensor:
        """Cut this tensor out of the graph in place; it becomes a leaf that doesn't require grad."""
        if "_view_version" in self.__dict__:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel (DDP) "
                "for training, and gradient_as_bucket_view is set as True, gradients are views of DDP buckets, and "
                "hence detach_() cannot be called on these gradients. To fix this error, please refer to the "
                "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution."
            )
        self.grad_fn = None
        self._requires_grad = False
        return self

    def __deepcopy__(self, memo) -> Tensor:
        """``copy.deepcopy``: a leaf's values in new memory, with its requires_grad and a copy of its grad."""
        if not self.is_leaf:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at the "
                "moment.  If you were attempting to deepcopy a module, this may be because of a "
                "torch.nn.utils.weight_norm usage, see https://github.com/pytorch/pytorch/pull/103001"
            )
        if id(self) not in memo:
            new = self.detach().clone().requires_grad_(self.requires_grad)  # clone: attached by ops/methods.py
            new.grad = copy.deepcopy(self.grad, memo)
            memo[id(self)] = new
        return memo[id(self)]

    @property
    def retains_grad(self) -> bool:
        return bool(self.__dict__.get("_retains_grad")) and self.grad_fn is not None


    # ---- metadata -------------------------------------------------------------------------
    @property
    def device(self) -> device:
        return self._storage.device

    @property
    def shape(self) -> Size:
        return Size(self._shape)

    def size(self, dim=None):
        return Size(self._shape) if dim is None else self._shape[St.wrap_dim(dim, self.dim(), scalar_ok=False)]

    def stride(self, dim=None):
        return self._strides if dim is None else self._strides[St.wrap_dim(dim, self.dim(), scalar_ok=False)]

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

    # dense; a sparse COO tensor (ops/sparse.py) overrides both
    layout = strided
    is_sparse = False

    @property
    def is_cpu(self) -> bool:
        return self.device.type == "cpu"

    @property
    def is_opencl(self) -> bool:
        return self.device.type == "opencl"

    # torch's other device kinds and layouts, none of which a clgrad tensor has (NVIDIA GPUs are opencl devices)
    is_xpu = is_mps = is_meta = is_ipu = is_xla = is_mtia = is_maia = is_vulkan = property(lambda self: False)
    is_mkldnn = is_quantized = is_nested = property(lambda self: False)

    def is_pinned(self, device=None) -> bool:
        return False

    def share_memory_(self) -> Tensor:
        """Move the data into memory other processes map (cpu only; see ``clgrad.multiprocessing``). Returns self."""
        self._storage.share_memory_()
        return self

    def is_shared(self) -> bool:
        """Whether the data lives in shared memory (``share_memory_``, or received through clgrad.multiprocessing)."""
        return self._storage.is_shared()

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def is_contiguous(self, memory_format=None) -> bool:
        if self.numel() == 0:
            return True
        if memory_format is not None and memory_format.order is not None:
            return memory_format.is_contiguous(self._shape, self._strides)
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
        if self.dtype.kind == "c":
            return self._pairs().numpy().view(self.dtype.np)[..., 0]
        if self.dtype is D.bfloat16:  # numpy has no bfloat16 of its own (clgrad's cpu storage is ml_dtypes')
            raise TypeError("Got unsupported ScalarType BFloat16")
        return view_of(self)

    def __array__(self, dtype=None, copy=None):
        # unlike PyTorch, an OpenCL tensor converts too (a copy), so np.asarray works on any device
        arr = self._host()
        return arr if dtype is None else arr.astype(dtype, copy=False)

    def _host(self) -> np.ndarray:
        """The values as a numpy array (a view on cpu, a copy from a device; bfloat16 as ml_dtypes' type)."""
        if self.dtype.kind == "c" and self.device.type != "cpu":
            return self._pairs()._host().view(self.dtype.np)[..., 0]
        if self.dtype.kind == "c":
            return self.numpy()
        return view_of(self) if self.device.type == "cpu" else backends.get(self.device).read(self)

    # ---- complex tensors: (re, im) pairs in a storage of the real dtype (ops/complex.py) ----------------------
    def _pairs(self) -> Tensor:
        """A complex tensor's values as a real [..., 2] tensor on the same storage (untracked; see view_as_real)."""
        return Tensor._make(self._storage, self.dtype.real, (*self._shape, 2),
                            (*(2 * st for st in self._strides), 1), 2 * self._offset)

    def is_complex(self) -> bool:
        return self.dtype.is_complex

    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        return self._host().reshape(-1)[0].astype(self.dtype.np if self.dtype is not D.bfloat16 else np.float32).item()

    def tolist(self):
        host = self._host()
        return (host.astype(np.float32) if self.dtype is D.bfloat16 else host).tolist()

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
            return f"clgrad.{where}{self.dtype.tensor_type_name}"
        if isinstance(dtype, D.dtype):
            return self.to(dtype)
        if isinstance(dtype, type) and isinstance(getattr(dtype, "dtype", None), D.dtype):  # clgrad.DoubleTensor
            return self.to("cpu", dtype.dtype)
        if isinstance(dtype, str):
            dev, name = _parse_type_name(dtype, self.device)
            return self.to(dev, D.as_dtype(name))
        raise ValueError(f"invalid type: '{getattr(dtype, '__name__', dtype)}'")

    # the dtype conversions: ``x.float(memory_format=clgrad.contiguous_format)`` is ``x.to(float32, memory_format=...)``
    def float(self, *, memory_format=preserve_format) -> Tensor:
        return self.to(D.float32, memory_format=memory_format)

    def double(self, *, memory_format=preserve_format) -> Tensor:
        return self.to(D.float64, memory_format=memory_format)

    def half(self, *, memory_format=preserve_format) -> Tensor:
        return self.to(D.float16, memory_format=memory_format)

    def bfloat16(self, *, memory_format=preserve_format) -> Tensor:
        return self.to(D.bfloat16, memory_format=memory_format)

    def long(self, *, memory_format=preserve_format) -> Tensor:
        return self.to(D.int64, memory_format=memory_format)

    def int(self, *, memory_format=preserve_format) -> Tensor:
        return self.to(D.int32, memory_format=memory_format)

    def short(self, *, memory_format=preserve_format) -> Tensor:
        return self.to(D.int16, memory_format=memory_format)

    def char(self, *, memory_format=preserve_format) -> Tensor:
        return self.to(D.int8, memory_format=memory_format)

    def byte(self, *, memory_format=preserve_format) -> Tensor:
        return self.to(D.uint8, memory_format=memory_format)

    def bool(self, *, memory_format=preserve_format) -> Tensor:
        return self.to(D.bool, memory_format=memory_format)

    def __repr__(self) -> str:
        return tensor_repr(self)

    __str__ = __repr__

    def __hash__(self):
        return id(self)

    def __iter__(self):
        if not self._shape:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __contains__(self, element) -> bool:
        """``v in x``: whether any element equals ``v`` (a number or a tensor that broadcasts), as in PyTorch."""
        if not isinstance(element, (Tensor, int, float, complex, np.number, np.bool_)):
            raise RuntimeError(
                f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a {type(element)}."
            )
        return bool((element == self).any().item())

    def __format__(self, format_spec: str) -> str:
        """A 0-d tensor formats its value (``f"{loss:.3f}"``, and ``f"{loss}"`` prints the number); others take no
        format spec, as in PyTorch."""
        if self.dim() == 0 and type(self) is Tensor:
            return self.item().__format__(format_spec)
        return object.__format__(self, format_spec)

def is_tensor(x) -> bool:
    """Whether ``x`` is a clgrad tensor (a Parameter included): the one test every layer above uses."""
    return isinstance(x, Tensor)


class _KeepAlive:
    """Holds the Storage that owns some memory for as long as an alias Storage of it lives."""

    __slots__ = ("owner",)

    def __init__(self, owner):
        self.owner = owner

    def __call__(self) -> None:
        pass


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


_BY_TYPE_NAME = {d.tensor_type_name: d.name for d in D.ALL}


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
