"""Public reduction ops with PyTorch's signatures, result dtypes and errors: ``clgrad.sum(x, dim=1)``.

Every op checks its arguments, allocates a contiguous result of the input's shape with 1 on the
reduced dims, and makes one ``reduce`` primitive call; dropping the reduced dims is then a free view.

Under autograd each op is a Function whose forward is the raw op. Gradients are broadcast back over the reduced
dims; ties follow PyTorch: ``max(x, dim)`` sends the gradient to the returned index, ``max(x)``/``amax`` share
it evenly among the tied elements.
"""
from __future__ import annotations

import math

from .. import backends
from .. import dtypes as D
from ..autograd.function import Function, variant
from ..autograd.graph import needs_graph
from ..tensor import Tensor, is_tensor
from .creation import arange
from .guard import tensor_first
from .math import FUNCS
from .pointwise import COMPLEX, apply, unsupported
from .views import contiguous_strides, wrap_dim

__all__ = ["sum", "mean", "prod", "max", "min", "amax", "amin", "argmax", "argmin", "all", "any", "nansum", "nanmean"]



class _ReturnType(tuple):
    """``(values, indices)`` as ``torch.return_types.max``: a tuple with named fields."""

    _name = ""

    def __new__(cls, values, indices):
        return tuple.__new__(cls, (values, indices))

    @property
    def values(self):
        return self[0]

    @property
    def indices(self):
        return self[1]

    def __repr__(self) -> str:
        return f"clgrad.return_types.{self._name}(\nvalues={self[0]!r},\nindices={self[1]!r})"


RETURN_TYPES = {name: type(name, (_ReturnType,), {"_name": name, "__slots__": ()}) for name in ("max", "min")}


def _dims(name: str, t, dim, *, tuple_ok: bool = True, empty_is_all: bool = True) -> tuple:
    """Sorted, wrapped reduced dims; None (and, for most ops, ``()``) means every dim."""
    nd = t.dim()
    if dim is None:
        return tuple(range(nd))
    if isinstance(dim, (tuple, list)):
        if not tuple_ok:
            raise TypeError(f"{name}(): argument 'dim' must be int, not {type(dim).__name__}")
        if not dim and empty_is_all:
            return tuple(range(nd))
        dims = [wrap_dim(d, nd) for d in dim]
        for d in dims:
            if dims.count(d) > 1:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        return () if nd == 0 else tuple(sorted(dims))
    d = wrap_dim(dim, nd)
    return () if nd == 0 else (d,)


