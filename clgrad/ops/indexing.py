"""Advanced indexing: ``__getitem__``/``__setitem__`` with tensors, lists and masks, ``index_put``, and the mask
ops ``masked_fill``/``masked_select``; plus the two index primitives with their bounds errors, which the ops
along one dim (``gather.py``) share.

Each op reduces to one of two backend primitives (see ``backends/cpu_index.py``): ``index_gather`` and
``index_put``, which see the data tensor restrided over an *index space* plus int64 index tensors restrided
over the same space. Boolean masks become index tensors through ``nonzero``, the one op here whose result
size depends on the data (so it reads a count back from the device). Each differentiable op is a ``Function``
(at the end of the module) with PyTorch's node name, its backward written in clgrad ops.
"""
from __future__ import annotations

import warnings
from numbers import Integral, Number

import numpy as np

from .. import backends
from .. import dtypes as D
from ..autograd.function import Function
from ..autograd.graph import inplace, needs_graph
from ..backends.cpu import cast, view_of
from ..tensor import Tensor, is_tensor
from . import pointwise as P
from . import views as V
from .creation import check_fill_value, tensor, zeros
from .guard import tensor_first, user_stacklevel

__all__ = ["index_put", "index_put_", "masked_fill", "masked_select", "take", "put", "index_copy"]

_INDEX_TYPES = "tensors used as indices must be long, int, byte or bool tensors"
_UINT8_MASK = "indexing with dtype clgrad.uint8 is now deprecated, please use a dtype clgrad.bool instead."
_SEQUENCE = ("Using a non-tuple sequence for multidimensional indexing is deprecated; use x[tuple(seq)] instead of "
             "x[seq]. In a future release this will be interpreted as tensor index, x[clgrad.tensor(seq)].")


def _restride(t, shape, strides, offset=None):
    """Bare metadata over ``t``'s memory (no autograd, no base): what the backend primitives read."""
    return Tensor._make(t._storage, t.dtype, tuple(shape), tuple(strides),
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
    out = Tensor._empty(base._shape, base.dtype, base.device)
    _raise_bad(backends.get(base.device).index_gather(out, base, idx, wrap, checked), idx, err)
    return out


def _put_raw(base, value, idx, mode: str, err, wrap: bool = True, checked: bool = True) -> None:
    bad = backends.get(base.device).index_put(base, value, idx, mode, wrap, checked)
    base._storage.version += 1  # even on an error: a device has already written the valid indices
    _raise_bad(bad, idx, err)


def _value_over(dst, value, shape, mismatch):
    """``value`` as the put primitive takes it over the index space ``shape``: a numpy scalar of dst's dtype,
    or a tensor view broadcast over ``shape`` (a snapshot when it shares dst's memory)."""
    if is_tensor(value) and value.device != dst.device:
        if value.dim() == 0 and value.device.type == "cpu":
            value = view_of(value)
        else:
            value = value.to(dst.device)
    if not is_tensor(value):
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
    if not is_tensor(item):
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
        return Index.apply(x, checked, *indices)
    return _index(x, indices, checked)


def _index_put_raw(x, indices, values, accumulate: bool, checked: bool) -> None:
    V.check_no_internal_overlap(x)
    shape, base, idx = _plan(x, indices)
    value = _value_over(x, values, shape, lambda vs: f"shape mismatch: value tensor of shape {list(vs)} cannot be "
                                                     f"broadcast to indexing result of shape {list(shape)}")
    _put_raw(base, value, idx, "add" if accumulate else "store", _bounds(IndexError), checked=checked)


def _index_put(x, indices, values, accumulate, in_place: bool):
    if is_tensor(values) and values.dtype is not x.dtype:
        raise RuntimeError(
            f"Index put requires the source and destination dtypes match, got {x.dtype.scalar_name} for the "
            f"destination and {values.dtype.scalar_name} for the source."
        )
    indices, checked = _expand_indices(x, list(indices))
    accumulate = bool(accumulate)
    if needs_graph(x, values):
        if in_place:
            return inplace(x, lambda old: IndexPut.apply(old, values, accumulate, checked, *indices))
        return IndexPut.apply(x, values, accumulate, checked, *indices)
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
            it is None or it is Ellipsis or isinstance(it, (slice, list, tuple, range, np.ndarray)) or is_tensor(it)
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
    if isinstance(item, bool):
        return "bool", item, 0
    if isinstance(item, Integral):
        return "basic", int(item), 1
    if isinstance(item, range):  # x[range(n), y]: a range indexes like the list of its values, as in PyTorch
        item = list(item)
    if not (is_tensor(item) or isinstance(item, (list, tuple, np.ndarray))):
        raise IndexError(V._INVALID_INDEX.format(_type_name(item)))
    item = _as_index(t, item)
    if item.dim() == 0:  # a 0-dim integer tensor is an int; a 0-dim bool one acts like a Python bool
        return ("basic", int(item.item()), 1) if item.dtype is D.int64 else ("bool", bool(item.item()), 0)
    return "tensor", item, item.dim() if item.dtype in (D.bool, D.uint8) else 1


def _type_name(item) -> str:
    """The type as PyTorch's invalid-index error names it (``numpy.bool`` for a numpy bool scalar)."""
    kind = type(item)
    return kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"


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
    if is_tensor(value):
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
    if len(adv) == 1 and adv[0].dtype in (D.bool, D.uint8) and (not is_tensor(value) or value.dim() == 0):
        # one mask and a number (or 0-dim tensor): an elementwise masked_fill_, without nonzero's read-back
        mask, d = adv[0], entries.index(adv[0])
        _check_mask(target, mask, d)
        if mask.dtype is D.uint8:
            warnings.warn(_UINT8_MASK, UserWarning, stacklevel=user_stacklevel())
        mask = mask.reshape((1,) * d + mask._shape + (1,) * (target.dim() - d - mask.dim()))
        masked_fill_(target, mask if mask.dtype is D.bool else mask.to(D.bool), value)
        return
    if is_tensor(value):  # PyTorch drops the value's leading size-1 dims before broadcasting it
        lead = 0
        while lead < value.dim() and value._shape[lead] == 1:
            lead += 1
        value = value.reshape(value._shape[lead:]) if lead else value
    index_put_(target, entries, value)


# ---- masks ----------------------------------------------------------------------------------------


def _fill_checks(x, mask, value) -> None:
    if not is_tensor(mask) or mask.dtype is not D.bool:
        got = mask.dtype.cpp_name if is_tensor(mask) else type(mask).__name__
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {got}")
    if is_tensor(value) and value.dim():
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.dim()} dimension(s).")
    if not is_tensor(value) and not isinstance(value, (Number, np.number, np.bool_)):
        raise TypeError(f"masked_fill(): argument 'value' must be Number or Tensor, not {type(value).__name__}")
    check_fill_value(value, x.dtype)


