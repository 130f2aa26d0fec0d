"""Autograd Functions of the elementwise ops, one generated per registry record (``registry/elementwise.py``).

The record's gradient rule is the backward; its ``saves`` and ``reads`` say what the forward keeps. Where PyTorch
gives one op several node names (its overloads: ``a ** 2`` is ``PowBackward0``, ``a ** b`` ``PowBackward1``), the
record's ``node`` function picks a *variant*: a subclass that differs only in ``node_name``.
"""
from __future__ import annotations

from ..autograd.function import Function, variant
from ..registry.elementwise import NONDIFF, OPS
from ..registry.special_fns import Unimplemented
from ..tensor import Tensor, is_tensor
from . import pointwise as P

_apply = Function.apply.__func__  # the plain apply, for dispatchers that pick a variant class first


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


class Elementwise(Function):
    """Base of the generated Functions; ``op`` names the record. forward and backward are classmethods (they read
    ``cls.op``); ``apply`` calls them like staticmethods."""

    op = "identity"

    @classmethod
    def forward(cls, ctx, *operands, compute=None):
        out = P.apply(cls.op, *operands, compute=compute)
        rec = OPS[cls.op]
        if rec.grad is NONDIFF:
            return out
        keep = _kept(rec, ctx.needs_input_grad) if rec.saves in ("inputs", "both") else ()
        ctx.save_for_backward(*[x if k in keep and is_tensor(x) else None for k, x in enumerate(operands)],
                              out if rec.saves in ("out", "both") else None)
        ctx.scalars = tuple([None if isinstance(x, Tensor) else x for x in operands])
        return out

    @classmethod
    def backward(cls, ctx, grad):
        rule = OPS[cls.op].grad
        if rule is NONDIFF:
            return (None,) * len(ctx.needs_input_grad)
        saved = ctx.saved_tensors
        args = [s if s is not None else c for s, c in zip(saved[:-1], ctx.scalars)]
        grads = rule(grad, *args, saved[-1])
        for g, need in zip(grads, ctx.needs_input_grad):
            if need and isinstance(g, Unimplemented):  # a gradient PyTorch does not implement either
                raise g.error()
        return tuple(g if ctx.needs_input_grad[i] and not isinstance(g, Unimplemented) else None
                     for i, g in enumerate(grads))


def _kept(rec, need) -> range | set:
    """The operands the forward saves: all, or (with ``reads``) only those the needed gradients read, as
    PyTorch's mul does: ``x * 2`` keeps nothing of ``x``, so changing ``x`` in place afterwards is no error."""
    if rec.reads is None:
        return range(rec.arity)
    return {j for i, reads in enumerate(rec.reads) if need[i] for j in reads}


class _Overloaded(Elementwise):
    """An elementwise op whose node name depends on which operands are numbers."""

    @classmethod
    def apply(cls, *operands, compute=None):
        name = OPS[cls.op].node(*operands)
        return _apply(cls if name is None else variant(cls, name), *operands, compute=compute)


def _function(name: str):
    node = OPS[name].node
    base = _Overloaded if callable(node) else Elementwise
    return type(_camel(name), (base,), {"op": name, "node_name": node if isinstance(node, str)
                                        else f"{_camel(name)}Backward0"})


FUNCTIONS = {name: _function(name) for name in OPS}

