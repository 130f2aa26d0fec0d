"""Public linear-algebra ops: ``matmul`` (and ``@``), ``mm``, ``bmm``, ``mv``, ``dot``, ``outer``, and nn's
``linear``/``bilinear``; ``Matmul`` is the one Function of the products.

Every product reaches the backend as one batched ``matmul(out, a, b)`` on views a [B, M, K] and
b [B, K, N]; ``matmul`` dispatches on dimensions as PyTorch's does, so results and error messages match.
"""
from __future__ import annotations

import math

from .. import backends
from .. import dtypes as D
from ..amp.policy import autocast_lower
from ..autograd.function import Function, variant
from ..autograd.graph import needs_graph
from ..tensor import Tensor, is_tensor
from . import pointwise as P
from . import shape as S
from . import sparse_mm
from .guard import tensor_first
from .views import broadcast_shapes

__all__ = ["matmul", "mm", "bmm", "mv", "dot", "outer", "bilinear"]
# names that belong in clgrad.nn.functional (F.X)
FUNCTIONAL = ["linear", "bilinear"]



def _check_tensors(op: str, **named) -> None:
    for pos, (name, x) in enumerate(named.items(), 1):
        if not is_tensor(x):
            raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Tensor, not {type(x).__name__}")
    P.common_device(list(named.values()))


def _shape(t) -> str:
    return "x".join(str(n) for n in t.shape)


def _product(op: str, a, b):
    """The [B, M, N] product of a [B, M, K] and b [B, K, N] views, shapes and dtypes already checked."""
    if a.dtype is D.bool:
        raise NotImplementedError(f"'{op}' is not implemented for dtype bool on device {a.device}")
    if a.dtype.kind == "c":
        raise P.unsupported(op, a.dtype, a.device)
    out = Tensor._empty((a.shape[0], a.shape[1], b.shape[2]), a.dtype, a.device)
    backends.get(a.device).matmul(out, a, b)
    return out


def _mm_fast(a, b):
    """The common product, two 2-D tensors of one dtype on one device with nothing to record, straight to the
    backend; None for anything else (the general path then checks and raises). The general path's checks and
    views cost ~10 us, a third of a small product's time on PoCL."""
    sa, sb = getattr(a, "_shape", None), getattr(b, "_shape", None)
    if sa is None or sb is None or len(sa) != 2 or len(sb) != 2 or sa[1] != sb[0] or a.dtype is not b.dtype:
        return None
    if a.dtype is D.bool or a.is_sparse or b.is_sparse or a._storage.device != b._storage.device or needs_graph(a, b):
        return None
    (m, k), n = sa, sb[1]
    out = Tensor._empty((m, n), a.dtype, a.device)
    backends.get(a.device).matmul(out._view((1, m, n), (m * n, n, 1)), a._view((1, m, k), (0,) + a._strides),
                                  b._view((1, k, n), (0,) + b._strides))
    return out


@autocast_lower
def mm(input, mat2):
    """Matrix product of two 2-D tensors: ``clgrad.mm(a, b)`` for a [n, m] and b [m, p] gives [n, p]."""
    if P.has_complex((input, mat2)):
        return P.COMPLEX["mm"](input, mat2)
    out = _mm_fast(input, mat2)
    if out is not None:
        return out
    if getattr(input, "is_sparse", False) or getattr(mat2, "is_sparse", False):
        return sparse_mm.mm(input, mat2)
    _check_tensors("mm", input=input, mat2=mat2)
    if needs_graph(input, mat2):
        return Matmul.apply(input, mat2, "mm")
    return _mm(input, mat2)


def _mm(input, mat2):
    if input.dim() != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.dim() != 2:
        raise RuntimeError("mat2 must be a matrix")
    if input.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_shape(input)} and {_shape(mat2)})")
    if input.dtype is not mat2.dtype:
        raise RuntimeError(
            f"expected m1 and m2 to have the same dtype, but got: {input.dtype.cpp_name} != "
            f"{mat2.dtype.cpp_name}"
        )
    out = _product("mm", S.unsqueeze(input, 0), S.unsqueeze(mat2, 0))
    return S.squeeze(out, 0)


