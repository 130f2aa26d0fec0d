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
from ..tensor import Tensor, contiguous_format, preserve_format
from . import pointwise as P
from . import views as V
from .functions import Expand


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
        return ToCopy.apply(self, dev, dt)
    return _copy(self._empty_like(dt, dev, fmt), self)


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
    backends.get(self.device).write(self._storage, src._host(), offset=self._offset)
    self._storage.version += 1
    return True


def contiguous(self, memory_format=None) -> Tensor:
    return self if self.is_contiguous() else self.clone(memory_format=contiguous_format)


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
    def forward(ctx, x, device, dtype):
        ctx.src = (x.device, x.dtype)
        return _copy(x._empty_like(dtype, device), x)

    @staticmethod
    def backward(ctx, grad):
        return grad.to(*ctx.src), None, None
