"""Indexing ops, forward and backward: advanced ``__getitem__``/``__setitem__``, ``gather``/``scatter``,
``index_select``/``index_add``/``index_put``/``index_fill``, ``masked_fill``/``masked_select``,
``nonzero``/``where(cond)`` and ``take_along_dim``.

Each op reduces to one of two backend primitives (see ``backends/cpu_index.py``): ``index_gather`` and
``index_put``, which see the data tensor restrided over an *index space* plus int64 index tensors restrided
over the same space. Boolean masks become index tensors through ``nonzero``, the one op here whose result
size depends on the data (so it reads a count back from the device).
"""
from __future__ import annotations

import warnings
from numbers import Integral, Number

import numpy as np

from .. import backends
from .. import dtypes as D
from ..autograd.graph import inplace, needs_graph
from ..backends.cpu import cast, view_of
from ..tensor import Tensor
from . import index_grad as G
from . import pointwise as P
from . import views as V
from .creation import check_fill_value, tensor, zeros
from .guard import tensor_first, user_stacklevel
from .math import where as choose

__all__ = ["gather", "scatter", "scatter_add", "index_select", "index_add", "index_put", "index_put_",
           "index_fill", "masked_fill", "masked_select", "nonzero", "argwhere", "take_along_dim", "where"]

_INDEX_TYPES = "tensors used as indices must be long, int, byte or bool tensors"
_UINT8_MASK = "indexing with dtype clgrad.uint8 is now deprecated, please use a dtype clgrad.bool instead."
_SEQUENCE = ("Using a non-tuple sequence for multidimensional indexing is deprecated; use x[tuple(seq)] instead of "
             "x[seq]. In a future release this will be interpreted as tensor index, x[clgrad.tensor(seq)].")


def _tensor_cls():
    return Tensor


def _restride(t, shape, strides, offset=None):
    """Bare metadata over ``t``'s memory (no autograd, no base): what the backend primitives read."""
    return _tensor_cls()._make(t._storage, t.dtype, tuple(shape), tuple(strides),
                               t._offset if offset is None else offset)


def _atleast1(t):
    return t if t.dim() else _restride(t, (1,), (1,))


def _zeros(shape, like):
    return zeros(tuple(shape), dtype=like.dtype, device=like.device)


# ---- the two primitives, with bounds errors -----------------------------------------------------


def _bounds(exc, dim=None):
    """The error for an out-of-range index: ``dim`` is the dim PyTorch names, else the index tensor's number."""
    def make(k, value, size):
        return exc(f"index {value} is out of bounds for dimension {k if dim is None else dim} with size {size}")

    return make


def _raise_bad(bad, idx, err) -> None:
    if bad is not None:
        k, value = bad
        raise err(k, value, idx[k][1])


def _gather_raw(base, idx, err, wrap: bool = True, checked: bool = True):
    """A new contiguous tensor of ``base``'s shape: ``base`` read through the index tensors ``idx``."""
    out = _tensor_cls()._empty(base._shape, base.dtype, base.device)
    _raise_bad(backends.get(base.device).index_gather(out, base, idx, wrap, checked), idx, err)
    return out


def _put_raw(base, value, idx, mode: str, err, wrap: bool = True, checked: bool = True) -> None:
    bad = backends.get(base.device).index_put(base, value, idx, mode, wrap, checked)
    base._storage.version += 1  # even on an error: a device has already written the valid indices
    _raise_bad(bad, idx, err)


def _value_over(dst, value, shape, mismatch):
    """``value`` as the put primitive takes it over the index space ``shape``: a numpy scalar of dst's dtype,
    or a tensor view broadcast over ``shape`` (a snapshot when it shares dst's memory)."""
    if P.is_tensor(value) and value.device != dst.device:
        if value.dim() == 0 and value.device.type == "cpu":
            value = view_of(value)
        else:
            value = value.to(dst.device)
    if not P.is_tensor(value):
        return cast(np.array(value), dst.dtype)[()]
    if value.dtype is not dst.dtype:  # the kernels move raw elements of dst's size
        value = value.to(dst.dtype)
    elif value._storage is dst._storage:
        value = value.clone()
    try:
        vshape, vstrides = V.expand_strides(value._shape, value._strides, shape)
    except RuntimeError:
        raise RuntimeError(mismatch(value._shape)) from None
    return _restride(value, vshape, vstrides)


# ---- index tensors --------------------------------------------------------------------------------