@autocast_lower
def bmm(input, mat2):
    """Batched matrix product of 3-D tensors with equal batch: [b, n, m] @ [b, m, p] gives [b, n, p]."""
    if P.has_complex((input, mat2)):
        return P.COMPLEX["bmm"](input, mat2)
    _check_tensors("bmm", input=input, mat2=mat2)
    if needs_graph(input, mat2):
        return Matmul.apply(input, mat2, "bmm")
    return _bmm(input, mat2)


def _bmm(input, mat2):
    if input.dim() != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2.dim() != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    nb, _, k = input.shape
    if tuple(mat2.shape[:2]) != (nb, k):
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{nb}, {k}] but got: "
            f"[{mat2.shape[0]}, {mat2.shape[1]}]."
        )
    if input.dtype is not mat2.dtype:
        raise RuntimeError(
            f"expected scalar type {input.dtype.scalar_name} but found {mat2.dtype.scalar_name}"
        )
    return _product("bmm", input, mat2)


def mv(input, vec):
    """Matrix-vector product: [n, m] @ [m] gives [n]. ``clgrad.mv(a, x)``."""
    _check_tensors("mv", input=input, vec=vec)
    if needs_graph(input, vec):
        return Matmul.apply(input, vec, "mv")
    return _mv(input, vec)


def _mv(input, vec):
    if input.dim() != 2 or vec.dim() != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {input.dim()}, {vec.dim()}")
    if input.shape[1] != vec.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({input.shape[0]}), mat ({_shape(input)}), vec ({vec.shape[0]})")
    if input.dtype is not vec.dtype:
        v, m = vec.dtype.scalar_name, input.dtype.scalar_name
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {v}, {m}, and {v}")
    out = _product("mv", S.unsqueeze(input, 0), vec._view((1, vec.shape[0], 1), (0, vec.stride(0), 1)))
    return out._view((input.shape[0],), (1,))


def dot(input, tensor):
    """Dot product of two 1-D tensors of equal length, as a 0-dim tensor: ``clgrad.dot(x, y)``."""
    if P.has_complex((input, tensor)):
        return P.COMPLEX["dot"](input, tensor)
    _check_tensors("dot", input=input, tensor=tensor)
    if needs_graph(input, tensor):
        return Matmul.apply(input, tensor, "dot")
    return _dot(input, tensor)


def _dot(input, tensor):
    if input.dim() != 1 or tensor.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.dim()}D and {tensor.dim()}D tensors")
    if input.dtype is not tensor.dtype:
        raise RuntimeError(
            f"dot : expected both vectors to have same dtype, but found {input.dtype.scalar_name} and "
            f"{tensor.dtype.scalar_name}"
        )
    n1, n2 = input.shape[0], tensor.shape[0]
    if n1 != n2:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{n1}] and src [{n2}] to have the same number of elements, "
            f"but got {n1} and {n2} elements respectively"
        )
    a = input._view((1, 1, n1), (0, 0, input.stride(0)))
    b = tensor._view((1, n2, 1), (0, tensor.stride(0), 1))
    return _product("dot", a, b)._view((), ())


def outer(input, vec2):
    """Outer product of two 1-D tensors, with type promotion: [n] x [m] gives [n, m]."""
    _check_tensors("outer", input=input, vec2=vec2)
    for name, v in (("self", input), ("vec2", vec2)):
        if v.dim() != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {v.dim()}-D")
    return input.unsqueeze(1) * vec2  # differentiable through the Tensor methods


def _should_fold(t1, t2) -> bool:
    """PyTorch's test for folding the larger operand's batch into its rows: one mm instead of a bmm,
    taken only when the fold is a view (the leading dims are contiguous with each other)."""
    big = t1 if t1.dim() >= t2.dim() else S.transpose(t2, -2, -1)
    if not (big.dim() >= 3 and min(t1.dim(), t2.dim()) <= 2) or t1.dim() == 2:
        return False
    if big.numel() == 0:
        return True
    shape, strides = big.shape, big.stride()
    return all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(big.dim() - 2))


def _folded(t1, t2):
    """[..., n, m] @ [m(, p)] as one mm or mv; a 1-D left operand multiplies the transposed right one."""
    transpose = t2.dim() > t1.dim()
    if transpose:
        t1, t2 = S.transpose(t2, -2, -1), t1
    lead = tuple(t1.shape[:-1])
    flat = S.reshape(t1, math.prod(lead), t1.shape[-1])
    if t2.dim() == 1:
        return S.view(mv(flat, t2), lead)
    out = S.view(mm(flat, t2), lead + (t2.shape[1],))
    return S.transpose(out, -2, -1).contiguous() if transpose else out


