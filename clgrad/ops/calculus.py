"""Differences and integrals along a dim: ``diff``, ``gradient``, ``trapezoid`` (``trapz``) and
``cumulative_trapezoid``, composed from narrow views, elementwise ops, ``sum`` and ``cumsum`` (so they are
differentiable).

>>> clgrad.gradient(clgrad.tensor([1., 4., 9., 16.]))  # (tensor([3., 4., 6., 7.]),)
"""
from __future__ import annotations

import numbers

from .. import dtypes as D
from ..tensor import is_tensor
from . import joins, scans
from . import math as M
from .guard import tensor_first
from .views import wrap_dim

__all__ = ["diff", "gradient", "trapezoid", "trapz", "cumulative_trapezoid"]


def _check_edge(t, name: str, input, dim: int) -> None:
    if not is_tensor(t):
        raise TypeError(f"diff(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if t.dim() != input.dim():
        raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    for d in range(input.dim()):
        if d != dim and t.shape[d] != input.shape[d]:
            raise RuntimeError(
                "diff expects the shape of tensor to prepend or append to match that of input except along the "
                f"differencing dimension; input.size({d}) = {input.shape[d]}, but got tensor.size({d}) = "
                f"{t.shape[d]}")


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along ``dim`` (``prepend``/``append`` joined first; bool gives xor).

    >>> clgrad.diff(clgrad.tensor([1, 3, 6, 10]))  # tensor([2, 3, 4])
    """
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = wrap_dim(dim, input.dim())
    parts = [input]
    for name, t in (("prepend", prepend), ("append", append)):
        if t is not None:
            _check_edge(t, name, input, d)
            parts.insert(0 if name == "prepend" else len(parts), t)
    x = joins.cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        size = x.shape[d]
        if size == 0:
            break
        hi, lo = x.narrow(d, 1, size - 1), x.narrow(d, 0, size - 1)
        x = M.FUNCS["logical_xor"](hi, lo) if x.dtype is D.bool else hi - lo
    return x


# ---- gradient -----------------------------------------------------------------------------------------------
def _gradient_dims(input, dim):
    if dim is None:
        return list(range(input.dim())), False
    dims = [dim] if isinstance(dim, numbers.Integral) else list(dim)
    dims = [wrap_dim(d, input.dim()) for d in dims]
    for d in dims:
        if dims.count(d) > 1:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return dims, True


def _spacings(input, spacing, dims, dim_given):
    """One spacing per dim: a number (uniform) or a 1-D tensor of coordinates."""
    if is_tensor(spacing) and spacing.dim() == 0:
        spacing = spacing.item()
    if isinstance(spacing, numbers.Number):
        return [spacing] * len(dims)
    spacing = list(spacing)
    if len(spacing) != len(dims):
        if dim_given:
            raise RuntimeError(
                "torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim arguments to "
                f"have the same length, but got a spacing argument of length {len(spacing)} and a dim argument of "
                f"length {len(dims)}.")
        raise RuntimeError(
            "torch.gradient expected spacing to be unspecified, a scalar, or a list of length equal to 'self.dim() "
            f"= {input.dim()}', since dim argument was not given, but got a list of length {len(spacing)}")
    if any(is_tensor(s) for s in spacing):
        for s, d in zip(spacing, dims):
            if not is_tensor(s) or s.dim() != 1:
                got = s.dim() if is_tensor(s) else 0
                raise RuntimeError("torch.gradient expected each element of spacing to have one dimension, but got "
                                   f"an element with {got} dimensions!")
            if s.shape[0] != input.shape[d]:
                raise RuntimeError(f"torch.gradient expected each tensor to be on the same device, and each "
                                   f"coordinate tensor to have {input.shape[d]} elements along dim {d}, but got "
                                   f"{s.shape[0]}")
    return spacing


def _shaped(v, dim: int, ndim: int):
    """A 1-D tensor laid along ``dim`` of an ndim-D tensor, for broadcasting."""
    return v.reshape((-1,) + (1,) * (ndim - 1 - dim))


def _uniform(x, d: int, h, edge_order: int):
    n = x.shape[d]
    at = lambda i, k=1: x.narrow(d, i % n, k)  # noqa: E731
    inner = (at(2, n - 2) - at(0, n - 2)) / (2 * h)
    if edge_order == 1:
        first, last = (at(1) - at(0)) / h, (at(-1) - at(-2)) / h
    else:
        first = (at(0) * -1.5 + at(1) * 2 - at(2) * 0.5) / h
        last = (at(-3) * 0.5 - at(-2) * 2 + at(-1) * 1.5) / h
    return joins.cat([first, inner, last], d)


def _coordinates(x, d: int, coords, edge_order: int):
    n, nd = x.shape[d], x.dim()
    at = lambda i, k=1: x.narrow(d, i % n, k)  # noqa: E731
    dx = coords[1:] - coords[:-1]
    hd, hs = _shaped(dx[:-1], d, nd), _shaped(dx[1:], d, nd)
    inner = at(0, n - 2) * (-hs / (hd * (hd + hs))) + at(1, n - 2) * ((hs - hd) / (hd * hs)) + \
        at(2, n - 2) * (hd / (hs * (hd + hs)))
    if edge_order == 1:
        first, last = (at(1) - at(0)) / dx[0], (at(-1) - at(-2)) / dx[-1]
    else:
        a, b = dx[0], dx[1]
        first = at(0) * (-(2 * a + b) / (a * (a + b))) + at(1) * ((a + b) / (a * b)) + at(2) * (-a / (b * (a + b)))
        a, b = dx[-2], dx[-1]
        last = at(-3) * (b / (a * (a + b))) + at(-2) * (-(a + b) / (a * b)) + at(-1) * ((2 * b + a) / (b * (a + b)))
    return joins.cat([first, inner, last], d)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Second-order central differences inside, one-sided (first or second order) at the edges, per dim.

    ``spacing``: a number, a list of numbers (one per dim) or a list of 1-D coordinate tensors.
    Returns a tuple with one tensor per dim, as ``torch.gradient``.
    """
    dims, dim_given = _gradient_dims(input, dim)
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    spacing = _spacings(input, 1 if spacing is None else spacing, dims, dim_given)  # None: PyTorch's default
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    x = input.to(D.get_default_dtype()) if input.dtype.kind in "iu" else input
    out = []
    for d, h in zip(dims, spacing):
        if is_tensor(h):
            coords = h.to(x.dtype) if h.dtype.kind in "iub" or h.dtype is not x.dtype else h
            out.append(_coordinates(x, d, coords, edge_order))
        else:
            out.append(_uniform(x, d, h, edge_order))
    return tuple(out)


# ---- integrals ---------------------------------------------------------------------------------------------
def _float_input(y, name: str, what: str):
    if y.dtype is D.bool:
        raise RuntimeError(f"{name}: received a bool input for `{what}`, but bool is not supported")
    return y.to(D.get_default_dtype()) if y.dtype.kind in "iu" else y


def _spacing_along(y, x, d: int, dim: int, name: str):
    """The steps between sample points along ``d``, broadcastable against y's neighbour sums."""
    x = _float_input(x, name, "x")
    if x.dim() == 1:
        if x.shape[0] != y.shape[d]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        return _shaped(x[1:] - x[:-1], d, y.dim())
    return diff(x, dim=dim)


def _check_args(y, x, dx, dim, name: str) -> None:
    if x is not None and dx is not None:
        raise TypeError(f"{name}() received an invalid combination of arguments - got both x and dx")
    if y.dim() == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """Integral of y along ``dim`` by the trapezoid rule, over coordinates ``x`` or a uniform step ``dx``.

    >>> clgrad.trapezoid(clgrad.tensor([1., 2., 3.]))  # tensor(4.)
    """
    _check_args(y, x, dx, dim, "trapezoid")
    y = _float_input(y, "trapezoid", "y")
    d = wrap_dim(dim, y.dim())
    n = y.shape[d]
    if n == 0:
        return y.sum(d)
    if x is None:
        step = 1 if dx is None else dx
        return (y.sum(d) - (y.select(d, 0) + y.select(d, -1)) * 0.5) * step
    sides = y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)
    return (_spacing_along(y, x, d, dim, "trapezoid") * sides).sum(d) / 2


def trapz(y, x=None, *, dx=None, dim=-1):
    """The old name of ``trapezoid``."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """Running trapezoid-rule integral along ``dim``: one value fewer than y has along ``dim``."""
    _check_args(y, x, dx, dim, "cumulative_trapezoid")
    y = _float_input(y, "cumulative_trapezoid", "y")
    d = wrap_dim(dim, y.dim())
    n = y.shape[d]
    if n == 0:
        return y
    sides = y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)
    if x is None:
        areas = sides * ((1 if dx is None else dx) / 2)
    else:
        areas = _spacing_along(y, x, d, dim, "cumulative_trapezoid") * sides / 2
    return scans.cumsum(areas, d)


def install(T) -> None:
    """Attach ``diff`` to Tensor (PyTorch has no method forms of the others)."""
    T.diff = diff


# a list or a number where a tensor belongs raises PyTorch's TypeError (see guard.py)
tensor_first(globals(), __all__)
