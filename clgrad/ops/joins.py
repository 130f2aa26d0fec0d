"""Joins and splits: cat, stack (and h/v/d/column_stack, atleast_nd), split, chunk, unbind, tensor_split,
repeat, tile. Flips, rolls, triangles, diagonals and dim shuffles are in ``rearrange.py``, padding in ``padding.py``.

No kernel template of their own: every forward is views (``shape.py``) plus copies into views through the
elementwise ``identity`` kernel (``pointwise.cast_into``). Differentiable ops are ``Function``s with PyTorch's
node names whose backward is written in clgrad ops, so double backward works. Splits return views sharing
storage, as in PyTorch; the negative-stride views ``flip`` copies from never reach users.
"""
from __future__ import annotations

import itertools
from numbers import Integral

from .. import dtypes as D
from ..autograd.function import Function
from ..autograd.graph import needs_graph
from ..tensor import Tensor, is_tensor
from . import pointwise as P
from . import shape as S
from . import views as V
from .creation import zeros
from .guard import tensor_first

__all__ = [
    "cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack", "atleast_1d",
    "atleast_2d", "atleast_3d", "split", "chunk", "unbind", "tensor_split", "tile",
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
    if is_tensor(tensors) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{fn}(): argument 'tensors' (position 1) must be tuple of Tensors, not {type(tensors).__name__}")
    for i, t in enumerate(tensors):
        if not is_tensor(t):
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
    if is_tensor(x):
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
    if len(tensors) == 1 and is_tensor(tensors[0]):
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
    if is_tensor(arg) and arg.dim() == 0:
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
    return _unbind(input, d)


def _unbind(x, d: int) -> tuple:
    return tuple(S.select(x, d, i) for i in range(x._shape[d]))


class Unbind(Function):
    node_name = "UnbindBackward0"

    @staticmethod
    def forward(ctx, x, d):
        ctx.d = d
        return _unbind(x, d)

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
    if isinstance(arg, Integral) or (is_tensor(arg) and arg.dim() == 0):
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


def repeat(input, *sizes, **kwargs):
    """Tensor.repeat: tile the data ``sizes`` times along each dim (copies): ``x.repeat(2, 1)``."""
    if "repeats" in kwargs and not sizes:  # x.repeat(repeats=(2, 1)), PyTorch's keyword
        sizes = (kwargs.pop("repeats"),)
    if kwargs:
        raise TypeError(f"repeat() got an unexpected keyword argument '{next(iter(kwargs))}'")
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
    return repeat(input, (1,) * (input.dim() - len(reps)) + reps)  # one tuple: () repeats a 0-D tensor once


# ---- Tensor methods --------------------------------------------------------------------------------


def _split_method(self, split_size=None, dim=0, **kwargs):
    """``Tensor.split(split_size, dim=0)``: the method names its size argument ``split_size`` (the function,
    ``split_size_or_sections``); either keyword is taken."""
    if "split_size_or_sections" in kwargs and split_size is None:
        split_size = kwargs.pop("split_size_or_sections")
    if kwargs or split_size is None:
        raise TypeError(f"split() got an unexpected keyword argument '{next(iter(kwargs))}'" if kwargs
                        else "split() missing 1 required positional argument: 'split_size'")
    return split(self, split_size, dim)


def install(T) -> None:
    """Attach this module's ops to Tensor as methods."""
    for name in ("chunk", "unbind", "tensor_split", "repeat"):
        setattr(T, name, globals()[name])
    T.split = _split_method
    T.tile = lambda self, *dims, **kw: tile(self, kw["dims"] if "dims" in kw and not dims else V.as_size(dims, "tile"))


# a list or a number where a tensor belongs raises PyTorch's TypeError (see guard.py)
tensor_first(globals(), __all__ + FUNCTIONAL)
