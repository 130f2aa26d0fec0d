"""Function forms of Tensor methods with PyTorch's signatures, and ``round(decimals=)``.

``clgrad.flatten(x, start_dim=1)`` is ``x.flatten(start_dim=1)``: each function here names its parameters as
``torch.<name>`` does, so keyword calls written for PyTorch run unchanged, and delegates to the method (which
records the view node when autograd is on).
"""
from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral

from .. import dtypes as D
from ..autograd.function import Function
from ..autograd.graph import needs_graph
from ..tensor import Size, is_tensor, preserve_format
from . import math as M

__all__ = ["reshape", "permute", "transpose", "swapaxes", "swapdims", "squeeze", "unsqueeze", "flatten", "narrow",
           "select", "t", "adjoint", "as_strided", "clone", "numel", "is_floating_point", "is_nonzero", "round",
           "pow", "can_cast", "broadcast_shapes"]


def _input(name: str, input) -> None:  # noqa: A002
    if not is_tensor(input):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")


def reshape(input, shape):  # noqa: A002
    """``x`` with another shape: a view when the layout allows, else a copy."""
    _input("reshape", input)
    return input.reshape(shape)


def permute(input, dims):  # noqa: A002
    """A view with the dims reordered: ``clgrad.permute(x, (2, 0, 1))``."""
    _input("permute", input)
    return input.permute(dims)


def transpose(input, dim0, dim1):  # noqa: A002
    """A view with ``dim0`` and ``dim1`` swapped."""
    _input("transpose", input)
    return input.transpose(dim0, dim1)


def swapaxes(input, axis0, axis1):  # noqa: A002
    """numpy's name for ``transpose``."""
    _input("swapaxes", input)
    return input.transpose(axis0, axis1)


def swapdims(input, dim0, dim1):  # noqa: A002
    """Another name for ``transpose``."""
    _input("swapdims", input)
    return input.transpose(dim0, dim1)


def squeeze(input, dim=None):  # noqa: A002
    """A view without size-1 dims: all of them, or those among ``dim`` (an int or a tuple)."""
    _input("squeeze", input)
    return input.squeeze(dim)


def unsqueeze(input, dim):  # noqa: A002
    """A view with a size-1 dim inserted at ``dim``."""
    _input("unsqueeze", input)
    return input.unsqueeze(dim)


def flatten(input, start_dim=0, end_dim=-1):  # noqa: A002
    """Dims ``start_dim..end_dim`` merged into one: ``clgrad.flatten(x, start_dim=1)``."""
    _input("flatten", input)
    return input.flatten(start_dim, end_dim)


def narrow(input, dim, start, length):  # noqa: A002
    """``length`` entries of ``dim`` from ``start``, as a view."""
    _input("narrow", input)
    return input.narrow(dim, start, length)


def select(input, dim, index):  # noqa: A002
    """The slice at ``index`` of ``dim``, that dim removed: ``clgrad.select(x, 1, 0)`` is ``x[:, 0]``."""
    _input("select", input)
    return input.select(dim, index)


def t(input):  # noqa: A002
    """The transpose of a matrix; a 0-D or 1-D tensor as it is."""
    _input("t", input)
    return input.t()


def adjoint(input):  # noqa: A002
    """The conjugate transpose of (a batch of) matrices; with real dtypes, ``x.transpose(-2, -1)``."""
    _input("adjoint", input)
    return input.adjoint()


def as_strided(input, size, stride, storage_offset=None):  # noqa: A002
    """A view of ``input``'s memory with the given size, strides and (absolute) storage offset."""
    _input("as_strided", input)
    return input.as_strided(size, stride, storage_offset)


def clone(input, *, memory_format=preserve_format):  # noqa: A002
    """A copy in new memory (recorded by autograd)."""
    _input("clone", input)
    return input.clone(memory_format=memory_format)


def numel(input) -> int:  # noqa: A002
    """The number of elements."""
    _input("numel", input)
    return input.numel()


def is_floating_point(input) -> bool:  # noqa: A002
    _input("is_floating_point", input)
    return input.is_floating_point()


def is_nonzero(input) -> bool:  # noqa: A002
    """Whether a one-element tensor is nonzero (PyTorch's errors for any other size)."""
    _input("is_nonzero", input)
    if input.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if input.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())


def can_cast(from_, to) -> bool:
    """Whether PyTorch's casting rules allow ``from_`` -> ``to``: never float to integer, nor non-bool to bool."""
    src, dst = D.as_dtype(from_), D.as_dtype(to)
    if src.is_floating_point and not dst.is_floating_point:
        return False
    return not (src is not D.bool and dst is D.bool)


def pow(input, exponent, *, out=None):  # noqa: A001,A002
    """``input ** exponent`` elementwise; either may be a number: ``clgrad.pow(x, exponent=2)``."""
    return M.FUNCS["pow"](input, exponent, out=out)


def broadcast_shapes(*shapes) -> Size:
    """The shape tensors of ``shapes`` broadcast to; an int stands for a 1-D shape:
    ``clgrad.broadcast_shapes(2, (3, 1))`` is ``Size([3, 2])`` (PyTorch's checks and messages)."""
    shapes = [(s,) if isinstance(s, Integral) else s for s in shapes if s is not None]
    for s in shapes:
        if not isinstance(s, Sequence):
            raise RuntimeError(f"Input shapes should be of type ints, a tuple of ints, or a list of ints, got {s}")
    common = [1] * max((len(s) for s in shapes), default=0)
    for arg, shape in enumerate(shapes):
        for idx in range(-1, -1 - len(shape), -1):
            n = shape[idx]
            if n == common[idx]:
                continue
            if common[idx] == 1:
                if n < 0:
                    raise ValueError("Attempting to broadcast a dimension with negative length!")
                common[idx] = n
            elif n != 1:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {n} at {idx}! Mismatching argument "
                                   f"at index {arg} had {shape}; but expected shape should be broadcastable to {common}")
    return Size(int(n) for n in common)


# ---- round(decimals=) ------------------------------------------------------------------------------


def _round_decimals(x, decimals: int):
    """PyTorch's rule: round half to even of ``x * 10**d``, divided back (``x / 10**-d`` times it for d < 0),
    in float32 for float16 inputs (PyTorch's opmath type)."""
    y = x.float() if x.dtype in D.HALF_FLOATS else x
    scale = 10.0 ** abs(decimals)
    if decimals > 0:
        y = (y * scale).round() / scale
    elif decimals < 0:
        y = (y / scale).round() * scale
    else:
        y = y.round()
    return y.to(x.dtype)


class RoundDecimals(Function):
    """``round(x, decimals=d)``: a step function, so the gradient is zero (PyTorch's RoundBackward1)."""

    node_name = "RoundBackward1"

    @staticmethod
    def forward(ctx, x, decimals):
        return _round_decimals(x, decimals)

    @staticmethod
    def backward(ctx, grad):
        return grad.mul(0), None


def round(input, *, decimals=None, out=None):  # noqa: A001,A002
    """Round half to even; ``decimals`` rounds to that many decimal places (negative: to tens, hundreds...)."""
    if decimals is None:
        return M.FUNCS["round"](input, out=out)
    _input("round", input)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"round\" with decimals not implemented for '{input.dtype.scalar_name}'")
    decimals = int(decimals)
    result = RoundDecimals.apply(input, decimals) if needs_graph(input) else _round_decimals(input, decimals)
    return result if out is None else out.copy_(result)
