"""Public elementwise functions: ``clgrad.add``, ``clgrad.exp``, ``clgrad.where`` … built on ``pointwise.apply``."""
from __future__ import annotations

import numpy as np

from .. import dtypes as D
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
# PyTorch's longer names for the same functions
FUNCS |= {"bitwise_left_shift": FUNCS["lshift"], "bitwise_right_shift": FUNCS["rshift"],
          "greater_equal": FUNCS["ge"], "less_equal": FUNCS["le"]}


def _scaled(input, other, alpha, op: str):
    """``alpha * other`` in the dtype ``input op other`` computes in, after PyTorch's alpha checks."""
    P.check_operands(op, (input, other))
    rt = D.result_type(input, other)
    if isinstance(alpha, bool) and rt is not D.bool:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if rt.kind != "f" and not isinstance(alpha, (int, np.integer)):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    if P.is_tensor(other):
        other = P.apply("mul", other, alpha, compute=rt)
    else:
        other = other * alpha
    return other, rt


def add(input, other, *, alpha=1, out=None):
    """``input + alpha * other`` with broadcasting and type promotion: ``clgrad.add(x, y, alpha=2)``."""
    if type(alpha) is int and alpha == 1:
        return P.apply("add", input, other, out=out)
    other, rt = _scaled(input, other, alpha, "add")
    return P.apply("add", input, other, out=out, compute=rt)


def sub(input, other, *, alpha=1, out=None):
    """``input - alpha * other`` with broadcasting and type promotion: ``clgrad.sub(x, 1)``."""
    if type(alpha) is int and alpha == 1:
        return P.apply("sub", input, other, out=out)
    other, rt = _scaled(input, other, alpha, "sub")
    return P.apply("sub", input, other, out=out, compute=rt)


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
    """``other - alpha * input``: ``clgrad.rsub(x, 1)`` is ``1 - x``."""
    return sub(other, input, alpha=alpha)


def where(condition, input=None, other=None):
    """``input`` where ``condition`` holds, else ``other`` (tensors or scalars, broadcast)."""
    if input is None and other is None:
        raise NotImplementedError("where(condition) (nonzero) is not implemented yet")
    return P.apply("where", condition, input, other)


def clamp(input, min=None, max=None, *, out=None):  # noqa: A002 - PyTorch's names
    """Limit values to [min, max]; either bound may be None, a number or a tensor: ``x.clamp(min=0)``."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    bounds = [b for b in (min, max) if b is not None]
    P.check_operands("clamp", (input, *bounds))
    compute = D.result_type(input, *bounds)
    if compute is D.bool and not (len(bounds) == 1 and P.is_tensor(bounds[0])):
        # PyTorch has bool kernels only for a one-sided tensor bound (maximum/minimum)
        raise P.unsupported("clamp", compute, input.device if P.is_tensor(input) else "cpu")
    if max is None:
        return P.apply("maximum", input, min, out=out, compute=compute)
    if min is None:
        return P.apply("minimum", input, max, out=out, compute=compute)
    return P.apply("clamp", input, min, max, out=out, compute=compute)
