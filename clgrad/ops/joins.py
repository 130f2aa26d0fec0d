"""Joins, splits and layout ops: cat, stack, split, repeat, flip, roll, tril, diagonal, pad...

No kernel template of their own: every forward is views (``shape.py``) plus copies into views through the
elementwise ``identity`` kernel (``pointwise.cast_into``). Differentiable ops are ``Function``s with PyTorch's
node names whose backward is written in clgrad ops, so double backward works. Splits return views sharing
storage, as in PyTorch; the negative-stride views ``flip`` copies from never reach users.
"""
from __future__ import annotations

import itertools
import math
import warnings
from numbers import Integral

import numpy as np

from .. import dtypes as D
from ..autograd.function import Function
from ..autograd.graph import inplace, needs_graph
from ..tensor import Tensor
from . import pointwise as P
from . import shape as S
from . import views as V
from .creation import tensor, zeros
from .guard import tensor_first, user_stacklevel

__all__ = [
    "cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack", "atleast_1d",
    "atleast_2d", "atleast_3d", "split", "chunk", "unbind", "tensor_split", "tile", "flip", "fliplr", "flipud",
    "roll", "tril", "triu", "diag", "diagonal", "diag_embed", "broadcast_to", "broadcast_tensors", "meshgrid",
    "movedim", "moveaxis", "swapaxes", "swapdims", "unflatten", "ravel",
]
FUNCTIONAL: list[str] = []


# ---- helpers ---------------------------------------------------------------------------------


def _new(shape, dt, dev):
    return Tensor._empty(tuple(shape), dt, dev)


def _copy(dst, src) -> None:
    """Write ``src`` (broadcastable, any dtype, same device) into the view ``dst`` of a fresh tensor."""
    if dst.numel():
        P.cast_into(dst, src)


def _fresh(view):
    """A new tensor holding ``view``'s values, so no temporary's view escapes to users."""
    out = _new(view._shape, view.dtype, view.device)
    _copy(out, view)
    return out


def _tensor_list(tensors, fn: str) -> tuple:
    if P.is_tensor(tensors) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{fn}(): argument 'tensors' (position 1) must be tuple of Tensors, not {type(tensors).__name__}")
    for i, t in enumerate(tensors):
        if not P.is_tensor(t):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
    return tuple(tensors)


def _one_device(tensors):
    """The device all ``tensors`` share, with PyTorch's error (naming the accelerator first) if they don't."""
    dev = next((t.device for t in tensors if t.device.type != "cpu"), tensors[0].device)
    for t in tensors:
        if t.device != dev:
            raise RuntimeError(
                f"Expected all tensors to be on the same device, but found at least two devices, {dev} and {t.device}!"
            )
    return dev


def _ints(x) -> tuple:
    """An int or a sequence of ints (a 0-dim/1-D integer tensor too) as a tuple of ints."""
    if P.is_tensor(x):
        x = x.tolist()
    return (int(x),) if isinstance(x, Integral) else tuple(int(v) for v in x)


def _to(grad, dt):
    return grad if grad.dtype is dt else grad.to(dt)


# ---- cat / stack -----------------------------------------------------------------------------


def cat(tensors, dim=0):
    """Join tensors along an existing dim, promoting dtypes: ``clgrad.cat([a, b], dim=1)``."""
    tensors = _tensor_list(tensors, "cat")
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    if needs_graph(*tensors):
        return Cat.apply(dim, *tensors)
    return _cat(tensors, dim)


def concatenate(tensors, axis=0, dim=None):
    return cat(tensors, axis if dim is None else dim)


concat = cat


