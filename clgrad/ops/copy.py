"""Moving data between tensors: ``to``, ``copy_``, ``clone``, ``contiguous``, ``fill_``, ``zero_`` (Tensor
methods, attached by ``methods.install``), and the Functions autograd records them as."""
from __future__ import annotations

from numbers import Number

import numpy as np

from .. import backends
from .. import dtypes as D
from ..autograd.function import Function
from ..autograd.graph import inplace, needs_graph
from ..device import device, resolve
from ..tensor import Tensor, channels_last, channels_last_3d, contiguous_format, preserve_format
from . import pointwise as P
from . import views as V
from .functions import Expand

_TO_SIGNATURES = (
    " * (clgrad.device device = None, clgrad.dtype dtype = None, bool non_blocking = False, bool copy = False, *, "
    "clgrad.memory_format memory_format = None)\n"
    " * (clgrad.dtype dtype, bool non_blocking = False, bool copy = False, *, clgrad.memory_format memory_format = None)\n"
    " * (Tensor tensor, bool non_blocking = False, bool copy = False, *, clgrad.memory_format memory_format = None)\n"
)
# PyTorch's three overloads of ``to``, by the kind of the first argument
_TO_PARAMS = {"device": ("device", "dtype", "non_blocking", "copy"), "dtype": ("dtype", "non_blocking", "copy"),
              "tensor": ("tensor", "non_blocking", "copy")}


_PY_TYPES = {float: D.float64, int: D.int64, bool: D.bool}  # x.to(float) is float64, as in PyTorch


def _is_dtype(a) -> bool:
    return isinstance(a, D.dtype) or a in _PY_TYPES


def _to_overload(args, kwargs) -> str:
    first = args[0] if args else None
    if isinstance(first, Tensor) or (not args and "tensor" in kwargs):
        return "tensor"
    return "dtype" if _is_dtype(first) else "device"


def _to_bad(args, kwargs) -> TypeError:
    got = ", ".join([type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in kwargs.items()])
    return TypeError(f"to() received an invalid combination of arguments - got ({got}, ), but expected one of:\n"
                     + _TO_SIGNATURES)


def _to_args(self, args, kwargs):
    """(device, dtype, copy, memory_format) from any of ``to``'s overloads, with PyTorch's TypeError otherwise."""
    if len(args) > 4:
        raise TypeError(f"to() takes from 0 to 4 positional arguments but {len(args)} were given")
    fmt = kwargs.pop("memory_format", None)
    names = _TO_PARAMS[_to_overload(args, kwargs)]
    if len(args) > len(names) or set(kwargs) - set(names[len(args):]):
        raise _to_bad(args, {**kwargs, **({} if fmt is None else {"memory_format": fmt})})
    bound = dict(zip(names, args)) | kwargs
    if not all(isinstance(bound.get(k, False), bool) for k in ("non_blocking", "copy")):
        raise _to_bad(args, kwargs)
    dev, dt = self.device, self.dtype
    if "tensor" in bound:
        dev, dt = bound["tensor"].device, bound["tensor"].dtype
    if bound.get("dtype") is not None:
        if not _is_dtype(bound["dtype"]):
            raise _to_bad(args, kwargs)
        dt = _PY_TYPES.get(bound["dtype"]) or D.as_dtype(bound["dtype"])
    if bound.get("device") is not None:
        if not isinstance(bound["device"], (str, device, int)) or isinstance(bound["device"], bool):
            raise _to_bad(args, kwargs)
        dev = resolve(bound["device"])
    return dev, dt, bool(bound.get("copy", False)), fmt


def to(self, *args, **kwargs) -> Tensor:
    """PyTorch's overloads: ``to(device=None, dtype=None, non_blocking=False, copy=False, *, memory_format=None)``,
    ``to(dtype, non_blocking=False, copy=False)`` and ``to(tensor, non_blocking=False, copy=False)``: a converted
    copy, or ``self`` when nothing changes (unless ``copy=True``). The copy keeps a dense input's layout."""
    dev, dt, copy, fmt = _to_args(self, args, kwargs)
    if fmt is not None:
        fmt.check_rank(self.dim())
    if dev == self.device and dt is self.dtype and not copy and fmt in (None, preserve_format, suggest_format(self)):
        return self
    if needs_graph(self):
        return ToCopy.apply(self, dev, dt, fmt)
    return _copy(self._empty_like(dt, dev, fmt), self)