def _batched(t1, t2):
    """N-D product with broadcast batch dims, flattened to one bmm."""
    d1, d2 = t1.dim(), t2.dim()
    n, m1 = (t1.shape[-2] if d1 > 1 else 1), t1.shape[-1]
    m2, p = (t2.shape[-2] if d2 > 1 else t2.shape[0]), (t2.shape[-1] if d2 > 1 else 1)
    batch = broadcast_shapes(tuple(t1.shape[: max(d1 - 2, 0)]), tuple(t2.shape[: max(d2 - 2, 0)]))
    nb = math.prod(batch)
    # reshape is a view when the broadcast batch dims merge into one stride, else a contiguous copy
    a = S.reshape(S.expand(t1, batch + (n, m1)), nb, n, m1)
    if d2 == 1:
        b = S.unsqueeze(S.reshape(S.expand(t2, batch + (m2,)), nb, m2), 2)
    else:
        b = S.reshape(S.expand(t2, batch + (m2, p)), nb, m2, p)
    out = bmm(a, b)
    return S.view(out, batch + ((n,) if d1 > 1 else ()) + ((p,) if d2 > 1 else ()))


@autocast_lower
def matmul(input, other):
    """Matrix product with PyTorch's rules for 1-D (dot / vector), 2-D and batched N-D operands.

    >>> clgrad.matmul(clgrad.ones(2, 1, 3, 4), clgrad.ones(5, 4, 2)).shape
    clgrad.Size([2, 5, 3, 2])
    """
    if P.has_complex((input, other)):
        return P.COMPLEX["matmul"](input, other)
    out = _mm_fast(input, other)
    if out is not None:
        return out
    if getattr(input, "is_sparse", False) or getattr(other, "is_sparse", False):
        return sparse_mm.matmul(input, other)
    _check_tensors("matmul", input=input, other=other)
    if needs_graph(input, other):
        return Matmul.apply(input, other, "matmul")
    return _matmul(input, other)


def _matmul(input, other):
    d1, d2 = input.dim(), other.dim()
    if d1 == 0 or d2 == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {d1}D and {d2}D")
    if d1 == 1 and d2 == 1:
        return dot(input, other)
    if d1 == 2 and d2 == 1:
        return mv(input, other)
    if d1 == 1 and d2 == 2:
        return S.squeeze(mm(S.unsqueeze(input, 0), other), 0)
    if d1 == 2 and d2 == 2:
        return mm(input, other)
    if _should_fold(input, other):
        return _folded(input, other)
    return _batched(input, other)


def matmul_bias(x, w_t, bias):
    """``x @ w_t + bias`` for x [*, K], w_t [K, N] and bias [N] (nn's linear), the bias added in the product's store
    instead of a second kernel. Untracked: the caller records autograd (``nnops.Linear``)."""
    lead = tuple(x.shape[:-1])
    rows = x.reshape(1, math.prod(lead), x.shape[-1])  # a view when x's rows are laid out evenly, else a copy
    out = Tensor._empty((1, rows.shape[1], w_t.shape[1]), x.dtype, x.device)
    backends.get(x.device).matmul(out, rows, S.unsqueeze(w_t, 0), bias)
    return out.reshape(lead + (w_t.shape[1],))


# ---- matrix products -------------------------------------------------------------------------
_PRODUCT_NAMES = {"mm": "MmBackward0", "bmm": "BmmBackward0", "mv": "MvBackward0", "dot": "DotBackward0"}
_MATMUL_NAMES = {(1, 1): "DotBackward0", (2, 1): "MvBackward0", (2, 2): "MmBackward0", (1, 2): "SqueezeBackward4"}