def _check_nonempty(name: str, t, dims, *, specified: bool, exc=RuntimeError, hint: bool = True) -> None:
    """max-like ops have no identity: reducing zero elements is an error, worded as torch words it.

    ``dims`` are reported as given: torch names amax's dims as the user wrote them, max's wrapped.
    """
    if not specified:
        if t.numel() == 0:
            more = " Specify the reduction dim with the 'dim' argument." if hint else ""
            raise exc(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.{more}")
        return
    for d in dims:
        if t.dim() and t.shape[wrap_dim(d, t.dim())] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def _run(op: str, t, dims: tuple, keepdim: bool, out_dtype: D.dtype, with_idx: bool = False):
    """One ``reduce`` primitive call; returns (values, indices or None) with the reduced dims dropped unless keepdim."""
    if t.dtype.kind == "c":
        raise unsupported(op, t.dtype, t.device)
    kept = tuple(1 if d in dims else n for d, n in enumerate(t.shape))
    out = Tensor._empty(kept, out_dtype, t.device)
    idx = Tensor._empty(kept, D.int64, t.device) if with_idx else None
    backends.get(t.device).reduce(op, t, dims, out, idx)
    if keepdim:
        return out, idx
    shape = tuple(n for d, n in enumerate(t.shape) if d not in dims)
    strides = contiguous_strides(shape)
    return out._view(shape, strides), None if idx is None else idx._view(shape, strides)


def _cast(t, dtype):
    return t if dtype is None or D.as_dtype(dtype) is t.dtype else t.to(D.as_dtype(dtype))


def sum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A001 - torch's name
    """Sum over ``dim`` (int, tuple or None for all); bool and integer inputs give int64.

    >>> clgrad.sum(clgrad.tensor([[1, 2], [3, 4]]), dim=0)  # tensor([4, 6])
    """
    if is_tensor(input) and input.dtype.kind == "c":
        return COMPLEX["sum"](input, dim, keepdim, dtype=dtype)
    if needs_graph(input):
        return Sum.apply(input, dim, keepdim, dtype)
    return _sum(input, dim, keepdim, dtype)


def _sum(input, dim, keepdim, dtype):
    dims = _dims("sum", input, dim)
    input = _cast(input, dtype)
    out_dt = input.dtype if dtype is not None or input.dtype.kind == "f" else D.int64
    return _run("sum", input, dims, keepdim, out_dt)[0]


def mean(input, dim=None, keepdim=False, *, dtype=None):
    """Arithmetic mean over ``dim``; floating inputs only (float16 accumulates in float32)."""
    if is_tensor(input) and input.dtype.kind == "c":
        return COMPLEX["mean"](input, dim, keepdim, dtype=dtype)
    if needs_graph(input):
        return Mean.apply(input, dim, keepdim, dtype)
    return _mean(input, dim, keepdim, dtype)


def _mean(input, dim, keepdim, dtype):
    dims = _dims("mean", input, dim)
    dt = input.dtype if dtype is None else D.as_dtype(dtype)
    if dt.kind != "f":
        which = "Input" if dtype is None else "Optional"
        raise RuntimeError(
            f"mean(): could not infer output dtype. {which} dtype must be either a floating point or complex dtype. "
            f"Got: {dt.scalar_name}"
        )
    input = _cast(input, dtype)
    total = _run("sum", input, dims, keepdim, D.float32 if dt in D.HALF_FLOATS else dt)[0]
    count = math.prod(input.shape[d] for d in dims)
    out = total if dt is total.dtype else _empty_like(total, dt)
    return apply("div", total, count, out=out)  # 0 / 0 makes an empty mean nan, as in torch


def _empty_like(t, dt):
    return Tensor._empty(t.shape, dt, t.device)


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """``sum`` treating NaN as zero (integers: plain ``sum``); NaNs get gradient 0."""
    if input.dtype.kind == "f":
        input = input.where(~input.isnan(), 0.0)
    return sum(input, dim, keepdim, dtype=dtype)


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """``mean`` of the non-NaN elements (NaN where every element is NaN)."""
    if (input.dtype if dtype is None else D.as_dtype(dtype)).kind != "f":
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{(input.dtype if dtype is None else D.as_dtype(dtype)).scalar_name}")
    return nansum(input, dim, keepdim, dtype=dtype) / sum(~input.isnan(), dim, keepdim)


def prod(input, dim=None, keepdim=False, *, dtype=None):
    """Product over ``dim`` (an int) or of all elements; bool and integer inputs give int64."""
    if needs_graph(input):
        return Prod.apply(input, dim, keepdim, dtype)
    return _prod(input, dim, keepdim, dtype)


def _prod(input, dim, keepdim, dtype):
    dims = _dims("prod", input, dim, tuple_ok=False)
    input = _cast(input, dtype)
    out_dt = input.dtype if dtype is not None or input.dtype.kind == "f" else D.int64
    return _run("prod", input, dims, keepdim, out_dt)[0]


def _max_min(name: str, input, dim, keepdim, other):
    if other is not None or is_tensor(dim):
        return FUNCS["maximum" if name == "max" else "minimum"](input, dim if other is None else other)
    if needs_graph(input):
        if dim is None:
            return MaxMinAll.apply(input, name, None, False)
        return RETURN_TYPES[name](*MaxMinDim.apply(input, name, dim, keepdim))
    return _max_min_raw(name, input, dim, keepdim)


def _max_min_raw(name: str, input, dim, keepdim):
    if dim is None:
        if keepdim:
            raise TypeError(f"{name}() received an invalid combination of arguments - got (keepdim=bool, ): "
                            f"keepdim needs dim")
        _check_nonempty(name, input, (), specified=False)
        return _run(name, input, tuple(range(input.dim())), False, input.dtype)[0]
    dims = _dims(name, input, dim, tuple_ok=False)
    _check_nonempty(name, input, dims, specified=True)
    return RETURN_TYPES[name](*_run(name, input, dims, keepdim, input.dtype, with_idx=True))


def max(input, dim=None, keepdim=False, *, other=None):  # noqa: A001 - torch's name
    """``max(x)``: the largest value; ``max(x, dim)``: ``(values, indices)`` (first occurrence, NaN wins);
    ``max(x, y)``: elementwise maximum."""
    return _max_min("max", input, dim, keepdim, other)


def min(input, dim=None, keepdim=False, *, other=None):  # noqa: A001 - torch's name
    """``min(x)``, ``min(x, dim)`` -> ``(values, indices)``, ``min(x, y)``: as ``max``."""
    return _max_min("min", input, dim, keepdim, other)


def _amax_amin(name: str, input, dim, keepdim):
    if needs_graph(input):
        return MaxMinAll.apply(input, name, dim, keepdim)
    return _amax_amin_raw(name, input, dim, keepdim)


def _amax_amin_raw(name: str, input, dim, keepdim):
    dims = _dims(name, input, dim)
    _check_nonempty(name, input, _as_tuple(dim), specified=bool(_as_tuple(dim)))
    return _run(name[1:], input, dims, keepdim, input.dtype)[0]


def _as_tuple(dim) -> tuple:
    return () if dim is None else tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)


