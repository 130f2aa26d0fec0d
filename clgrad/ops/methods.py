"""Tensor methods and operators. Each is a one-line delegation to a function in ``clgrad.ops``."""
from __future__ import annotations

import inspect

import numpy as np

from .. import random
from ..autograd import variable
from ..autograd.graph import needs_graph
from ..tensor import is_tensor
from . import (
    activations,
    calculus,
    conv,
    copy,
    creation,
    distance,
    forms,
    gather,
    indexing,
    joins,
    legacy,
    linalg,
    nnops,
    norms,
    pooling,
    products,
    rearrange,
    reduction,
    scans,
    scans_extra,
    scatter_extra,
    sparse,
    stats,
    stats_extra,
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
_OPERAND = (int, float, complex, bool, np.number, np.bool_)  # numpy scalars too, as PyTorch's operators take them


def _is_operand(x) -> bool:
    # a sparse operand: NotImplemented, so Python asks its reflected method (dense + sparse gives dense)
    return (is_tensor(x) and not x.is_sparse) or isinstance(x, _OPERAND)


def _forward(name):
    fn = getattr(M, name, None) or M.FUNCS[name]
    arrays = name not in ("lt", "le", "gt", "ge")  # PyTorch's ordering operators refuse numpy arrays

    def method(self, other):
        if arrays and isinstance(other, np.ndarray):  # x + array: the array becomes a (cpu) tensor, as in PyTorch
            other = creation.as_tensor(other)
        return fn(self, other) if _is_operand(other) else NotImplemented

    return method


def _reflected(name):
    fn = getattr(M, name, None) or M.FUNCS[name]

    def method(self, other):
        # ``x.__radd__(y)`` with a tensor ``y`` computes ``y + x``, as PyTorch's reflected operators do
        return fn(other, self) if _is_operand(other) else NotImplemented

    return method


def _inplace(name):
    fn = getattr(M, name, None) or M.FUNCS[name]

    def method(self, *args, **kwargs):
        return fn(self, *args, out=self, **kwargs)

    method.__name__ = name + "_"
    return method


# the keyword PyTorch's argument parser gives the size/dims of the variadic view methods
_SIZE_KEYWORD = {"view": "size", "reshape": "shape", "expand": "size", "permute": "dims", "flip": "dims"}


def _positional(fn, signature, args, kwargs) -> tuple:
    """``args`` with ``kwargs`` folded in by ``fn``'s signature, so ``x.flatten(start_dim=1)`` reaches the view
    Function (which takes positional arguments only) as ``(1, -1)``."""
    if not kwargs:
        return args
    name = _SIZE_KEYWORD.get(fn.__name__)
    if name is not None:
        extra = sorted(set(kwargs) - {name}) or ([name] if args else [])
        if extra:
            raise TypeError(f"{fn.__name__}() got an unexpected keyword argument '{extra[0]}'")
        return (kwargs[name],)
    bound = signature.bind(None, *args, **kwargs)
    bound.apply_defaults()
    return bound.args[1:]


def _tracked(fn, function):
    """A view method: plain shape arithmetic, or ``function`` (a view Function) when autograd records."""
    signature = inspect.signature(fn)

    def method(self, *args, **kwargs):
        args = _positional(fn, signature, args, kwargs)
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


def _permute(self, *dims, **kwargs):
    dims = _positional(S.permute, None, dims, kwargs)
    if needs_graph(self):
        return F.Permute.apply(self, V.as_size(dims))
    return S.permute(self, *dims)


def _transpose(self, dim0, dim1, node=None):
    if not needs_graph(self):
        return S.transpose(self, dim0, dim1)
    order = list(range(self.dim()))
    d0, d1 = V.wrap_dim(dim0, self.dim()), V.wrap_dim(dim1, self.dim())
    if order:  # dims 0 and -1 of a 0-d tensor are valid and swap nothing
        order[d0], order[d1] = order[d1], order[d0]
    return (node or F.Transpose).apply(self, tuple(order))


def _t(self):
    """``x.t()``: a 2-D transpose; a 0-D or 1-D tensor comes back as a TBackward0 view of itself, as in PyTorch."""
    if self.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.dim()}D")
    return _transpose(self, 0, min(1, self.dim() - 1) if self.dim() else 0, F.T)


