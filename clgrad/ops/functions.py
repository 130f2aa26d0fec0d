"""Built-in differentiable ops as ``Function`` subclasses: forward in raw ops, backward in clgrad ops.

Elementwise Functions are generated from the op table (registry.elementwise.OPS) and its gradient table (grads.GRADS),
so a new elementwise op costs one line in each. Where PyTorch gives one op several node names (its
overloads: ``a ** 2`` is ``PowBackward0``, ``a ** b`` ``PowBackward1``), a call picks a *variant*: a
subclass that differs only in ``node_name``.
"""
from __future__ import annotations

from ..autograd.function import Function, variant
from ..autograd.graph import needs_graph
from ..registry.elementwise import OPS
from . import pointwise as P
from . import shape as S
from . import views as V
from .grads import GRADS, NO_INPUTS, USES_OUT

_apply = Function.apply.__func__  # the plain apply, for dispatchers that pick a variant class first
_variant = variant


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


class Elementwise(Function):
    """Base of the table-generated elementwise Functions; ``op`` names the table entry.
    forward and backward are classmethods (they read ``cls.op``); ``apply`` calls them like staticmethods."""

    op = "identity"

    @classmethod
    def forward(cls, ctx, *operands, compute=None):
        out = P.apply(cls.op, *operands, compute=compute)
        if cls.op in GRADS:
            keep = cls.op not in NO_INPUTS
            ctx.save_for_backward(*[x if keep and P.is_tensor(x) else None for x in operands],
                                  out if cls.op in USES_OUT else None)
            ctx.scalars = tuple(None if P.is_tensor(x) else x for x in operands)
        return out

    @classmethod
    def backward(cls, ctx, grad):
        if cls.op not in GRADS:  # piecewise-constant ops (floor_divide...) pass no gradient
            return (None,) * len(ctx.needs_input_grad)
        saved = ctx.saved_tensors
        args = [s if s is not None else c for s, c in zip(saved[:-1], ctx.scalars)]
        grads = GRADS[cls.op](grad, *args, saved[-1])
        return tuple(g if ctx.needs_input_grad[i] else None for i, g in enumerate(grads))


def _pow_name(base, exponent):
    if not P.is_tensor(base):
        return "PowBackward2"
    return "PowBackward1" if P.is_tensor(exponent) else None


def _clamp_name(x, *bounds):
    # clamp(min=, max=) with number bounds is PyTorch's ClampBackward1, with tensor bounds ClampBackward0;
    # clamp(min=...) alone runs the clamp_min kernel here but is the same PyTorch node
    return "ClampBackward0" if any(P.is_tensor(b) for b in bounds) else "ClampBackward1"


def _sub_name(a, b):
    return "RsubBackward1" if not P.is_tensor(a) else None


# PyTorch's node name for a call, where it depends on the operands (None: the op's default name)
_NAMES = {"pow": _pow_name, "clamp": _clamp_name, "clamp_min": _clamp_name, "clamp_max": _clamp_name,
          "sub": _sub_name}


class _Overloaded(Elementwise):
    """An elementwise op whose node name depends on which operands are numbers."""

    @classmethod
    def apply(cls, *operands, compute=None):
        name = _NAMES[cls.op](*operands)
        return _apply(cls if name is None else _variant(cls, name), *operands, compute=compute)


class _MulDiv(Elementwise):
    """mul and div save only the operands their needed gradients read, as PyTorch does: ``x * 2`` keeps
    nothing of ``x``, so changing ``x`` in place afterwards is no error (and holds no memory)."""

    @classmethod
    def forward(cls, ctx, a, b, *, compute=None):
        out = P.apply(cls.op, a, b, compute=compute)
        need_a, need_b = ctx.needs_input_grad
        keep_a = need_b  # d(a*b)/db = a, d(a/b)/db = -a/b^2
        keep_b = need_a or (need_b and cls.op == "div")
        ctx.save_for_backward(a if keep_a and P.is_tensor(a) else None, b if keep_b and P.is_tensor(b) else None)
        ctx.scalars = (None if P.is_tensor(a) else a, None if P.is_tensor(b) else b)
        return out

    @classmethod
    def backward(cls, ctx, grad):
        saved = ctx.saved_tensors
        a, b = (s if s is not None else c for s, c in zip(saved, ctx.scalars))
        need_a, need_b = ctx.needs_input_grad
        if cls.op == "mul":
            return grad * b if need_a else None, grad * a if need_b else None
        return grad / b if need_a else None, -grad * a / (b * b) if need_b else None


_NODE_NAMES = {"square": "PowBackward0"}  # ops PyTorch records under another op's node


