"""PyTorch's legacy constructors: ``clgrad.FloatTensor(2, 3)``, ``LongTensor([1, 2])``, ``Tensor(ndarray)``,
``x.new(...)``, and ``isinstance(x, clgrad.FloatTensor)``.

Each typed name (``FloatTensor``, ``DoubleTensor``...) is a class whose instances are never made: calling it
returns a plain ``Tensor`` of its dtype on the cpu, and ``isinstance`` asks whether a tensor is a cpu tensor of that
dtype, as PyTorch's ``torch.FloatTensor`` does. ``x.type(clgrad.DoubleTensor)`` converts to it.
"""
from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral

import numpy as np

from .. import dtypes as D
from ..device import resolve
from ..storage import Storage
from ..tensor import Size, Tensor, is_tensor
from .creation import empty, tensor

__all__ = ["FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ShortTensor", "CharTensor",
           "ByteTensor", "BoolTensor"]


def _is_size(args) -> bool:
    """``f(2, 3)`` or ``f(Size([2, 3]))``: sizes rather than data."""
    if len(args) == 1 and isinstance(args[0], Size):
        return True
    return all(isinstance(a, (Integral, np.integer)) and not isinstance(a, (bool, np.bool_)) for a in args)


def construct(dt: D.dtype, args: tuple, device=None, exact: bool = True) -> Tensor:
    """What ``<dt>Tensor(*args)`` returns: uninitialised memory for sizes, a copy of data (a sequence, a numpy
    array) in ``dt``, or the tensor given itself (``exact``: only when it already has ``dt``)."""
    if not args:
        return empty(0, dtype=dt, device=device)
    if _is_size(args):
        return empty(*args, dtype=dt, device=device)
    if len(args) > 1:
        raise TypeError(f"new() received an invalid combination of arguments - got ({', '.join(type(a).__name__ for a in args)})")
    data = args[0]
    if is_tensor(data):
        if exact and data.dtype is not dt:
            raise TypeError(f"expected {dt.scalar_name} (got {data.dtype.scalar_name})")
        return data
    if isinstance(data, np.ndarray) or (isinstance(data, Sequence) and not isinstance(data, (str, bytes))):
        return tensor(data, dtype=dt, device=device)
    if isinstance(data, (float, complex, bool, np.number, np.bool_)):
        raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
    raise TypeError(f"new(): invalid data type '{type(data).__name__}'")


def legacy_init(self, *args, dtype=None, device=None) -> None:
    """``Tensor(2, 3)`` is an uninitialised float tensor, ``Tensor([1, 2])`` copies data, ``Tensor(t)`` is ``t``."""
    if args and isinstance(args[0], Storage):
        return
    dt = D.as_dtype(dtype) if dtype is not None else D.get_default_dtype()
    src = construct(dt, args, device, exact=False)
    self._assign(src._storage, src.dtype, src._shape, src._strides, src._offset)


def new(self, *args, dtype=None, device=None) -> Tensor:
    """``x.new(2, 3)``, ``x.new([1, 2])``: the legacy constructor with ``x``'s dtype and device."""
    dt = self.dtype if dtype is None else D.as_dtype(dtype)
    return construct(dt, args, self.device if device is None else device, exact=False)


class _LegacyType(type):
    """The metaclass of ``FloatTensor`` & co.: calling one builds a cpu tensor of its dtype; ``isinstance``
    checks a tensor's dtype and device."""

    def __call__(cls, *args, device=None):
        if device is not None and resolve(device).type != "cpu":
            raise RuntimeError(f"legacy constructor expects device type: cpu but device type: {resolve(device).type} "
                               "was passed")
        return construct(cls.dtype, args)

    def __instancecheck__(cls, obj) -> bool:
        return is_tensor(obj) and obj.dtype is cls.dtype and obj.device.type == "cpu"

    def __repr__(cls) -> str:
        return f"<class 'clgrad.{cls.__name__}'>"


def _legacy_type(dt: D.dtype) -> type:
    return _LegacyType(dt.tensor_type_name, (), {"dtype": dt, "is_cuda": False, "is_sparse": False,
                                                  "__module__": "clgrad", "__doc__": f"A cpu tensor of {dt}."})


FloatTensor = _legacy_type(D.float32)
DoubleTensor = _legacy_type(D.float64)
HalfTensor = _legacy_type(D.float16)
LongTensor = _legacy_type(D.int64)
IntTensor = _legacy_type(D.int32)
ShortTensor = _legacy_type(D.int16)
CharTensor = _legacy_type(D.int8)
ByteTensor = _legacy_type(D.uint8)
BoolTensor = _legacy_type(D.bool)


def install(T) -> None:
    T.__init__ = legacy_init
    T.new = new
