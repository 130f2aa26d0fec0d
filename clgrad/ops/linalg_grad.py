"""Differentiable matrix products. Every product shares one backward: PyTorch's matmul rules (1-D operands
get a dim added and removed, batch dims broadcast), with gradients summed back to each operand's shape.
The backward uses ``matmul`` itself, so double backward works."""
from __future__ import annotations

from ..autograd.engine import _sum_to
from ..autograd.function import Function
from .views import broadcast_shapes


def _matmul_grads(grad, a, b, needs):
    a2 = a.unsqueeze(0) if a.dim() == 1 else a
    b2 = b.unsqueeze(-1) if b.dim() == 1 else b
    batch = broadcast_shapes(tuple(a2.shape[:-2]), tuple(b2.shape[:-2]))
    g2 = grad.reshape(batch + (a2.shape[-2], b2.shape[-1]))
    ga = gb = None
    if needs[0]:
        ga = _sum_to(g2.matmul(b2.transpose(-1, -2)), tuple(a2.shape)).reshape(a.shape)
    if needs[1]:
        gb = _sum_to(a2.transpose(-1, -2).matmul(g2), tuple(b2.shape)).reshape(b.shape)
    return ga, gb


class MatMul(Function):
    """``a @ b`` with any of matmul's shapes; ``op`` picks the public function that runs the forward."""

    node_name = "MmBackward0"
    op = "matmul"

    @classmethod
    def forward(cls, ctx, a, b):
        from . import linalg

        ctx.save_for_backward(a, b)
        return getattr(linalg, cls.op)(a, b)

    @classmethod
    def backward(cls, ctx, grad):
        a, b = ctx.saved_tensors
        return _matmul_grads(grad, a, b, ctx.needs_input_grad)


def _product(op: str, node: str):
    return type(op.capitalize(), (MatMul,), {"op": op, "node_name": node})


FUNCTIONS = {
    "matmul": _product("matmul", "MmBackward0"),
    "mm": _product("mm", "MmBackward0"),
    "bmm": _product("bmm", "BmmBackward0"),
    "mv": _product("mv", "MvBackward0"),
    "dot": _product("dot", "DotBackward0"),
}


class Outer(Function):
    node_name = "OuterBackward0"

    @staticmethod
    def forward(ctx, a, b):
        from . import linalg

        ctx.save_for_backward(a, b)
        return linalg.outer(a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return (grad.matmul(b) if ctx.needs_input_grad[0] else None,
                grad.transpose(0, 1).matmul(a) if ctx.needs_input_grad[1] else None)