def _cat(tensors, dim):
    for i, t in enumerate(tensors):
        if t.dim() == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    dev = _one_device(tensors)
    dt = D.result_type(*tensors)
    # PyTorch's legacy rule: 1-D empty tensors are skipped (but still take part in dtype promotion)
    pieces = [(i, t) for i, t in enumerate(tensors) if t._shape != (0,)]
    if not pieces:
        return _new((0,), dt, dev)
    ref = pieces[0][1]
    d = V.wrap_dim(dim, ref.dim())
    for i, t in pieces:
        if t.dim() != ref.dim():
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.dim()} and {t.dim()}")
        for k, (a, b) in enumerate(zip(ref._shape, t._shape)):
            if k != d and a != b:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size {a} but got size {b} for "
                    f"tensor number {i} in the list."
                )
    shape = list(ref._shape)
    shape[d] = sum(t._shape[d] for _, t in pieces)
    out = _new(shape, dt, dev)
    start = 0
    for _, t in pieces:
        _copy(S.narrow(out, d, start, t._shape[d]), t)
        start += t._shape[d]
    return out


class Cat(Function):
    node_name = "CatBackward0"

    @staticmethod
    def forward(ctx, dim, *tensors):
        out = _cat(tensors, dim)
        ctx.dim = V.wrap_dim(dim, out.dim()) if -out.dim() <= dim < out.dim() else 0  # all legacy-empty: any dim
        ctx.meta = [(t._shape, t.dtype, t.device) for t in tensors]
        return out

    @staticmethod
    def backward(ctx, grad):
        grads, start = [None], 0
        for (shape, dt, dev), need in zip(ctx.meta, ctx.needs_input_grad[1:]):
            if shape == (0,) and grad.dim() != 1:  # a skipped legacy empty tensor
                grads.append(zeros(0, dtype=dt, device=dev) if need else None)
                continue
            n = shape[ctx.dim]
            grads.append(_to(grad.narrow(ctx.dim, start, n), dt) if need else None)
            start += n
        return tuple(grads)


def stack(tensors, dim=0):
    """Join equal-shaped tensors along a new dim: ``clgrad.stack([a, b], dim=0)``."""
    tensors = _tensor_list(tensors, "stack")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    if needs_graph(*tensors):
        return Stack.apply(dim, *tensors)
    return _stack(tensors, dim)


def _stack(tensors, dim):
    d = V.wrap_dim(dim, tensors[0].dim() + 1)
    for i, t in enumerate(tensors):
        if t._shape != tensors[0]._shape:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(tensors[0]._shape)} at entry 0 and "
                f"{list(t._shape)} at entry {i}"
            )
    return _cat([S.unsqueeze(t, d) for t in tensors], d)


class Stack(Function):
    node_name = "StackBackward0"

    @staticmethod
    def forward(ctx, dim, *tensors):
        out = _stack(tensors, dim)
        ctx.dim, ctx.dtypes = V.wrap_dim(dim, out.dim()), [t.dtype for t in tensors]
        return out

    @staticmethod
    def backward(ctx, grad):
        pieces = unbind(grad, ctx.dim)
        return (None,) + tuple(_to(g, dt) if need else None
                               for g, dt, need in zip(pieces, ctx.dtypes, ctx.needs_input_grad[1:]))


def _each(fn, tensors):
    """``atleast_*d`` take one tensor (returning one) or several / a list (returning a tuple)."""
    if len(tensors) == 1 and P.is_tensor(tensors[0]):
        return fn(tensors[0])
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    return tuple(fn(t) for t in tensors)


def atleast_1d(*tensors):
    return _each(lambda t: t.reshape(1) if t.dim() == 0 else t, tensors)


def atleast_2d(*tensors):
    return _each(lambda t: t.reshape(1, 1) if t.dim() == 0 else t.unsqueeze(0) if t.dim() == 1 else t, tensors)


def atleast_3d(*tensors):
    def one(t):
        if t.dim() == 0:
            return t.reshape(1, 1, 1)
        if t.dim() == 1:
            return t.reshape(1, -1, 1)
        return t.unsqueeze(-1) if t.dim() == 2 else t

    return _each(one, tensors)


def _stacked(fn: str, tensors, lift):
    tensors = _tensor_list(tensors, fn)
    if not tensors:
        raise RuntimeError(f"{fn} expects a non-empty TensorList")
    return [lift(t) for t in tensors]