def _as_index(x, item):
    """An index entry as a tensor on ``x``'s device: lists and arrays convert, int32 widens to int64."""
    if not P.is_tensor(item):
        item = tensor(item, device=x.device)
        if item.numel() == 0 and item.dtype.kind == "f":  # x[[]] selects nothing
            item = item.to(D.int64)
    if item.device != x.device and item.device.type != "cpu":
        raise RuntimeError(f"indices should be either on cpu or on the same device as the indexed tensor ({x.device})")
    if item.dtype in (D.bool, D.uint8):
        return item.to(x.device)
    if item.dtype not in (D.int64, D.int32):
        raise IndexError(_INDEX_TYPES)
    return item.to(x.device, D.int64)


def _nonzero_raw(t):
    """(count, ndim) int64 coordinates of ``t``'s nonzero elements."""
    Tensor = _tensor_cls()
    return backends.get(t.device).nonzero(t, lambda n: Tensor._empty((n, t.dim()), D.int64, t.device))


def _check_mask(x, mask, d: int) -> None:
    for j, n in enumerate(mask._shape):
        if d + j >= x.dim():
            raise IndexError(f"too many indices for tensor of dimension {x.dim()}")
        if n != x._shape[d + j]:
            raise IndexError(
                f"The shape of the mask {list(mask._shape)} at index {j} does not match the shape of the indexed "
                f"tensor {list(x._shape)} at index {d + j}"
            )


def _expand_indices(x, indices):
    """PyTorch's expandTensors: one int64 tensor or None per dim of ``x``; a k-dim bool mask (one entry)
    becomes the k columns of its nonzero coordinates. Also says whether any index came from the user
    (indices made by nonzero need no bounds check)."""
    out, checked = [], False
    for item in indices:
        if item is None:
            out.append(None)
            continue
        item = _as_index(x, item)
        if item.dtype is D.int64:
            out.append(item)
            checked = True
            continue
        if item.dtype is D.uint8:
            warnings.warn(_UINT8_MASK, UserWarning, stacklevel=user_stacklevel())
        if item.dim() == 0:
            raise NotImplementedError("a 0-dim boolean index is only supported through x[...] indexing")
        _check_mask(x, item, len(out))
        coords = _nonzero_raw(item)
        out += [_restride(coords, coords._shape[:1], coords._strides[:1], j) for j in range(item.dim())]
    if len(out) > x.dim():
        raise IndexError(f"too many indices for tensor of dimension {x.dim()}")
    return out + [None] * (x.dim() - len(out)), checked


def _plan(x, indices):
    """The index space of ``x[indices]`` (aligned int64 tensors / None) as numpy and PyTorch define it:
    (shape, x restrided over it, [(index restrided over it, size, stride)]).

    The indexed dims are replaced by the broadcast shape of the indices, in place when they are adjacent,
    else at the front."""
    dims = [d for d, i in enumerate(indices) if i is not None]
    if not dims:
        return x._shape, x, []
    try:
        bshape = V.broadcast_shapes(*(indices[d]._shape for d in dims))
    except RuntimeError:
        shapes = ", ".join(str(list(indices[d]._shape)) for d in dims)
        raise IndexError(f"shape mismatch: indexing tensors could not be broadcast together with shapes {shapes}") from None
    if dims != list(range(dims[0], dims[-1] + 1)):
        order = dims + [d for d in range(x.dim()) if d not in dims]
        x = _restride(x, [x._shape[d] for d in order], [x._strides[d] for d in order])
        indices = [indices[d] for d in order]
        dims = list(range(len(dims)))
    first, last = dims[0], dims[-1]
    shape = x._shape[:first] + bshape + x._shape[last + 1:]
    lead, trail = (0,) * first, (0,) * (x.dim() - last - 1)
    base = _restride(x, shape, x._strides[:first] + (0,) * len(bshape) + x._strides[last + 1:])
    idx = []
    for d in dims:
        t = indices[d]
        _, st = V.expand_strides(t._shape, t._strides, bshape)
        idx.append((_restride(t, shape, lead + st + trail), x._shape[d], x._strides[d]))
    return shape, base, idx


def _saved_indices(ctx):
    saved = iter(ctx.saved_tensors)
    return [next(saved) if present else None for present in ctx.layout]


def _save_indices(ctx, indices) -> None:
    ctx.layout = [i is not None for i in indices]
    ctx.save_for_backward(*[i for i in indices if i is not None])


