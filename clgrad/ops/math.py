"""Public elementwise functions: ``clgrad.add``, ``clgrad.exp``, ``clgrad.where`` … built on ``pointwise.apply``."""
from __future__ import annotations

from ..backends.ewtable import OPS
from . import pointwise as P

UNARY = [name for name, e in OPS.items() if e.arity == 1 and name != "identity"]
BINARY = [name for name, e in OPS.items() if e.arity == 2 and name not in ("add", "sub", "div", "trunc_divide")]


def _unary(name):
    def fn(input, *, out=None):
        return P.apply(name, input, out=out)

    fn.__name__ = name
    fn.__doc__ = f"Elementwise ``{name}``: ``clgrad.{name}(x)``."
    return fn


def _binary(name):
    def fn(input, other, *, out=None):
        return P.apply(name, input, other, out=out)

    fn.__name__ = name
    fn.__doc__ = f"Elementwise ``{name}`` with broadcasting: ``clgrad.{name}(x, y)``."
    return fn


FUNCS = {name: _unary(name) for name in UNARY} | {name: _binary(name) for name in BINARY}


def add(input, other, *, alpha=1, out=None):
    """``input + alpha * other`` with broadcasting and type promotion."""
    if alpha != 1:
        other = P.apply("mul", other, alpha)
    return P.apply("add", input, other, out=out)


def sub(input, other, *, alpha=1, out=None):
    if alpha != 1:
        other = P.apply("mul", other, alpha)
    return P.apply("sub", input, other, out=out)


def div(input, other, *, rounding_mode=None, out=None):
    """True division (ints give floats); ``rounding_mode`` 'trunc' or 'floor' keeps the dtype."""
    if rounding_mode is None:
        return P.apply("div", input, other, out=out)
    if rounding_mode == "floor":
        return P.apply("floor_divide", input, other, out=out)
    if rounding_mode == "trunc":
        return P.apply("trunc_divide", input, other, out=out)
    raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'")


def rsub(input, other, *, alpha=1):
    return sub(other, input, alpha=alpha)


def where(condition, input=None, other=None):
    """``input`` where ``condition`` holds, else ``other`` (tensors or scalars, broadcast)."""
    if input is None and other is None:
        raise NotImplementedError("where(condition) (nonzero) is not implemented yet")
    if not P.is_tensor(condition):
        raise TypeError(f"where(): argument 'condition' must be Tensor, not {type(condition).__name__}")
    return P.apply("where", condition, input, other)


def clamp(input, min=None, max=None, *, out=None):  # noqa: A002 - PyTorch's names
    """Limit values to [min, max]; either bound may be None, a number or a tensor."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if max is None:
        return P.apply("maximum", input, min, out=out, compute=_clamp_dtype(input, min))
    if min is None:
        return P.apply("minimum", input, max, out=out, compute=_clamp_dtype(input, max))
    return P.apply("clamp", input, min, max, out=out, compute=_clamp_dtype(input, min, max))


def _clamp_dtype(input, *bounds):
    from .. import dtypes as D

    return D.result_type(input, *bounds)