def hstack(tensors):
    """Join along dim 1 (dim 0 for 1-D inputs): ``clgrad.hstack([a, b])``."""
    ts = _stacked("hstack", tensors, atleast_1d)
    return cat(ts, 0 if ts[0].dim() == 1 else 1)


def vstack(tensors):
    """Join along dim 0 after making every input at least 2-D."""
    return cat(_stacked("vstack", tensors, atleast_2d), 0)


def dstack(tensors):
    return cat(_stacked("dstack", tensors, atleast_3d), 2)


def column_stack(tensors):
    return cat(_stacked("column_stack", tensors, lambda t: t.reshape(-1, 1) if t.dim() < 2 else t), 1)


# ---- splits: views of the input --------------------------------------------------------------


def _split_views(x, d, sizes) -> tuple:
    out, start = [], 0
    for n in sizes:
        out.append(S.narrow(x, d, start, n))
        start += n
    return tuple(out)


class Split(Function):
    """Consecutive pieces of one dim, all views; the gradient is the pieces' gradients joined back."""

    node_name = "SplitBackward0"

    @staticmethod
    def forward(ctx, x, d, sizes):
        ctx.d = d
        return _split_views(x, d, sizes)

    @staticmethod
    def backward(ctx, *grads):
        return cat(grads, ctx.d), None, None


class SplitWithSizes(Split):
    node_name = "SplitWithSizesBackward0"


def _split(x, d, sizes, fn):
    if needs_graph(x):
        return fn.apply(x, d, tuple(sizes))
    return _split_views(x, d, sizes)