# ---- x[indices] and index_put ---------------------------------------------------------------------


def _index(x, indices, checked: bool = True):
    shape, base, idx = _plan(x, indices)
    return _gather_raw(base, idx, _bounds(IndexError), checked=checked)


def index(x, indices):
    """``x[indices]`` for a list of index tensors (bool masks allowed) and None, one per leading dim of x."""
    indices, checked = _expand_indices(x, list(indices))
    if needs_graph(x):
        return G.Index.apply(x, checked, *indices)
    return _index(x, indices, checked)


def _index_put_raw(x, indices, values, accumulate: bool, checked: bool) -> None:
    V.check_no_internal_overlap(x)
    shape, base, idx = _plan(x, indices)
    value = _value_over(x, values, shape, lambda vs: f"shape mismatch: value tensor of shape {list(vs)} cannot be "
                                                     f"broadcast to indexing result of shape {list(shape)}")
    _put_raw(base, value, idx, "add" if accumulate else "store", _bounds(IndexError), checked=checked)


def _index_put(x, indices, values, accumulate, in_place: bool):
    if P.is_tensor(values) and values.dtype is not x.dtype:
        raise RuntimeError(
            f"Index put requires the source and destination dtypes match, got {x.dtype.scalar_name} for the "
            f"destination and {values.dtype.scalar_name} for the source."
        )
    indices, checked = _expand_indices(x, list(indices))
    accumulate = bool(accumulate)
    if needs_graph(x, values):
        if in_place:
            return inplace(x, lambda old: G.IndexPut.apply(old, values, accumulate, checked, *indices))
        return G.IndexPut.apply(x, values, accumulate, checked, *indices)
    out = x if in_place else x.clone()
    _index_put_raw(out, indices, values, accumulate, checked)
    return out


def index_put(input, indices, values, accumulate=False):  # noqa: A002 - PyTorch's names
    """A copy of ``input`` with ``input[indices] = values`` (``+=`` with ``accumulate``, which counts
    duplicate indices): ``clgrad.index_put(x, (rows, cols), v)``."""
    return _index_put(input, indices, values, accumulate, in_place=False)


def index_put_(input, indices, values, accumulate=False):  # noqa: A002
    """In-place ``index_put``: ``x.index_put_((idx,), v, accumulate=True)``."""
    return _index_put(input, indices, values, accumulate, in_place=True)


# ---- __getitem__ / __setitem__ --------------------------------------------------------------------


def _as_tuple(index) -> tuple:
    """PyTorch's treatSequenceAsTuple: a short list holding slices, None, ..., tensors or sequences is a
    tuple of indices (numpy's deprecated legacy rule); any other list is one index."""
    if isinstance(index, tuple):
        return index
    if isinstance(index, list) and len(index) < 32 and any(
            it is None or it is Ellipsis or isinstance(it, (slice, list, tuple, np.ndarray)) or P.is_tensor(it)
            for it in index):
        warnings.warn(_SEQUENCE, UserWarning, stacklevel=user_stacklevel())
        return tuple(index)
    return (index,)


def _classify(t, item):
    """(kind, item, dims consumed): kind is 'basic' (int, slice, None, ...), 'bool' or 'tensor'."""
    if item is None or item is Ellipsis:
        return "basic", item, 0
    if isinstance(item, slice):
        return "basic", item, 1
    if isinstance(item, (bool, np.bool_)):
        return "bool", bool(item), 0
    if isinstance(item, Integral):
        return "basic", int(item), 1
    if not (P.is_tensor(item) or isinstance(item, (list, tuple, np.ndarray))):
        raise IndexError(V._INVALID_INDEX.format(type(item).__name__))
    item = _as_index(t, item)
    if item.dim() == 0:  # a 0-dim integer tensor is an int; a 0-dim bool one acts like a Python bool
        return ("basic", int(item.item()), 1) if item.dtype is D.int64 else ("bool", bool(item.item()), 0)
    return "tensor", item, item.dim() if item.dtype in (D.bool, D.uint8) else 1