def amax(input, dim=(), keepdim=False):
    """Largest values over ``dim`` (int or tuple; ``()`` means all), NaN propagating; no indices."""
    return _amax_amin("amax", input, dim, keepdim)


def amin(input, dim=(), keepdim=False):
    """Smallest values over ``dim`` (int or tuple; ``()`` means all), NaN propagating; no indices."""
    return _amax_amin("amin", input, dim, keepdim)


def _arg(name: str, input, dim, keepdim):
    dims = _dims(name, input, dim, tuple_ok=False)
    if input.dtype is D.bool:
        raise RuntimeError(f"{name}(): does not support bool input")
    _check_nonempty(name, input, dims, specified=dim is not None, exc=IndexError, hint=False)
    # dim=None reduces every dim in order, so the index is the row-major position in the flattened input
    return _run(name[3:], input, dims, keepdim, input.dtype, with_idx=True)[1]


def argmax(input, dim=None, keepdim=False):
    """Index of the largest value (first occurrence; a NaN wins) over ``dim``, or in the flattened input."""
    return _arg("argmax", input, dim, keepdim)


def argmin(input, dim=None, keepdim=False):
    """Index of the smallest value (first occurrence; a NaN wins) over ``dim``, or in the flattened input."""
    return _arg("argmin", input, dim, keepdim)


def _all_any(name: str, input, dim, keepdim):
    # torch: dim=() reduces nothing here, unlike sum; uint8 inputs keep uint8 results
    dims = _dims(name, input, dim, empty_is_all=False)
    return _run(name, input, dims, keepdim, D.uint8 if input.dtype is D.uint8 else D.bool)[0]


def all(input, dim=None, keepdim=False):  # noqa: A001 - torch's name
    """Whether every element over ``dim`` (int, tuple or None) is nonzero."""
    return _all_any("all", input, dim, keepdim)


def any(input, dim=None, keepdim=False):  # noqa: A001 - torch's name
    """Whether any element over ``dim`` (int, tuple or None) is nonzero."""
    return _all_any("any", input, dim, keepdim)


# ---- autograd: each reduction a Function whose forward is the raw op above ----------------------

_apply = Function.apply.__func__


# PyTorch names a reduction over all elements and one over ``dim`` apart (``SumBackward0`` /
# ``SumBackward1``), and ``min`` apart from ``max``: ``variant`` gives the class with the other node name.
def _over_dim(dim) -> bool:
    return dim is not None and dim != () and dim != []


def _dims_of(x, dim) -> tuple:
    if x.dim() == 0:  # dim 0 / -1 of a 0-d tensor is valid in torch and reduces nothing
        return ()
    if dim is None or dim == ():
        return tuple(range(x.dim()))
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    return tuple(sorted(wrap_dim(d, x.dim()) for d in dims))


def _unreduce(grad, shape, dims, keepdim):
    """Broadcast a reduced gradient back to ``shape``."""
    if not keepdim:
        for d in dims:
            grad = grad.unsqueeze(d)
    return grad.expand(shape)


class Sum(Function):
    node_name = "SumBackward0"

    @classmethod
    def apply(cls, x, dim, keepdim, dtype):
        return _apply(variant(cls, "SumBackward1") if _over_dim(dim) else cls, x, dim, keepdim, dtype)

    @staticmethod
    def forward(ctx, x, dim, keepdim, dtype):
        ctx.meta = (x.shape, x.dtype, _dims_of(x, dim), keepdim)
        return _sum(x, dim, keepdim, dtype)

    @staticmethod
    def backward(ctx, grad):
        shape, dt, dims, keepdim = ctx.meta
        return _unreduce(grad, shape, dims, keepdim).to(dt), None, None, None