def _matrix_transpose(attr: str, batched: bool = True):
    """``mT``/``mH``/``adjoint()`` (batches of matrices) and ``H`` (matrices only); with real dtypes the conjugate
    is the identity. A 0-D tensor is returned as it is (PyTorch's deprecated identity)."""
    what = "matrices or batches of matrices" if batched else "matrices (2-D tensors)"

    def transposed(self):
        if self.dim() == 0:
            return self
        if self.dim() < 2 or (not batched and self.dim() != 2):
            hint = " For batches of matrices, consider using tensor.mH" if self.dim() > 2 else ""
            raise RuntimeError(f"tensor.{attr} is only supported on {what}. Got {self.dim()}-D tensor.{hint}")
        return _transpose(self, -2, -1)

    return transposed


def _flatten(self, start_dim=0, end_dim=-1):
    """``flatten`` with nothing to merge returns ``self``, as PyTorch's does (no node is recorded)."""
    if self.dim() and V.wrap_dim(start_dim, self.dim()) == V.wrap_dim(end_dim, self.dim()):
        return self
    return _flatten_view(self, start_dim, end_dim)


_flatten_view = _tracked(S.flatten, F.View)


def _flip(self, *dims, **kwargs):
    return rearrange.flip(self, V.as_size(_positional(rearrange.flip, None, dims, kwargs), "flip"))


def _expand(self, *sizes, **kwargs):
    sizes = _positional(S.expand, None, sizes, kwargs)
    if needs_graph(self):
        return F.Expand.apply(self, V.as_size(sizes))
    return S.expand(self, *sizes)


def install(T) -> None:
    variable.install(T)  # grad_fn, backward, hooks
    legacy.install(T)  # Tensor(...) and x.new(...)
    T.__reduce_ex__ = creation.reduce_ex
    for fn in (creation.new_empty, creation.new_zeros, creation.new_ones, creation.new_full, creation.new_tensor,
               copy.to, copy.copy_, copy.clone, copy.contiguous, copy.fill_, copy.zero_):
        setattr(T, fn.__name__, fn)

    for module in (reduction, linalg, random, indexing, gather, joins, rearrange, scans, stats, conv, pooling, nnops, norms):
        module.install(T)
    products.install(T)
    calculus.install(T)
    activations.install(T)  # x.prelu, x.hardshrink
    distance.install(T)  # x.dist
    scatter_extra.install(T)  # scatter_reduce, index_reduce, masked_scatter, *_scatter, unique_consecutive
    scans_extra.install(T)
    stats_extra.install(T)

    # views: raw shape arithmetic, or a Function when autograd records
    for name, fn in [("view", S.view), ("reshape", S.reshape), ("squeeze", S.squeeze), ("unsqueeze", S.unsqueeze)]:
        setattr(T, name, _tracked(fn, F.View))
    T.flatten = _flatten
    for name, fn in [("narrow", S.narrow), ("select", S.select)]:
        setattr(T, name, _tracked(fn, F.Slice))
    T.as_strided = _tracked(S.as_strided, F.AsStrided)
    T.__getitem__ = _getitem
    T.flip = _flip  # x.flip(dims=(0,)) too
    T.permute = _permute
    T.expand = _expand
    T.__setitem__ = S.setitem
    T.transpose = T.swapaxes = T.swapdims = _transpose
    T.t = _t
    T.view_as = lambda self, other: self.view(other.shape)
    T.reshape_as = lambda self, other: self.reshape(other.shape)
    T.expand_as = lambda self, other: _expand(self, other.shape)
    T.T = property(lambda self: _permute(self, *reversed(range(self.dim()))))
    T.mT, T.mH = property(_matrix_transpose("mT")), property(_matrix_transpose("mH"))
    T.H, T.adjoint = property(_matrix_transpose("H", batched=False)), _matrix_transpose("adjoint()")

    # elementwise functions as methods, plus their in-place forms
    for name, fn in list(M.FUNCS.items()) + [("add", M.add), ("sub", M.sub), ("div", M.div), ("clamp", M.clamp)]:
        setattr(T, name, fn)
        setattr(T, name + "_", _inplace(name))
    T.where = lambda self, condition, other: M.where(condition, self, other)
    T.round = lambda self, *, decimals=None: forms.round(self, decimals=decimals)
    T.round_ = lambda self, *, decimals=None: forms.round(self, decimals=decimals, out=self)
    T.pow = lambda self, exponent: forms.pow(self, exponent)
    T.pow_ = lambda self, exponent: forms.pow(self, exponent, out=self)
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
    T.__reversed__ = lambda self: self if self.dim() == 0 else self.flip(0)
    sparse.install(T)  # last: SparseTensor stubs every dense-only method installed above


def _invert(self):
    if self.dtype.kind == "f":
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return M.FUNCS["bitwise_not"](self)