def _parse(t, index):
    """Split an index into the basic part (a view) and the advanced entries for that view, one per dim of
    the view (a k-dim mask is one entry spanning k dims), None where a dim is taken whole."""
    items = [_classify(t, it) for it in _as_tuple(index)]
    if sum(1 for kind, it, _ in items if kind == "basic" and it is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(n for _, _, n in items)
    if consumed > t.dim():
        raise IndexError(f"too many indices for tensor of dimension {t.dim()}")
    basic, entries = [], []
    for kind, it, n in items:
        if kind == "basic":
            basic.append(it)
            if it is Ellipsis:
                entries += [None] * (t.dim() - consumed)
            elif not isinstance(it, int):
                entries.append(None)
        elif kind == "bool":  # a new dim of size 1, of which the index keeps all or nothing
            basic.append(None)
            entries.append(tensor([0] if it else [], dtype=D.int64, device=t.device))
        else:
            basic += [slice(None)] * n
            entries.append(it)
    if Ellipsis not in basic:
        entries += [None] * (t.dim() - consumed)
    return tuple(basic), entries


def _sliced(t, basic):
    """The basic part of an index applied to ``t``: ``t`` itself when it selects everything."""
    if all(it is Ellipsis or it == slice(None) for it in basic):
        return t
    return t[basic]


def getitem(t, key):
    """``t[key]`` where tensors, lists or bools are among the indices: a copy, as in numpy and PyTorch."""
    basic, entries = _parse(t, key)
    return index(_sliced(t, basic), entries)


def _setitem_value(t, value):
    if P.is_tensor(value):
        if value.dim() == 0 and value.device.type == "cpu" and not value.requires_grad:
            return value.item()
        return value if value.device == t.device else value.to(t.device)
    if isinstance(value, (Number, np.bool_)) or type(value).__module__ == "numpy" and getattr(value, "ndim", 1) == 0:
        return value
    kind = type(value).__name__ if type(value).__module__ == "builtins" else \
        f"{type(value).__module__}.{type(value).__name__}"
    raise TypeError(f"can't assign a {kind} to a {t.type()}")


def setitem(t, key, value) -> None:
    """``t[key] = value`` with tensors, lists or bools among the indices (``grad_h[h < 0] = 0``)."""
    basic, entries = _parse(t, key)
    value = _setitem_value(t, value)
    target = _sliced(t, basic)
    adv = [e for e in entries if e is not None]
    if len(adv) == 1 and adv[0].dtype in (D.bool, D.uint8) and (not P.is_tensor(value) or value.dim() == 0):
        # one mask and a number (or 0-dim tensor): an elementwise masked_fill_, without nonzero's read-back
        mask, d = adv[0], entries.index(adv[0])
        _check_mask(target, mask, d)
        if mask.dtype is D.uint8:
            warnings.warn(_UINT8_MASK, UserWarning, stacklevel=user_stacklevel())
        mask = mask.reshape((1,) * d + mask._shape + (1,) * (target.dim() - d - mask.dim()))
        masked_fill_(target, mask if mask.dtype is D.bool else mask.to(D.bool), value)
        return
    if P.is_tensor(value):  # PyTorch drops the value's leading size-1 dims before broadcasting it
        lead = 0
        while lead < value.dim() and value._shape[lead] == 1:
            lead += 1
        value = value.reshape(value._shape[lead:]) if lead else value
    index_put_(target, entries, value)


# ---- gather / scatter -----------------------------------------------------------------------------


def _index_arg(name: str, index, long_only: bool) -> None:
    if not P.is_tensor(index):
        raise TypeError(f"{name}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index.dtype is not D.int64 and (long_only or index.dtype is not D.int32):
        raise RuntimeError(f"{name}(): Expected dtype {'int64' if long_only else 'int32/int64'} for index")


def _along(x, dim: int, index, src=None):
    """gather/scatter's index space: ``index``'s shape; ``x`` read or written at ``index`` along ``dim``."""
    x1, i1 = _atleast1(x), _atleast1(index)
    strides = list(x1._strides)
    strides[dim] = 0
    base = _restride(x1, i1._shape, strides)
    value = src
    if P.is_tensor(src):
        s1 = _atleast1(src.clone() if src._storage is x._storage else src)
        value = _restride(s1, i1._shape, s1._strides)
    return base, [(i1, x1._shape[dim], x1._strides[dim])], value


def _gather(x, dim: int, index):
    base, idx, _ = _along(x, dim, index)
    out = _gather_raw(base, idx, _bounds(RuntimeError, dim), wrap=False)
    return out if index.dim() else _restride(out, (), ())


def gather(input, dim, index, *, sparse_grad=False):  # noqa: A002
    """Values of ``input`` along ``dim`` at ``index``: ``out[i][j] = input[i][index[i][j]]`` for dim=1."""
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
        return G.Gather.apply(input, d, index)
    return _gather(input, d, index)


def _scatter_checks(name, x, d, index, src) -> None:
    _index_arg(name, index, long_only=True)
    if P.is_tensor(src) and src.dtype is not x.dtype:
        raise RuntimeError(f"{name}(): Expected self.dtype to be equal to src.dtype")
    for what, t in (("self", x), ("src", src)):
        if P.is_tensor(t) and max(index.dim(), 1) != max(t.dim(), 1):
            raise RuntimeError(f"Index tensor must have the same number of dimensions as {what} tensor")
    too_big = any(index._shape[k] > x._shape[k] for k in range(index.dim()) if k != d)
    if P.is_tensor(src):
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
    if not P.is_tensor(value):
        value = _value_over(x, value, (), str)
    _put_raw(base, value, idx, mode, _bounds(RuntimeError, dim), wrap=False)


_REDUCE_MODES = {None: "store", "add": "add", "multiply": "mul"}


def _scatter(name, x, dim, index, src, reduce, in_place: bool):
    if reduce not in _REDUCE_MODES:
        raise RuntimeError("reduce argument must be either add or multiply.")
    d = V.wrap_dim(dim, x.dim())
    _scatter_checks(name, x, d, index, src)
    if index.numel() == 0:
        return x if in_place else x.clone()
    index = index.to(x.device)
    if P.is_tensor(src):
        P.common_device([x, index, src])
    fn = G.ScatterAdd if name == "scatter_add" else G.Scatter if P.is_tensor(src) else G.ScatterValue
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
    if not P.is_tensor(indices) or indices.dtype is not D.int64:
        got = indices.dtype.scalar_name if P.is_tensor(indices) else type(indices).__name__
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
    if not P.is_tensor(index):
        raise TypeError(f"{name}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index.dim() > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector")
    if index.dtype not in (D.int64, D.int32):
        raise RuntimeError(f"{name}(): Expected dtype int32 or int64 for index")


def _slab(x, dim: int, index):
    """index_select/index_add/index_fill's index space: ``x``'s shape with ``dim`` as long as ``index``."""
    x1, i1 = _atleast1(x), _atleast1(index).reshape(-1)
    shape, strides, istr = list(x1._shape), list(x1._strides), [0] * x1.dim()
    shape[dim], strides[dim], istr[dim] = i1._shape[0], 0, i1._strides[0]
    return shape, _restride(x1, shape, strides), [(_restride(i1, shape, istr), x1._shape[dim], x1._strides[dim])]


def _index_select(x, dim: int, index):
    _, base, idx = _slab(x, dim, index)
    out = _gather_raw(base, idx, _bounds(IndexError, dim), wrap=False)
    return out if x.dim() else _restride(out, (), ())


def index_select(input, dim, index):  # noqa: A002
    """The entries of ``input`` at ``index`` (a vector) along ``dim``: ``x.index_select(0, rows)``."""
    _vector_index("index_select", index)
    d = V.wrap_dim(dim, input.dim())
    if input.dim() == 0 and index.numel() != 1:
        raise IndexError(f"index_select(): Index to scalar can have only 1 value, got {index.numel()} value(s)")
    index = index.to(P.common_device([input, index]), D.int64)
    if needs_graph(input):
        return G.IndexSelect.apply(input, d, index)
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
    value = _value_over(x, _atleast1(source), shape, str)
    # PyTorch's cpu kernel raises IndexError for a 0-d or 1-d self and RuntimeError for more dims
    _put_raw(base, value, idx, "add", _bounds(IndexError if x.dim() <= 1 else RuntimeError, dim), wrap=False)


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
            return inplace(x, lambda old: G.IndexAdd.apply(old, d, index, source))
        return G.IndexAdd.apply(x, d, index, source)
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
    _put_raw(base, _value_over(x, value, shape, str), idx, "store", _bounds(IndexError, dim))


def _index_fill(x, dim, index, value, in_place: bool):
    _vector_index("index_fill_", index)
    if P.is_tensor(value) and value.dim():
        raise IndexError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with {value.dim()} "
                         "dimension(s).")
    check_fill_value(value, x.dtype)
    d = V.wrap_dim(dim, x.dim())
    index = index.to(x.device, D.int64)
    if needs_graph(x, value):
        if in_place:
            return inplace(x, lambda old: G.IndexFill.apply(old, d, index, value))
        return G.IndexFill.apply(x, d, index, value)
    out = x if in_place else x.clone()
    _index_fill_raw(out, d, index, value)
    return out


def index_fill(input, dim, index, value):  # noqa: A002
    """A copy of ``input`` with the entries at ``index`` along ``dim`` set to ``value`` (negative indices wrap)."""
    return _index_fill(input, dim, index, value, in_place=False)


def index_fill_(input, dim, index, value):  # noqa: A002
    return _index_fill(input, dim, index, value, in_place=True)


# ---- masks ----------------------------------------------------------------------------------------


def _fill_checks(x, mask, value) -> None:
    if not P.is_tensor(mask) or mask.dtype is not D.bool:
        got = mask.dtype.cpp_name if P.is_tensor(mask) else type(mask).__name__
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {got}")
    if P.is_tensor(value) and value.dim():
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.dim()} dimension(s).")
    if not P.is_tensor(value) and not isinstance(value, (Number, np.number, np.bool_)):
        raise TypeError(f"masked_fill(): argument 'value' must be Number or Tensor, not {type(value).__name__}")
    check_fill_value(value, x.dtype)