class Mean(Function):
    node_name = "MeanBackward0"

    @classmethod
    def apply(cls, x, dim, keepdim, dtype):
        return _apply(variant(cls, "MeanBackward1") if _over_dim(dim) else cls, x, dim, keepdim, dtype)

    @staticmethod
    def forward(ctx, x, dim, keepdim, dtype):
        dims = _dims_of(x, dim)
        count = 1
        for d in dims:
            count *= x.shape[d]
        ctx.meta = (x.shape, x.dtype, dims, keepdim, count)
        return _mean(x, dim, keepdim, dtype)

    @staticmethod
    def backward(ctx, grad):
        shape, dt, dims, keepdim, count = ctx.meta
        return (_unreduce(grad, shape, dims, keepdim) / count).to(dt), None, None, None


class Prod(Function):
    node_name = "ProdBackward0"

    @classmethod
    def apply(cls, x, dim, keepdim, dtype):
        return _apply(variant(cls, "ProdBackward1") if dim is not None else cls, x, dim, keepdim, dtype)

    @staticmethod
    def forward(ctx, x, dim, keepdim, dtype):
        ctx.meta = (_dims_of(x, dim), keepdim)
        ctx.save_for_backward(x)
        return _prod(x, dim, keepdim, dtype)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        dims, keepdim = ctx.meta
        # zero-safe: the product of the *other* elements, without dividing by zero
        nonzero = x != 0
        x1 = x.where(nonzero, 1.0)
        p1 = x1.prod(dim=dims[0], keepdim=True) if len(dims) == 1 else x1.reshape(-1).prod().reshape([1] * x.dim())
        zeros = (~nonzero).sum(dim=dims, keepdim=True)
        local = (p1 / x1).where(zeros == 0, 0.0).where(nonzero, p1.where(zeros == 1, 0.0).expand(x.shape))
        return _unreduce(grad, x.shape, dims, keepdim) * local, None, None, None


class MaxMinDim(Function):
    """``max(x, dim)`` / ``min(x, dim)``: values and indices; the gradient goes to the indices."""

    node_name = "MaxBackward0"

    @classmethod
    def apply(cls, x, name, dim, keepdim):
        return _apply(variant(cls, "MinBackward0") if name == "min" else cls, x, name, dim, keepdim)

    @staticmethod
    def forward(ctx, x, name, dim, keepdim):
        values, indices = _max_min_raw(name, x, dim, keepdim)
        ctx.meta = (x.shape, wrap_dim(dim, x.dim()), keepdim and x.dim() > 0)
        ctx.save_for_backward(indices)
        ctx.mark_non_differentiable(indices)
        return values, indices

    @staticmethod
    def backward(ctx, grad, _grad_indices=None):
        (indices,) = ctx.saved_tensors
        shape, d, keepdim = ctx.meta
        if not shape:  # a 0-d input: the one element is the extreme
            return grad.reshape(()), None, None, None
        if not keepdim:
            grad, indices = grad.unsqueeze(d), indices.unsqueeze(d)
        positions = arange(shape[d], device=grad.device).reshape([-1 if i == d else 1 for i in range(len(shape))])
        return grad * (positions == indices), None, None, None


class MaxMinAll(Function):
    """``max(x)``, ``amax``/``amin``: the gradient is shared evenly among tied extreme elements."""

    node_name = "AmaxBackward0"

    @classmethod
    def apply(cls, x, name, dim, keepdim):
        node = {"max": "MaxBackward1", "min": "MinBackward1", "amin": "AminBackward0"}.get(name)
        return _apply(variant(cls, node) if node else cls, x, name, dim, keepdim)

    @staticmethod
    def forward(ctx, x, name, dim, keepdim):
        out = _max_min_raw(name, x, None, False) if name in ("max", "min") else _amax_amin_raw(name, x, dim, keepdim)
        dims = _dims_of(x, None if name in ("max", "min") else dim)
        ctx.meta = (dims, keepdim and name not in ("max", "min"))
        ctx.nan_aware = name in ("max", "min")
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        dims, keepdim = ctx.meta
        extreme = _unreduce(out, x.shape, dims, keepdim)
        hit = x == extreme
        if ctx.nan_aware:  # max()/min() of all elements: a NaN result shares its gradient among the NaNs
            hit = hit | (x.isnan() & extreme.isnan())
        count = hit.sum(dim=dims, keepdim=True)
        return _unreduce(grad, x.shape, dims, keepdim) * hit / count, None, None, None


def install(T) -> None:
    """Attach this module's ops to Tensor as methods."""
    for name in __all__:
        setattr(T, name, globals()[name])


# a list or a number where a tensor belongs raises PyTorch's TypeError (see guard.py)
tensor_first(globals(), __all__)