def split(tensor, split_size_or_sections, dim=0):
    """Views of consecutive pieces of ``dim``: of ``split_size`` each (the last may be smaller), or of the
    listed sizes: ``x.split(2)``, ``x.split([1, 3], dim=1)``."""
    if tensor.dim() == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = V.wrap_dim(dim, tensor.dim())
    n = tensor._shape[d]
    arg = split_size_or_sections
    if P.is_tensor(arg) and arg.dim() == 0:
        arg = int(arg.item())
    if isinstance(arg, Integral):
        if arg < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got split_size={arg}")
        if arg == 0 and n != 0:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
        count = max(-(-n // arg), 1) if arg else 1
        return _split(tensor, d, [arg] * (count - 1) + [n - arg * (count - 1)], Split)
    sizes = list(_ints(arg))
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes={sizes}")
    if sum(sizes) != n:
        raise RuntimeError(
            f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at dimension {d}), "
            f"but got split_sizes={sizes}"
        )
    return _split(tensor, d, sizes, SplitWithSizes)


def chunk(input, chunks, dim=0):
    """``chunks`` views of (nearly) equal size along ``dim``; fewer when the dim is too short."""
    if input.dim() == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = V.wrap_dim(dim, input.dim())
    n = input._shape[d]
    if n == 0:
        return _split(input, d, [0] * chunks, SplitWithSizes)
    return split(input, -(-n // chunks), d)


def unbind(input, dim=0):
    """Every slice along ``dim`` as a view with that dim removed: ``rows = x.unbind(0)``."""
    d = V.wrap_dim(dim, input.dim(), scalar_ok=False)
    if needs_graph(input):
        return Unbind.apply(input, d)
    return tuple(S.select(input, d, i) for i in range(input._shape[d]))


class Unbind(Function):
    node_name = "UnbindBackward0"

    @staticmethod
    def forward(ctx, x, d):
        ctx.d = d
        return unbind(x, d)

    @staticmethod
    def backward(ctx, *grads):
        return stack(grads, ctx.d), None


def tensor_split(input, indices_or_sections, dim=0):
    """Views split at ``indices`` (Python slice bounds), or into ``sections`` pieces whose sizes differ by at
    most one: ``clgrad.tensor_split(clgrad.arange(7), 3)`` has sizes 3, 2, 2."""
    if input.dim() == 0:
        raise RuntimeError(
            f"tensor_split expected at least a 1-dimensional tensor, but got a tensor with {input.dim()} dims"
        )
    d = V.wrap_dim(dim, input.dim())
    n = input._shape[d]
    arg = indices_or_sections
    if isinstance(arg, Integral) or (P.is_tensor(arg) and arg.dim() == 0):
        sections = int(arg)
        if sections <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
        q, r = divmod(n, sections)
        sizes = [q + 1] * r + [q] * (sections - r)
        bounds = [sum(sizes[:i]) for i in range(sections + 1)]
    else:
        bounds = [0, *_ints(arg), n]
    out = []
    for a, b in itertools.pairwise(bounds):
        start, stop, _ = slice(a, b).indices(n)
        out.append(input.narrow(d, start, max(0, stop - start)))
    return tuple(out)


# ---- repeat / tile -----------------------------------------------------------------------------


def _interleave(a, b) -> tuple:
    return tuple(v for pair in zip(a, b) for v in pair)


def _repeat(x, reps):
    shape = (1,) * (len(reps) - x.dim()) + x._shape
    final = [r * n for r, n in zip(reps, shape)]
    if any(r < 0 for r in reps):
        raise RuntimeError(f"Trying to create tensor with negative dimension {next(v for v in final if v < 0)}: {final}")
    strides = (0,) * (len(reps) - x.dim()) + x._strides
    # (r0, n0, r1, n1, ...): the input broadcast over the repeat dims (stride 0), copied by one kernel
    big = _interleave(reps, shape)
    out = _new(final, x.dtype, x.device)
    _copy(out._view(big, V.contiguous_strides(big)), x._view(big, _interleave((0,) * len(reps), strides)))
    return out


class Repeat(Function):
    """The gradient sums the copies: each repeat dim becomes its own axis of the gradient, then is reduced."""

    node_name = "RepeatBackward0"

    @staticmethod
    def forward(ctx, x, reps):
        ctx.shape, ctx.reps = x._shape, reps
        return _repeat(x, reps)

    @staticmethod
    def backward(ctx, grad):
        shape = (1,) * (len(ctx.reps) - len(ctx.shape)) + ctx.shape
        dims = tuple(2 * i for i, r in enumerate(ctx.reps) if r != 1)
        g = grad.reshape(_interleave(ctx.reps, shape))
        if dims:
            g = g.sum(dim=dims, keepdim=True)
        return g.reshape(ctx.shape), None


def repeat(input, *sizes):
    """Tensor.repeat: tile the data ``sizes`` times along each dim (copies): ``x.repeat(2, 1)``."""
    if not sizes:
        raise TypeError('repeat() missing 1 required positional arguments: "repeats"')
    reps = V.as_size(sizes, "repeat")
    if len(reps) < input.dim():
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
    if needs_graph(input):
        return Repeat.apply(input, reps)
    return _repeat(input, reps)


def tile(input, dims):
    """``repeat`` with missing leading repeats taken as 1: ``clgrad.tile(x, (2,))``."""
    reps = V.as_size((dims,), "tile")
    return repeat(input, *((1,) * (input.dim() - len(reps)) + reps))


# ---- flip / roll -------------------------------------------------------------------------------


def _flip_view(x, dims):
    """A negative-stride view reading ``x`` backwards along ``dims``: only ever copied from, never returned."""
    strides, offset = list(x._strides), x._offset
    for d in dims:
        offset += (x._shape[d] - 1) * strides[d]
        strides[d] = -strides[d]
    return x._view(x._shape, tuple(strides), offset)


def flip(input, dims):
    """Reverse the order of elements along ``dims`` (a copy): ``clgrad.flip(x, (0, 1))``."""
    if isinstance(dims, Integral):
        raise TypeError(f"flip(): argument 'dims' (position 2) must be tuple of ints, not {type(dims).__name__}")
    wrapped = [V.wrap_dim(d, input.dim()) for d in dims]
    for d in wrapped:
        if wrapped.count(d) > 1:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    if needs_graph(input):
        return Flip.apply(input, tuple(wrapped))
    return _fresh(_flip_view(input, wrapped) if input.dim() and input.numel() else input)


class Flip(Function):
    node_name = "FlipBackward0"

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return flip(x, dims)

    @staticmethod
    def backward(ctx, grad):
        return flip(grad, ctx.dims), None


def fliplr(input):
    if input.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


def flipud(input):
    if input.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


def roll(input, shifts, dims=None):
    """Shift elements cyclically along ``dims`` (or over the flattened tensor): ``x.roll(1, 0)``."""
    shifts, dims = _ints(shifts), () if dims is None else _ints(dims)
    if not shifts:
        raise RuntimeError("`shifts` required")
    if len(shifts) != len(dims) and not (len(shifts) == 1 and not dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    dims = tuple(V.wrap_dim(d, input.dim(), scalar_ok=False) for d in dims)
    if needs_graph(input):
        return Roll.apply(input, shifts, dims)
    out = _new(input._shape, input.dtype, input.device)
    if not dims:  # roll the flattened tensor
        _roll_into(out._view((out.numel(),), (1,)), S.reshape(input, -1), {0: shifts[0]})
    else:  # a dim listed twice rolls by the sum of its shifts
        _roll_into(out, input, {d: sum(s for dd, s in zip(dims, shifts) if dd == d) for d in dims})
    return out


def _roll_into(out, x, amounts) -> None:
    """out = x rolled by ``amounts`` ({dim: shift}): each dim splits into two blocks, so 2**k block copies."""
    if not x.numel():
        return
    choices = []
    for d, s in amounts.items():
        n = x._shape[d]
        s %= n
        if s:  # (out start, in start, length) of the two blocks
            choices.append([(d, s, 0, n - s), (d, 0, n - s, s)])
    for combo in itertools.product(*choices):
        o, i = out, x
        for d, o_start, i_start, length in combo:
            o, i = S.narrow(o, d, o_start, length), S.narrow(i, d, i_start, length)
        _copy(o, i)


class Roll(Function):
    node_name = "RollBackward0"

    @staticmethod
    def forward(ctx, x, shifts, dims):
        ctx.shifts, ctx.dims = shifts, dims
        return roll(x, shifts, dims or None)

    @staticmethod
    def backward(ctx, grad):
        return roll(grad, tuple(-s for s in ctx.shifts), ctx.dims or None), None, None


# ---- triangles and diagonals ---------------------------------------------------------------------


def _tri_mask(name, x, k):
    """The kept positions of the last two dims, built on the host (n*m bytes) and sent with the op."""
    n, m = x._shape[-2:]
    mask = np.tri(n, m, k, dtype=bool) if name == "tril" else ~np.tri(n, m, k - 1, dtype=bool)
    return tensor(mask, device=x.device)


def _tri(name, x, k, out=None):
    if x.dim() < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    k = int(k)
    if needs_graph(x) and out is None:
        return TRI[name].apply(x, k)
    return P.apply("where", _tri_mask(name, x, k), x, 0, out=out, compute=x.dtype)


def _tri_function(name):
    def forward(ctx, x, k):
        ctx.k = k
        return _tri(name, x, k)

    def backward(ctx, grad):
        return _tri(name, grad, ctx.k), None

    title = name.capitalize()
    return type(title, (Function,), {"node_name": f"{title}Backward0", "forward": staticmethod(forward),
                                     "backward": staticmethod(backward)})


TRI = {name: _tri_function(name) for name in ("tril", "triu")}


def tril(input, diagonal=0):
    """The lower triangle of the last two dims (j - i <= diagonal), zeros elsewhere."""
    return _tri("tril", input, diagonal)


def triu(input, diagonal=0):
    """The upper triangle of the last two dims (j - i >= diagonal), zeros elsewhere."""
    return _tri("triu", input, diagonal)


def _tri_inplace(name):
    def method(self, diagonal=0):
        if needs_graph(self):
            return inplace(self, lambda old: _tri(name, old, diagonal))
        return _tri(name, self, diagonal, out=self)

    method.__name__ = name + "_"
    return method


def _diagonal_view(x, offset, dim1, dim2):
    d1, d2 = V.wrap_dim(dim1, x.dim()), V.wrap_dim(dim2, x.dim())
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    (n1, n2), (s1, s2) = (x._shape[d1], x._shape[d2]), (x._strides[d1], x._strides[d2])
    if offset >= 0:
        length, start = max(0, min(n1, n2 - offset)), offset * s2
    else:
        length, start = max(0, min(n1 + offset, n2)), -offset * s1
    keep = [i for i in range(x.dim()) if i not in (d1, d2)]
    return x._view(tuple(x._shape[i] for i in keep) + (length,), tuple(x._strides[i] for i in keep) + (s1 + s2,),
                   x._offset + (start if length else 0))


def _embed(x, offset, d1, d2, shape):
    """Zeros of ``shape`` with ``x`` written on their (offset, d1, d2) diagonal (``diag_embed``'s square
    shape when ``shape`` is None)."""
    if shape is None:
        rest, n = iter(x._shape[:-1]), x._shape[-1] + abs(offset)
        shape = tuple(n if i in (d1, d2) else next(rest) for i in range(x.dim() + 1))
    out = zeros(shape, dtype=x.dtype, device=x.device)
    _copy(_diagonal_view(out, offset, d1, d2), x)
    return out


def _embed_any(x, offset, d1, d2, shape):
    return DiagEmbed.apply(x, offset, d1, d2, shape) if needs_graph(x) else _embed(x, offset, d1, d2, shape)


class DiagEmbed(Function):
    node_name = "DiagEmbedBackward0"

    @staticmethod
    def forward(ctx, x, offset, d1, d2, shape):
        ctx.args = (offset, d1, d2)
        return _embed(x, offset, d1, d2, shape)

    @staticmethod
    def backward(ctx, grad):
        return diagonal(grad, *ctx.args), None, None, None, None


class Diagonal(Function):
    node_name = "DiagonalBackward0"

    @staticmethod
    def forward(ctx, x, offset, dim1, dim2):
        ctx.args = (offset, V.wrap_dim(dim1, x.dim()), V.wrap_dim(dim2, x.dim()), x._shape)
        return _diagonal_view(x, offset, dim1, dim2)

    @staticmethod
    def backward(ctx, grad):
        return _embed_any(grad, *ctx.args), None, None, None


class DiagonalCopy(Diagonal):
    """``diag`` of a matrix: the diagonal as a new tensor."""

    node_name = "DiagonalBackward0_copy"

    @staticmethod
    def forward(ctx, x, offset, dim1, dim2):
        return _fresh(Diagonal.forward(ctx, x, offset, dim1, dim2))


def diagonal(input, offset=0, dim1=0, dim2=1):
    """A view of the diagonal over ``dim1``/``dim2`` (offset above it when positive), appended as the last dim."""
    if needs_graph(input):
        return Diagonal.apply(input, offset, dim1, dim2)
    return _diagonal_view(input, offset, dim1, dim2)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Square matrices over ``dim1``/``dim2`` holding the last dim of ``input`` on a diagonal."""
    d1, d2 = V.wrap_dim(dim1, input.dim() + 1), V.wrap_dim(dim2, input.dim() + 1)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return _embed_any(input, offset, d1, d2, None)


def diag(input, diagonal=0):
    """1-D -> the square matrix with it on a diagonal; 2-D -> a copy of that diagonal."""
    if input.dim() == 1:
        return diag_embed(input, diagonal, 0, 1)
    if input.dim() != 2:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.dim()}D")
    if needs_graph(input):
        return DiagonalCopy.apply(input, diagonal, 0, 1)
    return _fresh(_diagonal_view(input, diagonal, 0, 1))


# ---- broadcasting and dim shuffles (views through the differentiable Tensor methods) ----------------


def broadcast_to(input, size):
    """A stride-0 view of ``input`` at ``size`` (-1 keeps a dim): ``clgrad.broadcast_to(x, (4, 3))``."""
    return input.expand(tuple(size))


def broadcast_tensors(*tensors):
    shape = V.broadcast_shapes(*(t._shape for t in tensors))
    return tuple(t if t._shape == shape else t.expand(shape) for t in tensors)


def meshgrid(*tensors, indexing=None):
    """Coordinate grids (expanded views) from 1-D tensors: ``xs, ys = clgrad.meshgrid(x, y, indexing="xy")``."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                      UserWarning, stacklevel=user_stacklevel())
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}")
        if t.dtype is not tensors[0].dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
        if t.device != tensors[0].device:
            raise RuntimeError("meshgrid expects all tensors to have the same device")
    refs = list(tensors)
    swap = indexing == "xy" and len(refs) > 1  # 'xy' swaps the first two axes of every grid
    if swap:
        refs[0], refs[1] = refs[1], refs[0]
    shape = tuple(t.numel() for t in refs)
    grids = [t.reshape([-1 if j == i else 1 for j in range(len(refs))]).expand(shape) for i, t in enumerate(refs)]
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def movedim(input, source, destination):
    """Move dims ``source`` to positions ``destination``, keeping the others in order (a view)."""
    src, dst = _ints(source), _ints(destination)
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({list(src)} dims) should contain the same number "
            f"of dims as destination ({list(dst)} dims)"
        )
    n = input.dim()
    ws, wd = [V.wrap_dim(d, n) for d in src], [V.wrap_dim(d, n) for d in dst]
    for name, given, wrapped in (("source", src, ws), ("destination", dst, wd)):
        if len(set(wrapped)) != len(wrapped):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({list(given)})")
    if n == 0:
        return input.permute()
    order = [None] * n
    for s, d in zip(ws, wd):
        order[d] = s
    rest = iter(i for i in range(n) if i not in ws)
    return input.permute(*[next(rest) if o is None else o for o in order])


moveaxis = movedim


def swapaxes(input, axis0, axis1):
    return input.transpose(axis0, axis1)


swapdims = swapaxes


def unflatten(input, dim, sizes):
    """Split one dim into ``sizes`` (one may be -1), as a view: ``x.unflatten(1, (2, -1))``."""
    d = V.wrap_dim(dim, input.dim(), scalar_ok=False)
    sizes = V.as_size((sizes,), "unflatten")
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    n = input._shape[d]
    known = math.prod(s for s in sizes if s != -1)
    if sizes.count(-1) < 2 and (known != n if -1 not in sizes else known == 0 or n % known):
        raise RuntimeError(
            f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {d} ({n}) in the input tensor"
        )
    return input.view(input._shape[:d] + V.infer_size(sizes, n) + input._shape[d + 1 :])


def ravel(input):
    """The elements as 1-D, a view when the layout allows one."""
    return input.reshape(-1)


# ---- Tensor methods --------------------------------------------------------------------------------


def install(T) -> None:
    """Attach this module's ops to Tensor as methods."""
    for name in ("split", "chunk", "unbind", "tensor_split", "repeat", "fliplr", "flipud", "roll", "tril", "triu",
                 "diag", "diagonal", "diag_embed", "broadcast_to", "movedim", "moveaxis", "unflatten", "ravel"):
        setattr(T, name, globals()[name])
    T.tile = lambda self, *dims: tile(self, V.as_size(dims, "tile"))
    T.flip = lambda self, *dims: flip(self, V.as_size(dims, "flip"))
    T.tril_, T.triu_ = _tri_inplace("tril"), _tri_inplace("triu")


# a list or a number where a tensor belongs raises PyTorch's TypeError (see guard.py)
tensor_first(globals(), __all__ + FUNCTIONAL)