def _masked_fill_raw(x, mask, value, out=None):
    return P.apply("where", mask, value, x, out=out, compute=x.dtype)


def masked_fill(input, mask, value):  # noqa: A002
    """``value`` where ``mask`` (bool, broadcast) is true, else ``input``: ``x.masked_fill(x < 0, 0)``."""
    _fill_checks(input, mask, value)
    if needs_graph(input, value):
        return (G.MaskedFillTensor if P.is_tensor(value) else G.MaskedFill).apply(input, mask, value)
    return _masked_fill_raw(input, mask, value)


def masked_fill_(input, mask, value):  # noqa: A002
    _fill_checks(input, mask, value)
    if needs_graph(input, value):
        return inplace(input, lambda old: masked_fill(old, mask, value))
    return _masked_fill_raw(input, mask, value, out=input)


def _masked_select(x, mask):
    """(x[mask] after broadcasting both, the mask's coordinates, the broadcast shape)."""
    shape = V.broadcast_shapes(x._shape, mask._shape) or (1,)
    xb = _restride(x, shape, V.expand_strides(x._shape, x._strides, shape)[1])
    mb = _restride(mask, shape, V.expand_strides(mask._shape, mask._strides, shape)[1])
    indices, _ = _expand_indices(xb, [mb])
    return _index(xb, indices, checked=False), indices, V.broadcast_shapes(x._shape, mask._shape)


