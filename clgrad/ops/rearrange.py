"""Rearranging elements: flip, roll, tril/triu, diag/diagonal/diag_embed, broadcast_to/broadcast_tensors,
meshgrid, movedim, swapaxes, unflatten, ravel.

As in ``joins.py``, every forward is views (``shape.py``) plus copies into views through the elementwise
``identity`` kernel; differentiable ops are ``Function``s with PyTorch's node names whose backward is written in
clgrad ops, so double backward works. The negative-stride views ``flip`` copies from never reach users.
"""
from __future__ import annotations

import itertools
import math
import warnings
from numbers import Integral

import numpy as np

from ..autograd.function import Function
from ..autograd.graph import inplace, needs_graph
from . import pointwise as P
from . import shape as S
from . import views as V
from .creation import tensor, zeros
from .guard import tensor_first, user_stacklevel
from .joins import _copy, _fresh, _ints, _new

__all__ = [
    "flip", "fliplr", "flipud", "roll", "tril", "triu", "diag", "diagonal", "diag_embed", "broadcast_to",
    "broadcast_tensors", "meshgrid", "movedim", "moveaxis", "swapaxes", "swapdims", "unflatten", "ravel",
]
FUNCTIONAL: list[str] = []


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
    return _flip(input, wrapped)


def _flip(x, dims):
    return _fresh(_flip_view(x, dims) if x.dim() and x.numel() else x)


class Flip(Function):
    node_name = "FlipBackward0"

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return _flip(x, dims)

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
    return _roll(input, shifts, dims)


def _roll(x, shifts: tuple, dims: tuple):
    """The untracked roll; ``dims`` wrapped, ``()`` for the flattened tensor."""
    out = _new(x._shape, x.dtype, x.device)
    if not dims:  # roll the flattened tensor
        _roll_into(out._view((out.numel(),), (1,)), S.reshape(x, -1), {0: shifts[0]})
    else:  # a dim listed twice rolls by the sum of its shifts
        _roll_into(out, x, {d: sum(s for dd, s in zip(dims, shifts) if dd == d) for d in dims})
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
        return _roll(x, shifts, dims)

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


def install(T) -> None:
    """Attach this module's ops to Tensor as methods."""
    for name in ("fliplr", "flipud", "roll", "tril", "triu", "diag", "diagonal", "diag_embed", "broadcast_to",
                 "movedim", "moveaxis", "unflatten", "ravel"):
        setattr(T, name, globals()[name])
    T.flip = lambda self, *dims: flip(self, V.as_size(dims, "flip"))
    T.tril_, T.triu_ = _tri_inplace("tril"), _tri_inplace("triu")


# a list or a number where a tensor belongs raises PyTorch's TypeError (see guard.py)
tensor_first(globals(), __all__ + FUNCTIONAL)