def _masked_fill_raw(x, mask, value, out=None):
    return P.apply("where", mask, value, x, out=out, compute=x.dtype)


def masked_fill(input, mask, value):  # noqa: A002
    """``value`` where ``mask`` (bool, broadcast) is true, else ``input``: ``x.masked_fill(x < 0, 0)``."""
    _fill_checks(input, mask, value)
    if needs_graph(input, value):
        return (MaskedFillTensor if is_tensor(value) else MaskedFill).apply(input, mask, value)
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
    if not is_tensor(mask) or mask.dtype is not D.bool:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    P.common_device([input, mask])
    if needs_graph(input):
        return MaskedSelect.apply(input, mask)
    return _masked_select(input, mask)[0]


# ---- autograd: one Function per op, with PyTorch's node names; backward in clgrad ops (double backward works)


def _reduce_to(g, shape):
    """Sum a gradient over the dims broadcasting added (after dropping the value's leading 1s, as setitem)."""
    shape = tuple(shape)
    strip = shape
    while len(strip) > g.dim() and strip[0] == 1:
        strip = strip[1:]
    lead = g.dim() - len(strip)
    dims = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(strip) if n == 1 and g._shape[lead + i] != 1)
    if dims:
        g = g.sum(dim=dims, keepdim=True)
    return g.reshape(shape) if tuple(g._shape) != shape else g


class Index(Function):
    node_name = "IndexBackward0"

    @staticmethod
    def forward(ctx, x, checked, *indices):
        ctx.meta = (x._shape, x.dtype, x.device)
        _save_indices(ctx, indices)
        return _index(x, list(indices), checked)

    @staticmethod
    def backward(ctx, grad):
        shape, dt, dev = ctx.meta
        indices = _saved_indices(ctx)
        g = index_put(zeros(shape, dtype=dt, device=dev), indices, grad, accumulate=True)
        return (g, None) + (None,) * len(indices)