def masked_select(input, mask):  # noqa: A002
    """The elements of ``input`` where ``mask`` is true (both broadcast), as a 1-D tensor."""
    if not P.is_tensor(mask) or mask.dtype is not D.bool:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    P.common_device([input, mask])
    if needs_graph(input):
        return G.MaskedSelect.apply(input, mask)
    return _masked_select(input, mask)[0]


def nonzero(input, *, as_tuple=False):  # noqa: A002
    """Coordinates of the nonzero elements, one row each (``as_tuple``: one 1-D tensor per dim)."""
    coords = _nonzero_raw(input)
    if not as_tuple:
        return coords
    if input.dim() == 0:  # a 0-dim tensor counts as one element here
        return (zeros(coords._shape[0], dtype=D.int64, device=input.device),)
    return tuple(_restride(coords, coords._shape[:1], coords._strides[:1], coords._offset + d)
                 for d in range(input.dim()))


def argwhere(input):  # noqa: A002
    """``nonzero(input)``: one row of coordinates per nonzero element."""
    return nonzero(input)


def where(condition, input=None, other=None):  # noqa: A002
    """``where(cond)`` is ``nonzero(cond, as_tuple=True)``; ``where(cond, x, y)`` picks elementwise."""
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    return choose(condition, input, other)


def install(T) -> None:
    """Attach this module's ops to Tensor as methods."""
    for fn in (gather, scatter, scatter_, scatter_add, scatter_add_, index_select, index_add, index_add_,
               index_put, index_put_, index_fill, index_fill_, masked_fill, masked_fill_, masked_select,
               nonzero, argwhere, take_along_dim):
        setattr(T, fn.__name__, fn)


# a list or a number where a tensor belongs raises PyTorch's TypeError (see guard.py)
tensor_first(globals(), __all__)