def _like_channels_last(shape, strides, order) -> bool:
    """PyTorch's ``is_channels_last_strides_2d/3d``: strides that grow along ``order`` (C innermost)."""
    low = 0
    if strides[1] == 0:
        return False
    for d in order:
        if shape[d] == 0 or strides[d] < low or (d == 0 and low == strides[1]):
            return False
        low = strides[d] * (shape[d] if shape[d] > 1 else 1)
    return True


def suggest_format(t):
    """The memory format a tensor's strides suggest (PyTorch's ``suggest_memory_format``)."""
    for fmt in (channels_last, channels_last_3d):
        if t.dim() == len(fmt.order) and _like_channels_last(t._shape, t._strides, fmt.order):
            return fmt
    return contiguous_format


def copy_(self, src, non_blocking: bool = False) -> Tensor:
    """Copy ``src`` (any device, any dtype, broadcastable to this shape) into this tensor in place."""
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'other' (position 1) must be Tensor, not {type(src).__name__}")
    shape = V.broadcast_shapes(self._shape, src._shape)
    if shape != self._shape:
        raise RuntimeError(f"output with shape {list(self._shape)} doesn't match the broadcast shape {list(shape)}")
    if needs_graph(self, src):
        return inplace(self, lambda old: Expand.apply(src.to(self.device, self.dtype), self._shape))
    return _copy(self, src)


def _copy(dst: Tensor, src: Tensor) -> Tensor:
    """The untracked copy of ``src`` (broadcastable, any device and dtype) into ``dst``; counts the write."""
    if dst.numel() == 0:
        return dst
    V.check_no_internal_overlap(dst)
    if src.device != dst.device:
        if _write_from_host(dst, src):
            return dst
        src = _staged(src, dst.device)
    else:
        V.check_no_partial_overlap(dst, src)
    P.cast_into(dst, src)
    dst._storage.version += 1
    return dst


def _write_from_host(self: Tensor, src: Tensor) -> bool:
    """The cross-device fast path: one transfer straight into a contiguous destination of src's dtype."""
    if not (self.is_contiguous() and src._shape == self._shape and src.dtype is self.dtype):
        return False
    offset = self._offset * (2 if self.dtype.kind == "c" else 1)  # a complex storage counts (re, im) reals
    backends.get(self.device).write(self._storage, src._host(), offset=offset)
    self._storage.version += 1
    return True


def contiguous(self, memory_format=contiguous_format) -> Tensor:
    """``self`` when it already has ``memory_format``'s layout, else a copy laid out so."""
    if memory_format is preserve_format:
        if self.is_contiguous():
            return self
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    memory_format.check_rank(self.dim())
    return self if self.is_contiguous(memory_format) else self.clone(memory_format=memory_format)


def clone(self, memory_format=None) -> Tensor:
    """A copy in new memory; a dense layout (a transpose) is kept, as ``torch.preserve_format`` does."""
    if needs_graph(self):
        return Clone.apply(self, memory_format)
    return _clone(self, memory_format)


def _clone(x: Tensor, memory_format) -> Tensor:
    return P.cast_into(x._empty_like(memory_format=memory_format), x)


def fill_(self, value) -> Tensor:
    if isinstance(value, Tensor):
        if value.dim() > 0:
            raise RuntimeError(
                f"fill_ only supports 0-dimension value tensor but got tensor with {value.dim()} dimensions."
            )
        value = value.item()
    if not isinstance(value, (Number, np.bool_)):
        raise TypeError(f"fill_() received an invalid combination of arguments - got ({type(value).__name__})")
    return P.fill(self, value)


def zero_(self) -> Tensor:
    return P.fill(self, 0)


def _staged(src: Tensor, dev: device) -> Tensor:
    """``src``'s values on another device, same dtype and shape: a transfer through host memory."""
    staged = Tensor._empty(src._shape, src.dtype, dev)
    backends.get(dev).write(staged._storage, src._host())
    return staged


class Clone(Function):
    node_name = "CloneBackward0"

    @staticmethod
    def forward(ctx, x, memory_format=None):
        return _clone(x, memory_format)

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class ToCopy(Function):
    """Device and dtype changes: the gradient goes back to the input's device and dtype."""

    node_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx, x, device, dtype, memory_format=None):
        ctx.src = (x.device, x.dtype)
        return _copy(x._empty_like(dtype, device, memory_format), x)

    @staticmethod
    def backward(ctx, grad):
        return grad.to(*ctx.src), None, None, None
