"""Tensor methods and operators. Each is a one-line delegation to a function in ``clgrad.ops``."""
from __future__ import annotations

from .. import random
from ..autograd import variable
from ..autograd.graph import needs_graph
from ..tensor import is_tensor
from . import (
    activations,
    conv,
    copy,
    creation,
    distance,
    gather,
    indexing,
    joins,
    linalg,
    nnops,
    norms,
    pooling,
    rearrange,
    reduction,
    scans,
    stats,
)
from . import functions as F
from . import math as M
from . import shape as S
from . import views as V

_REFLECTED = {"add": "radd", "sub": "rsub", "mul": "rmul", "div": "rtruediv", "floor_divide": "rfloordiv",
              "remainder": "rmod", "pow": "rpow", "bitwise_and": "rand", "bitwise_or": "ror",
              "bitwise_xor": "rxor", "lshift": "rlshift", "rshift": "rrshift"}
_DUNDER = {"add": "add", "sub": "sub", "mul": "mul", "div": "truediv", "floor_divide": "floordiv",
           "remainder": "mod", "pow": "pow", "bitwise_and": "and", "bitwise_or": "or", "bitwise_xor": "xor",
           "lshift": "lshift", "rshift": "rshift", "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt",
           "ge": "ge"}
_OPERAND = (int, float, bool)


def _is_operand(x) -> bool:
    return is_tensor(x) or isinstance(x, _OPERAND)


def _forward(name):
    fn = getattr(M, name, None) or M.FUNCS[name]

    def method(self, other):
        return fn(self, other) if _is_operand(other) else NotImplemented

    return method


def _reflected(name):
    fn = getattr(M, name, None) or M.FUNCS[name]

    def method(self, other):
        return fn(other, self) if isinstance(other, _OPERAND) else NotImplemented

    return method


def _inplace(name):
    fn = getattr(M, name, None) or M.FUNCS[name]

    def method(self, *args, **kwargs):
        return fn(self, *args, out=self, **kwargs)

    method.__name__ = name + "_"
    return method


def _tracked(fn, function):
    """A view method: plain shape arithmetic, or ``function`` (a view Function) when autograd records."""

    def method(self, *args):
        if needs_graph(self):
            return function.apply(self, fn, args)
        return fn(self, *args)

    method.__name__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


def _getitem(self, index):
    """Basic indexing is a view (a Slice node when recorded); advanced indexing records its own node."""
    if needs_graph(self) and V.basic_index(self, index) is not None:
        return F.Slice.apply(self, S.getitem, (index,))
    return S.getitem(self, index)


def _permute(self, *dims):
    if needs_graph(self):
        return F.Permute.apply(self, V.as_size(dims))
    return S.permute(self, *dims)


def _transpose(self, dim0, dim1, node=None):
    if not needs_graph(self):
        return S.transpose(self, dim0, dim1)
    order = list(range(self.dim()))
    d0, d1 = V.wrap_dim(dim0, self.dim()), V.wrap_dim(dim1, self.dim())
    order[d0], order[d1] = order[d1], order[d0]
    return (node or F.Transpose).apply(self, tuple(order))


def _expand(self, *sizes):
    if needs_graph(self):
        return F.Expand.apply(self, V.as_size(sizes))
    return S.expand(self, *sizes)


def install(T) -> None:
    variable.install(T)  # grad_fn, backward, hooks
    T.__init__ = creation.legacy_init
    T.__reduce_ex__ = creation.reduce_ex
    for fn in (creation.new_empty, creation.new_zeros, creation.new_ones, creation.new_full, creation.new_tensor,
               copy.to, copy.copy_, copy.clone, copy.contiguous, copy.fill_, copy.zero_):
        setattr(T, fn.__name__, fn)

    for module in (reduction, linalg, random, indexing, gather, joins, rearrange, scans, stats, conv, pooling, nnops, norms):
        module.install(T)
    activations.install(T)  # x.prelu, x.hardshrink
    distance.install(T)  # x.dist

    # views: raw shape arithmetic, or a Function when autograd records
    for name, fn in [("view", S.view), ("reshape", S.reshape), ("flatten", S.flatten), ("squeeze", S.squeeze),
                     ("unsqueeze", S.unsqueeze)]:
        setattr(T, name, _tracked(fn, F.View))
    for name, fn in [("narrow", S.narrow), ("select", S.select), ("as_strided", S.as_strided)]:
        setattr(T, name, _tracked(fn, F.Slice))
    T.__getitem__ = _getitem
    T.permute = _permute
    T.expand = _expand
    T.__setitem__ = S.setitem
    T.transpose = T.swapaxes = T.swapdims = _transpose
    T.t = lambda self: _transpose(self, 0, 1, F.T) if self.dim() == 2 else S.t_(self)
    T.view_as = lambda self, other: self.view(other.shape)
    T.reshape_as = lambda self, other: self.reshape(other.shape)
    T.expand_as = lambda self, other: _expand(self, other.shape)
    T.T = property(lambda self: _permute(self, *reversed(range(self.dim()))))
    T.mT = property(lambda self: _transpose(self, -2, -1))

    # elementwise functions as methods, plus their in-place forms
    for name, fn in list(M.FUNCS.items()) + [("add", M.add), ("sub", M.sub), ("div", M.div), ("clamp", M.clamp)]:
        setattr(T, name, fn)
        setattr(T, name + "_", _inplace(name))
    T.where = lambda self, condition, other: M.where(condition, self, other)
    for name, fn in M.NO_INPLACE_FUNCS.items():
        setattr(T, name, fn)
    T.clip, T.clip_ = T.clamp, T.clamp_
    T.multiply, T.subtract, T.divide, T.true_divide = T.mul, T.sub, T.div, T.div
    T.absolute, T.negative, T.greater, T.less, T.not_equal = T.abs, T.neg, T.gt, T.lt, T.ne
    T.clamp_min = lambda self, min: M.clamp(self, min=min)  # noqa: A002
    T.clamp_max = lambda self, max: M.clamp(self, max=max)  # noqa: A002
    T.clamp_min_ = lambda self, min: M.clamp(self, min=min, out=self)  # noqa: A002
    T.clamp_max_ = lambda self, max: M.clamp(self, max=max, out=self)  # noqa: A002

    # operators
    for name, dunder in _DUNDER.items():
        setattr(T, f"__{dunder}__", _forward(name))
        if name in _REFLECTED:
            setattr(T, f"__{_REFLECTED[name]}__", _reflected(name))
            setattr(T, f"__i{dunder}__", _inplace(name))
    T.__neg__ = lambda self: M.FUNCS["neg"](self)
    T.__pos__ = lambda self: self
    T.__abs__ = lambda self: M.FUNCS["abs"](self)
    T.__invert__ = _invert


def _invert(self):
    if self.dtype.kind == "f":
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return M.FUNCS["bitwise_not"](self)