class IndexPut(Function):
    node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, x, values, accumulate, checked, *indices):
        ctx.accumulate = accumulate
        ctx.vshape = values._shape if is_tensor(values) else None
        _save_indices(ctx, indices)
        out = x.clone()
        _index_put_raw(out, list(indices), values, accumulate, checked)
        return out

    @staticmethod
    def backward(ctx, grad):
        indices = _saved_indices(ctx)
        gx = gv = None
        if ctx.needs_input_grad[0]:
            gx = grad if ctx.accumulate else index_put(grad, indices, _zeros((), grad))
        if ctx.needs_input_grad[1]:
            gv = _reduce_to(index(grad, indices), ctx.vshape)
        return (gx, gv, None, None) + (None,) * len(indices)


class MaskedFill(Function):
    node_name = "MaskedFillBackward0"

    @staticmethod
    def forward(ctx, x, mask, value):
        ctx.save_for_backward(mask)
        return _masked_fill_raw(x, mask, value)

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        gv = P.apply("where", mask, grad, 0.0).sum() if ctx.needs_input_grad[2] else None
        return masked_fill(grad, mask, 0), None, gv


class MaskedFillTensor(MaskedFill):
    node_name = "MaskedFillBackward1"


class MaskedSelect(Function):
    node_name = "MaskedSelectBackward0"

    @staticmethod
    def forward(ctx, x, mask):
        out, indices, shape = _masked_select(x, mask)
        ctx.meta = shape
        _save_indices(ctx, indices)
        return out

    @staticmethod
    def backward(ctx, grad):
        shape = ctx.meta
        g = index_put(_zeros(shape or (1,), grad), _saved_indices(ctx), grad)
        return (g if shape else g.reshape(())), None


# ---- flat and along-a-dim writes composed of advanced indexing (autograd comes with the composition) ---------


def _long_index(name: str, index) -> None:
    if not is_tensor(index):
        raise TypeError(f"{name}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index.dtype is not D.int64:
        raise RuntimeError(f"{name}(): Expected a long tensor for index, but got {index.dtype.scalar_name}")


def take(input, index):  # noqa: A002
    """``input`` read as 1-D at ``index`` (any shape; negative entries count from the end)."""
    _long_index("take", index)
    return input.reshape(-1)[index]


def put_(input, index, source, accumulate=False):  # noqa: A002
    """Write ``source`` into ``input`` read as 1-D (row-major, whatever the strides) at ``index``."""
    _long_index("put_", index)
    if source.numel() != index.numel():
        raise IndexError("put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    flat = input.reshape(-1)
    flat.index_put_((index.reshape(-1),), source.reshape(-1), accumulate)
    if flat._storage is not input._storage:  # reshape had to copy: write the result back
        input.copy_(flat.view(input.shape))
    return input


def put(input, index, source, accumulate=False):  # noqa: A002
    return put_(input.clone(), index, source, accumulate)


def _index_copy(x, dim, index, source, in_place: bool):
    _long_index("index_copy_", index)
    if index.dim() > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {index.dim()})")
    d = V.wrap_dim(dim, x.dim())
    count = source._shape[d] if source.dim() else 1
    if index.numel() != count:
        raise IndexError(f"index_copy_(): Number of indices ({index.numel()}) should be equal to source.size(dim) "
                         f"({count})")
    out = x if in_place else x.clone()
    if x.dim() == 0:
        out.copy_(source.reshape(()))
        return out
    out[(slice(None),) * d + (index.reshape(-1),)] = source
    return out


def index_copy(input, dim, index, source):  # noqa: A002
    """A copy of ``input`` with the slices of ``source`` written at ``index`` along ``dim``."""
    return _index_copy(input, dim, index, source, in_place=False)


def index_copy_(input, dim, index, source):  # noqa: A002
    return _index_copy(input, dim, index, source, in_place=True)


def install(T) -> None:
    """Attach this module's ops to Tensor as methods."""
    for fn in (index_put, index_put_, masked_fill, masked_fill_, masked_select, take, put, put_, index_copy,
               index_copy_):
        setattr(T, fn.__name__, fn)


# a list or a number where a tensor belongs raises PyTorch's TypeError (see guard.py)
tensor_first(globals(), __all__)