class Matmul(Function):
    """``mm``/``bmm``/``mv``/``dot``/``matmul`` (named by ``op``). One backward for all of them: 1-D operands
    are treated as a row (left) or a column (right), and the engine sums broadcast batch dims back.

    >>> Matmul.apply(a, b, "mm")  # what linalg.mm returns when autograd records
    """

    node_name = "UnsafeViewBackward0"  # PyTorch's N-d matmul ends in a reshape of a bmm

    @classmethod
    def apply(cls, a, b, op="matmul"):
        name = _PRODUCT_NAMES.get(op) or _MATMUL_NAMES.get((a.dim(), b.dim()))
        return Function.apply.__func__(cls if name is None else variant(cls, name), a, b, op)

    @staticmethod
    def forward(ctx, a, b, op):
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b if ctx.needs_input_grad[0] else None)
        ctx.dims = (a.dim(), b.dim())
        out = _mm_fast(a, b) if op in ("mm", "matmul") else None  # grad mode is off here: the fast path applies
        return out if out is not None else _RAW[op](a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        da, db = ctx.dims
        if da == 1 and db == 1:  # dot: a 0-dim gradient
            return grad * b if ctx.needs_input_grad[0] else None, grad * a if ctx.needs_input_grad[1] else None, None
        if da == 1:
            grad = grad.unsqueeze(-2)
        if db == 1:
            grad = grad.unsqueeze(-1)
        ga = gb = None
        if ctx.needs_input_grad[0]:
            ga = grad.matmul((b.unsqueeze(-1) if db == 1 else b).mT)
            ga = ga.squeeze(-2) if da == 1 else ga
        if ctx.needs_input_grad[1]:
            gb = (a.unsqueeze(0) if da == 1 else a).mT.matmul(grad)
            gb = gb.squeeze(-1) if db == 1 else gb
        return ga, gb, None


# ---- nn's linear and bilinear ---------------------------------------------------------------------
class Linear(Function):
    node_name = "LinearBackward0"

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        return _linear(x, weight, bias)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        need = ctx.needs_input_grad
        rows = grad.reshape(-1, weight.shape[0])
        gx = matmul(grad, weight) if need[0] else None
        gw = matmul(rows.t(), x.reshape(-1, weight.shape[1])) if need[1] else None
        gb = rows.sum(0) if len(need) > 2 and need[2] else None
        return gx, gw, gb


def _linear(x, weight, bias):
    """The untracked ``x @ weight.T + bias``."""
    if bias is not None and x.dim() >= 1 and x.device == weight.device == bias.device \
            and x.dtype is weight.dtype is bias.dtype and x.dtype.kind == "f" and weight.dim() == 2 \
            and x.shape[-1] == weight.shape[1] and bias.dim() == 1 and bias.shape[0] == weight.shape[0]:
        return matmul_bias(x, weight.t(), bias)  # the bias added in the product's store: one kernel
    out = matmul(x, weight.t())
    return out if bias is None else P.apply("add", out, bias, out=out)


@autocast_lower
def linear(input, weight, bias=None):
    """``input @ weight.T + bias``: ``F.linear(x, w, b)`` for x [*, in], w [out, in], b [out]."""
    if needs_graph(input, weight, bias):
        return Linear.apply(input, weight, bias)
    return _linear(input, weight, bias)


def bilinear(input1, input2, weight, bias=None):
    """``x1^T A x2 + b`` for every output feature: x1 [*, in1], x2 [*, in2], weight [out, in1, in2]."""
    lead = tuple(input1.shape[:-1])
    x1, x2 = input1.reshape(-1, 1, 1, input1.shape[-1]), input2.reshape(-1, 1, input2.shape[-1])
    t = matmul(x1, weight.unsqueeze(0))  # [n, out, 1, in2]
    out = (t.squeeze(2) * x2).sum(-1)
    out = out if bias is None else out + bias
    return out.reshape(lead + (weight.shape[0],))


# the untracked products Matmul's forward runs
_RAW = {"mm": _mm, "bmm": _bmm, "mv": _mv, "dot": _dot, "matmul": _matmul}


def _matmul_method(self, other):
    return matmul(self, other) if is_tensor(other) else NotImplemented


def _rmatmul_method(self, other):
    return matmul(other, self) if is_tensor(other) else NotImplemented


def install(T) -> None:
    """Attach this module's ops to Tensor as methods."""
    for name in __all__:
        if name != "bilinear":
            setattr(T, name, globals()[name])
    T.__matmul__ = _matmul_method
    T.__rmatmul__ = _rmatmul_method


# a list or a number where a tensor belongs raises PyTorch's TypeError (see guard.py)
tensor_first(globals(), __all__ + ["linear"])
