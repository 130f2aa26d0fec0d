"""Indexing along one dim: ``gather``/``scatter``/``scatter_add``, ``take_along_dim``, ``index_select``/
``index_add``/``index_fill``; and ``nonzero``/``argwhere``/``where(cond)``.

Each op reduces to one of the two backend primitives (see ``backends/cpu_index.py``), ``index_gather`` and
``index_put``, through the helpers of ``indexing.py``. Boolean masks become index tensors through ``nonzero``,
the one op whose result size depends on the data (so it reads a count back from the device). Each
differentiable op is a ``Function`` (at the end of the module) with PyTorch's node name, its backward written in
clgrad ops.
"""
from __future__ import annotations

from numbers import Integral

from .. import dtypes as D
from ..autograd.function import Function
from ..autograd.graph import inplace, needs_graph
from ..tensor import is_tensor
from . import indexing as I
from . import pointwise as P
from . import views as V
from .creation import check_fill_value, zeros
from .guard import tensor_first
from .math import where as choose

__all__ = ["gather", "scatter", "scatter_add", "index_select", "index_add", "index_fill", "nonzero", "argwhere",
           "take_along_dim", "where"]


# ---- gather / scatter -----------------------------------------------------------------------------


def _index_arg(name: str, index, long_only: bool) -> None:
    if not is_tensor(index):
        raise TypeError(f"{name}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index.dtype is not D.int64 and (long_only or index.dtype is not D.int32):
        raise RuntimeError(f"{name}(): Expected dtype {'int64' if long_only else 'int32/int64'} for index")


def _along(x, dim: int, index, src=None):
    """gather/scatter's index space: ``index``'s shape; ``x`` read or written at ``index`` along ``dim``."""
    x1, i1 = I._atleast1(x), I._atleast1(index)
    strides = list(x1._strides)
    strides[dim] = 0
    base = I._restride(x1, i1._shape, strides)
    value = src
    if is_tensor(src):
        s1 = I._atleast1(src.clone() if src._storage is x._storage else src)
        value = I._restride(s1, i1._shape, s1._strides)
    return base, [(i1, x1._shape[dim], x1._strides[dim])], value


def _gather(x, dim: int, index):
    base, idx, _ = _along(x, dim, index)
    out = I._gather_raw(base, idx, I._bounds(RuntimeError, dim), wrap=False)
    return out if index.dim() else I._restride(out, (), ())


def gather(input, dim, index, *, sparse_grad=False):  # noqa: A002
    """Values of ``input`` along ``dim`` at ``index``: ``out[i][j] = input[i][index[i][j]]`` for dim=1."""
    if is_tensor(index) and index.numel() == 0 and not index.is_floating_point():
        # PyTorch checks neither the dtype (uint8 passes) nor the rank of an empty integer index
        V.wrap_dim(dim, input.dim())
        return input.reshape(-1)[:0].reshape(index.shape)
    _index_arg("gather", index, long_only=False)
    d = V.wrap_dim(dim, input.dim())
    if max(index.dim(), 1) != max(input.dim(), 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for k in range(index.dim()):
        if k != d and index._shape[k] > input._shape[k]:
            raise RuntimeError(
                f"Size does not match at dimension {k} expected index {list(index._shape)} to be no larger than "
                f"self {list(input._shape)} apart from dimension {d}"
            )
    index = index.to(P.common_device([input, index]), D.int64)
    if needs_graph(input):
        return Gather.apply(input, d, index)
    return _gather(input, d, index)


def _scatter_checks(name, x, d, index, src) -> None:
    _index_arg("scatter", index, long_only=False)  # PyTorch names scatter() for the whole family here
    if is_tensor(src) and src.dtype is not x.dtype:
        raise RuntimeError(f"{name}(): Expected self.dtype to be equal to src.dtype")
    for what, t in (("self", x), ("src", src)):
        if is_tensor(t) and max(index.dim(), 1) != max(t.dim(), 1):
            raise RuntimeError(f"Index tensor must have the same number of dimensions as {what} tensor")
    too_big = any(index._shape[k] > x._shape[k] for k in range(index.dim()) if k != d)
    if is_tensor(src):
        too_big = too_big or any(index._shape[k] > src._shape[k] for k in range(index.dim()))
        if too_big:
            raise RuntimeError(f"Expected index {list(index._shape)} to be no larger than self {list(x._shape)} apart "
                               f"from dimension {d} and to be no larger size than src {list(src._shape)}")
    elif too_big:
        raise RuntimeError(f"Expected index {list(index._shape)} to be no larger than self {list(x._shape)} apart "
                           f"from dimension {d}")


def _scatter_raw(x, dim: int, index, src, mode: str) -> None:
    V.check_no_internal_overlap(x)
    base, idx, value = _along(x, dim, index, src)
    if not is_tensor(value):
        value = I._value_over(x, value, (), str)
    I._put_raw(base, value, idx, mode, I._bounds(RuntimeError, dim), wrap=False)


_REDUCE_MODES = {None: "store", "add": "add", "multiply": "mul"}


def _scatter(name, x, dim, index, src, reduce, in_place: bool):
    if reduce not in _REDUCE_MODES:
        raise RuntimeError("reduce argument must be either add or multiply.")
    d = V.wrap_dim(dim, x.dim())
    _scatter_checks(name, x, d, index, src)
    if index.numel() == 0:
        return x if in_place else x.clone()
    index = index.to(x.device, D.int64)  # an int32 index is accepted, as in PyTorch
    if is_tensor(src):
        P.common_device([x, index, src])
    fn = ScatterAdd if name == "scatter_add" else Scatter if is_tensor(src) else ScatterValue
    if needs_graph(x, src):
        if in_place:
            return inplace(x, lambda old: fn.apply(old, d, index, src, reduce))
        return fn.apply(x, d, index, src, reduce)
    out = x if in_place else x.clone()
    _scatter_raw(out, d, index, src, _REDUCE_MODES[reduce])
    return out


def _scatter_src(src, value):
    src = value if src is None else src
    if src is None:
        raise TypeError("scatter() missing required argument 'src' (or 'value')")
    return src


def scatter(input, dim, index, src=None, *, value=None, reduce=None):  # noqa: A002
    """A copy of ``input`` with ``src`` (a tensor or a number) written along ``dim`` at ``index``;
    ``reduce='add'`` / ``'multiply'`` combine with what is there instead."""
    return _scatter("scatter", input, dim, index, _scatter_src(src, value), reduce, in_place=False)


def scatter_(input, dim, index, src=None, *, value=None, reduce=None):  # noqa: A002
    return _scatter("scatter", input, dim, index, _scatter_src(src, value), reduce, in_place=True)


def scatter_add(input, dim, index, src):  # noqa: A002
    """A copy of ``input`` with ``src`` added along ``dim`` at ``index``; duplicate indices all count."""
    return _scatter("scatter_add", input, dim, index, src, "add", in_place=False)


def scatter_add_(input, dim, index, src):  # noqa: A002
    return _scatter("scatter_add", input, dim, index, src, "add", in_place=True)


def take_along_dim(input, indices, dim=None):  # noqa: A002
    """``gather`` after broadcasting ``input`` and ``indices`` against each other outside ``dim``; negative
    indices count from the end. Without ``dim``, both are flattened."""
    if not is_tensor(indices) or indices.dtype is not D.int64:
        got = indices.dtype.scalar_name if is_tensor(indices) else type(indices).__name__
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got {got}")
    if dim is None:
        input, indices, d = input.reshape(-1), indices.reshape(-1), 0
    else:
        if input.dim() != indices.dim():
            raise RuntimeError(
                "torch.take_along_dim(): input and indices should have the same number of dimensions, but got "
                f"{input.dim()} dimensions for input, and {indices.dim()} dimensions for indices"
            )
        d = V.wrap_dim(dim, input.dim())
        if input.dim():
            isz, xsz = list(input._shape), list(indices._shape)
            isz[d], xsz[d] = indices._shape[d], input._shape[d]
            indices = indices.expand(V.broadcast_shapes(isz, indices._shape))
            input = input.expand(V.broadcast_shapes(xsz, input._shape))
    size = input._shape[d] if input.dim() else 1
    indices = P.apply("where", indices < 0, indices + size, indices)
    return gather(input, d, indices)


# ---- along one dim with a vector of indices ------------------------------------------------------


def _vector_index(name: str, index) -> None:
    if not is_tensor(index):
        raise TypeError(f"{name}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index.dim() > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector")
    if index.dtype not in (D.int64, D.int32):
        if name == "index_add_":
            raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index but got: {index.dtype.scalar_name}")
        raise RuntimeError(f"{name}(): Expected dtype int32 or int64 for index")


def _slab(x, dim: int, index):
    """index_select/index_add/index_fill's index space: ``x``'s shape with ``dim`` as long as ``index``."""
    x1, i1 = I._atleast1(x), I._atleast1(index).reshape(-1)
    shape, strides, istr = list(x1._shape), list(x1._strides), [0] * x1.dim()
    shape[dim], strides[dim], istr[dim] = i1._shape[0], 0, i1._strides[0]
    return shape, I._restride(x1, shape, strides), [(I._restride(i1, shape, istr), x1._shape[dim], x1._strides[dim])]


def _index_select(x, dim: int, index):
    _, base, idx = _slab(x, dim, index)
    out = I._gather_raw(base, idx, I._bounds(IndexError, dim), wrap=False)
    return out if x.dim() else I._restride(out, (), ())


def index_select(input, dim, index):  # noqa: A002
    """The entries of ``input`` at ``index`` (a vector) along ``dim``: ``x.index_select(0, rows)``."""
    _vector_index("index_select", index)
    d = V.wrap_dim(dim, input.dim())
    if input.dim() == 0 and index.numel() != 1:
        raise IndexError(f"index_select(): Index to scalar can have only 1 value, got {index.numel()} value(s)")
    index = index.to(P.common_device([input, index]), D.int64)
    if needs_graph(input):
        return IndexSelect.apply(input, d, index)
    return _index_select(input, d, index)


def _index_add_checks(x, d: int, index, source) -> None:
    _vector_index("index_add_", index)
    if source.dtype is not x.dtype:
        raise RuntimeError(f"index_add_(): self ({x.dtype.scalar_name}) and source ({source.dtype.scalar_name}) "
                           "must have the same scalar type")
    count = source._shape[d] if source.dim() else 1
    if index.numel() != count:
        raise RuntimeError(f"index_add_(): Number of indices ({index.numel()}) should be equal to source.size(dim): "
                           f"({count}), for dim: {d}")
    for k in range(x.dim()):
        if k != d and (source.dim() != x.dim() or source._shape[k] != x._shape[k]):
            raise RuntimeError("index_add_(): Source/destination tensor must have same slice shapes. Destination slice "
                               f"shape: {list(x._shape)} and source slice shape: {list(source._shape)} at dimension {k}.")


def _index_add_raw(x, dim: int, index, source) -> None:
    V.check_no_internal_overlap(x)
    shape, base, idx = _slab(x, dim, index)
    value = I._value_over(x, I._atleast1(source), shape, str)
    # PyTorch's cpu kernel raises IndexError for a 0-d or 1-d self and RuntimeError for more dims
    I._put_raw(base, value, idx, "add", I._bounds(IndexError if x.dim() <= 1 else RuntimeError, dim), wrap=False)


def _index_add(x, dim, index, source, alpha, in_place: bool):
    d = V.wrap_dim(dim, x.dim())
    _index_add_checks(x, d, index, source)
    index = index.to(P.common_device([x, index, source]), D.int64)
    if alpha != 1:
        if source.dtype.kind != "f" and not isinstance(alpha, Integral):
            raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
        source = source * alpha
    if needs_graph(x, source):
        if in_place:
            return inplace(x, lambda old: IndexAdd.apply(old, d, index, source))
        return IndexAdd.apply(x, d, index, source)
    out = x if in_place else x.clone()
    _index_add_raw(out, d, index, source)
    return out


def index_add(input, dim, index, source, *, alpha=1):  # noqa: A002
    """A copy of ``input`` with ``alpha * source`` added at ``index`` along ``dim``; duplicates all count."""
    return _index_add(input, dim, index, source, alpha, in_place=False)


def index_add_(input, dim, index, source, *, alpha=1):  # noqa: A002
    return _index_add(input, dim, index, source, alpha, in_place=True)


def _index_fill_raw(x, dim: int, index, value) -> None:
    V.check_no_internal_overlap(x)
    shape, base, idx = _slab(x, dim, index)
    I._put_raw(base, I._value_over(x, value, shape, str), idx, "store", I._bounds(IndexError, dim))


def _index_fill(x, dim, index, value, in_place: bool):
    if is_tensor(index) and index.dtype is not D.int64:  # unlike index_add/index_select, int64 only (PyTorch's)
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    _vector_index("index_fill_", index)
    if is_tensor(value) and value.dim():
        raise IndexError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with {value.dim()} "
                         "dimension(s).")
    check_fill_value(value, x.dtype)
    d = V.wrap_dim(dim, x.dim())
    index = index.to(x.device, D.int64)
    if needs_graph(x, value):
        if in_place:
            return inplace(x, lambda old: IndexFill.apply(old, d, index, value))
        return IndexFill.apply(x, d, index, value)
    out = x if in_place else x.clone()
    _index_fill_raw(out, d, index, value)
    return out


def index_fill(input, dim, index, value):  # noqa: A002
    """A copy of ``input`` with the entries at ``index`` along ``dim`` set to ``value`` (negative indices wrap)."""
    return _index_fill(input, dim, index, value, in_place=False)


def index_fill_(input, dim, index, value):  # noqa: A002
    return _index_fill(input, dim, index, value, in_place=True)


def nonzero(input, *, as_tuple=False):  # noqa: A002
    """Coordinates of the nonzero elements, one row each (``as_tuple``: one 1-D tensor per dim)."""
    coords = I._nonzero_raw(input)
    if not as_tuple:
        return coords
    if input.dim() == 0:  # a 0-dim tensor counts as one element here
        return (zeros(coords._shape[0], dtype=D.int64, device=input.device),)
    return tuple(I._restride(coords, coords._shape[:1], coords._strides[:1], coords._offset + d)
                 for d in range(input.dim()))


def argwhere(input):  # noqa: A002
    """``nonzero(input)``: one row of coordinates per nonzero element."""
    return nonzero(input)


def where(condition, input=None, other=None):  # noqa: A002
    """``where(cond)`` is ``nonzero(cond, as_tuple=True)``; ``where(cond, x, y)`` picks elementwise."""
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    return choose(condition, input, other)


# ---- autograd: one Function per op, with PyTorch's node names; backward in clgrad ops (double backward works)


def _pad_to(g, shape):
    """``g`` in the top corner of zeros of ``shape`` (scatter's src may be larger than its index)."""
    if tuple(g._shape) == tuple(shape):
        return g
    z = I._zeros(shape, g)
    z[tuple(slice(0, n) for n in g._shape)] = g
    return z


class Gather(Function):
    node_name = "GatherBackward0"

    @staticmethod
    def forward(ctx, x, dim, index):
        ctx.meta = (x._shape, dim)
        ctx.save_for_backward(index)
        return _gather(x, dim, index)

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        shape, dim = ctx.meta
        return scatter_add(I._zeros(shape, grad), dim, index, grad), None, None


class Scatter(Function):
    node_name = "ScatterBackward0"

    @staticmethod
    def forward(ctx, x, dim, index, src, reduce):
        ctx.meta = (dim, reduce, src._shape if is_tensor(src) else None)
        ctx.save_for_backward(index)
        out = x.clone()
        _scatter_raw(out, dim, index, src, _REDUCE_MODES[reduce])
        return out

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        dim, reduce, src_shape = ctx.meta
        if reduce == "multiply":
            raise NotImplementedError("the derivative of scatter with reduce='multiply' is not implemented")
        gx = gsrc = None
        if ctx.needs_input_grad[0]:
            gx = grad if reduce == "add" else scatter(grad, dim, index, 0)
        if src_shape is not None and ctx.needs_input_grad[3]:
            gsrc = _pad_to(gather(grad, dim, index), src_shape)
        return gx, None, None, gsrc, None


class ScatterValue(Scatter):
    node_name = "ScatterBackward1"


class ScatterAdd(Scatter):
    node_name = "ScatterAddBackward0"


class IndexSelect(Function):
    node_name = "IndexSelectBackward0"

    @staticmethod
    def forward(ctx, x, dim, index):
        ctx.meta = (x._shape, dim)
        ctx.save_for_backward(index)
        return _index_select(x, dim, index)

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        shape, dim = ctx.meta
        return index_add(I._zeros(shape, grad), dim, index, grad.reshape(grad._shape or (1,))), None, None


class IndexAdd(Function):
    node_name = "IndexAddBackward0"

    @staticmethod
    def forward(ctx, x, dim, index, source):
        ctx.meta = (dim, source._shape)
        ctx.save_for_backward(index)
        out = x.clone()
        _index_add_raw(out, dim, index, source)
        return out

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        dim, src_shape = ctx.meta
        gsrc = index_select(grad, dim, index).reshape(src_shape) if ctx.needs_input_grad[3] else None
        return grad, None, None, gsrc


class IndexFill(Function):
    node_name = "IndexFillBackward0"

    @staticmethod
    def forward(ctx, x, dim, index, value):
        ctx.dim = dim
        ctx.save_for_backward(index)
        out = x.clone()
        _index_fill_raw(out, dim, index, value)
        return out

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        gv = None
        if ctx.needs_input_grad[3]:  # each filled entry once, however often its index repeats
            gv = (grad * index_fill(I._zeros(grad._shape, grad), ctx.dim, index, 1)).sum()
        return index_fill(grad, ctx.dim, index, 0), None, None, gv


def install(T) -> None:
    """Attach this module's ops to Tensor as methods."""
    for fn in (gather, scatter, scatter_, scatter_add, scatter_add_, index_select, index_add, index_add_,
               index_fill, index_fill_, nonzero, argwhere, take_along_dim):
        setattr(T, fn.__name__, fn)


# a list or a number where a tensor belongs raises PyTorch's TypeError (see guard.py)
tensor_first(globals(), __all__)