def _elementwise_class(name: str):
    base = _Overloaded if name in _NAMES else _MulDiv if name in ("mul", "div") else Elementwise
    node = _NODE_NAMES.get(name, f"{_camel(name)}Backward0")
    return type(_camel(name), (base,), {"op": name, "node_name": node})


ELEMENTWISE = {name: _elementwise_class(name) for name in OPS}


def elementwise(op: str, *operands, out=None):
    """The differentiable entry point of every elementwise op (``out=`` is not differentiable)."""
    if out is not None:
        if needs_graph(out, *operands):
            raise RuntimeError(f"{op}(): functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad.")
        return P.apply(op, *operands, out=out)
    return ELEMENTWISE[op].apply(*operands)


# ---- views -----------------------------------------------------------------------------------
# View Functions set ``is_view``: their outputs are tracked as views of the input's memory, so an in-place
# change of that memory (through the base or another view) reaches their gradient (autograd/view_rules.py).

def _reshape_name(x, fn, args) -> str:
    """PyTorch's reshape is a view (ViewBackward0) when the layout allows, else a copy (UnsafeViewBackward0)."""
    if fn is S.flatten:
        if x.dim() == 0:
            return "ViewBackward0"
        start = V.wrap_dim(args[0] if args else 0, x.dim())
        end = V.wrap_dim(args[1] if len(args) > 1 else -1, x.dim())
        n = 1
        for k in x._shape[start : end + 1]:
            n *= k
        shape = x._shape[:start] + (n,) + x._shape[end + 1 :]
    else:
        shape = V.infer_size(V.as_size(args, "reshape"), x.numel())
    return "ViewBackward0" if V.view_strides(x._shape, x._strides, shape) is not None else "UnsafeViewBackward0"


def _squeeze_name(args) -> str:
    if not args or args[0] is None:
        return "SqueezeBackward0"
    return "SqueezeBackward2" if isinstance(args[0], (tuple, list)) else "SqueezeBackward1"


def _getitem_name(index) -> str:
    """Named after the last step PyTorch's indexing takes: an int selects, None unsqueezes, a slice slices."""
    items = index if isinstance(index, tuple) else (index,)
    for item in reversed(items):
        if item is Ellipsis or item == slice(None):
            continue  # PyTorch skips whole-dim slices (unless nothing else is there)
        if item is None:
            return "UnsqueezeBackward0"
        return "SliceBackward0" if isinstance(item, slice) else "SelectBackward0"
    return "SliceBackward0"


def _view_name(x, fn, args):
    name = fn.__name__
    if name in ("reshape", "flatten"):
        return _reshape_name(x, fn, args)
    if name == "squeeze":
        return _squeeze_name(args)
    if name == "getitem":
        return _getitem_name(args[0])
    return {"unsqueeze": "UnsqueezeBackward0", "select": "SelectBackward0",
            "as_strided": "AsStridedBackward0"}.get(name)


class _NamedView(Function):
    """A view Function called as ``apply(x, fn, args)``; its node takes PyTorch's name for ``fn``."""

    is_view = True

    @classmethod
    def apply(cls, x, fn, args):
        name = _view_name(x, fn, args)
        return _apply(cls if name is None or name == cls.node_name else _variant(cls, name), x, fn, args)


class View(_NamedView):
    """view/reshape/flatten/squeeze/unsqueeze: the gradient is reshaped back."""

    node_name = "ViewBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, x, fn, args):
        ctx.shape = x.shape
        return fn(x, *args)

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.shape), None, None


class Permute(Function):
    node_name = "PermuteBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = tuple(d % max(x.dim(), 1) for d in dims)
        return S.permute(x, dims)

    @staticmethod
    def backward(ctx, grad):
        inverse = [0] * len(ctx.dims)
        for i, d in enumerate(ctx.dims):
            inverse[d] = i
        return grad.permute(*inverse), None


# PyTorch's names for the same permutation Function when reached through transpose() and t()
Transpose = _variant(Permute, "TransposeBackward0")
T = _variant(Permute, "TBackward0")


class Expand(Function):
    """The engine sums the broadcast gradient back to the input's shape."""

    node_name = "ExpandBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, x, sizes):
        return S.expand(x, sizes)

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class Slice(_NamedView):
    """Any strided sub-view (indexing, select, narrow, as_strided): the gradient is scattered back by
    replaying the same view on a zero tensor of the input's shape."""

    node_name = "SliceBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, x, fn, args):
        ctx.meta, ctx.fn, ctx.args = (x.shape, x.dtype, x.device), fn, args
        return fn(x, *args)

    @staticmethod
    def backward(ctx, grad):
        shape, dtype, device = ctx.meta
        z = grad.new_zeros(shape, dtype=dtype, device=device)
        ctx.fn(z, *ctx.args).copy_(grad)
        return z, None, None
